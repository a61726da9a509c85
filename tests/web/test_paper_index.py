"""The paper index on the site: the served checkpoint signs it (the same note the CLI signs), the integrity JSON
carries the paper's index proof, which `verify-proof` checks against that checkpoint, and the evidence bundle
taken from the page verifies complete; the page says how many events the index counts."""

from __future__ import annotations

import base64

import orjson

from ledger.log.signed_notes import parse_checkpoint
from tests.conftest import AS_OF_004, PAPER_004, Cli
from tests.web.conftest import LATER, SCRIPT_PAPER


def test_the_served_checkpoint_signs_the_paper_index(client, rich):
    store, _ = rich
    note = client.get("/checkpoint").text
    body = note.split("\n\n")[0] + "\n"
    checkpoint = parse_checkpoint(body)
    assert checkpoint.index_root is not None
    assert body.split("\n")[3] == f"paper-index/v1 {base64.b64encode(checkpoint.index_root).decode()}"
    with store.reading() as cursor:
        from ledger.storage.index_reads import root_at

        assert root_at(cursor, checkpoint.size)[1] == checkpoint.index_root


def test_integrity_carries_the_index_proof_and_a_complete_bundle(client, rich, key_file, tmp_path):
    store, _ = rich
    for as_of in (AS_OF_004, LATER):
        found = orjson.loads(client.get(f"/paper/{PAPER_004}/integrity.json", params={"as_of": as_of}).content)
        index, bundle = found["index"], found["evidence"]
        assert index == bundle["index"] and index["paper"] == PAPER_004 and index["count"] == len(bundle["events"])
        assert index["tree_size"] == store.head()[0]  # every event of the paper, whatever the record's date
        (tmp_path / "proof.json").write_bytes(orjson.dumps(index))
        (tmp_path / "checkpoint.txt").write_text(found["checkpoint"])
        (tmp_path / "bundle.json").write_bytes(orjson.dumps(bundle))
        offline = Cli(str(tmp_path / "absent.db"))
        proof = offline("verify-proof", str(tmp_path / "proof.json"), "--checkpoint", str(tmp_path / "checkpoint.txt"),
                        "--verifier-key", str(tmp_path / "ledger.vkey"))
        assert proof.exit_code == 0 and f"has {index['count']} events" in proof.stdout, proof.stderr
        check = offline("verify", "--evidence", str(tmp_path / "bundle.json"), "--verifier-key",
                        str(tmp_path / "ledger.vkey"))
        assert check.exit_code == 0 and "complete: the signed paper index counts" in check.stdout, check.stderr
    page = client.get(f"/paper/{PAPER_004}/integrity", params={"as_of": AS_OF_004}).text
    assert f"counts\n{index['count']} events of arXiv:{PAPER_004}" in page and "paper-index/v1" in page


def test_the_integrity_of_another_paper_has_its_own_index_proof(client):
    found = orjson.loads(client.get(f"/paper/{SCRIPT_PAPER}/integrity.json", params={"as_of": "2026-09-01"}).content)
    assert found["index"]["paper"] == SCRIPT_PAPER and found["index"]["count"] == 2  # its snapshot, its citation


def test_without_a_key_there_is_no_index_proof(rich):
    from fastapi.testclient import TestClient

    from ledger.web.app import create_app

    store, _ = rich
    found = TestClient(create_app(store)).get(f"/paper/{PAPER_004}/integrity.json").json()
    assert found["index"] is None and found["evidence"] is None
