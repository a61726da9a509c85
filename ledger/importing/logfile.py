"""An exported log (JSON lines, `ledger export`) standing in for the database, read-only.

`read_log` parses it with the importer's own parser and insists every line is a log entry, so `verify` can
name the first line whose hashes do not re-compute. `open_log` loads the entries into an in-memory SQLite
store through the same append path as `import`, which re-computes every hash on the way: a tampered log is
refused before anything is replayed.
"""

from __future__ import annotations

from ledger.core.errors import InputError
from ledger.core.inputs import read_input
from ledger.core.limits import EXPORTED_LOG
from ledger.importing.importer import Parsed, import_inputs, parse_input
from ledger.log.chain import Entry
from ledger.storage.store import Store

SUFFIX = ".jsonl"


def is_exported_log(location: str) -> bool:
    """Whether a `--db` location names an exported log rather than a database."""
    return location.endswith(SUFFIX)


def read_log(path: str) -> Parsed:
    """Parse an exported log.
    Raises: InputError for a file that is not one (naming the line), or IntegrityError."""
    parsed = parse_input(path, read_input(path, EXPORTED_LOG))
    if parsed.record is not None or parsed.events:
        line = parsed.events[0][0] if parsed.events else 1
        raise InputError(f"{path}: line {line}: not a log entry (an exported log line carries seq and hashes)")
    return parsed


def log_entries(path: str) -> list[Entry]:
    """Every entry of an exported log, as written (not yet re-checked).
    Raises: InputError, or IntegrityError (as `read_log`)."""
    return [entry for _, entry, _ in read_log(path).entries]


def open_ledger(location: str) -> Store:
    """The ledger a `--db` location names: an exported log (loaded read-only) or a database; never creates
    one.
    Raises: InputError when there is no ledger there, IntegrityError for a log that does not re-compute, or
    StoreError when it cannot be read."""
    return open_log(location) if is_exported_log(location) else Store.open(location)


def open_log(path: str) -> Store:
    """A read-only in-memory store holding an exported log, every hash re-computed on the way in.
    Raises: InputError (malformed) or IntegrityError (a hash that does not re-compute)."""
    store = Store.create("sqlite://")
    import_inputs(store, [read_log(path)])
    store.exported_log = path
    return store
