"""Facts as events: the vocabulary, how each kind's effective time and subject are derived, and how a
published record is taken apart into the events that rebuild it.

An event is (kind, effective time, payload). The effective time is derived from the payload wherever the
payload carries it, so an event line cannot claim a time its own facts contradict. The subject names what
the fact is about; (kind, subject, effective time) identifies a fact, so the same key with another
payload is a contradiction. This module never touches storage.
"""

from __future__ import annotations

from typing import Any, Iterable, NamedTuple

from ledger.core.canonical import canonical
from ledger.core.errors import InputError
from ledger.model.published import (
    _type_name,
    check_citation,
    check_notice,
    check_paper_snapshot,
    check_resolution,
    field,
    timestamp,
)
from ledger.core.times import instant_key

PAPER_SNAPSHOT = "paper.snapshot"
CITATION_OBSERVED = "citation.observed"
RESOLUTION_RECORDED = "resolution.recorded"
NOTICE_CHECKED = "notice.checked"
SOURCE_CHECKED = "source.checked"
MEASUREMENTS_CHECKED = "measurements.checked"
KINDS = (PAPER_SNAPSHOT, CITATION_OBSERVED, RESOLUTION_RECORDED, NOTICE_CHECKED, SOURCE_CHECKED, MEASUREMENTS_CHECKED)
OBSERVATION_KINDS = (CITATION_OBSERVED, RESOLUTION_RECORDED, NOTICE_CHECKED)

UNRESOLVED = {"observed_at": None, "resolver_source": None, "status": "unresolved"}
NOT_CHECKED = {"events": [], "reason": "not_checked", "source_receipts": [], "state": "unavailable"}
NO_MEASUREMENT_SOURCE = "cited_works"


class Event(NamedTuple):
    """A fact ready to append: kind, effective time as the source wrote it, canonical payload. A tuple: one is
    built for every fact imported, and worker processes send them back (`import --jobs`)."""

    kind: str
    effective_at: str
    effective_key: str  # the effective time in UTC, for ordering (derived once)
    payload: bytes
    subject: str
    paper: str | None  # set for paper-level kinds; for observation kinds the subject is the observation id
    papers: tuple[str, ...] = ()  # papers whose records a citation appears in

    @property
    def key(self) -> tuple[str, str, str]:
        """What names a fact: the same key with another payload is a contradiction."""
        return (self.kind, self.subject, self.effective_key)


class Fact(NamedTuple):
    """What a projection needs of an event."""

    seq: int
    kind: str
    subject: str  # as derived when the fact was appended (see Event)
    effective_at: str
    effective_key: str
    recorded_at: str
    payload: bytes


def latest(times: Iterable[str]) -> str | None:
    """The latest of several timestamp strings, returned as written; None when there are none.
    Raises TimeError for a string that is not a timestamp."""
    return max(times, key=instant_key, default=None)


def observed_times(value: Any) -> list[str]:
    """Every `*_observed_at` / `observed_at` string inside a value, in document order (paper dates are not
    observations). Raises nothing."""
    found: list[str] = []
    _collect_observed(value, found)
    return found


def _collect_observed(value: Any, found: list[str]) -> None:
    # Appends to one list instead of nesting generators: a citation's walk was a fifth of importing it.
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, str):
                if key == "observed_at" or key.endswith("_observed_at"):
                    found.append(item)
            elif isinstance(item, (dict, list)):
                _collect_observed(item, found)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)):
                _collect_observed(item, found)


def citation_papers(citation: dict) -> tuple[str, ...]:
    """Raises KeyError only for a citation `published.check_citation` would refuse."""
    papers = [citation["citing_paper"]["arxiv_id"]]
    cited = citation.get("cited_paper")
    if cited is not None and cited["arxiv_id"] not in papers:
        papers.append(cited["arxiv_id"])
    return tuple(papers)


def _event(kind: str, effective_at: str, payload: dict, subject: str, paper=None, papers=(), finite=False) -> Event:
    return Event(kind, effective_at, instant_key(effective_at), canonical(payload, finite), subject, paper, papers)


def make_event(kind: Any, payload: Any, effective_at: Any = None, finite: bool = False,
               checked: bool = False) -> Event:
    """Validate one fact and derive its effective time and subject; raise InputError naming the field.

    `finite=True` says the payload came from `canonical.parse_json` (so holds no NaN or Infinity): its
    canonical bytes are then encoded without the walk that looks for them. `checked=True` says it was built
    by `record_events` from parts `published.check_record` accepted, which are not checked a second time."""
    if kind not in KINDS:
        raise InputError(f"field kind: expected one of {', '.join(KINDS)}, found {kind!r}")
    if not isinstance(payload, dict):
        raise InputError(f"field payload: expected an object, found {_type_name(payload)}")
    stated = None
    if effective_at is not None:
        if not isinstance(effective_at, str):
            raise InputError(f"field effective_at: expected a string, found {_type_name(effective_at)}")
        stated = instant_key(effective_at)
    event = _derive(kind, payload, finite, checked)(effective_at)
    if stated is not None and stated != event.effective_key:
        raise InputError(
            f"field effective_at: the payload says {event.effective_at}, the line says {effective_at}"
        )
    return event


def _derive(kind: str, payload: dict, finite: bool, checked: bool):
    """Return a function of the optional stated effective time that builds the event."""

    def part(key: str, expected: type, check=None):  # payload[key], checked unless `checked`
        if checked:
            return payload[key]
        value = field(payload, key, expected, "payload")
        return value if check is None else check(value, f"payload.{key}")

    if kind == PAPER_SNAPSHOT:
        paper = payload if checked else check_paper_snapshot(payload, "payload")
        return lambda _: _event(kind, paper["snapshot_observed_at"], payload, paper["arxiv_id"], paper=paper["arxiv_id"],
                                finite=finite)
    if kind in OBSERVATION_KINDS:
        obs = part("observation_id", str)
        if not obs:
            raise InputError("field payload.observation_id: empty")
    if kind == CITATION_OBSERVED:
        citation = part("citation", dict, check_citation)
        when = latest(observed_times(citation))
        return lambda _: _event(kind, when, payload, obs, papers=citation_papers(citation), finite=finite)
    if kind == RESOLUTION_RECORDED:
        resolution = part("resolution", dict, check_resolution)
        if resolution["observed_at"] is None:
            raise InputError("field payload.resolution.observed_at: a recorded resolution needs a time")
        return lambda _: _event(kind, resolution["observed_at"], payload, obs, finite=finite)
    if kind == NOTICE_CHECKED:
        notice = part("standing_notice", dict, check_notice)
        receipts = [r["observed_at"] for r in notice["source_receipts"]]

        def notice_event(stated: str | None) -> Event:
            # Without receipts the check happened at the sweep time, which only the line can state.
            if receipts:
                return _event(kind, latest(receipts), payload, obs, finite=finite)
            if stated is None:
                raise InputError("field effective_at: a notice check without source receipts needs its sweep time")
            return _event(kind, stated, payload, obs, finite=finite)

        return notice_event
    paper = part("paper", str)
    source = part("source", str)
    observed_at = payload["observed_at"] if checked else timestamp(payload, "observed_at", "payload")
    if kind == MEASUREMENTS_CHECKED:
        part("measurements", list)
    return lambda _: _event(kind, observed_at, payload, f"{paper} {source}", paper=paper, finite=finite)


def record_events(record: dict, finite: bool = False) -> list[Event]:
    """Take a well-formed record (see `record.check_record`) apart into the events that rebuild it.

    Derived fields (thesis, coverage counts, links, digests) become no event: they are re-computed.
    Defaults (an unresolved resolution with no time, an unchecked notice, no measurement) are the absence
    of an event, so they are not stored either. `finite=True`: the record came from `canonical.parse_json`,
    and every payload is built from its parts (see `make_event`); those parts are not checked again.
    Raises InputError naming the field of a fact that cannot be an event.
    """
    paper = record["paper"]
    arxiv_id = paper["arxiv_id"]
    events = [make_event(PAPER_SNAPSHOT, paper, finite=finite, checked=True)]
    lanes = {lane["lane"]: lane for lane in record["coverage"]}
    for source in record["standing_sources"]:
        events.append(make_event(SOURCE_CHECKED, {"observed_at": source["observed_at"], "paper": arxiv_id,
                                                  "source": source["source"]}, finite=finite, checked=True))
    sweep = lanes.get("standing_notices", {}).get("source_observed_at") or record["as_of"]
    for direction in ("inbound", "outbound"):
        for index, obs in enumerate(record[direction]):
            oid = obs["observation_id"]
            events.append(make_event(CITATION_OBSERVED, {"citation": obs["citation"], "observation_id": oid},
                                     finite=finite, checked=True))
            resolution = obs["resolution"]
            if resolution != UNRESOLVED:
                try:
                    events.append(make_event(RESOLUTION_RECORDED, {"observation_id": oid, "resolution": resolution},
                                             finite=finite, checked=True))
                except InputError as exc:
                    raise InputError(f"{direction}[{index}]: {exc}") from None
            notice = obs["standing_notice"]
            if notice != NOT_CHECKED:
                stated = None if notice["source_receipts"] else sweep
                events.append(make_event(NOTICE_CHECKED, {"observation_id": oid, "standing_notice": notice}, stated,
                                         finite, checked=True))
    measurement = lanes.get("external_citation_measurements")
    if measurement is not None:
        measurements = record["external_citation_measurements"]
        if measurement["source_observed_at"] is not None:
            events.append(make_event(MEASUREMENTS_CHECKED, {
                "measurements": measurements, "observed_at": measurement["source_observed_at"],
                "paper": arxiv_id, "source": measurement["source"],
            }, finite=finite, checked=True))
        elif measurements:
            raise InputError("field coverage[external_citation_measurements].source_observed_at: "
                             "measurements are listed but the lane has no time")
    return events
