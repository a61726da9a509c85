"""Reading what a user hands the ledger: a file (or stdin) as bytes, then as text; or a large file in blocks.

Every command reads its inputs through here, so an empty, binary or unreadable file is named the same way
everywhere, and every read stops at the limit of its kind (`ledger.core.limits`), checked while reading: what
is not a regular file (`/dev/zero`, a FIFO) is read up to the limit, never whole. It never reads a file found
in a folder that is not a regular one. Standard library only: the offline verifier uses it too.
"""

from __future__ import annotations

import codecs
import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from ledger.core.errors import InputError
from ledger.core.limits import RECORD, STREAM, Limit

STDIN = "-"
BLOCK = 4 << 20  # bytes read at a time from a file read in blocks
_PATTERN_SPAN = 64  # the longest match `scan_file` finds across two blocks


INPUT_SUFFIXES = (".json", ".jsonl")  # what a directory given as an input stands for


def input_files(names: list[str], suffixes: tuple[str, ...] = INPUT_SUFFIXES) -> list[str]:
    """The inputs `names` stand for: a file (or `-`) itself, and a directory the files below it whose names
    end in `suffixes` (`.json` and `.jsonl`), at any depth, in the order of their paths; hidden files and
    folders are passed over. So a corpus of more files than a command line holds (about 60,000 paths) can be
    named, and a folder that `replay --out` wrote is imported as it stands.
    A file found in a directory must be a regular file (or a symlink to one): a device or a FIFO named like
    an input, or a symlink to one, is refused, not read.
    Raises: InputError naming a directory that cannot be read, or that holds no such file, or a file in it
    that is not a regular file."""
    def unreadable(error: OSError) -> None:
        raise InputError(f"{error.filename}: cannot read the directory: {error.strerror}")

    found: list[str] = []
    for name in names:
        if name == STDIN or not os.path.isdir(name):
            found.append(name)  # read_input names the problem of a missing or unreadable file in its turn
            continue
        files = []
        for folder, folders, children in os.walk(name, onerror=unreadable):
            folders[:] = [child for child in folders if not child.startswith(".")]
            files += [os.path.join(folder, child) for child in children
                      if child.endswith(suffixes) and not child.startswith(".")]
        if not files:
            raise InputError(f"{name}: a directory with no {' or '.join(suffixes)} file in it")
        files.sort()
        for path in files:  # the first in path order is named
            _regular_in_folder(path)
        found += files
    return found


def _regular_in_folder(path: str) -> None:
    # os.walk lists a symlink to /dev/zero, or a FIFO, among the files: reading one would never end.
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # a dangling symlink or a file gone since: read_input names the problem in its turn
    if not stat.S_ISREG(mode):
        raise InputError(f"{path}: not a regular file ({_kind(mode)}), in a directory of inputs")


def _kind(mode: int) -> str:
    return "a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else \
        "a socket" if stat.S_ISSOCK(mode) else "a directory" if stat.S_ISDIR(mode) else "not a file"


def is_stream(name: str) -> bool:
    """Whether `name` is stdin (`-`) or a path to what is read as a stream rather than a file: a FIFO (a
    shell's `<(zcat x.gz)`), a device, a socket: it can be read once only, and has no size to be judged by."""
    if name == STDIN:
        return True
    try:
        mode = os.stat(name).st_mode
    except OSError:
        return False  # reading it names the problem
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def read_input(name: str, limit: Limit, kept: IO[bytes] | None = None) -> bytes:
    """The bytes of a file, or of stdin for `-` (or of `kept`, stdin as `keep_stdin` kept it), at most
    `limit.size` of them: the read stops one byte past the limit, whatever the file is (`/dev/zero`).
    Raises: InputError naming the file when it cannot be read, or is over its limit (naming the limit)."""
    with _opened(name, kept) as file, _reading(name):
        size = _regular_size(file)
        if size is not None and size > limit.size:
            raise over_limit(name, limit)  # refused unread
        blocks: list[bytes] = []
        read = 0
        while read <= limit.size:  # a regular file: one read of its size (no copy); else blocks, up to the limit
            block = file.read(min(BLOCK if size is None else size + 1, limit.size + 1 - read))
            if not block:
                return blocks[0] if len(blocks) == 1 else b"".join(blocks)
            blocks.append(block)
            read += len(block)
    raise over_limit(name, limit)


def _regular_size(file: IO[bytes]) -> int | None:
    """The size of an open regular file; None for a stream (a pipe, a device), whose size says nothing."""
    try:
        info = os.fstat(file.fileno())
    except (OSError, ValueError):  # io.UnsupportedOperation: an in-memory stdin
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def over_limit(name: str, limit: Limit) -> InputError:
    """The one-line refusal of an input over its limit: `key.txt: over the 4 KiB limit for a key file`."""
    return InputError(f"{name}: over {limit}")


def keep_stdin(limit: int, name: str = STDIN, spool: Limit = STREAM) -> bytes | IO[bytes]:
    """All of stdin (or of the stream `name`: a FIFO, a device), read once: its bytes when there are at most
    `limit`, else an unnamed temporary file holding them (gone once closed), to be read in blocks as a large
    file is: so that input piped from another command (`zcat corpus.jsonl.gz | ledger import -`) is never
    held whole in memory. The copy stops at `spool.size` bytes, and at the first NUL byte (which no text
    input holds: `scan_file` would refuse it, unless a byte that is not UTF-8 came before, which it names
    instead), so `/dev/zero` costs the bytes held in memory, not a full disk.
    Raises: InputError naming stdin when the temporary file cannot be written, when stdin is over `spool`,
    or holds a NUL byte."""
    with _opened(name, None) as source:
        with _reading(name):
            head = source.read(limit + 1)
        if len(head) <= limit:
            return head  # refused, if it must be, by decode_input in a file's words
        if b"\0" in head:
            raise _nul(name)
        kept = None
        try:
            kept = tempfile.TemporaryFile(prefix="ledger-stdin-")
            kept.write(head)
            copied = len(head)
            del head  # before the rest is copied: at most one block of stdin in memory from here on
            while True:
                with _reading(name):
                    block = source.read(BLOCK)
                if not block:
                    break
                copied += len(block)
                if copied > spool.size:
                    raise over_limit(name, spool)
                if b"\0" in block:
                    raise _nul(name)
                kept.write(block)
            kept.flush()
        except OSError as exc:  # the temporary file (reading stdin raised InputError)
            if kept is not None:
                kept.close()
            raise InputError(f"{name}: cannot keep stdin in a temporary file: {exc.strerror}") from None
        except InputError:
            if kept is not None:
                kept.close()  # unnamed: its blocks are freed now
            raise
        return kept


@contextmanager
def _reading(name: str) -> Iterator[None]:
    try:
        yield
    except FileNotFoundError:
        raise InputError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{name}: is a directory, expected a file") from None
    except OSError as exc:
        raise InputError(f"{name}: cannot read: {exc.strerror}") from None


@contextmanager
def _opened(name: str, kept: IO[bytes] | None) -> Iterator[IO[bytes]]:
    """The file `name` opened for reading; stdin for `-`; or `kept` (stdin in a temporary file) read from
    its start, and left open. Raises InputError naming the file when it cannot be read."""
    with _reading(name):
        if kept is not None:
            kept.seek(0)
            yield kept
        elif name == STDIN:
            yield sys.stdin.buffer
        else:
            with open(name, "rb") as file:
                yield file


def scan_file(name: str, pattern: re.Pattern[str], expected: str = "a record or event lines",
              block: int = BLOCK, kept: IO[bytes] | None = None) -> bool:
    """Check a file (or `kept`, stdin kept in a temporary file) as `decode_input` checks its bytes, reading
    it in blocks instead of whole, and say whether `pattern` (a match of at most 64 characters) occurs in
    its text.
    Raises: InputError, as `read_input` or `decode_input` would raise it, with the same words."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    blank, nul, found, read, tail = True, False, False, 0, ""
    with _opened(name, kept) as file:
        while True:
            data = file.read(block)
            blank = blank and not data.strip()  # bytes.strip, as decode_input: ASCII whitespace only
            try:
                text = decoder.decode(data, final=not data)
            except UnicodeDecodeError as exc:  # the first bad byte in file order (not whitespace: not blank)
                # Counted from the bytes of an unfinished character the decoder held back from the last block.
                raise _not_utf8(name, read - len(decoder.buffer) + exc.start) from None
            read += len(data)
            nul = nul or "\x00" in text
            if not found:
                found = pattern.search(tail + text) is not None
                tail = (tail + text)[-_PATTERN_SPAN:]
            if not data:
                break
    if blank:
        raise _empty(name, expected)
    if nul:
        raise _nul(name)
    return found


def split_lines(text: str) -> list[str]:
    """The lines of `text` as JSON Lines cuts them: at "\\n" only, a "\\r" before it being part of the end of
    the line; nothing follows a final "\\n". Never as `str.splitlines` cuts them: U+2028, U+0085, \\v and their
    kind are legal raw inside a JSON string (orjson writes U+2028 raw), so they end no line."""
    # A search for "\r" costs a tenth of the replace that most texts (ended by "\n" alone) do not need.
    lines = (text.replace("\r\n", "\n") if "\r" in text else text).split("\n")
    if not lines[-1]:  # the text ends with a line break (or is empty): no line follows it
        lines.pop()
    return lines


def file_lines(name: str, block: int = BLOCK, kept: IO[bytes] | None = None,
               limit: Limit = RECORD) -> Iterator[tuple[str, int]]:
    """The lines of a file (or `kept`) that `scan_file` accepted, as `split_lines` gives them for its whole
    text, read in blocks: each with the number of bytes read so far. A line is held whole: one of more than
    `limit.size` characters (so more bytes) is refused when the read reaches its end of the limit, not once it ends.
    Raises: InputError when the file can no longer be read, or is no longer UTF-8 (it changed since), or a
    line is over `limit`."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    carry, done, number = "", 0, 0
    with _opened(name, kept) as file:
        while True:
            data = file.read(block)
            try:
                text = decoder.decode(data, final=not data)
            except UnicodeDecodeError:
                raise InputError(f"{name}: changed while being read: no longer UTF-8 text") from None
            done += len(data)
            text, carry = carry + text, ""
            if data:  # the line not ended yet (after the last "\n", perhaps ending in "\r") waits for the next block
                end = text.rfind("\n") + 1
                text, carry = text[:end], text[end:]
            parts = split_lines(text)
            if len(carry) > limit.size:
                raise InputError(f"{name}: line {number + len(parts) + 1}: over {limit}")
            number += len(parts)
            for part in parts:
                yield part, done
            if not data:
                return


def decode_input(name: str, data: bytes, expected: str = "a record or event lines") -> str:
    """A file's bytes as text.
    Raises: InputError naming the file when it is empty (saying what was `expected`), not UTF-8, or holds NUL bytes."""
    if not data.strip():
        raise _empty(name, expected)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(name, exc.start) from None
    if "\x00" in text:
        raise _nul(name)
    return text


# What `decode_input` and `scan_file` refuse, in one set of words.
def _empty(name: str, expected: str) -> InputError:
    return InputError(f"{name}: empty file, expected {expected}")


def _not_utf8(name: str, byte: int) -> InputError:
    return InputError(f"{name}: not UTF-8 text (byte {byte}): binary file?")


def _nul(name: str) -> InputError:
    return InputError(f"{name}: contains NUL bytes: binary file?")
