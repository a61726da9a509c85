"""A witness, as C2SP `tlog-witness`: it cosigns a log's checkpoint only when the log's key signed it and it
is consistent with the last checkpoint it cosigned for that origin, so two readers shown two histories under
one key cannot both get its cosignature.

    request  = "old <size>\\n" + up to 63 lines "<base64 hash>\\n" (the consistency proof) + "\\n" + signed note
    answer   = 200 and cosignature lines; 400 malformed or old > size; 403 no valid signature by the log's key;
               404 an origin it does not witness; 409 old is not the size it holds (body "<size>\\n",
               text/x.tlog.size); 413 a body over 16 KiB; 422 a proof that does not verify, or the size it
               holds with another root (C2SP PR #280; it was 409 before)

Its state is one SQLite file: per origin the checkpoint it last cosigned, and every cosignature it gave
(`cosigned`: what it can show it signed, and a history that must never go back). A request is checked and the
state swapped in one `BEGIN IMMEDIATE` transaction whose UPDATE names the size it read (compare-and-swap),
so two logs pushing at once cannot roll it back. Log-signed checkpoints it refused with 422 (a fork, a
failing proof) are kept in `refused`: they are signed evidence of a log's misbehaviour. Malformed or
unsigned requests leave nothing.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass
from typing import Callable

from ledger.core.errors import InputError, IntegrityError
from ledger.log.cosignature import Cosigner
from ledger.log.merkle import EMPTY_ROOT, verify_consistency
from ledger.log.signed_notes import Checkpoint, Verifier, open_note, parse_checkpoint

MAX_BODY = 16 * 1024  # as transparency-dev/witness: more than a 63-line proof and a note with many signatures
MAX_PROOF = 63  # tlog-witness: a client MUST NOT send more
SIZE_TYPE = "text/x.tlog.size"
SCHEMA = """
CREATE TABLE IF NOT EXISTS logs (origin TEXT PRIMARY KEY, size INTEGER NOT NULL, root BLOB NOT NULL,
                                 note TEXT NOT NULL, cosigned_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS cosigned (id INTEGER PRIMARY KEY, origin TEXT NOT NULL, size INTEGER NOT NULL,
                                     root BLOB NOT NULL, cosigned_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS refused (id INTEGER PRIMARY KEY, origin TEXT NOT NULL, received_at INTEGER NOT NULL,
                                    status INTEGER NOT NULL, reason TEXT NOT NULL, request BLOB NOT NULL);
"""


class Refused(Exception):
    """A request the witness does not cosign: its HTTP status, a one-line reason, and for 409 the size held."""

    def __init__(self, status: int, reason: str, size: int | None = None):
        super().__init__(reason)
        self.status, self.reason, self.size = status, reason, size


@dataclass(frozen=True)
class Submission:
    old: int
    proof: list[bytes]
    note: str


def submission(old: int, proof: list[bytes], note: str) -> bytes:
    """The body of an add-checkpoint request."""
    return (f"old {old}\n" + "".join(base64.b64encode(p).decode() + "\n" for p in proof) + "\n" + note).encode()


def parse_submission(body: bytes) -> Submission:
    """An add-checkpoint body read strictly.
    Raises: Refused (400, or 413 for a body over MAX_BODY) saying what is malformed."""
    if len(body) > MAX_BODY:
        raise Refused(413, f"the request is over {MAX_BODY} bytes")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused(400, "the request is not UTF-8") from None
    head, sep, note = text.partition("\n\n")
    lines = head.split("\n")
    found = re.fullmatch(r"old (0|[1-9][0-9]{0,18})", lines[0])
    if not sep or not found:
        raise Refused(400, "expected an 'old <size>' line, the proof lines, a blank line and the signed note")
    if len(lines) - 1 > MAX_PROOF:
        raise Refused(400, f"the consistency proof has {len(lines) - 1} lines, more than {MAX_PROOF}")
    proof = []
    for number, line in enumerate(lines[1:], start=2):
        try:
            hashed = base64.b64decode(line, validate=True)
        except (binascii.Error, ValueError):
            hashed = b""
        if len(hashed) != 32 or base64.b64encode(hashed).decode() != line:
            raise Refused(400, f"line {number}: not a base64 SHA-256 hash")
        proof.append(hashed)
    return Submission(int(found.group(1)), proof, note)


class Witness:
    """The witness of the logs in `logs` (origin -> the log's verifier key), cosigning with `cosigner`,
    its state in the SQLite file `path`. One connection per call: a server's threads each call it."""

    def __init__(self, cosigner: Cosigner, logs: dict[str, Verifier], path: str, new: bool = False,
                 clock: Callable[[], float] = time.time):
        """Raises: InputError for a state file that is missing (unless `new`), already there (when `new`), or
        not a witness's state."""
        self.cosigner, self.logs, self.path, self.clock = cosigner, logs, path, clock
        if os.path.exists(path) == new:
            raise InputError(f"{path}: already exists; a new witness state needs a new file" if new else
                             f"{path}: no such witness state; give --new to start one (a new witness accepts any "
                             f"first checkpoint of a log, so a lost state must not pass for a new one)")
        try:
            with closing(self._connect()) as db:
                tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                if not new and tables != {"logs", "cosigned", "refused"}:
                    raise InputError(f"{path}: not a witness state (its tables: {', '.join(sorted(tables)) or 'none'})")
                db.executescript(SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise InputError(f"{path}: not a witness state ({exc})") from None

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        return db

    def _signed(self, note: str) -> Checkpoint:
        """The checkpoint of a note its log's key signed: 404 for an origin not witnessed, 403 without a valid
        signature by the log's key, 400 for a malformed note."""
        origin = note.split("\n", 1)[0]
        verifier = self.logs.get(origin)
        if verifier is None:
            raise Refused(404, f"origin {origin[:100]!r}: not a log this witness follows")
        try:
            return parse_checkpoint(open_note(note, verifier))
        except IntegrityError as exc:
            raise Refused(403, str(exc)) from None
        except InputError as exc:
            raise Refused(400, str(exc)) from None

    def add_checkpoint(self, body: bytes) -> str:
        """Check a request and, when it holds, swap the state and answer the cosignature line (with a newline).
        Raises: Refused with the status tlog-witness gives the first check that fails."""
        request = parse_submission(body)
        checkpoint = self._signed(request.note)
        if request.old > checkpoint.size:
            raise Refused(400, f"old size {request.old} is larger than the checkpoint's {checkpoint.size}")
        text = checkpoint.text()
        db = self._connect()
        try:
            db.execute("BEGIN IMMEDIATE")  # one writer at a time from the read below to the swap
            held = db.execute("SELECT size, root, cosigned_at FROM logs WHERE origin = ?",
                              (checkpoint.origin,)).fetchone()
            size, root, last = held if held is not None else (0, EMPTY_ROOT, 0)
            if request.old != size:
                raise Refused(409, f"this witness holds size {size}, not {request.old}", size)
            problem = self._inconsistency(request, checkpoint, root)
            if problem is not None:
                db.execute("INSERT INTO refused (origin, received_at, status, reason, request) VALUES (?, ?, ?, ?, ?)",
                           (checkpoint.origin, int(self.clock()), 422, problem, body))
                db.execute("COMMIT")
                raise Refused(422, problem)
            stamp = max(int(self.clock()), last)  # never before a cosignature it gave this log
            line = self.cosigner.cosign(text, stamp)
            if held is None:
                swapped = db.execute("INSERT OR IGNORE INTO logs VALUES (?, ?, ?, ?, ?)",
                                     (checkpoint.origin, checkpoint.size, checkpoint.root, request.note, stamp))
            else:
                swapped = db.execute("UPDATE logs SET size = ?, root = ?, note = ?, cosigned_at = ? "
                                     "WHERE origin = ? AND size = ? AND root = ?",
                                     (checkpoint.size, checkpoint.root, request.note, stamp, checkpoint.origin,
                                      size, root))
            if swapped.rowcount != 1:
                raise Refused(409, "another request changed this log's state meanwhile", size)
            db.execute("INSERT INTO cosigned (origin, size, root, cosigned_at) VALUES (?, ?, ?, ?)",
                       (checkpoint.origin, checkpoint.size, checkpoint.root, stamp))
            db.execute("COMMIT")  # persisted before the cosignature leaves
            return line
        finally:
            if db.in_transaction:
                db.execute("ROLLBACK")
            db.close()

    @staticmethod
    def _inconsistency(request: Submission, checkpoint: Checkpoint, root: bytes) -> str | None:
        """Why the checkpoint is not an append-only growth of the tree held (size request.old, `root`)."""
        if checkpoint.size == 0 and checkpoint.root != EMPTY_ROOT:
            return "a checkpoint of size 0 must have the empty tree's root"
        if request.old == checkpoint.size:
            if checkpoint.root != root:
                return f"the size held ({request.old}) with another root: the log has forked"
            return "a proof between equal sizes must be empty" if request.proof else None
        if request.old == 0:
            return "a proof from size 0 must be empty" if request.proof else None
        try:
            verify_consistency(request.old, checkpoint.size, root, checkpoint.root, request.proof)
        except IntegrityError as exc:
            return f"from size {request.old} to {checkpoint.size}: {exc}"
        return None

    def held(self, origin: str) -> tuple[int, bytes, str, int] | None:
        """(size, root, note, cosigned_at) of the checkpoint last cosigned for `origin`, or None."""
        with closing(self._connect()) as db:
            return db.execute("SELECT size, root, note, cosigned_at FROM logs WHERE origin = ?", (origin,)).fetchone()

    def history(self, origin: str) -> list[tuple[int, bytes, int]]:
        """(size, root, time) of every cosignature given for `origin`, in the order given."""
        with closing(self._connect()) as db:
            return db.execute("SELECT size, root, cosigned_at FROM cosigned WHERE origin = ? ORDER BY id",
                              (origin,)).fetchall()

    def refused(self) -> list[tuple[str, int, str, bytes]]:
        """Every refused log-signed request kept: (origin, status, reason, request body), oldest first."""
        with closing(self._connect()) as db:
            return db.execute("SELECT origin, status, reason, request FROM refused ORDER BY id").fetchall()
