"""Audit views, pure like the record fold: the history of a subject with a one-line account of what each
event changed, the difference between two rebuilds of a record, and when (in recorded time) the ledger's
rebuild of a record was exactly that record.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import groupby
from typing import NamedTuple

import orjson

from ledger.core.canonical import canonical
from ledger.core.errors import NotFoundError
from ledger.core.times import When, long_date
from ledger.model.events import Fact
from ledger.model.kinds import KIND
from ledger.model.parts import citation_label, differing, inside, other_paper, resolution_label, times_moved
from ledger.model.standing_notices import describe_notice
from ledger.projections.compare import Mismatch, shown_apart
from ledger.projections.record import Fold, build_record, counted_past_cap


def account(kind: str, old: dict | None, new: dict) -> str:
    """One line saying what this event changed, given the previous payload of the same kind and subject
    (its kind's `account` in the kinds table)."""
    return KIND[kind].account(old, new)


def history(facts: Iterable[Fact], paper: str | None = None) -> list[dict]:
    """Every event, oldest effective time first (ties: ledger order), each with its account; an event of an
    observation also names its `citation` (None for the others), by the other paper when seen from `paper`
    (`citation_label`), and its account starts with that name."""
    told = _accounts(facts)
    # The payload part that names an observation's papers is its citation: the latest one names it.
    citations = {row["subject"]: payload["citation"] for row, payload in told
                 if KIND[row["kind"]].observation and isinstance(payload.get("citation"), dict)}
    labels = {subject: citation_label(citation, paper) for subject, citation in citations.items()}
    for row, _ in told:
        row["citation"] = labels.get(row["subject"]) if KIND[row["kind"]].observation else None
        if row["citation"] is not None:
            row["account"] = f"{row['citation']}: {row['account']}"
    return [row for row, _ in told]


def _accounts(facts: Iterable[Fact]) -> list[tuple[dict, dict]]:
    """Each fact's history row (its account without the citation's name) and its payload, in history order."""
    told = []
    previous: dict[tuple[str, str], dict] = {}
    for fact in sorted(facts, key=lambda f: (f.effective_key, f.seq)):
        payload = orjson.loads(fact.payload)
        key = (fact.kind, fact.subject)
        told.append(({"seq": fact.seq, "kind": fact.kind, "subject": key[1], "effective_at": fact.effective_at,
                      "recorded_at": fact.recorded_at, "account": account(fact.kind, previous.get(key), payload)},
                     payload))
        previous[key] = payload
    return told


def _observations(record: dict | None) -> dict[tuple[str, str], dict]:
    if record is None:
        return {}
    return {(o["observation_id"], d): o for d in ("inbound", "outbound") for o in record[d]}


# Parts of an observation whose change reads as a transition between two states; the others, and a change
# whose two states read the same, say what changed inside the part.
_TRANSITIONS = {"resolution": resolution_label, "standing_notice": describe_notice}


def _part_changes(old: dict, new: dict) -> list[str]:
    details = []
    for part in ("citation", "links", "resolution", "standing_notice"):
        if old[part] == new[part]:
            continue
        words = _TRANSITIONS.get(part)
        if words and words(old[part]) != words(new[part]):
            details.append(f"{part}: {words(old[part])} → {words(new[part])}")
        else:  # two states that read the same: say what changed inside the part instead
            details.append(f"{part}: {inside(old[part], new[part])}")
    return details


def _field_change(key: str, old: object, new: object) -> str:
    """What changed in a top-level field of the record: its changed keys (`paper`), the sources whose time
    moved (`standing_sources`), else the two values where they differ."""
    if isinstance(old, dict) and isinstance(new, dict):
        return f"{key}: " + "; ".join("{} {} → {}".format(k, *_sides(old, new, k)) for k in differing(old, new))
    times = times_moved(old, new) if key == "standing_sources" and isinstance(old, list) else []
    return f"{key}: " + (", ".join(times) if times else "{} → {}".format(*shown_apart(old, new)))


def _sides(old: dict, new: dict, k: str) -> tuple[str, ...]:
    if k in old and k in new:
        return shown_apart(old[k], new[k])
    return tuple(shown_apart(side[k], None)[0] if k in side else "none" for side in (old, new))


def paper_diff(paper: str, facts: Iterable[Fact], start: When, end: When) -> dict:
    """What changed in `paper`'s record from `start` to `end` (`diff`), built from its facts; an observation
    that left the record is told by the last fact of it effective in between ("withdrawn on D: reason"), or
    by the page cap it fell past.

    Raises: NotFoundError when the paper has no record as of `end`."""
    facts = list(facts)
    after = build_record(paper, facts, end)
    try:
        before = build_record(paper, facts, start)
    except NotFoundError:
        before = None
    between = (f for f in facts if start.key < f.effective_key <= end.key)
    accounts = {row["subject"]: row["account"] for row, _ in _accounts(between)}
    for direction in ("inbound", "outbound"):
        if counted_past_cap(after, direction) is not None:
            for obs in (before or {}).get(direction, []):
                accounts.setdefault(obs["observation_id"], f"past the page cap of {after['caps'][direction]}")
    return diff(before, after, accounts)


def diff(before: dict | None, after: dict, accounts: dict[str, str] | None = None) -> dict:
    """What changed between two rebuilds of one paper's record (`before` is None when it did not exist); each
    observation removed carries its entry of `accounts` (None when it has none): why it left. Each observation
    added, removed or changed names its other paper ("other_id", "title": `other_paper`). `fields` names the
    top-level fields that changed, `field_details` says in one line each what changed inside them;
    `content_changed` is False when the records differ only by what follows the date (as_of, the thesis's day,
    the context digest)."""
    old, new = _observations(before), _observations(after)
    added = [{"observation_id": k[0], "direction": k[1], "digest": new[k]["observation_digest"], **_other(new[k], k[1])}
             for k in sorted(new.keys() - old.keys())]
    removed = [{"observation_id": k[0], "direction": k[1], "digest": old[k]["observation_digest"],
                "account": (accounts or {}).get(k[0]), **_other(old[k], k[1])} for k in sorted(old.keys() - new.keys())]
    changed = []
    for k in sorted(old.keys() & new.keys()):
        if old[k]["observation_digest"] != new[k]["observation_digest"]:
            details = _part_changes(old[k], new[k])
            changed.append({"observation_id": k[0], "direction": k[1],
                            "parts": [d.split(":")[0] for d in details], "details": details,
                            "from_digest": old[k]["observation_digest"], "to_digest": new[k]["observation_digest"],
                            **_other(new[k], k[1])})
    lanes_before = {lane["lane"]: lane for lane in (before or {}).get("coverage", [])}
    coverage = []
    for lane in after["coverage"]:
        was = lanes_before.get(lane["lane"])
        if was != lane:
            coverage.append({"lane": lane["lane"], "from": was, "to": lane})
    fields = [key for key in ("paper", "standing_sources", "external_citation_measurements")
              if (before or {}).get(key) != after[key]]
    field_details = [_field_change(key, (before or {}).get(key), after[key]) for key in fields]
    return {
        "paper": after["paper"]["arxiv_id"],
        "from": {"as_of": before["as_of"] if before else None,
                 "context_digest": before["context_digest"] if before else None},
        "to": {"as_of": after["as_of"], "context_digest": after["context_digest"]},
        "added": added, "removed": removed, "changed": changed, "coverage": coverage, "fields": fields,
        "field_details": field_details, "content_changed": _content(before) != _content(after),
    }


def _other(observation: dict, direction: str) -> dict:
    """The other paper of an observation (`other_paper`), as `diff` gives it beside the observation id: its
    "other_id" ('arXiv:…', 'doi:…') and "title", each None when the citation does not hold it."""
    other_id, title = other_paper(observation["citation"], direction)
    return {"other_id": other_id, "title": title}


def _content(record: dict | None) -> dict | None:
    """A record without what follows its date alone: as_of, the thesis's day and so the context digest
    (SPEC 1: the digest covers the thesis, which names the day)."""
    if record is None:
        return None
    thesis = record["thesis"].replace(long_date(record["as_of"]), "", 1)
    return {**{k: v for k, v in record.items() if k not in ("as_of", "context_digest")}, "thesis": thesis}


class Window(NamedTuple):
    """A span of recorded time in which the ledger's rebuild of a record at its as_of was exactly the record:
    for every known-at K with `start` <= K < `end`. `start` is the recorded time of the facts that completed
    it; `end` the recorded time of the first fact that changed it (None: it still is the rebuild)."""

    start: str
    end: str | None


class Agreement(NamedTuple):
    """A record against everything the ledger ever knew of its paper."""

    windows: list[Window]  # oldest first; the last is open when the record is the rebuild today
    late: list[dict]  # history rows of the facts that changed the rebuild since the last window ended
    mismatch: Mismatch | None  # the rebuild today against the record (None: they agree)


def agreement(facts: Iterable[Fact], record: dict) -> Agreement:
    """When, in recorded time, the ledger's rebuild of `record`'s paper at the record's as_of was exactly
    `record`, and which facts recorded since changed it.

    Only the recorded times of the paper's own facts effective by as_of can change that rebuild, so they are
    the only candidates: the facts are taken in recorded order, one recorded time at a time, and the record is
    re-assembled only where a fact changed what it is built from. A late fact is one recorded after the last
    window ended that, when it was recorded, became the latest of its kind and subject with another payload
    (a fact superseded by one already held is not named). Raises NotFoundError when today's facts hold no
    snapshot of the paper by the record's as_of (nor, then, did any earlier recorded time)."""
    facts = list(facts)
    paper, as_of = record["paper"]["arxiv_id"], record["as_of"]
    fold = Fold(paper, When.at(as_of))
    target = canonical(record)
    windows: list[Window] = []
    start: str | None = None
    changed_since: list[Fact] = []
    rebuilt, same = None, False
    relevant = sorted((f for f in facts if f.effective_key <= fold.cutoff), key=lambda f: (f.recorded_at, f.seq))
    for recorded_at, group in groupby(relevant, key=lambda f: f.recorded_at):
        changed = [fact for fact in group if fold.add(fact)]
        if not changed:
            continue  # nothing the record is built from changed: the rebuild is what it was
        try:
            rebuilt = fold.record()
            same = canonical(rebuilt) == target
        except NotFoundError:
            rebuilt, same = None, False
        if same and start is None:
            start = recorded_at
        elif not same and start is not None:
            windows.append(Window(start, recorded_at))
            start, changed_since = None, []
        if not same:
            changed_since.extend(changed)
    if start is not None:
        windows.append(Window(start, None))
    if rebuilt is None:
        fold.record()  # raises NotFoundError: no snapshot of the paper by as_of, today or ever
    late_seqs = {f.seq for f in changed_since} if windows and start is None else set()
    late = [row for row in history(facts, paper) if row["seq"] in late_seqs]
    return Agreement(windows, late, None if same else Mismatch(rebuilt, record))
