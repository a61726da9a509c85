"""The nodes of the paper index as the store keeps it: immutable 16-way nodes of the compact sparse Merkle
tree that `ledger.log.paper_index` defines, their slots, their hashes and their bytes.

A node stands for the papers whose key starts with its path (hex digits, "" for the root) and holds up to 16
slots, one per next hex digit: empty, one paper's leaf (key, count, the right edge of its events tree and
the leaf hash), or a child node (its hash and its id). A node exists where two or more papers share its path,
and the root always: a paper alone under a path is a leaf in its parent's slot. The binary tree of
`paper_index` is these nodes read four levels at a time.

The index is kept (`ledger.storage.index_keeping`) when first needed at a tree size (a checkpoint, a proof,
a bundle) and read back (`ledger.storage.index_reads`) at any size it was kept for. This module is the nodes'
arithmetic only: it never reads or writes a row, and never decides what an event means.
"""

from __future__ import annotations

from collections.abc import Iterable
from struct import Struct
from typing import NamedTuple

from ledger.core.errors import IntegrityError
from ledger.log.paper_index import ZERO, edge_root, extend, leaf_hash, node_hash

SLOTS = 16


class Child(NamedTuple):
    hash: bytes
    id: int  # the child node's row
    data: bytes  # the slot as encoded: hash || id (8 bytes)


class Leaf(NamedTuple):
    hash: bytes
    key: bytes
    count: int
    edge: tuple[bytes, ...]  # the perfect subtrees of the paper's events tree, largest first
    data: bytes  # the slot as encoded: hash || key || count (8 bytes) || edge


def child(digest: bytes, node_id: int) -> Child:
    """A child slot; `node_id` is below 2**64 (2**63 for a stored row)."""
    return Child(digest, node_id, digest + node_id.to_bytes(8, "big"))


ID_SHIFT = 24  # a node's id: the tree size it was written for * 2**24 + its number among that size's nodes


def grown(key: bytes, leaf: Leaf | None, leaf_hashes: Iterable[bytes]) -> Leaf:
    """A paper's leaf slot with more events added to its events tree (from none when `leaf` is None)."""
    count, stack = (0, []) if leaf is None else (leaf.count, list(leaf.edge))
    count = extend(stack, count, leaf_hashes)
    edge = tuple(stack)
    counted = count.to_bytes(8, "big")
    digest = leaf_hash(key, count, edge_root(edge))
    return Leaf(digest, key, count, edge, b"".join((digest, key, counted) + edge))


def make_leaf(key: bytes, count: int, frontier: dict[int, bytes]) -> Leaf:
    """A paper's leaf slot from its count and the right edge of its events tree (level -> subtree). An edge
    that does not belong to `count` events raises KeyError."""
    edge = tuple(frontier[level] for level in range(count.bit_length() - 1, -1, -1) if count >> level & 1)
    return grown(key, Leaf(b"", key, count, edge, b""), ())


class Node:
    """A decoded node: its 16 slots (with bit maps of those in use and those holding a leaf), and the hashes
    of its inner binary subtrees by heap position (1: all 16 slots, 2 and 3: the halves, ..., 16 + j: slot j
    alone), computed on first use and then kept."""

    __slots__ = ("slots", "used", "leaves", "inner")

    def __init__(self, slots: list | None = None, used: int = 0, leaves: int = 0, inner: list | None = None):
        self.slots: list[Child | Leaf | None] = slots if slots is not None else [None] * SLOTS
        self.used, self.leaves = used, leaves
        self.inner: list[bytes | None] = inner if inner is not None else [None] * (2 * SLOTS)

    def hash(self) -> bytes:
        """The node's own hash (the binary subtree over its 16 slots)."""
        return self.inner[1] if self.inner[1] is not None else self.fill()

    def subtree(self, position: int) -> bytes:
        """The hash of the binary subtree at a heap position."""
        if self.inner[1] is None:
            self.fill()
        return self.inner[position]

    def fill(self) -> bytes:
        """Compute every inner hash, bottom up; returns the node's own."""
        inner = self.inner
        for j, slot in enumerate(self.slots):
            inner[SLOTS + j] = ZERO if slot is None else slot.hash
        for position in range(SLOTS - 1, 0, -1):
            self._inner(position)
        return inner[1]

    def _inner(self, position: int) -> None:
        taken = self.used & _MASKS[position]
        if not taken:
            self.inner[position] = ZERO
        elif taken & (taken - 1) == 0 and taken & self.leaves:
            self.inner[position] = self.slots[taken.bit_length() - 1].hash  # one paper alone is its leaf
        else:
            self.inner[position] = node_hash(self.inner[2 * position], self.inner[2 * position + 1])

    def changed(self, slots: dict[int, Child | Leaf]) -> Node:
        """A copy with some slots replaced; only the inner hashes above them are computed again."""
        if self.inner[1] is None:
            self.fill()
        new = Node(self.slots.copy(), self.used, self.leaves, self.inner.copy())
        for j, slot in slots.items():
            new.slots[j] = slot
            new.used |= 1 << j
            new.leaves = new.leaves | (1 << j) if type(slot) is Leaf else new.leaves & ~(1 << j)
            new.inner[SLOTS + j] = slot.hash
        if len(slots) == 1:
            dirty = _ABOVE[j]
        else:  # children before parents: a position's number is below its children's
            touched = sum(1 << j for j in slots)
            dirty = [position for position in _UPWARDS if touched & _MASKS[position]]
        for position in dirty:
            new._inner(position)
        return new

    def taken(self, position: int) -> int:
        """The bit map of slots in use under a heap position."""
        return self.used & _MASKS[position]


def encode(node: Node) -> bytes:
    """Bytes of a node: a 16-bit map of the slots in use, a 16-bit map of those holding a leaf, then per
    slot in use its hash and either the child's id (8 bytes) or the leaf's key, count (8 bytes) and
    edge."""
    return _HEADER(node.used, node.leaves) + b"".join([slot.data for slot in node.slots if slot is not None])


def decode(data: bytes) -> Node:
    """A node from its bytes.
    Raises: IntegrityError for bytes that are not one."""
    try:
        return _decoded(data)
    except (ValueError, IndexError):
        raise IntegrityError("paper index: a stored node is not one") from None


def _decoded(data: bytes) -> Node:
    """A node from its bytes; ValueError or IndexError for bytes that are not one."""
    used, leaves = int.from_bytes(data[0:2], "big"), int.from_bytes(data[2:4], "big")
    if len(data) < 4 or leaves & ~used:
        raise ValueError
    at, slots = 4, [None] * SLOTS
    for j in range(SLOTS):
        if not used >> j & 1:
            continue
        if leaves >> j & 1:
            count = int.from_bytes(data[at + 64:at + 72], "big")
            end = at + 72 + 32 * count.bit_count()
            edge = tuple(data[i:i + 32] for i in range(at + 72, end, 32))
            slots[j] = Leaf(data[at:at + 32], data[at + 32:at + 64], count, edge, data[at:end])
            at = end
        else:
            slots[j] = Child(data[at:at + 32], int.from_bytes(data[at + 32:at + 40], "big"), data[at:at + 40])
            at += 40
    if at != len(data):
        raise ValueError
    return Node(slots, used, leaves)


def _mask(position: int) -> int:
    level = position.bit_length() - 1
    width = SLOTS >> level
    return ((1 << width) - 1) << ((position - (1 << level)) * width)


_MASKS = [0] + [_mask(position) for position in range(1, 2 * SLOTS)]  # slots under each heap position
_EMPTY_INNER: list[bytes | None] = [ZERO] * (2 * SLOTS)  # the inner hashes of a node with no slot
EMPTY_NODE = Node(inner=_EMPTY_INNER)  # a node with no slot; never changed in place: `changed` copies
_HEADER = Struct(">HH").pack  # the two bit maps of a node
_ABOVE = [tuple((SLOTS + j) >> up for up in range(1, 5)) for j in range(SLOTS)]  # a slot's inner positions, upwards
_UPWARDS = range(SLOTS - 1, 0, -1)  # every inner position, children before parents


def leaf_root(leaf: Leaf) -> bytes:
    """The events root a decoded leaf commits to."""
    return edge_root(leaf.edge)
