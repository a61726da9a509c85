"""The log as a C2SP `tlog-tiles` log: tile paths, which Merkle hashes a tile holds, and entry bundles.

    tile/<L>/<N>[.p/<W>]        hash tile: W (256 when full) hashes of tree level 8L, from index N * 256
    tile/entries/<N>[.p/<W>]    entry bundle: the leaves N * 256 .. N * 256 + W - 1, each prefixed by its
                                length as a big-endian uint16
    N in groups of three digits, every group but the last prefixed with `x` (1234067 -> x001/x234/067)

The leaf of event n is `chain.entry_bytes(...)` of that event (the canonical entry, the bytes whose blake3 is
its entry hash), so a bundle entry hashes (RFC 9162, `merkle.leaf_hash`) to the level-0 tile hash. A length
prefix of two bytes carries at most 65,535 bytes: `import` refuses an event whose entry could be longer
(`check_entry_size`), and `bundle` refuses to encode one that an older ledger holds (EntryTooLongError).

Pure: strings and bytes in, values or exceptions out. Reading a tile's hashes or entries from a store is
`ledger.tilestore`; this module never touches one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ledger.core.errors import InputError, StoreError
from ledger.log.chain import entry_bytes

HEIGHT = 8  # a tile is a subtree of height 8
WIDTH = 1 << HEIGHT  # 256 hashes in a full tile
MAX_LEVEL = 63  # C2SP: a level is 0 to 63
MAX_ENTRY = 0xFFFF  # the largest entry a bundle's uint16 length prefix can carry
HASH_SIZE = 32
# A recorded time in the ledger's form (YYYY-MM-DDTHH:MM:SS.ffffffZ) is always 27 characters, and a sequence
# number at most 19 digits (64-bit): the longest entry an event can become, whatever its seq and recording.
_LONGEST_SEQ = 2**63 - 1
_A_RECORDED_TIME = "0000-00-00T00:00:00.000000Z"
_LEVEL = re.compile(r"0|[1-9][0-9]?", re.ASCII)
_WIDTH = re.compile(r"[1-9][0-9]{0,2}", re.ASCII)
_GROUP = re.compile(r"x?[0-9]{3}", re.ASCII)


class EntryTooLongError(StoreError):
    """The log holds an entry longer than an entry bundle can carry (appended before import refused such
    events): the bundle holding it cannot be served. Exit 3, HTTP 503."""


@dataclass(frozen=True)
class Tile:
    """One tile: a hash tile of `level` (0 holds leaf hashes), or an entry bundle when `level` is None."""

    level: int | None
    index: int
    width: int = WIDTH

    @property
    def entries(self) -> bool:
        return self.level is None

    @property
    def full(self) -> bool:
        return self.width == WIDTH

    @property
    def height(self) -> int:
        """The tree level of the hashes it holds (an entry bundle: the leaves, 0)."""
        return HEIGHT * (self.level or 0)

    @property
    def first(self) -> int:
        """The index, at `height`, of its first hash (or the leaf index of its first entry)."""
        return self.index * WIDTH

    def leaves_needed(self) -> int:
        """The smallest tree size that holds this tile: every hash in it is a complete subtree."""
        return (self.first + self.width) << self.height

    def path(self) -> str:
        """Its path under the log's prefix, e.g. `tile/0/x001/234.p/5`."""
        return f"tile/{'entries' if self.entries else self.level}/{format_index(self.index)}" + \
            ("" if self.full else f".p/{self.width}")


def format_index(index: int) -> str:
    """N in groups of three digits, all but the last prefixed with `x` (Go's sumdb tile.go)."""
    groups = [f"{index % 1000:03d}"]
    index //= 1000
    while index:
        groups.append(f"x{index % 1000:03d}")
        index //= 1000
    return "/".join(reversed(groups))


def parse_tile_path(path: str) -> Tile:
    """The tile a path names (`tile/...`, no leading slash). Only the one canonical form of each tile is
    accepted: leading zeros, a missing or extra `x`, a width of 0 or 256 and above, a level above 63 are
    refused (raises InputError naming the path), so every tile has exactly one URL and one file."""
    bad = InputError(f"not a tile path: {path!r} (expected tile/<L>/<N>[.p/<W>] or tile/entries/<N>[.p/<W>], "
                     "N in groups of three digits, all but the last prefixed with x)")
    parts = path.split("/")
    if len(parts) < 3 or parts[0] != "tile":
        raise bad
    if parts[1] == "entries":
        level = None
    elif _LEVEL.fullmatch(parts[1]) and int(parts[1]) <= MAX_LEVEL:
        level = int(parts[1])
    else:
        raise bad
    groups, width = parts[2:], WIDTH
    if groups[-1].isascii() and groups[-1].isdigit() and len(groups) >= 2 and groups[-2].endswith(".p"):
        if not _WIDTH.fullmatch(groups[-1]) or int(groups[-1]) >= WIDTH:
            raise bad
        width = int(groups[-1])
        groups = groups[:-2] + [groups[-2][:-2]]
    if not all(_GROUP.fullmatch(g) for g in groups):
        raise bad
    tile = Tile(level, int("".join(g.lstrip("x") for g in groups)), width)
    if tile.path() != path:  # the round trip refuses every non-canonical spelling
        raise bad
    return tile


def tiles_of(size: int, since: int = 0) -> Iterator[Tile]:
    """Every tile a tree of `size` leaves has, level by level: its full tiles and, at each level, the
    partial tile of width floor(size / 256**L) mod 256 when that is not zero; then the entry bundles (the
    same indexes and widths as level 0). With `since`, only the tiles a tree of that size did not have (one
    it had, full or partial, has the same path and bytes): a re-publish reads what is new, not the log."""
    level = 0
    while size >> (HEIGHT * level):
        count, before = size >> (HEIGHT * level), since >> (HEIGHT * level)  # complete subtrees of 256**level leaves
        yield from (Tile(level, n) for n in range(before // WIDTH, count // WIDTH))
        if count % WIDTH and count != before:
            yield Tile(level, count // WIDTH, count % WIDTH)
        level += 1
    yield from (Tile(None, t.index, t.width) for t in tiles_of_level0(size, since))


def tiles_of_level0(size: int, since: int = 0) -> list[Tile]:
    """The level-0 tiles of a tree of `size` leaves (that one of `since` leaves did not have), the partial one last."""
    return [Tile(0, n) for n in range(since // WIDTH, size // WIDTH)] + \
        ([Tile(0, size // WIDTH, size % WIDTH)] if size % WIDTH and size != since else [])


def partial_tiles(size: int) -> list[Tile]:
    """The partial tiles of a tree of `size` leaves: at most one a level, and the partial entry bundle."""
    found = [Tile(level, (size >> (HEIGHT * level)) // WIDTH, (size >> (HEIGHT * level)) % WIDTH)
             for level in range(MAX_LEVEL + 1) if (size >> (HEIGHT * level)) % WIDTH]
    return found + [Tile(None, size // WIDTH, size % WIDTH)] * bool(size % WIDTH)


def in_tree(tile: Tile, size: int) -> bool:
    """Whether a tree of `size` leaves has `tile` (as `tiles_of(size)` lists it)."""
    count = size >> tile.height
    return (tile.full and tile.index < count // WIDTH) or (tile.index == count // WIDTH and tile.width == count % WIDTH)


def hash_tile(hashes: list[bytes]) -> bytes:
    """The bytes of a hash tile: its hashes, concatenated."""
    return b"".join(hashes)


def bundle(entries: list[tuple[int, bytes]]) -> bytes:
    """An entry bundle of (seq, entry bytes): each entry after its length as a big-endian uint16.
    Raises: EntryTooLongError (a StoreError) for an entry over 65,535 bytes."""
    parts = []
    for seq, entry in entries:
        if len(entry) > MAX_ENTRY:
            raise EntryTooLongError(f"seq {seq}: its log entry is {len(entry):,} bytes, more than the "
                                    f"{MAX_ENTRY:,} an entry bundle can carry; the bundle holding it cannot be served")
        parts.append(len(entry).to_bytes(2, "big") + entry)
    return b"".join(parts)


def read_bundle(data: bytes) -> list[bytes]:
    """The entries of a bundle.
    Raises: InputError when a length runs past the end."""
    entries, at = [], 0
    while at < len(data):
        if at + 2 > len(data):
            raise InputError(f"entry bundle: a length prefix is cut off at byte {at}")
        length = int.from_bytes(data[at:at + 2], "big")
        if at + 2 + length > len(data):
            raise InputError(f"entry bundle: the entry at byte {at} runs past the end")
        entries.append(data[at + 2:at + 2 + length])
        at += 2 + length
    return entries


# The bytes an entry adds around its fields: kind and times are plain ASCII (a kind of the vocabulary,
# RFC 3339 strings), which canonical JSON writes unescaped, so an entry's length is this plus theirs.
_ENTRY_FRAME = len(entry_bytes(0, "", "", "", b"{}")) - len(b"{}") - 1


def entry_length(seq: int, kind: str, effective_at: str, recorded_at: str, payload: bytes) -> int:
    """len(chain.entry_bytes(...)) without encoding the entry (kind and times are plain ASCII)."""
    return _ENTRY_FRAME + len(str(seq)) + len(kind) + len(effective_at) + len(recorded_at) + len(payload)


def longest_entry(kind: str, effective_at: str, payload: bytes) -> int:
    """The length of the log entry an event becomes at the largest sequence number and any recorded time."""
    return entry_length(_LONGEST_SEQ, kind, effective_at, _A_RECORDED_TIME, payload)


def check_entry_size(kind: str, effective_at: str, payload: bytes, seq: int | None = None,
                     recorded_at: str | None = None) -> None:
    """Refuse an event whose log entry would not fit an entry bundle (InputError, exit 2). With `seq` and
    `recorded_at` (a log line) the exact entry is measured; otherwise its longest form (its seq and recorded
    time are not known yet: 19 digits, a 27-character time).
    Raises: InputError."""
    if seq is None or recorded_at is None:
        size = longest_entry(kind, effective_at, payload)
    else:
        size = entry_length(seq, kind, effective_at, recorded_at, payload)
    if size > MAX_ENTRY:
        raise InputError(f"{kind} event of {size:,} bytes as a log entry: the log is published as C2SP tiles, "
                         f"whose entry bundles carry at most {MAX_ENTRY:,} bytes per entry")
