"""Import: published records and event lines, validated in full, appended all-or-nothing.

An input is decoded in units: a whole file (a record, one event line, or a file whose first line is not an
event line), or a chunk of CHUNK_LINES event lines. Each unit is parsed, checked (shapes, digests) and taken
apart into events on its own, here or in worker processes (`jobs`); one writer appends the units in input
order, in one write transaction, inside which each record must rebuild byte for byte at its own `as_of` from
the ledger's history plus its events. Any refusal rolls the whole invocation back: nothing is appended unless
everything is accepted.

With one job the units of the first DECODE_AHEAD bytes of input are decoded before the transaction begins, so
the write lock of an import of that size is held for the appends only; a larger one decodes the rest as it
appends, and holds a bounded part of its input in memory whatever its size. With several jobs, the transaction
begins once the first unit is decoded and appends overlap decoding (the lock is held longer; other writers
wait). Either way an import fails as if everything had been decoded first: the first unit that cannot be
decoded, in input order, is reported (its file, line and field), ahead of any refusal met while appending (a
contradiction, a record the ledger cannot reproduce), which waits until every unit has been decoded. Only a
store error (lock timeout, lost connection) is raised at once.
"""

from __future__ import annotations

import gc
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import chain, islice
from typing import IO, Callable, Iterator, NamedTuple

import orjson

from ledger.projections.record import rebuild_mismatch

from ledger.core.canonical import canonical, loads_finite, parse_json
from ledger.log.chain import Entry, hex_hash, seal
from ledger.core.errors import InputError, IntegrityError, LedgerError, NotFoundError
from ledger.model.events import Event, Fact, make_event, record_events
from ledger.core.inputs import STDIN, decode_input, file_lines, input_files, keep_stdin, read_input, scan_file
from ledger.model.published import check_record, verify_digests
from ledger.storage.store import Store
from ledger.storage.writer import FactStored, Writer
from ledger.log.tiles import check_entry_size
from ledger.core.times import TimeError, instant_key
from ledger.core.workers import Workers

_ENTRY_FIELDS = ("chain_hash", "effective_at", "entry_hash", "kind", "payload", "recorded_at", "seq")
CHUNK_LINES = 2000  # event lines per unit: large enough that a worker's round trip costs little
TASK_BYTES = 256 * 1024  # units of input sent to a worker at once (a chunk of lines alone; records together)
# A file (or stdin) larger than this is read in blocks of STREAM_BLOCK bytes (twice), not whole: an input of
# any size holds a bounded part of itself in memory (read whole, a file takes about 3.5 times its size).
STREAM_BYTES = 64 << 20
STREAM_BLOCK = 4 << 20
# Bytes of input one job decodes before it takes the write lock; beyond them it decodes as it appends. Held
# decoded, input takes about five times its size in memory (a thousand records, 26 MB: 180 MB of RSS).
DECODE_AHEAD = 16 << 20
# The key `seq`, plain or with any of its letters escaped: only a line holding it is an exported log line.
_SEQ_KEY = re.compile(r'"(?:s|\\u0073)(?:e|\\u0065)(?:q|\\u0071)"')


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
        """The record, parsed from `record_bytes` on first use. Raises nothing for a worker's bytes."""
        if self.record is None:
            self.record = loads_finite(self.record_bytes)  # finite: canonical bytes (orjson refuses NaN)
        return self.record


@dataclass
class ImportResult:
    appended: int
    present: int
    head: tuple[int, bytes]


class Progress(NamedTuple):
    """What an import has done so far: `done` of `total` bytes of input (`total` None when unknown, as for
    stdin) and the events they held; `stage` is "decoding" (one job, before appending) or "appending"."""

    stage: str
    done: int
    total: int | None
    events: int


def parse_input(name: str, data: bytes) -> Parsed:
    """Parse and fully validate one input; raise InputError/IntegrityError prefixed with its name."""
    return _parse_text(name, decode_input(name, data))


def _parse_text(name: str, text: str) -> Parsed:
    try:
        whole = parse_json(text)
    except InputError as whole_error:
        lines = text.splitlines()
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
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None
    try:  # the record came from parse_json: no NaN or Infinity in it (see canonical.canonical)
        verify_digests(record, finite=True)
    except IntegrityError as exc:
        raise IntegrityError(f"{name}: {exc}") from None
    try:
        events = record_events(record, finite=True)
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
            entry, event = parse_entry(obj, finite=True)  # finite: the line came from parse_json
            check_entry_size(entry.kind, entry.effective_at, entry.payload, entry.seq, entry.recorded_at)
            parsed.entries.append((number, entry, event))
        else:
            unknown = set(obj) - {"kind", "payload", "effective_at"}
            if unknown:
                raise InputError(f"unknown field(s) {', '.join(sorted(unknown))}")
            # finite: the line came from parse_json (see canonical.canonical)
            event = make_event(obj.get("kind"), obj.get("payload"), obj.get("effective_at"), finite=True)
            check_entry_size(event.kind, event.effective_at, event.payload)  # the log must stay publishable as tiles
            parsed.events.append((number, event))
    except InputError as exc:
        raise InputError(f"{name}: line {number}: {exc}") from None


def _hash_field(obj: dict, key: str) -> bytes:
    value = obj.get(key)
    if not isinstance(value, str) or not value.startswith("blake3:") or len(value) != 71:
        raise InputError(f"field {key}: expected blake3:<64 hex>, found {value!r}")
    try:
        return bytes.fromhex(value[7:])
    except ValueError:
        raise InputError(f"field {key}: not hex: {value!r}") from None


def parse_entry(obj: dict, finite: bool = False) -> tuple[Entry, Event]:
    """An exported log line: the event plus the ledger's own seq, recorded time and hashes (`finite` as in
    `events.make_event`). Raises InputError naming the field."""
    missing = [k for k in _ENTRY_FIELDS if k not in obj]
    if missing:
        raise InputError(f"field {missing[0]}: missing (a log line carries {', '.join(_ENTRY_FIELDS)})")
    seq = obj["seq"]
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
        raise InputError(f"field seq: expected a positive integer, found {seq!r}")
    recorded = obj["recorded_at"]
    try:
        normal = instant_key(recorded)
    except TimeError as exc:
        raise InputError(f"field recorded_at: {exc}") from None
    if recorded != normal:  # known-at compares recorded times as text: only the ledger's own form sorts
        raise InputError(f"field recorded_at: expected the ledger's form {normal}, found {recorded!r}")
    event = make_event(obj["kind"], obj["payload"], obj["effective_at"], finite)
    entry = Entry(seq, event.kind, obj["effective_at"], recorded, event.payload,
                  _hash_field(obj, "entry_hash"), _hash_field(obj, "chain_hash"))
    return entry, event


def _contradiction(name: str, line: int, event: Event, what: str) -> InputError:
    where = f"{name}: line {line}: " if line else f"{name}: "
    return InputError(f"{where}{event.kind} of {event.subject} effective {event.effective_at} contradicts {what}")


def _fresh(name: str, events: list[tuple[int, Event]], stored: dict,
           own_from: int | None = None) -> tuple[list[Event], int]:
    """Drop facts already `stored` or given twice (identical kind, effective time and payload); refuse
    contradictions. `own_from`: the seq the input's first new fact took in this import; a stored fact from
    there on came from the input's own earlier chunks, and a contradiction of it is worded as one within the
    input, as it is when the input is one unit."""
    fresh: dict[tuple[str, str, str], Event] = {}
    present = 0
    for line, event in events:
        key = event.key
        if key in stored:
            seq, payload = stored[key]
            if payload != event.payload:
                raise _contradiction(name, line, event, "another fact in this import" if own_from is not None
                                     and seq >= own_from else f"event seq {seq} (same subject, kind and "
                                     "effective time, other payload)")
            present += 1
        elif key in fresh:
            if fresh[key].payload != event.payload:
                raise _contradiction(name, line, event, "another fact in this import")
            present += 1
        else:
            fresh[key] = event
    return list(fresh.values()), present


def _append_entries(writer: Writer, name: str, entries: list[tuple[int, Entry, Event]], look_up: bool) -> tuple[int, int]:
    """Continue the chain with exported entries, re-computing each hash; entries already held are skipped.
    With `look_up`, a line repeating a fact held under another seq (in the ledger or the log) is refused."""
    batch: list[tuple[Entry, Event, bytes]] = []
    lines: list[int] = []
    seq, chain, recorded = writer.seq, writer.chain, writer.last_recorded or ""
    present = 0
    for line, entry, event in entries:
        where = f"{name}: line {line}"
        if entry.seq <= seq:
            held = batch[entry.seq - writer.seq - 1][0] if entry.seq > writer.seq else writer.entry(entry.seq)
            if held.entry_hash != entry.entry_hash or held.chain_hash != entry.chain_hash:
                raise InputError(f"{where}: seq {entry.seq} is already taken by another event in this ledger")
            present += 1
            continue
        if entry.seq != seq + 1:
            raise InputError(f"{where}: seq {entry.seq} does not continue the ledger (head is {seq})")
        if entry.recorded_at < recorded:  # known-at is a prefix of the log only while recorded time never falls
            raise InputError(f"{where}: seq {entry.seq}: recorded_at {entry.recorded_at} is earlier than "
                             f"seq {seq}'s ({recorded})")
        data, digest, chain = seal(chain, entry.seq, entry.kind, entry.effective_at, entry.recorded_at, entry.payload)
        if digest != entry.entry_hash:
            raise IntegrityError(f"{where}: seq {entry.seq}: entry hash does not re-compute "
                                 f"(line says {hex_hash(entry.entry_hash)}, re-computed {hex_hash(digest)})")
        if chain != entry.chain_hash:
            raise IntegrityError(f"{where}: seq {entry.seq}: chain hash does not re-compute "
                                 f"(line says {hex_hash(entry.chain_hash)}, re-computed {hex_hash(chain)})")
        batch.append((entry, event, data))
        lines.append(line)
        seq, recorded = entry.seq, entry.recorded_at
    if look_up:
        facts = {key: found[0] for key, found in writer.existing(event for _, event, _ in batch).items()}
        for line, (entry, event, _) in zip(lines, batch):
            if event.key in facts:
                raise _contradiction(name, line, event, f"event seq {facts[event.key]} (a fact is held once; "
                                                        f"this line repeats it as seq {entry.seq})")
            facts[event.key] = entry.seq
    writer.append_entries(batch)
    return len(batch), present


def import_inputs(store: Store, parsed: list[Parsed]) -> ImportResult:
    """Append everything in `parsed` in one transaction, or nothing.

    New facts are the common case, so they are appended without looking anything up first: the database's
    unique fact key refuses a transaction that repeats a stored fact (FactStored), which is then rolled back
    and run again, looking every fact up before appending it.
    Raises InputError (a contradiction, a record the ledger cannot reproduce), IntegrityError (an exported line whose hashes do not re-compute) or StoreError; nothing is appended then."""
    with _acyclic():
        try:
            return _import(store, iter(parsed), "whole")
        except FactStored:
            return _import(store, iter(parsed), "look up")


class _Unusual(Exception):
    """A fact met twice (stored already, or in two units of one input) or contradicted, in the chunked pass."""


def _import(store: Store, units: Iterator[Parsed], mode: str, progress: Callable | None = None,
            total: int | None = None) -> ImportResult:
    """One transaction over `units` in input order. `mode`: "chunked" (units may be parts of an input; any
    fact met twice or contradicted raises _Unusual), "whole" (every unit a whole input: refusals as always)
    or "look up" (every fact looked up first; units whole inputs or chunks). Refusals wait until every unit is
    decoded."""
    appended = present = done = 0
    first = next(units, None)  # decoded before the lock is taken: a bad first input never waits for it
    refusal: LedgerError | None = None
    firsts: dict[str, int] = {}  # the seq each input's first new fact takes (`_fresh`)
    with store.writing() as writer:
        for item in _chain(first, units):  # raises the first unit that cannot be decoded, in input order
            done += item.size
            if refusal is not None:
                continue  # keep decoding: a bad unit further on is what gets reported
            try:
                added, held = _apply(writer, item, firsts, mode)
            except FactStored:
                if mode == "chunked":
                    raise _Unusual from None
                raise
            except (InputError, IntegrityError) as exc:
                refusal = exc
                continue
            appended, present = appended + added, present + held
            if progress is not None:
                progress(Progress("appending", done, total, appended + present))
        if refusal is not None:
            raise refusal
        head = (writer.seq, writer.chain)
    return ImportResult(appended, present, head)


def _chain(first: Parsed | None, rest: Iterator[Parsed]) -> Iterator[Parsed]:
    if first is not None:
        yield first
        yield from rest


def _apply(writer: Writer, item: Parsed, firsts: dict[str, int], mode: str) -> tuple[int, int]:
    """One unit: its log lines, then its new facts, then its record's rebuild (an input holding both log lines
    and new facts comes in two parts, its log lines first: `_in_parts`). Returns (appended, present)."""
    look_up = mode == "look up"
    appended = present = 0
    if item.entries:
        appended, present = _append_entries(writer, item.name, item.entries, look_up)
    # The seq the input's first new fact takes, after its log lines: an input's units come together, in order.
    own_from = firsts.setdefault(item.name, writer.seq + 1)
    if item.last:
        del firsts[item.name]
    events = item.events
    new: tuple[list[Entry], list[Event]] | None = None  # this unit's events and their entries, when all were new
    if events:
        stored = writer.existing(e for _, e in events) if look_up else {}
        try:
            fresh, held = _fresh(item.name, events, stored, own_from)
        except InputError:
            if mode == "chunked":  # the whole input's first contradiction may lie in an earlier unit
                raise _Unusual from None
            raise
        entries = writer.append(fresh)
        appended, present = appended + len(fresh), present + held
        if held == 0:
            new = (entries, fresh)
    if item.paper is not None:
        _check_rebuild(writer, item, new)
    return appended, present


def _check_rebuild(writer: Writer, item: Parsed, new: tuple[list[Entry], list[Event]] | None) -> None:
    """The ledger must give back this record's exact bytes at its as_of, or the import is refused.

    `new`: the record's own events, each appended just now, and their entries. When the ledger's facts of the
    paper are exactly those (their sequence numbers say so, read without the events), the rebuild runs on
    them as they are in memory; and if a worker process already rebuilt the record from its own events byte
    for byte (`rebuilds_alone`: a rebuild reads of each fact its kind, subject, effective key and payload,
    and their order, all the same here), it is not done twice. Otherwise the paper's facts are read back and
    rebuilt (`rebuild_mismatch`, the one rebuild-and-compare)."""
    name, paper = item.name, item.paper
    if new is not None and writer.paper_seqs(paper) == [entry.seq for entry in new[0]]:
        if item.rebuilds_alone:
            return
        facts = [Fact(entry.seq, entry.kind, e.subject, entry.effective_at, e.effective_key, entry.recorded_at,
                      entry.payload) for entry, e in zip(*new)]
    else:
        facts = writer.paper_facts(paper)
    record = item.the_record()
    try:
        mismatch = rebuild_mismatch(facts, record, finite=True)
    except NotFoundError as exc:
        raise InputError(f"{name}: the ledger cannot rebuild this record: {exc}") from None
    if mismatch is not None:
        raise InputError(f"{name}: the ledger cannot reproduce this record at its as_of {record['as_of']}: "
                         f"first difference at {mismatch.first()}")


def _rebuilds_alone(parsed: Parsed) -> bool:
    """Whether a record rebuilds byte for byte from its own events alone (in ledger order, as appended to a
    ledger that holds nothing else of its paper). Raises nothing."""
    facts = [Fact(n, e.kind, e.subject, e.effective_at, e.effective_key, "", e.payload)
             for n, (_, e) in enumerate(parsed.events, start=1)]
    try:
        return rebuild_mismatch(facts, parsed.record, finite=True) is None  # finite: from parse_json
    except NotFoundError:
        return False


# -- units: what one worker decodes ------------------------------------------------------------------------
class _Unit(NamedTuple):
    name: str
    text: str | None = None  # a whole input, parsed as `parse_input` would
    lines: list[str] | None = None  # or a chunk of event lines
    first: int = 1  # the chunk's first line number
    last: bool = True  # the input (or its part) ends with this unit
    part: str | None = None  # of an input holding log lines: which of its lines this unit takes (`_in_parts`)
    size: int = 0  # bytes of the input it holds
    error: LedgerError | None = None  # the input could not be read or decoded: raised when its turn comes
    unread: bool = False  # a small file, to be read and cut into units by the worker (`_units`)


Groups = Iterator[tuple[list[str], int]]  # an input's lines, CHUNK_LINES at a time, each with the bytes read by its end


def _units(names: list[str], stdin: dict[str, bytes | IO[bytes]], defer: bool = False) -> Iterator[_Unit]:
    """Every input's units, in order, read lazily (a bounded window of them is in flight). With `defer`, a
    file of at most TASK_BYTES is a unit that names it (`unread`): a worker reads it and cuts it into units
    (`_decode_read`), as it would have been cut here. Raises nothing: an input that cannot be read becomes a
    unit that raises, and ends the units."""
    for name in names:
        if name == STDIN:
            units = _from_stdin(stdin)
        elif defer and (size := _size(name)) <= TASK_BYTES:
            units = iter([_Unit(name, size=size, unread=True)])
        else:
            units = _streamed(name) if _size(name) > STREAM_BYTES else _read_whole(name)
        for unit in units:
            yield unit
            if unit.error is not None:
                return


def _from_stdin(stdin: dict[str, bytes | IO[bytes]]) -> Iterator[_Unit]:
    """stdin, read once and kept for every attempt at the import (FactStored reads it again): in memory up
    to STREAM_BYTES, beyond that in a temporary file (`inputs.keep_stdin`) read in blocks as a large file is.
    The caller closes the file."""
    if STDIN not in stdin:
        try:
            stdin[STDIN] = keep_stdin(STREAM_BYTES)
        except InputError as exc:
            yield _Unit(STDIN, error=exc)
            return
    held = stdin[STDIN]
    yield from _read_whole(STDIN, held) if isinstance(held, bytes) else _streamed(STDIN, held)


def _read_whole(name: str, data: bytes | None = None, kept: IO[bytes] | None = None) -> Iterator[_Unit]:
    """An input read whole: the file `name`, or its `data`, or `kept` (stdin in a temporary file)."""
    try:
        if data is None:
            data = read_input(name, kept)
        text = decode_input(name, data)
    except InputError as exc:
        yield _Unit(name, error=exc)
        return
    lines = text.splitlines()
    if not _event_lines(lines):
        yield _Unit(name, text=text, size=len(data))
        return
    count = len(lines)  # each group with its share of the bytes, for progress

    def groups() -> Groups:
        return ((lines[start:start + CHUNK_LINES], len(data) * min(start + CHUNK_LINES, count) // count)
                for start in range(0, count, CHUNK_LINES))

    yield from _in_parts(name, groups(), groups, bool(_SEQ_KEY.search(text)))


def _streamed(name: str, kept: IO[bytes] | None = None) -> Iterator[_Unit]:
    """A file of more than STREAM_BYTES (or `kept`, stdin in a temporary file), read in blocks rather than
    whole, twice (three times when it holds new facts and log lines: `_in_parts`): checked first as
    `decode_input` checks a file (and searched for log lines), then cut into chunks of lines as `splitlines`
    cuts them, so the same units come out. Read whole after all when its first chunk does not show it to be
    event lines (a large record)."""
    try:
        mixed = scan_file(name, _SEQ_KEY, block=STREAM_BLOCK, kept=kept)
        lines = file_lines(name, STREAM_BLOCK, kept)
        first = list(islice(lines, CHUNK_LINES))
    except InputError as exc:
        yield _Unit(name, error=exc)
        return
    if not _event_lines([line for line, _ in first]):  # true of the first lines only if true of them all
        yield from _read_whole(name, kept=kept)
        return
    # The new facts of a file holding log lines: read once more (a file that changed is named in its turn).
    yield from _in_parts(name, _grouped(chain([first], _groups(lines))),
                         lambda: _grouped(_groups(file_lines(name, STREAM_BLOCK, kept))), mixed)


def _groups(lines: Iterator[tuple[str, int]]) -> Iterator[list[tuple[str, int]]]:
    """`file_lines` in groups of CHUNK_LINES."""
    return iter(lambda: list(islice(lines, CHUNK_LINES)), [])


def _grouped(groups: Iterator[list[tuple[str, int]]]) -> Groups:
    """Groups of `file_lines` as `_chunks` takes them: their lines, and the bytes read by their end."""
    return (([line for line, _ in group], group[-1][1]) for group in groups)


LOG_LINES, NEW_FACTS = "log lines", "new facts"


def _in_parts(name: str, groups: Groups, again: Callable[[], Groups], mixed: bool) -> Iterator[_Unit]:
    """An input's chunks (`_chunks`) from its `groups` of lines. An input that may hold log lines (a line with
    the key `seq`) comes in two parts, each a pass over all of it: its log lines, then, should a line of it
    be a new fact, its new facts, from the groups `again` gives. Its log lines so go before its new facts, as
    when an input is one unit, and neither is held back until the input ends (its new facts took ten times
    their size)."""
    if not mixed:
        yield from _chunks(name, groups, None)
        return
    facts = False

    def watched() -> Groups:
        nonlocal facts
        for lines, done in groups:
            facts = facts or any(not _logged(line) and line.strip() for line in lines)
            yield lines, done

    yield from _chunks(name, watched(), LOG_LINES)
    if facts:
        yield from _chunks(name, again(), NEW_FACTS)


def _chunks(name: str, groups: Groups, part: str | None) -> Iterator[_Unit]:
    """An input's event lines as units, from its groups of CHUNK_LINES lines, each with the bytes of the
    input read by its end (what a worker's batch weighs). Raises nothing: a file that can no longer be read
    (it went away between two readings) becomes a unit that raises."""
    number = read = 0
    try:
        pending = next(groups, None)
        while pending is not None:
            following = next(groups, None)
            lines, done = pending
            yield _Unit(name, lines=lines, first=number + 1, last=following is None, part=part, size=done - read)
            number, read, pending = number + len(lines), done, following
    except InputError as exc:
        yield _Unit(name, error=exc)


def _event_lines(lines: list[str]) -> bool:
    """Whether `parse_input` would take this text as event lines with a first line that parses: then the
    chunks can be decoded apart. (A first line that is a JSON text alone, followed by another non-blank line,
    is never part of one document spanning several lines: the document would end where that line ends.)"""
    if len(lines) < 2 or not lines[0].strip() or not any(line.strip() for line in lines[1:]):
        return False
    try:
        parse_json(lines[0])
    except InputError:
        return False
    return True


def _decode(unit: _Unit) -> Parsed:
    if unit.error is not None:
        raise unit.error
    if unit.lines is None:
        parsed = _parse_text(unit.name, unit.text)
    else:
        # Every line is parsed and checked in the part of log lines, in order: a bad line is named in its turn.
        # The part of new facts passes over the log lines (kept blank: the lines keep their numbers).
        lines = unit.lines if unit.part != NEW_FACTS else ["" if _logged(line) else line for line in unit.lines]
        parsed = _parse_lines(unit.name, lines, None, unit.first)
        if unit.part == LOG_LINES:
            parsed.events = []
    # Progress counts an input's bytes once: the part of new facts, its second pass, counts none.
    parsed.last, parsed.size = unit.last, 0 if unit.part == NEW_FACTS else unit.size
    return parsed


def _logged(line: str) -> bool:
    """Whether a line that the part of log lines parsed and checked is a log line: a JSON object with the key
    `seq` (what `_add_line` asks, with the parser the strict one agrees with on what it accepts). An exported
    line opens with its first key, `chain_hash`, which a new fact cannot carry (it would have been refused);
    a line without the key `seq` anywhere is none."""
    if line.startswith('{"chain_hash":'):
        return True
    if not _SEQ_KEY.search(line):
        return False
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return isinstance(obj, dict) and "seq" in obj


def _decode_packed(unit: _Unit) -> tuple:
    """`_decode` in a worker process, and a record's rebuild from its own events (which spares the writer a
    rebuild: `_check_rebuild`). Plain tuples and the record's canonical bytes pickle several times faster
    than Event tuples and nested dicts (an import's results all cross the pipe); the writer parses the bytes
    again only when it must rebuild the record itself (parsing a record's nested objects cost the writer
    about as much as appending its events took Python)."""
    with _acyclic():
        p = _decode(unit)
    record = None if p.record is None else canonical(p.record, finite=True)  # finite: from parse_json
    alone = p.record is not None and _rebuilds_alone(p)
    return (p.name, record, p.paper, [(n, tuple(e)) for n, e in p.events],
            [(n, tuple(entry), tuple(e)) for n, entry, e in p.entries], p.last, p.size, alone)


def _decode_read(unit: _Unit) -> tuple[list[tuple], LedgerError | None]:
    """`_decode_packed` in a worker over a unit, or over the units of the file an `unread` unit names, read
    here rather than in the writer (reading 1,000 records, and parsing each one's first line to see whether
    it is event lines, took the writer of `import --jobs 2` about 0.13 s of its 3 s). Returns the units' results up to the
    first that cannot be decoded, and its error: raised by the writer in its turn (`_unpacked`)."""
    results: list[tuple] = []
    for each in _read_whole(unit.name) if unit.unread else [unit]:
        try:
            results.append(_decode_packed(each))
        except LedgerError as exc:
            return results, exc
    return results, None


def _unpacked(results: Iterator[tuple[list[tuple], LedgerError | None]]) -> Iterator[Parsed]:
    """The units `_decode_read` decoded, in order; raises the first error in its turn."""
    for packed, failure in results:
        yield from map(_unpack, packed)
        if failure is not None:
            raise failure


def _unpack(packed: tuple) -> Parsed:
    name, record, paper, events, entries, last, size, alone = packed
    make_entry, make_event_ = Entry._make, Event._make
    return Parsed(name, None, [(n, make_event_(e)) for n, e in events],
                  [(n, make_entry(entry), make_event_(e)) for n, entry, e in entries], last, size, alone,
                  paper, record)


def import_files(store: Store, names: list[str], progress: Callable[[Progress], None] | None = None,
                 workers: Workers | None = None) -> ImportResult:
    """Read, validate and import files (or `-` for stdin; a directory: the .json and .jsonl files below it,
    `inputs.input_files`) as one all-or-nothing invocation.

    `workers` (entered before `store` connected) decode in other processes; without them, or with one job,
    units are decoded here, the first DECODE_AHEAD bytes of input before the transaction begins. `progress`,
    when given, is called with a Progress as units are decoded and appended (the CLI shows it on a terminal);
    this module never prints.

    Inputs are appended in chunks of event lines first. Should any fact turn up twice (stored already, as
    when a file is imported again, or twice in one input) or be contradicted, that attempt is rolled back
    and the chunks are appended again, each fact looked up first: a fact stored already, or met in an earlier
    chunk of its input, is present, and a contradiction is worded as it is when the input is one unit (a fact
    of the input's own earlier chunks is "another fact in this import"). So the facts counted and every
    refusal's words never depend on chunking, and no import holds an input whole, accepted or refused (taken
    whole, a file of 147 MB with one contradiction took 438 MB before it was refused).
    Raises InputError or IntegrityError naming the file (nothing appended), StoreError.
    """
    names = input_files(names)  # a directory: its .json and .jsonl files
    with _acyclic():
        return _import_files(store, names, progress, workers or Workers(1))


def _import_files(store: Store, names: list[str], progress: Callable[[Progress], None] | None,
                  workers: Workers) -> ImportResult:
    stdin: dict[str, bytes | IO[bytes]] = {}  # stdin once read (`_from_stdin`)
    try:
        return _attempts(store, names, progress, workers, stdin)
    finally:
        kept = stdin.get(STDIN)
        if kept is not None and not isinstance(kept, bytes):
            kept.close()  # an unnamed temporary file: gone once closed (or once this process ends)


def _attempts(store: Store, names: list[str], progress: Callable[[Progress], None] | None, workers: Workers,
              stdin: dict[str, bytes | IO[bytes]]) -> ImportResult:
    total = None if STDIN in names else sum(_size(name) for name in names)
    if workers.jobs == 1:
        units = _decoded_here(names, stdin, progress, total)
    else:
        units = lambda: _unpacked(workers.map(_decode_read, _units(names, stdin, defer=True),  # noqa: E731
                                              lambda unit: unit.size, TASK_BYTES))
    try:
        return _import(store, units(), "chunked", progress, total)
    except _Unusual:
        pass
    # Every fact looked up, the units as they come: what each input taken whole and looked up would append,
    # or its refusal in the same words (`_fresh`), and never an input held whole.
    return _import(store, units(), "look up", progress, total)


def _decoded_here(names: list[str], stdin: dict[str, bytes | IO[bytes]],
                  progress: Callable[[Progress], None] | None, total: int | None) -> Callable[[], Iterator[Parsed]]:
    """One job: the units of the first DECODE_AHEAD bytes of input decoded now (before the write lock is
    taken), and a function giving every attempt at the import all the units, the rest decoded as they come.
    Raises the first unit's error that cannot be decoded among those decoded now."""
    source: Iterator[_Unit] | None = _units(names, stdin)
    decoded, done, events = [], 0, 0
    for unit in source:
        item = _decode(unit)
        decoded.append(item)
        done, events = done + item.size, events + len(item.events) + len(item.entries)
        if progress is not None:
            progress(Progress("decoding", done, total, events))
        if done >= DECODE_AHEAD:
            break
    else:
        source = None  # every unit decoded: every attempt reads the same ones
    attempts = 0

    def units() -> Iterator[Parsed]:
        nonlocal attempts
        attempts += 1
        if source is None:
            return iter(decoded)
        # The first attempt goes on where decoding stopped; another reads the inputs again past that point.
        rest = source if attempts == 1 else islice(_units(names, stdin), len(decoded), None)
        return chain(decoded, map(_decode, rest))

    return units


@contextmanager
def _acyclic() -> Iterator[None]:
    """Python's cycle collector paused. An import builds hundreds of thousands of objects (the decoder's
    dicts, lists and strings, events, rows) and holds them until they are appended; they hold no reference
    cycle, yet the collector scanned them again and again: about 800 passes and 0.4-0.6 s of a 6 s import
    of 1,000 records. Reference counting still frees them; the few cycles a refusal makes (an exception and
    its traceback) are collected once the collector resumes."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _size(name: str) -> int:
    try:
        return os.stat(name).st_size
    except OSError:
        return 0  # read_input names the problem when its turn comes
