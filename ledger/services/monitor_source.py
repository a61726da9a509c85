"""What the monitor reads a log from, and what it raises when the log misbehaves: `Source`, the log's files
from a URL (through `ledger.services.fetch`) or a published folder, each capped by its kind and read by the
run's deadline; `MisbehaviourError`, with the evidence another party can check offline. It never writes.
"""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path
from urllib.parse import quote

from ledger.core.errors import IntegrityError
from ledger.core.limits import ANSWERS
from ledger.services.fetch import Deadline, UnreachableError, check_url, get

TIMEOUT = 600.0  # seconds, the default deadline of a whole run (`monitor --timeout`)


class MisbehaviourError(IntegrityError):
    """The log or its site did something an honest one cannot: `evidence` holds what shows it (the
    checkpoints, the failing proof or the record served and rebuilt). Exit 1; nothing is saved."""

    def __init__(self, message: str, evidence: dict):
        super().__init__(message)
        self.evidence = {"problem": message, **evidence}


class Source:
    """The log's files, from a URL (HTTP GET, through `ledger.services.fetch`) or a published folder; each
    capped by its kind (`limits.ANSWERS`), and every read done by the run's deadline."""

    def __init__(self, where: str, timeout: float = TIMEOUT):
        """Raises: UnreachableError for a `where` that is neither a URL nor a folder; InputError for a URL that
        cannot be one (`http://[x`)."""
        self.where, self.deadline = where.rstrip("/"), Deadline(timeout)
        self.remote = where.startswith(("http://", "https://"))
        if self.remote:
            check_url(where, "the log's URL")
        if not self.remote and not Path(where).is_dir():
            raise UnreachableError(f"{where}: not a URL (http:// or https://) nor a published folder")

    def get(self, path: str, kind: str, query: dict[str, str] | None = None) -> bytes | None:
        """The bytes at `path` (no leading slash), at most ANSWERS[kind]; None when the log has no such file
        (404, no file).
        Raises: UnreachableError (past the deadline, over the cap, not a regular file, or no answer)."""
        if not self.remote:
            self.deadline.left(f"{self.where}/{path}")
            return _read_file(Path(self.where) / path, kind, f"{self.where}/{path}")
        given = "&".join(f"{k}={quote(v, safe=':')}" for k, v in (query or {}).items())
        return get(f"{self.where}/{path}" + (f"?{given}" if given else ""), kind, self.deadline)


def _read_file(path: Path, kind: str, name: str) -> bytes | None:
    """A published file, read up to its cap: a FIFO or a device (a symlink to /dev/zero) is refused unread.
    Raises: UnreachableError."""
    limit = ANSWERS[kind].size
    try:
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as file:  # a FIFO does not block its open
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                raise UnreachableError(f"{name}: not a regular file")
            data = file.read(limit + 1)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise UnreachableError(f"{name}: {exc.strerror}") from None
    if len(data) > limit:
        raise UnreachableError(f"{name}: over the {limit:,}-byte limit for a {kind}")
    return data


def note_text(data: bytes | None, name: str) -> str:
    """A note the log answered (None: it had none), as text.
    Raises: UnreachableError when there was none, MisbehaviourError (with the bytes) when it is not UTF-8."""
    if data is None:
        raise UnreachableError(f"{name}: not found (is it the log's URL or published folder, with a key?)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise MisbehaviourError(f"{name}: not UTF-8", {"checkpoint": base64.b64encode(data).decode()}) from None
