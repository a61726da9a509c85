"""Reading the log's tiles from a store: a tile's worth of hashes or entries in one statement.

Level-0 hashes and entry bundles come from the event rows (the leaf of an event is its canonical entry,
re-computed from the row, so a row changed behind the ledger's back shows as a tile that no longer matches
the signed root); higher levels are the Merkle nodes the store keeps as events are appended (every perfect
subtree of 16 or more leaves, so every hash of a tile of level 1 and up is stored). The bytes themselves are
`ledger.tiles`. Nothing here writes.
"""

from __future__ import annotations

from ledger.core.errors import IntegrityError, NotFoundError
from ledger.log.chain import entry_bytes
from ledger.log.merkle import leaf_hash
from ledger.log.tiles import Tile, bundle, hash_tile, in_tree, tiles_of
from ledger.storage.cursor import Cursor
from ledger.storage.store import Store


def read_entries(cursor: Cursor, first: int, count: int) -> list[tuple[int, bytes]]:
    """(seq, entry bytes) of the leaves first .. first + count - 1 (0-based), in one statement.

    Raises: IntegrityError when a row is missing, and the driver's errors.
    """
    entries = cursor.entries_after(first, count)
    if [e.seq for e in entries] != list(range(first + 1, first + count + 1)):
        raise IntegrityError(f"events missing among seq {first + 1}..{first + count}: the log's tiles cannot be "
                             "built there")
    return [(e.seq, entry_bytes(e.seq, e.kind, e.effective_at, e.recorded_at, e.payload)) for e in entries]


def read_hashes(cursor: Cursor, height: int, first: int, count: int) -> list[bytes]:
    """The hashes of the perfect subtrees (height, first) .. (height, first + count - 1), in one statement.

    Raises: IntegrityError when a node is missing, and the driver's errors.
    """
    wanted = [(height, index) for index in range(first, first + count)]
    found = cursor.tree_nodes(wanted, (first + count) << height)
    missing = [pair for pair in wanted if pair not in found]
    if missing:
        raise IntegrityError(f"the ledger has no Merkle node {missing[0]}: the log's tiles cannot be built there")
    return [found[pair] for pair in wanted]


def tile_bytes(cursor: Cursor, tile: Tile) -> bytes:
    """The bytes of a tile the tree already holds (the caller checks `tile.leaves_needed()` against its size).

    Raises: IntegrityError when rows or nodes are missing, a StoreError (EntryTooLongError) for an entry too
    long for an entry bundle, and the driver's errors.
    """
    if tile.entries:
        return bundle(read_entries(cursor, tile.first, tile.width))
    if tile.level == 0:
        return hash_tile([leaf_hash(entry) for _, entry in read_entries(cursor, tile.first, tile.width)])
    return hash_tile(read_hashes(cursor, tile.height, tile.first, tile.width))


def read_tile(store: Store, tile: Tile) -> tuple[bytes, int]:
    """A tile of the current tree and the tree's size, read from one snapshot.

    Raises: NotFoundError when the tree does not hold it yet, IntegrityError when the rows or nodes it needs
    are missing, or a StoreError from the store.
    """
    with store.snapshot() as cursor:
        size = cursor.head()[0]
        if tile.leaves_needed() > size:
            raise NotFoundError(f"{tile.path()}: not in the log yet (tree size {size}; this tile needs "
                                f"{tile.leaves_needed()})")
        return tile_bytes(cursor, tile), size


def all_tiles(store: Store, size: int, since: int = 0, also: frozenset[Tile] = frozenset()):
    """(tile, bytes) for every tile of the tree of `size` leaves; a level-0 tile and its entry bundle come
    from one read of their (at most 256) rows. With `since`, only the tiles a tree of that size did not have
    (a tile it had, full or partial, has the same path and bytes) and those in `also`.

    Raises: IntegrityError when rows or nodes are missing, or a StoreError from the store (EntryTooLongError:
    an entry too long for an entry bundle).
    """
    again = sorted((t for t in also if in_tree(t, size)), key=lambda t: (t.entries, t.level or 0, t.index))
    for tile in [*again, *(t for t in tiles_of(size, since) if t not in also)]:
        if tile.entries:
            continue  # an entry bundle is yielded with its level-0 tile
        with store.reading() as cursor:
            if tile.level == 0:
                entries = read_entries(cursor, tile.first, tile.width)
            else:
                data = hash_tile(read_hashes(cursor, tile.height, tile.first, tile.width))
        if tile.level == 0:
            yield tile, hash_tile([leaf_hash(entry) for _, entry in entries])
            yield Tile(None, tile.index, tile.width), bundle(entries)
        else:
            yield tile, data
