"""The public Python API's entry points: thin wrappers that take plain values (a path or URL, a paper id, a
date such as "2026-08-09", file paths) and call the internals the commands of `cli/record_commands.py` call,
so a result here is what the command line gives. Reach them through the package: `ledger.replay(...)`.

`create_ledger` and `open_ledger` give a `Ledger`, a handle the other functions take; the store behind it stays
internal. Results are typed: `ImportResult`, `HistoryRow`, `EvidenceBundle`. A record stays a plain dict: its
canonical bytes are the published contract, so no class stands between it and `ledger.canonical`.

Errors are the ledger's own families (`ledger.InputError`, `IntegrityError`, `NotFoundError`, `StoreError`),
raised, never printed: nothing here prints, exits or writes a file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, NamedTuple, TypedDict, cast

from ledger.core.errors import InputError, IntegrityError
from ledger.core.inputs import read_input
from ledger.core.limits import RECORD
from ledger.core.times import When, when
from ledger.importing import importer, logfile
from ledger.log.chain import hex_hash
from ledger.services import proofs
from ledger.services.keys import load_signer
from ledger.services.replay import record_as_of, subject_history
from ledger.services.verify import compare_record
from ledger.storage.store import Store

PathLike = str | os.PathLike[str]


class Ledger:
    """An open ledger, as `create_ledger` and `open_ledger` give it: pass it to the functions of this API, and
    close it when done (`with ledger.open_ledger(...) as book:` does). The store behind it is not part of the
    API; a function handed a closed ledger raises InputError."""

    __slots__ = ("_store", "location")

    def __init__(self, store: Store) -> None:
        self._store: Store | None = store
        self.location: str = store.exported_log or store.shown  # as errors name it: never a password

    def close(self) -> None:
        """Close the connection; closing twice does nothing."""
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<ledger.Ledger {self.location!r}{' closed' if self._store is None else ''}>"


class Head(NamedTuple):
    """The last event of the log: its `seq` and its chain hash, `blake3:<hex>` (as `ledger import --json`)."""

    seq: int
    chain_hash: str


@dataclass(frozen=True)
class ImportResult:
    """What `import_files` did: `appended` events, `present` ones the ledger held already (none is appended
    twice), and the log's `head` after it."""

    appended: int
    present: int
    head: Head


class HistoryRow(TypedDict):
    """One event in a history, as a row of `ledger history --json`: an `account` of what it changed and, for
    an event of an observation, the `citation` it belongs to (None for the others)."""

    seq: int
    kind: str
    subject: str
    effective_at: str
    recorded_at: str
    account: str
    citation: str | None


class _BundleParts(TypedDict):
    checkpoint: str
    events: list[dict[str, Any]]
    index: dict[str, Any]
    record: dict[str, Any]


class EvidenceBundle(_BundleParts, total=False):  # NotRequired would be lost: annotations are strings here
    """An evidence bundle, the JSON `ledger replay --evidence` writes (`ledger.canonical(bundle)` is its bytes):
    the signed `checkpoint` note, every event of the paper with its proofs, the paper `index` proof, the
    `record`, and the `known_at` key when one was asked for."""

    known_at: str


def _opened(book: Ledger) -> Store:
    """The store behind an open ledger.
    Raises: InputError when it is closed."""
    if book._store is None:
        raise InputError(f"{book.location}: this ledger is closed")
    return book._store


def _at(option: str, value: str) -> When:
    return cast(When, when(option, value))  # None only for None


def create_ledger(location: PathLike) -> Ledger:
    """Create an empty ledger (a SQLite path or a SQLAlchemy URL) and return it open, as `ledger init` does.

    Raises: InputError when a ledger or a file is there already, or StoreError.
    """
    return Ledger(Store.create(os.fspath(location)))


def open_ledger(location: PathLike) -> Ledger:
    """Open an existing ledger (a SQLite path, a SQLAlchemy URL, or an exported `.jsonl` log, read-only, its
    hashes re-computed as it loads); never creates one. `close()` it when done, or open it in a `with`.

    Raises: InputError when there is no ledger there, IntegrityError for a log that does not re-compute, or
    StoreError.
    """
    return Ledger(logfile.open_ledger(os.fspath(location)))


def import_files(book: Ledger, files: PathLike | Iterable[PathLike]) -> ImportResult:
    """Append the facts of published records (JSON) or event lines (JSONL), all or nothing, as `ledger import`
    does (a directory: the .json and .jsonl files below it).

    Raises: InputError or IntegrityError naming the file (nothing appended), or StoreError.
    """
    names = [files] if isinstance(files, (str, os.PathLike)) else files
    done = importer.import_files(_opened(book), [os.fspath(name) for name in names])
    seq, chain = done.head
    return ImportResult(done.appended, done.present, Head(seq, hex_hash(chain)))


def replay(book: Ledger, paper: str, as_of: str, known_at: str | None = None) -> dict[str, Any]:
    """The record of arXiv `paper` as of `as_of`, from the facts recorded by `known_at` (default: all), as
    `ledger replay --paper`: `ledger.canonical(record)` is the published bytes.

    Raises: InputError for a bad date, NotFoundError when the paper has no record then, or StoreError.
    """
    return record_as_of(_opened(book), paper, _at("as_of", as_of), when("known_at", known_at))


def verify_record(record: PathLike, book: Ledger | None = None, strict: bool = False) -> None:
    """Re-check a published record's digests and, given the ledger, that what it knew at some recorded time
    rebuilt the record exactly (`strict`: today's rebuild must), as `ledger verify RECORD`. Returns None.

    Raises: IntegrityError listing each problem in `problems`, InputError for a malformed file, or StoreError.
    """
    name = os.fspath(record)
    check = compare_record(name, read_input(name, RECORD), None if book is None else _opened(book), strict)
    if check.problems:
        raise IntegrityError(f"{len(check.problems)} problem(s)", check.problems)


def history(book: Ledger, subject: str) -> list[HistoryRow]:
    """Every event of a paper (arXiv id) or an observation, oldest first, as `ledger history --json`.

    Raises: NotFoundError when the ledger holds no event of it, InputError when it is closed, or StoreError.
    """
    return cast(list[HistoryRow], subject_history(_opened(book), subject))


def evidence_bundle(book: Ledger, paper: str, as_of: str, key: PathLike, known_at: str | None = None
                    ) -> EvidenceBundle:
    """The evidence bundle of the record of `paper` as of `as_of`, signed with the key file `key` (`ledger
    keygen`), as `ledger replay --evidence`; `ledger.canonical(bundle)` is the file the command writes.

    Raises: InputError for a bad date or key, NotFoundError, IntegrityError, or StoreError.
    """
    known = when("known_at", known_at)
    bundle = proofs.evidence_bundle(_opened(book), paper, _at("as_of", as_of), load_signer(os.fspath(key)),
                                    known.key if known else None)
    return cast(EvidenceBundle, bundle)
