"""The SQLite backend, the embedded default: WAL, `synchronous=FULL`, `BEGIN IMMEDIATE` for appends.

Triggers check each inserted row against the log (seq 1, or the one after a stored seq; the primary key
refuses a taken one) and refuse UPDATE and DELETE.
Driver errors are recognised by their extended result code (`sqlite_errorname`), never by message text.
Opening never writes to a file that is not a ledger (SQLite's own first read names it, and WAL is switched on
only for a ledger), and a ledger this process may not write (the file, or its folder) is opened read-only.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ledger.core.errors import InputError
from ledger.storage.backends.base import LOCK_TIMEOUT_SECONDS, Backend

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")  # SQLite's own values; nothing else reaches the PRAGMA
_KEYS_PER_QUERY = 300  # 900 parameters: under every SQLite build's limit


def synchronous_setting() -> str:
    """`LEDGER_SQLITE_SYNCHRONOUS` (default FULL: a committed import survives power loss, not only a crash).
    Raises: InputError for a value not in SYNCHRONOUS (the value is never spliced unchecked)."""
    value = os.environ.get("LEDGER_SQLITE_SYNCHRONOUS", "FULL")
    if value.upper() not in SYNCHRONOUS:
        raise InputError(f"LEDGER_SQLITE_SYNCHRONOUS: expected one of {', '.join(SYNCHRONOUS)}, found {value!r}")
    return value.upper()


def file_of(url: str) -> str | None:
    """The file a SQLite URL names; None for another database or one in memory."""
    path = url[len("sqlite:///"):] if url.startswith("sqlite:///") else ""
    return None if path in ("", ":memory:") else path


def writable(path: str) -> bool:
    """Whether this process may write the ledger `path`: the file, and its folder (where WAL mode keeps its
    -wal and -shm files)."""
    return os.access(path, os.W_OK) and os.access(os.path.dirname(os.path.abspath(path)), os.W_OK)


def open_file(path: str, timeout: float) -> sqlite3.Connection:
    """A connection to the SQLite file `path`, which must exist: read-write when this process may write it,
    else read-only (`mode=ro`), and when even that cannot read it (a WAL ledger in a folder where its -shm file
    cannot be made) as an unchanging file (`immutable=1`), provided no write-ahead log holds commits still.
    Raises: InputError for a file that is not a SQLite database (nothing is written to it), or the driver's
    errors."""
    # Never open() the file itself: closing any descriptor of it drops every POSIX lock this process's SQLite
    # connections hold on it (fcntl semantics), and a server's other threads would then read a torn WAL index.
    # A file that is not a database is named by SQLite's own first read (SQLITE_NOTADB), which writes nothing.
    try:
        empty = os.stat(path).st_size == 0
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from None
    if empty:
        raise InputError(f"{path}: not a ledger (an empty file)")
    if writable(path):
        return sqlite3.connect(path, timeout=timeout, check_same_thread=False)
    uri = f"file:{quote(os.path.abspath(path))}?mode=ro"
    connection = sqlite3.connect(uri, uri=True, timeout=timeout, check_same_thread=False)
    try:
        connection.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        return connection
    except sqlite3.OperationalError:
        connection.close()
        wal = f"{path}-wal"
        if os.path.exists(wal) and os.path.getsize(wal) > 0:  # immutable would not read its commits
            raise
    return sqlite3.connect(f"{uri}&immutable=1", uri=True, timeout=timeout, check_same_thread=False)


class SQLite(Backend):
    name = "sqlite"
    begin_write = "BEGIN IMMEDIATE"
    begin_index = "BEGIN IMMEDIATE"  # one writer at a time, whatever it writes
    begin_snapshot = "BEGIN"  # deferred: in WAL mode the first read fixes the snapshot, and takes no lock
    guards = (
        """CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
           BEGIN SELECT RAISE(ABORT, 'events are append-only: UPDATE refused'); END""",
        """CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
           BEGIN SELECT RAISE(ABORT, 'events are append-only: DELETE refused'); END""",
        # Gap-free: a row's seq is 1 or follows a stored one, and the primary key refuses a seq already taken,
        # so the log is always exactly 1..n (UPDATE and DELETE are refused below). One probe of the row
        # before, not `NEW.seq IS COALESCE(MAX(seq), 0) + 1`: that aggregate ran per row.
        """CREATE TRIGGER events_gap_free BEFORE INSERT ON events
           WHEN NEW.seq IS NOT 1 AND NOT EXISTS (SELECT 1 FROM events WHERE seq = NEW.seq - 1)
           BEGIN SELECT RAISE(ABORT, 'events must be appended in sequence'); END""",
        """CREATE TRIGGER observation_papers_append_only BEFORE DELETE ON observation_papers
           BEGIN SELECT RAISE(ABORT, 'observation_papers is append-only'); END""",
        # A link's seq says where the paper index counts it from: changed, replay and the index would differ.
        """CREATE TRIGGER observation_papers_no_update BEFORE UPDATE ON observation_papers
           BEGIN SELECT RAISE(ABORT, 'observation_papers is append-only'); END""",
        """CREATE TRIGGER merkle_nodes_no_update BEFORE UPDATE ON merkle_nodes
           BEGIN SELECT RAISE(ABORT, 'merkle_nodes is append-only'); END""",
        """CREATE TRIGGER merkle_nodes_no_delete BEFORE DELETE ON merkle_nodes
           BEGIN SELECT RAISE(ABORT, 'merkle_nodes is append-only'); END""",
        """CREATE TRIGGER index_nodes_no_update BEFORE UPDATE ON index_nodes
           BEGIN SELECT RAISE(ABORT, 'index_nodes is append-only'); END""",
        """CREATE TRIGGER index_nodes_no_delete BEFORE DELETE ON index_nodes
           BEGIN SELECT RAISE(ABORT, 'index_nodes is append-only'); END""",
        """CREATE TRIGGER index_roots_no_update BEFORE UPDATE ON index_roots
           BEGIN SELECT RAISE(ABORT, 'index_roots is append-only'); END""",
        """CREATE TRIGGER index_roots_no_delete BEFORE DELETE ON index_roots
           BEGIN SELECT RAISE(ABORT, 'index_roots is append-only'); END""",
    )
    fact_key_present = """SELECT 1 FROM pragma_index_list('events') AS l JOIN pragma_index_info(l.name) AS i
                          WHERE l."unique" AND NOT l.partial GROUP BY l.name
                          HAVING COUNT(*) = 3 AND SUM(i.name IN ('subject', 'kind', 'effective_key')) = 3"""
    # SQLite returns whatever type a hand edit stored; CAST makes every payload and hash bytes (a number as its
    # text, which will not re-compute), as PostgreSQL's bytea always is, so rows become Entries without checks.
    entry_columns = ("seq, kind, effective_at, recorded_at, CAST(payload AS BLOB), CAST(entry_hash AS BLOB), "
                     "CAST(chain_hash AS BLOB)")

    rewrite_guard = ("DROP TRIGGER events_append_only_update", guards[0])  # DDL is transactional in SQLite

    dbapi = sqlite3

    def __init__(self) -> None:
        self.synchronous = synchronous_setting()  # raises InputError before anything is opened
        # WAL with synchronous=OFF never corrupts the file; a power cut may lose the latest commits, here only
        # index rows, which the next catch-up writes again. Set outside a transaction, as SQLite requires.
        self.index_durability = ("PRAGMA synchronous=OFF", f"PRAGMA synchronous={self.synchronous}")

    def engine(self, url: str) -> Engine:
        from sqlalchemy import create_engine, event

        engine = create_engine(url, connect_args={"timeout": LOCK_TIMEOUT_SECONDS})
        event.listen(engine, "connect", lambda dbapi_connection, _record: self._prepare(dbapi_connection))
        return engine

    def connects_without_engine(self, url: str) -> bool:
        # A file is opened here; a database in memory (an exported log) lives in the engine's pool, which
        # keeps it while the store is open.
        return file_of(url) is not None

    def connect(self, url: str) -> Any | None:
        # As SQLAlchemy's engine opens a file (no check of the thread: `serve` hands the store's one
        # connection between threads, one request at a time).
        path = file_of(url)
        if path is None:
            return None
        connection = open_file(path, LOCK_TIMEOUT_SECONDS)
        self._prepare(connection, path)
        return connection

    def watch(self, url: str) -> Commits | None:
        path = file_of(url)
        try:
            return None if path is None else Commits(path)
        except (sqlite3.Error, InputError):  # no counter: every request reads the paper's version in the store's thread
            return None

    def _prepare(self, connection: Any, existing: str | None = None) -> None:
        connection.isolation_level = None  # transactions are begun explicitly
        cursor = connection.cursor()
        # A new ledger is made WAL (the mode stays in the file). An existing file is switched only when it holds a
        # ledger and may be written: opening a file that is not one must leave every byte of it as it was.
        if not existing or (cursor.execute("PRAGMA journal_mode").fetchone()[0] != "wal" and
                            cursor.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'ledger_meta'")
                            .fetchone() is not None and writable(existing)):
            cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA synchronous={self.synchronous}")  # one of SYNCHRONOUS, checked
        cursor.close()

    def renew_guards(self, cursor: Any) -> list[str]:
        stored = dict(cursor.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'").fetchall())
        renewed = []
        for ddl in self.guards:
            name = ddl.split()[2]  # CREATE TRIGGER <name>
            if " ".join((stored.get(name) or "").split()) != " ".join(ddl.split()):  # SQLite keeps the text given
                cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
                cursor.execute(ddl)
                renewed.append(name)
        return renewed

    def insert(self, cursor: Any, table: str, columns: Sequence[str], rows: list[tuple]) -> None:
        # In process: no round trips to save, executemany is the fastest path.
        cursor.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                           rows)

    def insert_nodes_and_links(self, cursor: Any, nodes: list[tuple], links: list[tuple]) -> None:
        if nodes:
            self.insert(cursor, "merkle_nodes", ("level", "idx", "hash"), nodes)
        if links:
            cursor.executemany("INSERT OR IGNORE INTO observation_papers (paper, observation, seq) VALUES (?, ?, ?)",
                               links)

    def insert_index(self, cursor: Any, nodes: list[tuple], root: tuple) -> None:
        if nodes:
            self.insert(cursor, "index_nodes", ("id", "node"), nodes)
        cursor.execute("INSERT INTO index_roots (size, node, hash) VALUES (?, ?, ?)", root)

    def stored_facts(self, cursor: Any, keys: list[tuple[str, str, str]]) -> list[tuple]:
        rows: list[tuple] = []
        for start in range(0, len(keys), _KEYS_PER_QUERY):
            chunk = keys[start:start + _KEYS_PER_QUERY]
            values = ", ".join(["(?, ?, ?)"] * len(chunk))
            # A join probes the unique index once per key; `(a, b, c) IN (VALUES ...)` scans it in SQLite.
            rows += cursor.execute(
                f"WITH k(subject, kind, effective_key) AS (VALUES {values}) SELECT e.kind, e.subject, "
                "e.effective_key, e.seq, e.payload FROM k JOIN events e ON e.subject = k.subject AND e.kind = k.kind "
                "AND e.effective_key = k.effective_key", [v for key in chunk for v in key]).fetchall()
        return rows

    def repeats_a_fact(self, error: BaseException) -> bool:
        # The fact key is a UNIQUE index (under any name); a taken seq is the rowid's PRIMARYKEY constraint.
        return getattr(error, "sqlite_errorname", None) == "SQLITE_CONSTRAINT_UNIQUE"

    def read_only(self, cursor: Any) -> bool:
        # A file this process may not write (read-only permissions or mount, or its folder): reads work, writes
        # would not.
        path = file_of(cursor.store.url)
        return path is not None and not writable(path)

    def is_locked(self, error: BaseException) -> bool:
        name = getattr(error, "sqlite_errorname", "") or ""
        return name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED"))

    def is_not_a_database(self, error: BaseException) -> bool:
        return getattr(error, "sqlite_errorname", None) == "SQLITE_NOTADB"



class Commits:
    """`PRAGMA data_version` on a connection of its own, which never writes: the value changes when any other
    connection commits (https://sqlite.org/pragma.html#pragma_data_version), and each read begins a read
    transaction of its own, so a commit made before the read is always seen."""

    def __init__(self, path: str):
        # No busy wait: the caller is an event loop; busy, it is told None and asks the store instead.
        self.connection = open_file(path, 0)
        self.connection.isolation_level = None
        self.cursor = self.connection.cursor()

    def __call__(self) -> int | None:
        try:
            return self.cursor.execute("PRAGMA data_version").fetchall()[0][0]
        except sqlite3.Error:
            return None

    def close(self) -> None:
        self.connection.close()
