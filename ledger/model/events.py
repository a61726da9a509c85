"""Facts as events: the event a fact becomes (its kind's entry in `ledger.model.kinds` checks the payload and
derives its effective time and subject), and how a published record is taken apart into the events that
rebuild it.

An event is (kind, effective time, payload). The effective time is derived from the payload wherever the
payload carries it, so an event line cannot claim a time its own facts contradict. The subject names what
the fact is about; (kind, subject, effective time) identifies a fact, so the same key with another
payload is a contradiction. This module never touches storage.
"""

from __future__ import annotations

from typing import Any, NamedTuple, cast

from ledger.core.canonical import canonical_parsed
from ledger.core.errors import InputError
from ledger.core.times import instant_key
from ledger.model.kinds import (  # the vocabulary lives in the kinds table; importable from here as before
    CITATION_OBSERVED,
    COUNTED_LANES,
    COUNTING_LANE,
    COVERAGE_COUNTED,
    KIND,
    KINDS,
    MEASUREMENTS_CHECKED,
    NO_MEASUREMENT_SOURCE,
    NOT_CHECKED,
    NOTICE_CHECKED,
    OBSERVATION_KINDS,
    OBSERVATION_WITHDRAWN,
    PAPER_SNAPSHOT,
    RESOLUTION_RECORDED,
    SOURCE_CHECKED,
    UNRESOLVED,
)
from ledger.model.parts import citation_papers, latest, observed_times
from ledger.model.published import _type_name

__all__ = ["CITATION_OBSERVED", "COVERAGE_COUNTED", "Event", "Fact", "KINDS", "MEASUREMENTS_CHECKED",
           "NO_MEASUREMENT_SOURCE", "NOT_CHECKED", "NOTICE_CHECKED", "OBSERVATION_KINDS", "OBSERVATION_WITHDRAWN", "PAPER_SNAPSHOT",
           "RESOLUTION_RECORDED", "SOURCE_CHECKED", "UNRESOLVED", "citation_papers", "latest", "make_event",
           "observed_times", "record_count", "record_events"]


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


def make_event(kind: Any, payload: Any, effective_at: Any = None, checked: bool = False) -> Event:
    """Validate one fact and derive its effective time and subject (its kind's `derive`).

    `payload` is parsed JSON (see `canonical.canonical_parsed`). `checked=True` says it was built by
    `record_events` from parts `published.check_record` accepted, which are not checked a second time.

    Raises: InputError naming the field (a TimeError for a time that is not a timestamp).
    """
    if kind not in KINDS:
        raise InputError(f"field kind: expected one of {', '.join(KINDS)}, found {kind!r}")
    if not isinstance(payload, dict):
        raise InputError(f"field payload: expected an object, found {_type_name(payload)}")
    stated = None
    if effective_at is not None:
        if not isinstance(effective_at, str):
            raise InputError(f"field effective_at: expected a string, found {_type_name(effective_at)}")
        stated = instant_key(effective_at)
    effective, subject, paper, papers = KIND[kind].derive(payload, checked, effective_at)
    key = instant_key(effective)  # TimeError when the payload gives no time (None): past it, `effective` is a str
    event = Event(kind, cast(str, effective), key, canonical_parsed(payload), subject, paper, papers)
    if stated is not None and stated != event.effective_key:
        raise InputError(
            f"field effective_at: the payload says {event.effective_at}, the line says {effective_at}"
        )
    return event


def record_events(record: dict[str, Any]) -> list[Event]:
    """Take a well-formed record (see `record.check_record`) apart into the events that rebuild it.

    Derived fields (thesis, coverage counts, links, digests) become no event: they are re-computed.
    Defaults (an unresolved resolution with no time, an unchecked notice, no measurement) are the absence
    of an event, so they are not stored either. The record is parsed JSON that `published.check_record`
    accepted: every payload is built from its parts (see `make_event`), which are not checked again.
    Raises: InputError naming the field of a fact that cannot be an event.
    """
    paper = record["paper"]
    arxiv_id = paper["arxiv_id"]
    events = [make_event(PAPER_SNAPSHOT, paper, checked=True)]
    lanes = {lane["lane"]: lane for lane in record["coverage"]}
    for source in record["standing_sources"]:
        events.append(make_event(SOURCE_CHECKED, {"observed_at": source["observed_at"], "paper": arxiv_id,
                                                  "source": source["source"]}, checked=True))
    sweep = lanes.get("standing_notices", {}).get("source_observed_at") or record["as_of"]
    for direction in ("inbound", "outbound"):
        for index, obs in enumerate(record[direction]):
            oid = obs["observation_id"]
            events.append(make_event(CITATION_OBSERVED, {"citation": obs["citation"], "observation_id": oid}, checked=True))
            resolution = obs["resolution"]
            if resolution != UNRESOLVED:
                try:
                    events.append(make_event(RESOLUTION_RECORDED, {"observation_id": oid, "resolution": resolution}, checked=True))
                except InputError as exc:
                    raise InputError(f"{direction}[{index}]: {exc}") from None
            notice = obs["standing_notice"]
            if notice != NOT_CHECKED:
                stated = None if notice["source_receipts"] else sweep
                events.append(make_event(NOTICE_CHECKED, {"observation_id": oid, "standing_notice": notice}, stated,
                                         checked=True))
    count = record_count(record)
    if count is not None:
        events.append(count)
    measurement = lanes.get("external_citation_measurements")
    if measurement is not None:
        measurements = record["external_citation_measurements"]
        if measurement["source_observed_at"] is not None:
            events.append(make_event(MEASUREMENTS_CHECKED, {
                "measurements": measurements, "observed_at": measurement["source_observed_at"],
                "paper": arxiv_id, "source": measurement["source"],
            }, checked=True))
        elif measurements:
            raise InputError("field coverage[external_citation_measurements].source_observed_at: "
                             "measurements are listed but the lane has no time")
    return events


def record_count(record: dict[str, Any], force: bool = False) -> Event | None:
    """The coverage.counted fact of a record that counts more observations than it lists (over its page
    cap), effective at its as_of: its lanes' numbers, as the record states them. None for a record that
    lists all it counts, unless `force` (a later record ending a count in force).

    Raises: InputError naming the field, for numbers that are not counts or a record that lists fewer than
    it counts under its cap.
    """
    lanes = {lane["lane"]: lane for lane in record["coverage"]}
    counted = {}
    for name in COUNTED_LANES:
        if name not in lanes:
            return None  # a record without the lane does not rebuild: the comparison names it
        counted[name] = {key: lanes[name].get(key) for key in ("denominator", "records_observed")}
    over = []
    for direction, name in COUNTING_LANE.items():
        denominator, listed = counted[name]["denominator"], len(record[direction])
        if type(denominator) is int and denominator > listed:
            cap = record["caps"].get(direction)
            if type(cap) is not int or listed < cap:
                raise InputError(f"field coverage[{name}].denominator: counts {denominator} {direction} observations "
                                 f"but the record lists {listed}, under its cap of {cap}")
            over.append(name)
    if not over and not force:
        return None
    payload = {"lanes": counted, "observed_at": record["as_of"], "paper": record["paper"]["arxiv_id"]}
    try:
        return make_event(COVERAGE_COUNTED, payload)
    except InputError as exc:
        raise InputError(f"field coverage: {exc}") from None

