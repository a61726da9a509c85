"""A witness, as C2SP `tlog-witness`: it cosigns a log's checkpoint only when the log's key signed it and it
is consistent with the last checkpoint it cosigned for that origin, so two readers shown two histories under
one key cannot both get its cosignature.

    request  = "old <size>\\n" + up to 63 lines "<base64 hash>\\n" (the consistency proof) + "\\n" + signed note
    answer   = 200 and cosignature lines; 400 malformed or old > size; 403 no valid signature by the log's key;
               404 an origin it does not witness; 409 old is not the size it holds (body "<size>\\n",
               text/x.tlog.size); 413 a body over 16 KiB; 422 a proof that does not verify, or the size it
               holds with another root (C2SP PR #280; it was 409 before)

Its state is one SQLite file (`ledger.storage.witness_state`): per origin the checkpoint it last cosigned,
each tree it cosigned, and evidence. A request is checked and the state swapped in one transaction whose UPDATE
names the size it read (compare-and-swap), so two logs pushing at once cannot roll it back.

What anyone can send must cost the witness nothing it keeps, and must never accuse a log. So evidence is only
what the log's key signed that contradicts what the witness holds: a log-signed checkpoint of the size held
with another root (a fork; for size 0, a root other than the empty tree's). It is kept with the held note it
contradicts, once per checkpoint body (the hash of the signed text: anyone can add signature lines), and at
most EVIDENCE_ROWS rows or EVIDENCE_BYTES per origin. A consistency proof is not signed: one that does not
verify says nothing about the log (anyone can pair an honest note with a bad proof), so it is answered 422
and forgotten. Re-pushing the checkpoint held adds no row: it is cosigned again, and only the time of the
last cosignature is updated in place, at most once a second.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from ledger.core.errors import InputError, IntegrityError
from ledger.log.cosignature import Cosigner
from ledger.log.merkle import EMPTY_ROOT, verify_consistency
from ledger.log.signed_notes import DASH, Checkpoint, Verifier, open_note, parse_checkpoint, split_note
from ledger.services.witness_audit import AUDITED, NO_INDEX, RETRY_AFTER, UNREADABLE, WAIT, Auditor
from ledger.storage.witness_state import Held, Swap, WitnessState

MAX_BODY = 16 * 1024  # as transparency-dev/witness: more than a 63-line proof and a note with many signatures
MAX_PROOF = 63  # tlog-witness: a client MUST NOT send more
RATE = 10.0  # requests a second per client address (`witness serve --rate`): a log pushes once per checkpoint
SIZE_TYPE = "text/x.tlog.size"
# A log's key signs a fork at most a few times before someone notices; these bound what a log that signs
# forks in a loop (or a stolen key) can make a witness keep. Past either, nothing more is kept for that origin.
EVIDENCE_ROWS = 1000
EVIDENCE_BYTES = 1024 * 1024


class CosignRefusedError(Exception):
    """A request the witness does not cosign: its HTTP status, a one-line reason, for 409 the size held, and for
    a log-signed contradiction what became of it as evidence ("kept", "known" already, or "full": the
    origin's cap reached, said once per origin and process) with the origin."""

    def __init__(self, status: int, reason: str, size: int | None = None, evidence: str | None = None,
                 origin: str = "", retry: int | None = None):
        super().__init__(reason)
        self.status, self.reason, self.size, self.evidence, self.origin = status, reason, size, evidence, origin
        self.retry = retry  # seconds, for Retry-After (503: the audit of the tree is not done yet)


class _AuditPendingError(Exception):
    """The audit of the tree asked for is not done: wait for it outside the state's transaction."""


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
    Raises: CosignRefusedError (400, or 413 for a body over MAX_BODY) saying what is malformed."""
    if len(body) > MAX_BODY:
        raise CosignRefusedError(413, f"the request is over {MAX_BODY} bytes")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise CosignRefusedError(400, "the request is not UTF-8") from None
    head, sep, note = text.partition("\n\n")
    lines = head.split("\n")
    found = re.fullmatch(r"old (0|[1-9][0-9]{0,18})", lines[0])
    if not sep or not found:
        raise CosignRefusedError(400, "expected an 'old <size>' line, the proof lines, a blank line and the signed note")
    if len(lines) - 1 > MAX_PROOF:
        raise CosignRefusedError(400, f"the consistency proof has {len(lines) - 1} lines, more than {MAX_PROOF}")
    proof = []
    for number, line in enumerate(lines[1:], start=2):
        try:
            hashed = base64.b64decode(line, validate=True)
        except (binascii.Error, ValueError):
            hashed = b""
        if len(hashed) != 32 or base64.b64encode(hashed).decode() != line:
            raise CosignRefusedError(400, f"line {number}: not a base64 SHA-256 hash")
        proof.append(hashed)
    return Submission(int(found.group(1)), proof, note)


class Witness:
    """The witness of the logs in `logs` (origin -> the log's verifier key), cosigning with `cosigner`,
    its state in the SQLite file `path`. One connection per call: a server's threads each call it."""

    def __init__(self, cosigner: Cosigner, logs: dict[str, Verifier], path: str, new: bool = False,
                 clock: Callable[[], float] = time.time, audits: dict[str, Auditor] | None = None):
        """`audits`: the logs it audits (origin -> its Auditor, `witness serve --audit`), a subset of `logs`.
        Raises: InputError for a state file that is missing (unless `new`), already there (when `new`), or
        not a witness's state."""
        self.cosigner, self.logs, self.clock, self.audits = cosigner, logs, clock, audits or {}
        self.state = WitnessState(path, new, lambda request: parse_submission(request).note)
        self._full: set[str] = set()  # origins whose evidence cap was reported full

    def _signed(self, note: str) -> tuple[Checkpoint, str, str]:
        """The checkpoint of a note its log's key signed, the text signed, and the note with no signature but the
        log's: 404 for an origin not witnessed, 403 without a valid signature by the log's key, 400 for a
        malformed note."""
        origin = note.split("\n", 1)[0]
        verifier = self.logs.get(origin)
        if verifier is None:
            raise CosignRefusedError(404, f"origin {origin[:100]!r}: not a log this witness follows")
        try:
            text = open_note(note, verifier)
            signature = next(line for line in split_note(note)[1] if _by(line, verifier))
            return parse_checkpoint(text), text, f"{text}\n{signature}\n"
        except IntegrityError as exc:
            raise CosignRefusedError(403, str(exc)) from None
        except InputError as exc:
            raise CosignRefusedError(400, str(exc)) from None

    def add_checkpoint(self, body: bytes) -> str:
        """Check a request and, when it holds, swap the state and answer the cosignature line (with a newline).
        Raises: CosignRefusedError with the status tlog-witness gives the first check that fails."""
        request = parse_submission(body)
        checkpoint, text, signed = self._signed(request.note)  # `text` as signed: its extension lines in its order
        if request.old > checkpoint.size:
            raise CosignRefusedError(400, f"old size {request.old} is larger than the checkpoint's {checkpoint.size}")
        auditor = self.audits.get(checkpoint.origin)
        if auditor is None:
            return self._swap(request, checkpoint, text, signed, None)
        auditor.want(signed, checkpoint)  # begun at once: the log's first round (`old 0`, answered 409) included
        try:
            return self._swap(request, checkpoint, text, signed, auditor)
        except _AuditPendingError:
            auditor.wait(checkpoint, WAIT)  # outside the transaction: other logs' requests go on meanwhile
            return self._swap(request, checkpoint, text, signed, auditor, last=True)

    def _swap(self, request: Submission, checkpoint: Checkpoint, text: str, signed: str, auditor: Auditor | None,
              last: bool = False) -> str:
        """The checks against the state held and its swap, in one transaction; with `auditor`, the audit's
        outcome too, once every check of a plain witness held."""
        with self.state.swap() as db:
            held = db.held(checkpoint.origin)
            size, root, note, cosigned_at = held if held is not None else (0, EMPTY_ROOT, "", 0)
            if request.old != size:
                raise CosignRefusedError(409, f"this witness holds size {size}, not {request.old}", size)
            if checkpoint.size == size and checkpoint.root != root:
                problem = ("a checkpoint of size 0 must have the empty tree's root" if size == 0 else
                           f"the size held ({size}) with another root: the log has forked")
                kept = self._keep(db, checkpoint.origin, problem, text, signed, note)
                db.commit()
                raise CosignRefusedError(422, problem, evidence=kept, origin=checkpoint.origin)
            problem = self._inconsistency(request, checkpoint, root)
            if problem is not None:
                raise CosignRefusedError(422, problem)  # an unsigned proof: anyone can send one, so nothing is kept
            index = None if auditor is None else self._audited(db, auditor, checkpoint, text, signed, note, last)
            stamp = max(int(self.clock()), cosigned_at)  # never before a cosignature it gave this log
            line = self.cosigner.cosign(text, stamp)
            if index is not None:  # kept before the checkpoint's cosignature leaves, as the state is
                db.keep_index(checkpoint.origin, checkpoint.size, index, self.cosigner.cosign(index, stamp))
            if held is None:
                swapped = db.first(checkpoint.origin, checkpoint.size, checkpoint.root, signed, stamp)
            elif checkpoint.size == size:  # the checkpoint held, pushed again: no row, the time at most once a second
                if stamp == cosigned_at and index is None:
                    return line  # nothing to write (the swap rolls the empty transaction back)
                swapped = db.touch(checkpoint.origin, size, root, stamp)
            else:
                swapped = db.advance(checkpoint.origin, (size, root), checkpoint.size, checkpoint.root, signed, stamp)
            if not swapped:
                raise CosignRefusedError(409, "another request changed this log's state meanwhile", size)
            if checkpoint.size != size or held is None:
                db.add_cosigned(checkpoint.origin, checkpoint.size, checkpoint.root, stamp)
            db.commit()  # persisted before the cosignature leaves
            return line

    def _audited(self, db: Swap, auditor: Auditor, checkpoint: Checkpoint, text: str, signed: str, held: str,
                 last: bool) -> str:
        """The text of the log's paper index note of the tree, once its audit holds.
        Raises: _AuditPendingError (not done, a first time), CosignRefusedError: 503 with Retry-After (not done),
        502 (the log could not be read) or 424 (no index note), 422 (refused: the checkpoint is kept as evidence)."""
        outcome = auditor.outcome(checkpoint)
        if outcome is None:
            if not last:
                raise _AuditPendingError()
            raise CosignRefusedError(503, f"the audit of tree {checkpoint.size} is not done yet; retry in "
                                          f"{RETRY_AFTER} s", retry=RETRY_AFTER)
        if outcome.status in (UNREADABLE, NO_INDEX):  # nothing the log signed shows a fault: nothing is kept
            raise CosignRefusedError(outcome.status, outcome.reason)
        if outcome.status != AUDITED:
            kept = self._keep(db, checkpoint.origin, outcome.reason, text, signed, outcome.evidence or held)
            db.commit()
            raise CosignRefusedError(outcome.status, outcome.reason, evidence=kept, origin=checkpoint.origin)
        return outcome.index_text

    def index_note(self, note: str) -> str:
        """The cosignature line (with a newline) this witness gave the log-signed paper index note `note`, when
        it audited that tree and that note (`POST /paper-index`).
        Raises: CosignRefusedError: 404 (an origin not witnessed, or no such note cosigned), 403, 400."""
        index, text, _ = self._signed(note)
        kept = self.state.index_note(index.origin)
        if kept is None or kept[0] != text:
            raise CosignRefusedError(404, f"this witness cosigned no such paper index note of {index.origin[:100]!r} "
                                          f"(it gives the one of the last tree it audited)")
        return kept[1]

    def _keep(self, db: Swap, origin: str, reason: str, text: str, signed: str, held: str) -> str | None:
        """Keep a log-signed checkpoint that contradicts the one held, once per body and within the origin's cap:
        "kept", "known" (kept before), "full" (the cap reached, said once), or None (full, said before)."""
        digest = hashlib.sha256(text.encode()).digest()
        if db.evidence_known(digest):
            return "known"
        rows, size = db.evidence_held(origin)
        if rows >= EVIDENCE_ROWS or size + len(signed) + len(held) > EVIDENCE_BYTES:
            if origin in self._full:
                return None
            self._full.add(origin)
            return "full"
        db.add_evidence(origin, int(self.clock()), reason, digest, signed, held)
        return "kept"

    @staticmethod
    def _inconsistency(request: Submission, checkpoint: Checkpoint, root: bytes) -> str | None:
        """Why the request does not prove the checkpoint an append-only growth of the tree held (size
        request.old, `root`), once the checkpoint is known not to contradict that tree at its own size."""
        if request.old == checkpoint.size:
            return "a proof between equal sizes must be empty" if request.proof else None
        if request.old == 0:
            return "a proof from size 0 must be empty" if request.proof else None
        try:
            verify_consistency(request.old, checkpoint.size, root, checkpoint.root, request.proof)
        except IntegrityError as exc:
            return f"from size {request.old} to {checkpoint.size}: {exc}"
        return None

    def held(self, origin: str) -> Held | None:
        """(size, root, note, cosigned_at) of the checkpoint last cosigned for `origin`, or None."""
        return self.state.held(origin)

    def history(self, origin: str) -> list[tuple[int, bytes, int]]:
        """(size, root, time) of each tree cosigned for `origin`, in the order cosigned, with the time first given."""
        return self.state.history(origin)

    def evidence(self) -> list[tuple[str, str, str, str]]:
        """Every log-signed contradiction kept: (origin, reason, the log-signed note, the note held that it
        contradicts), oldest first."""
        return self.state.evidence()


def _by(line: str, verifier: Verifier) -> bool:
    """Whether a signature line is one open_note would check with the verifier (it verified the first such)."""
    name, _, blob = line.removeprefix(f"{DASH} ").partition(" ")
    try:
        raw = base64.b64decode(blob, validate=True)
        return name == verifier.name and raw[:4] == verifier.id and len(raw) == 68
    except (binascii.Error, ValueError):
        return False
