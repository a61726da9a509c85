"""The paper index: what it commits to, its hashes, its proofs and their check, and its re-computation from
a log. Pure: bytes and values in, values or exceptions out; it never reads a store (the store's copy lives in
`ledger.storage.index_nodes`, and must always equal what this module re-computes).

For a tree size N, the index holds one leaf per paper with at least one event among seq 1..N:

    events of P at N = the events e, seq(e) <= N, whose paper is P (paper.snapshot, source.checked,
                       measurements.checked), or whose observation is linked to P at N: some
                       citation.observed with seq <= N and the same observation id names P as citing
                       or cited paper (a link reaches back: an observation's earlier events join P too)
    count, root      = their number, and the RFC 9162 tree hash (MTH) over their entries in seq order: the
                       same entries as the log's leaves, so the same leaf hashes SHA-256(0x00 || entry)
    key(P)           = SHA-256(arXiv id as UTF-8)                                            (256 bits)
    leaf(P)          = SHA-256(0x02 || key(P) || count as 8 bytes big-endian || root)
    node             = SHA-256(0x03 || left || right)
    H(S, d)          = 32 zero bytes if S is empty; leaf(P) if S = {P}; otherwise
                       node(H(S0, d+1), H(S1, d+1)), S_b the papers of S whose key has bit d equal to b
    index root       = H(every paper in the index, 0)              (bit 0 is the high bit of the key's byte 0)

A compact sparse Merkle tree: a subtree holding one paper is that paper's leaf, so a proof is as deep as
the keys need to tell papers apart (about log2(papers)), and a paper that is absent is proven so by the
path to an empty subtree or to another paper's leaf. The checkpoint binds the index root to the tree size
in an extension line signed with it (`ledger.signed_notes`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

from ledger.core.errors import InputError, IntegrityError
from ledger.log.chain import Entry, entry_bytes
from ledger.log.merkle import (
    EMPTY_ROOT,
    NodeSource,
    perfect_subtrees,
)
from ledger.log.merkle import leaf_hash as log_leaf_hash
from ledger.log.merkle import node_hash as log_node_hash
from ledger.model.events import CITATION_OBSERVED, OBSERVATION_KINDS, Event, make_event
from ledger.model.published import count_field, field, sha256_field

ZERO = bytes(32)  # the hash of an empty subtree
LEAF_PREFIX, NODE_PREFIX = b"\x02", b"\x03"  # RFC 9162 uses 0x00 and 0x01: no index hash can pass for a log hash
KEY_BITS = 256


def paper_key(paper: str) -> bytes:
    """SHA-256 of the arXiv id's UTF-8 bytes: the paper's place in the index."""
    return hashlib.sha256(paper.encode("utf-8", "surrogatepass")).digest()


def leaf_hash(key: bytes, count: int, root: bytes) -> bytes:
    """SHA-256(0x02 || key || count (8 bytes, big-endian) || root), for a count below 2**64."""
    return hashlib.sha256(LEAF_PREFIX + key + count.to_bytes(8, "big") + root).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """SHA-256(0x03 || left || right)."""
    return hashlib.sha256(NODE_PREFIX + left + right).digest()


def bit(key: bytes, depth: int) -> int:
    """Bit `depth` of a key, 0 being the high bit of its first byte (IndexError past the key's end)."""
    return (key[depth >> 3] >> (7 - (depth & 7))) & 1


# -- a paper's events: the RFC 9162 tree over their entries, kept as its right edge ----------------------
def extend(edge: list[bytes], count: int, leaf_hashes: Iterable[bytes]) -> int:
    """Add events (their leaf hashes in the log) to a tree of `count` events whose right edge (its perfect
    subtrees, largest first) is `edge`, updated in place; returns the new count. An edge
    that is not one of `count` items raises IndexError."""
    sha256 = hashlib.sha256
    pop, push = edge.pop, edge.append
    for digest in leaf_hashes:  # merkle.grow, inlined: this runs for every event added
        index = count  # leaf `count` merges with the subtrees of its trailing one bits, the smallest, at the end
        while index & 1:
            digest = sha256(b"\x01" + pop() + digest).digest()
            index >>= 1
        push(digest)
        count += 1
    return count


def edge_root(edge: Sequence[bytes]) -> bytes:
    """The RFC 9162 root of a tree from its right edge (its perfect subtrees, largest first)."""
    if not edge:
        return EMPTY_ROOT
    digest = edge[-1]
    for subtree in edge[-2::-1]:
        digest = log_node_hash(subtree, digest)
    return digest


def events_root(leaf_hashes: list[bytes]) -> bytes:
    """The RFC 9162 root over a paper's events (their leaf hashes), in the order given."""
    edge: list[bytes] = []
    extend(edge, 0, leaf_hashes)
    return edge_root(edge)


def events_tree(leaf_hashes: list[bytes]) -> NodeSource:
    """A node source (see `ledger.merkle`) for the RFC 9162 tree over a paper's events (their leaf hashes):
    every perfect subtree, held in memory. Its nodes raise KeyError for a subtree the tree does not have."""
    depth = max(len(leaf_hashes) - 1, 0).bit_length() + 1
    nodes = perfect_subtrees(0, list(leaf_hashes), depth)
    return lambda level, index: nodes[(level, index)]


# -- the index over papers -----------------------------------------------------------------------------
def index_root(leaves: dict[bytes, bytes]) -> bytes:
    """H(every paper, 0) from each paper's key -> leaf hash, computed from scratch."""
    keys = sorted(leaves)

    def subtree(lo: int, hi: int, depth: int) -> bytes:
        if hi == lo:
            return ZERO
        if hi - lo == 1:
            return leaves[keys[lo]]
        first, last = lo, hi  # keys are sorted: those with bit `depth` clear come first
        while first < last:
            mid = (first + last) // 2
            if bit(keys[mid], depth):
                last = mid
            else:
                first = mid + 1
        return node_hash(subtree(lo, first, depth + 1), subtree(first, hi, depth + 1))

    return subtree(0, len(keys), 0)


@dataclass(frozen=True)
class Neighbour:
    """Another paper's leaf where an absent paper's path ends."""

    key: bytes
    count: int
    root: bytes


@dataclass(frozen=True)
class IndexProof:
    """A paper's place in the index of one tree size: its count and events root (count 0: absent), and the
    siblings from the index root down (None for an empty subtree) to where its key's path ends."""

    paper: str
    tree_size: int
    index_root: bytes
    count: int
    root: bytes | None
    siblings: tuple[bytes | None, ...]
    neighbour: Neighbour | None = None
    key: bytes | None = None  # as the proof states it (None: SHA-256 of the paper id, as built)

    def to_json(self) -> dict[str, object]:
        """The proof as `ledger prove --paper --json` prints it (hex hashes, null for an empty sibling)."""
        neighbour = None if self.neighbour is None else {
            "count": self.neighbour.count, "key": self.neighbour.key.hex(), "root": self.neighbour.root.hex()}
        return {"count": self.count, "events_root": None if self.root is None else self.root.hex(),
                "index_root": self.index_root.hex(), "key": paper_key(self.paper).hex(), "neighbour": neighbour,
                "paper": self.paper, "siblings": [None if s is None else s.hex() for s in self.siblings],
                "tree_size": self.tree_size}


_COUNTS = 2 ** 63  # a proof's counts and tree sizes lie below this
PROOF_FIELDS = ("count", "events_root", "index_root", "key", "neighbour", "paper", "siblings", "tree_size")


def parse_proof(data: Any, path: str = "") -> IndexProof:
    """An index proof from its JSON form (`path` names where it sits, e.g. "index" in a bundle), every field
    checked for shape.
    Raises: InputError naming the first field that is missing or malformed."""
    at = (lambda key: f"{path}.{key}") if path else (lambda key: key)
    if not isinstance(data, dict):
        raise InputError(f"field {path or 'proof'}: expected a paper index proof (a JSON object)")
    unknown = set(data) - set(PROOF_FIELDS)
    if unknown:
        raise InputError(f"field {at(sorted(unknown)[0])}: not a field of a paper index proof")
    paper = field(data, "paper", str, path)
    size, count = count_field(data, "tree_size", path, below=_COUNTS), count_field(data, "count", path, below=_COUNTS)
    key = sha256_field(field(data, "key", str, path), at("key"))
    root = field(data, "events_root", str, path, nullable=True)
    root = None if root is None else sha256_field(root, at("events_root"))
    siblings = field(data, "siblings", list, path)
    if len(siblings) > KEY_BITS:
        raise InputError(f"field {at('siblings')}: more than {KEY_BITS} hashes")
    parsed = tuple(None if s is None else sha256_field(s, f"{at('siblings')}[{i}]") for i, s in enumerate(siblings))
    neighbour = field(data, "neighbour", dict, path, nullable=True)
    if neighbour is not None:
        where = at("neighbour")
        neighbour = Neighbour(sha256_field(field(neighbour, "key", str, where), f"{where}.key"),
                              count_field(neighbour, "count", where, below=_COUNTS),
                              sha256_field(field(neighbour, "root", str, where), f"{where}.root"))
    index_root = sha256_field(field(data, "index_root", str, path), at("index_root"))
    return IndexProof(paper, size, index_root, count, root, parsed, neighbour, key)


def verify_index_proof(proof: IndexProof, signed_root: bytes) -> None:
    """Check that the proof's paper has `count` events with events root `root` (or none at all, count 0) in
    the index whose root is `signed_root`; returns None.
    Raises: IntegrityError naming the first check that fails."""
    key = paper_key(proof.paper)
    if proof.key is not None and proof.key != key:
        raise IntegrityError(f"index proof of arXiv:{proof.paper}: its key is not SHA-256 of the paper id")
    depth = len(proof.siblings)
    if proof.count > 0:
        if proof.root is None or proof.neighbour is not None:
            raise IntegrityError(f"index proof of arXiv:{proof.paper}: a paper with events has an events root "
                                 "and no neighbour")
        digest = leaf_hash(key, proof.count, proof.root)
    elif proof.root is not None:
        raise IntegrityError(f"index proof of arXiv:{proof.paper}: a paper with no events has no events root")
    elif proof.neighbour is None:
        digest = ZERO
    else:
        other = proof.neighbour
        if other.count == 0:
            raise IntegrityError(f"index proof of arXiv:{proof.paper}: its neighbour has no events")
        if other.key == key or any(bit(other.key, d) != bit(key, d) for d in range(depth)):
            raise IntegrityError(f"index proof of arXiv:{proof.paper}: the neighbour's key does not share the "
                                 f"paper's first {depth} bits, or is the paper's own")
        digest = leaf_hash(other.key, other.count, other.root)
    for d in range(depth - 1, -1, -1):
        sibling = proof.siblings[d] or ZERO
        digest = node_hash(sibling, digest) if bit(key, d) else node_hash(digest, sibling)
    if digest != proof.index_root:
        raise IntegrityError(f"index proof of arXiv:{proof.paper}: the path does not lead to its index root")
    if proof.index_root != signed_root:
        raise IntegrityError(f"index proof of arXiv:{proof.paper}: its index root is not the one the "
                             "checkpoint signs")


# -- which events belong to which paper ----------------------------------------------------------------
def citation_links(event: Event) -> tuple[str, ...]:
    """The papers a citation event links its observation to (none for other kinds)."""
    return event.papers if event.kind == CITATION_OBSERVED else ()


class Membership:
    """Which papers each event of a log prefix belongs to, fed one event at a time in seq order; an
    observation's earlier events are counted for a paper from the moment a citation links them to it."""

    def __init__(self) -> None:
        self.papers: dict[str, list[tuple[int, bytes]]] = {}  # paper -> (seq, leaf hash) of paper-level events
        self.observations: dict[str, list[tuple[int, bytes]]] = {}  # observation -> (seq, leaf hash) of its events
        self.links: dict[str, set[str]] = {}  # paper -> observations linked to it

    def add(self, seq: int, event: Event, entry_leaf_hash: bytes) -> None:
        """Count one event (seq must follow the previous one)."""
        data = (seq, entry_leaf_hash)
        if event.kind in OBSERVATION_KINDS:
            self.observations.setdefault(event.subject, []).append(data)
            for paper in citation_links(event):
                self.links.setdefault(paper, set()).add(event.subject)
        elif event.paper is not None:
            self.papers.setdefault(event.paper, []).append(data)

    def events(self, paper: str) -> list[tuple[int, bytes]]:
        """A paper's events, (seq, leaf hash) in seq order."""
        found = list(self.papers.get(paper, []))
        for observation in self.links.get(paper, ()):
            found.extend(self.observations[observation])
        found.sort()
        return found

    def every_paper(self) -> set[str]:
        """Every paper with at least one event."""
        return set(self.papers) | {p for p, linked in self.links.items() if linked}

    def leaves(self) -> dict[bytes, bytes]:
        """Every paper's key -> leaf hash."""
        result = {}
        for paper in self.every_paper():
            events = [digest for _, digest in self.events(paper)]
            result[paper_key(paper)] = leaf_hash(paper_key(paper), len(events), events_root(events))
        return result


def log_event(entry: Entry) -> Event:
    """The event an exported log entry holds, with its paper and links derived as when it was appended.
    Raises: InputError for an entry that is not a ledger event."""
    try:
        payload = orjson.loads(entry.payload)
    except orjson.JSONDecodeError:
        raise InputError(f"seq {entry.seq}: payload is not JSON") from None
    return make_event(entry.kind, payload, entry.effective_at)


class LogIndex(NamedTuple):
    """The paper index re-computed from a log prefix: its root, the log's own RFC 9162 root, and who is in it."""

    root: bytes
    log_root: bytes
    members: Membership


def index_of_log(entries: Iterable[Entry], size: int) -> LogIndex:
    """Re-compute the index root at `size` from a log's entries (seq 1 first), with the log's tree root and
    the membership it was computed from.
    Raises: InputError for an entry that is not an event, or when the log is shorter than `size`."""
    members = Membership()
    edge: list[bytes] = []  # the log's own tree
    seen = 0
    for entry in entries:
        if entry.seq > size:
            break
        if entry.seq != seen + 1:
            raise InputError(f"log: expected seq {seen + 1}, found seq {entry.seq}")
        seen = entry.seq
        digest = log_leaf_hash(entry_bytes(entry.seq, entry.kind, entry.effective_at, entry.recorded_at, entry.payload))
        members.add(entry.seq, log_event(entry), digest)
        extend(edge, entry.seq - 1, (digest,))
    if seen < size:
        raise InputError(f"log: holds {seen} events, the checkpoint is of size {size}")
    return LogIndex(index_root(members.leaves()), edge_root(edge), members)
