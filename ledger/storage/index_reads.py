"""Reading the paper index the store keeps: its root at a tree size, its decoded nodes (cached: a node never
changes), a paper's index proof, and a paper's events as the index counts them.

Readers follow node ids from the root down, one statement per level. Where the database is read-only (a hot
standby), the index at a size it does not keep is computed in memory and held by `Nodes` (its nodes' ids
have the bit `HELD` set, so they never meet a stored row's); readers find it there first. This module never
writes a row (the index is kept by `ledger.storage.index_keeping`) and never opens a connection: it is handed
the store's cursor.
"""

from __future__ import annotations

from collections.abc import Iterable

from ledger.core.errors import InputError, IntegrityError
from ledger.log.chain import entry_bytes
from ledger.log.merkle import leaf_hash as log_leaf_hash
from ledger.log.paper_index import ZERO, IndexProof, Neighbour, paper_key
from ledger.storage.index_nodes import ID_SHIFT, SLOTS, Leaf, Node, decode, leaf_root

IN_LIST = 400  # parameters per IN list: under every SQLite build's limit
CACHE_LIMIT = 200_000  # nodes of an index held in memory where it cannot be written; past it, computed again
NODES_KEPT = 500  # decoded nodes read or written kept for later reads (a node is a few KB decoded): past it,
# the cache starts again, so a process asking proofs at thousands of sizes (publish) stays flat in memory
HELD = 1 << 63  # in the id of a node computed in memory: stored ids are below 2**63 (a signed 64-bit key)


def _nibble(key: bytes, depth: int) -> int:
    return (key[depth >> 1] >> (0 if depth & 1 else 4)) & 0xF


class Nodes:
    """Decoded nodes by id: a node is written once, so what is cached stays true. A catch-up's nodes are
    added only once its transaction has committed (`remember`). Also the index computed in memory where the
    database cannot keep it (`hold`): its nodes and its roots by tree size, until `forget`."""

    def __init__(self) -> None:
        self.known: dict[int, Node] = {}
        self.held: dict[int, Node] = {}
        self.roots: dict[int, tuple[int | None, bytes]] = {}

    def get(self, cursor, wanted: Iterable[int]) -> dict[int, Node]:
        """The nodes asked for, read in one statement when not held.
        Raises: IntegrityError for a node the ledger does not have, and the driver's errors."""
        wanted = set(wanted)
        found = {w: self.known[w] if w in self.known else self.held[w] for w in wanted
                 if w in self.known or w in self.held}
        missing = sorted(wanted - set(found))
        for start in range(0, len(missing), IN_LIST):
            chunk = missing[start:start + IN_LIST]
            rows = cursor.execute(f"SELECT id, node FROM index_nodes WHERE id IN ({', '.join(['?'] * len(chunk))})",
                                  chunk).fetchall()
            for node_id, data in rows:
                found[node_id] = self.known[node_id] = decode(bytes(data))
        if len(found) != len(wanted):
            absent = min(wanted - set(found))
            raise IntegrityError(f"paper index: node {absent} (of size {absent >> ID_SHIFT}) is missing")
        if len(self.known) > NODES_KEPT:
            self.known.clear()
        return found

    def remember(self, written: dict[int, Node]) -> None:
        """Keep the nodes a committed catch-up wrote (none, when they are more than the cache keeps)."""
        if len(self.known) + len(written) > NODES_KEPT:
            self.known.clear()
        if len(written) <= NODES_KEPT:
            self.known.update(written)

    def hold(self, written: dict[int, Node], root: tuple[int, int | None, bytes]) -> None:
        """Hold the nodes an update computed in memory and its root row (size, root node id, hash)."""
        self.held.update(written)
        self.roots[root[0]] = (root[1], root[2])

    def forget(self) -> None:
        """Drop the index held in memory (memory stays bounded; it is computed again when asked)."""
        self.held, self.roots = {}, {}


def root_at(cursor, size: int, nodes: Nodes | None = None) -> tuple[int | None, bytes] | None:
    """(root node id, index root) at a tree size the index was kept at (`index_keeping.catch_up`), or that
    `nodes` holds in memory; (None, 32 zero bytes) at size 0; None when it was not kept there. Raises the
    driver's errors."""
    if size == 0:
        return None, ZERO
    if nodes is not None and size in nodes.roots:
        return nodes.roots[size]
    row = cursor.execute("SELECT node, hash FROM index_roots WHERE size = ?", (size,)).fetchone()
    return None if row is None else (row[0], bytes(row[1]))


def prove(cursor, nodes: Nodes, paper: str, size: int) -> IndexProof:
    """The index proof of one paper at a tree size the index was kept at.
    Raises: InputError when there is no index at that size, IntegrityError for a missing or malformed node, and
    the driver's errors."""
    root = root_at(cursor, size, nodes)
    if root is None:
        raise InputError(f"tree size {size}: no paper index at that size (keep it there first: Store.keep_index)")
    top, index_root = root
    key = paper_key(paper)
    siblings: list[bytes | None] = []
    terminal: Leaf | None = None
    path, node = "", (Node() if top is None else nodes.get(cursor, [top])[top])
    while True:
        position, digit, child = 1, _nibble(key, len(path)), None
        while True:
            taken = node.taken(position)
            if not taken:
                break  # an empty subtree: the paper is absent
            slot = node.slots[taken.bit_length() - 1]
            if taken & (taken - 1) == 0 and type(slot) is Leaf:
                terminal = slot
                break
            if position >= SLOTS:
                child = slot  # a child node: go down
                break
            level = position.bit_length() - 1
            right = digit >> (3 - level) & 1
            sibling = node.subtree(2 * position + 1 - right)
            siblings.append(None if sibling == ZERO else sibling)
            position = 2 * position + right
        if child is None:
            break
        path += f"{digit:x}"
        node = nodes.get(cursor, [child.id])[child.id]
    if terminal is not None and terminal.key == key:
        return IndexProof(paper, size, index_root, terminal.count, leaf_root(terminal), tuple(siblings))
    neighbour = None if terminal is None else Neighbour(terminal.key, terminal.count, leaf_root(terminal))
    return IndexProof(paper, size, index_root, 0, None, tuple(siblings), neighbour)


def paper_events(cursor, paper: str, size: int) -> list[tuple[int, bytes]]:
    """A paper's events at a tree size, (seq, leaf hash in the log), from its stored rows. Raises the
    driver's errors."""
    return [(f.seq, log_leaf_hash(entry_bytes(f.seq, f.kind, f.effective_at, f.recorded_at, f.payload)))
            for f in cursor.paper_facts(paper, size=size)]

