"""Keeping the paper index: `catch_up` brings the stored index to a tree size from the largest size below it
that has one, writing new nodes for the paths the papers of the events in between cross.

It takes those events (read back from the log, or as the store appended them) a chunk at a time, and writes
nodes with ids = the size they are of * 2**24 + a counter, so their rows land together at the end of the
table (a rowid table on SQLite: appends fill pages, they do not split them); a node is never changed.
`index_roots` names the root node of every size the index was kept for. Where the database is read-only
(a hot standby), a catch-up `held` computes the same nodes and holds them in memory (`Nodes.hold`), with ids
of their own (`HELD`): the index roots, and so the proofs, are the bytes a writable database gives.
Appends never call this module. It never decides what an event means (`ledger.log.paper_index` does), never opens or commits a transaction
(`Store.keep_index` does), and never writes anything but index rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from ledger.core.errors import IntegrityError
from ledger.log.chain import entry_bytes
from ledger.log.merkle import leaf_hash as log_leaf_hash
from ledger.log.paper_index import paper_key
from ledger.model.events import CITATION_OBSERVED
from ledger.storage.cursor import stored_citation_papers, stored_payload
from ledger.storage.index_nodes import EMPTY_NODE, ID_SHIFT, SLOTS, Child, Leaf, Node, child, encode, grown
from ledger.storage.index_reads import HELD, IN_LIST, Nodes, paper_events, root_at

CHUNK = 50_000  # events read and added at a time while catching up: memory stays flat however far behind
# Observations' links an edge keeps for the next catch-up (a few hundred bytes each): past it they are read again
# as needed, so thousands of catch-ups in one process (publish, a paper's own size each) stay flat in memory.
LINKS_KEPT = 5_000
_HEX = {f"{digit:x}": digit for digit in range(SLOTS)}
KEYS_KEPT = 5_000  # papers whose keys are kept, the first met; any other costs its SHA-256 each time asked
_KEYS: dict[str, tuple[str, bytes]] = {}  # paper -> its key (hex, bytes)


class Edge(NamedTuple):
    """What an update left at its tree size, true for good (that prefix of the log never changes): the index
    root there, and the links of observations it met (observation -> (papers, whether it has events))."""

    root: tuple[int | None, bytes]
    observations: dict[str, tuple[frozenset[str], bool]]


def _observations(cursor, wanted: list[str], size: int) -> dict[str, tuple[frozenset[str], bool]]:
    """Each observation's linked papers and whether it has events, as of `size`."""
    found: dict[str, tuple[set[str], bool]] = {o: (set(), False) for o in wanted}
    for start in range(0, len(wanted), IN_LIST):
        chunk = wanted[start:start + IN_LIST]
        chunk += chunk[-1:] * ((1 << (len(chunk) - 1).bit_length()) - len(chunk))  # a few statement texts, cached
        # `seq + 0`: the bound filters the few rows the fact key finds; as an index condition (PostgreSQL
        # AND-ed a scan of every seq up to `size` into the plan) it cost time growing with the log.
        rows = cursor.execute(
            "SELECT subject, CASE WHEN kind = ? THEN payload END FROM events WHERE paper IS NULL "
            f"AND seq + 0 <= ? AND subject IN ({', '.join(['?'] * len(chunk))})",
            [CITATION_OBSERVED, size, *chunk]).fetchall()
        for subject, payload in rows:
            papers = found[subject][0]
            if payload is not None:
                papers.update(stored_citation_papers(payload, f"paper index: observation {subject}"))
            found[subject] = (papers, True)
    return {o: (frozenset(papers), had) for o, (papers, had) in found.items()}


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


def catch_up(cursor, nodes: Nodes, size: int, edge: tuple[int, Edge] | None = None,
             recent: tuple[int, list[tuple[int, Logged, bytes]]] | None = None,
             chunk: int = CHUNK, held: bool = False) -> tuple[dict[int, Node], Edge | None]:
    """Keep the index at tree `size` (at most the head), unless it is kept there already: from the largest
    size below it that has an index (or from the empty index), add the log's events in between, `chunk` at a
    time, each chunk writing its nodes and its root. `edge` is (size, what an earlier catch-up left there),
    when still true; `recent` is (size, the events appended after it, as `update` takes them) when this
    process appended them: a chunk they cover is not read back from the log. `held`: nothing is written,
    each chunk's nodes and root go to `nodes.hold` instead. Returns the nodes written (to remember once
    committed) and the edge left at `size`.
    Raises: IntegrityError for an event row or a stored node that is not one, and the driver's errors."""
    memory = nodes if held else None  # a stored node never points at a held one
    if size == 0 or root_at(cursor, size, memory) is not None:
        return {}, None
    before = cursor.execute("SELECT MAX(size) FROM index_roots WHERE size < ?", (size,)).fetchone()[0] or 0
    if held:
        before = max([before, *(kept for kept in nodes.roots if kept < size)])
    left = edge[1] if edge is not None and edge[0] == before else None
    written: dict[int, Node] = {}
    columns = cursor.store.backend.entry_columns
    while before < size:
        after = min(before + chunk, size)
        if recent is not None and recent[0] <= before and recent[0] + len(recent[1]) >= after:
            appended = recent[1][before - recent[0]:after - recent[0]]
        else:
            rows = cursor.execute(f"SELECT {columns}, subject, paper FROM events WHERE seq > ? AND seq <= ? "
                                  "ORDER BY seq", (before, after)).fetchall()
            if len(rows) != after - before:
                raise IntegrityError(f"paper index: events missing among seq {before + 1}..{after}")
            appended = [_appended(r) for r in rows]
            del rows
        done = update(cursor, nodes, left, before, after, appended, held)
        if held:
            nodes.hold(done.written, done.root)
        else:
            cursor.store.backend.insert_index(cursor, done.nodes, done.root)
        written.update(done.written)
        left, before = done.edge, after
    return written, left


def _appended(row) -> tuple[int, Logged, bytes]:
    payload = stored_payload(row[4])  # unpacked once, for the leaf and the citation's papers
    return row[0], _logged(row, payload), log_leaf_hash(entry_bytes(row[0], row[1], row[2], row[3], payload))


def _logged(row, payload: bytes) -> Logged:
    seq, kind, subject, paper = row[0], row[1], row[7], row[8]
    cited = stored_citation_papers(payload, f"paper index: event seq {seq}") if kind == CITATION_OBSERVED else ()
    return Logged(subject, paper, cited)


def update(cursor, nodes: Nodes, edge: Edge | None, before: int, after: int,
           appended: list[tuple[int, Logged, bytes]], held: bool = False) -> Update:
    """The index at `after` from the index at `before` and the log's events in between (seq, what the index
    needs of the event, log leaf hash), in seq order. `edge` is what the index's last update left at
    `before`; `held`: its nodes are numbered for memory (`HELD`), not for rows.
    Raises: IntegrityError when the stored index is missing or malformed, and the driver's errors."""
    root = edge.root if edge is not None else root_at(cursor, before, nodes if held else None)
    if root is None:
        raise IntegrityError(f"paper index: no root at tree size {before}; the index was never built here")
    known, added, rebuild = _members(cursor, edge, before, appended)
    if not added:
        return Update([], (after, root[0], root[1]), {}, Edge(root, known))
    return write_leaves(cursor, nodes, root, after, added, rebuild, known, held)


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
    if len(known) > LINKS_KEPT:
        known = {}
    return known, added, rebuild


def write_leaves(cursor, nodes: Nodes, root: tuple[int | None, bytes], after: int, added: dict[str, list[bytes]],
                 rebuild: set[str] = frozenset(), known: dict | None = None, held: bool = False) -> Update:
    """The index at `after`: the index whose root is `root` with each paper of `added` given its new events
    (leaf hashes in seq order; the papers of `rebuild` read again from the store instead); `held`: its node
    ids have the bit `HELD` set.
    Raises: IntegrityError when a stored node is missing or malformed, and the driver's errors."""
    keyed = _keyed(added)
    current, leaves = _paths(cursor, nodes, root[0], keyed)
    changes: list[tuple[str, Leaf]] = []
    for hexkey, (key, paper) in keyed.items():
        if paper in rebuild:
            changes.append((hexkey, grown(key, None, [digest for _, digest in paper_events(cursor, paper, after)])))
        else:
            changes.append((hexkey, grown(key, leaves.get(hexkey), added[paper])))
    rows: list[tuple[int, bytes]] = []
    written: dict[int, Node] = {}
    first = after << ID_SHIFT | (HELD if held else 0)
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
                below_id, below_node = apply(path + char, EMPTY_NODE, below)
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


def _keyed(papers: Iterable[str]) -> dict[str, tuple[bytes, str]]:
    """Each paper's key: hex key -> (key, paper)."""
    keyed = {}
    for paper in papers:
        found = _KEYS.get(paper)
        if found is None:
            key = paper_key(paper)
            found = (key.hex(), key)
            if len(_KEYS) < KEYS_KEPT:
                _KEYS[paper] = found
        keyed[found[0]] = (found[1], paper)
    return keyed


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
