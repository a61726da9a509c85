"""Where events live: the Store over SQLite (the embedded default) or PostgreSQL (psycopg 3): opening,
creating and upgrading a ledger, its one connection and transactions, reads, and keeping the paper index.

The database, not Python, guards the log: the backend's triggers refuse any insert that would leave the log
other than seq 1..n, and UPDATE, DELETE (and TRUNCATE on PostgreSQL) of an event. Appends are serialized by
a write lock taken before the head is read, so concurrent writers wait and never fork the chain. SQLAlchemy
owns URLs and the schema (`ledger.storage.tables`), and is loaded only where an engine is made (a SQLite file
is opened by the backend with sqlite3 alone); statements run on the store's DBAPI connection, written once
with `?` placeholders, because the append path is measured against raw `executemany` (benchmarks/). What
differs by database lives in `ledger.storage.backends`; the ledger's reads in `ledger.storage.cursor`, its
appends in `ledger.storage.writer`, the paper index in `ledger.storage.index_*`, the schema's own SQL (create,
upgrade, version check) in `ledger.storage.store_open`. This module never decides what a fact means.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ledger.core.errors import InputError, StoreError
from ledger.log.chain import Entry
from ledger.model.events import Fact
from ledger.storage.backends import (
    LOCK_TIMEOUT_SECONDS,
    Backend,
    backend_for,
    database_url,
    shown_location,
)
from ledger.storage.cursor import Cursor
from ledger.storage.index_keeping import CHUNK, catch_up
from ledger.storage.index_keeping import Edge as IndexEdge
from ledger.storage.index_reads import CACHE_LIMIT, Nodes, root_at
from ledger.storage.schema import SCHEMA_VERSION, UPGRADES_FROM
from ledger.storage.store_open import (
    check_version,
    create_tables,
    rederive_links,
    repack_payloads,
    schema_version,
    sqlite_file,
)
from ledger.storage.writer import Recent, Writer

if TYPE_CHECKING:  # SQLAlchemy loads only where an engine is made: `init`, `upgrade`, PostgreSQL, memory
    from sqlalchemy.engine import Engine


class Store:
    """A ledger database. Open an existing one with `Store.open`, create one with `Store.create`."""

    def __init__(self, url: str, backend: Backend):
        self.url = url
        self.shown = shown_location(url)  # what errors name: never a password
        self.backend = backend
        self._engine: Engine | None = None
        self.dialect = backend.name
        self.exported_log: str | None = None  # the file, when an exported log stands in for the database
        # The Merkle tree's right edge as this process left it, keyed by the head it left: when no other
        # writer appended since (same seq and chain hash), the next append need not read it again.
        self._edge: tuple[int, bytes, dict[int, bytes]] | None = None
        self.index_nodes = Nodes()  # the paper index's nodes read or written here (versions never change)
        self._index_edge: tuple[int, IndexEdge] | None = None  # what the last catch-up here left, and its size
        # The events this process appended since the index was last kept (the size they follow, and each one's
        # seq, event and leaf hash): the next catch-up need not read them back. At most writer.RECENT of them.
        self._recent: Recent | None = None
        self.index_chunk = CHUNK  # events a catch-up reads and adds at a time: memory stays flat however far behind
        self.statements = 0  # SQL statements sent, for `replay --stats` and the statement budget test
        self._held = self._cursor = None  # the DBAPI connection every operation uses, opened on first use
        self._fact_key_checked = False  # by the first write of this Store

    # -- opening -------------------------------------------------------------------------------------
    @classmethod
    def _connect(cls, url: str) -> Store:
        store = cls(url, backend_for(url))
        if not store.backend.connects_without_engine(url):
            store.engine  # noqa: B018 (made now) -: a bad URL or a missing driver is named before anything runs
        return store

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine, made on first use: creating the tables needs it, and a database the backend
        does not open itself (PostgreSQL, SQLite in memory) is reached through it; a SQLite file is opened
        without it, which spares every command the ~0.3 s SQLAlchemy takes to load.
        Raises: InputError for a bad URL or a missing driver."""
        if self._engine is None:
            try:
                self._engine = self.backend.engine(self.url)
            except InputError:
                raise
            except Exception as exc:  # bad URL, missing driver
                if isinstance(exc, ModuleNotFoundError) and (exc.name or "").startswith("psycopg"):
                    raise InputError(f"--db {self.shown}: PostgreSQL needs the psycopg driver: pip install "
                                     "'ledger[postgres]' (in a checkout: pip install -e '.[postgres]')") from None
                raise InputError(f"--db {self.shown}: cannot open: {exc}") from None
        return self._engine

    @classmethod
    def create(cls, location: str) -> Store:
        """Create an empty ledger at `location`.
        Raises: InputError when one (or a file) is already there, StoreError when the database cannot be reached."""
        path = sqlite_file(location)
        if path is not None and os.path.exists(path):
            raise InputError(f"{path}: already exists; a ledger is created only once")
        store = cls._connect(database_url(location))
        with store._failures("create"):
            create_tables(store.engine, store.backend, store.shown)
        return store

    @classmethod
    def open(cls, location: str) -> Store:
        """Open an existing ledger; never creates one (a typo in --db must not make a new database).
        Raises: InputError when there is no ledger of this version there, StoreError when it cannot be read."""
        store = cls._existing(location)
        store.check_version()
        return store

    @classmethod
    def _existing(cls, location: str) -> Store:
        """A store on a database that must exist already (a SQLite file is never created here).
        Raises: InputError when there is no such file or the location cannot be opened."""
        path = sqlite_file(location)
        if path is not None and not os.path.isfile(path):
            raise InputError(f"{path}: no ledger here; create one with `ledger init`")
        return cls._connect(database_url(location))

    @classmethod
    def upgrade(cls, location: str) -> str:
        """Bring an older ledger to this version, in one transaction holding the write lock. From schema
        version 1: paper links get the seq of the citation that made them (re-derived from the citations),
        and the paper index's tables are created (the index is kept from the log when first needed, at any
        size). From version 1 or 2: payloads are stored packed (`store_open.repack_payloads`; the space they
        leave is the file's until `VACUUM`). At any version: guards stored in an older form are re-created
        (`Backend.renew_guards`). Run it with no writer of an old version left. Returns what was done.
        Raises: InputError when there is no ledger of version 1, 2 or 3 there, StoreError when it cannot be read or
        written."""
        store = cls._existing(location)
        try:
            found = store._schema_version()
            if found not in (*UPGRADES_FROM, SCHEMA_VERSION):
                raise InputError(f"{store.shown}: ledger schema version {found or 'none'}, this ledger upgrades "
                                 f"versions {' and '.join(UPGRADES_FROM)}")
            links = packed = None
            with store._connection("upgrade", store.backend.begin_write) as cursor:
                if found == "1":
                    links = rederive_links(cursor, store.backend, store.engine)
                if found in UPGRADES_FROM:
                    packed = repack_payloads(cursor, store.backend)
                renewed = store.backend.renew_guards(cursor)
            done = f"{store.shown}: already at schema version {SCHEMA_VERSION}" if packed is None else \
                f"{store.shown}: upgraded to schema version {SCHEMA_VERSION}"
            if links is not None:
                done += (f"; {links} paper links re-derived; the paper index is kept from the log when a checkpoint or a "
                         "proof first needs it")
            if packed is not None:
                done += f"; {packed} payloads stored packed (VACUUM returns the space they left to the disk)"
            return done + (f"; guards renewed: {', '.join(renewed)}" if renewed else "")
        finally:
            store.close()

    def check_version(self) -> None:
        """Check the database is a ledger of this schema version (`store_open.check_version`).
        Raises: InputError when it is not, StoreError when it cannot be read."""
        check_version(self._schema_version(), self.shown)

    def _schema_version(self) -> str | None:
        """The schema version the database says it has (`store_open.schema_version`).
        Raises: InputError when it has no ledger_meta table, StoreError when it is locked or not a database."""
        with self.reading() as cursor:
            return schema_version(cursor, self.backend, self.shown)

    def close(self) -> None:
        """Close the connection and dispose of the engine."""
        if self._held is not None:
            self._held.close()
            self._held = self._cursor = None
        if self._engine is not None:
            self._engine.dispose()

    @contextmanager
    def _failures(self, doing: str) -> Iterator[None]:
        """Turn driver errors into the ledger's error families (exit 3 unless it is the user's input)."""
        try:
            yield
        except self._driver_errors() as exc:
            original = getattr(exc, "orig", None) or exc
            message = (str(original).strip().splitlines() or [type(original).__name__])[0]
            if self.backend.is_locked(original):
                raise StoreError(f"{self.shown}: locked by another writer for more than "
                                 f"{LOCK_TIMEOUT_SECONDS:g}s ({doing})") from None
            if self.backend.is_not_a_database(original):
                raise InputError(f"{self.shown}: not a ledger ({message})") from None
            raise StoreError(f"{self.shown}: cannot {doing}: {message}") from None

    def _driver_errors(self) -> tuple[type, ...]:
        """The driver's errors, and SQLAlchemy's wrapper of them when SQLAlchemy is loaded."""
        wrapped = sys.modules.get("sqlalchemy.exc")
        return (self.backend.dbapi.Error,) + ((wrapped.DBAPIError,) if wrapped is not None else ())

    @contextmanager
    def _connection(self, doing: str, begin: str | None) -> Iterator[Cursor]:
        """The store's DBAPI connection, held from first use to `close` (a pool checkout per operation cost
        a single-event append more than its statements; benchmarks/). Reads run in autocommit (each is one
        statement, atomic by itself) unless `begin` opens a transaction: a write holding the write lock, or
        a snapshot; it is committed at the end or rolled back. Operations do not nest."""
        with self._failures(doing):
            if self._held is None:
                self._held = self.backend.connect(self.url) or self.engine.raw_connection()
                self._cursor = Cursor(self, self._held)
                self.backend.connected(self._held, self._cursor)
            connection, cursor = self._held, self._cursor
            try:
                if begin:
                    cursor.execute(begin)
                yield cursor
                if begin:
                    connection.commit()
            except BaseException:
                self._held = self._cursor = None  # after any error: rolled back, closed, opened afresh next time
                try:
                    connection.rollback()
                finally:
                    connection.close()
                raise

    # -- reading -------------------------------------------------------------------------------------
    @contextmanager
    def reading(self) -> Iterator[Cursor]:
        """A cursor for reads, which never take the write lock; each read method is one statement (several
        under one `reading` may see appends land between them: use `snapshot` for that).
        Raises: StoreError (or InputError: not a ledger) for driver errors."""
        with self._connection("read", None) as cursor:
            yield cursor

    @contextmanager
    def snapshot(self) -> Iterator[Cursor]:
        """A cursor whose reads all see the ledger as of one instant (one read transaction), and never take
        the write lock: what a proof or an evidence bundle is built from.
        Raises: StoreError (or InputError: not a ledger) for driver errors."""
        with self._connection("read", self.backend.begin_snapshot) as cursor:
            yield cursor

    def head(self) -> tuple[int, bytes, str | None]:
        """(seq, chain hash, recorded time) of the last event; (0, 32 zero bytes, None) when empty.
        Raises: StoreError."""
        with self.reading() as cursor:
            return cursor.head()

    def paper_facts(self, paper: str, known_at: str | None = None) -> list[Fact]:
        """Every event of one paper's record, in ledger order (recorded by `known_at`, when given).
        Raises: StoreError."""
        with self.reading() as cursor:
            return cursor.paper_facts(paper, known_at)

    def paper_version(self, paper: str) -> tuple[int, int]:
        """(how many, the largest seq) of the paper's facts (`Cursor.paper_version`).
        Raises: StoreError."""
        with self.reading() as cursor:
            return cursor.paper_version(paper)

    def observation_facts(self, observation: str) -> list[Fact]:
        """Every event of one observation, in ledger order.
        Raises: StoreError."""
        with self.reading() as cursor:
            return cursor.observation_facts(observation)

    def papers(self, as_of_key: str, known_at: str | None = None, batch: int = 500, after: str = "") -> Iterator[str]:
        """Papers with a snapshot effective by `as_of_key` (and recorded by `known_at`), sorted, from the first
        after `after`, read in keyset pages so that replaying every paper never holds the whole list.
        Raises: StoreError."""
        while True:
            with self.reading() as cursor:
                page = cursor.papers_after(after, batch, as_of_key, known_at)
            yield from (paper for paper, snapshot in page if snapshot)
            if len(page) < batch:
                return
            after = page[-1][0]
            del page  # before the next page is read: one page held at a time

    def paper_count(self, as_of_key: str, known_at: str | None = None) -> int:
        """How many papers `papers` would list (for progress: the time left).
        Raises: StoreError."""
        with self.reading() as cursor:
            return cursor.paper_count(as_of_key, known_at)

    def entries(self, batch: int = 2000) -> Iterator[Entry]:
        """Every entry in ledger order, read in pages by seq so memory stays flat.
        Raises: StoreError."""
        after = 0
        while True:
            with self.reading() as cursor:
                page = cursor.entries_after(after, batch)
            yield from page
            if len(page) < batch:
                return
            after = page[-1].seq
            del page  # before the next page is read: one page held at a time

    # -- writing -------------------------------------------------------------------------------------
    @contextmanager
    def writing(self) -> Iterator[Writer]:
        """One all-or-nothing append transaction holding the write lock: committed when its block ends, unless
        the block calls `Writer.abandon`.
        Raises: InputError on an exported log (read-only), StoreError when the lock is not had in time or the
        fact key is missing."""
        if self.exported_log:
            raise InputError(f"{self.exported_log}: an exported log is read-only; import it into a ledger instead")
        with self._connection("append", self.backend.begin_write) as cursor:
            if not self._fact_key_checked:
                if cursor.execute(self.backend.fact_key_present).fetchone() is None:
                    raise StoreError(f"{self.shown}: the events table lost its unique fact key (subject, kind, "
                                     "effective_key): appends could no longer refuse a repeated fact; nothing appended")
                self._fact_key_checked = True
            edge, self._edge = self._edge, None  # until this transaction commits
            writer = Writer(cursor, edge)
            yield writer
            if writer.abandoned:  # the block gave up: rolled back as after an error, but nothing is raised
                self._held.rollback()
                return
        self._edge = (writer.seq, writer.chain, writer.frontier)
        self._recent = writer.remembered(self._recent)

    @property
    def remembered(self) -> int:
        """How many events this store appended that the paper index's next catch-up need not read back."""
        return 0 if self._recent is None else len(self._recent[1])

    def keep_index(self, size: int) -> None:
        """Make sure the paper index is kept at tree `size` (at most the head): when it is not, bring it there
        from the log (`index_keeping.catch_up`) in one transaction holding the lock catch-ups share (SQLite's
        one write lock; on PostgreSQL a lock of its own, so appends and catch-ups never wait for each other),
        so that whoever asks first writes it and everyone reads the same nodes. Appends never do this: the
        index costs them nothing, and is written where a checkpoint, a proof or a bundle needs it. It is
        caught up `index_chunk` events at a time; on a read-only database (a hot standby), held in memory.
        Raises: StoreError when the lock is not had in time.
        An event or a node that is not one raises IntegrityError."""
        with self.reading() as cursor:
            if root_at(cursor, size, self.index_nodes) is not None:
                return
            read_only = self.backend.read_only(cursor)
        handed, self._index_edge = self._index_edge, None  # the catch-up changes it: gone should it roll back
        if len(self.index_nodes.held) >= CACHE_LIMIT or not read_only and self.index_nodes.roots:
            self.index_nodes.forget()  # bounded; and a held node is never stored, once it can write
            handed = None
        if read_only:
            with self.snapshot() as cursor:
                _, edge = catch_up(cursor, self.index_nodes, size, handed, None, self.index_chunk, held=True)
            self._index_edge = None if edge is None else (size, edge)
            return
        relax, restore = self.backend.index_durability or (None, None)
        if relax:
            with self._connection("paper index", None) as cursor:
                cursor.execute(relax)
        try:
            with self._connection("paper index", self.backend.begin_index) as cursor:
                written, edge = catch_up(cursor, self.index_nodes, size, handed, self._recent, self.index_chunk)
        finally:
            if restore:
                with self._connection("paper index", None) as cursor:
                    cursor.execute(restore)
        self.index_nodes.remember(written)
        if edge is not None:
            self._index_edge = (size, edge)
        if self._recent is not None and self._recent[0] + len(self._recent[1]) <= size:
            self._recent = None  # all in the index now
