"""Building what an outsider checks: inclusion and consistency proofs (RFC 9162), paper index proofs, signed
checkpoints (and the note of the paper index root), and evidence bundles that carry one record with every event of its
paper up to the checkpoint's size, each placed in the log and in the paper's own events tree.

This module reads the store; checking what it builds needs none: that is `ledger.audit`, which never
imports this module or the store. Everything one call builds comes from one snapshot of the store (one read
transaction), and every read is bounded by the tree size it proves against: an append landing meanwhile is
in none of it.
"""

from __future__ import annotations

import base64

from ledger.core.canonical import parse_json
from ledger.core.errors import InputError, IntegrityError, LedgerError
from ledger.core.times import When
from ledger.log.chain import entry_bytes
from ledger.log.merkle import consistency_path, inclusion_path, leaf_hash, multi_inclusion_path, root
from ledger.log.paper_index import events_tree
from ledger.log.signed_notes import Checkpoint, Signer, Verifier, split_note, verify_checkpoint
from ledger.model.parts import counted
from ledger.projections.record import build_record
from ledger.storage.cosigned_checkpoint import INDEX_KEY, latest_cosigned
from ledger.storage.index_reads import prove as index_proof
from ledger.storage.index_reads import root_at
from ledger.storage.store import Store


def _size(cursor, size: int | None) -> int:
    head = cursor.head()[0]
    if size is None:
        return head
    if not 0 < size <= head:
        raise InputError(f"tree size {size}: the ledger holds {counted(head, 'event')}")
    return size


def _indexed(store: Store, size: int | None) -> int:
    """The tree size asked for (default: the head now), once the paper index is kept there."""
    with store.reading() as cursor:
        size = _size(cursor, size)
    store.keep_index(size)
    return size


def checkpoint(store: Store, signer: Signer, size: int | None = None, paper_index: bool = False) -> tuple[str, int]:
    """A signed note of the tree of `size` leaves (default: the current tree), and that size. By default the
    checkpoint witnesses cosign: origin (the key's name), size and root, no extension line (C2SP tlog-tiles
    calls them NOT RECOMMENDED, and witnesses in their default configuration refuse them). With
    `paper_index`, the paper index note: the same three lines and the paper index root at that size, signed
    by the same key, which is what paper index proofs and evidence bundles are checked against.

    Raises: InputError for a size the ledger does not hold, IntegrityError when a Merkle node or the index
    root cannot be had, or a StoreError from the store.
    """
    if paper_index:
        size = _indexed(store, size or None)
        with store.snapshot() as cursor:
            return _signed_checkpoint(signer, store, cursor, cursor.node_source(size), size), size
    with store.snapshot() as cursor:
        size = _size(cursor, size or None)
        return signer.sign(Checkpoint(signer.name, size, root(cursor.node_source(size), size)).text()), size


def _signed_checkpoint(signer: Signer, store: Store, cursor, nodes, size: int) -> str:
    found = root_at(cursor, size, store.index_nodes)  # kept there, or held in memory (a read-only database)
    if found is None:
        raise IntegrityError(f"the ledger has no paper index root at tree size {size}")
    return signer.sign(Checkpoint(signer.name, size, root(nodes, size), found[1]).text())


def prove_paper(store: Store, paper: str, size: int | None = None) -> dict:
    """The paper index proof of one paper (its count of events and their root, or that it has none) in the
    tree of `size` (default: now).

    Raises: InputError for a size the ledger does not hold, IntegrityError for an index node or event that
    cannot be read, or a StoreError from the store.
    """
    size = _indexed(store, size)
    with store.snapshot() as cursor:
        return index_proof(cursor, store.index_nodes, paper, size).to_json()


def _inclusion(nodes, seq: int, size: int, kind: str, effective_at: str, recorded_at: str, payload: bytes) -> dict:
    leaf = entry_bytes(seq, kind, effective_at, recorded_at, payload)
    return {"leaf": base64.b64encode(leaf).decode(), "leaf_hash": leaf_hash(leaf).hex(), "leaf_index": seq - 1,
            "path": [p.hex() for p in inclusion_path(nodes, seq - 1, size)], "seq": seq, "tree_size": size}


def prove_inclusion(store: Store, seq: int, size: int | None = None) -> dict:
    """An inclusion proof of event `seq` in the tree of `size` (default: now).

    Raises: InputError for a seq or size outside the ledger, or a StoreError from the store.
    """
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
    """A consistency proof from the tree of `old` leaves to that of `new` (default: now).

    Raises: InputError for sizes outside the ledger, or a StoreError from the store.
    """
    with store.snapshot() as cursor:
        new = _size(cursor, new)
        if not 0 < old <= new:
            raise InputError(f"--consistency {old}: expected a size from 1 to {new}")
        nodes = cursor.node_source(new, lambda nodes: (root(nodes, new), root(nodes, old),
                                                        consistency_path(nodes, old, new)))
        return {"new_root": root(nodes, new).hex(), "new_size": new, "old_root": root(nodes, old).hex(),
                "old_size": old, "path": [p.hex() for p in consistency_path(nodes, old, new)]}


def latest_witnessed(store: Store, verifier: Verifier) -> tuple[str, int] | None:
    """The cosigned checkpoint the ledger holds (`ledger checkpoint --witness`) and its size, when `verifier`'s
    key signed it (a ledger served with a new key has none of its own yet).
    Raises: StoreError from the store."""
    return witnessed_by(latest_cosigned(store), verifier)


def witnessed_by(note: str | None, verifier: Verifier) -> tuple[str, int] | None:
    """A cosigned checkpoint the ledger held and its size, when `verifier`'s key signed it; else None."""
    if note is None:
        return None
    try:
        return note, verify_checkpoint(note, verifier).size
    except LedgerError:
        return None


def evidence_bundle(store: Store, paper: str, as_of: When, signer: Signer, known_at: str | None = None,
                    size: int | None = None, compact: bool = False, witnessed: tuple[str, int] | None = None) -> dict:
    """The record; every event of its paper in the log of the checkpoint's size (default: now), also those
    the record does not show (effective after as_of, recorded after known_at), each with its leaf, its
    inclusion proof in the log and its place in the paper's events tree; the paper index proof; a signed
    checkpoint: all read from one snapshot, every read bounded by the tree's size. `compact`: each event its
    log entry alone, one multi-leaf inclusion proof for all of them (`inclusion`), no sibling repeated, and
    the record named by its as_of and context digest instead of copied. `witnessed` (`latest_witnessed`):
    when the paper has no event past that checkpoint's tree, the bundle is of that tree and carries it
    (`cosigned`), so a reader can count its witnesses; else it is of `size`.

    Raises: IntegrityError when the ledger's index disagrees with its events, a NotFoundError when the paper
    has no record then, an InputError for a size the ledger does not hold, or a StoreError from the store.
    """
    if witnessed is not None and store.paper_version(paper)[1] <= witnessed[1]:
        size = witnessed[1]
    size = _indexed(store, size)
    with store.snapshot() as cursor:
        facts = cursor.paper_facts(paper, size=size)
        shown = [f for f in facts if f.effective_key <= as_of.key and (known_at is None or f.recorded_at <= known_at)]
        record = build_record(paper, shown, as_of)
        seqs = [f.seq - 1 for f in facts]
        if compact:
            nodes = cursor.node_source(size, lambda nodes: (multi_inclusion_path(nodes, seqs, size), root(nodes, size)))
        else:  # every node in one statement
            nodes = cursor.node_source(size, lambda nodes: ([inclusion_path(nodes, s, size) for s in seqs],
                                                            root(nodes, size)))
        index = index_proof(cursor, store.index_nodes, paper, size)
        events, leaves = [], []
        for f in facts:
            if compact:
                leaf = entry_bytes(f.seq, f.kind, f.effective_at, f.recorded_at, f.payload)
                leaves.append(leaf_hash(leaf))
                events.append({"entry": parse_json(leaf.decode())})  # canonical: it encodes back to the leaf
                continue
            proof = _inclusion(nodes, f.seq, size, f.kind, f.effective_at, f.recorded_at, f.payload)
            leaves.append(bytes.fromhex(proof["leaf_hash"]))
            events.append({"leaf": proof.pop("leaf"), "proof": proof, "seq": f.seq})
        tree = events_tree(leaves)
        if (index.count, index.root) != (len(leaves), root(tree, len(leaves))):
            raise IntegrityError(f"the ledger's paper index disagrees with its events of arXiv:{paper} at tree "
                                 f"size {size} (index: {counted(index.count, 'event')}, log: {len(leaves)})")
        if not compact:
            for position, event in enumerate(events):
                event["paper_proof"] = {"index": position,
                                        "path": [p.hex() for p in inclusion_path(tree, position, len(leaves))]}
        note = _signed_checkpoint(signer, store, cursor, nodes, size)
    bundle = {"checkpoint": note, "events": events, "index": index.to_json(), "record": record}
    if compact:  # the record is named, not copied: its context digest covers all of it but its as_of
        del bundle["record"]
        bundle.update(as_of=record["as_of"], context_digest=record["context_digest"],
                      inclusion=[p.hex() for p in multi_inclusion_path(nodes, seqs, size)])
    if known_at is not None:
        bundle["known_at"] = known_at
    if witnessed is not None and witnessed[1] == size:
        bundle["cosigned"] = witnessed[0]
        bundle["checkpoint"] = _audited(store, note)
    return bundle


def _audited(store: Store, note: str) -> str:
    """The paper index note `note` with the cosignatures of the auditing witnesses, when the ledger holds them
    for that note (`checkpoint --witness`); else `note` itself."""
    held = latest_cosigned(store, INDEX_KEY)
    return held if held is not None and split_note(held)[0] == split_note(note)[0] else note
