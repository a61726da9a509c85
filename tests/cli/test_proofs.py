"""Outsiders' proofs from the command line: keys, checkpoints, proofs and evidence bundles."""

import base64
import json
import os

import orjson
import pytest

from tests.conftest import PAPER_004, SEED_004


@pytest.fixture
def keyed(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli("init").exit_code == 0
    assert cli("import", str(SEED_004)).exit_code == 0
    made = cli("keygen", "example.org/ledger")
    assert made.exit_code == 0, made.stderr
    return cli


def test_keygen_writes_both_keys_and_refuses_to_overwrite(keyed, tmp_path):
    key, vkey = (tmp_path / "ledger.key").read_text(), (tmp_path / "ledger.vkey").read_text()
    assert key.startswith("PRIVATE+KEY+example.org/ledger+") and vkey.startswith("example.org/ledger+")
    assert oct(os.stat(tmp_path / "ledger.key").st_mode & 0o777) == "0o600"
    again = keyed("keygen", "example.org/ledger")
    assert again.exit_code == 2 and "refusing to overwrite" in again.stderr
    assert (tmp_path / "ledger.key").read_text() == key


def test_checkpoint_is_a_c2sp_signed_note(keyed):
    note = keyed("checkpoint", "--key", "ledger.key").stdout
    body, signature = note.split("\n\n")
    origin, size, root, index = body.split("\n")
    assert (origin, size) == ("example.org/ledger", "40") and len(base64.b64decode(root)) == 32
    assert index.startswith("paper-index/v1 ") and len(base64.b64decode(index.split()[1])) == 32
    assert signature.startswith("— example.org/ledger ") and len(base64.b64decode(signature.split()[2])) == 68


def test_prove_and_verify_proof(keyed, tmp_path):
    (tmp_path / "checkpoint.txt").write_text(keyed("checkpoint", "--key", "ledger.key").stdout)
    (tmp_path / "proof.json").write_text(keyed("prove", "17", "--json").stdout)
    (tmp_path / "cons.json").write_text(keyed("prove", "--consistency", "20", "--json").stdout)
    for name in ("proof.json", "cons.json"):
        ok = keyed("verify-proof", name, "--checkpoint", "checkpoint.txt", "--verifier-key", "ledger.vkey")
        assert ok.exit_code == 0 and ok.stdout.startswith("ok:"), ok.stderr
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
    return cli.runner.invoke(__import__("cli.main").main.app, ["--db", str(tmp_path / "absent.db"), "verify",
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
