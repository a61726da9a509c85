"""What a ledger's schema asks of a Store being opened, created or upgraded: the file a `--db` names (never a
folder), the tables and guards of a new ledger, the schema version check, version 1's paper links re-derived
and version 2's payloads packed. The schema's own SQL lives here; `Store` (`ledger.storage.store`) calls it,
and it never reads or writes the log's events but to re-derive the links and to pack payloads (whose canonical
bytes, and so every hash, stay as they were).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ledger.core.errors import InputError, IntegrityError
from ledger.log.paper_index import log_event
from ledger.storage.backends import Backend, sqlite_path
from ledger.storage.cursor import Cursor
from ledger.storage.payloads import PACKED, pack, unpack
from ledger.storage.schema import SCHEMA_VERSION, UPGRADES_FROM

if TYPE_CHECKING:  # SQLAlchemy loads only where an engine is made (`ledger.storage.store`)
    from sqlalchemy.engine import Engine


def sqlite_file(location: str) -> str | None:
    """`sqlite_path(location)`, refusing a folder: init and every other command name it alike.
    Raises: InputError when it names a folder."""
    path = sqlite_path(location)
    if path is not None and os.path.isdir(path):
        raise InputError(f"{path}: is a folder; --db names the ledger's file (e.g. {path}/ledger.db)")
    return path


def create_tables(engine: Engine, backend: Backend, shown: str) -> None:
    """The tables, guards and schema version of a new ledger, in one transaction, on `engine` (`shown`: the
    database as errors name it).
    Raises: InputError when the database already holds a ledger."""
    from sqlmodel import SQLModel  # here only: loading the tables costs every other command its start-up

    from ledger.storage.tables import TABLES, LedgerMeta

    with engine.connect() as conn, conn.begin():
        if backend.holds_ledger(conn):
            raise InputError(f"{shown}: already holds a ledger")
        SQLModel.metadata.create_all(conn, tables=TABLES)
        for ddl in backend.guards:
            conn.exec_driver_sql(ddl)
        conn.execute(LedgerMeta.__table__.insert(), [{"key": "schema_version", "value": SCHEMA_VERSION}])


def rederive_links(cursor: Cursor, backend: Backend, engine: Engine) -> int:
    """Version 1 to this version, on `upgrade`'s transaction: the paper links dropped and re-derived from the
    citations with the seq of the one that made them, and the paper index's tables created. Returns how many
    links there are now."""
    from sqlalchemy.schema import CreateTable  # the tables load only where they are used (ledger.schema)

    from ledger.storage.tables import IndexNode, IndexRoot, ObservationPaper

    tables = (ObservationPaper.__table__, IndexNode.__table__, IndexRoot.__table__)
    cursor.execute("DROP TABLE observation_papers")  # its rows are re-derived below, with their seq
    for table in tables:
        cursor.execute(str(CreateTable(table).compile(dialect=engine.dialect)))
    for ddl in backend.guards:
        if any(f"ON {table.name}" in ddl for table in tables):
            cursor.execute(ddl)
    links, after = {}, 0
    while True:  # every entry, in pages, on this transaction's cursor
        entries = cursor.entries_after(after, 5000)
        for entry in entries:
            event = log_event(entry)
            for paper in event.papers:
                links.setdefault((paper, event.subject), entry.seq)
        if len(entries) < 5000:
            break
        after = entries[-1].seq
    backend.insert_nodes_and_links(cursor, [], [(p, o, seq) for (p, o), seq in links.items()])
    cursor.execute("UPDATE ledger_meta SET value = ? WHERE key = 'schema_version'", (SCHEMA_VERSION,))
    return len(links)


def repack_payloads(cursor: Cursor, backend: Backend) -> int:
    """Version 2 to this version, on `upgrade`'s transaction (which holds the write lock): every payload stored
    as its canonical bytes that `pack` makes shorter is stored packed, checked to unpack to the same bytes
    first, with the events' UPDATE guard lifted for this transaction only. Returns how many were packed.
    Raises: IntegrityError should a packed payload not unpack to the stored bytes (nothing is then kept)."""
    lift, restore = backend.rewrite_guard
    cursor.execute(lift)
    packed, after = 0, 0
    while True:  # in pages by seq, on this transaction's cursor
        rows = cursor.execute("SELECT seq, payload FROM events WHERE seq > ? ORDER BY seq LIMIT 5000",
                              (after,)).fetchall()
        changed = []
        for seq, stored in rows:
            stored = bytes(stored) if isinstance(stored, (bytes, bytearray, memoryview)) else None
            if stored is None or stored[:1] == PACKED:  # not a version 2 payload: left for `verify` to name
                continue
            smaller = pack(stored)
            if smaller is not stored:
                if unpack(smaller) != stored:
                    raise IntegrityError(f"seq {seq}: its payload does not unpack to the same bytes; nothing upgraded")
                changed.append((smaller, seq))
        if changed:
            cursor.executemany("UPDATE events SET payload = ? WHERE seq = ?", changed)
            packed += len(changed)
        if len(rows) < 5000:
            break
        after = rows[-1][0]
    cursor.execute(restore)
    cursor.execute("UPDATE ledger_meta SET value = ? WHERE key = 'schema_version'", (SCHEMA_VERSION,))
    return packed


def check_version(found: str | None, shown: str) -> None:
    """Check the schema version a database says it has (`found`, from `schema_version`) is this one.
    Raises: InputError when it is not."""
    if found != SCHEMA_VERSION:
        found = "none" if found is None else found
        hint = "; bring it to this version with `ledger upgrade`" if found in UPGRADES_FROM else ""
        raise InputError(f"{shown}: ledger schema version {found}, this ledger reads version {SCHEMA_VERSION}{hint}")


def schema_version(cursor: Cursor, backend: Backend, shown: str) -> str | None:
    """The schema version the database says it has (None: no such row), read on a reading cursor.
    Raises: InputError when it has no ledger_meta table; a driver's error when it is locked or not a database
    (the cursor's `Store.reading` makes that a StoreError or an InputError)."""
    try:
        row = cursor.execute("SELECT value FROM ledger_meta WHERE key = 'schema_version'").fetchone()
    except backend.dbapi.Error as exc:
        if backend.is_locked(exc) or backend.is_not_a_database(exc):
            raise
        raise InputError(f"{shown}: not a ledger (no ledger_meta table)") from None
    return None if row is None else row[0]
