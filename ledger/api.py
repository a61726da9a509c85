"""The public Python API's entry points: thin wrappers that take plain values (a path or URL, a paper id, a
date such as "2026-08-09", file paths) and call the internals the commands of `cli/record_commands.py` call,
so a result here is what the command line gives. Reach them through the package: `ledger.replay(...)`.

Errors are the ledger's own families (`ledger.InputError`, `IntegrityError`, `NotFoundError`, `StoreError`),
raised, never printed: nothing here prints, exits or writes a file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from ledger.core.errors import IntegrityError, NotFoundError
from ledger.core.inputs import read_input
from ledger.core.limits import RECORD
from ledger.core.times import when
from ledger.importing import importer, logfile
from ledger.importing.importer import ImportResult
from ledger.projections import history as views
from ledger.services import proofs
from ledger.services.keys import load_signer
from ledger.services.replay import record_as_of
from ledger.services.verify import compare_record
from ledger.storage.store import Store

PathLike = str | os.PathLike


def create_ledger(location: PathLike) -> Store:
    """Create an empty ledger (a SQLite path or a SQLAlchemy URL) and return it open, as `ledger init` does.

    Raises: InputError when a ledger or a file is there already, or StoreError.
    """
    return Store.create(os.fspath(location))


def open_ledger(location: PathLike) -> Store:
    """Open an existing ledger (a SQLite path, a SQLAlchemy URL, or an exported `.jsonl` log, read-only, its
    hashes re-computed as it loads); never creates one. `close()` it when done.

    Raises: InputError when there is no ledger there, IntegrityError for a log that does not re-compute, or
    StoreError.
    """
    return logfile.open_ledger(os.fspath(location))


def import_files(store: Store, files: PathLike | Iterable[PathLike]) -> ImportResult:
    """Append the facts of published records (JSON) or event lines (JSONL), all or nothing, as `ledger import`
    does (a directory: the .json and .jsonl files below it). Returns `appended`, `present` and `head`.

    Raises: InputError or IntegrityError naming the file (nothing appended), or StoreError.
    """
    names = [files] if isinstance(files, (str, os.PathLike)) else files
    return importer.import_files(store, [os.fspath(name) for name in names])


def replay(store: Store, paper: str, as_of: str, known_at: str | None = None) -> dict:
    """The record of arXiv `paper` as of `as_of`, from the facts recorded by `known_at` (default: all), as
    `ledger replay --paper`: `ledger.canonical(record)` is the published bytes.

    Raises: InputError for a bad date, NotFoundError when the paper has no record then, or StoreError.
    """
    return record_as_of(store, paper, when("as_of", as_of), when("known_at", known_at))


def verify_record(record: PathLike, store: Store | None = None, strict: bool = False) -> None:
    """Re-check a published record's digests and, given the ledger, that what it knew at some recorded time
    rebuilt the record exactly (`strict`: today's rebuild must), as `ledger verify RECORD`. Returns None.

    Raises: IntegrityError listing each problem in `problems`, InputError for a malformed file, or StoreError.
    """
    name = os.fspath(record)
    check = compare_record(name, read_input(name, RECORD), store, strict)
    if check.problems:
        raise IntegrityError(f"{len(check.problems)} problem(s)", check.problems)


def history(store: Store, subject: str) -> list[dict]:
    """Every event of a paper (arXiv id) or an observation, oldest first, as `ledger history --json`: `seq`,
    `kind`, `effective_at`, `recorded_at`, an `account` of what it changed and the `citation` it belongs to.

    Raises: NotFoundError when the ledger holds no event of it, or StoreError.
    """
    observed = store.observation_facts(subject)
    facts = observed or store.paper_facts(subject)
    if not facts:
        raise NotFoundError(f"no events of {subject} in this ledger")
    return views.history(facts, None if observed else subject)


def evidence_bundle(store: Store, paper: str, as_of: str, key: PathLike, known_at: str | None = None) -> dict:
    """The evidence bundle of the record of `paper` as of `as_of`, signed with the key file `key` (`ledger
    keygen`), as `ledger replay --evidence`: every event of the paper with its proofs, the paper index proof
    and a signed checkpoint; `ledger.canonical(bundle)` is the file the command writes.

    Raises: InputError for a bad date or key, NotFoundError, IntegrityError, or StoreError.
    """
    known = when("known_at", known_at)
    return proofs.evidence_bundle(store, paper, when("as_of", as_of), load_signer(os.fspath(key)), known and known.key)
