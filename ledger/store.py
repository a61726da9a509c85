"""Where events live: SQLModel tables on SQLite (the embedded default) or PostgreSQL (psycopg 3).

One interface for every backend, proven by one contract test suite. The database, not Python, guards
the log: a trigger refuses any insert that is not seq = max + 1, and UPDATE, DELETE (and TRUNCATE on
PostgreSQL) of an event are refused. Appends are serialized by a write lock taken before the head is read
(SQLite BEGIN IMMEDIATE, a PostgreSQL advisory lock), so concurrent writers wait and never fork the chain.
This module never decides what a fact means; it stores and returns rows.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Iterable, Iterator

from sqlalchemy import Index, LargeBinary, UniqueConstraint, bindparam, create_engine, event, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError
from sqlmodel import Field, SQLModel

from .chain import GENESIS, Entry, entry_hash, link
from .errors import InputError, StoreError
from .events import Event, Fact
from .times import format_utc

SCHEMA_VERSION = "1"
LOCK_TIMEOUT_SECONDS = float(os.environ.get("LEDGER_LOCK_TIMEOUT", "60"))
_PG_LOCK_ID = 0x1ED6E2  # the advisory lock every PostgreSQL writer takes


class EventRow(SQLModel, table=True):
    __tablename__ = "events"
    __table_args__ = (
        UniqueConstraint("kind", "subject", "effective_key", name="events_one_fact"),
        Index("events_paper", "paper", "seq"),
        Index("events_observation", "observation", "seq"),
    )
    seq: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    kind: str
    subject: str
    paper: str | None = None
    observation: str | None = None
    effective_at: str
    effective_key: str  # UTC, microseconds: sorts as text
    recorded_at: str  # UTC, microseconds, written by the ledger: sorts as text
    payload: bytes = Field(sa_type=LargeBinary)
    entry_hash: bytes = Field(sa_type=LargeBinary)
    chain_hash: bytes = Field(sa_type=LargeBinary)


class ObservationPaper(SQLModel, table=True):
    """Which papers' records an observation appears in: lets a rebuild read one paper's events only."""

    __tablename__ = "observation_papers"
    paper: str = Field(primary_key=True)
    observation: str = Field(primary_key=True)


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
)
_POSTGRES_GUARDS = (
    """CREATE FUNCTION ledger_refuse_rewrite() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN RAISE EXCEPTION 'events are append-only: %% refused', TG_OP; END $$""",  # %% : DBAPI paramstyle
    """CREATE FUNCTION ledger_gap_free() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF NEW.seq IS DISTINCT FROM (SELECT COALESCE(MAX(seq), 0) + 1 FROM events) THEN
           RAISE EXCEPTION 'events must be appended in sequence';
         END IF;
         RETURN NEW;
       END $$""",
    """CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
       FOR EACH ROW EXECUTE FUNCTION ledger_refuse_rewrite()""",
    """CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
       FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_rewrite()""",
    """CREATE TRIGGER events_gap_free BEFORE INSERT ON events
       FOR EACH ROW EXECUTE FUNCTION ledger_gap_free()""",
    """CREATE TRIGGER observation_papers_append_only BEFORE UPDATE OR DELETE ON observation_papers
       FOR EACH ROW EXECUTE FUNCTION ledger_refuse_rewrite()""",
)

_EVENTS = EventRow.__table__
_COLUMNS = "seq, kind, effective_at, effective_key, recorded_at, payload"
_ENTRY_COLUMNS = "seq, kind, effective_at, recorded_at, payload, entry_hash, chain_hash"


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


class Store:
    """A ledger database. Open an existing one with `Store.open`, create one with `Store.create`."""

    def __init__(self, url: str, engine: Engine):
        self.url = url
        self.engine = engine
        self.dialect = engine.dialect.name
        self.read_only: str | None = None  # set for an exported log standing in for the database
        self.statements = 0  # SQL statements sent, for `replay --stats` and the statement budget test

        @event.listens_for(engine, "before_cursor_execute")
        def _count(*_args):
            self.statements += 1

    # -- opening -------------------------------------------------------------------------------------
    @classmethod
    def _engine(cls, url: str) -> Engine:
        try:
            if url.startswith("sqlite"):
                engine = create_engine(url, connect_args={"timeout": LOCK_TIMEOUT_SECONDS})

                @event.listens_for(engine, "connect")
                def _sqlite_connect(dbapi_connection, _record):
                    dbapi_connection.isolation_level = None  # transactions are begun explicitly below
                    cursor = dbapi_connection.cursor()
                    cursor.execute("PRAGMA journal_mode=WAL")
                    # FULL: a committed import survives power loss, not only a process crash.
                    cursor.execute(f"PRAGMA synchronous={os.environ.get('LEDGER_SQLITE_SYNCHRONOUS', 'FULL')}")
                    cursor.close()

                @event.listens_for(engine, "begin")
                def _sqlite_begin(conn):
                    conn.exec_driver_sql(conn.get_execution_options().get("sqlite_begin", "BEGIN"))
            else:
                engine = create_engine(url, pool_pre_ping=False)
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
                SQLModel.metadata.create_all(conn, tables=[_EVENTS, ObservationPaper.__table__, LedgerMeta.__table__])
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
        with self._failures("open"), self.engine.connect() as conn:
            try:
                row = conn.exec_driver_sql("SELECT value FROM ledger_meta WHERE key = 'schema_version'").first()
            except DBAPIError as exc:
                if _is_lock(exc):
                    raise
                raise InputError(f"{self.url}: not a ledger (no ledger_meta table)") from None
        if row is None or row[0] != SCHEMA_VERSION:
            found = "none" if row is None else row[0]
            raise InputError(f"{self.url}: ledger schema version {found}, this ledger reads version {SCHEMA_VERSION}")

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def _failures(self, doing: str) -> Iterator[None]:
        """Turn driver errors into the ledger's error families (exit 3 unless it is the user's input)."""
        try:
            yield
        except (InputError, StoreError):
            raise
        except DBAPIError as exc:
            message = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
            if _is_lock(exc):
                raise StoreError(f"{self.url}: locked by another writer for more than "
                                 f"{LOCK_TIMEOUT_SECONDS:g}s ({doing})") from None
            if "not a database" in message:
                raise InputError(f"{self.url}: not a ledger ({message})") from None
            raise StoreError(f"{self.url}: cannot {doing}: {message}") from None

    # -- reading -------------------------------------------------------------------------------------
    @contextmanager
    def reading(self) -> Iterator[Connection]:
        with self._failures("read"), self.engine.connect() as conn, conn.begin():
            yield conn

    def head(self, conn: Connection | None = None) -> tuple[int, bytes, str | None]:
        """(seq, chain hash, recorded time) of the last event; (0, 32 zero bytes, None) when empty."""
        if conn is None:
            with self.reading() as conn:
                return self.head(conn)
        row = conn.exec_driver_sql(
            "SELECT seq, chain_hash, recorded_at FROM events ORDER BY seq DESC LIMIT 1"
        ).first()
        return (0, GENESIS, None) if row is None else (row[0], _blob(row[1]), row[2])

    def paper_facts(self, paper: str, known_at: str | None = None, conn: Connection | None = None) -> list[Fact]:
        """Every event of one paper's record, in ledger order, in one indexed statement."""
        if conn is None:
            with self.reading() as conn:
                return self.paper_facts(paper, known_at, conn)
        query = (f"SELECT {_COLUMNS} FROM events WHERE (paper = :p OR observation IN "
                 "(SELECT observation FROM observation_papers WHERE paper = :p))")
        params = {"p": paper}
        if known_at is not None:
            query += " AND recorded_at <= :k"
            params["k"] = known_at
        rows = conn.execute(text(query + " ORDER BY seq"), params)
        return [Fact(r[0], r[1], r[2], r[3], r[4], _blob(r[5])) for r in rows]

    def observation_facts(self, observation: str) -> list[Fact]:
        with self.reading() as conn:
            rows = conn.execute(text(f"SELECT {_COLUMNS} FROM events WHERE observation = :o ORDER BY seq"),
                                {"o": observation})
            return [Fact(r[0], r[1], r[2], r[3], r[4], _blob(r[5])) for r in rows]

    def papers(self, as_of_key: str, known_at: str | None = None, batch: int = 500) -> Iterator[str]:
        """Papers with a snapshot effective by `as_of_key` (and recorded by `known_at`), sorted, read in
        keyset pages so that replaying every paper never holds the whole list."""
        query = ("SELECT DISTINCT paper FROM events WHERE kind = 'paper.snapshot' AND effective_key <= :t "
                 "AND paper > :after")
        params = {"t": as_of_key, "after": "", "n": batch}
        if known_at is not None:
            query += " AND recorded_at <= :k"
            params["k"] = known_at
        while True:
            with self.reading() as conn:
                page = [row[0] for row in conn.execute(text(query + " ORDER BY paper LIMIT :n"), params)]
            yield from page
            if len(page) < batch:
                return
            params["after"] = page[-1]

    def entries(self, batch: int = 2000) -> Iterator[Entry]:
        """Every entry in ledger order, read in batches by seq so memory stays flat."""
        after = 0
        while True:
            with self.reading() as conn:
                rows = conn.execute(
                    text(f"SELECT {_ENTRY_COLUMNS} FROM events WHERE seq > :a ORDER BY seq LIMIT :n"),
                    {"a": after, "n": batch},
                ).all()
            for r in rows:
                yield Entry(r[0], r[1], r[2], r[3], _blob(r[4]), _blob(r[5]), _blob(r[6]))
            if len(rows) < batch:
                return
            after = rows[-1][0]

    # -- writing -------------------------------------------------------------------------------------
    @contextmanager
    def writing(self) -> Iterator["Writer"]:
        """One all-or-nothing append transaction holding the write lock."""
        if self.read_only:
            raise InputError(f"{self.read_only}: an exported log is read-only; import it into a ledger instead")
        with self._failures("append"), self.engine.connect() as conn:
            if self.dialect == "sqlite":
                conn = conn.execution_options(sqlite_begin="BEGIN IMMEDIATE")
            with conn.begin():
                if self.dialect == "postgresql":
                    conn.exec_driver_sql(f"SET LOCAL lock_timeout = '{int(LOCK_TIMEOUT_SECONDS * 1000)}ms'")
                    conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_PG_LOCK_ID})")
                yield Writer(self, conn)


class Writer:
    """Appends inside one transaction. The chain continues from the head read under the lock."""

    def __init__(self, store: Store, conn: Connection):
        self.store = store
        self.conn = conn
        self.seq, self.chain, last_recorded = store.head(conn)
        # One recorded time per import, never earlier than the head's: recorded time follows ledger order,
        # so "known at K" is always a prefix of the log.
        now = now_utc()
        self.recorded_at = now if last_recorded is None or now > last_recorded else last_recorded

    def paper_facts(self, paper: str) -> list[Fact]:
        return self.store.paper_facts(paper, conn=self.conn)

    def entry(self, seq: int) -> Entry:
        row = self.conn.execute(text(f"SELECT {_ENTRY_COLUMNS} FROM events WHERE seq = :s"), {"s": seq}).one()
        return Entry(row[0], row[1], row[2], row[3], _blob(row[4]), _blob(row[5]), _blob(row[6]))

    def existing(self, events: Iterable[Event]) -> dict[tuple[str, str, str], tuple[int, bytes]]:
        """For each (kind, subject, effective key) already stored: (seq, payload)."""
        subjects = sorted({e.subject for e in events})
        found: dict[tuple[str, str, str], tuple[int, bytes]] = {}
        query = text("SELECT seq, kind, subject, effective_key, payload FROM events WHERE subject IN :s"
                     ).bindparams(bindparam("s", expanding=True))
        for start in range(0, len(subjects), 500):
            for row in self.conn.execute(query, {"s": subjects[start:start + 500]}):
                found[(row[1], row[2], row[3])] = (row[0], _blob(row[4]))
        return found

    def append(self, events: list[Event]) -> list[Entry]:
        """Append new events (already de-duplicated) with the chain continued; returns their entries."""
        rows, links, entries = [], [], []
        for ev in events:
            self.seq += 1
            digest = entry_hash(self.seq, ev.kind, ev.effective_at, self.recorded_at, ev.payload)
            self.chain = link(self.chain, digest)
            key = ev.key[2]
            rows.append({"seq": self.seq, "kind": ev.kind, "subject": ev.subject, "paper": ev.paper,
                         "observation": ev.observation, "effective_at": ev.effective_at, "effective_key": key,
                         "recorded_at": self.recorded_at, "payload": ev.payload, "entry_hash": digest,
                         "chain_hash": self.chain})
            links.extend({"paper": p, "observation": ev.observation} for p in ev.papers)
            entries.append(Entry(self.seq, ev.kind, ev.effective_at, self.recorded_at, ev.payload, digest, self.chain))
        self._insert(rows, links)
        return entries

    def append_entries(self, entries: list[tuple[Entry, Event]]) -> None:
        """Append entries copied from an exported log: their recorded time and hashes are kept."""
        rows, links = [], []
        for entry, ev in entries:
            rows.append({"seq": entry.seq, "kind": ev.kind, "subject": ev.subject, "paper": ev.paper,
                         "observation": ev.observation, "effective_at": ev.effective_at,
                         "effective_key": ev.key[2], "recorded_at": entry.recorded_at, "payload": ev.payload,
                         "entry_hash": entry.entry_hash, "chain_hash": entry.chain_hash})
            links.extend({"paper": p, "observation": ev.observation} for p in ev.papers)
            self.seq, self.chain = entry.seq, entry.chain_hash
        self._insert(rows, links)

    def _insert(self, rows: list[dict], links: list[dict]) -> None:
        if rows:
            self.conn.execute(_EVENTS.insert(), rows)
        if links:
            table = ObservationPaper.__table__
            if self.store.dialect == "sqlite":
                statement = table.insert().prefix_with("OR IGNORE")
            else:
                from sqlalchemy.dialects.postgresql import insert as pg_insert

                statement = pg_insert(table).on_conflict_do_nothing()
            self.conn.execute(statement, links)


def _blob(value: bytes | memoryview | str) -> bytes:
    # A row edited by hand in SQLite can come back as TEXT; verification must see it, not crash on it.
    return value.encode("utf-8", "surrogateescape") if isinstance(value, str) else bytes(value)


def _is_lock(exc: DBAPIError) -> bool:
    message = str(getattr(exc, "orig", exc)).lower()
    return "database is locked" in message or "lock timeout" in message or "could not obtain lock" in message


