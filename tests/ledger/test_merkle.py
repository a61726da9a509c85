"""Merkle proofs checked by a plain RFC 9162 verifier written here from the RFC (not the project's
verifier), and named mutation vectors that every verifier must refuse."""

import base64
import hashlib
import json
import random

import pytest

from ledger.chain import entry_bytes
from ledger.errors import IntegrityError
from ledger.events import make_event
from ledger.signed_notes import Checkpoint, generate_signer, verify_checkpoint
from ledger.auditor import verify_proof
from ledger.proofs import prove_consistency, prove_inclusion
from ledger.proofs import checkpoint as make_checkpoint


# -- RFC 9162 section 2.1, written from the text ---------------------------------------------------------
def rfc_hash(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def rfc_mth(leaves: list[bytes]) -> bytes:
    n = len(leaves)
    if n == 0:
        return rfc_hash(b"")
    if n == 1:
        return rfc_hash(b"\x00" + leaves[0])
    k = 1
    while k * 2 < n:
        k *= 2
    return rfc_hash(b"\x01" + rfc_mth(leaves[:k]) + rfc_mth(leaves[k:]))


def rfc_verify_inclusion(leaf_index: int, tree_size: int, leaf_hash: bytes, path: list[bytes], root: bytes) -> bool:
    """RFC 9162 2.1.3.2, step by step."""
    if leaf_index >= tree_size:
        return False
    fn, sn, r = leaf_index, tree_size - 1, leaf_hash
    for p in path:
        if sn == 0:
            return False
        if fn % 2 == 1 or fn == sn:
            r = rfc_hash(b"\x01" + p + r)
            if fn % 2 == 0:
                while not (fn % 2 == 1 or fn == 0):
                    fn >>= 1
                    sn >>= 1
        else:
            r = rfc_hash(b"\x01" + r + p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def rfc_verify_consistency(first: int, second: int, first_hash: bytes, second_hash: bytes, path: list[bytes]) -> bool:
    """RFC 9162 2.1.4.2, step by step."""
    if first > second or first == 0:
        return False
    if first == second:
        return not path and first_hash == second_hash
    if first & (first - 1) == 0:
        path = [first_hash] + path
    if not path:
        return False
    fn, sn = first - 1, second - 1
    while fn % 2 == 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn % 2 == 1 or fn == sn:
            fr = rfc_hash(b"\x01" + c + fr)
            sr = rfc_hash(b"\x01" + c + sr)
            if fn % 2 == 0:
                while not (fn % 2 == 1 or fn == 0):
                    fn >>= 1
                    sn >>= 1
        else:
            sr = rfc_hash(b"\x01" + sr + c)
        fn >>= 1
        sn >>= 1
    return sn == 0 and fr == first_hash and sr == second_hash


# -- a real ledger ---------------------------------------------------------------------------------------
def snapshot(n: int):
    return make_event("paper.snapshot", {"arxiv_id": f"2601.{n:05d}", "snapshot_observed_at": "2026-01-01T00:00:00Z"})


def leaves_of(store) -> list[bytes]:
    return [entry_bytes(e.seq, e.kind, e.effective_at, e.recorded_at, e.payload) for e in store.entries()]


@pytest.fixture
def grown(store):
    """A ledger grown one event per transaction, 64 times: every tree size from 1 to 64 existed."""
    for n in range(64):
        with store.writing() as w:
            w.append([snapshot(n)])
    return store


def unhex(values):
    return [bytes.fromhex(v) for v in values]


def test_every_leaf_of_every_tree_size_up_to_64(grown):
    leaves = leaves_of(grown)
    for size in range(1, 65):
        root = rfc_mth(leaves[:size])
        for seq in range(1, size + 1):
            proof = prove_inclusion(grown, seq, size)
            assert bytes.fromhex(proof["root"]) == root
            assert base64.b64decode(proof["leaf"]) == leaves[seq - 1]
            assert rfc_verify_inclusion(seq - 1, size, bytes.fromhex(proof["leaf_hash"]), unhex(proof["path"]), root)
        for old in range(1, size + 1):
            proof = prove_consistency(grown, old, size)
            assert rfc_verify_consistency(old, size, rfc_mth(leaves[:old]), root, unhex(proof["path"])), (old, size)


def test_the_tree_is_kept_incrementally(grown):
    # Every perfect subtree of 16 or more leaves is stored once, as it completes: 4 + 2 + 1 nodes for 64
    # leaves (smaller ones are re-computed from their block's event rows).
    with grown.reading() as cursor:
        rows = cursor.execute("SELECT level, idx FROM merkle_nodes ORDER BY level, idx").fetchall()
    assert [tuple(r) for r in rows] == [(4, 0), (4, 1), (4, 2), (4, 3), (5, 0), (5, 1), (6, 0)]


def test_random_larger_trees(store):
    rng = random.Random(9162)
    with store.writing() as w:
        w.append([snapshot(n) for n in range(777)])
    with store.writing() as w:
        w.append([snapshot(n) for n in range(777, 1300)])
    leaves = leaves_of(store)
    for _ in range(40):
        size = rng.randint(1, 1300)
        seq = rng.randint(1, size)
        root = rfc_mth(leaves[:size])
        proof = prove_inclusion(store, seq, size)
        assert rfc_verify_inclusion(seq - 1, size, bytes.fromhex(proof["leaf_hash"]), unhex(proof["path"]), root)
        old = rng.randint(1, size)
        cons = prove_consistency(store, old, size)
        assert rfc_verify_consistency(old, size, rfc_mth(leaves[:old]), root, unhex(cons["path"]))


# -- mutation vectors --------------------------------------------------------------------------------------
def flip_hex(value: str, bit: int = 0) -> str:
    data = bytearray(bytes.fromhex(value))
    data[bit // 8] ^= 1 << (bit % 8)
    return data.hex()


INCLUSION_VECTORS = {
    "flipped_bit_in_path_first": lambda p: {**p, "path": [flip_hex(p["path"][0])] + p["path"][1:]},
    "flipped_bit_in_path_last": lambda p: {**p, "path": p["path"][:-1] + [flip_hex(p["path"][-1], 255)]},
    "flipped_bit_in_leaf_hash": lambda p: {**p, "leaf_hash": flip_hex(p["leaf_hash"], 100)},
    "flipped_bit_in_root": lambda p: {**p, "root": flip_hex(p["root"], 7)},
    "index_plus_one": lambda p: {**p, "leaf_index": p["leaf_index"] + 1},
    "index_minus_one": lambda p: {**p, "leaf_index": p["leaf_index"] - 1},
    "size_plus_one": lambda p: {**p, "tree_size": p["tree_size"] + 1},
    "size_minus_one": lambda p: {**p, "tree_size": p["tree_size"] - 1},
    "truncated_path": lambda p: {**p, "path": p["path"][:-1]},
    "extended_path": lambda p: {**p, "path": p["path"] + [p["path"][0]]},
    "leaf_of_another_event": lambda p: {**p, "leaf": base64.b64encode(b"{}").decode()},
}
CONSISTENCY_VECTORS = {
    "flipped_bit_in_path": lambda p: {**p, "path": [flip_hex(p["path"][0])] + p["path"][1:]},
    "flipped_bit_in_old_root": lambda p: {**p, "old_root": flip_hex(p["old_root"])},
    "old_size_plus_one": lambda p: {**p, "old_size": p["old_size"] + 1},
    "old_size_minus_one": lambda p: {**p, "old_size": p["old_size"] - 1},
    "new_size_minus_one": lambda p: {**p, "new_size": p["new_size"] - 1},
    "truncated_path": lambda p: {**p, "path": p["path"][:-1]},
    "extended_path": lambda p: {**p, "path": p["path"] + [p["path"][-1]]},
}


@pytest.fixture
def signed(grown):
    signer = generate_signer("example.org/ledger")
    return grown, signer, make_checkpoint(grown, signer)


def test_a_good_proof_verifies_against_the_signed_checkpoint(signed):
    store, signer, note = signed
    assert verify_proof(prove_inclusion(store, 17), note, signer.verifier).startswith("ok: leaf 16")
    assert verify_proof(prove_consistency(store, 40), note, signer.verifier).startswith("ok: the tree of size 40")


@pytest.mark.parametrize("name", sorted(INCLUSION_VECTORS))
def test_mutated_inclusion_proofs_are_refused(signed, name):
    store, signer, note = signed
    proof = INCLUSION_VECTORS[name](prove_inclusion(store, 23))
    with pytest.raises(IntegrityError):
        verify_proof(proof, note, signer.verifier)
    # The independent verifier refuses it too, checking against the checkpoint's size and root (the RFC's
    # algorithm alone accepts leaf 22's path for sizes 63 and 64: the size must be bound to the signed tree).
    checkpoint = verify_checkpoint(note, signer.verifier)
    leaf_hash = bytes.fromhex(proof["leaf_hash"])
    accepted = leaf_hash == hashlib.sha256(b"\x00" + base64.b64decode(proof["leaf"])).digest() and \
        proof["tree_size"] == checkpoint.size and rfc_verify_inclusion(proof["leaf_index"], proof["tree_size"], leaf_hash, unhex(proof["path"]), checkpoint.root)
    assert not accepted or name == "flipped_bit_in_root"


@pytest.mark.parametrize("name", sorted(CONSISTENCY_VECTORS))
def test_mutated_consistency_proofs_are_refused(signed, name):
    store, signer, note = signed
    with pytest.raises(IntegrityError):
        verify_proof(CONSISTENCY_VECTORS[name](prove_consistency(store, 23)), note, signer.verifier)


def test_a_root_from_another_size_is_refused(signed):
    store, signer, _ = signed
    older = signer.sign(Checkpoint(signer.name, 50, bytes.fromhex(prove_inclusion(store, 3, 50)["root"])).text())
    with pytest.raises(IntegrityError, match="size"):
        verify_proof(prove_inclusion(store, 3), older, signer.verifier)
    forged = signer.sign(Checkpoint(signer.name, 64, bytes.fromhex(prove_inclusion(store, 3, 50)["root"])).text())
    with pytest.raises(IntegrityError):
        verify_proof(prove_inclusion(store, 3), forged, signer.verifier)


def test_a_signature_by_another_key_is_refused(signed):
    store, signer, note = signed
    impostor = generate_signer("example.org/ledger")
    with pytest.raises(IntegrityError, match="no signature by the key"):
        verify_proof(prove_inclusion(store, 3), make_checkpoint(store, impostor), signer.verifier)


def test_a_checkpoint_for_another_origin_is_refused(signed):
    store, signer, _ = signed
    other = generate_signer("example.org/other-log")
    with pytest.raises(IntegrityError, match="origin"):
        verify_proof(prove_inclusion(store, 3), other.sign(Checkpoint("example.org/ledger", 64, b"\0" * 32).text()),
                     other.verifier)
    with pytest.raises(IntegrityError, match="no signature"):
        verify_proof(prove_inclusion(store, 3), make_checkpoint(store, other), signer.verifier)


def test_a_changed_checkpoint_body_breaks_the_signature(signed):
    store, signer, note = signed
    lines = note.split("\n")
    lines[1] = "65"
    with pytest.raises(IntegrityError, match="does not verify"):
        verify_proof(prove_inclusion(store, 3), "\n".join(lines), signer.verifier)


def test_proofs_serialize_as_documented(signed):
    store, _, _ = signed
    inclusion = json.loads(json.dumps(prove_inclusion(store, 17)))
    assert {"leaf_index", "tree_size", "leaf", "leaf_hash", "root", "path"} <= set(inclusion)
    consistency = prove_consistency(store, 40)
    assert set(consistency) == {"old_size", "new_size", "old_root", "new_root", "path"}


def test_two_writers_interleaved_keep_one_tree(store):
    # Each writer remembers the tree's right edge it left; the other writer's appends must invalidate it.
    from ledger.store import Store

    other = Store.open(store.url)
    for n in range(12):
        with (store if n % 3 else other).writing() as w:
            w.append([snapshot(n), snapshot(100 + n)] if n % 2 else [snapshot(n)])
    leaves = leaves_of(store)
    size = len(leaves)
    assert bytes.fromhex(prove_inclusion(store, 1)["root"]) == rfc_mth(leaves)
    for seq in range(1, size + 1):
        proof = prove_inclusion(other, seq)
        assert rfc_verify_inclusion(seq - 1, size, bytes.fromhex(proof["leaf_hash"]), unhex(proof["path"]), rfc_mth(leaves))
    other.close()


def test_a_writer_whose_edge_is_stale_reads_it_back_at_every_size(store):
    # Two writers alternate appends of 1 to 64 events, so each of them finds the tree moved on and reads its
    # right edge back: stored subtrees at several levels and partial blocks of every length.
    # After each append, the root the ledger proves from is the RFC's root of all leaves so far.
    from ledger.store import Store

    other, sizes, n = Store.open(store.url), [1, 37, 16, 5, 15, 32, 2, 31, 17, 64, 3, 9], 0
    for turn, count in enumerate(sizes * 2):
        with (store if turn % 2 else other).writing() as w:
            w.append([snapshot(1000 + n + i) for i in range(count)])
        n += count
        assert bytes.fromhex(prove_inclusion(store, 1)["root"]) == rfc_mth(leaves_of(store)), f"after {n} events"
    assert n == 2 * sum(sizes)
    other.close()


def _delete_behind_the_guard(store, table: str, where: str) -> None:
    """Someone with database access disables the append-only guard and deletes rows."""
    from sqlalchemy import text

    with store.engine.connect() as conn, conn.begin():
        if store.dialect == "sqlite":
            guard = "merkle_nodes_no_delete" if table == "merkle_nodes" else "events_append_only_delete"
            conn.execute(text(f"DROP TRIGGER {guard}"))
        else:
            guard = "merkle_nodes_append_only" if table == "merkle_nodes" else "events_append_only"
            conn.execute(text(f"ALTER TABLE {table} DISABLE TRIGGER {guard}"))
        conn.execute(text(f"DELETE FROM {table} WHERE {where}"))


def test_a_deleted_stored_node_is_named_not_a_crash(grown):
    _delete_behind_the_guard(grown, "merkle_nodes", "level = 4 AND idx = 0")
    prove_inclusion(grown, 1, 64)  # its path does not need (4, 0)
    with pytest.raises(IntegrityError, match=r"no Merkle node \(4, 0\)"):
        prove_inclusion(grown, 17, 64)


def test_a_deleted_event_row_stops_the_small_subtrees_being_recomputed(grown):
    _delete_behind_the_guard(grown, "events", "seq = 3")
    with pytest.raises(IntegrityError, match=r"events missing among seq 1\.\.16"):
        prove_inclusion(grown, 1, 64)
    prove_inclusion(grown, 20, 64)  # another block, and stored nodes above it: still proven
