"""The interface every backend implements (see `ledger.storage.backends`), and the lock timeout they share."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # SQLAlchemy loads only where an engine is made: it is most of a command's start-up
    from sqlalchemy.engine import Engine

# How long a writer waits for the write lock (and SQLite for a busy file) before giving up with exit 3.
LOCK_TIMEOUT_SECONDS = float(os.environ.get("LEDGER_LOCK_TIMEOUT", "60"))


class Backend(ABC):
    """The database-specific half of a store. Subclasses fill in every attribute and method below."""

    name: str  # SQLAlchemy's dialect name
    in_rows = "IN ({})"  # `x <in_rows>` with a subquery: x is one of its rows (PostgreSQL's own form, below)
    guards: tuple[str, ...]  # DDL run once by `ledger init`, after the tables: the append-only guards
    begin_write: str  # begins a write transaction and takes the write lock
    begin_index: str  # begins a transaction that writes the paper index only, taking the lock catch-ups share
    # Statements run before and after that transaction, outside it (or None): the index is derived from the log,
    # so its commits need not wait for the disk; lost to a power cut, it is re-computed, the same bytes.
    index_durability: tuple[str, str] | None = None
    begin_snapshot: str  # begins a read transaction whose reads all see one snapshot, taking no write lock
    fact_key_present: str  # a query returning a row while the unique fact key is in place
    entry_columns: str  # the select list of an Entry, in its field order, every hash and payload as bytes
    rewrite_guard: tuple[str, str]  # lift, and restore, the events' UPDATE guard inside one transaction (`upgrade`)

    dbapi: Any  # the driver module: its Error and IntegrityError are what statements raise

    @abstractmethod
    def engine(self, url: str) -> Engine:
        """A SQLAlchemy engine for `url` (creating a ledger's tables needs one); a setting the user got wrong
        raises InputError."""

    def connects_without_engine(self, url: str) -> bool:
        """Whether `connect` opens this database itself."""
        return False

    def connect(self, url: str) -> Any | None:
        """A DBAPI connection opened without SQLAlchemy, ready as `engine` would give it; None when this
        database is reached through the engine. Raises the driver's errors."""
        return None

    def connected(self, connection: Any, cursor: Any) -> None:  # noqa: B027 (a hook: nothing by default)
        """Prepare a newly opened DBAPI connection (through the statement-counting `cursor`). Raises the
        driver's errors."""

    def watch(self, url: str) -> Any | None:
        """A reader, called from one thread at a time without the store, of a number that changes whenever any
        connection (another process's too) commits to the database; it returns None when it cannot tell now,
        and has `close()`. None where the backend has no such cheap read, or it cannot be opened."""
        return None

    def sql(self, statement: str) -> str:
        """A statement written with `?` placeholders, in this driver's paramstyle."""
        return statement

    def holds_ledger(self, connection: Any) -> bool:
        """Whether the database behind a SQLAlchemy connection already holds a ledger (checked by
        `ledger init` where no file says so). Raises the driver's errors."""
        return False

    def renew_guards(self, cursor: Any) -> list[str]:
        """Re-create, inside the caller's write transaction, each guard whose stored form is not this version's
        (a ledger made before a guard was rewritten: it enforced the same rule, more slowly); returns their
        names. Raises the driver's errors."""
        return []

    @abstractmethod
    def insert(self, cursor: Any, table: str, columns: Sequence[str], rows: list[tuple]) -> None:
        """Insert rows in one statement. Raises the driver's errors (IntegrityError on a repeated key)."""

    @abstractmethod
    def insert_nodes_and_links(self, cursor: Any, nodes: list[tuple], links: list[tuple]) -> None:
        """Store new Merkle nodes (level, idx, hash) and paper links (paper, observation, seq); a link already
        stored is skipped (the first seq stays). Raises the driver's errors."""

    @abstractmethod
    def insert_index(self, cursor: Any, nodes: list[tuple], root: tuple) -> None:
        """Store one transaction's paper index: its new nodes (id, node) and its root row (size, root node id,
        hash). Raises the driver's errors."""

    @abstractmethod
    def stored_facts(self, cursor: Any, keys: list[tuple[str, str, str]]) -> list[tuple]:
        """(kind, subject, effective_key, seq, payload) of each (subject, kind, effective_key) in `keys`
        already stored, through the unique fact key. Raises the driver's errors."""

    @abstractmethod
    def repeats_a_fact(self, error: BaseException) -> bool:
        """Whether an insert into events broke a unique key other than seq's: the fact key, under any name."""

    @abstractmethod
    def is_locked(self, error: BaseException) -> bool:
        """Whether a driver error means another writer held the lock past the timeout."""

    def read_only(self, cursor: Any) -> bool:
        """Whether this connection's transactions cannot write (a hot standby): the paper index is then
        computed in memory, not kept. Raises the driver's errors."""
        return False

    def is_not_a_database(self, error: BaseException) -> bool:
        """Whether a driver error means the file or server is not a database at all."""
        return False
