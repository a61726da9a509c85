"""A consistent copy of a ledger while writers run (`ledger backup`): SQLite's online backup API into a new
file, or PostgreSQL's `pg_dump` inside a snapshot this process exported, so that the head and the cosigned
checkpoint read here are those of the dump. It also settles a SQLite file into one self-contained file
(journal mode DELETE) before `ledger restore` renames it into place.

It never writes to the ledger it copies, never overwrites a file (the caller names a new one), and never
puts a database password on a command line (pg_dump reads it from its environment).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from typing import NamedTuple
from urllib.parse import quote

from ledger.core.errors import InputError, StoreError
from ledger.storage.cosigned_checkpoint import KEY as COSIGNED
from ledger.storage.store import Store

PG_DUMP_SECONDS = 3600.0  # pg_dump's deadline: a dump that takes longer is named as failed, not waited on


class Copied(NamedTuple):
    """What a copy holds: its size (the head's seq), the head's chain hash, the cosigned checkpoint kept."""

    size: int
    chain: bytes
    cosigned: str | None


def _held(cursor) -> Copied:
    seq, chain, _ = cursor.head()
    row = cursor.execute("SELECT value FROM ledger_meta WHERE key = ?", (COSIGNED,)).fetchone()
    return Copied(seq, chain, None if row is None else row[0])


def copy_sqlite(store: Store, target: str) -> Copied:
    """Copy the SQLite ledger of `store` into the new file `target` with SQLite's online backup API, all pages
    in one step (one read snapshot: appends that land meanwhile are not in it, and are not blocked); the copy
    is left in journal mode DELETE, one file. What the copy holds is read from the copy itself.
    Raises: InputError when `target` exists, StoreError when the copy cannot be made."""
    with store.reading() as cursor:
        return _backed_up(cursor.raw.connection, target)


def copy_sqlite_file(source: str, target: str) -> Copied:
    """`copy_sqlite` of the SQLite file `source` (a backup `ledger restore` starts from), opened read-only:
    the snapshot is never written to.
    Raises: InputError when `target` exists or `source` is not a SQLite file, StoreError when it cannot be copied."""
    if not os.path.isfile(source):
        raise InputError(f"{source}: no such file (a snapshot `ledger backup` wrote)")
    try:
        connection = sqlite3.connect(f"file:{quote(os.path.abspath(source))}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise InputError(f"{source}: cannot read: {exc}") from None
    try:
        return _backed_up(connection, target, source)
    finally:
        connection.close()


def _backed_up(source: sqlite3.Connection, target: str, shown: str | None = None) -> Copied:
    if os.path.lexists(target):
        raise InputError(f"{target}: already exists; a copy is written to a new file")
    try:
        made = sqlite3.connect(target)
    except sqlite3.Error as exc:
        raise StoreError(f"{target}: cannot write the copy: {exc}") from None
    try:
        source.backup(made)
        made.execute("PRAGMA journal_mode=DELETE").fetchone()
        seq, chain = (made.execute("SELECT seq, chain_hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
                      or (0, bytes(32)))
        row = made.execute("SELECT value FROM ledger_meta WHERE key = ?", (COSIGNED,)).fetchone()
        return Copied(seq, bytes(chain), None if row is None else row[0])
    except sqlite3.DatabaseError as exc:
        raise InputError(f"{shown or target}: not a ledger ({exc})") from None
    except sqlite3.Error as exc:
        raise StoreError(f"{target}: cannot write the copy: {exc}") from None
    finally:
        made.close()


def settle_sqlite(path: str) -> None:
    """Leave the SQLite file `path` as one self-contained file (its write-ahead log folded in, journal mode
    DELETE), so that renaming the file alone moves the whole ledger.
    Raises: StoreError when it cannot be done."""
    try:
        connection = sqlite3.connect(path)
        try:
            connection.execute("PRAGMA journal_mode=DELETE").fetchone()
        finally:
            connection.close()
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot settle the file: {exc}") from None


def dump_postgres(store: Store, target: str, timeout: float = PG_DUMP_SECONDS) -> Copied:
    """`pg_dump --format=custom` of the ledger's schema into the new file `target`, run inside a REPEATABLE
    READ snapshot this process exported (`--snapshot`), so that what is returned is what the dump holds.
    Raises: InputError when `target` exists, StoreError when pg_dump is missing or fails."""
    if os.path.lexists(target):
        raise InputError(f"{target}: already exists; a backup is written to a new file")
    program = shutil.which("pg_dump")
    if program is None:
        raise StoreError("pg_dump: not found; a PostgreSQL backup runs it (Debian: apt-get install postgresql-client)")
    from sqlalchemy.engine import make_url

    url = make_url(store.url)
    env = {**os.environ, **({"PGPASSWORD": url.password} if url.password else {})}
    plain = url.set(drivername="postgresql", password=None).render_as_string(hide_password=False)
    with store.snapshot() as cursor:
        exported = cursor.execute("SELECT pg_export_snapshot()").fetchone()[0]
        schema = cursor.execute("SELECT current_schema()").fetchone()[0]
        held = _held(cursor)
        try:
            done = subprocess.run([program, "--format=custom", f"--snapshot={exported}", f"--schema={schema}",
                                   "--no-owner", f"--file={target}", f"--dbname={plain}"], env=env,
                                  capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            done = None
    if done is None or done.returncode != 0:
        said = "over its deadline" if done is None else (done.stderr.decode("utf-8", "replace").strip().splitlines()
                                                         or ["no message"])[-1]
        if os.path.exists(target):
            os.unlink(target)
        raise StoreError(f"pg_dump of {store.shown}: failed: {said}")
    return held
