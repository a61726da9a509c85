"""An auditing witness's look at a log's content (`witness serve --audit ORIGIN=URL|DIR`): before the witness
cosigns a tree of the log, every entry it had not seen is fetched from the log's tiles and imported into the
witness's own copy of the log (the monitor's path, `monitor.catch_up`: through the one bounded client, each
entry a canonical event the import rules accept after the ones before it), the paper index is re-computed at
that size and compared with the root of the log's paper index note for the tree (`paper-index/<size>`, fetched
from the log). The outcome, kept per tree, says whether the witness may cosign it and its index note.

One worker thread per log does the work, so a request never waits on the log for longer than `WAIT`: it asks
for its tree (`want`), and finds the outcome done, or is answered a retry status. With a poll interval the
worker also follows the log's own `/checkpoint` between requests, so that a request finds the work done.

It never cosigns, never writes the witness's state and never keeps more than KEPT outcomes: the witness
(`cosigning_witness`) decides, and keeps the evidence within its bounds.
"""

from __future__ import annotations

import base64
import hashlib
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ledger.core.canonical import canonical
from ledger.core.errors import LedgerError
from ledger.core.files import write_file
from ledger.log.signed_notes import Checkpoint, Verifier, open_note, verify_checkpoint
from ledger.services.fetch import UnreachableError
from ledger.services.monitor_source import MisbehaviourError, Source

if TYPE_CHECKING:
    from ledger.storage.store import Store

INDEX_NOTE = "paper-index/{size}"  # where a log gives the paper index note of each tree it signed
WAIT = 2.0  # seconds a request waits for its tree's audit before it is answered 503 with Retry-After
RETRY_AFTER = 1  # seconds, in that answer
TIMEOUT = 600.0  # seconds one audit may read the log for (`witness serve --audit-timeout`)
KEPT = 16  # outcomes remembered per log (a log's own signed trees only: a request must carry its signature)
NAMED = 5  # papers a refusal names when the index roots differ
AUDITED, REFUSED, NO_INDEX, UNREADABLE = 200, 422, 424, 502  # an outcome's status, the witness's answer


@dataclass(frozen=True)
class Outcome:
    """The audit of one tree: AUDITED (with the log-signed index note's text, to cosign), REFUSED (an entry, the
    tree or the index root is not what the log's tiles and the import rules give), NO_INDEX, or UNREADABLE
    (the log could not be read within the bounds). The last two accuse nobody and are not remembered."""
    status: int
    reason: str
    index_text: str = ""
    evidence: str = ""  # what shows it, as a line of canonical JSON (the failing entry, the index note)


def folder_of(state: str, origin: str) -> Path:
    """The folder beside the witness's state file `state` that holds its copy of the log `origin`."""
    name = re.sub(r"[^A-Za-z0-9.-]", "_", origin)[:64] + "-" + hashlib.sha256(origin.encode()).hexdigest()[:8]
    return Path(f"{state}.audit") / name


class Auditor:
    """The audit of one log (`origin`, read at `where`, its key `verifier`), its copy in `folder`."""

    def __init__(self, origin: str, where: str, verifier: Verifier, folder: Path, poll: float = 0.0,
                 timeout: float = TIMEOUT):
        """Raises: UnreachableError for a `where` that is neither a URL nor a folder, InputError for a bad URL."""
        Source(where, timeout)  # checked once, at start
        self.origin, self.where, self.verifier, self.folder = origin, where, verifier, folder
        self.poll, self.timeout = poll, timeout
        self.outcomes: OrderedDict[tuple[int, bytes], Outcome] = OrderedDict()
        self.wanted: dict[tuple[int, bytes], tuple[str, Checkpoint]] = {}
        self.changed = threading.Condition()
        self.worker = threading.Thread(target=self._work, name=f"audit {origin}", daemon=True)

    def start(self) -> None:
        """Start the worker thread (the server's process keeps it until it exits)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self.worker.start()

    def want(self, note: str, signed: Checkpoint) -> None:
        """Ask for the audit of the tree of the log-signed `note` (`signed`), unless it is done or asked."""
        key = (signed.size, signed.root)
        with self.changed:
            if key not in self.outcomes and key not in self.wanted and len(self.wanted) < KEPT:
                self.wanted[key] = (note, signed)
                self.changed.notify_all()

    def wait(self, signed: Checkpoint, seconds: float) -> None:
        """Wait up to `seconds` for the outcome of the tree's audit."""
        with self.changed:
            self.changed.wait_for(lambda: (signed.size, signed.root) in self.outcomes, timeout=seconds)

    def outcome(self, signed: Checkpoint) -> Outcome | None:
        """The outcome of the tree's audit; None when it is not done. An UNREADABLE or NO_INDEX outcome is
        given once, then forgotten (the next request tries again: the log may answer, or publish the note)."""
        key = (signed.size, signed.root)
        with self.changed:
            found = self.outcomes.get(key)
            if found is not None and found.status in (UNREADABLE, NO_INDEX):
                del self.outcomes[key]
            return found

    def _work(self) -> None:
        while True:
            with self.changed:
                self.changed.wait_for(lambda: bool(self.wanted), timeout=self.poll or None)
                job = min(self.wanted.items(), key=lambda item: item[0][0]) if self.wanted else None
            if job is None:
                job = self._polled()
            if job is None:
                continue
            try:
                done = self.audit(*job[1])
            except Exception as exc:  # noqa: BLE001 (the worker must outlive any one audit, or every request waits)
                done = Outcome(UNREADABLE, f"the audit of tree {job[0][0]} could not run: {_line(exc)}")
            with self.changed:
                self.wanted.pop(job[0], None)
                self.outcomes[job[0]] = done
                while len(self.outcomes) > KEPT:
                    self.outcomes.popitem(last=False)
                self.changed.notify_all()

    def _polled(self) -> tuple[tuple[int, bytes], tuple[str, Checkpoint]] | None:
        """The tree the log's /checkpoint signs, when it is one not audited yet (following ahead)."""
        try:
            data = Source(self.where, self.timeout).get("checkpoint", "checkpoint")
            note = data.decode("utf-8") if data is not None else ""
            signed = verify_checkpoint(note, self.verifier)
        except (LedgerError, UnicodeDecodeError):
            return None  # a request's own checkpoint is audited all the same
        key = (signed.size, signed.root)
        with self.changed:
            return None if key in self.outcomes else (key, (note, signed))

    def audit(self, note: str, signed: Checkpoint) -> Outcome:
        """Audit the tree of the log-signed `note` now, in this thread (the worker's, or a test's)."""
        from ledger.services.monitor import catch_up  # here only: a plain witness never loads the monitor
        from ledger.storage.store import Store

        source = Source(self.where, self.timeout)
        location = str(self.folder / "ledger.db")
        try:
            store = Store.open(location) if Path(location).exists() else Store.create(location)
        except LedgerError as exc:
            return Outcome(UNREADABLE, f"the witness's copy of the log cannot be opened: {exc}")
        try:
            seen = self.folder / "seen"
            held = seen.read_text(encoding="utf-8") if seen.exists() else None
            try:
                catch_up(source, store, note, signed, held, self.where)
            except MisbehaviourError as exc:
                return Outcome(REFUSED, _line(exc), evidence=canonical(exc.evidence).decode())
            if store.head()[0] == signed.size:
                write_file(seen, note.encode())
            return self._index(source, store, signed, held)
        except UnreachableError as exc:
            return Outcome(UNREADABLE, f"the log could not be read for the audit of tree {signed.size}: {_line(exc)}")
        except LedgerError as exc:
            return Outcome(UNREADABLE, f"the audit of tree {signed.size} could not run: {_line(exc)}")
        finally:
            store.close()

    def _index(self, source: Source, store: Store, signed: Checkpoint, held: str | None) -> Outcome:
        """The paper index re-computed at the tree's size against the root of the log's index note for it."""
        from ledger.storage.index_reads import root_at

        path = INDEX_NOTE.format(size=signed.size)
        data = source.get(path, "checkpoint")
        if data is None:
            return Outcome(NO_INDEX, f"the log gives no paper index note for tree {signed.size} "
                                     f"({self.where}/{path}): nothing to audit the index against")
        try:
            index_note = data.decode("utf-8")
            index = verify_checkpoint(index_note, self.verifier)
            text = open_note(index_note, self.verifier)
        except (LedgerError, UnicodeDecodeError) as exc:
            return Outcome(REFUSED, f"{self.where}/{path}: not a paper index note of this log: {_line(exc)}")
        if not index.same_tree(signed) or index.index_root is None:
            return Outcome(REFUSED, f"{self.where}/{path}: not the paper index note of tree {signed.size} (another "
                                    f"tree, or no paper-index/v1 line)", evidence=index_note)
        store.keep_index(signed.size)
        with store.snapshot() as cursor:
            ours = root_at(cursor, signed.size, store.index_nodes)
            since = _size(held) if held is not None and _size(held) < signed.size else 0
            papers = sorted(cursor.papers_since(since, signed.size))
        if ours is not None and ours[1] == index.index_root:
            return Outcome(AUDITED, "audited", index_text=text)
        named = ", ".join(f"arXiv:{p}" for p in papers[:NAMED]) + (f" and {len(papers) - NAMED} more"
                                                                  if len(papers) > NAMED else "")
        which = f"paper {named}" if len(papers) == 1 else f"one of the papers changed since tree {since}: {named}"
        return Outcome(REFUSED, f"the paper index of tree {signed.size} differs at {which or 'no paper'}: the log's "
                                f"note gives root {_b64(index.index_root)}, the entries give "
                                f"{_b64(ours[1]) if ours else 'none'}", evidence=index_note)


def _size(note: str) -> int:
    return int(note.split("\n", 2)[1])  # a note this witness verified and kept


def _b64(digest: bytes) -> str:
    return base64.b64encode(digest).decode()


def _line(exc: Exception) -> str:
    """An error's words on one line (a refusal is one line)."""
    return " ".join(str(exc).split())[:400]
