"""An exported log (JSON lines, `ledger export`) standing in for the database, read-only.

`read_log` parses it with the importer's own parser and insists every line is a log entry, so `verify` can
name the first line whose hashes do not re-compute. `open_log` loads the entries into an in-memory SQLite
store through the same append path as `import`, which re-computes every hash on the way: a tampered log is
refused before anything is replayed.
"""

from __future__ import annotations

from .chain import Entry
from .errors import InputError
from .importer import Parsed, import_inputs, parse_input, read_input
from .store import Store


def read_log(path: str) -> Parsed:
    parsed = parse_input(path, read_input(path))
    if parsed.record is not None or parsed.events:
        line = parsed.events[0][0] if parsed.events else 1
        raise InputError(f"{path}: line {line}: not a log entry (an exported log line carries seq and hashes)")
    return parsed


def iter_log(path: str) -> list[Entry]:
    return [entry for _, entry, _ in read_log(path).entries]


def open_log(path: str) -> Store:
    store = Store.create("sqlite://")
    import_inputs(store, [read_log(path)])
    store.read_only = path
    return store
