"""Where events live: one Store and one Writer over SQLite (the embedded default) or PostgreSQL (psycopg 3).

The database, not Python, guards the log: the backend's triggers refuse any insert that would leave the log
other than seq 1..n, and UPDATE, DELETE (and TRUNCATE on PostgreSQL) of an event. Appends are serialized by
a write lock taken before the head is read, so concurrent writers wait and never fork the chain. SQLAlchemy
owns URLs and the schema (`ledger.tables`), and is loaded only where an engine is made (a SQLite file is
opened by the backend with sqlite3 alone); statements run on the store's DBAPI connection, written once
with `?` placeholders, because the append path is measured against raw `executemany` (benchmarks/). What
differs by database lives in `ledger.backends`. The unique fact key refuses an append that repeats a stored
fact (FactStored), so appends need no look-up first. This module never decides what a fact means; it
stores and returns rows.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

from ledger.storage.backends import LOCK_TIMEOUT_SECONDS, Backend, backend_for
from ledger.storage.backends.sqlite import file_of
from ledger.log.chain import GENESIS, Entry, entry_bytes, seal
from ledger.core.errors import InputError, IntegrityError, StoreError
from ledger.model.events import Event, Fact
from ledger.storage.index_nodes import Edge as IndexEdge, Nodes, catch_up, root_at
from ledger.log.merkle import frontier_nodes, grow, leaf_hash, perfect_subtrees
from ledger.log.paper_index import log_event
from ledger.storage.schema import EVENT_COLUMNS, SCHEMA_VERSION
from ledger.core.times import format_utc

if TYPE_CHECKING:  # SQLAlchemy loads only where an engine is made: `init`, `upgrade`, PostgreSQL, memory
    from sqlalchemy.engine import Engine

_COLUMNS = "seq, kind, subject, effective_at, effective_key, recorded_at, payload"
_OBSERVATION_KINDS = "('citation.observed', 'resolution.recorded', 'notice.checked')"
# Merkle subtrees of 16 leaves and more are stored as appended; smaller ones are re-computed from their
# block's event rows when a proof needs them. Storing every level cost an append about one more row.
_STORED_FROM_LEVEL = 4
_RECENT = 10_000  # events a store remembers for the paper index's next catch-up (their payloads held too)
_STAND_IN = bytes(32)  # a node's value while a proof's nodes are being listed (Cursor.node_source)


def now_utc() -> str:
    """The current instant in the ledger's recorded-time form. Raises nothing."""
    return format_utc(datetime.now(timezone.utc))


def database_url(location: str) -> str:
    """`--db` takes a SQLAlchemy URL or a path to a SQLite file; the URL either way. Raises nothing."""
    return location if "://" in location else f"sqlite:///{location}"


def sqlite_path(location: str) -> str | None:
    """The file behind a `--db` location when it names a SQLite file (None for a server or an in-memory
    database). Raises nothing."""
    return file_of(database_url(location))


def _fact(r) -> Fact:
    return Fact(r[0], r[1], r[2], r[3], r[4], r[5], _blob(r[6]))


class Cursor:
    """The store's one DBAPI cursor, with the ledger's queries: every statement goes through `execute`,
    which counts it (`replay --stats`, the statement budget) and translates `?` placeholders."""

    def __init__(self, store: "Store", connection):
        self.store = store
        self.raw = connection.cursor()

    def execute(self, sql: str, params: tuple | list = ()):
        """Run one statement; returns the DBAPI cursor. Raises the driver's errors."""
        self.store.statements += 1
        self.raw.execute(self.store.backend.sql(sql), params)
        return self.raw

    def executemany(self, sql: str, rows: list) -> None:
        """Run one statement over many rows. Raises the driver's errors."""
        self.store.statements += 1
        self.raw.executemany(self.store.backend.sql(sql), rows)

    def copy(self, sql: str):
        """A COPY statement (PostgreSQL), counted; use it as a context manager. Raises the driver's errors."""
        self.store.statements += 1
        return self.raw.copy(sql)

    def head(self) -> tuple[int, bytes, str | None]:
        """(seq, chain hash, recorded time) of the last event. Raises the driver's errors."""
        row = self.execute("SELECT seq, chain_hash, recorded_at FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        return (0, GENESIS, None) if row is None else (row[0], _blob(row[1]), row[2])

    def entry(self, seq: int) -> Entry:
        """The stored entry `seq`. Raises the driver's errors."""
        return Entry._make(self.execute(f"SELECT {self.store.backend.entry_columns} FROM events WHERE seq = ?",
                                        (seq,)).fetchone())

    def tree_nodes(self, wanted: list[tuple[int, int]], size: int | None = None) -> dict[tuple[int, int], bytes]:
        """Merkle nodes by (level, index), in one statement: stored ones for level >= 4, and the smaller
        ones re-computed from the (at most 16) event rows of their block, reading no row past `size` when
        given. May return more nodes than asked for: the block's other small subtrees.
        Raises IntegrityError when event rows of a block are missing, and the driver's errors."""
        stored = [pair for pair in wanted if pair[0] >= _STORED_FROM_LEVEL]
        blocks = sorted({index >> (_STORED_FROM_LEVEL - level) for level, index in wanted if level < _STORED_FROM_LEVEL})
        width = 1 << _STORED_FROM_LEVEL
        seqs = [seq for block in blocks for seq in range(block * width + 1, (block + 1) * width + 1)
                if size is None or seq <= size]
        parts, params = [], []
        if stored:  # level, index, hash
            parts.append("SELECT level, idx, hash, NULL, NULL, NULL, NULL FROM merkle_nodes WHERE "
                         + " OR ".join(["(level = ? AND idx = ?)"] * len(stored)))
            params.extend(v for pair in stored for v in pair)
        if seqs:  # -1, seq, and what the leaf is made of
            parts.append("SELECT -1, seq, NULL, kind, effective_at, recorded_at, payload FROM events WHERE seq IN "
                         f"({', '.join(['?'] * len(seqs))})")
            params.extend(seqs)
        found: dict[tuple[int, int], bytes] = {}
        leaves: dict[int, list[tuple[int, bytes]]] = {block: [] for block in blocks}
        for r in self.execute(" UNION ALL ".join(parts), params).fetchall() if parts else ():
            if r[0] >= 0:
                found[(r[0], r[1])] = _blob(r[2])
            else:
                leaf = leaf_hash(entry_bytes(r[1], r[3], r[4], r[5], _blob(r[6])))
                leaves[(r[1] - 1) // width].append((r[1], leaf))
        for block, digests in leaves.items():
            digests.sort()
            first = block * width + 1
            if [seq for seq, _ in digests] != list(range(first, first + len(digests))):
                raise IntegrityError(f"events missing among seq {first}..{first + width - 1}: the Merkle tree "
                                     "cannot be re-computed there")
            found.update(perfect_subtrees(block * width, [leaf for _, leaf in digests], _STORED_FROM_LEVEL))
        return found

    def node_source(self, size: int, prefetch: Callable[[Callable[[int, int], bytes]], object] | None = None):
        """A Merkle node source for proofs in the tree of `size` leaves: each node read once, then remembered;
        nothing past `size` is read, so an append landing meanwhile cannot reach a proof. `prefetch`, a
        function of a node source (building a proof), is first run on a stand-in that only notes which nodes
        it asks for (which nodes a proof needs depends on its sizes, never on hashes): all of them are then
        read in one statement, not one each. Its nodes raise IntegrityError for a node outside that tree or
        one the ledger cannot give."""
        cache: dict[tuple[int, int], bytes] = {}
        if prefetch is not None:
            wanted: set[tuple[int, int]] = set()
            prefetch(lambda level, index: wanted.add((level, index)) or _STAND_IN)
            if wanted:
                cache.update(self.tree_nodes(sorted(pair for pair in wanted if (pair[1] + 1) << pair[0] <= size), size))

        def node(level: int, index: int) -> bytes:
            if (index + 1) << level > size:
                raise IntegrityError(f"Merkle node ({level}, {index}) is not in the tree of size {size}")
            if (level, index) not in cache:
                cache.update(self.tree_nodes([(level, index)], size))
                if (level, index) not in cache:
                    raise IntegrityError(f"the ledger has no Merkle node ({level}, {index})")
            return cache[(level, index)]

        return node

    def paper_facts(self, paper: str, known_at: str | None = None, size: int | None = None) -> list[Fact]:
        """Every event of one paper, in ledger order, in one indexed statement: its paper-level events and
        every event of the observations a citation links to it (the paper index's "events of P"). With
        `size`, the log of that many events: links made later do not count. Raises the driver's errors."""
        where, params = _paper_events(paper, known_at, size)
        return [_fact(r) for r in self.execute(f"SELECT {_COLUMNS} FROM events WHERE {where} ORDER BY seq",
                                               params).fetchall()]

    def paper_seqs(self, paper: str) -> list[int]:
        """The sequence numbers of `paper_facts(paper)`, without reading the events. Raises the driver's errors."""
        where, params = _paper_events(paper, None, None)
        return [r[0] for r in self.execute(f"SELECT seq FROM events WHERE {where} ORDER BY seq", params).fetchall()]


def _snapshot_by(as_of_key: str, known_at: str | None) -> tuple[str, list]:
    """Whether paper `p.paper` has a snapshot effective by `as_of_key` (and recorded by `known_at`): an SQL
    condition and its parameters, for `Store.papers` and `Store.paper_count`."""
    sql = ("EXISTS (SELECT 1 FROM events AS s WHERE s.paper = p.paper AND s.kind = 'paper.snapshot' "
           "AND s.effective_key <= ?")
    if known_at is None:
        return sql + ")", [as_of_key]
    return sql + " AND s.recorded_at <= ?)", [as_of_key, known_at]


def _paper_events(paper: str, known_at: str | None, size: int | None) -> tuple[str, list]:
    """The condition (and its parameters) selecting a paper's events, as `Cursor.paper_facts` says."""
    links, params = "SELECT observation FROM observation_papers WHERE paper = ?", [paper, paper]
    if size is not None:
        links += " AND seq <= ?"
        params.append(size)
    where = f"(paper = ? OR (paper IS NULL AND subject IN ({links})))"
    if size is not None:
        where += " AND seq <= ?"
        params.append(size)
    if known_at is not None:
        where += " AND recorded_at <= ?"
        params.append(known_at)
    return where, params


class Store:
    """A ledger database. Open an existing one with `Store.open`, create one with `Store.create`."""

    def __init__(self, url: str, backend: Backend):
        self.url = url
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
        # seq, event and leaf hash): the next catch-up need not read them back. At most _RECENT of them.
        self._recent: tuple[int, list[tuple[int, Event, bytes]]] | None = None
        self.statements = 0  # SQL statements sent, for `replay --stats` and the statement budget test
        self._held = self._cursor = None  # the DBAPI connection every operation uses, opened on first use
        self._fact_key_checked = False  # by the first write of this Store

    # -- opening -------------------------------------------------------------------------------------
    @classmethod
    def _connect(cls, url: str) -> "Store":
        store = cls(url, backend_for(url))
        if not store.backend.connects_without_engine(url):
            store.engine  # made now: a bad URL or a missing driver is named before anything runs
        return store

    @property
    def engine(self) -> "Engine":
        """The SQLAlchemy engine, made on first use: creating the tables needs it, and a database the backend
        does not open itself (PostgreSQL, SQLite in memory) is reached through it; a SQLite file is opened
        without it, which spares every command the ~0.3 s SQLAlchemy takes to load. Raises InputError for a
        bad URL or a missing driver."""
        if self._engine is None:
            try:
                self._engine = self.backend.engine(self.url)
            except InputError:
                raise
            except Exception as exc:  # bad URL, missing driver
                raise InputError(f"--db {self.url}: cannot open: {exc}") from None
        return self._engine

    @classmethod
    def create(cls, location: str) -> "Store":
        """Create an empty ledger at `location`. Raises InputError when one (or a file) is already there,
        StoreError when the database cannot be reached."""
        path = sqlite_path(location)
        if path is not None and os.path.exists(path):
            raise InputError(f"{path}: already exists; a ledger is created only once")
        from sqlmodel import SQLModel  # here only: loading the tables costs every other command its start-up

        from ledger.storage.tables import TABLES, LedgerMeta

        store = cls._connect(database_url(location))
        with store._failures("create"):
            with store.engine.connect() as conn, conn.begin():
                if store.backend.holds_ledger(conn):
                    raise InputError(f"{store.url}: already holds a ledger")
                SQLModel.metadata.create_all(conn, tables=TABLES)
                for ddl in store.backend.guards:
                    conn.exec_driver_sql(ddl)
                conn.execute(LedgerMeta.__table__.insert(), [{"key": "schema_version", "value": SCHEMA_VERSION}])
        return store

    @classmethod
    def open(cls, location: str) -> "Store":
        """Open an existing ledger; never creates one (a typo in --db must not make a new database).
        Raises InputError when there is no ledger of this version there, StoreError when it cannot be read."""
        store = cls._existing(location)
        store.check_version()
        return store

    @classmethod
    def _existing(cls, location: str) -> "Store":
        """A store on a database that must exist already (a SQLite file is never created here). Raises
        InputError when there is no such file or the location cannot be opened."""
        path = sqlite_path(location)
        if path is not None and not os.path.isfile(path):
            raise InputError(f"{path}: no ledger here; create one with `ledger init`")
        return cls._connect(database_url(location))

    @classmethod
    def upgrade(cls, location: str) -> str:
        """Bring an older ledger to this version, in one transaction holding the write lock. From schema
        version 1: paper links get the seq of the citation that made them (re-derived from the citations),
        and the paper index's tables are created (the index is kept from the log when first needed, at any
        size). At any version: guards stored in an older form are re-created (`Backend.renew_guards`). Run
        it with no writer of the old version left. Returns what was done. Raises InputError when there is no
        ledger of version 1 or 2 there, StoreError when it cannot be read or written."""
        store = cls._existing(location)
        try:
            found = store._schema_version()
            if found not in ("1", SCHEMA_VERSION):
                raise InputError(f"{store.url}: ledger schema version {found or 'none'}, this ledger upgrades version 1")
            with store._connection("upgrade", store.backend.begin_write) as cursor:
                links = store._upgrade(cursor) if found == "1" else None
                renewed = store.backend.renew_guards(cursor)
            done = (f"{store.url}: already at schema version {SCHEMA_VERSION}" if links is None else
                    f"{store.url}: upgraded to schema version {SCHEMA_VERSION}; {links} paper links re-derived; the "
                    "paper index is kept from the log when a checkpoint or a proof first needs it")
            return done + (f"; guards renewed: {', '.join(renewed)}" if renewed else "")
        finally:
            store.close()

    def _upgrade(self, cursor: Cursor) -> int:
        from sqlalchemy.schema import CreateTable  # the tables load only where they are used (ledger.schema)

        from ledger.storage.tables import IndexNode, IndexRoot, ObservationPaper

        tables = (ObservationPaper.__table__, IndexNode.__table__, IndexRoot.__table__)
        cursor.execute("DROP TABLE observation_papers")  # its rows are re-derived below, with their seq
        for table in tables:
            cursor.execute(str(CreateTable(table).compile(dialect=self.engine.dialect)))
        for ddl in self.backend.guards:
            if any(f"ON {table.name}" in ddl for table in tables):
                cursor.execute(ddl)
        links, after = {}, 0
        while True:  # every entry, in pages, on this transaction's cursor
            rows = cursor.execute(f"SELECT {self.backend.entry_columns} FROM events WHERE seq > ? ORDER BY seq "
                                  "LIMIT 5000", (after,)).fetchall()
            for entry in map(Entry._make, rows):
                event = log_event(entry)
                for paper in event.papers:
                    links.setdefault((paper, event.subject), entry.seq)
            if len(rows) < 5000:
                break
            after = rows[-1][0]
        self.backend.insert_nodes_and_links(cursor, [], [(p, o, seq) for (p, o), seq in links.items()])
        cursor.execute("UPDATE ledger_meta SET value = ? WHERE key = 'schema_version'", (SCHEMA_VERSION,))
        return len(links)

    def check_version(self) -> None:
        """Raise InputError unless the database is a ledger of this schema version (StoreError: unreadable)."""
        found = self._schema_version()
        if found != SCHEMA_VERSION:
            found = "none" if found is None else found
            hint = "; bring it to this version with `ledger upgrade`" if found == "1" else ""
            raise InputError(f"{self.url}: ledger schema version {found}, this ledger reads version {SCHEMA_VERSION}"
                             f"{hint}")

    def _schema_version(self) -> str | None:
        """The schema version the database says it has (None: no such row). Raises InputError when it has no
        ledger_meta table, StoreError when it is locked or not a database at all."""
        with self.reading() as cursor:
            try:
                row = cursor.execute("SELECT value FROM ledger_meta WHERE key = 'schema_version'").fetchone()
            except self.backend.dbapi.Error as exc:
                if self.backend.is_locked(exc) or self.backend.is_not_a_database(exc):
                    raise
                raise InputError(f"{self.url}: not a ledger (no ledger_meta table)") from None
        return None if row is None else row[0]

    def close(self) -> None:
        """Close the connection and dispose of the engine. Raises nothing the caller can act on."""
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
                raise StoreError(f"{self.url}: locked by another writer for more than "
                                 f"{LOCK_TIMEOUT_SECONDS:g}s ({doing})") from None
            if self.backend.is_not_a_database(original):
                raise InputError(f"{self.url}: not a ledger ({message})") from None
            raise StoreError(f"{self.url}: cannot {doing}: {message}") from None

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
        Raises StoreError (or InputError: not a ledger) for driver errors."""
        with self._connection("read", None) as cursor:
            yield cursor

    @contextmanager
    def snapshot(self) -> Iterator[Cursor]:
        """A cursor whose reads all see the ledger as of one instant (one read transaction), and never take
        the write lock: what a proof or an evidence bundle is built from.
        Raises StoreError (or InputError: not a ledger) for driver errors."""
        with self._connection("read", self.backend.begin_snapshot) as cursor:
            yield cursor

    def head(self) -> tuple[int, bytes, str | None]:
        """(seq, chain hash, recorded time) of the last event; (0, 32 zero bytes, None) when empty.
        Raises StoreError."""
        with self.reading() as cursor:
            return cursor.head()

    def paper_facts(self, paper: str, known_at: str | None = None) -> list[Fact]:
        """Every event of one paper's record, in ledger order (recorded by `known_at`, when given).
        Raises StoreError."""
        with self.reading() as cursor:
            return cursor.paper_facts(paper, known_at)

    def observation_facts(self, observation: str) -> list[Fact]:
        """Every event of one observation, in ledger order. Raises StoreError."""
        with self.reading() as cursor:
            rows = cursor.execute(f"SELECT {_COLUMNS} FROM events WHERE subject = ? AND kind IN "
                                  f"{_OBSERVATION_KINDS} ORDER BY seq", (observation,)).fetchall()
        return [_fact(r) for r in rows]

    def papers(self, as_of_key: str, known_at: str | None = None, batch: int = 500) -> Iterator[str]:
        """Papers with a snapshot effective by `as_of_key` (and recorded by `known_at`), sorted, read in
        keyset pages so that replaying every paper never holds the whole list. Raises StoreError."""
        shown, params = _snapshot_by(as_of_key, known_at)
        # Each page walks the paper index alone (every paper with an event, in order), then looks up one
        # paper's snapshot: filtering the events themselves read every paper-level event of every paper.
        sql = (f"SELECT p.paper, {shown} FROM (SELECT DISTINCT paper FROM events WHERE paper > ? ORDER BY paper "
               "LIMIT ?) AS p ORDER BY p.paper")
        after = ""
        while True:
            with self.reading() as cursor:
                page = cursor.execute(sql, params + [after, batch]).fetchall()
            yield from (paper for paper, snapshot in page if snapshot)
            if len(page) < batch:
                return
            after = page[-1][0]
            del page  # before the next page is read: one page held at a time

    def paper_count(self, as_of_key: str, known_at: str | None = None) -> int:
        """How many papers `papers` would list (for progress: the time left). Raises StoreError."""
        shown, params = _snapshot_by(as_of_key, known_at)
        sql = f"SELECT COUNT(*) FROM (SELECT DISTINCT paper FROM events WHERE paper IS NOT NULL) AS p WHERE {shown}"
        with self.reading() as cursor:
            return cursor.execute(sql, params).fetchone()[0]

    def entries(self, batch: int = 2000) -> Iterator[Entry]:
        """Every entry in ledger order, read in pages by seq so memory stays flat. Raises StoreError."""
        after = 0
        while True:
            with self.reading() as cursor:
                rows = cursor.execute(f"SELECT {self.backend.entry_columns} FROM events WHERE seq > ? ORDER BY seq "
                                      "LIMIT ?", (after, batch)).fetchall()
            yield from map(Entry._make, rows)
            if len(rows) < batch:
                return
            after = rows[-1][0]
            del rows  # before the next page is read: one page held at a time

    # -- writing -------------------------------------------------------------------------------------
    @contextmanager
    def writing(self) -> Iterator["Writer"]:
        """One all-or-nothing append transaction holding the write lock. Raises InputError on an exported
        log (read-only), StoreError when the lock is not had in time or the fact key is missing."""
        if self.exported_log:
            raise InputError(f"{self.exported_log}: an exported log is read-only; import it into a ledger instead")
        with self._connection("append", self.backend.begin_write) as cursor:
            if not self._fact_key_checked:
                if cursor.execute(self.backend.fact_key_present).fetchone() is None:
                    raise StoreError(f"{self.url}: the events table lost its unique fact key (subject, kind, "
                                     "effective_key): appends could no longer refuse a repeated fact; nothing appended")
                self._fact_key_checked = True
            edge, self._edge = self._edge, None  # until this transaction commits
            writer = Writer(cursor, edge)
            yield writer
        self._edge = (writer.seq, writer.chain, writer.frontier)
        recent = self._recent
        if writer.recent is None:
            self._recent = None
        elif recent is not None and recent[0] + len(recent[1]) == writer.start:
            recent[1].extend(writer.recent)
            if len(recent[1]) > _RECENT:
                self._recent = None
        elif writer.recent:
            self._recent = (writer.start, writer.recent)

    def keep_index(self, size: int) -> None:
        """Make sure the paper index is kept at tree `size` (at most the head): when it is not, bring it there
        from the log (`index_nodes.catch_up`) in one transaction holding the lock catch-ups share (SQLite's
        one write lock; on PostgreSQL a lock of its own, so appends and catch-ups never wait for each other),
        so that whoever asks first writes it and everyone reads the same nodes. Appends never do this: the
        index costs them nothing, and is written where a checkpoint, a proof or a bundle needs it. Raises
        StoreError when the lock is not had in time, IntegrityError for an event or node that is not one."""
        with self.reading() as cursor:
            if root_at(cursor, size) is not None:
                return
        handed, self._index_edge = self._index_edge, None  # the catch-up changes it: gone should it roll back
        relax, restore = self.backend.index_durability or (None, None)
        if relax:
            with self._connection("paper index", None) as cursor:
                cursor.execute(relax)
        try:
            with self._connection("paper index", self.backend.begin_index) as cursor:
                written, edge = catch_up(cursor, self.index_nodes, size, handed, self._recent)
        finally:
            if restore:
                with self._connection("paper index", None) as cursor:
                    cursor.execute(restore)
        self.index_nodes.remember(written)
        if edge is not None:
            self._index_edge = (size, edge)
        if self._recent is not None and self._recent[0] + len(self._recent[1]) <= size:
            self._recent = None  # all in the index now


class FactStored(StoreError):
    """An append met a fact the ledger holds already (same subject, kind and effective time; the unique key
    events_one_fact). The transaction cannot go on (rows before the refused one may be in it): let it roll
    back; the importer then runs again, looking facts up first. Exit 3 should one reach the command line."""


class Writer:
    """Appends inside one transaction. The chain continues from the head read under the lock."""

    def __init__(self, cursor: Cursor, edge: tuple[int, bytes, dict[int, bytes]] | None = None):
        self.cursor = cursor
        self.seq, self.chain, self.last_recorded = cursor.head()
        self.start = self.seq
        self.recent: list[tuple[int, Event, bytes]] | None = []  # for the paper index's next catch-up
        # One recorded time per import, never earlier than the head's: recorded time follows ledger order,
        # so "known at K" is always a prefix of the log.
        now = now_utc()
        self.recorded_at = now if self.last_recorded is None or now > self.last_recorded else self.last_recorded
        # The right edge of the Merkle tree: the perfect subtrees that new leaves combine with.
        if edge is not None and edge[0] == self.seq and edge[1] == self.chain:
            self.frontier = edge[2]  # handed over: the store forgets it until this transaction commits
        else:
            wanted = frontier_nodes(self.seq)
            stored = cursor.tree_nodes(wanted)
            self.frontier = {level: stored[(level, index)] for level, index in wanted}

    def paper_facts(self, paper: str) -> list[Fact]:
        """Every event of a paper's record, this transaction's appends included. Raises the driver's errors."""
        return self.cursor.paper_facts(paper)

    def paper_seqs(self, paper: str) -> list[int]:
        """The sequence numbers of `paper_facts(paper)`. Raises the driver's errors."""
        return self.cursor.paper_seqs(paper)

    def entry(self, seq: int) -> Entry:
        """The stored entry `seq`. Raises the driver's errors."""
        return self.cursor.entry(seq)

    def existing(self, events: Iterable[Event]) -> dict[tuple[str, str, str], tuple[int, bytes]]:
        """For each (kind, subject, effective key) already stored: (seq, payload). Looked up by exact key
        through the unique index, one indexed probe each; the importer asks only after a FactStored.
        Raises the driver's errors."""
        keys = sorted({(e.subject, e.kind, e.effective_key) for e in events})
        rows = self.cursor.store.backend.stored_facts(self.cursor, keys) if keys else []
        return {(r[0], r[1], r[2]): (r[3], _blob(r[4])) for r in rows}

    def append(self, events: list[Event]) -> list[Entry]:
        """Append events, each a distinct fact, with the chain continued; returns their entries. Raises
        FactStored when one of them is stored already."""
        seq, chain, recorded_at = self.seq, self.chain, self.recorded_at
        entries = []
        for ev in events:
            seq += 1
            data, digest, chain = seal(chain, seq, ev.kind, ev.effective_at, recorded_at, ev.payload)
            entries.append((Entry(seq, ev.kind, ev.effective_at, recorded_at, ev.payload, digest, chain), ev, data))
        self.append_entries(entries)
        return [entry for entry, _, _ in entries]

    def append_entries(self, entries: list[tuple[Entry, Event, bytes]]) -> None:
        """Append entries whose hashes are already computed: new ones (`append`), or lines of an exported log
        the importer has re-checked. Each comes with its entry bytes, which are its Merkle leaf. Raises
        FactStored when a fact is already stored."""
        rows, nodes, links, recent = [], [], [], self.recent
        if recent is not None and len(recent) + len(entries) > _RECENT:
            recent = self.recent = None  # a large import: its catch-up reads the log
        for entry, ev, data in entries:
            rows.append((entry.seq, ev.kind, ev.subject, ev.paper, ev.effective_at, ev.effective_key,
                         entry.recorded_at, ev.payload, entry.entry_hash, entry.chain_hash))
            digest = leaf_hash(data)
            grow(self.frontier, entry.seq - 1, digest, nodes, _STORED_FROM_LEVEL)
            for paper in ev.papers:  # only citations name papers
                links.append((paper, ev.subject, entry.seq))
            if recent is not None:
                recent.append((entry.seq, ev, digest))
        self._insert(rows, links, nodes)
        if entries:
            last = entries[-1][0]
            self.seq, self.chain, self.last_recorded = last.seq, last.chain_hash, last.recorded_at
            # New facts later in this transaction are never recorded before copied ones.
            self.recorded_at = max(self.recorded_at, last.recorded_at)

    def _insert(self, rows: list[tuple], links: list[tuple[str, str, int]], nodes: list[tuple[int, int, bytes]]) -> None:
        backend = self.cursor.store.backend
        if rows:
            try:  # the unique fact key decides, not a look-up first: new facts, the common case, cost no probe
                backend.insert(self.cursor, "events", EVENT_COLUMNS, rows)
            except backend.dbapi.IntegrityError as exc:
                if backend.repeats_a_fact(exc):
                    raise FactStored("a fact of this append is already stored (same subject, kind and effective "
                                     "time)") from None
                raise
        backend.insert_nodes_and_links(self.cursor, nodes, links)


def _blob(value: object) -> bytes:
    # A row edited by hand in SQLite can come back as TEXT, a number or NULL; verification must see it (as
    # bytes that will not re-compute), not crash on it, nor take an integer n for n zero bytes.
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return (value if isinstance(value, str) else repr(value)).encode("utf-8", "surrogateescape")
