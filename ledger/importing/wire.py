"""What crosses between the writer and the worker processes of `import --jobs`: units out, decoded units back.

A worker decodes a unit (`decode.decode_unit`), or reads and cuts a small file a unit names and decodes its
units, and rebuilds a record from its own events (sparing the writer that rebuild). Its results cross the pipe
as plain tuples and a record as its canonical bytes, which pickle several times faster than Event tuples and
nested dicts; the writer parses a record's bytes again only when it must rebuild the record itself.

A worker never touches the store and never decides what is appended; a unit's error crosses as a value and is
raised by the writer in input order.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

from ledger.core.canonical import canonical_parsed
from ledger.core.errors import LedgerError
from ledger.core.workers import Workers
from ledger.importing.decode import Parsed, acyclic, decode_unit, rebuilds_alone
from ledger.importing.units import KeptStdin, Sizes, Unit, input_units, read_whole
from ledger.log.chain import Entry
from ledger.model.events import Event

Packed = tuple  # a decoded unit as `pack` gives it
Results = tuple[list[Packed], LedgerError | None]  # a task's units, up to the first that cannot be decoded, and its error


def decoded_by(workers: Workers, names: list[str], stdin: KeptStdin, sizes: Sizes = Sizes()) -> Iterator[Parsed]:
    """Every input's units, decoded by `workers` and given back in input order; a file of at most
    `sizes.task_bytes` is read by a worker, a larger one here. Raises: LedgerError, the first unit's error
    that cannot be decoded, in its turn (every unit before it given first)."""
    tasks = input_units(names, sizes, stdin, defer=True)
    results = workers.map(partial(decode_read, sizes), tasks, lambda unit: unit.size, sizes.task_bytes)
    for packed, failure in results:
        yield from map(unpack, packed)
        if failure is not None:
            raise failure


def decode_read(sizes: Sizes, unit: Unit) -> Results:
    """In a worker: `pack` over a unit, or over the units of the small file an `unread` unit names, read and
    cut here as the writer would cut it. Returns the units' results up to the first that cannot be decoded,
    and its error (None when there is none)."""
    results: list[Packed] = []
    for each in read_whole(unit.name, sizes) if unit.unread else [unit]:
        try:
            results.append(pack(each))
        except LedgerError as exc:
            return results, exc
    return results, None


def pack(unit: Unit) -> Packed:
    """`decode_unit` in a worker, as plain tuples and a record's canonical bytes, with whether the record
    rebuilds from its own events alone. It raises what `decode_unit` raises."""
    with acyclic():
        p = decode_unit(unit)
    record = None if p.record is None else canonical_parsed(p.record)  # from parse_json
    alone = p.record is not None and rebuilds_alone(p)
    return (p.name, record, p.paper, [(n, tuple(e)) for n, e in p.events],
            [(n, tuple(entry), tuple(e)) for n, entry, e in p.entries], p.last, p.size, alone)


def unpack(packed: Packed) -> Parsed:
    """A unit `pack` gave, as the writer takes it (its record left as bytes until needed)."""
    name, record, paper, events, entries, last, size, alone = packed
    make_entry, make_event = Entry._make, Event._make
    return Parsed(name, None, [(n, make_event(e)) for n, e in events],
                  [(n, make_entry(entry), make_event(e)) for n, entry, e in entries], last, size, alone,
                  paper, record)
