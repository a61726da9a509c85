"""A Merkle tree over the event log, exactly as RFC 9162 section 2.1 (SHA-256).

    leaf hash  = SHA-256(0x00 || leaf)        leaf of event n = entry(n), the bytes whose blake3 is its entry hash
    node hash  = SHA-256(0x01 || left || right)
    MTH(D[n])  = split at k, the largest power of two smaller than n

A perfect subtree, (level, index) = the 2**level leaves from index * 2**level, never changes once complete:
the store keeps the large ones as leaves are appended and re-computes small ones from their leaves. Any
MTH(D[lo:hi]) in the RFC's recursion is then a handful of such nodes, so proofs never rebuild the tree.
`NodeSource` is the only thing proofs need; the verifiers are pure and take nothing but hashes.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections.abc import Callable, Iterable

from ledger.core.errors import IntegrityError

NodeSource = Callable[[int, int], bytes]  # (level, index) -> the stored hash of that perfect subtree


def leaf_hash(leaf: bytes) -> bytes:
    """SHA-256(0x00 || leaf), RFC 9162's leaf hash."""
    return hashlib.sha256(b"\x00" + leaf).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """SHA-256(0x01 || left || right), RFC 9162's interior node hash."""
    return hashlib.sha256(b"\x01" + left + right).digest()


EMPTY_ROOT = hashlib.sha256(b"").digest()


def _split(n: int) -> int:
    """The largest power of two smaller than n (n > 1)."""
    return 1 << ((n - 1).bit_length() - 1)


def grow(frontier: dict[int, bytes], size: int, leaf_digest: bytes, kept: list[tuple[int, int, bytes]],
         keep_from: int = 0) -> None:
    """Add leaf number `size` (0-based) to a tree of `size` leaves.

    `frontier` maps level -> hash of the right-most perfect subtree at that level (it is updated in place).
    The leaf and every perfect subtree it completes, (level, index, hash), are added to `kept` when their
    level is at least `keep_from`.
    """
    level, index, digest = 0, size, leaf_digest
    if keep_from == 0:
        kept.append((0, index, digest))
    while index & 1:  # a right child completes its parent
        left, frontier[level] = frontier[level], digest
        digest = node_hash(left, digest)
        level, index = level + 1, index >> 1
        if level >= keep_from:
            kept.append((level, index, digest))
    frontier[level] = digest


def perfect_subtrees(first: int, leaf_digests: list[bytes], below: int) -> dict[tuple[int, int], bytes]:
    """Every perfect subtree of fewer than 2**below leaves among consecutive leaves from index `first`
    (a multiple of 2**below), by (level, index)."""
    found: dict[tuple[int, int], bytes] = {}
    row = leaf_digests
    for level in range(below):
        start = first >> level
        found.update(((level, start + j), digest) for j, digest in enumerate(row))
        row = [node_hash(row[j], row[j + 1]) for j in range(0, len(row) - 1, 2)]
    return found


def frontier_nodes(size: int) -> list[tuple[int, int]]:
    """The (level, index) of the perfect subtrees a tree of `size` leaves decomposes into, left to right."""
    nodes, start = [], 0
    for level in range(size.bit_length() - 1, -1, -1):
        if size & (1 << level):
            nodes.append((level, start >> level))
            start += 1 << level
    return nodes


def subtree(nodes: NodeSource, lo: int, hi: int) -> bytes:
    """MTH(D[lo:hi]) from stored perfect subtrees (lo is aligned as in the RFC's recursion).
    Raises whatever `nodes` raises for a node it does not hold."""
    n = hi - lo
    if n == 0:
        return EMPTY_ROOT
    if n & (n - 1) == 0 and lo % n == 0:
        return nodes(n.bit_length() - 1, lo // n)
    k = _split(n)
    return node_hash(subtree(nodes, lo, lo + k), subtree(nodes, lo + k, hi))


def root(nodes: NodeSource, size: int) -> bytes:
    """MTH(D[size]), the tree's root. Raises whatever `nodes` raises for a node it does not hold."""
    return subtree(nodes, 0, size)


def inclusion_path(nodes: NodeSource, index: int, size: int) -> list[bytes]:
    """PATH(m, D[n]) of RFC 9162 2.1.3.1, leaf first.
    Raises: IntegrityError for an index outside the tree, or whatever `nodes` raises."""
    if not 0 <= index < size:
        raise IntegrityError(f"leaf index {index} is not in a tree of size {size}")

    def path(m: int, lo: int, hi: int) -> list[bytes]:
        n = hi - lo
        if n == 1:
            return []
        k = _split(n)
        if m < k:
            return path(m, lo, lo + k) + [subtree(nodes, lo + k, hi)]
        return path(m - k, lo + k, hi) + [subtree(nodes, lo, lo + k)]

    return path(index, 0, size)


def consistency_path(nodes: NodeSource, old: int, new: int) -> list[bytes]:
    """PROOF(m, D[n]) of RFC 9162 2.1.4.1.
    Raises: IntegrityError for sizes that are not an old and a new tree, or whatever `nodes` raises."""
    if not 0 < old <= new:
        raise IntegrityError(f"no consistency proof from size {old} to size {new}")

    def subproof(m: int, lo: int, hi: int, whole: bool) -> list[bytes]:
        n = hi - lo
        if m == n:
            return [] if whole else [subtree(nodes, lo, hi)]
        k = _split(n)
        if m <= k:
            return subproof(m, lo, lo + k, whole) + [subtree(nodes, lo + k, hi)]
        return subproof(m - k, lo + k, hi, False) + [subtree(nodes, lo, lo + k)]

    return subproof(old, 0, new, True)


def verify_inclusion(leaf_digest: bytes, index: int, size: int, path: Iterable[bytes], expected_root: bytes) -> None:
    """RFC 9162 2.1.3.2: returns None when the path leads from the leaf to `expected_root`.
    Raises: IntegrityError naming the first check that fails."""
    path = list(path)
    if not 0 <= index < size:
        raise IntegrityError(f"inclusion proof: leaf index {index} outside a tree of size {size}")
    fn, sn, r = index, size - 1, leaf_digest
    for p in path:
        if sn == 0:
            raise IntegrityError("inclusion proof: path longer than the tree is deep")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise IntegrityError("inclusion proof: path shorter than the tree is deep")
    if r != expected_root:
        raise IntegrityError("inclusion proof: the path does not lead to the root")


def verify_consistency(old: int, new: int, old_root: bytes, new_root: bytes, path: Iterable[bytes]) -> None:
    """RFC 9162 2.1.4.2: returns None when the path leads from `old_root` to `new_root`.
    Raises: IntegrityError naming the first check that fails."""
    path = list(path)
    if not 0 < old <= new:
        raise IntegrityError(f"consistency proof: sizes {old} and {new} are not an old and a new tree")
    if old == new:
        if path or old_root != new_root:
            raise IntegrityError("consistency proof: equal sizes need an empty path and equal roots")
        return
    if old & (old - 1) == 0:
        path = [old_root] + path
    if not path:
        raise IntegrityError("consistency proof: empty path")
    fn, sn = old - 1, new - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise IntegrityError("consistency proof: path longer than needed")
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            if not fn & 1:
                while fn and not fn & 1:
                    fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise IntegrityError("consistency proof: path shorter than needed")
    if fr != old_root:
        raise IntegrityError("consistency proof: does not lead to the old root")
    if sr != new_root:
        raise IntegrityError("consistency proof: does not lead to the new root")


def multi_inclusion_path(nodes: NodeSource, indices: list[int], size: int) -> list[bytes]:
    """One proof for several leaves (`indices`, ascending and distinct) of D[size]: walking RFC 9162's
    recursion left to right, the hash of every subtree that holds none of them, once. With those leaves it
    gives the root; siblings the leaves share are not repeated, as they are in one PATH per leaf.
    Raises: IntegrityError for indices that are not ascending leaves of the tree, or whatever `nodes` raises."""
    _check_ascending(indices, size)

    def walk(lo: int, hi: int, first: int, last: int) -> list[bytes]:  # indices[first:last] lie in [lo, hi)
        if first == last:
            return [subtree(nodes, lo, hi)]
        if hi - lo == 1:
            return []
        middle = bisect_left(indices, lo + _split(hi - lo), first, last)
        return walk(lo, lo + _split(hi - lo), first, middle) + walk(lo + _split(hi - lo), hi, middle, last)

    return walk(0, size, 0, len(indices)) if indices else []


def verify_multi_inclusion(leaves: list[tuple[int, bytes]], size: int, path: Iterable[bytes],
                           expected_root: bytes) -> None:
    """Returns None when `path` (see `multi_inclusion_path`) and the (index, leaf hash) pairs, ascending,
    give `expected_root`, every hash of the path used exactly once.
    Raises: IntegrityError naming the first check that fails."""
    indices, given = [index for index, _ in leaves], iter(path)
    if not leaves:
        raise IntegrityError("multi-leaf inclusion proof: no leaves")
    try:
        _check_ascending(indices, size)
    except IntegrityError as exc:
        raise IntegrityError(f"multi-leaf inclusion proof: {exc}") from None

    def walk(lo: int, hi: int, first: int, last: int) -> bytes:
        if first == last:
            found = next(given, None)
            if found is None:
                raise IntegrityError("multi-leaf inclusion proof: path shorter than the leaves need")
            return found
        if hi - lo == 1:
            return leaves[first][1]
        k = _split(hi - lo)
        middle = bisect_left(indices, lo + k, first, last)
        return node_hash(walk(lo, lo + k, first, middle), walk(lo + k, hi, middle, last))

    found = walk(0, size, 0, len(leaves))
    if next(given, None) is not None:
        raise IntegrityError("multi-leaf inclusion proof: path longer than the leaves need")
    if found != expected_root:
        raise IntegrityError("multi-leaf inclusion proof: the leaves and the path do not lead to the root")


def _check_ascending(indices: list[int], size: int) -> None:
    if any(b <= a for a, b in zip(indices, indices[1:])):
        raise IntegrityError("leaf indices are not ascending and distinct")
    if indices and not (0 <= indices[0] and indices[-1] < size):
        raise IntegrityError(f"leaf index outside a tree of size {size}")
