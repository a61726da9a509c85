"""Inputs cut into units, the pieces an import decodes one at a time (`decode.decode_unit`), here or in a worker.

A unit is a whole input (a record, one event line, or a file whose first line is not an event line) or a chunk
of `Sizes.chunk_lines` event lines, cut at "\\n" only, as JSON Lines cuts them (`inputs.split_lines`): a raw
U+2028 inside a string ends no line. A file larger than `Sizes.stream_bytes` (and stdin past it, kept in a
temporary file) is read in blocks rather than whole, so an input of any size holds a bounded part of itself in
memory. An input that may hold exported log lines comes in two parts, each
a pass over all of it: its log lines, then its new facts, so its log lines are appended first, as when the
input is one unit.

This module reads and cuts; it never decodes an event or a record and never touches the store. An input that
cannot be read becomes a unit carrying its error, raised when its turn comes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from itertools import chain, islice
from typing import IO, NamedTuple

import orjson

from ledger.core.canonical import parse_json
from ledger.core.errors import InputError, LedgerError
from ledger.core.inputs import (
    STDIN,
    decode_input,
    file_lines,
    is_stream,
    keep_stdin,
    read_input,
    scan_file,
    split_lines,
)
from ledger.core.limits import RECORD

CHUNK_LINES = 2000  # event lines per unit: large enough that a worker's round trip costs little
TASK_BYTES = 256 * 1024  # units of input sent to a worker at once (a chunk of lines alone; records together)
# An input larger than this is read in blocks of STREAM_BLOCK bytes, not whole: read whole, a file is held
# several times over in memory while it is decoded.
STREAM_BYTES = 64 << 20
STREAM_BLOCK = 4 << 20
# Bytes of input one job decodes before it takes the write lock; beyond them it decodes as it appends, so the
# lock of a small import is held for its appends only and a large one holds a bounded part of itself decoded.
DECODE_AHEAD = 16 << 20
# The key `seq`, plain or with any of its letters escaped: only a line holding it is an exported log line.
SEQ_KEY = re.compile(r'"(?:s|\\u0073)(?:e|\\u0065)(?:q|\\u0071)"')


@dataclass(frozen=True)
class Sizes:
    """How an import cuts and paces its input; every field defaults to the constant of its name. `chunk_lines`:
    event lines per unit. `task_bytes`: bytes of units handed to a worker at once, and the size up to which a
    worker reads a file itself. `stream_bytes`: the size past which an input is read in blocks of
    `stream_block` bytes. `decode_ahead`: bytes of input one job decodes before the write lock is taken.
    The outcome of an import never depends on them, only its memory and its time."""

    chunk_lines: int = CHUNK_LINES
    task_bytes: int = TASK_BYTES
    stream_bytes: int = STREAM_BYTES
    stream_block: int = STREAM_BLOCK
    decode_ahead: int = DECODE_AHEAD


class Part(Enum):
    """Of an input that may hold log lines, which of its lines a unit takes (the input comes in two parts)."""

    LOG_LINES = "log lines"
    NEW_FACTS = "new facts"


class Unit(NamedTuple):
    """A piece of one input, decoded on its own: `text` (a whole input) or `lines` (a chunk of event lines)."""

    name: str
    text: str | None = None  # a whole input, parsed as `parse_input` would
    lines: list[str] | None = None  # or a chunk of event lines
    first: int = 1  # the chunk's first line number
    last: bool = True  # the input (or its part) ends with this unit
    part: Part | None = None  # of an input that may hold log lines: which of its lines this unit takes
    size: int = 0  # bytes of the input it holds
    error: LedgerError | None = None  # the input could not be read or decoded: raised when its turn comes
    unread: bool = False  # a small file, to be read and cut into units by a worker (`input_units`, `defer`)


Groups = Iterator[tuple[list[str], int]]  # an input's lines, chunk_lines at a time, each with the bytes read by its end


class KeptStdin:
    """stdin, read once and kept for every pass an import makes over its inputs (an attempt that gives up reads
    them again): its bytes up to `Sizes.stream_bytes`, beyond that an unnamed temporary file
    (`inputs.keep_stdin`, which stops at its limit) read in blocks as a large file is. So is every other input
    that can be read once only (`inputs.is_stream`: a FIFO, `<(zcat x.gz)`, a device), each kept apart. The
    import calls `close`, which removes the files."""

    def __init__(self) -> None:
        self.held: dict[str, bytes | IO[bytes]] = {}

    def units(self, sizes: Sizes, name: str = STDIN) -> Iterator[Unit]:
        """The units of stdin (or of the stream `name`); a unit carrying the error when it cannot be read or kept."""
        if name not in self.held:
            try:
                self.held[name] = keep_stdin(sizes.stream_bytes, name)
            except InputError as exc:
                yield Unit(name, error=exc)
                return
        held = self.held[name]
        yield from read_whole(name, sizes, held) if isinstance(held, bytes) else _streamed(name, sizes, held)

    def close(self) -> None:
        """Remove the temporary files stdin and the streams were kept in, if any (unnamed: gone once closed)."""
        for held in self.held.values():
            if not isinstance(held, bytes):
                held.close()


def input_units(names: list[str], sizes: Sizes = Sizes(), stdin: KeptStdin | None = None,
                defer: bool = False) -> Iterator[Unit]:
    """Every input's units, in input order, read lazily (only the units in flight are held). `stdin` keeps `-`
    for every pass the caller makes (it closes it); a fresh one when None. With `defer`, a file of at most
    `sizes.task_bytes` is one unit naming it (`unread`), which a worker reads and cuts as it would be cut here
    (`wire.decode_read`). An input that cannot be read becomes a unit carrying its error, and ends the units."""
    stdin = KeptStdin() if stdin is None else stdin
    for name in names:
        if is_stream(name):
            units = stdin.units(sizes, name)
        elif defer and (size := file_size(name)) <= sizes.task_bytes:
            units = iter([Unit(name, size=size, unread=True)])
        else:
            units = _streamed(name, sizes) if file_size(name) > sizes.stream_bytes else read_whole(name, sizes)
        for unit in units:
            yield unit
            if unit.error is not None:
                return


def read_whole(name: str, sizes: Sizes, data: bytes | None = None, kept: IO[bytes] | None = None) -> Iterator[Unit]:
    """An input read whole, as units: the file `name`, or its `data`, or `kept` (stdin in a temporary file).
    A unit carrying the error when it cannot be read or is not text."""
    try:
        if data is None:
            data = read_input(name, RECORD, kept)
        text = decode_input(name, data)
    except InputError as exc:
        yield Unit(name, error=exc)
        return
    lines = split_lines(text)
    if not _event_lines(lines):
        yield Unit(name, text=text, size=len(data))
        return
    count, step = len(lines), sizes.chunk_lines  # each group with its share of the bytes, for progress

    def groups() -> Groups:
        return ((lines[start:start + step], len(data) * min(start + step, count) // count)
                for start in range(0, count, step))

    yield from _in_parts(name, groups(), groups, bool(SEQ_KEY.search(text)))


def _streamed(name: str, sizes: Sizes, kept: IO[bytes] | None = None) -> Iterator[Unit]:
    """A large file (or `kept`, stdin in a temporary file) read in blocks rather than whole, twice (three
    times when it holds new facts and log lines): checked first as `decode_input` checks a file (and searched
    for log lines), then cut into chunks of lines as `split_lines` cuts its whole text, so the same units come
    out. Read whole after all when its first chunk does not show it to be event lines (a large record)."""
    block = sizes.stream_block
    try:
        mixed = scan_file(name, SEQ_KEY, block=block, kept=kept)
        lines = file_lines(name, block, kept)
        first = list(islice(lines, sizes.chunk_lines))
    except InputError as exc:
        yield Unit(name, error=exc)
        return
    if not _event_lines([line for line, _ in first]):  # true of the first lines only if true of them all
        yield from read_whole(name, sizes, kept=kept)
        return
    # The new facts of a file holding log lines: read once more (a file that changed is named in its turn).
    yield from _in_parts(name, _grouped(chain([first], _groups(lines, sizes))),
                         lambda: _grouped(_groups(file_lines(name, block, kept), sizes)), mixed)


def _groups(lines: Iterator[tuple[str, int]], sizes: Sizes) -> Iterator[list[tuple[str, int]]]:
    """`file_lines` in groups of `sizes.chunk_lines`."""
    return iter(lambda: list(islice(lines, sizes.chunk_lines)), [])


def _grouped(groups: Iterator[list[tuple[str, int]]]) -> Groups:
    """Groups of `file_lines` as `_chunks` takes them: their lines, and the bytes read by their end."""
    return (([line for line, _ in group], group[-1][1]) for group in groups)


def _in_parts(name: str, groups: Groups, again: Callable[[], Groups], mixed: bool) -> Iterator[Unit]:
    """An input's chunks from its `groups` of lines. An input that may hold log lines (`mixed`: a line holds
    the key `seq`) comes in two parts, each a pass over all of it: its log lines, then, should a line of it be
    a new fact, its new facts, from the groups `again` gives. Its log lines so go before its new facts, as
    when an input is one unit, and neither part is held back until the input ends."""
    if not mixed:
        yield from _chunks(name, groups, None)
        return
    facts = False

    def watched() -> Groups:
        nonlocal facts
        for lines, done in groups:
            facts = facts or any(not logged(line) and line.strip() for line in lines)
            yield lines, done

    yield from _chunks(name, watched(), Part.LOG_LINES)
    if facts:
        yield from _chunks(name, again(), Part.NEW_FACTS)


def _chunks(name: str, groups: Groups, part: Part | None) -> Iterator[Unit]:
    """An input's event lines as units, from its groups of lines, each weighing the bytes of the input it
    holds (what a worker's batch weighs). A file that can no longer be read (it went away between two
    readings) becomes a unit carrying the error."""
    number = read = 0
    try:
        pending = next(groups, None)
        while pending is not None:
            following = next(groups, None)
            lines, done = pending
            yield Unit(name, lines=lines, first=number + 1, last=following is None, part=part, size=done - read)
            number, read, pending = number + len(lines), done, following
    except InputError as exc:
        yield Unit(name, error=exc)


def _event_lines(lines: list[str]) -> bool:
    """Whether `parse_input` would take this text as event lines with a first line that parses: then the
    chunks can be decoded apart. (A first line that is a JSON text alone, followed by another non-blank line,
    is never part of one document spanning several lines: the document would end where that line ends.)"""
    if len(lines) < 2 or not lines[0].strip() or not any(line.strip() for line in lines[1:]):
        return False
    try:
        parse_json(lines[0])
    except InputError:
        return False
    return True


def logged(line: str) -> bool:
    """Whether a line that the part of log lines parsed and checked is a log line: a JSON object with the key
    `seq` (what the decoder asks, with a parser the strict one agrees with on what it accepts). An exported
    line opens with its first key, `chain_hash`, which a new fact cannot carry (it would have been refused);
    a line without the key `seq` anywhere is none."""
    if line.startswith('{"chain_hash":'):
        return True
    if not SEQ_KEY.search(line):
        return False
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return isinstance(obj, dict) and "seq" in obj


def file_size(name: str) -> int:
    """The size of a file; 0 when it cannot be seen (reading it names the problem when its turn comes)."""
    try:
        return os.stat(name).st_size
    except OSError:
        return 0
