"""`verify --full`: everything the store keeps, re-derived from the entries and compared, row by row.

The chain check (`verify.verify_chain`) proves the entries are the ones appended; every other stored row is
derived from them, and is what `replay`, `checkpoint` and proofs read: an event's subject, paper and effective
key (the kinds table's `derive`, as the import ran it), the observation-to-paper links with the seq that first
made each, the Merkle nodes (`merkle.grow`, as the writer grows them), and the paper index (every stored node
and root re-hashed; the latest root re-computed from the log as `verify --index` and the monitor do). The first
row that differs is named (seq, node or paper): IntegrityError, exit 1. A paper id that the one id parser
refuses (appended before ids were checked at import) is named too, with its seq; plain `verify` names it
as well, through `verify_paper_ids`, which reads the paper index (paper, first seq) and never the events.

One pass over the events, a page at a time, inside one snapshot: links and Merkle nodes are compared a chunk of
seqs at a time, so that part's memory stays flat in the log's size. Two parts grow: the paper index's
re-computation holds 40 bytes per event up to the latest index size (as the monitor holds its leaves), and the
re-hash of the stored index (`_index`) holds every stored node's hash and every parent-to-child link until
they are compared, so it grows with the stored index nodes (every size the index was kept at). It never
writes, and never trusts a derived row to check another: each is compared with what the entries derive.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import NamedTuple

import orjson

from ledger.core.errors import InputError, IntegrityError
from ledger.core.times import instant_key
from ledger.log.chain import Entry, entry_bytes
from ledger.log.merkle import grow, leaf_hash
from ledger.log.paper_index import ZERO, Membership, edge_root, index_root, paper_key
from ledger.log.paper_index import leaf_hash as index_leaf_hash
from ledger.model.arxiv import paper_id
from ledger.model.events import Event
from ledger.model.kinds import KIND
from ledger.model.parts import counted
from ledger.model.published import shown
from ledger.services.verify import ChainHead, verify_chain
from ledger.storage.cursor import STORED_FROM_LEVEL, Cursor
from ledger.storage.index_nodes import ID_SHIFT, Child, Leaf, decode
from ledger.storage.index_reads import Nodes
from ledger.storage.store import Store

PAGE = 2_000  # events read at a time (as `Store.entries`)
ACCEPTED_KEPT = 100_000  # paper ids remembered as checked, then forgotten: memory stays flat
CHUNK = 1 << 16  # seqs whose links and Merkle nodes are compared at a time: one indexed read of each per chunk


class StoreCheck(NamedTuple):
    """What `verify_store` re-derived and found equal: the chain's head, how many paper links and Merkle nodes
    it compared, and the paper index (its nodes, its roots, and the size re-computed from the log, None when
    the index was never kept)."""

    head: ChainHead
    links: int
    nodes: int
    index_nodes: int
    index_roots: int
    index_size: int | None
    index_papers: int


class _Packed:
    """One paper's or observation's events as `Membership` lists them, (seq, leaf hash), held as 40 bytes each
    instead of a tuple of two objects (about 160 bytes): the index re-computation of a 1,000,000-event log
    then holds some 45 MB of them, not 160."""

    __slots__ = ("data",)

    def __init__(self) -> None:
        self.data = bytearray()

    def append(self, item: tuple[int, bytes]) -> None:
        self.data += item[0].to_bytes(8, "big") + item[1]

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        data = self.data
        return ((int.from_bytes(data[at:at + 8], "big"), bytes(data[at + 8:at + 40])) for at in range(0, len(data), 40))


class _PackedLists(dict):
    """`Membership`'s paper -> events and observation -> events maps, each value a `_Packed`."""

    def setdefault(self, key, default=None):  # Membership calls setdefault(key, [])
        found = self.get(key)
        if found is None:
            found = self[key] = _Packed()
        return found


def _membership() -> Membership:
    """The monitor's `Membership` (its rules: which events count for which paper), holding its events packed."""
    members = Membership()
    members.papers, members.observations = _PackedLists(), _PackedLists()
    return members


class _Pass:
    """The one pass over the events: derives each one, grows the Merkle tree and lists the links its citations
    make, and compares a chunk at a time. A difference is kept, not raised, until the chain has been checked:
    an edited entry is named as a chain break first, not by what it derives."""

    def __init__(self, cursor: Cursor, index_size: int | None):
        self.cursor, self.index_size = cursor, index_size
        self.failure: str | None = None
        self.bad_ids: list[tuple[int, str]] = []  # (seq, paper): the first one, and how many
        self.bad_count = 0
        self.frontier: dict[int, bytes] = {}
        self.nodes: list[tuple[int, int, bytes]] = []
        self.links: list[tuple[int, str, str]] = []
        self.compared = [0, 0]  # links, nodes
        self.checked = 0  # seqs whose links and nodes were compared
        self.last = 0  # the last seq derived
        self.accepted: set[str] = set()  # paper ids the id parser took: most events name a paper seen before
        self.members = _membership() if index_size else None

    def fail(self, message: str) -> None:
        if self.failure is None:
            self.failure = message

    def entries(self) -> Iterator[Entry]:
        after = 0
        while True:
            rows = self.cursor.event_rows_after(after, PAGE)
            for row in rows:
                entry = Entry._make(row[:7])
                if self.failure is None:
                    self.derive(entry, *row[7:])
                yield entry
            if len(rows) < PAGE:
                return
            after = rows[-1][0]

    def derive(self, entry: Entry, subject: object, paper: object, effective_key: object) -> None:
        seq = entry.seq
        if seq != self.last + 1:
            return self.fail(f"seq {shown(seq)}: out of sequence")  # the chain check names it first
        self.last = seq
        digest = leaf_hash(entry_bytes(seq, entry.kind, entry.effective_at, entry.recorded_at, entry.payload))
        grow(self.frontier, seq - 1, digest, self.nodes, STORED_FROM_LEVEL)
        try:
            event = _event(entry)
        except (InputError, KeyError, TypeError, ValueError, AttributeError, orjson.JSONDecodeError):
            if isinstance(paper, str) and not _accepted(paper):  # refused by today's import too: named below
                event = None
            else:
                return self.fail(f"seq {seq}: the stored payload is not a {shown(entry.kind)} event")
        if event is not None:
            if (subject, paper, effective_key) != (event.subject, event.paper, event.effective_key):
                return self.fail(_column(seq, (subject, paper, effective_key), event))
            if event.papers:
                self.links.extend((seq, linked, event.subject) for linked in sorted(set(event.papers)))
            if self.members is not None and seq <= self.index_size:
                self.members.add(seq, event, digest)
        if paper is not None and paper not in self.accepted:
            if isinstance(paper, str) and _accepted(paper):
                if len(self.accepted) >= ACCEPTED_KEPT:
                    self.accepted.clear()
                self.accepted.add(paper)
            else:
                self.bad_count += 1
                self.bad_ids[:] = self.bad_ids or [(seq, paper)]
        if seq % CHUNK == 0:
            self.compare(seq)

    def compare(self, last: int) -> None:
        """Compare the links and Merkle nodes of seqs `checked` + 1 .. `last` with the stored ones."""
        first = self.checked
        self._links(first, last)
        if self.failure is None:
            self._nodes(first, last)
        self.links, self.nodes, self.checked = [], [], last

    def _links(self, first: int, last: int) -> None:
        # Compared as sets: how a database orders text is its collation's, not Python's.
        stored = {tuple(row) for row in self.cursor.links_between(first, last)}
        self.compared[0] += len(stored)
        problems = []
        expected = set(self.links)
        for seq, paper, observation in sorted(expected - stored):
            linked = self.cursor.link_seq(paper, observation)
            if linked is None:
                problems.append((seq, f"observation_papers: no link of arXiv:{shown(paper)} to observation "
                                      f"{shown(observation)}; the citation at seq {seq} makes it"))
            elif not isinstance(linked, int) or linked > seq:
                problems.append((seq, f"observation_papers: the link of arXiv:{shown(paper)} to observation "
                                      f"{shown(observation)} is stored with seq {shown(linked)}; the citation at seq "
                                      f"{seq} made it first"))
        for row in stored - expected:
            problems.append((row[0] if isinstance(row[0], int) else first, _stray(row)))
        if problems:
            self.fail(min(problems)[1])

    def _nodes(self, first: int, last: int) -> None:
        stored = {(level, index): digest for level, index, digest in self.cursor.nodes_completed(first, last)}
        self.compared[1] += len(stored)
        for level, index, digest in self.nodes:  # in the order they complete
            found = stored.pop((level, index), None)
            if found is None:
                return self.fail(f"Merkle node ({level}, {index}) is missing (leaves {index << level}..{((index + 1) << level) - 1})")
            if found != digest:
                return self.fail(f"Merkle node ({level}, {index}): its stored hash is not the one its leaves "
                                 f"(seq {(index << level) + 1}..{(index + 1) << level}) re-compute")
        if stored:
            level, index = min(stored, key=lambda pair: ((pair[1] + 1) << pair[0], pair[0]))
            self.fail(f"Merkle node ({level}, {index}) is stored, yet no such node is in the tree")

    def finish(self, size: int) -> None:
        """After the chain: compare the last chunk, look for rows past the log, then raise the first
        difference found."""
        if self.failure is None and size > self.checked:
            self.compare(size)
        if self.failure is None and (row := self.cursor.stray_link(size)) is not None:
            self.fail(_stray(row))
        if self.failure is None and (pair := self.cursor.stray_node(size)) is not None:
            self.fail(f"Merkle node ({shown(pair[0])}, {shown(pair[1])}) is stored, yet no such node is in the tree "
                      f"of {size} leaves")
        if self.failure is not None:
            raise IntegrityError(self.failure)


def _column(seq: int, stored: tuple, event: Event) -> str:
    """The first derived column of `seq` that is not what its entry derives, worded."""
    for column, was, derived in zip(("subject", "paper", "effective_key"), stored,
                                    (event.subject, event.paper, event.effective_key)):
        if was != derived:
            return f"seq {seq}: events.{column} is {shown(was)}, its entry derives {shown(derived)}"
    return f"seq {seq}: a derived column differs"


def _event(entry: Entry) -> Event:
    """The event an entry holds, with what its append derived: its kind's `derive`, as `make_event` runs it,
    with the payload taken as checked (it was, when appended, and the chain seals it since): checking it again
    tripled the cost of the pass.
    Raises: KeyError, TypeError or InputError for a payload that is not one of its kind."""
    effective, subject, paper, papers = KIND[entry.kind].derive(orjson.loads(entry.payload), True, entry.effective_at)
    return Event(entry.kind, effective, instant_key(effective), entry.payload, subject, paper, papers)


def _accepted(paper: str) -> bool:
    """Whether the one id parser takes `paper` as the id of a paper the ledger keeps records for."""
    try:
        paper_id(paper)
    except InputError:
        return False
    return True


def _stray(row: tuple) -> str:
    seq, paper, observation = row
    return (f"observation_papers: a link of arXiv:{shown(paper)} to observation {shown(observation)} at seq "
            f"{shown(seq)} that no citation at that seq makes")


def verify_store(store: Store, progress: Callable[[str], None] | None = None) -> StoreCheck:
    """The full check: the chain (`verify_chain`), then every derived row compared with what the entries
    derive, all read in one snapshot.

    Raises: IntegrityError naming the first seq, node (of the log's tree or the paper index) or paper that
    differs, or the first paper id the id parser refuses (with how many); StoreError."""
    with store.snapshot() as cursor:
        roots = cursor.index_root_rows()
        index_size = roots[-1][0] if roots and isinstance(roots[-1][0], int) else None
        check = _Pass(cursor, index_size)
        head = verify_chain(check.entries(), progress)
        check.finish(head.seq)
        nodes = _index(cursor, head.seq, roots, check.members)
    if check.bad_ids:
        _refuse(*check.bad_ids[0], check.bad_count, "event")
    papers = len(check.members.every_paper()) if check.members is not None else 0
    return StoreCheck(head, check.compared[0], check.compared[1], nodes, len(roots), index_size, papers)


def verify_paper_ids(store: Store) -> int:
    """What plain `verify` adds to the chain check, cheaply: every paper with a paper-level event, read with its
    first seq from the paper index alone (not the events), checked by the id parser `verify --full` uses.
    Returns how many papers it checked.
    Raises: IntegrityError naming the paper id refused with the smallest first seq (and how many papers are
    refused), as `verify --full` names it; StoreError."""
    checked, refused, first, after = 0, 0, None, None
    with store.snapshot() as cursor:
        while rows := cursor.first_seqs(after, PAGE):
            checked += len(rows)
            for paper, seq in rows:
                if not _accepted(paper):
                    refused += 1
                    first = min(first or (seq, paper), (seq, paper))
            after = rows[-1][0]
    if first is not None:
        _refuse(*first, refused, "paper")
    return checked


def _refuse(seq: int, paper: object, count: int, noun: str) -> None:
    raise IntegrityError(f"seq {seq}: arXiv:{shown(paper)} is not a paper id the ledger accepts today "
                         f"({count} such {noun}{'s' if count != 1 else ''}); `replay --out` and `publish` skip "
                         f"that paper")


def _index(cursor: Cursor, size: int, roots: list[tuple], members: Membership | None) -> int:
    """Re-hash every stored paper index node and root; re-compute the latest root from the log (`members`)
    and compare. Returns how many nodes it re-hashed. Holds every node's hash (32 bytes and its id) and every
    parent's child link until the end: memory grows with the stored nodes.
    Raises: IntegrityError naming the first node, root or paper that differs."""
    hashes: dict[int, bytes] = {}
    children: list[tuple[int, int, bytes]] = []  # (parent, child, the hash the parent holds)
    after = -1
    while rows := cursor.index_node_rows_after(after, PAGE):
        for node_id, data in rows:
            where = f"paper index: node {node_id} (of size {node_id >> ID_SHIFT})"
            if node_id >> ID_SHIFT > size:
                raise IntegrityError(f"{where} is of a tree larger than the log's {counted(size, 'event')}")
            try:
                node = decode(data)
            except IntegrityError:
                raise IntegrityError(f"{where} is not a node") from None
            for slot in node.slots:
                if type(slot) is Leaf and slot.hash != index_leaf_hash(slot.key, slot.count, edge_root(slot.edge)):
                    raise IntegrityError(f"{where}: the leaf of key {slot.key.hex()[:16]}... does not re-hash")
                if type(slot) is Child:
                    children.append((node_id, slot.id, slot.hash))
            hashes[node_id] = node.hash()
        after = rows[-1][0]
    for parent, child, digest in children:
        if hashes.get(child) != digest:
            raise IntegrityError(f"paper index: node {parent} (of size {parent >> ID_SHIFT}) holds a hash of node "
                                 f"{child} that is not {'that node' if child in hashes else 'stored'}'s")
    for root_size, node, digest in roots:
        if not isinstance(root_size, int) or not 0 < root_size <= size:
            raise IntegrityError(f"paper index: a root of size {shown(root_size)}, not a size of the log's {counted(size, 'event')}")
        if (ZERO if node is None else hashes.get(node)) != digest:
            raise IntegrityError(f"paper index: the root at size {root_size} is not the hash of its node {node}")
    if members is not None:
        latest, node, digest = roots[-1]
        leaves = members.leaves()
        if index_root(leaves) != digest:
            stored = _stored_leaves(cursor, node)
            for paper in sorted(members.every_paper()):
                key = paper_key(paper)
                if stored.pop(key, None) != leaves[key]:
                    raise IntegrityError(f"paper index at size {latest}: the leaf of arXiv:{shown(paper)} is not the one "
                                         "the log re-computes")
            raise IntegrityError(f"paper index at size {latest}: holds a paper the log does not have "
                                 f"(key {min(stored).hex()[:16]}...)" if stored else
                                 f"paper index at size {latest}: its root is not the one the log re-computes")
    return len(hashes)


def _stored_leaves(cursor: Cursor, top: int | None) -> dict[bytes, bytes]:
    """Every leaf (key -> leaf hash) under a stored root node."""
    found: dict[bytes, bytes] = {}
    nodes, wanted = Nodes(), ([] if top is None else [top])
    while wanted:
        slots = [slot for node in nodes.get(cursor, wanted).values() for slot in node.slots if slot is not None]
        found.update((slot.key, slot.hash) for slot in slots if type(slot) is Leaf)
        wanted = [slot.id for slot in slots if type(slot) is Child]
    return found
