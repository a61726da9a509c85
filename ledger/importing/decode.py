"""Decoding: one input, or one unit of it (`units`), parsed and fully checked into a `Parsed`: a record (its
shape, its digests, the events it is taken apart into, each small enough to publish as a tile) or event lines
(new facts, and exported log lines with their seq, recorded time and hashes).

It is the door for paper ids: the id of every paper the ledger keeps records for (a snapshot's, and the
paper of every paper-level fact) must be one `ledger.model.arxiv` accepts, since it becomes a file name and a
link. A citation's citing and cited ids are data (a reference may carry a malformed identifier) and pass as
published.

It runs in the writer or in a worker process alike, so it never reads a file and never touches the store:
whether a fact is new, and whether the ledger gives a record back, is the transaction's to decide.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from ledger.core.canonical import loads_finite, parse_json
from ledger.core.errors import InputError, IntegrityError, NotFoundError
from ledger.core.inputs import decode_input, split_lines
from ledger.core.redact import quoted
from ledger.core.times import TimeError, instant_key
from ledger.importing.units import Part, Unit, logged
from ledger.log.chain import Entry
from ledger.log.tiles import check_entry_size
from ledger.model.arxiv import paper_id
from ledger.model.events import PAPER_SNAPSHOT, Event, Fact, make_event, record_events
from ledger.model.published import check_record, verify_digests
from ledger.projections.compare import rebuild_mismatch

_ENTRY_FIELDS = ("chain_hash", "effective_at", "entry_hash", "kind", "payload", "recorded_at", "seq")


@dataclass
class Parsed:
    """One input, validated: a record with its events, or event lines (new facts and log entries). A unit
    of an input (`import_files`) is one too: `last` says whether the input ends with it. A record decoded in
    a worker process comes as its canonical bytes, parsed again only if the writer needs it (`the_record`)."""

    name: str
    record: dict | None = None
    events: list[tuple[int, Event]] = field(default_factory=list)
    entries: list[tuple[int, Entry, Event]] = field(default_factory=list)
    last: bool = True
    size: int = 0  # bytes of the input this unit stands for (progress)
    rebuilds_alone: bool = False  # a worker rebuilt the record from its own events alone, byte for byte
    paper: str | None = None  # a record's arXiv id
    record_bytes: bytes | None = None  # a record from a worker, not parsed yet

    def the_record(self) -> dict:
        """The record, parsed from `record_bytes` (a worker's canonical bytes) on first use."""
        if self.record is None:
            self.record = loads_finite(self.record_bytes)  # canonical bytes: orjson refuses NaN
        return self.record


@contextmanager
def acyclic() -> Iterator[None]:
    """Python's cycle collector paused: an import builds a great many objects (the decoder's dicts, lists and
    strings, events, rows) and holds them until they are appended; they hold no reference cycle, and the
    collector would scan them again and again. Reference counting still frees them; the few cycles a refusal
    makes (an exception and its traceback) are collected once the collector resumes."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def parse_input(name: str, data: bytes) -> Parsed:
    """Parse and fully validate one input. Raises: InputError or IntegrityError, prefixed with its name."""
    return _parse_text(name, decode_input(name, data))


def decode_unit(unit: Unit) -> Parsed:
    """One unit, parsed and checked as its input would be; `last` and `size` as the unit's. The part of log
    lines parses and checks every line (a bad line is named in its turn) and keeps only the log lines; the
    part of new facts keeps the new facts and, the input's second pass, counts no bytes for progress.
    Raises: InputError or IntegrityError naming the file (and line); the error of a unit that could not be read."""
    if unit.error is not None:
        raise unit.error
    if unit.lines is None:
        parsed = _parse_text(unit.name, unit.text)
    else:
        # The part of new facts passes over the log lines (kept blank: the lines keep their numbers).
        lines = unit.lines if unit.part is not Part.NEW_FACTS else ["" if logged(line) else line for line in unit.lines]
        parsed = _parse_lines(unit.name, lines, None, unit.first)
        if unit.part is Part.LOG_LINES:
            parsed.events = []
    parsed.last, parsed.size = unit.last, 0 if unit.part is Part.NEW_FACTS else unit.size
    return parsed


def rebuilds_alone(parsed: Parsed) -> bool:
    """Whether a decoded record rebuilds byte for byte from its own events alone (in ledger order, as appended
    to a ledger that holds nothing else of its paper): the writer then need not rebuild it."""
    facts = [Fact(n, e.kind, e.subject, e.effective_at, e.effective_key, "", e.payload)
             for n, (_, e) in enumerate(parsed.events, start=1)]
    try:
        return rebuild_mismatch(facts, parsed.record) is None
    except NotFoundError:
        return False


def _parse_text(name: str, text: str) -> Parsed:
    try:
        whole = parse_json(text)
    except InputError as whole_error:
        lines = split_lines(text)
        if len([line for line in lines if line.strip()]) < 2:
            raise InputError(f"{name}: {whole_error}") from None
        return _parse_lines(name, lines, whole_error)
    if isinstance(whole, dict) and "schema" in whole:
        return _parse_record(name, whole)
    if isinstance(whole, dict):
        parsed = Parsed(name)
        _add_line(parsed, name, 1, whole)
        return parsed
    found = "an array" if isinstance(whole, list) else "a JSON " + type(whole).__name__
    raise InputError(f"{name}: expected a record (a JSON object) or event lines, found {found}")


def _parse_record(name: str, record: dict) -> Parsed:
    try:
        check_record(record)
        _paper_field(record["paper"]["arxiv_id"], "paper.arxiv_id")
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None
    try:  # the record came from parse_json: no NaN or Infinity in it (see canonical.canonical)
        verify_digests(record)
    except IntegrityError as exc:
        raise IntegrityError(f"{name}: {exc}") from None
    try:
        events = record_events(record)
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None
    for event in events:
        try:
            check_entry_size(event.kind, event.effective_at, event.payload)
        except InputError as exc:
            raise InputError(f"{name}: {event.subject}: {exc}") from None
    return Parsed(name, record=record, events=[(0, e) for e in events], paper=record["paper"]["arxiv_id"])


def _parse_lines(name: str, lines: list[str], whole_error: InputError | None, first: int = 1) -> Parsed:
    parsed = Parsed(name)
    for number, line in enumerate(lines, start=first):
        if not line.strip():
            continue
        try:
            obj = parse_json(line)
        except InputError as exc:
            # A pretty-printed record that does not parse fails on its first line: report the document.
            raise InputError(f"{name}: {whole_error if number == 1 and whole_error else f'line {number}: {exc}'}") from None
        _add_line(parsed, name, number, obj)
    return parsed


def _add_line(parsed: Parsed, name: str, number: int, obj: object) -> None:
    """One event line: a log entry (it has `seq`) or a new fact."""
    try:
        if not isinstance(obj, dict):
            raise InputError(f"expected an event object, found {type(obj).__name__}")
        if "seq" in obj:
            entry, event = parse_entry(obj)
            check_entry_size(entry.kind, entry.effective_at, entry.payload, entry.seq, entry.recorded_at)
            parsed.entries.append((number, entry, event))
        else:
            unknown = set(obj) - {"kind", "payload", "effective_at"}
            if unknown:
                raise InputError(f"unknown field(s) {', '.join(sorted(unknown))}")
            event = checked_paper(make_event(obj.get("kind"), obj.get("payload"), obj.get("effective_at")))
            check_entry_size(event.kind, event.effective_at, event.payload)  # the log must stay publishable as tiles
            parsed.events.append((number, event))
    except InputError as exc:
        raise InputError(f"{name}: line {number}: {exc}") from None


def checked_paper(event: Event) -> Event:
    """`event`, once the paper it is about (a paper-level fact's) is an id `arxiv.paper_id` accepts: the id a
    record is kept under becomes a file name and a link, so a bad one never enters the log.
    Raises: InputError naming the payload's field."""
    if event.paper is not None:
        _paper_field(event.paper, "payload.arxiv_id" if event.kind == PAPER_SNAPSHOT else "payload.paper")
    return event


def _paper_field(value: str, where: str) -> None:
    try:
        paper_id(value)
    except InputError as exc:
        raise InputError(f"field {where}: {exc}") from None


def _hash_field(obj: dict, key: str) -> bytes:
    value = obj.get(key)
    if not isinstance(value, str) or not value.startswith("blake3:") or len(value) != 71:
        raise InputError(f"field {key}: expected blake3:<64 hex>, found {quoted(value)}")
    try:
        return bytes.fromhex(value[7:])
    except ValueError:
        raise InputError(f"field {key}: not hex: {quoted(value)}") from None


def parse_entry(obj: dict) -> tuple[Entry, Event]:
    """An exported log line, parsed JSON: the event plus the ledger's own seq, recorded time and hashes.
    Raises: InputError naming the field."""
    missing = [k for k in _ENTRY_FIELDS if k not in obj]
    if missing:
        raise InputError(f"field {missing[0]}: missing (a log line carries {', '.join(_ENTRY_FIELDS)})")
    seq = obj["seq"]
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
        raise InputError(f"field seq: expected a positive integer, found {quoted(seq)}")
    recorded = obj["recorded_at"]
    try:
        normal = instant_key(recorded)
    except TimeError as exc:
        raise InputError(f"field recorded_at: {exc}") from None
    if recorded != normal:  # known-at compares recorded times as text: only the ledger's own form sorts
        raise InputError(f"field recorded_at: expected the ledger's form {normal}, found {quoted(recorded)}")
    if not isinstance(obj["effective_at"], str):  # a new fact may leave it to its payload; a logged entry holds it
        raise InputError(f"field effective_at: expected a string, found {quoted(obj['effective_at'])}")
    event = checked_paper(make_event(obj["kind"], obj["payload"], obj["effective_at"]))
    entry = Entry(seq, event.kind, obj["effective_at"], recorded, event.payload,
                  _hash_field(obj, "entry_hash"), _hash_field(obj, "chain_hash"))
    return entry, event
