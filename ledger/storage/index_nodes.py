"""The paper index as the store keeps it: immutable 16-way nodes of the compact sparse Merkle tree that
`ledger.paper_index` defines, written when the index is first needed at a tree size (a checkpoint, a proof,
a bundle) and read back at any size it was kept for.

A node stands for the papers whose key starts with its path (hex digits, "" for the root) and holds up to 16
slots, one per next hex digit: empty, one paper's leaf (key, count, the right edge of its events tree and
the leaf hash), or a child node (its hash and its id). A node exists where two or more papers share its path,
and the root always: a paper alone under a path is a leaf in its parent's slot. The binary tree of
`paper_index` is these nodes read four levels at a time.

Appends never touch the index. `catch_up` brings it to a size from the largest size below it that has one:
it takes the events in between (read back from the log, or as the store appended them), a chunk at a time,
and writes new nodes for the paths their papers cross (a node is never changed), with ids = the size they
are of * 2**24 + a counter, so their rows land together at the end of the table (a rowid table on SQLite:
appends fill pages, they do not split them); `index_roots` names the root node of every size the index was
kept for. Readers follow ids from the root down, one statement per level.

This module never decides what an event means (`paper_index` does) and never opens a connection: it is
handed the store's cursor.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

from struct import Struct

import orjson

from ledger.core.errors import InputError, IntegrityError
from ledger.model.events import CITATION_OBSERVED, citation_papers
from ledger.log.chain import entry_bytes
from ledger.log.merkle import leaf_hash as log_leaf_hash
from ledger.log.paper_index import ZERO, IndexProof, Neighbour, edge_root, extend, leaf_hash, node_hash, paper_key

SLOTS = 16
_IN_LIST = 400  # parameters per IN list: under every SQLite build's limit
_CACHE_LIMIT = 200_000  # decoded nodes a store keeps; past it the cache starts again (it is only a cache)


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
    """A child slot. Raises nothing for an id below 2**63."""
    return Child(digest, node_id, digest + node_id.to_bytes(8, "big"))


ID_SHIFT = 24  # a node's id: the tree size it was written for * 2**24 + its number among that size's nodes


def grown(key: bytes, leaf: Leaf | None, leaf_hashes: Iterable[bytes]) -> Leaf:
    """A paper's leaf slot with more events added to its events tree (from none when `leaf` is None).
    Raises nothing."""
    count, stack = (0, []) if leaf is None else (leaf.count, list(leaf.edge))
    count = extend(stack, count, leaf_hashes)
    edge = tuple(stack)
    counted = count.to_bytes(8, "big")
    digest = leaf_hash(key, count, edge_root(edge))
    return Leaf(digest, key, count, edge, b"".join((digest, key, counted) + edge))


def make_leaf(key: bytes, count: int, frontier: dict[int, bytes]) -> Leaf:
    """A paper's leaf slot from its count and the right edge of its events tree (level -> subtree). Raises
    KeyError for an edge that does not belong to `count` events."""
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
        """The node's own hash (the binary subtree over its 16 slots). Raises nothing."""
        return self.inner[1] if self.inner[1] is not None else self.fill()

    def subtree(self, position: int) -> bytes:
        """The hash of the binary subtree at a heap position. Raises nothing."""
        if self.inner[1] is None:
            self.fill()
        return self.inner[position]

    def fill(self) -> bytes:
        """Compute every inner hash, bottom up; returns the node's own. Raises nothing."""
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

    def changed(self, slots: dict[int, Child | Leaf]) -> "Node":
        """A copy with some slots replaced; only the inner hashes above them are computed again. Raises
        nothing."""
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
        """The bit map of slots in use under a heap position. Raises nothing."""
        return self.used & _MASKS[position]


def encode(node: Node) -> bytes:
    """Bytes of a node: a 16-bit map of the slots in use, a 16-bit map of those holding a leaf, then per
    slot in use its hash and either the child's id (8 bytes) or the leaf's key, count (8 bytes) and
    edge. Raises nothing."""
    return _HEADER(node.used, node.leaves) + b"".join([slot.data for slot in node.slots if slot is not None])


def decode(data: bytes) -> Node:
    """A node from its bytes. Raises IntegrityError for bytes that are not one."""
    try:
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
    except (ValueError, IndexError):
        raise IntegrityError("paper index: a stored node is not one") from None
    return Node(slots, used, leaves)


def _mask(position: int) -> int:
    level = position.bit_length() - 1
    width = SLOTS >> level
    return ((1 << width) - 1) << ((position - (1 << level)) * width)


_MASKS = [0] + [_mask(position) for position in range(1, 2 * SLOTS)]  # slots under each heap position
_EMPTY_INNER: list[bytes | None] = [ZERO] * (2 * SLOTS)  # the inner hashes of a node with no slot
_EMPTY_NODE = Node(inner=_EMPTY_INNER)  # never changed in place: `changed` copies
_HEX = {f"{digit:x}": digit for digit in range(SLOTS)}
_HEADER = Struct(">HH").pack  # the two bit maps of a node
_KEYS: dict[str, tuple[str, bytes]] = {}  # paper -> its key (hex, bytes): SHA-256 once per paper and process
_ABOVE = [tuple((SLOTS + j) >> up for up in range(1, 5)) for j in range(SLOTS)]  # a slot's inner positions, upwards
_UPWARDS = range(SLOTS - 1, 0, -1)  # every inner position, children before parents


def _nibble(key: bytes, depth: int) -> int:
    return (key[depth >> 1] >> (0 if depth & 1 else 4)) & 0xF


def leaf_root(leaf: Leaf) -> bytes:
    """The events root a leaf commits to. Raises nothing for a decoded leaf."""
    return edge_root(leaf.edge)


# -- reading -------------------------------------------------------------------------------------------
class Nodes:
    """Decoded nodes by id: a node is written once, so what is cached stays true. A catch-up's nodes are
    added only once its transaction has committed (`remember`)."""

    def __init__(self) -> None:
        self.known: dict[int, Node] = {}

    def get(self, cursor, wanted: Iterable[int]) -> dict[int, Node]:
        """The nodes asked for, read in one statement when not held. Raises IntegrityError for a node the
        ledger does not have, and the driver's errors."""
        wanted = set(wanted)
        found = {w: self.known[w] for w in wanted if w in self.known}
        missing = sorted(wanted - set(found))
        for start in range(0, len(missing), _IN_LIST):
            chunk = missing[start:start + _IN_LIST]
            rows = cursor.execute(f"SELECT id, node FROM index_nodes WHERE id IN ({', '.join(['?'] * len(chunk))})",
                                  chunk).fetchall()
            for node_id, data in rows:
                found[node_id] = self.known[node_id] = decode(bytes(data))
        if len(found) != len(wanted):
            absent = min(wanted - set(found))
            raise IntegrityError(f"paper index: node {absent} (of size {absent >> ID_SHIFT}) is missing")
        if len(self.known) > _CACHE_LIMIT:
            self.known.clear()
        return found

    def remember(self, written: dict[int, Node]) -> None:
        """Keep the nodes a committed catch-up wrote. Raises nothing."""
        self.known.update(written)


def root_at(cursor, size: int) -> tuple[int | None, bytes] | None:
    """(root node id, index root) at a tree size the index was kept at (`catch_up`); (None, 32 zero bytes)
    at size 0; None when it was not kept there. Raises the driver's errors."""
    if size == 0:
        return None, ZERO
    row = cursor.execute("SELECT node, hash FROM index_roots WHERE size = ?", (size,)).fetchone()
    return None if row is None else (row[0], bytes(row[1]))


def prove(cursor, nodes: Nodes, paper: str, size: int) -> IndexProof:
    """The index proof of one paper at a tree size the index was kept at. Raises InputError when there is no
    index at that size, IntegrityError for a missing or malformed node, and the driver's errors."""
    root = root_at(cursor, size)
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


# -- writing -------------------------------------------------------------------------------------------
class Edge(NamedTuple):
    """What an update left at its tree size, true for good (that prefix of the log never changes): the index
    root there, and the links of observations it met (observation -> (papers, whether it has events))."""

    root: tuple[int | None, bytes]
    observations: dict[str, tuple[frozenset[str], bool]]


def _observations(cursor, wanted: list[str], size: int) -> dict[str, tuple[frozenset[str], bool]]:
    """Each observation's linked papers and whether it has events, as of `size`."""
    found: dict[str, tuple[set[str], bool]] = {o: (set(), False) for o in wanted}
    for start in range(0, len(wanted), _IN_LIST):
        chunk = wanted[start:start + _IN_LIST]
        chunk += chunk[-1:] * ((1 << (len(chunk) - 1).bit_length()) - len(chunk))  # a few statement texts, cached
        # `seq + 0`: the bound filters the few rows the fact key finds; as an index condition (PostgreSQL
        # AND-ed a scan of every seq up to `size` into the plan) it cost time growing with the log.
        rows = cursor.execute(
            "SELECT subject, CASE WHEN kind = 'citation.observed' THEN payload END FROM events WHERE paper IS NULL "
            f"AND seq + 0 <= ? AND subject IN ({', '.join(['?'] * len(chunk))})", [size, *chunk]).fetchall()
        for subject, payload in rows:
            papers = found[subject][0]
            if payload is not None:
                papers.update(_cited(payload, f"observation {subject}"))
            found[subject] = (papers, True)
    return {o: (frozenset(papers), had) for o, (papers, had) in found.items()}


def paper_events(cursor, paper: str, size: int) -> list[tuple[int, bytes]]:
    """A paper's events at a tree size, (seq, leaf hash in the log), from its stored rows. Raises the
    driver's errors."""
    return [(f.seq, log_leaf_hash(entry_bytes(f.seq, f.kind, f.effective_at, f.recorded_at, f.payload)))
            for f in cursor.paper_facts(paper, size=size)]


class Update(NamedTuple):
    """What one update writes to the index: node rows (id, bytes), the root row (size, root node id,
    hash), what to remember once it commits."""

    nodes: list[tuple[int, bytes]]
    root: tuple[int, int | None, bytes]
    written: dict[int, Node]
    edge: Edge


_NOTHING: tuple[frozenset[str], bool] = (frozenset(), False)


class Logged(NamedTuple):
    """What the index needs of an event of the log: its subject, its paper (paper-level kinds), the papers a
    citation links its observation to (an `Event` has the same three, and serves as well)."""

    subject: str
    paper: str | None
    papers: tuple[str, ...]


_CHUNK = 50_000  # events read and added at a time while catching up: memory stays flat however far behind


def catch_up(cursor, nodes: Nodes, size: int, edge: tuple[int, Edge] | None = None,
             recent: tuple[int, list[tuple[int, Logged, bytes]]] | None = None) -> tuple[dict[int, Node], Edge | None]:
    """Keep the index at tree `size` (at most the head), unless it is kept there already: from the largest
    size below it that has an index (or from the empty index), add the log's events in between, a chunk at a
    time, each chunk writing its nodes and its root. `edge` is (size, what an earlier catch-up left there),
    when still true; `recent` is (size, the events appended after it, as `update` takes them) when this
    process appended them: a chunk they cover is not read back from the log. Returns the nodes written (to
    remember once committed) and the edge left at `size`.
    Raises IntegrityError for an event row or a stored node that is not one, and the driver's errors."""
    if size == 0 or root_at(cursor, size) is not None:
        return {}, None
    before = cursor.execute("SELECT MAX(size) FROM index_roots WHERE size < ?", (size,)).fetchone()[0] or 0
    left = edge[1] if edge is not None and edge[0] == before else None
    written: dict[int, Node] = {}
    columns = cursor.store.backend.entry_columns
    while before < size:
        after = min(before + _CHUNK, size)
        if recent is not None and recent[0] <= before and recent[0] + len(recent[1]) >= after:
            appended = recent[1][before - recent[0]:after - recent[0]]
        else:
            rows = cursor.execute(f"SELECT {columns}, subject, paper FROM events WHERE seq > ? AND seq <= ? "
                                  "ORDER BY seq", (before, after)).fetchall()
            if len(rows) != after - before:
                raise IntegrityError(f"paper index: events missing among seq {before + 1}..{after}")
            appended = [(r[0], _logged(r), log_leaf_hash(entry_bytes(r[0], r[1], r[2], r[3], bytes(r[4]))))
                        for r in rows]
            del rows
        done = update(cursor, nodes, left, before, after, appended)
        cursor.store.backend.insert_index(cursor, done.nodes, done.root)
        written.update(done.written)
        left, before = done.edge, after
    return written, left


def _logged(row) -> Logged:
    seq, kind, payload, subject, paper = row[0], row[1], row[4], row[7], row[8]
    return Logged(subject, paper, _cited(payload, f"event seq {seq}") if kind == CITATION_OBSERVED else ())


def _cited(payload, where: str) -> tuple[str, ...]:
    """The papers a stored citation's payload links its observation to."""
    try:
        return citation_papers(orjson.loads(bytes(payload))["citation"])
    except (orjson.JSONDecodeError, KeyError, TypeError):
        raise IntegrityError(f"paper index: {where}: a citation whose papers cannot be read") from None


def update(cursor, nodes: Nodes, edge: Edge | None, before: int, after: int,
           appended: list[tuple[int, Logged, bytes]]) -> Update:
    """The index at `after` from the index at `before` and the log's events in between (seq, what the index
    needs of the event, log leaf hash), in seq order. `edge` is what the index's last update left at
    `before`. Raises IntegrityError when the stored index is missing or malformed, and the driver's errors."""
    root = edge.root if edge is not None else root_at(cursor, before)
    if root is None:
        raise IntegrityError(f"paper index: no root at tree size {before}; the index was never built here")
    known, added, rebuild = _members(cursor, edge, before, appended)
    if not added:
        return Update([], (after, root[0], root[1]), {}, Edge(root, known))
    return write_leaves(cursor, nodes, root, after, added, rebuild, known)


def _members(cursor, edge: Edge | None, before: int, appended: list[tuple[int, Logged, bytes]]):
    """Which papers the appended events are added to (paper -> their leaf hashes, in seq order), which papers
    a link reaching back makes to be read again, and the observations known after them."""
    # The edge was handed over: it is this update's to change, and is dropped should it roll back.
    known = edge.observations if edge is not None else {}
    # Observation events have no paper of their own (ev.paper is None): their papers come from links.
    unknown = sorted({ev.subject for _, ev, _ in appended if ev.paper is None and ev.subject not in known})
    if unknown and before > 0:
        known.update(_observations(cursor, unknown, before))
    # Links at `after`; a new link to an observation with earlier events makes them the paper's too.
    links: dict[str, set[str]] = {}
    rebuild: set[str] = set()
    added: dict[str, list[bytes]] = {}
    cited = [ev for _, ev, _ in appended if ev.papers]  # only citations name papers
    for ev in cited:
        linked = links.get(ev.subject)
        if linked is None:
            papers, had = known.get(ev.subject, _NOTHING)
            linked = links[ev.subject] = set(papers)
        else:
            had = known.get(ev.subject, _NOTHING)[1]
        for paper in ev.papers:
            if paper not in linked:
                linked.add(paper)
                if had:
                    rebuild.add(paper)
    # Each observation's digests go to the lists of its papers, found once per observation.
    sinks: dict[str, list[list[bytes]]] = {}
    for _, ev, digest in appended:
        paper = ev.paper
        if paper is not None:
            found = added.get(paper)
            if found is None:
                added[paper] = [digest]
            else:
                found.append(digest)
            continue
        to = sinks.get(ev.subject)
        if to is None:
            papers = links.get(ev.subject)
            if papers is None:
                papers = known.get(ev.subject, _NOTHING)[0]
                known[ev.subject] = (papers, True)
            to = sinks[ev.subject] = [added.setdefault(paper, []) for paper in papers]
        for found in to:
            found.append(digest)
    for subject, linked in links.items():
        known[subject] = (frozenset(linked), True)
    if len(known) > _CACHE_LIMIT:
        known = {}
    return known, added, rebuild


def write_leaves(cursor, nodes: Nodes, root: tuple[int | None, bytes], after: int, added: dict[str, list[bytes]],
                 rebuild: set[str] = frozenset(), known: dict | None = None) -> Update:
    """The index at `after`: the index whose root is `root` with each paper of `added` given its new events
    (leaf hashes in seq order; the papers of `rebuild` read again from the store instead). Raises
    IntegrityError when a stored node is missing or malformed, and the driver's errors."""
    keyed = {}  # hex key -> (key, paper)
    for paper in added:
        found = _KEYS.get(paper)
        if found is None:
            key = paper_key(paper)
            found = (key.hex(), key)
            if len(_KEYS) < _CACHE_LIMIT:
                _KEYS[paper] = found
        keyed[found[0]] = (found[1], paper)
    current, leaves = _paths(cursor, nodes, root[0], keyed)
    changes: list[tuple[str, Leaf]] = []
    for hexkey, (key, paper) in keyed.items():
        if paper in rebuild:
            changes.append((hexkey, grown(key, None, [digest for _, digest in paper_events(cursor, paper, after)])))
        else:
            changes.append((hexkey, grown(key, leaves.get(hexkey), added[paper])))
    rows: list[tuple[int, bytes]] = []
    written: dict[int, Node] = {}
    first = after << ID_SHIFT
    if after >= 1 << (63 - ID_SHIFT):
        raise IntegrityError(f"paper index: tree size {after} is past what node ids can number")

    def apply(path: str, node: Node, group: list[tuple[str, Leaf]]) -> tuple[int, Node]:
        depth = len(path)
        by_digit: dict[str, list[tuple[str, Leaf]]] = {}
        for pair in group:
            char = pair[0][depth]
            if char in by_digit:
                by_digit[char].append(pair)
            else:
                by_digit[char] = [pair]
        slots: dict[int, Child | Leaf] = {}
        for char, below in by_digit.items():
            digit = _HEX[char]
            slot = node.slots[digit]
            if type(slot) is Child:
                below_id, below_node = apply(path + char, current[path + char], below)
            else:
                if slot is not None and (len(below) > 1 or below[0][1].key != slot.key) \
                        and all(slot.key != leaf.key for _, leaf in below):
                    below = below + [(slot.key.hex(), slot)]  # a paper already here moves down beside them
                if len(below) == 1:
                    slots[digit] = below[0][1]
                    continue
                below_id, below_node = apply(path + char, _EMPTY_NODE, below)
            slots[digit] = child(below_node.inner[1], below_id)
        new = node.changed(slots)
        node_id = first + len(rows)
        if node_id - first >= 1 << ID_SHIFT:
            raise IntegrityError(f"paper index: more than {1 << ID_SHIFT} nodes for one tree size")
        rows.append((node_id, encode(new)))
        written[node_id] = new
        return node_id, new

    top, top_node = apply("", current[""], changes)
    new_root = (top, top_node.inner[1])
    return Update(rows, (after, top, new_root[1]), written, Edge(new_root, known if known is not None else {}))


def _paths(cursor, nodes: Nodes, top: int | None, keys: Iterable[str]) -> tuple[dict[str, Node], dict[str, Leaf]]:
    """The current nodes on the paths of some keys (hex) as path -> node, read level by level, and the
    leaves found for those keys."""
    if top is None:
        return {"": Node()}, {}
    current: dict[str, Node] = {}
    leaves: dict[str, Leaf] = {}
    level: dict[int, tuple[str, list[str]]] = {top: ("", list(keys))}
    while level:
        got = nodes.get(cursor, level)
        following: dict[int, tuple[str, list[str]]] = {}
        for node_id, (path, waiting) in level.items():
            node = current[path] = got[node_id]
            depth = len(path)
            for hexkey in waiting:
                slot = node.slots[_HEX[hexkey[depth]]]
                if type(slot) is Child:
                    following.setdefault(slot.id, (hexkey[:depth + 1], []))[1].append(hexkey)
                elif slot is not None and slot.key.hex() == hexkey:
                    leaves[hexkey] = slot
        level = following
    return current, leaves
