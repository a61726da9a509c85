"""Building what an outsider checks: inclusion and consistency proofs (RFC 9162), signed checkpoints, and
evidence bundles that carry one record with every event that built it.

This module reads the store; checking what it builds needs none: that is `ledger.auditor`, which never
imports this module or the store. Everything one call builds comes from one snapshot of the store (one read
transaction), and every read is bounded by the tree size it proves against: an append landing meanwhile is
in none of it.
"""

from __future__ import annotations

import base64

from projections.record import build_record

from .chain import entry_bytes
from .errors import InputError
from .merkle import consistency_path, inclusion_path, leaf_hash, root
from .signed_notes import Checkpoint, Signer
from .store import Store


def _size(cursor, size: int | None) -> int:
    head = cursor.head()[0]
    if size is None:
        return head
    if not 0 < size <= head:
        raise InputError(f"tree size {size}: the ledger holds {head} events")
    return size


def checkpoint(store: Store, signer: Signer, size: int | None = None) -> tuple[str, int]:
    """A signed note of the tree of `size` leaves (default: the current tree), and that size: origin (the
    key's name), size, root. Raises InputError for a size the ledger does not hold, StoreError, or
    IntegrityError when a Merkle node cannot be had."""
    with store.snapshot() as cursor:
        size = _size(cursor, size) if size else cursor.head()[0]
        return _signed_checkpoint(signer, cursor.node_source(size), size), size


def _signed_checkpoint(signer: Signer, nodes, size: int) -> str:
    return signer.sign(Checkpoint(signer.name, size, root(nodes, size)).text())


def _inclusion(nodes, seq: int, size: int, kind: str, effective_at: str, recorded_at: str, payload: bytes) -> dict:
    leaf = entry_bytes(seq, kind, effective_at, recorded_at, payload)
    return {"leaf": base64.b64encode(leaf).decode(), "leaf_hash": leaf_hash(leaf).hex(), "leaf_index": seq - 1,
            "path": [p.hex() for p in inclusion_path(nodes, seq - 1, size)], "seq": seq, "tree_size": size}


def prove_inclusion(store: Store, seq: int, size: int | None = None) -> dict:
    """An inclusion proof of event `seq` in the tree of `size` (default: now). Raises InputError for a seq or size outside the ledger, StoreError."""
    with store.snapshot() as cursor:
        size = _size(cursor, size)
        if not 0 < seq <= size:
            raise InputError(f"seq {seq}: not in a tree of size {size}")
        entry = cursor.entry(seq)
        nodes = cursor.node_source(size, lambda nodes: (inclusion_path(nodes, seq - 1, size), root(nodes, size)))
        proof = _inclusion(nodes, seq, size, entry.kind, entry.effective_at, entry.recorded_at, entry.payload)
        proof["root"] = root(nodes, size).hex()
        return proof


def prove_consistency(store: Store, old: int, new: int | None = None) -> dict:
    """A consistency proof from the tree of `old` leaves to that of `new` (default: now). Raises InputError for sizes outside the ledger, StoreError."""
    with store.snapshot() as cursor:
        new = _size(cursor, new)
        if not 0 < old <= new:
            raise InputError(f"--consistency {old}: expected a size from 1 to {new}")
        nodes = cursor.node_source(new, lambda nodes: (root(nodes, new), root(nodes, old),
                                                        consistency_path(nodes, old, new)))
        return {"new_root": root(nodes, new).hex(), "new_size": new, "old_root": root(nodes, old).hex(),
                "old_size": old, "path": [p.hex() for p in consistency_path(nodes, old, new)]}


def evidence_bundle(store: Store, paper: str, as_of: str, as_of_key: str, signer: Signer,
                    known_at: str | None = None) -> dict:
    """The record, every event that built it (each with its leaf and inclusion proof), a signed checkpoint:
    the head, the facts and the proofs read from one snapshot, the facts bounded by the tree's size.
    Raises NotFoundError when the paper has no record then, StoreError."""
    with store.snapshot() as cursor:
        size = cursor.head()[0]
        facts = [f for f in cursor.paper_facts(paper, known_at, size) if f.effective_key <= as_of_key]
        record = build_record(paper, facts, as_of, as_of_key)
        nodes = cursor.node_source(size)
        events = []
        for f in facts:
            proof = _inclusion(nodes, f.seq, size, f.kind, f.effective_at, f.recorded_at, f.payload)
            events.append({"leaf": proof.pop("leaf"), "proof": proof, "seq": f.seq})
        note = _signed_checkpoint(signer, nodes, size)
    return {"checkpoint": note, "events": events, "record": record}
