"""Merkle proofs checked by a plain RFC 9162 verifier written here from the RFC (not the project's
verifier), and named mutation vectors that every verifier must refuse."""

import base64
import hashlib
import json
import random

import pytest

from ledger.audit.auditor import verify_proof
from ledger.audit.results import Included, Prefix
from ledger.cli.wording import proof_account
from ledger.core.errors import IntegrityError
from ledger.log.chain import entry_bytes
from ledger.log.merkle import (
    consistency_path,
    frontier_nodes,
    grow,
    inclusion_path,
    leaf_hash,
    perfect_subtrees,
    root,
    verify_consistency,
    verify_inclusion,
)
from ledger.log.signed_notes import Checkpoint, generate_signer, verify_checkpoint
from ledger.model.events import make_event
from ledger.services.proofs import checkpoint as make_checkpoint
from ledger.services.proofs import prove_consistency, prove_inclusion


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


# -- known answers: transparency-dev/merkle's RFC 6962 vectors (testonly/constants.go, proof/verify_test.go) --
KAT_LEAVES = [bytes.fromhex(h) for h in ("", "00", "10", "2021", "3031", "40414243", "5051525354555657",
                                         "606162636465666768696a6b6c6d6e6f")]
KAT_NODES = [  # (level, index) of every perfect subtree of the 8 leaves
    ["6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
     "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
     "0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7",
     "07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7",
     "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
     "4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658",
     "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
     "46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1"],
    ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
     "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
     "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
     "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0"],
    ["d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
     "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"],
    ["5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"],
]
KAT_ROOTS = [  # the tree of the first n leaves, n = 0..8
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]
KAT_INCLUSION = {  # (leaf index, tree size): the path, leaf first (the vectors number leaves from 1)
    (0, 1): [],
    (0, 8): ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
             "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
             "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"],
    (5, 8): ["bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
             "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
             "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"],
    (2, 3): ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"],
    (1, 5): ["6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
             "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
             "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"],
}
KAT_CONSISTENCY = {  # (old size, new size): the path
    (1, 1): [],
    (1, 8): ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
             "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
             "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"],
    (6, 8): ["0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
             "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
             "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"],
    (2, 5): ["5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
             "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"],
    (6, 7): ["0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
             "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
             "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"],
}
SOME_HASH = bytes.fromhex("abacaba000000000000000000000000000000000000000000060061e00123456")


def published_nodes(level: int, index: int) -> bytes:
    """A node source holding the vectors' published node hashes, not ones computed here."""
    return bytes.fromhex(KAT_NODES[level][index])


def test_leaf_and_node_hashes_are_the_published_ones():
    digests = [leaf_hash(leaf) for leaf in KAT_LEAVES]
    computed = perfect_subtrees(0, digests, 4)
    assert {k: v.hex() for k, v in computed.items()} == \
        {(level, index): h for level, row in enumerate(KAT_NODES) for index, h in enumerate(row)}
    # Grown one leaf at a time, as the store grows it, every subtree completed is the published one.
    frontier, kept = {}, []
    for size, digest in enumerate(digests):
        grow(frontier, size, digest, kept)
        assert [d.hex() for level, d in sorted(frontier.items(), reverse=True) if (size + 1) >> level & 1] == \
            [KAT_NODES[level][index] for level, index in frontier_nodes(size + 1)]
    assert {(level, index): d.hex() for level, index, d in kept} == \
        {(level, index): h for level, row in enumerate(KAT_NODES) for index, h in enumerate(row)}


@pytest.mark.parametrize("size", range(9))
def test_roots_of_trees_of_0_to_8_leaves_are_the_published_ones(size):
    assert root(published_nodes, size).hex() == KAT_ROOTS[size]
    computed = perfect_subtrees(0, [leaf_hash(leaf) for leaf in KAT_LEAVES], 4)
    assert root(lambda level, index: computed[(level, index)], size).hex() == KAT_ROOTS[size]
    assert rfc_mth(KAT_LEAVES[:size]).hex() == KAT_ROOTS[size]  # and the RFC written out above agrees


def inclusion_probes(index: int, size: int, path: list[bytes], root_: bytes, leaf: bytes) -> dict:
    """The vectors' corruptions of a good inclusion proof (proof/verify_test.go, corruptInclusionProof)."""
    probes = {
        "index - 1": (index - 1, size, root_, leaf, path), "index + 1": (index + 1, size, root_, leaf, path),
        "index ^ 2": (index ^ 2, size, root_, leaf, path), "size * 2": (index, size * 2, root_, leaf, path),
        "size // 2": (index, size // 2, root_, leaf, path), "wrong leaf": (index, size, root_, b"WrongLeaf", path),
        "empty root": (index, size, bytes.fromhex(KAT_ROOTS[0]), leaf, path),
        "random root": (index, size, SOME_HASH, leaf, path),
        "trailing garbage": (index, size, root_, leaf, path + [b""]),
        "trailing root": (index, size, root_, leaf, path + [root_]),
        "preceding garbage": (index, size, root_, leaf, [b""] + path),
        "preceding root": (index, size, root_, leaf, [root_] + path),
    }
    for i in range(len(path)):
        flipped = bytearray(path[i])
        flipped[0] ^= 8
        probes[f"proof[{i}] bit 3 flipped"] = (index, size, root_, leaf, path[:i] + [bytes(flipped)] + path[i + 1:])
    if path:
        probes["removed component"] = (index, size, root_, leaf, path[:-1])
    if len(path) > 1:
        probes["inserted component"] = (index, size, root_, leaf, [SOME_HASH, path[0]] + path[1:])
    return probes


@pytest.mark.parametrize("index, size", sorted(KAT_INCLUSION))
def test_inclusion_paths_are_the_published_ones_and_their_corruptions_are_refused(index, size):
    expected = [bytes.fromhex(h) for h in KAT_INCLUSION[(index, size)]]
    assert inclusion_path(published_nodes, index, size) == expected
    leaf, root_ = leaf_hash(KAT_LEAVES[index]), bytes.fromhex(KAT_ROOTS[size])
    verify_inclusion(leaf, index, size, expected, root_)
    for name, (i, n, r, lf, p) in inclusion_probes(index, size, expected, root_, leaf).items():
        with pytest.raises(IntegrityError):
            verify_inclusion(lf, i, n, p, r)
            raise AssertionError(f"accepted: {name}")


def consistency_probes(old: int, new: int, path: list[bytes], old_root: bytes, new_root: bytes) -> dict:
    """The vectors' corruptions of a good consistency proof (proof/verify_test.go, corruptConsistencyProof)."""
    probes = {
        "old - 1": (old - 1, new, old_root, new_root, path), "old + 1": (old + 1, new, old_root, new_root, path),
        "old ^ 2": (old ^ 2, new, old_root, new_root, path), "new * 2": (old, new * 2, old_root, new_root, path),
        "new // 2": (old, new // 2, old_root, new_root, path),
        "wrong old root": (old, new, b"WrongRoot", new_root, path),
        "wrong new root": (old, new, old_root, b"WrongRoot", path),
        "swapped roots": (old, new, new_root, old_root, path), "empty proof": (old, new, old_root, new_root, []),
        "trailing garbage": (old, new, old_root, new_root, path + [b""]),
        "trailing old root": (old, new, old_root, new_root, path + [old_root]),
        "trailing new root": (old, new, old_root, new_root, path + [new_root]),
        "preceding garbage": (old, new, old_root, new_root, [b""] + path),
        "preceding old root": (old, new, old_root, new_root, [old_root] + path),
        "preceding new root": (old, new, old_root, new_root, [new_root] + path),
        "preceding proof[0]": (old, new, old_root, new_root, path[:1] + path),
        "truncated proof": (old, new, old_root, new_root, path[:-1]),
    }
    for i in range(len(path)):
        flipped = bytearray(path[i])
        flipped[0] ^= 16
        probes[f"proof[{i}] bit 4 flipped"] = (old, new, old_root, new_root, path[:i] + [bytes(flipped)] + path[i + 1:])
    return probes


@pytest.mark.parametrize("old, new", sorted(KAT_CONSISTENCY))
def test_consistency_paths_are_the_published_ones_and_their_corruptions_are_refused(old, new):
    expected = [bytes.fromhex(h) for h in KAT_CONSISTENCY[(old, new)]]
    assert consistency_path(published_nodes, old, new) == expected
    old_root, new_root = bytes.fromhex(KAT_ROOTS[old]), bytes.fromhex(KAT_ROOTS[new])
    verify_consistency(old, new, old_root, new_root, expected)
    if not expected:  # the vectors corrupt only non-trivial proofs
        return
    for name, (o, n, r1, r2, p) in consistency_probes(old, new, expected, old_root, new_root).items():
        with pytest.raises(IntegrityError):
            verify_consistency(o, n, r1, r2, p)
            raise AssertionError(f"accepted: {name}")


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


@pytest.mark.slow
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
    return grown, signer, make_checkpoint(grown, signer)[0]


def test_a_good_proof_verifies_against_the_signed_checkpoint(signed):
    store, signer, note = signed
    size = int(note.split("\n")[1])
    included, prefix = (verify_proof(prove_inclusion(store, 17), note, signer.verifier),
                        verify_proof(prove_consistency(store, 40), note, signer.verifier))
    assert (included, prefix) == (Included(16, size, "example.org/ledger"), Prefix(40, size, "example.org/ledger"))
    assert proof_account(included) == f"ok: event 17 is in the tree of size {size} signed by example.org/ledger"
    assert proof_account(prefix).startswith("ok: the tree of size 40")


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
        verify_proof(prove_inclusion(store, 3), make_checkpoint(store, impostor)[0], signer.verifier)


def test_a_checkpoint_for_another_origin_is_refused(signed):
    store, signer, _ = signed
    other = generate_signer("example.org/other-log")
    with pytest.raises(IntegrityError, match="origin"):
        verify_proof(prove_inclusion(store, 3), other.sign(Checkpoint("example.org/ledger", 64, b"\0" * 32).text()),
                     other.verifier)
    with pytest.raises(IntegrityError, match="no signature"):
        verify_proof(prove_inclusion(store, 3), make_checkpoint(store, other)[0], signer.verifier)


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
    from ledger.storage.store import Store

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
    from ledger.storage.store import Store

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
