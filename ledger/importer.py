"""Import: published records and event lines, validated in full, appended all-or-nothing.

Order of work: read and parse every input, check every record's shape and digests, derive every event;
only then open one write transaction. Inside it each record must rebuild byte for byte at its own `as_of`
from the ledger's history plus its events; any refusal rolls the whole invocation back. Nothing is
appended unless everything is accepted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from projections.record import rebuild_mismatch

from .canonical import parse_json
from .chain import Entry, hex_hash, seal
from .errors import InputError, IntegrityError, NotFoundError
from .events import Event, make_event, record_events
from .inputs import decode_input, read_input
from .published import check_record, verify_digests
from .store import FactStored, Store, Writer
from .times import TimeError, instant_key

_ENTRY_FIELDS = ("chain_hash", "effective_at", "entry_hash", "kind", "payload", "recorded_at", "seq")


@dataclass
class Parsed:
    """One input, validated: a record with its events, or event lines (new facts and log entries)."""

    name: str
    record: dict | None = None
    events: list[tuple[int, Event]] = field(default_factory=list)
    entries: list[tuple[int, Entry, Event]] = field(default_factory=list)


@dataclass
class ImportResult:
    appended: int
    present: int
    head: tuple[int, bytes]


def parse_input(name: str, data: bytes) -> Parsed:
    """Parse and fully validate one input; raise InputError/IntegrityError prefixed with its name."""
    text = decode_input(name, data)
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
    return Parsed(name, record=record, events=[(0, e) for e in events])


def _parse_lines(name: str, lines: list[str], whole_error: InputError | None) -> Parsed:
    parsed = Parsed(name)
    for number, line in enumerate(lines, start=1):
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
            parsed.entries.append((number, *parse_entry(obj, finite=True)))
        else:
            unknown = set(obj) - {"kind", "payload", "effective_at"}
            if unknown:
                raise InputError(f"unknown field(s) {', '.join(sorted(unknown))}")
            # finite: the line came from parse_json (see canonical.canonical)
            parsed.events.append((number, make_event(obj.get("kind"), obj.get("payload"), obj.get("effective_at"),
                                                     finite=True)))
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


def _fresh(name: str, events: list[tuple[int, Event]], stored: dict) -> tuple[list[Event], int]:
    """Drop facts already `stored` or given twice (identical kind, effective time and payload); refuse
    contradictions."""
    fresh: dict[tuple[str, str, str], Event] = {}
    present = 0
    for line, event in events:
        key = event.key
        if key in stored:
            seq, payload = stored[key]
            if payload != event.payload:
                raise _contradiction(name, line, event, f"event seq {seq} (same subject, kind and effective "
                                                        "time, other payload)")
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
    try:
        return _import(store, parsed, look_up=False)
    except FactStored:
        return _import(store, parsed, look_up=True)


def _import(store: Store, parsed: list[Parsed], look_up: bool) -> ImportResult:
    appended = present = 0
    with store.writing() as writer:
        for item in parsed:
            if item.entries:
                added, held = _append_entries(writer, item.name, item.entries, look_up)
                appended, present = appended + added, present + held
            if item.events:
                stored = writer.existing(e for _, e in item.events) if look_up else {}
                fresh, held = _fresh(item.name, item.events, stored)
                writer.append(fresh)
                appended, present = appended + len(fresh), present + held
            if item.record is not None:
                _check_rebuild(writer, item.name, item.record)
        head = (writer.seq, writer.chain)
    return ImportResult(appended, present, head)


def _check_rebuild(writer: Writer, name: str, record: dict) -> None:
    """The ledger must give back this record's exact bytes at its as_of, or the import is refused."""
    try:
        mismatch = rebuild_mismatch(writer.paper_facts(record["paper"]["arxiv_id"]), record, finite=True)
    except NotFoundError as exc:
        raise InputError(f"{name}: the ledger cannot rebuild this record: {exc}") from None
    if mismatch is not None:
        raise InputError(f"{name}: the ledger cannot reproduce this record at its as_of {record['as_of']}: "
                         f"first difference at {mismatch.first()}")


def import_files(store: Store, names: list[str], progress=None) -> ImportResult:
    """Read, validate and import files (or `-` for stdin) as one all-or-nothing invocation.

    `progress`, when given, is called with a short line as each file is validated (the CLI shows it on a
    terminal); this module never prints.
    Raises InputError or IntegrityError naming the file (nothing appended), StoreError.
    """
    parsed = []
    for name in names:
        parsed.append(parse_input(name, read_input(name)))
        if progress:
            item = parsed[-1]
            progress(f"validated {name}: {len(item.events) + len(item.entries)} events")
    return import_inputs(store, parsed)

