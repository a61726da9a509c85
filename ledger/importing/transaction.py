"""The write transaction: decoded units appended in input order, all or nothing, by one writer.

An import is one or two attempts, each one transaction over all of its units (`Attempt`). The first appends
without looking anything up; should a fact turn up twice (stored already, or in two units of one input) or
be contradicted where the words of the refusal could depend on how the input was cut, it gives up (rolled
back, nothing appended) and the second looks every fact up first. So the facts counted and every refusal's
words never depend on chunking. Inside a transaction each record must rebuild byte for byte at its own
`as_of` from the ledger's history plus its events. A unit that cannot be decoded is reported first, in input
order, ahead of any refusal met while appending (which so waits until every unit has been decoded); only a
store error (lock timeout, lost connection) is raised at once.

This module never reads an input or decodes one (the units come decoded) and never prints.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

from ledger.core.errors import InputError, IntegrityError, LedgerError, NotFoundError
from ledger.core.inputs import STDIN
from ledger.core.times import instant_key
from ledger.importing.decode import Parsed
from ledger.log.chain import Entry, hex_hash, seal
from ledger.model.events import (
    CITATION_OBSERVED,
    COVERAGE_COUNTED,
    OBSERVATION_WITHDRAWN,
    Event,
    Fact,
    make_event,
    record_count,
)
from ledger.projections.compare import missing_observations, rebuild_mismatch
from ledger.storage.store import Store
from ledger.storage.writer import DuplicateFactError, Writer


class Attempt(Enum):
    """How one transaction over an import's units treats a fact met twice or contradicted."""

    CHUNKED = "chunked"  # units may be parts of an input: a fact met twice or contradicted gives up
    WHOLE = "whole"  # every unit a whole input: a stored fact gives up (the database refuses it), refusals as always
    LOOK_UP = "look up"  # every fact looked up first; units whole inputs or chunks: never gives up


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


def append_units(store: Store, units: Callable[[], Iterator[Parsed]], first: Attempt,
                 progress: Callable[[Progress], None] | None = None, total: int | None = None, *,
                 withdraw_missing: bool = False) -> ImportResult:
    """Append what `units()` gives, all or nothing: an attempt `first` (CHUNKED or WHOLE) and, should it give
    up, one that looks every fact up (LOOK_UP), each over a fresh `units()`. `progress`, `withdraw_missing`
    as in `attempt`. Raises: InputError or IntegrityError naming the file (nothing appended), or StoreError."""
    result = attempt(store, units(), first, progress, total, withdraw_missing=withdraw_missing)
    if result is None:  # given up, nothing appended: the words of each input taken whole and looked up
        result = attempt(store, units(), Attempt.LOOK_UP, progress, total, withdraw_missing=withdraw_missing)
    return result


def attempt(store: Store, units: Iterator[Parsed], how: Attempt, progress: Callable[[Progress], None] | None = None,
            total: int | None = None, *, withdraw_missing: bool = False) -> ImportResult | None:
    """One transaction over `units` in input order, committed, or None when the attempt gives up (rolled back:
    nothing appended; try LOOK_UP). `progress`, when given, is called as each unit is appended, `total` the
    bytes of input (None: unknown). With `withdraw_missing`, an observation a record no longer lists (see
    `compare.missing_observations`) is withdrawn at its as_of, ahead of its events; without, the record is
    refused. Raises: InputError or IntegrityError (the first unit that cannot be
    decoded, else the first refusal; nothing appended), or StoreError."""
    first = next(units, None)  # decoded before the lock is taken: a bad first input never waits for it
    try:
        with store.writing() as writer:
            result = _append_all(writer, _chain(first, units), how, progress, total, withdraw_missing)
            if result is None:
                writer.abandon()
    except DuplicateFactError:  # the database's unique fact key: a fact stored already, or twice in this transaction
        if how is Attempt.LOOK_UP:
            raise
        return None
    return result


def _chain(first: Parsed | None, rest: Iterator[Parsed]) -> Iterator[Parsed]:
    if first is not None:
        yield first
        yield from rest


def _append_all(writer: Writer, units: Iterator[Parsed], how: Attempt, progress: Callable[[Progress], None] | None,
                total: int | None, withdraw_missing: bool) -> ImportResult | None:
    """Every unit through `writer`; None when the attempt gives up. Raises the first unit's error that cannot
    be decoded (iterating `units`), else the first refusal, once every unit is decoded."""
    appended = present = done = 0
    refusal: LedgerError | None = None
    firsts: dict[str, int] = {}  # the seq each input's first new fact takes (`_fresh`)
    withdrawals: list[tuple[str, int, Event]] = []  # checked once every unit is in: a citation may come later
    for item in units:  # raises the first unit that cannot be decoded, in input order
        done += item.size
        if refusal is not None:
            continue  # keep decoding: a bad unit further on is what gets reported
        try:
            counts = _apply(writer, item, firsts, how, withdrawals, withdraw_missing)
        except (InputError, IntegrityError) as exc:
            refusal = exc
            continue
        if counts is None:
            return None
        appended, present = appended + counts[0], present + counts[1]
        if progress is not None:
            progress(Progress("appending", done, total, appended + present))
    refusal = refusal or _unobserved(writer, withdrawals)
    if refusal is not None:
        raise refusal
    return ImportResult(appended, present, (writer.seq, writer.chain))


def _apply(writer: Writer, item: Parsed, firsts: dict[str, int], how: Attempt,
           withdrawals: list[tuple[str, int, Event]], withdraw_missing: bool) -> tuple[int, int] | None:
    """One unit: its log lines, then (`withdraw_missing`) the withdrawals of what its record no longer lists,
    then its new facts, then its record's rebuild (an input holding both log lines and new facts comes in two
    parts, its log lines first). Returns (appended, present), or None when a CHUNKED attempt gives up; adds
    the withdrawals of its event lines it appended to `withdrawals`."""
    look_up = how is Attempt.LOOK_UP
    appended = present = 0
    if item.entries:
        head = writer.seq
        appended, present = _append_entries(writer, item.name, item.entries, look_up)
        # An exported line is checked as a new fact would be: a log may withdraw what no line observed.
        withdrawals.extend((item.name, line, event) for line, entry, event in item.entries
                           if entry.seq > head and event.kind == OBSERVATION_WITHDRAWN)
    # The seq the input's first new fact takes, after its log lines: an input's units come together, in order.
    own_from = firsts.setdefault(item.name, writer.seq + 1)
    if item.last:
        del firsts[item.name]
    if withdraw_missing and item.paper is not None:
        appended += len(writer.append(_withdrawals(writer, item)))
    events = item.events
    new: tuple[list[Entry], list[Event]] | None = None  # this unit's events and their entries, when all were new
    if events:
        stored = writer.existing(e for _, e in events) if look_up else {}
        fresh, held, contradiction = _fresh(item.name, events, stored, own_from)
        if contradiction is not None:
            if how is Attempt.CHUNKED:  # the whole input's first contradiction may lie in an earlier unit
                return None
            raise contradiction
        entries = writer.append(fresh)
        appended, present = appended + len(fresh), present + held
        new_keys = {e.key for e in fresh if e.kind == OBSERVATION_WITHDRAWN}
        withdrawals.extend((item.name, line, e) for line, e in events if e.key in new_keys)
        if held == 0:
            new = (entries, fresh)
    if item.paper is not None:
        appended += _check_rebuild(writer, item, new)
    return appended, present


def _contradiction(name: str, line: int, event: Event, what: str) -> InputError:
    where = f"{name}: line {line}: " if line else f"{name}: "
    return InputError(f"{where}{event.kind} of {event.subject} effective {event.effective_at} contradicts {what}")


def _unobserved(writer: Writer, withdrawals: list[tuple[str, int, Event]]) -> InputError | None:
    """The refusal of the first withdrawal appended of an observation the ledger (this import included) never
    observed, or effective before the observation's first citation; None when there is none."""
    for name, line, event in withdrawals:
        where = f"{name}: line {line}: " if line else f"{name}: "
        cited = [f for f in writer.observation_facts(event.subject) if f.kind == CITATION_OBSERVED]
        if not cited:
            return InputError(f"{where}field payload.observation_id: observation {event.subject} is not in this "
                              "ledger: there is nothing to withdraw")
        first = min(cited, key=lambda f: (f.effective_key, f.seq))
        if event.effective_key < first.effective_key:
            return InputError(f"{where}field payload.observed_at: {event.effective_at} is earlier than observation "
                              f"{event.subject} itself ({first.effective_at})")
    return None


def _fresh(name: str, events: list[tuple[int, Event]], stored: dict,
           own_from: int | None = None) -> tuple[list[Event], int, InputError | None]:
    """The facts not already `stored` nor given twice (identical kind, effective time and payload), how many
    were, and the refusal of the first contradiction (then no facts). `own_from`: the seq the input's first
    new fact took in this import; a stored fact from there on came from the input's own earlier chunks, and a
    contradiction of it is worded as one within the input, as it is when the input is one unit."""
    fresh: dict[tuple[str, str, str], Event] = {}
    present = 0
    for line, event in events:
        key = event.key
        if key in stored:
            seq, payload = stored[key]
            if payload != event.payload:
                return [], 0, _contradiction(name, line, event, "another fact in this import" if own_from is not None
                                             and seq >= own_from else f"event seq {seq} (same subject, kind and "
                                             "effective time, other payload)")
            present += 1
        elif key in fresh:
            if fresh[key].payload != event.payload:
                return [], 0, _contradiction(name, line, event, "another fact in this import")
            present += 1
        else:
            fresh[key] = event
    return list(fresh.values()), present, None


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


def _withdrawals(writer: Writer, item: Parsed) -> list[Event]:
    """One observation.withdrawn, effective at the record's as_of, of each observation the ledger's rebuild
    lists that the record no longer does (`compare.missing_observations`). Raises: InputError naming the field."""
    record = item.the_record()
    as_of, source = record["as_of"], "stdin" if item.name == STDIN else os.path.basename(item.name)
    return [make_event(OBSERVATION_WITHDRAWN, {"observation_id": oid, "observed_at": as_of,
                                               "reason": f"not listed in {source} as of {as_of}"})
            for oid in missing_observations(writer.paper_facts(item.paper), record)]


def _as_facts(entries: list[Entry], events: list[Event]) -> list[Fact]:
    return [Fact(entry.seq, entry.kind, e.subject, entry.effective_at, e.effective_key, entry.recorded_at,
                 entry.payload) for entry, e in zip(entries, events)]


def _end_count(writer: Writer, record: dict, facts: list[Fact]) -> list[Fact]:
    """A record imported where a count of its paper (coverage.counted) is in force at its as_of, and that
    brings no count of its own there, states what it counts all the same: its count is appended, so that
    the earlier one is not read past it (a record listing all it counts ends it). Returns the facts appended."""
    as_of = instant_key(record["as_of"])
    counts = [f for f in facts if f.kind == COVERAGE_COUNTED and f.effective_key <= as_of]
    if not counts or any(f.effective_key == as_of for f in counts):
        return []  # no count in force, or the record's own (or a contradicting one, which the rebuild names)
    event = record_count(record, force=True)
    if event is None:
        return []
    return _as_facts(writer.append([event]), [event])


def _check_rebuild(writer: Writer, item: Parsed, new: tuple[list[Entry], list[Event]] | None) -> int:
    """The ledger must give back this record's exact bytes at its as_of, or the import is refused.

    `new`: the record's own events, each appended just now, and their entries. When the ledger's facts of the
    paper are exactly those (their sequence numbers say so, read without the events), the rebuild runs on
    them as they are in memory; and if a worker process already rebuilt the record from its own events byte
    for byte (`rebuilds_alone`: a rebuild reads of each fact its kind, subject, effective key and payload,
    and their order, all the same here), it is not done twice. Otherwise the paper's facts are read back and
    rebuilt (`rebuild_mismatch`, the one rebuild-and-compare). Returns how many facts it appended
    (`_end_count`)."""
    name, paper = item.name, item.paper
    alone = new is not None and writer.paper_seqs(paper) == [entry.seq for entry in new[0]]
    if alone and item.rebuilds_alone:
        return 0
    record, appended = item.the_record(), []
    if alone:
        facts = _as_facts(*new)
    else:
        facts = writer.paper_facts(paper)
        appended = _end_count(writer, record, facts)
        facts += appended
    try:
        mismatch = rebuild_mismatch(facts, record)
    except NotFoundError as exc:
        raise InputError(f"{name}: the ledger cannot rebuild this record: {exc}") from None
    if mismatch is not None:
        missing = missing_observations(facts, record)
        if missing:
            raise InputError(f"{name}: the record no longer lists observation{'s' if len(missing) > 1 else ''} "
                             f"{', '.join(missing)} that the "
                             f"ledger's rebuild at its as_of {record['as_of']} lists; `ledger import "
                             "--withdraw-missing` appends their withdrawals")
        raise InputError(f"{name}: the ledger cannot reproduce this record at its as_of {record['as_of']}: "
                         f"first difference at {mismatch.first()}")
    return len(appended)
