"""The PostgreSQL backend (psycopg 3), for teams with many writers on one database.

Writers serialize on an advisory lock taken as the write transaction begins; a statement-level trigger over
the inserted rows keeps the log exactly 1..n, row triggers refuse UPDATE and DELETE, a statement trigger
refuses TRUNCATE. Batches travel as binary COPY. Driver errors are recognised by SQLSTATE, whatever the
server's language.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ledger.storage.backends.base import LOCK_TIMEOUT_SECONDS, Backend

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

LOCK_ID = 0x1ED6E2  # the advisory lock every PostgreSQL writer takes
INDEX_LOCK_ID = 0x1ED6E3  # the one paper index catch-ups take: they write only the index, appends never do
UNIQUE_VIOLATION = "23505"
LOCK_NOT_AVAILABLE = "55P03"  # lock_timeout expired, or NOWAIT


# The types binary COPY sends, by table and column: written out, not compiled from the SQLModel tables, because
# loading those inside a writer's first transaction held the write lock that long and serialized concurrent
# writers (benchmarks/RESULTS.md). A test holds them equal to the tables'.
COPY_TYPES = {
    "events": {"seq": "bigint", "kind": "varchar", "subject": "varchar", "paper": "varchar",
               "effective_at": "varchar", "effective_key": "varchar", "recorded_at": "varchar", "payload": "bytea",
               "entry_hash": "bytea", "chain_hash": "bytea"},
    "merkle_nodes": {"level": "integer", "idx": "bigint", "hash": "bytea"},
}


class PostgreSQL(Backend):
    name = "postgresql"
    begin_write = f"BEGIN; SELECT pg_advisory_xact_lock({LOCK_ID})"  # one round trip (simple query protocol)
    # A catch-up reads committed events only (seq <= a size the head had) and writes only index rows, which
    # appends never touch: it need not wait for an append, only for another catch-up.
    # Its commit need not wait for the WAL flush: the index is re-computed from the log should a crash lose it.
    begin_index = f"BEGIN; SELECT pg_advisory_xact_lock({INDEX_LOCK_ID}); SET LOCAL synchronous_commit = off"
    begin_snapshot = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"  # one snapshot for the whole transaction
    # A paper's events are `paper = ? OR subject IN (its observations)`: with IN, PostgreSQL read every event of
    # the log for each paper (a hashed subplan as a filter); over an array, both sides of the OR use their index.
    in_rows = "= ANY(ARRAY({}))"
    guards = (
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
        """CREATE TRIGGER index_nodes_append_only BEFORE UPDATE OR DELETE ON index_nodes
           FOR EACH ROW EXECUTE FUNCTION ledger_refuse_rewrite()""",
        """CREATE TRIGGER index_roots_append_only BEFORE UPDATE OR DELETE ON index_roots
           FOR EACH ROW EXECUTE FUNCTION ledger_refuse_rewrite()""",
    )
    fact_key_present = """SELECT 1 FROM pg_index x WHERE x.indrelid = 'events'::regclass AND x.indisunique
                          AND x.indisvalid AND x.indpred IS NULL AND x.indnkeyatts = 3
                          AND (SELECT array_agg(a.attname::text ORDER BY a.attname) FROM pg_attribute a
                               WHERE a.attrelid = x.indrelid AND a.attnum = ANY(x.indkey))
                              = ARRAY['effective_key', 'kind', 'subject']"""
    entry_columns = "seq, kind, effective_at, recorded_at, payload, entry_hash, chain_hash"
    # ALTER TABLE's lock on events holds off every other writer (not readers) until the upgrade commits.
    rewrite_guard = ("ALTER TABLE events DISABLE TRIGGER events_append_only",
                     "ALTER TABLE events ENABLE TRIGGER events_append_only")

    @property
    def dbapi(self) -> Any:
        import psycopg  # loaded with the engine, which every PostgreSQL store makes as it opens

        return psycopg

    def engine(self, url: str) -> Engine:
        from sqlalchemy import create_engine

        return create_engine(url)

    def connected(self, connection: Any, cursor: Any) -> None:
        connection.driver_connection.autocommit = True  # transactions are begun explicitly, as on SQLite
        cursor.execute(f"SET lock_timeout = '{int(LOCK_TIMEOUT_SECONDS * 1000)}ms'")

    def sql(self, statement: str) -> str:
        return statement.replace("?", "%s")

    def holds_ledger(self, connection: Any) -> bool:
        return connection.exec_driver_sql(
            "SELECT 1 FROM information_schema.tables WHERE table_name = 'ledger_meta' "
            "AND table_schema = current_schema()").first() is not None

    def insert(self, cursor: Any, table: str, columns: Sequence[str], rows: list[tuple]) -> None:
        # Binary COPY: one round trip for the batch, bytea as bytes; triggers fire as for INSERT.
        with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types([COPY_TYPES[table][name] for name in columns])
            for row in rows:
                copy.write_row(row)

    def insert_nodes_and_links(self, cursor: Any, nodes: list[tuple], links: list[tuple]) -> None:
        if nodes or links:  # column arrays, both tables in one statement: one round trip
            columns = (tuple(map(list, zip(*nodes))) if nodes else ([], [], [])) + \
                      (tuple(map(list, zip(*links))) if links else ([], [], []))
            cursor.execute(
                "WITH nodes AS (INSERT INTO merkle_nodes (level, idx, hash) SELECT * FROM unnest(?::integer[], "
                "?::bigint[], ?::bytea[])) INSERT INTO observation_papers (paper, observation, seq) SELECT * FROM "
                "unnest(?::text[], ?::text[], ?::bigint[]) ON CONFLICT DO NOTHING", columns)

    def insert_index(self, cursor: Any, nodes: list[tuple], root: tuple) -> None:
        # Both tables in one statement: one round trip per transaction.
        columns = tuple(map(list, zip(*nodes))) if nodes else ([], [])
        cursor.execute(
            "WITH nodes AS (INSERT INTO index_nodes (id, node) SELECT * FROM unnest(?::bigint[], ?::bytea[])) "
            "INSERT INTO index_roots (size, node, hash) VALUES (?, ?, ?)", (*columns, *root))

    def stored_facts(self, cursor: Any, keys: list[tuple[str, str, str]]) -> list[tuple]:
        if not keys:
            return []
        # One query text for any number of keys, so PostgreSQL plans it once (psycopg prepares it).
        return cursor.execute(
            "SELECT e.kind, e.subject, e.effective_key, e.seq, e.payload FROM unnest(?::text[], ?::text[], "
            "?::text[]) AS k(subject, kind, effective_key) JOIN events e ON e.subject = k.subject AND "
            "e.kind = k.kind AND e.effective_key = k.effective_key",
            tuple(list(column) for column in zip(*keys))).fetchall()

    def repeats_a_fact(self, error: BaseException) -> bool:
        diag = getattr(error, "diag", None)
        return getattr(error, "sqlstate", None) == UNIQUE_VIOLATION and diag is not None \
            and diag.constraint_name != "events_pkey"

    def read_only(self, cursor: Any) -> bool:
        # `on` in recovery (a hot standby), and where default_transaction_read_only is set.
        return cursor.execute("SHOW transaction_read_only").fetchone()[0] == "on"

    def is_locked(self, error: BaseException) -> bool:
        return getattr(error, "sqlstate", None) == LOCK_NOT_AVAILABLE
