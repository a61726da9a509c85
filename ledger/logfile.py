"""An exported log (JSON lines, `ledger export`) standing in for the database, read-only.

`iter_log` yields the entries as written, so `verify` can name the first line whose hashes do not
re-compute. `open_log` loads them into an in-memory SQLite store through the same append path as
`import`, which re-computes every hash on the way: a tampered log is refused before anything is replayed.
"""

from __future__ import annotations

from typing import Iterator

from .canonical import parse_json
from .chain import Entry
from .errors import InputError
from .importer import Parsed, decode_input, import_inputs, parse_entry, read_input
from .store import Store


def _lines(path: str) -> Iterator[tuple[int, Entry, object]]:
    text = decode_input(path, read_input(path))
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = parse_json(line)
            if not isinstance(obj, dict):
                raise InputError("expected a log entry object")
            entry, event = parse_entry(obj)
        except InputError as exc:
            raise InputError(f"{path}: line {number}: {exc}") from None
        yield number, entry, event


def iter_log(path: str) -> Iterator[Entry]:
    for _, entry, _ in _lines(path):
        yield entry


def open_log(path: str) -> Store:
    store = Store.create("sqlite://")
    import_inputs(store, [Parsed(path, entries=list(_lines(path)))])
    store.read_only = path
    return store
