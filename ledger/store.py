"""Where events live: SQLModel tables on SQLite (the embedded default) or PostgreSQL (psycopg 3).

One interface for every backend, proven by one contract test suite. The database, not Python, guards
the log: a trigger refuses any insert that would leave the log other than seq 1..n (SQLite checks each row,
PostgreSQL each statement), and UPDATE, DELETE (and TRUNCATE on PostgreSQL) of an event are refused.
Appends are serialized by a write lock taken before the head is read (SQLite BEGIN IMMEDIATE, a PostgreSQL
advisory lock), so concurrent writers wait and never fork the chain. SQLAlchemy owns URLs and the schema
(SQLModel tables); statements run on the store's DBAPI connection, written once with `?` placeholders,
because the append path is measured against raw `executemany` (benchmarks/); batches go to PostgreSQL as
COPY. The unique fact key refuses an append that repeats a stored fact (FactStored), so appends need no
look-up first. This module never decides what a fact means; it stores and returns rows.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from datetime import datetime, timezone
from functools import cache
from typing import Iterable, Iterator

from sqlalchemy import BigInteger, Index, Integer, LargeBinary, UniqueConstraint, create_engine, event, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError
from sqlmodel import Field, SQLModel

from blake3 import blake3

from .chain import GENESIS, Entry, entry_bytes, link
from .merkle import frontier_nodes, grow, leaf_hash, perfect_subtrees
from .errors import InputError, IntegrityError, StoreError
from .events import Event, Fact
from .times import format_utc

SCHEMA_VERSION = "1"
LOCK_TIMEOUT_SECONDS = float(os.environ.get("LEDGER_LOCK_TIMEOUT", "60"))
_PG_LOCK_ID = 0x1ED6E2  # the advisory lock every PostgreSQL writer takes
_BEGIN_WRITING = {  # a write transaction begins by taking the write lock
    "sqlite": "BEGIN IMMEDIATE",
    "postgresql": f"BEGIN; SELECT pg_advisory_xact_lock({_PG_LOCK_ID})",  # one round trip (simple query protocol)
}


# 64-bit on PostgreSQL; exactly INTEGER on SQLite, where only that type makes the key the rowid.
SEQUENCE = BigInteger().with_variant(Integer(), "sqlite")


class EventRow(SQLModel, table=True):
    __tablename__ = "events"
    # Two indexes besides the sequence, a measured choice (benchmarks/): the unique fact key leads with the
    # subject, so it also finds an observation's events; the paper index holds paper-level rows only.
    __table_args__ = (
        UniqueConstraint("subject", "kind", "effective_key", name="events_one_fact"),
        Index("events_paper", "paper", "seq", sqlite_where=text("paper IS NOT NULL"),
              postgresql_where=text("paper IS NOT NULL")),
    )
    seq: int = Field(primary_key=True, sa_type=SEQUENCE, sa_column_kwargs={"autoincrement": False})
    kind: str
    subject: str  # the observation id for observation kinds; the paper (and source) otherwise
    paper: str | None = None  # set for paper-level kinds only
    effective_at: str
    effective_key: str  # UTC, microseconds: sorts as text
    recorded_at: str  # UTC, microseconds, written by the ledger: sorts as text
    payload: bytes = Field(sa_type=LargeBinary)
    entry_hash: bytes = Field(sa_type=LargeBinary)
    chain_hash: bytes = Field(sa_type=LargeBinary)


class ObservationPaper(SQLModel, table=True):
    """Which papers' records an observation appears in: lets a rebuild read one paper's events only."""

    __tablename__ = "observation_papers"
    __table_args__ = {"sqlite_with_rowid": False}  # the key is the row: one B-tree per insert, not two
    paper: str = Field(primary_key=True)
    observation: str = Field(primary_key=True)


class MerkleNode(SQLModel, table=True):
    """Every perfect subtree of 16 or more leaves of the RFC 9162 tree over the log: (level, index) covers
    2**level leaves. Smaller ones are re-computed from their block's event rows (`Session.tree_nodes`), so
    an append writes one node per 8 events, amortized, instead of two per event (benchmarks/RESULTS.md)."""

    __tablename__ = "merkle_nodes"
    __table_args__ = {"sqlite_with_rowid": False}  # the key is the row: one B-tree per insert, not two
    level: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    idx: int = Field(primary_key=True, sa_type=SEQUENCE, sa_column_kwargs={"autoincrement": False})
    hash: bytes = Field(sa_type=LargeBinary)


class LedgerMeta(SQLModel, table=True):
    __tablename__ = "ledger_meta"
    key: str = Field(primary_key=True)
    value: str


_SQLITE_GUARDS = (
    """CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
       BEGIN SELECT RAISE(ABORT, 'events are append-only: UPDATE refused'); END""",
    """CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
       BEGIN SELECT RAISE(ABORT, 'events are append-only: DELETE refused'); END""",
    """CREATE TRIGGER events_gap_free BEFORE INSERT ON events
       WHEN NEW.seq IS NOT (SELECT COALESCE(MAX(seq), 0) + 1 FROM events)
       BEGIN SELECT RAISE(ABORT, 'events must be appended in sequence'); END""",
    """CREATE TRIGGER observation_papers_append_only BEFORE DELETE ON observation_papers
       BEGIN SELECT RAISE(ABORT, 'observation_papers is append-only'); END""",
    """CREATE TRIGGER merkle_nodes_no_update BEFORE UPDATE ON merkle_nodes
       BEGIN SELECT RAISE(ABORT, 'merkle_nodes is append-only'); END""",
    """CREATE TRIGGER merkle_nodes_no_delete BEFORE DELETE ON merkle_nodes
       BEGIN SELECT RAISE(ABORT, 'merkle_nodes is append-only'); END""",
)
_POSTGRES_GUARDS = (
    """CREATE FUNCTION ledger_refuse_rewrite() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN RAISE EXCEPTION 'events are append-only: %% refused', TG_OP; END $$""",  # %% : DBAPI paramstyle
    # Checked once per statement over the rows it inserted (a transition table), not once per row: the new
    # seqs are contiguous and the first follows an existing event (or is 1). With seq unique, the log stays
    # exactly 1..n.
    """CREATE FUNCTION ledger_gap_free() RETURNS trigger LANGUAGE plpgsql AS $$
       DECLARE lo bigint; hi bigint; n bigint;
       BEGIN
         SELECT MIN(seq), MAX(seq), COUNT(*) INTO lo, hi, n FROM new_events;
         IF n > 0 AND (hi - lo + 1 <> n OR NOT (lo = 1 OR EXISTS (SELECT 1 FROM events WHERE seq = lo - 1))) THEN
           RAISE EXCEPTION 'events must be appended in sequence';
         END IF;
         RETURN NULL;
       END $$""",
    """CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
       FOR EACH ROW EXECUTE FUNCTION ledger_refuse_rewrite()""",
    """CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
       FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_rewrite()""",
    """CREATE TRIGGER events_gap_free AFTER INSERT ON events REFERENCING NEW TABLE AS new_events
       FOR EACH STATEMENT EXECUTE FUNCTION ledger_gap_free()""",
    """CREATE TRIGGER observation_papers_append_only BEFORE UPDATE OR DELETE ON observation_papers
       FOR EACH ROW EXECUTE FUNCTION ledger_refuse_rewrite()""",
    """CREATE TRIGGER merkle_nodes_append_only BEFORE UPDATE OR DELETE ON merkle_nodes
       FOR EACH ROW EXECUTE FUNCTION ledger_refuse_rewrite()""",
)

# Appends look nothing up first: the unique key on (subject, kind, effective_key) is what refuses a repeated
# fact. A writer makes sure some unique, complete index on exactly those columns is still there.
_FACT_KEY_PRESENT = {
    "sqlite": """SELECT 1 FROM pragma_index_list('events') AS l JOIN pragma_index_info(l.name) AS i
                 WHERE l."unique" AND NOT l.partial GROUP BY l.name
                 HAVING COUNT(*) = 3 AND SUM(i.name IN ('subject', 'kind', 'effective_key')) = 3""",
    "postgresql": """SELECT 1 FROM pg_index x WHERE x.indrelid = 'events'::regclass AND x.indisunique
                     AND x.indisvalid AND x.indpred IS NULL AND x.indnkeyatts = 3
                     AND (SELECT array_agg(a.attname::text ORDER BY a.attname) FROM pg_attribute a
                          WHERE a.attrelid = x.indrelid AND a.attnum = ANY(x.indkey)) = ARRAY['effective_key', 'kind', 'subject']""",
}
_COLUMNS = "seq, kind, subject, effective_at, effective_key, recorded_at, payload"
_ENTRY_COLUMNS = "seq, kind, effective_at, recorded_at, payload, entry_hash, chain_hash"
# SQLite returns whatever type a hand edit stored; CAST makes every payload and hash bytes (a number as its
# text, which will not re-compute), as PostgreSQL's bytea always is, so rows become Entries without checks.
_SQLITE_ENTRY_COLUMNS = ("seq, kind, effective_at, recorded_at, CAST(payload AS BLOB), CAST(entry_hash AS BLOB), "
                         "CAST(chain_hash AS BLOB)")
_EVENT_COLUMNS = ("seq", "kind", "subject", "paper", "effective_at", "effective_key", "recorded_at", "payload",
                  "entry_hash", "chain_hash")
_OBSERVATION_KINDS = "('citation.observed', 'resolution.recorded', 'notice.checked')"
_KEYS_PER_QUERY = 300  # 900 parameters: under every SQLite build's limit
# Merkle subtrees of 16 leaves and more are stored as appended; smaller ones are re-computed from their
# block's event rows when a proof needs them. Storing every level cost an append about one more row.
_STORED_FROM_LEVEL = 4


def now_utc() -> str:
    return format_utc(datetime.now(timezone.utc))


def database_url(location: str) -> str:
    """`--db` takes a SQLAlchemy URL or a path to a SQLite file."""
    return location if "://" in location else f"sqlite:///{location}"


def _sqlite_path(url: str) -> str | None:
    if not url.startswith("sqlite:///"):
        return None
    path = url[len("sqlite:///"):]
    return None if path in ("", ":memory:") else path


@cache
def _column_types(table: str, columns: tuple[str, ...], dialect) -> list[str]:
    """The database types of a table's columns, from the SQLModel tables (compiled once: ~50 us each time)."""
    columns_of = SQLModel.metadata.tables[table].columns
    return [columns_of[name].type.compile(dialect=dialect).lower() for name in columns]


def _fact(r) -> Fact:
    return Fact(r[0], r[1], r[2], r[3], r[4], r[5], _blob(r[6]))


class Session:
    """One DBAPI connection's cursor, counting statements; `?` placeholders on every backend."""

    def __init__(self, store: "Store", connection):
        self.store = store
        self.cursor = connection.cursor()
        self.postgres = store.dialect == "postgresql"
        self.entry_columns = _ENTRY_COLUMNS if self.postgres else _SQLITE_ENTRY_COLUMNS

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.postgres else sql

    def execute(self, sql: str, params: tuple | list = ()):
        self.store.statements += 1
        self.cursor.execute(self._sql(sql), params)
        return self.cursor

    def executemany(self, sql: str, rows: list) -> None:
        self.store.statements += 1
        self.cursor.executemany(self._sql(sql), rows)

    def insert(self, table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
        """Insert rows in one statement: COPY on PostgreSQL (one round trip for the batch; triggers fire as
        for INSERT), executemany on SQLite (in process: no round trips to save)."""
        self.store.statements += 1
        if self.postgres:
            # Binary COPY (bytea travels as bytes, not hex text)
            with self.cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(_column_types(table, columns, self.store.engine.dialect))
                for row in rows:
                    copy.write_row(row)
        else:
            self.cursor.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
                                    f"({', '.join('?' * len(columns))})", rows)

    def head(self) -> tuple[int, bytes, str | None]:
        row = self.execute("SELECT seq, chain_hash, recorded_at FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        return (0, GENESIS, None) if row is None else (row[0], _blob(row[1]), row[2])

    def entry(self, seq: int) -> Entry:
        return Entry._make(self.execute(f"SELECT {self.entry_columns} FROM events WHERE seq = ?", (seq,)).fetchone())

    def tree_nodes(self, wanted: list[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
        """Merkle nodes by (level, index), in one statement: stored ones for level >= 4, and the smaller
        ones re-computed from the (at most 16) event rows of their block. May return more nodes than asked
        for: the block's other small subtrees."""
        stored = [pair for pair in wanted if pair[0] >= _STORED_FROM_LEVEL]
        blocks = sorted({index >> (_STORED_FROM_LEVEL - level) for level, index in wanted if level < _STORED_FROM_LEVEL})
        width = 1 << _STORED_FROM_LEVEL
        seqs = [seq for block in blocks for seq in range(block * width + 1, (block + 1) * width + 1)]
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

    def node_source(self):
        """A Merkle node source for proofs: each node read once, then remembered."""
        cache: dict[tuple[int, int], bytes] = {}

        def node(level: int, index: int) -> bytes:
            if (level, index) not in cache:
                cache.update(self.tree_nodes([(level, index)]))
                if (level, index) not in cache:
                    raise IntegrityError(f"the ledger has no Merkle node ({level}, {index})")
            return cache[(level, index)]

        return node

    def paper_facts(self, paper: str, known_at: str | None = None) -> list[Fact]:
        """Every event of one paper's record, in ledger order, in one indexed statement."""
        sql = (f"SELECT {_COLUMNS} FROM events WHERE (paper = ? OR subject IN "
               "(SELECT observation FROM observation_papers WHERE paper = ?))")
        params: list = [paper, paper]
        if known_at is not None:
            sql += " AND recorded_at <= ?"
            params.append(known_at)
        return [_fact(r) for r in self.execute(sql + " ORDER BY seq", params).fetchall()]


class Store:
    """A ledger database. Open an existing one with `Store.open`, create one with `Store.create`."""

    def __init__(self, url: str, engine: Engine):
        self.url = url
        self.engine = engine
        self.dialect = engine.dialect.name
        self.read_only: str | None = None  # set for an exported log standing in for the database
        # The Merkle tree's right edge as this process left it, keyed by the head it left: when no other
        # writer appended since (same seq and chain hash), the next append need not read it again.
        self._edge: tuple[int, bytes, dict[int, bytes]] | None = None
        self.statements = 0  # SQL statements sent, for `replay --stats` and the statement budget test
        self._held = self._session = None  # the DBAPI connection every operation uses, opened on first use
        self._fact_key_checked = False  # by the first write of this Store

    # -- opening -------------------------------------------------------------------------------------
    @classmethod
    def _engine(cls, url: str) -> Engine:
        try:
            if url.startswith("sqlite"):
                engine = create_engine(url, connect_args={"timeout": LOCK_TIMEOUT_SECONDS})

                @event.listens_for(engine, "connect")
                def _sqlite_connect(dbapi_connection, _record):
                    dbapi_connection.isolation_level = None  # transactions are begun explicitly
                    cursor = dbapi_connection.cursor()
                    cursor.execute("PRAGMA journal_mode=WAL")
                    # FULL: a committed import survives power loss, not only a process crash.
                    cursor.execute(f"PRAGMA synchronous={os.environ.get('LEDGER_SQLITE_SYNCHRONOUS', 'FULL')}")
                    cursor.close()
            else:
                engine = create_engine(url)
        except Exception as exc:  # bad URL, missing driver
            raise InputError(f"--db {url}: cannot open: {exc}") from None
        return engine

    @classmethod
    def create(cls, location: str) -> "Store":
        url = database_url(location)
        path = _sqlite_path(url)
        if path is not None and os.path.exists(path):
            raise InputError(f"{path}: already exists; a ledger is created only once")
        store = cls(url, cls._engine(url))
        with store._failures("create"):
            with store.engine.connect() as conn, conn.begin():
                exists = conn.exec_driver_sql(
                    "SELECT 1 FROM information_schema.tables WHERE table_name = 'ledger_meta' "
                    "AND table_schema = current_schema()"
                ).first() if store.dialect == "postgresql" else None
                if exists:
                    raise InputError(f"{url}: already holds a ledger")
                SQLModel.metadata.create_all(conn, tables=[EventRow.__table__, ObservationPaper.__table__,
                                                           MerkleNode.__table__, LedgerMeta.__table__])
                for ddl in _SQLITE_GUARDS if store.dialect == "sqlite" else _POSTGRES_GUARDS:
                    conn.exec_driver_sql(ddl)
                conn.execute(LedgerMeta.__table__.insert(), [{"key": "schema_version", "value": SCHEMA_VERSION}])
        return store

    @classmethod
    def open(cls, location: str) -> "Store":
        """Open an existing ledger; never creates one (a typo in --db must not make a new database)."""
        url = database_url(location)
        path = _sqlite_path(url)
        if path is not None and not os.path.isfile(path):
            raise InputError(f"{path}: no ledger here; create one with `ledger init`")
        store = cls(url, cls._engine(url))
        store.check_version()
        return store

    def check_version(self) -> None:
        dbapi_error = self.engine.dialect.dbapi.Error
        with self.reading() as session:
            try:
                row = session.execute("SELECT value FROM ledger_meta WHERE key = 'schema_version'").fetchone()
            except dbapi_error as exc:
                if _is_lock(exc) or "not a database" in str(exc):
                    raise
                raise InputError(f"{self.url}: not a ledger (no ledger_meta table)") from None
        if row is None or row[0] != SCHEMA_VERSION:
            found = "none" if row is None else row[0]
            raise InputError(f"{self.url}: ledger schema version {found}, this ledger reads version {SCHEMA_VERSION}")

    def close(self) -> None:
        if self._held is not None:
            self._held.close()
            self._held = self._session = None
        self.engine.dispose()

    @contextmanager
    def _failures(self, doing: str) -> Iterator[None]:
        """Turn driver errors into the ledger's error families (exit 3 unless it is the user's input)."""
        try:
            yield
        except (DBAPIError, self.engine.dialect.dbapi.Error) as exc:
            original = getattr(exc, "orig", None) or exc
            message = (str(original).strip().splitlines() or [type(original).__name__])[0]
            if _is_lock(original):
                raise StoreError(f"{self.url}: locked by another writer for more than "
                                 f"{LOCK_TIMEOUT_SECONDS:g}s ({doing})") from None
            if "not a database" in message:
                raise InputError(f"{self.url}: not a ledger ({message})") from None
            raise StoreError(f"{self.url}: cannot {doing}: {message}") from None

    @contextmanager
    def _connection(self, doing: str, write: bool) -> Iterator[Session]:
        """The store's DBAPI connection, held from first use to `close` (a pool checkout per operation cost
        a single-event append more than its statements; benchmarks/). Reads run in autocommit (each is one
        statement, atomic by itself); a write is one transaction holding the write lock, committed at the
        end or rolled back. Operations do not nest."""
        with self._failures(doing):
            if self._held is None:
                self._held = self.engine.raw_connection()
                self._session = Session(self, self._held)
                if self.dialect == "postgresql":  # transactions are begun explicitly, as on SQLite
                    self._held.driver_connection.autocommit = True
                    self._session.execute(f"SET lock_timeout = '{int(LOCK_TIMEOUT_SECONDS * 1000)}ms'")
            connection, session = self._held, self._session
            try:
                if write:
                    session.execute(_BEGIN_WRITING[self.dialect])
                yield session
                if write:
                    connection.commit()
            except BaseException:
                self._held = self._session = None  # after any error: rolled back, closed, opened afresh next time
                try:
                    connection.rollback()
                finally:
                    connection.close()
                raise

    # -- reading -------------------------------------------------------------------------------------
    @contextmanager
    def reading(self) -> Iterator[Session]:
        """Reads never take the write lock; each read method is one statement."""
        with self._connection("read", write=False) as session:
            yield session

    def head(self) -> tuple[int, bytes, str | None]:
        """(seq, chain hash, recorded time) of the last event; (0, 32 zero bytes, None) when empty."""
        with self.reading() as session:
            return session.head()

    def paper_facts(self, paper: str, known_at: str | None = None) -> list[Fact]:
        with self.reading() as session:
            return session.paper_facts(paper, known_at)

    def observation_facts(self, observation: str) -> list[Fact]:
        with self.reading() as session:
            rows = session.execute(f"SELECT {_COLUMNS} FROM events WHERE subject = ? AND kind IN "
                                   f"{_OBSERVATION_KINDS} ORDER BY seq", (observation,)).fetchall()
        return [_fact(r) for r in rows]

    def papers(self, as_of_key: str, known_at: str | None = None, batch: int = 500) -> Iterator[str]:
        """Papers with a snapshot effective by `as_of_key` (and recorded by `known_at`), sorted, read in
        keyset pages so that replaying every paper never holds the whole list."""
        sql = ("SELECT DISTINCT paper FROM events WHERE kind = 'paper.snapshot' AND effective_key <= ? "
               "AND paper > ?")
        if known_at is not None:
            sql += " AND recorded_at <= ?"
        sql += " ORDER BY paper LIMIT ?"
        after = ""
        while True:
            params = [as_of_key, after] + ([known_at] if known_at is not None else []) + [batch]
            with self.reading() as session:
                page = [row[0] for row in session.execute(sql, params).fetchall()]
            yield from page
            if len(page) < batch:
                return
            after = page[-1]
            del page  # before the next page is read: one page held at a time

    def entries(self, batch: int = 2000) -> Iterator[Entry]:
        """Every entry in ledger order, read in pages by seq so memory stays flat."""
        after = 0
        while True:
            with self.reading() as session:
                rows = session.execute(f"SELECT {session.entry_columns} FROM events WHERE seq > ? ORDER BY seq "
                                       "LIMIT ?", (after, batch)).fetchall()
            yield from map(Entry._make, rows)
            if len(rows) < batch:
                return
            after = rows[-1][0]
            del rows  # before the next page is read: one page held at a time

    # -- writing -------------------------------------------------------------------------------------
    @contextmanager
    def writing(self) -> Iterator["Writer"]:
        """One all-or-nothing append transaction holding the write lock."""
        if self.read_only:
            raise InputError(f"{self.read_only}: an exported log is read-only; import it into a ledger instead")
        with self._connection("append", write=True) as session:
            if not self._fact_key_checked:
                if session.execute(_FACT_KEY_PRESENT[self.dialect]).fetchone() is None:
                    raise StoreError(f"{self.url}: the events table lost its unique fact key (subject, kind, "
                                     "effective_key): appends could no longer refuse a repeated fact; nothing appended")
                self._fact_key_checked = True
            edge, self._edge = self._edge, None  # until this transaction commits
            writer = Writer(session, edge)
            yield writer
        self._edge = (writer.seq, writer.chain, writer.frontier)


class FactStored(StoreError):
    """An append met a fact the ledger holds already (same subject, kind and effective time; the unique key
    events_one_fact). The transaction cannot go on (rows before the refused one may be in it): let it roll
    back; the importer then runs again, looking facts up first. Exit 3 should one reach the command line."""


class Writer:
    """Appends inside one transaction. The chain continues from the head read under the lock."""

    def __init__(self, session: Session, edge: tuple[int, bytes, dict[int, bytes]] | None = None):
        self.session = session
        self.seq, self.chain, self.last_recorded = session.head()
        # One recorded time per import, never earlier than the head's: recorded time follows ledger order,
        # so "known at K" is always a prefix of the log.
        now = now_utc()
        self.recorded_at = now if self.last_recorded is None or now > self.last_recorded else self.last_recorded
        # The right edge of the Merkle tree: the perfect subtrees that new leaves combine with.
        if edge is not None and edge[0] == self.seq and edge[1] == self.chain:
            self.frontier = edge[2]  # handed over: the store forgets it until this transaction commits
        else:
            wanted = frontier_nodes(self.seq)
            stored = session.tree_nodes(wanted)
            self.frontier = {level: stored[(level, index)] for level, index in wanted}

    def paper_facts(self, paper: str) -> list[Fact]:
        return self.session.paper_facts(paper)

    def existing(self, events: Iterable[Event]) -> dict[tuple[str, str, str], tuple[int, bytes]]:
        """For each (kind, subject, effective key) already stored: (seq, payload). Looked up by exact key
        through the unique index, one indexed probe each; the importer asks only after a FactStored."""
        keys = sorted({(e.subject, e.kind, e.effective_key) for e in events})
        probe = ("SELECT e.kind, e.subject, e.effective_key, e.seq, e.payload FROM {keys} JOIN events e "
                 "ON e.subject = k.subject AND e.kind = k.kind AND e.effective_key = k.effective_key")
        rows = []
        if self.session.postgres and keys:
            # One query text for any number of keys, so PostgreSQL plans it once (psycopg prepares it).
            rows = self.session.execute(
                probe.format(keys="unnest(?::text[], ?::text[], ?::text[]) AS k(subject, kind, effective_key)"),
                tuple(list(column) for column in zip(*keys))).fetchall()
        elif keys:
            for start in range(0, len(keys), _KEYS_PER_QUERY):
                chunk = keys[start:start + _KEYS_PER_QUERY]
                values = ", ".join(["(?, ?, ?)"] * len(chunk))
                # A join probes the unique index once per key; `(a, b, c) IN (VALUES ...)` scans it in SQLite.
                rows += self.session.execute(f"WITH k(subject, kind, effective_key) AS (VALUES {values}) "
                                             + probe.format(keys="k"), [v for key in chunk for v in key]).fetchall()
        return {(r[0], r[1], r[2]): (r[3], _blob(r[4])) for r in rows}

    def append(self, events: list[Event]) -> list[Entry]:
        """Append events, each a distinct fact, with the chain continued; returns their entries. Raises
        FactStored when one of them is stored already."""
        seq, chain, recorded_at = self.seq, self.chain, self.recorded_at
        entries = []
        for ev in events:
            seq += 1
            data = entry_bytes(seq, ev.kind, ev.effective_at, recorded_at, ev.payload)
            digest = blake3(data).digest()
            chain = link(chain, digest)
            entries.append((Entry(seq, ev.kind, ev.effective_at, recorded_at, ev.payload, digest, chain), ev, data))
        self.append_entries(entries)
        return [entry for entry, _, _ in entries]

    def append_entries(self, entries: list[tuple[Entry, Event, bytes]]) -> None:
        """Append entries whose hashes are already computed: new ones (`append`), or lines of an exported log
        the importer has re-checked. Each comes with its entry bytes, which are its Merkle leaf. Raises
        FactStored when a fact is already stored."""
        rows, nodes = [], []
        for entry, ev, data in entries:
            rows.append((entry.seq, ev.kind, ev.subject, ev.paper, ev.effective_at, ev.effective_key,
                         entry.recorded_at, ev.payload, entry.entry_hash, entry.chain_hash))
            grow(self.frontier, entry.seq - 1, leaf_hash(data), nodes, _STORED_FROM_LEVEL)
        self._insert(rows, [ev for _, ev, _ in entries], nodes)
        if entries:
            last = entries[-1][0]
            self.seq, self.chain, self.last_recorded = last.seq, last.chain_hash, last.recorded_at
            # New facts later in this transaction are never recorded before copied ones.
            self.recorded_at = max(self.recorded_at, last.recorded_at)

    def _insert(self, rows: list[tuple], events: list[Event], nodes: list[tuple[int, int, bytes]]) -> None:
        if rows:
            try:  # the unique fact key decides, not a look-up first: new facts, the common case, cost no probe
                self.session.insert("events", _EVENT_COLUMNS, rows)
            except self.session.store.engine.dialect.dbapi.IntegrityError as exc:
                if _repeats_a_fact(exc):
                    raise FactStored("a fact of this append is already stored (same subject, kind and effective "
                                     "time)") from None
                raise
        links = [(p, ev.subject) for ev in events for p in ev.papers]  # only citations name papers
        if self.session.postgres:
            if nodes or links:  # column arrays, both tables in one statement: one round trip
                columns = (tuple(map(list, zip(*nodes))) if nodes else ([], [], [])) + \
                          (tuple(map(list, zip(*links))) if links else ([], []))
                self.session.execute(
                    "WITH nodes AS (INSERT INTO merkle_nodes (level, idx, hash) SELECT * FROM unnest(?::integer[], "
                    "?::bigint[], ?::bytea[])) INSERT INTO observation_papers (paper, observation) SELECT * FROM "
                    "unnest(?::text[], ?::text[]) ON CONFLICT DO NOTHING", columns)
        else:
            if nodes:
                self.session.insert("merkle_nodes", ("level", "idx", "hash"), nodes)
            if links:
                self.session.executemany("INSERT OR IGNORE INTO observation_papers (paper, observation) "
                                         "VALUES (?, ?)", links)


def _blob(value: object) -> bytes:
    # A row edited by hand in SQLite can come back as TEXT, a number or NULL; verification must see it (as
    # bytes that will not re-compute), not crash on it, nor take an integer n for n zero bytes.
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return (value if isinstance(value, str) else repr(value)).encode("utf-8", "surrogateescape")


def _repeats_a_fact(exc: Exception) -> bool:
    """Whether an insert into events broke a unique key other than seq's: the fact key, under any name."""
    diag = getattr(exc, "diag", None)  # psycopg: SQLSTATE and constraint name, whatever the server's language
    if diag is not None:
        return getattr(exc, "sqlstate", None) == "23505" and diag.constraint_name != "events_pkey"
    message = str(exc)  # SQLite names the columns
    return message.startswith("UNIQUE constraint failed: events.") and "events.seq" not in message


def _is_lock(exc: BaseException) -> bool:
    message = str(exc).lower()
    return "database is locked" in message or "lock timeout" in message or "could not obtain lock" in message
