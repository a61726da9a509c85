"""A witness's state, one SQLite file of its own (`witness serve --db`): per origin the checkpoint it last
cosigned (`logs`), each tree it cosigned (`cosigned`: what it can show it signed, and a history that must never
go back), the log-signed contradictions it kept as evidence (`evidence`), and for an auditing witness the
paper index note of the tree it last audited and cosigned (`index_notes`). The checks and what a request may
make it keep are `ledger.services.cosigning_witness`; this module holds only the SQL.

A request is checked and the state swapped in one `BEGIN IMMEDIATE` transaction (`WitnessState.swap`) whose
UPDATE names the size it read (compare-and-swap), so two logs pushing at once cannot roll it back.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager

from ledger.core.errors import InputError
from ledger.log.signed_notes import split_note

SCHEMA = """
CREATE TABLE IF NOT EXISTS logs (origin TEXT PRIMARY KEY, size INTEGER NOT NULL, root BLOB NOT NULL,
                                 note TEXT NOT NULL, cosigned_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS cosigned (id INTEGER PRIMARY KEY, origin TEXT NOT NULL, size INTEGER NOT NULL,
                                     root BLOB NOT NULL, cosigned_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS evidence (id INTEGER PRIMARY KEY, origin TEXT NOT NULL, received_at INTEGER NOT NULL,
                                     reason TEXT NOT NULL, body_hash BLOB NOT NULL UNIQUE, note TEXT NOT NULL,
                                     held TEXT NOT NULL);
"""
# Made by the first audited tree cosigned (`witness serve --audit`): a plain witness's state stays as it was.
INDEX_NOTES = """CREATE TABLE IF NOT EXISTS index_notes (origin TEXT PRIMARY KEY, size INTEGER NOT NULL,
                                                       text TEXT NOT NULL, line TEXT NOT NULL)"""
TABLES = {"logs", "cosigned", "evidence"}
AUDITING = TABLES | {"index_notes"}
LEGACY = {"logs", "cosigned", "refused"}  # before evidence: every 422 kept, the unsigned proofs too
Held = tuple[int, bytes, str, int]  # size, root, note, cosigned_at


class Swap:
    """One request's transaction: what it reads and the compare-and-swap writes, each write saying whether it
    took (False: another request changed the row meanwhile)."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def held(self, origin: str) -> Held | None:
        return self.db.execute("SELECT size, root, note, cosigned_at FROM logs WHERE origin = ?", (origin,)).fetchone()

    def first(self, origin: str, size: int, root: bytes, note: str, stamp: int) -> bool:
        return self.db.execute("INSERT OR IGNORE INTO logs VALUES (?, ?, ?, ?, ?)",
                               (origin, size, root, note, stamp)).rowcount == 1

    def touch(self, origin: str, size: int, root: bytes, stamp: int) -> bool:
        return self.db.execute("UPDATE logs SET cosigned_at = ? WHERE origin = ? AND size = ? AND root = ?",
                               (stamp, origin, size, root)).rowcount == 1

    def advance(self, origin: str, was: tuple[int, bytes], size: int, root: bytes, note: str, stamp: int) -> bool:
        return self.db.execute("UPDATE logs SET size = ?, root = ?, note = ?, cosigned_at = ? "
                               "WHERE origin = ? AND size = ? AND root = ?",
                               (size, root, note, stamp, origin, *was)).rowcount == 1

    def add_cosigned(self, origin: str, size: int, root: bytes, stamp: int) -> None:
        self.db.execute("INSERT INTO cosigned (origin, size, root, cosigned_at) VALUES (?, ?, ?, ?)",
                        (origin, size, root, stamp))

    def evidence_known(self, body_hash: bytes) -> bool:
        return self.db.execute("SELECT 1 FROM evidence WHERE body_hash = ?", (body_hash,)).fetchone() is not None

    def evidence_held(self, origin: str) -> tuple[int, int]:
        """(rows, bytes of notes) of the evidence kept for `origin`."""
        return self.db.execute("SELECT count(*), coalesce(sum(length(note) + length(held)), 0) FROM evidence "
                               "WHERE origin = ?", (origin,)).fetchone()

    def add_evidence(self, origin: str, received_at: int, reason: str, body_hash: bytes, note: str, held: str) -> None:
        self.db.execute("INSERT INTO evidence (origin, received_at, reason, body_hash, note, held) "
                        "VALUES (?, ?, ?, ?, ?, ?)", (origin, received_at, reason, body_hash, note, held))

    def keep_index(self, origin: str, size: int, text: str, line: str) -> None:
        """The paper index note of the tree last audited and cosigned for `origin` (its text, the cosignature
        line given): one row per origin, replaced."""
        self.db.execute(INDEX_NOTES)
        self.db.execute("INSERT OR REPLACE INTO index_notes VALUES (?, ?, ?, ?)", (origin, size, text, line))

    def commit(self) -> None:
        """Persist what this request wrote (evidence is committed before its refusal is raised)."""
        self.db.execute("COMMIT")


class WitnessState:
    """The state file `path`, one connection per call: a server's threads each call it."""

    def __init__(self, path: str, new: bool, note_of: Callable[[bytes], str]):
        """`note_of` reads the signed note out of a request a state from before `evidence` kept.
        Raises: InputError for a state file that is missing (unless `new`), already there (when `new`), or not
        a witness's state."""
        self.path = path
        if os.path.exists(path) == new:
            raise InputError(f"{path}: already exists; a new witness state needs a new file" if new else
                             f"{path}: no such witness state; give --new to start one (a new witness accepts any "
                             f"first checkpoint of a log, so a lost state must not pass for a new one)")
        try:
            with closing(self._connect()) as db:
                tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                if not new and tables not in (TABLES, AUDITING, LEGACY):
                    raise InputError(f"{path}: not a witness state (its tables: {', '.join(sorted(tables)) or 'none'})")
                db.executescript(SCHEMA)
                if tables == LEGACY:
                    _migrate(db, note_of)
        except sqlite3.DatabaseError as exc:
            raise InputError(f"{path}: not a witness state ({exc})") from None

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        return db

    @contextmanager
    def swap(self) -> Iterator[Swap]:
        """One writer at a time, from the first read to the swap; what was not committed is rolled back."""
        db = self._connect()
        try:
            db.execute("BEGIN IMMEDIATE")
            yield Swap(db)
        finally:
            if db.in_transaction:
                db.execute("ROLLBACK")
            db.close()

    def held(self, origin: str) -> Held | None:
        """(size, root, note, cosigned_at) of the checkpoint last cosigned for `origin`, or None."""
        with closing(self._connect()) as db:
            return Swap(db).held(origin)

    def index_note(self, origin: str) -> tuple[str, str] | None:
        """(text, cosignature line) of the paper index note last audited and cosigned for `origin`, or None."""
        with closing(self._connect()) as db:
            if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'index_notes'").fetchone() is None:
                return None
            return db.execute("SELECT text, line FROM index_notes WHERE origin = ?", (origin,)).fetchone()

    def history(self, origin: str) -> list[tuple[int, bytes, int]]:
        """(size, root, time) of each tree cosigned for `origin`, in the order cosigned, with the time first given."""
        with closing(self._connect()) as db:
            return db.execute("SELECT size, root, cosigned_at FROM cosigned WHERE origin = ? ORDER BY id",
                              (origin,)).fetchall()

    def evidence(self) -> list[tuple[str, str, str, str]]:
        """Every log-signed contradiction kept: (origin, reason, the log-signed note, the note held that it
        contradicts), oldest first."""
        with closing(self._connect()) as db:
            return db.execute("SELECT origin, reason, note, held FROM evidence ORDER BY id").fetchall()


def _migrate(db: sqlite3.Connection, note_of: Callable[[bytes], str]) -> None:
    """A state from before `evidence`: its forks become evidence (the note it held then was not kept), the
    failing proofs it kept are dropped (they accuse nobody), and so is the old table."""
    db.execute("BEGIN IMMEDIATE")
    for origin, received, reason, request in db.execute(
            "SELECT origin, received_at, reason, request FROM refused WHERE status = 422 ORDER BY id").fetchall():
        if reason.endswith("the log has forked") or reason.startswith("a checkpoint of size 0"):
            note = note_of(request)
            db.execute("INSERT OR IGNORE INTO evidence (origin, received_at, reason, body_hash, note, held) "
                       "VALUES (?, ?, ?, ?, ?, '')",
                       (origin, received, reason, hashlib.sha256(split_note(note)[0].encode()).digest(), note))
    db.execute("DROP TABLE refused")
    db.execute("COMMIT")
