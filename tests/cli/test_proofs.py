"""Outsiders' proofs from the command line: keys, checkpoints, proofs and evidence bundles."""

import base64
import hashlib
import json
import os

import orjson
import pytest

from tests.conftest import PAPER_004


def test_keygen_writes_both_keys_and_refuses_to_overwrite(keyed, tmp_path):
    key, vkey = (tmp_path / "ledger.key").read_text(), (tmp_path / "ledger.vkey").read_text()
    assert key.startswith("PRIVATE+KEY+example.org/ledger+") and vkey.startswith("example.org/ledger+")
    assert oct(os.stat(tmp_path / "ledger.key").st_mode & 0o777) == "0o600"
    again = keyed("keygen", "example.org/ledger")
    assert again.exit_code == 2 and "refusing to overwrite" in again.stderr
    assert (tmp_path / "ledger.key").read_text() == key


def test_keygen_cosigner_writes_a_witness_key_pair_of_type_0x04(keyed, tmp_path):
    made = keyed("keygen", "--cosigner", "witness.example.org/w1")
    assert made.exit_code == 0, made.stderr
    key, vkey = (tmp_path / "witness.key").read_text(), (tmp_path / "witness.vkey").read_text()
    assert oct(os.stat(tmp_path / "witness.key").st_mode & 0o777) == "0o600"
    name, key_id, blob = vkey.strip().split("+", 2)
    public = base64.b64decode(blob)
    assert name == "witness.example.org/w1" and public[0] == 0x04 and len(public) == 33
    # tlog-cosignature: the key id is SHA-256(name || "\n" || 0x04 || key)[:4], not the 0x01 of a log key
    assert key_id == hashlib.sha256(name.encode() + b"\n" + public).digest()[:4].hex()
    assert key.startswith("PRIVATE+KEY+witness.example.org/w1+" + key_id + "+")
    again = keyed("keygen", "--cosigner", "witness.example.org/w1")
    assert again.exit_code == 2 and "refusing to overwrite" in again.stderr
    both = keyed("keygen", "example.org/x", "--cosigner", "w")
    neither = keyed("keygen")
    assert both.exit_code == neither.exit_code == 2 and "one of them" in both.stderr and "one of them" in neither.stderr


def test_checkpoint_is_a_c2sp_signed_note(keyed):
    note = keyed("checkpoint", "--key", "ledger.key").stdout
    body, signature = note.split("\n\n")
    origin, size, root = body.split("\n")  # no extension line: witnesses in their default configuration refuse them
    assert (origin, size) == ("example.org/ledger", "40") and len(base64.b64decode(root)) == 32
    assert signature.startswith("— example.org/ledger ") and len(base64.b64decode(signature.split()[2])) == 68
    indexed = keyed("checkpoint", "--key", "ledger.key", "--paper-index").stdout
    body, signature = indexed.split("\n\n")
    assert body.split("\n")[:3] == [origin, size, root] and len(body.split("\n")) == 4
    index = body.split("\n")[3]
    assert index.startswith("paper-index/v1 ") and len(base64.b64decode(index.split()[1])) == 32


def test_prove_and_verify_proof(keyed, tmp_path):
    (tmp_path / "checkpoint.txt").write_text(keyed("checkpoint", "--key", "ledger.key").stdout)
    (tmp_path / "proof.json").write_text(keyed("prove", "17", "--json").stdout)
    (tmp_path / "cons.json").write_text(keyed("prove", "--consistency", "20", "--json").stdout)
    accounts = {"proof.json": "ok: event 17 is in the tree of size 40 signed by example.org/ledger\n",  # seq, not leaf 16
                "cons.json": "ok: the tree of size 20 is a prefix of the tree of size 40 signed by example.org/ledger\n"}
    for name, account in accounts.items():
        ok = keyed("verify-proof", name, "--checkpoint", "checkpoint.txt", "--verifier-key", "ledger.vkey")
        assert (ok.exit_code, ok.stdout, ok.stderr) == (0, account, ""), ok.stderr
    proof = json.loads((tmp_path / "proof.json").read_text())
    proof["path"][2] = proof["path"][1]
    (tmp_path / "bad.json").write_text(json.dumps(proof))
    bad = keyed("verify-proof", "bad.json", "--checkpoint", "checkpoint.txt", "--verifier-key", "ledger.vkey")
    assert bad.exit_code == 1 and "does not lead to the root" in bad.stderr
    assert keyed("prove", "41").exit_code == 2
    assert keyed("prove").exit_code == 2


@pytest.fixture
def bundle(keyed, tmp_path):
    made = keyed("replay", "--paper", PAPER_004, "--as-of", "2026-08-09", "--evidence", "bundle.json", "--key", "ledger.key")
    assert made.exit_code == 0, made.stderr
    return json.loads((tmp_path / "bundle.json").read_bytes())


def verify_bundle(cli, tmp_path, data) -> object:
    (tmp_path / "check.json").write_bytes(orjson.dumps(data))
    # No database: the check runs against a --db that does not exist.
    return cli.runner.invoke(__import__("ledger.cli.main").cli.main.app, ["--db", str(tmp_path / "absent.db"), "verify",
                             "--evidence", "check.json", "--verifier-key", "ledger.vkey"])


def test_a_bundle_verifies_offline(keyed, bundle, tmp_path):
    result = verify_bundle(keyed, tmp_path, bundle)
    assert result.exit_code == 0, result.stderr
    assert "40 events are in the log of size 40" in result.stdout and "exactly their rebuild" in result.stdout
    assert not (tmp_path / "absent.db").exists()


def test_a_changed_byte_in_the_record_is_named(keyed, bundle, tmp_path):
    target = bundle["record"]["inbound"][4]
    target["citation"]["reference_index"] += 1
    result = verify_bundle(keyed, tmp_path, bundle)
    assert result.exit_code == 1 and target["observation_id"] in result.stderr


def test_a_changed_byte_in_an_event_is_named(keyed, bundle, tmp_path):
    event = bundle["events"][7]
    leaf = base64.b64decode(event["leaf"]).replace(b"2026", b"2025", 1)
    event["leaf"] = base64.b64encode(leaf).decode()
    result = verify_bundle(keyed, tmp_path, bundle)
    assert result.exit_code == 1 and f"event seq {event['seq']}: not in the signed log" in result.stderr


def test_a_changed_byte_in_a_proof_is_named(keyed, bundle, tmp_path):
    event = bundle["events"][12]
    path = bytearray(bytes.fromhex(event["proof"]["path"][0]))
    path[5] ^= 0x10
    event["proof"]["path"][0] = path.hex()
    result = verify_bundle(keyed, tmp_path, bundle)
    assert result.exit_code == 1 and f"event seq {event['seq']}: not in the signed log" in result.stderr


def test_an_event_left_out_of_the_middle_is_detected_and_named(keyed, bundle, tmp_path):
    # Leave out the resolution of an observation: every remaining event is genuinely in the log,
    # but the record is no longer their rebuild, and the observation it changes is named.
    dropped = next(e for e in bundle["events"][5:]
                   if b'"kind":"resolution.recorded"' in base64.b64decode(e["leaf"]))
    observation = json.loads(base64.b64decode(dropped["leaf"]))["payload"]["observation_id"]
    bundle["events"].remove(dropped)
    result = verify_bundle(keyed, tmp_path, bundle)
    assert result.exit_code == 1
    assert f"an event is missing or altered): observation {observation}" in result.stderr


def test_another_key_is_refused(keyed, bundle, tmp_path):
    (tmp_path / "ledger.key").unlink()
    (tmp_path / "ledger.vkey").unlink()
    assert keyed("keygen", "example.org/ledger").exit_code == 0
    result = verify_bundle(keyed, tmp_path, bundle)
    assert result.exit_code == 1 and "no signature by the key" in result.stderr


def test_a_key_given_twice_in_a_bundle_is_refused_not_read_as_its_last_value(keyed, bundle, tmp_path):
    # The record's as_of given twice, the first a date no event of the bundle reaches: read with the last
    # value winning, the bundle would verify while a reader keeping the first sees another record.
    text = orjson.dumps(bundle).decode().replace('"as_of":', '"as_of":"2000-01-01T00:00:00Z","as_of":', 1)
    (tmp_path / "check.json").write_text(text)
    result = keyed("verify", "--evidence", "check.json", "--verifier-key", "ledger.vkey")
    assert result.exit_code == 2, result.stderr
    assert result.stderr.strip() == "ledger: check.json: duplicate key 'as_of'"


def test_a_key_given_twice_in_a_proof_is_refused(keyed, tmp_path):
    (tmp_path / "checkpoint.txt").write_text(keyed("checkpoint", "--key", "ledger.key").stdout)
    proof = keyed("prove", "17", "--json").stdout.strip()
    (tmp_path / "proof.json").write_text(proof[:-1] + ',"leaf_index":3}')
    result = keyed("verify-proof", "proof.json", "--checkpoint", "checkpoint.txt", "--verifier-key", "ledger.vkey")
    assert result.exit_code == 2 and "proof.json: duplicate key 'leaf_index'" in result.stderr, result.stderr
    (tmp_path / "proof.json").write_bytes(b"\xff" + proof.encode())
    result = keyed("verify-proof", "proof.json", "--checkpoint", "checkpoint.txt", "--verifier-key", "ledger.vkey")
    assert result.exit_code == 2 and "proof.json: not UTF-8 text" in result.stderr, result.stderr
    (tmp_path / "proof.json").write_bytes(b"")
    result = keyed("verify-proof", "proof.json", "--checkpoint", "checkpoint.txt", "--verifier-key", "ledger.vkey")
    assert result.exit_code == 2, result.stderr
    assert "proof.json: empty file, expected a proof or an evidence bundle" in result.stderr


# -- malformed is bad input (exit 2, naming the file and the field); well-formed but false is exit 1 ----------
def _set(path: list, value):
    """A mutation setting the field at `path` (keys and indexes) of a proof or bundle."""
    def mutate(data):
        target = data
        for key in path[:-1]:
            target = target[key]
        if value is _DROP:
            del target[path[-1]]
        else:
            target[path[-1]] = value(target[path[-1]]) if callable(value) else value
        return data
    return mutate


_DROP = object()
MALFORMED_PROOFS = {
    "leaf_index_not_an_integer": (_set(["leaf_index"], "x"), "field leaf_index: expected an integer, found a string"),
    "leaf_index_a_boolean": (_set(["leaf_index"], True), "field leaf_index: expected an integer, found a boolean"),
    "leaf_index_negative": (_set(["leaf_index"], -1), "field leaf_index: expected a non-negative integer, found -1"),
    "tree_size_a_number": (_set(["tree_size"], 64.0), "field tree_size: expected an integer, found a number"),
    "tree_size_missing": (_set(["tree_size"], _DROP), "field tree_size: missing"),
    "leaf_hash_missing": (_set(["leaf_hash"], _DROP), "field leaf_hash: missing"),
    "leaf_hash_short": (_set(["leaf_hash"], lambda h: h[:-2]), "field leaf_hash: expected 64 hex digits"),
    "path_missing": (_set(["path"], _DROP), "field path: missing"),
    "path_not_a_list": (_set(["path"], "00" * 32), "field path: expected an array, found a string"),
    "path_element_not_hex": (_set(["path", 1], "zz" * 32), "field path[1]: expected 64 hex digits"),
    "path_element_too_long": (_set(["path", 0], lambda h: h + "00"), "field path[0]: expected 64 hex digits"),
    # bytes.fromhex would read this as the same 32 bytes: a reader must not accept what the format is not.
    "path_element_with_a_space": (_set(["path", 0], lambda h: h[:62] + " " + h[62:]), "field path[0]: expected 64 hex"),
    "path_element_a_number": (_set(["path", 2], 7), "field path[2]: expected 64 hex digits (a SHA-256 hash), found 7"),
    "leaf_not_base64": (_set(["leaf"], "not base64!"), "field leaf: expected base64, found 'not base64!'"),
    "root_not_hex": (_set(["root"], "xyz"), "field root: expected 64 hex digits (a SHA-256 hash), found 'xyz'"),
    "neither_kind": (lambda p: {"path": p["path"]}, "expected an inclusion proof (leaf_index, tree_size, leaf_hash"),
    "both_kinds": (_set(["old_size"], 3), "expected an inclusion proof (leaf_index, tree_size, leaf_hash"),
    "not_an_object": (lambda p: [p], "expected a proof (a JSON object), found an array"),
}
MALFORMED_CONSISTENCY = {
    "old_size_not_an_integer": (_set(["old_size"], "20"), "field old_size: expected an integer, found a string"),
    "old_root_missing": (_set(["old_root"], _DROP), "field old_root: missing"),
    "new_root_not_hex": (_set(["new_root"], "g" * 64), "field new_root: expected 64 hex digits"),
    "path_element_short": (_set(["path", 0], lambda h: h[:10]), "field path[0]: expected 64 hex digits"),
}


@pytest.fixture
def proofs(keyed, tmp_path):
    (tmp_path / "checkpoint.txt").write_text(keyed("checkpoint", "--key", "ledger.key").stdout)
    return json.loads(keyed("prove", "17", "--json").stdout), json.loads(keyed("prove", "--consistency", "20", "--json").stdout)


def verify_proof_file(cli, tmp_path, proof, checkpoint: str = "checkpoint.txt"):
    (tmp_path / "proof.json").write_bytes(orjson.dumps(proof))
    return cli("verify-proof", "proof.json", "--checkpoint", checkpoint, "--verifier-key", "ledger.vkey")


MALFORMED = [(0, name, *MALFORMED_PROOFS[name]) for name in sorted(MALFORMED_PROOFS)] + \
    [(1, f"consistency_{name}", *MALFORMED_CONSISTENCY[name]) for name in sorted(MALFORMED_CONSISTENCY)]


@pytest.mark.parametrize("kind, name, mutate, problem", MALFORMED, ids=[name for _, name, _, _ in MALFORMED])
def test_a_malformed_proof_is_bad_input_naming_file_and_field(keyed, proofs, tmp_path, kind, name, mutate, problem):
    result = verify_proof_file(keyed, tmp_path, mutate(proofs[kind]))
    assert (result.exit_code, result.stdout) == (2, ""), result.stderr
    assert result.stderr.startswith(f"ledger: proof.json: {problem}") and result.stderr.count("\n") == 1, result.stderr


@pytest.mark.slow
def test_a_malformed_checkpoint_is_named_not_the_proof(keyed, proofs, tmp_path):
    (tmp_path / "bad-checkpoint.txt").write_text("example.org/ledger\n40\n")
    result = verify_proof_file(keyed, tmp_path, proofs[0], "bad-checkpoint.txt")
    assert (result.exit_code, result.stderr) == (2, "ledger: bad-checkpoint.txt: signed note: expected text, a blank "
                                                    "line and signature lines\n")


def _vectors():
    from tests.ledger.log.test_merkle import CONSISTENCY_VECTORS, INCLUSION_VECTORS

    return [(0, f"inclusion_{n}", v) for n, v in sorted(INCLUSION_VECTORS.items())] + \
        [(1, f"consistency_{n}", v) for n, v in sorted(CONSISTENCY_VECTORS.items())]


@pytest.mark.slow
@pytest.mark.parametrize("kind, name, mutate", _vectors(), ids=[name for _, name, _ in _vectors()])
def test_a_well_formed_proof_that_does_not_verify_exits_1_naming_the_file(keyed, proofs, tmp_path, kind, name, mutate):
    result = verify_proof_file(keyed, tmp_path, mutate(proofs[kind]))
    assert (result.exit_code, result.stdout) == (1, ""), result.stderr
    assert result.stderr.startswith("ledger: proof.json: ") and result.stderr.count("\n") == 1, result.stderr


MALFORMED_BUNDLES = {
    "seq_not_an_integer": (_set(["events", 3, "seq"], "4"), "field events[3].seq: expected an integer, found a string"),
    "seq_zero": (_set(["events", 3, "seq"], 0), "field events[3].seq: expected a sequence number (1 or more), found 0"),
    "leaf_index_not_an_integer": (_set(["events", 3, "proof", "leaf_index"], "x"),
                                  "field events[3].proof.leaf_index: expected an integer, found a string"),
    "tree_size_missing": (_set(["events", 5, "proof", "tree_size"], _DROP), "field events[5].proof.tree_size: missing"),
    "path_element_not_hex": (_set(["events", 3, "proof", "path", 0], "zz" * 32),
                             "field events[3].proof.path[0]: expected 64 hex digits (a SHA-256 hash), found 'zzzz"),
    "path_not_a_list": (_set(["events", 39, "proof", "path"], None), "field events[39].proof.path: expected an array, found null"),
    "leaf_not_base64": (_set(["events", 3, "leaf"], "not base64!"), "field events[3].leaf: expected base64"),
    "leaf_missing": (_set(["events", 0, "leaf"], _DROP), "field events[0].leaf: missing"),
    "proof_missing": (_set(["events", 3, "proof"], _DROP), "field events[3].proof: missing"),
    "proof_not_an_object": (_set(["events", 3, "proof"], []), "field events[3].proof: expected an object, found an array"),
    "event_not_an_object": (_set(["events", 3], 7), "field events[3]: expected an object with leaf, proof and seq, found an integer"),
    "events_not_a_list": (_set(["events"], {}), "field events: expected an array, found an object"),
    "checkpoint_not_a_string": (_set(["checkpoint"], 40), "field checkpoint: expected a string, found an integer"),
    "checkpoint_not_a_note": (_set(["checkpoint"], "hello\n"), "checkpoint: signed note: expected text, a blank line"),
    "record_field_missing": (_set(["record", "thesis"], _DROP), "record: field thesis: missing"),
    "record_key_missing": (_set(["record"], _DROP), "expected an evidence bundle: an object with checkpoint, events and record"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MALFORMED_BUNDLES))
def test_a_malformed_bundle_is_bad_input_naming_file_and_field(keyed, bundle, tmp_path, name):
    mutate, problem = MALFORMED_BUNDLES[name]
    result = verify_bundle(keyed, tmp_path, mutate(bundle))
    assert (result.exit_code, result.stdout) == (2, ""), result.stderr
    assert result.stderr.startswith(f"ledger: check.json: {problem}") and result.stderr.count("\n") == 1, result.stderr


FALSE_BUNDLES = {
    "leaf_index_off_by_one": (_set(["events", 3, "proof", "leaf_index"], lambda i: i + 1),
                              "event seq 4: proof is for event 5 (leaf index 4), not event 4"),
    "tree_size_of_another_tree": (_set(["events", 3, "proof", "tree_size"], lambda n: n - 1),
                                  "event seq 4: proof is for a tree of size 39, the checkpoint's is 40"),
    "path_truncated": (_set(["events", 3, "proof", "path"], lambda p: p[:-1]), "event seq 4: not in the signed log"),
    "path_bit_flipped": (_set(["events", 3, "proof", "path", 0], lambda h: ("1" if h[0] == "0" else "0") + h[1:]),
                         "event seq 4: not in the signed log: inclusion proof: the path does not lead to the root"),
    "seq_of_another_event": (_set(["events", 3, "seq"], 5), "event seq 5: proof is for event 4 (leaf index 3), not event 5"),
    "seq_past_the_checkpoint": (_set(["events", 3, "seq"], 41), "event seq 41: not in the signed log of size 40\n"),
    "checkpoint_signed_by_another_key": (_set(["checkpoint"], lambda note: note.replace("example.org/ledger", "example.org/x")),
                                         "checkpoint: signed note: no signature by the key"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FALSE_BUNDLES))
def test_a_well_formed_bundle_that_does_not_verify_exits_1_naming_the_file(keyed, bundle, tmp_path, name):
    mutate, problem = FALSE_BUNDLES[name]
    result = verify_bundle(keyed, tmp_path, mutate(bundle))
    assert (result.exit_code, result.stdout) == (1, ""), result.stderr
    assert f"ledger: check.json: {problem}" in result.stderr, result.stderr
