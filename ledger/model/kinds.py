"""The event kinds: one class per kind holds its name and everything that kind means.

After eventsourcing's `@event("NameChanged")`, a kind's name sits beside how it applies. Each entry is a
pure function of plain values (dicts and strings), so this model-layer module needs neither the folds nor
the store: `derive` checks a payload and gives its effective time, subject, paper and papers (`make_event`
calls it); `slot` is the fold's step, the subject under which the record keeps a paper's latest fact of the
kind, or None for a fact of another paper; `place` puts that fact into the `Draft` a record is assembled
from (in table order, so a kind listed later may amend what an earlier one placed); `account` is its
history line; `page` gives the pages' words for its part of the record (None: the pages show no such part).
`projections/record.py`, `history.py` and `text.py` look a kind up in `KIND` and call these; they branch on
no kind name. `table` refuses a kind that leaves an entry out, so a kind cannot be half added.
This module never touches storage, and each kind's name is written here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ledger.core.errors import InputError
from ledger.core.times import instant_key
from ledger.model.parts import (
    UNTITLED,
    changed_keys,
    citation_papers,
    cited_label,
    latest,
    observed_times,
    resolution_label,
    spaced,
    transition,
)
from ledger.model.published import (
    check_citation,
    check_notice,
    check_paper_snapshot,
    check_resolution,
    field,
    timestamp,
)
from ledger.model.standing_notices import CHECK_FAILED, MEASURED, describe_event, describe_notice

UNRESOLVED = {"observed_at": None, "resolver_source": None, "status": "unresolved"}
NOT_CHECKED = {"events": [], "reason": "not_checked", "source_receipts": [], "state": "unavailable"}
NO_MEASUREMENT_SOURCE = "cited_works"
ENTRIES = ("name", "observation", "derive", "slot", "place", "account", "page")

Derived = tuple["str | None", str, "str | None", tuple[str, ...]]  # effective time as written, subject, paper, papers


def _part(payload: dict[str, Any], key: str, expected: type, checked: bool,
          check: Callable[[Any, str], Any] | None = None) -> Any:
    # payload[key]; checked only when the payload was not built from parts `check_record` accepted.
    if checked:
        return payload[key]
    value = field(payload, key, expected, "payload")
    return value if check is None else check(value, f"payload.{key}")


def _observation_id(payload: dict[str, Any], checked: bool) -> str:
    oid: str = _part(payload, "observation_id", str, checked)
    if not oid:
        raise InputError("field payload.observation_id: empty")
    return oid


class Draft:
    """What a record is assembled from, as the kinds place it: the latest fact of each kind and subject,
    as plain values, before any derived field is computed."""

    def __init__(self, paper_id: str, newest: dict[tuple[str, str], tuple[Any, ...]] | None = None):
        self.paper_id = paper_id
        self._newest = newest or {}  # (kind, subject) -> (effective key, ...): the fold's latest facts
        self.paper: dict[str, Any] | None = None  # the snapshot's payload
        self.citations: dict[str, dict[str, Any]] = {}  # observation id -> citation
        self.resolutions: dict[str, dict[str, Any]] = {}  # observation id -> resolution
        self.notices: dict[str, dict[str, Any]] = {}  # observation id -> standing notice
        self.sources: list[dict[str, Any]] = []  # {observed_at, source}, one per standing source
        self.measurement: dict[str, Any] | None = None  # the latest measurements.checked payload
        self.counted: dict[str, Any] | None = None  # the latest coverage.counted payload: what a record over the cap counted
        self.counted_at = ""  # its effective key: the count is read against what the ledger itemized then

    def effective(self, kind: str, subject: str) -> str:
        """The effective key of the latest fact of `kind` and `subject` placed; "" when there is none."""
        latest = self._newest.get((kind, subject))
        return "" if latest is None else latest[0]


class Kind:
    """One event kind; a subclass defines every entry of ENTRIES in its own body (see the module docstring).
    `observation`: the subject is an observation id, and the fact reaches papers through its citation."""

    name: str
    observation: bool
    subject_slot = False  # True: `slot` is the subject whatever the payload (a fold parses only what it keeps)

    def derive(self, payload: dict[str, Any], checked: bool, stated: str | None) -> Derived:
        """Check `payload` (unless `checked`: built from parts `published.check_record` accepted) and give its
        effective time as written, subject, paper (paper-level kinds) and papers (a citation's); `stated` is
        the effective time the line states, if any.

        Raises: InputError naming the field.
        """
        ...

    def slot(self, paper_id: str, subject: str, payload: dict[str, Any]) -> str | None:
        """The subject under which paper `paper_id`'s record keeps its latest fact of this kind; None when
        the fact is another paper's."""
        ...

    def place(self, draft: Draft, subject: str, payload: dict[str, Any]) -> None:
        """Put the latest fact of this kind and subject into the draft of a record."""
        ...

    def account(self, old: dict[str, Any] | None, new: dict[str, Any]) -> str:
        """One line saying what a fact changed, given the previous payload of its kind and subject (or None)."""
        ...

    page: Callable[..., Any] | None  # the pages' words for the part this kind placed (None: no such part)

    def __repr__(self) -> str:
        return f"<kind {self.name}>"


class PaperSnapshot(Kind):
    name = "paper.snapshot"
    observation = False

    def derive(self, payload: dict[str, Any], checked: bool, stated: str | None) -> Derived:
        paper = payload if checked else check_paper_snapshot(payload, "payload")
        return paper["snapshot_observed_at"], paper["arxiv_id"], paper["arxiv_id"], ()

    def slot(self, paper_id: str, subject: str, payload: dict[str, Any]) -> str | None:
        return subject if payload["arxiv_id"] == paper_id else None

    def place(self, draft: Draft, subject: str, payload: dict[str, Any]) -> None:
        draft.paper = payload

    def account(self, old: dict[str, Any] | None, new: dict[str, Any]) -> str:
        if old is None:
            return f"paper snapshot v{new.get('latest_version')}: {new.get('title')}"
        if old.get("latest_version") != new.get("latest_version"):
            return f"paper v{old.get('latest_version')} → v{new.get('latest_version')}"
        return f"paper snapshot re-observed; changed: {changed_keys(old, new)}"

    def page(self, paper: dict[str, Any]) -> str:
        """The paper as the page's heading names it."""
        return paper.get("title") or f"arXiv:{paper['arxiv_id']}"


class CitationObserved(Kind):
    name = "citation.observed"
    observation = subject_slot = True

    def derive(self, payload: dict[str, Any], checked: bool, stated: str | None) -> Derived:
        oid = _observation_id(payload, checked)
        citation = _part(payload, "citation", dict, checked, check_citation)
        return latest(observed_times(citation)), oid, None, citation_papers(citation)

    def slot(self, paper_id: str, subject: str, payload: dict[str, Any]) -> str | None:
        return subject

    def place(self, draft: Draft, subject: str, payload: dict[str, Any]) -> None:
        draft.citations[subject] = payload["citation"]

    def account(self, old: dict[str, Any] | None, new: dict[str, Any]) -> str:
        citation = new["citation"]
        if old is None:  # the history line names the citation before it (`citation_label`)
            return f"observation added (reference {citation['reference_index']}, {citation['source']})"
        return f"citation re-observed; changed: {changed_keys(old['citation'], citation)}"

    def page(self, citation: dict[str, Any], direction: str) -> dict[str, Any]:
        """The sentences of an observation block that its citation gives, seen from `direction`."""
        citing = citation["citing_paper"].get("title") or f"arXiv:{citation['citing_paper']['arxiv_id']}"
        cited = cited_label(citation)
        if direction == "outbound":
            sentence = f"This paper cites {cited or 'an ' + UNTITLED}."
        else:
            sentence = f"{citing} cites this paper."
        return {"sentence": sentence, "citing": citing, "cited": cited or UNTITLED[:1].upper() + UNTITLED[1:],
                "reference": f"Reference {citation['reference_index']}"}


class ResolutionRecorded(Kind):
    name = "resolution.recorded"
    observation = subject_slot = True

    def derive(self, payload: dict[str, Any], checked: bool, stated: str | None) -> Derived:
        """Raises: InputError naming the field, or for a resolution without a time."""
        oid = _observation_id(payload, checked)
        resolution = _part(payload, "resolution", dict, checked, check_resolution)
        if resolution["observed_at"] is None:
            raise InputError("field payload.resolution.observed_at: a recorded resolution needs a time")
        return resolution["observed_at"], oid, None, ()

    def slot(self, paper_id: str, subject: str, payload: dict[str, Any]) -> str | None:
        return subject

    def place(self, draft: Draft, subject: str, payload: dict[str, Any]) -> None:
        draft.resolutions[subject] = payload["resolution"]

    def account(self, old: dict[str, Any] | None, new: dict[str, Any]) -> str:
        before = (old or {"resolution": UNRESOLVED})["resolution"]
        return transition("resolution", resolution_label, before, new["resolution"], first=old is None)

    def page(self, resolution: dict[str, Any]) -> str:
        """The resolution line of an observation block."""
        line = f"Resolution: {spaced(resolution['status'])}; {resolution['resolver_source'] or 'no resolver link'}"
        return line + (f", observed {resolution['observed_at']}" if resolution["observed_at"] else "")


class NoticeChecked(Kind):
    name = "notice.checked"
    observation = subject_slot = True

    def derive(self, payload: dict[str, Any], checked: bool, stated: str | None) -> Derived:
        """Raises: InputError naming the field, or when neither receipts nor the line give the sweep time."""
        oid = _observation_id(payload, checked)
        notice = _part(payload, "standing_notice", dict, checked, check_notice)
        receipts = [r["observed_at"] for r in notice["source_receipts"]]
        if receipts:
            return latest(receipts), oid, None, ()
        # Without receipts the check happened at the sweep time, which only the line can state.
        if stated is None:
            raise InputError("field effective_at: a notice check without source receipts needs its sweep time")
        return stated, oid, None, ()

    def slot(self, paper_id: str, subject: str, payload: dict[str, Any]) -> str | None:
        return subject

    def place(self, draft: Draft, subject: str, payload: dict[str, Any]) -> None:
        draft.notices[subject] = payload["standing_notice"]

    def account(self, old: dict[str, Any] | None, new: dict[str, Any]) -> str:
        before = (old or {"standing_notice": NOT_CHECKED})["standing_notice"]
        return transition("standing notice", describe_notice, before, new["standing_notice"], first=old is None)

    def page(self, notice: dict[str, Any]) -> tuple[list[str], str | None]:
        """One line per source-reported event, then the closing sentence (the notice's own observation, or
        why there is none), if any."""
        events = [describe_event(e) for e in notice.get("events") or []]
        if notice.get("observation"):
            return events, notice["observation"]
        if notice.get("state") == CHECK_FAILED:
            return events, f"Check failed: {spaced(notice.get('reason') or 'unknown')}."
        if notice.get("state") != MEASURED:
            return events, f"Unavailable: {spaced(notice.get('reason') or 'unknown')}."
        return events, None


def _paper_source(payload: dict[str, Any], checked: bool) -> tuple[str, str, str]:
    paper = _part(payload, "paper", str, checked)
    source = _part(payload, "source", str, checked)
    return paper, source, payload["observed_at"] if checked else timestamp(payload, "observed_at", "payload")


class SourceChecked(Kind):
    name = "source.checked"
    observation = False
    page = None  # the pages show a sweep only as the standing-notices lane's time

    def derive(self, payload: dict[str, Any], checked: bool, stated: str | None) -> Derived:
        paper, source, observed_at = _paper_source(payload, checked)
        return observed_at, f"{paper} {source}", paper, ()

    def slot(self, paper_id: str, subject: str, payload: dict[str, Any]) -> str | None:
        return subject if payload["paper"] == paper_id else None

    def place(self, draft: Draft, subject: str, payload: dict[str, Any]) -> None:
        draft.sources.append({"observed_at": payload["observed_at"], "source": payload["source"]})

    def account(self, old: dict[str, Any] | None, new: dict[str, Any]) -> str:
        return f"{new['source']} swept" + (f" (previously {old['observed_at']})" if old else "")


class MeasurementsChecked(Kind):
    name = "measurements.checked"
    observation = False

    def derive(self, payload: dict[str, Any], checked: bool, stated: str | None) -> Derived:
        paper, source, observed_at = _paper_source(payload, checked)
        _part(payload, "measurements", list, checked)
        return observed_at, f"{paper} {source}", paper, ()

    def slot(self, paper_id: str, subject: str, payload: dict[str, Any]) -> str | None:
        # One measurement slot, whatever its source: the record shows one source's measurements (SPEC §4).
        return "" if payload["paper"] == paper_id else None

    def place(self, draft: Draft, subject: str, payload: dict[str, Any]) -> None:
        draft.measurement = payload

    def account(self, old: dict[str, Any] | None, new: dict[str, Any]) -> str:
        before = len(old["measurements"]) if old else 0
        return f"measurements from {new['source']}: {before} → {len(new['measurements'])}"

    def page(self, entry: object, source: str) -> str:
        """One external citation measurement, `source` naming the lane's source."""
        if isinstance(entry, dict) and "citation_count" in entry:
            line = f"{entry.get('source', source)}: {entry['citation_count']} citations"
            return line + (f", observed {entry['observed_at']}" if entry.get("observed_at") else "")
        return f"{source}: {entry}"


class ObservationWithdrawn(Kind):
    name = "observation.withdrawn"
    observation = subject_slot = True
    page = None  # a withdrawn observation is not in the record: the pages have nothing of it to show

    def derive(self, payload: dict[str, Any], checked: bool, stated: str | None) -> Derived:
        """Raises: InputError naming the field."""
        oid = _observation_id(payload, checked)
        _part(payload, "reason", str, checked)
        return timestamp(payload, "observed_at", "payload"), oid, None, ()

    def slot(self, paper_id: str, subject: str, payload: dict[str, Any]) -> str | None:
        return subject

    def place(self, draft: Draft, subject: str, payload: dict[str, Any]) -> None:
        # Listed after citation.observed: the citation stays only if observed again after the withdrawal.
        if draft.effective(CitationObserved.name, subject) <= draft.effective(self.name, subject):
            draft.citations.pop(subject, None)

    def account(self, old: dict[str, Any] | None, new: dict[str, Any]) -> str:
        return f"withdrawn on {instant_key(new['observed_at'])[:10]}: {new['reason']}"


COUNTED_LANES = ("inbound_itemization", "reference_resolution", "standing_notices")
# The lane that counts each direction's observations: a record over its page cap counts more than it lists.
COUNTING_LANE = {"inbound": "inbound_itemization", "outbound": "reference_resolution"}


def _counted_lanes(payload: dict[str, Any]) -> dict[str, Any]:
    # {lane: {"denominator": n, "records_observed": m}} for exactly the lanes a count can exceed the listing in.
    lanes: dict[str, Any] = field(payload, "lanes", dict, "payload")
    if sorted(lanes) != sorted(COUNTED_LANES):
        raise InputError(f"field payload.lanes: expected the lanes {', '.join(COUNTED_LANES)}, found "
                         f"{', '.join(sorted(lanes)) or 'none'}")
    for lane in COUNTED_LANES:
        where = f"payload.lanes.{lane}"
        numbers = field(lanes, lane, dict, "payload.lanes")
        denominator, observed = (field(numbers, key, int, where) for key in ("denominator", "records_observed"))
        if not 0 <= observed <= denominator:
            raise InputError(f"field {where}: records_observed {observed} is not between 0 and the denominator "
                             f"{denominator}")
    return lanes


class CoverageCounted(Kind):
    name = "coverage.counted"
    observation = False

    def derive(self, payload: dict[str, Any], checked: bool, stated: str | None) -> Derived:
        """Raises: InputError naming the field."""
        paper = _part(payload, "paper", str, checked)
        if not checked:
            _counted_lanes(payload)
        return timestamp(payload, "observed_at", "payload"), paper, paper, ()

    def slot(self, paper_id: str, subject: str, payload: dict[str, Any]) -> str | None:
        return "" if payload["paper"] == paper_id else None  # one count in force: the latest

    def place(self, draft: Draft, subject: str, payload: dict[str, Any]) -> None:
        draft.counted, draft.counted_at = payload, draft.effective(self.name, subject)

    def account(self, old: dict[str, Any] | None, new: dict[str, Any]) -> str:
        return f"counted on {instant_key(new['observed_at'])[:10]}: " + "; ".join(
            self.page(new["lanes"][lane], lane) for lane in COUNTED_LANES)

    def page(self, lane: dict[str, Any], name: str) -> str:
        """What one lane counted against what it itemized (or, for notices, checked)."""
        if name == "standing_notices":
            return f"notices checked on {lane['records_observed']} of {lane['denominator']} counted"
        direction = "inbound" if name == "inbound_itemization" else "outbound"
        return f"{direction} {lane['denominator']} counted, {lane['records_observed']} itemized"


def table(*kinds: Kind) -> dict[str, Kind]:
    """The kinds by name, in the order given (the order `place` runs in and the vocabulary is listed in).

    Raises: TypeError naming a kind whose class leaves out an entry of ENTRIES, or ValueError for a name
    given twice.
    """
    found: dict[str, Kind] = {}
    for kind in kinds:
        missing = [entry for entry in ENTRIES if entry not in vars(type(kind))]
        if missing:
            raise TypeError(f"event kind {type(kind).__name__}: no {', '.join(missing)}")
        if kind.name in found:
            raise ValueError(f"event kind {kind.name}: given twice")
        found[kind.name] = kind
    return found


KIND = table(PaperSnapshot(), CitationObserved(), ResolutionRecorded(), NoticeChecked(), SourceChecked(),
             MeasurementsChecked(), ObservationWithdrawn(), CoverageCounted())
(PAPER_SNAPSHOT, CITATION_OBSERVED, RESOLUTION_RECORDED, NOTICE_CHECKED, SOURCE_CHECKED, MEASUREMENTS_CHECKED,
 OBSERVATION_WITHDRAWN, COVERAGE_COUNTED) = KIND
KINDS = tuple(KIND)
OBSERVATION_KINDS = tuple(name for name, kind in KIND.items() if kind.observation)
