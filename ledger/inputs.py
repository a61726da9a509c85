"""Reading what a user hands the ledger: a file (or stdin) as bytes, then as text.

Every command reads its inputs through here, so an empty, binary or unreadable file is named the same way
everywhere. Standard library only: the offline verifier uses it too.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .errors import InputError

STDIN = "-"


def read_input(name: str) -> bytes:
    """The bytes of a file, or of stdin for `-`. Raises InputError naming the file when it cannot be read."""
    if name == STDIN:
        return sys.stdin.buffer.read()
    path = Path(name)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{name}: is a directory, expected a file") from None
    except OSError as exc:
        raise InputError(f"{name}: cannot read: {exc.strerror}") from None


def decode_input(name: str, data: bytes, expected: str = "a record or event lines") -> str:
    """A file's bytes as text. Raises InputError naming the file when it is empty (saying what was
    `expected`), not UTF-8, or holds NUL bytes."""
    if not data.strip():
        raise InputError(f"{name}: empty file, expected {expected}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{name}: not UTF-8 text (byte {exc.start}): binary file?") from None
    if "\x00" in text:
        raise InputError(f"{name}: contains NUL bytes: binary file?")
    return text
