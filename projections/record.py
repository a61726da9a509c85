"""The record as of a date: a pure function of one paper's events.

`build_record` folds the events whose effective time is at or before `as_of` (ties: ledger order) into a
Paper Citation Record, computing every derived field (thesis, coverage, state counts, links, digests).
It never reads storage and never shows a fact observed after `as_of`. Comparing a record with its rebuild is
`compare`'s.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ledger.core.canonical import loads_finite, parsed_digest
from ledger.core.errors import NotFoundError
from ledger.core.times import When, long_date
from ledger.model.events import NO_MEASUREMENT_SOURCE, NOT_CHECKED, UNRESOLVED, Fact, latest
from ledger.model.kinds import COUNTING_LANE, KIND, Draft  # what each kind means to a record
from ledger.model.paths import EVIDENCE, INTEGRITY, PAPER, RECORD, fill
from ledger.model.published import RESOLUTION_STATES, SCHEMA, context_digest
from ledger.model.standing_notices import CHECK_FAILED

CAPS = {"database_statements": 6, "inbound": 100, "outbound": 100}
REFUSAL = "A citation records a reference. It does not transfer a finding from one paper to another."
CITATION_SOURCE = "paper_references, paper_reference_links"
NOTICE_SOURCE = "scholarly_work_events, retraction_status_cache"
LANE_NOTES = {
    "reference_resolution": "Typed states for the displayed outbound observations.",
    "standing_notices": "One-hop event checks from named stored sources.",
    "inbound_itemization": "Pith citing papers itemized under the disclosed page cap.",
    "external_citation_measurements": "A source-named dated measurement, never combined with another source.",
}


def _lane(lane: str, denominator: int, observed: int, source: str, when: str | None) -> dict:
    return {"denominator": denominator, "lane": lane, "note": LANE_NOTES[lane], "records_observed": observed,
            "source": source, "source_observed_at": when, "state": "measured"}


def _observation(oid: str, citation: dict, resolution: dict | None, notice: dict | None) -> dict:
    links = {"citing_paper": fill(PAPER, paper=citation["citing_paper"]["arxiv_id"])}
    if citation.get("cited_paper") is not None:
        links["cited_paper"] = fill(PAPER, paper=citation["cited_paper"]["arxiv_id"])
    return {"citation": citation, "links": links, "observation_id": oid,
            "resolution": resolution or UNRESOLVED, "standing_notice": notice or NOT_CHECKED}


def _digested(shown: list[dict]) -> list[dict]:
    """`shown` with each observation's digest in: only those a record lists are digested, not those past the
    page cap (a paper cited thousands of times lists 100)."""
    for obs in shown:
        if "observation_digest" not in obs:  # one citing its own paper is listed both ways: digested once
            # `observation_digest`'s bytes (the observation without its digest), taken before it is in: no copy.
            obs["observation_digest"] = parsed_digest(obs)  # parts from loads_finite, see build_record
    return shown


class Fold:
    """What a record is built from, one fact at a time: for each kind and subject, the latest fact effective
    by the cutoff (ties: ledger order). `add` says whether a fact changed it; `record` assembles the record.
    Facts may come in any order; the result depends only on which facts were added."""

    def __init__(self, paper_id: str, as_of: When):
        self.paper_id, self.as_of = paper_id, as_of.text
        self.cutoff = as_of.key
        # (kind, subject) -> (effective key, seq, payload or None until parsed, payload bytes): the latest fact wins.
        self.newest: dict[tuple[str, str], tuple[str, int, dict | None, bytes]] = {}
        self.taken: list[Fact] = []  # every fact effective by the cutoff: a count in force is read against its time
        self.counted_at = ""  # the effective key of the count in force, as the last `record` found it

    def add(self, fact: Fact) -> bool:
        """Take one fact; True when it became the latest of its kind and subject with another payload than
        the one it supersedes (or the first), i.e. when what the record is built from changed. Any fact the
        ledger stored is taken without error."""
        return self.extend((fact,))

    def extend(self, facts: Iterable[Fact]) -> bool:
        """Take each of `facts` as `add` does (one loop: a replay takes ~100 facts a paper); True when any of
        them changed what the record is built from."""
        cutoff, counted_at, paper_id, newest, take = self.cutoff, self.counted_at, self.paper_id, self.newest, \
            self.taken.append
        changed = False
        for fact in facts:
            seq, name, subject, _, effective, _, data = fact
            if effective > cutoff:
                continue
            take(fact)
            payload = None  # parsed when a record is drafted, once, and only for the facts kept (see _draft)
            if name in _SUBJECT_SLOT:
                slot: str | None = subject
            else:  # the subject derived when the fact was appended, unless its kind keeps one slot (or none)
                payload = loads_finite(data)
                slot = KIND[name].slot(paper_id, subject, payload)
                if slot is None:
                    continue
            key = (name, slot)
            current = newest.get(key)
            if current is None:
                changed = True
            elif (effective, seq) <= (current[0], current[1]):
                changed = changed or effective <= counted_at  # it may change what the count in force is read against
                continue
            else:
                changed = changed or current[3] != data
            newest[key] = (effective, seq, payload, data)
        return changed

    def record(self) -> dict:
        """The record built from the facts added so far. Raises NotFoundError when they hold no snapshot of
        the paper by the cutoff."""
        draft = _draft(self.paper_id, self.newest)
        base = draft  # what the ledger itemized at the time of the count in force, if any (see _assemble)
        self.counted_at = draft.counted_at
        if draft.counted is not None and draft.counted_at < self.cutoff:
            base = folded(self.paper_id, self.taken, When.at(draft.counted["observed_at"])).draft()
        return _assemble(draft, base, self.as_of)

    def draft(self) -> Draft:
        """The Draft of the facts added so far."""
        return _draft(self.paper_id, self.newest)


def build_record(paper_id: str, facts: Iterable[Fact], as_of: When) -> dict:
    """The record of `paper_id` as of `as_of` (its text is the string shown in the record).

    Raises NotFoundError when the paper has no snapshot effective by then.
    """
    return folded(paper_id, facts, as_of).record()


def folded(paper_id: str, facts: Iterable[Fact], as_of: When) -> Fold:
    """A Fold of `paper_id` as of `as_of`, every one of `facts` added."""
    fold = Fold(paper_id, as_of)
    fold.extend(facts)
    return fold


_ORDER = {name: index for index, name in enumerate(KIND)}
_SUBJECT_SLOT = frozenset(name for name, kind in KIND.items() if kind.subject_slot)


def _draft(paper_id: str, newest: dict[tuple[str, str], tuple]) -> Draft:
    draft = Draft(paper_id, newest)  # a withdrawal compares effective times
    # Kinds place in table order (a later kind may amend an earlier one's part); facts of a kind as they came.
    for key, (effective, seq, payload, data) in sorted(newest.items(), key=lambda item: _ORDER[item[0][0]]):
        if payload is None:  # every value of the record comes from here or is built below
            payload = loads_finite(data)
            newest[key] = (effective, seq, payload, data)  # kept: a fold drafted again parses nothing again
        KIND[key[0]].place(draft, key[1], payload)
    return draft


# Page order (SPEC 4): inbound by citing paper, reference index, observation id; outbound by the last two.
PAGE_ORDER = {
    "inbound": lambda o: (o["citation"]["citing_paper"]["arxiv_id"], o["citation"]["reference_index"],
                          o["observation_id"]),
    "outbound": lambda o: (o["citation"]["reference_index"], o["observation_id"]),
}


def directions(draft: Draft) -> tuple[list[dict], list[dict]]:
    """Every observation of the draft, inbound and outbound (one citing its own paper is both), in page order,
    without its digest (a record adds it to those it lists)."""
    inbound, outbound = [], []
    for oid, citation in draft.citations.items():
        obs = _observation(oid, citation, draft.resolutions.get(oid), draft.notices.get(oid))
        if citation["citing_paper"]["arxiv_id"] == draft.paper_id:
            outbound.append(obs)
        if _cites(citation, draft.paper_id):
            inbound.append(obs)
    inbound.sort(key=PAGE_ORDER["inbound"])
    outbound.sort(key=PAGE_ORDER["outbound"])
    return inbound, outbound


@dataclass(frozen=True, slots=True)  # not a NamedTuple: tuple subclasses freed per record fill the tuple free list
class Tally:
    """The numbers the coverage lanes count, from the ledger's observations or from a count."""

    inbound: int
    outbound: int
    observations: int  # inbound + outbound: an observation of a paper citing itself counts in both
    checked: int  # of those, with a notice check that did not fail at its source

    def plus(self, other: Tally, sign: int = 1) -> Tally:
        return Tally(self.inbound + sign * other.inbound, self.outbound + sign * other.outbound,
                     self.observations + sign * other.observations, self.checked + sign * other.checked)


def _tally(draft: Draft) -> Tally:
    inbound = outbound = checked = 0
    for oid, citation in draft.citations.items():
        cites, cited = citation["citing_paper"]["arxiv_id"] == draft.paper_id, _cites(citation, draft.paper_id)
        outbound, inbound = outbound + cites, inbound + cited
        notice = draft.notices.get(oid)
        # A check that failed at its source did not observe the work's standing: it is not counted as observed.
        if notice is not None and notice != NOT_CHECKED and notice["state"] != CHECK_FAILED:
            checked += cites + cited
    return Tally(inbound, outbound, inbound + outbound, checked)


def _cites(citation: dict, paper_id: str) -> bool:
    cited = citation.get("cited_paper")
    return cited is not None and cited["arxiv_id"] == paper_id


def _total(draft: Draft, base: Draft, shown_in: int, shown_out: int) -> Tally:
    """What the lanes count. With a count in force (what a record over the page cap counted at its time,
    `base` the draft then): the count, moved by what the ledger's own count moved since; a lane never
    counts fewer than it itemizes."""
    ours = _tally(draft)
    if draft.counted is None:
        return ours
    lanes = draft.counted["lanes"]
    said = Tally(lanes["inbound_itemization"]["denominator"], lanes["reference_resolution"]["denominator"],
                 lanes["standing_notices"]["denominator"], lanes["standing_notices"]["records_observed"])
    moved = said.plus(ours).plus(_tally(base), -1)
    return Tally(max(shown_in, moved.inbound), max(shown_out, moved.outbound),
                 max(shown_in + shown_out, moved.observations), max(0, moved.checked))


def _coverage(total: Tally, shown_in: list[dict], shown_out: list[dict], sources: list[dict],
              measurement: dict | None) -> list[dict]:
    return [
        _lane("reference_resolution", total.outbound, len(shown_out), CITATION_SOURCE,
              latest(o["citation"]["source_observed_at"] for o in shown_out)),
        _lane("standing_notices", total.observations, total.checked, NOTICE_SOURCE,
              latest(s["observed_at"] for s in sources)),
        _lane("inbound_itemization", total.inbound, len(shown_in), CITATION_SOURCE,
              latest(o["citation"]["source_observed_at"] for o in shown_in)),
        _lane("external_citation_measurements", 1, len(measurement["measurements"]) if measurement else 0,
              measurement["source"] if measurement else NO_MEASUREMENT_SOURCE,
              measurement["observed_at"] if measurement else None),
    ]


def _assemble(draft: Draft, base: Draft, as_of: str) -> dict:
    """The record of `draft`; `base` is the draft at the time of the count in force (the same when none)."""
    paper_id = draft.paper_id
    if draft.paper is None:
        raise NotFoundError(f"no record of arXiv:{paper_id} as of {as_of}")
    inbound, outbound = directions(draft)
    shown_in, shown_out = _digested(inbound[: CAPS["inbound"]]), _digested(outbound[: CAPS["outbound"]])
    total = _total(draft, base, len(shown_in), len(shown_out))
    sources = sorted(draft.sources, key=lambda s: s["source"])
    counts = dict.fromkeys(RESOLUTION_STATES, 0)
    for obs in shown_out:
        counts[obs["resolution"]["status"]] += 1
    record = {
        "as_of": as_of,
        "caps": dict(CAPS),
        "coverage": _coverage(total, shown_in, shown_out, sources, draft.measurement),
        "external_citation_measurements": draft.measurement["measurements"] if draft.measurement else [],
        "inbound": shown_in,
        "links": {
            "evidence": EVIDENCE,
            "html": fill(RECORD, paper=paper_id),
            "integrity": fill(INTEGRITY, paper=paper_id),
            "json": fill(RECORD, json=True, paper=paper_id),
            "paper": fill(PAPER, paper=paper_id),
        },
        "outbound": shown_out,
        "paper": draft.paper,
        "reference_resolution": {"displayed": len(shown_out), "state_counts": counts,
                                 "total_outbound_references": total.outbound},
        "refusal": REFUSAL,
        "schema": SCHEMA,
        "standing_sources": sources,
        "thesis": (f"As of {long_date(as_of)}, this Paper Citation Record lists {len(shown_out)} of "
                   f"{total.outbound} outbound references and {len(shown_in)} inbound Pith citation "
                   f"observations for arXiv:{paper_id}."),
    }
    # No float but those of the payloads (loads_finite: never NaN or Infinity): the walk for them is skipped.
    record["context_digest"] = context_digest(record)
    return record


def counted_past_cap(record: dict, direction: str) -> dict | None:
    """The lane of `direction` when it counts more observations than `record` lists there (over the page
    cap: the rest are known only by count), else None. Takes any record `check_record` accepted."""
    lane = next((lane for lane in record["coverage"] if lane["lane"] == COUNTING_LANE[direction]), None)
    if lane is None or type(lane.get("denominator")) is not int or lane["denominator"] <= len(record[direction]):
        return None
    return lane
