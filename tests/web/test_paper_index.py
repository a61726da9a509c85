"""The paper index on the site: the served checkpoint signs it (the same note the CLI signs), the integrity JSON
carries the paper's index proof, which `verify-proof` checks against that checkpoint, and the compact evidence
bundle taken from the page verifies complete, and fails when an event is left out, altered or added; the page
says how many events the index counts."""

from __future__ import annotations

import base64

import orjson
import pytest

from ledger.core.canonical import canonical
from ledger.log.signed_notes import parse_checkpoint
from tests.conftest import AS_OF_004, PAPER_004, Cli
from tests.web.conftest import LATER, SCRIPT_PAPER


def test_the_served_checkpoint_is_the_one_witnesses_cosign_and_the_integrity_note_signs_the_index(client, rich):
    store, _ = rich
    note = client.get("/checkpoint").text
    body = note.split("\n\n")[0] + "\n"
    assert len(body.split("\n")) == 4 and parse_checkpoint(body).index_root is None  # three lines, no extension
    found = orjson.loads(client.get(f"/paper/{PAPER_004}/integrity.json", params={"as_of": AS_OF_004}).content)
    indexed = found["checkpoint"].split("\n\n")[0] + "\n"
    checkpoint = parse_checkpoint(indexed)
    assert indexed.split("\n")[3] == f"paper-index/v1 {base64.b64encode(checkpoint.index_root).decode()}"
    with store.reading() as cursor:
        from ledger.storage.index_reads import root_at

        assert root_at(cursor, checkpoint.size)[1] == checkpoint.index_root


def test_integrity_carries_the_index_proof_and_a_complete_bundle(client, rich, key_file, tmp_path):
    store, _ = rich
    for as_of in (AS_OF_004, LATER):
        found = orjson.loads(client.get(f"/paper/{PAPER_004}/integrity.json", params={"as_of": as_of}).content)
        index, bundle = found["index"], found["evidence"]
        assert index == bundle["index"] and index["paper"] == PAPER_004 and index["count"] == len(bundle["events"])
        # Every event of the paper, whatever the record's date, in the log up to its last one: its own size.
        assert index["tree_size"] == store.paper_version(PAPER_004)[1] < store.head()[0]
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


def _page_bundle(client) -> dict:
    return orjson.loads(client.get(f"/paper/{PAPER_004}/integrity.json", params={"as_of": LATER}).content)["evidence"]


def _checked(tmp_path, bundle: dict):
    (tmp_path / "bundle.json").write_bytes(orjson.dumps(bundle))
    return Cli(str(tmp_path / "absent.db"))("verify", "--evidence", str(tmp_path / "bundle.json"), "--verifier-key",
                                            str(tmp_path / "ledger.vkey"))


def _flipped(text: str) -> str:
    return ("0" if text[0] != "0" else "1") + text[1:]


@pytest.mark.parametrize("tamper, says", [
    (lambda b: b["events"].pop(5), "the events are not all in the signed log"),
    (lambda b: b["events"].pop(5), "incomplete or altered: the bundle's 42 events are not the 43 events"),
    (lambda b: b["events"].pop(), "incomplete or altered"),
    (lambda b: b["events"].reverse(), "leaf indices are not ascending"),
    (lambda b: b["inclusion"].__setitem__(0, _flipped(b["inclusion"][0])), "do not lead to the root"),
    (lambda b: b["inclusion"].pop(), "path shorter than the leaves need"),
    (lambda b: b["inclusion"].append(b["inclusion"][0]), "path longer than the leaves need"),
    (lambda b: b["events"][3]["entry"].__setitem__("recorded_at", "2025" + b["events"][3]["entry"]["recorded_at"][4:]),
     "not all in the signed log"),
    (lambda b: b.__setitem__("context_digest", "sha256:" + "0" * 64), "the bundle names sha256:0000"),
    (lambda b: b.__setitem__("as_of", "2026-08-01T00:00:00Z"), "the bundle's events rebuild the record"),
])
def test_a_compact_bundle_left_short_altered_or_reordered_fails(client, tmp_path, tamper, says):
    bundle = _page_bundle(client)
    assert set(bundle["events"][0]) == {"entry"} and bundle["inclusion"] and "record" not in bundle
    tamper(bundle)
    result = _checked(tmp_path, bundle)
    assert result.exit_code == 1 and says in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_a_compact_bundle_with_an_event_of_its_own_proof_is_malformed(client, tmp_path):
    bundle = _page_bundle(client)
    bundle["events"][2]["proof"] = {"leaf_index": 2}
    result = _checked(tmp_path, bundle)
    assert result.exit_code == 2 and "events[2]: a compact bundle's event is its log entry alone" in result.stderr


def test_the_compact_bundle_holds_what_the_cli_bundle_holds_in_a_fraction_of_the_bytes(client, rich, key_file, tmp_path):
    store, _ = rich
    compact = _page_bundle(client)
    made = Cli.of(store)("replay", "--paper", PAPER_004, "--as-of", LATER, "--evidence", str(tmp_path / "full.json"),
                         "--key", str(key_file))
    assert made.exit_code == 0, made.stderr
    full = orjson.loads((tmp_path / "full.json").read_bytes())
    assert [canonical(e["entry"]) for e in compact["events"]] == [base64.b64decode(e["leaf"]) for e in full["events"]]
    assert compact["context_digest"] == full["record"]["context_digest"] and compact["as_of"] == full["record"]["as_of"]
    assert compact["index"]["count"] == full["index"]["count"]
    assert len(orjson.dumps(compact)) < 0.4 * len(orjson.dumps(full))
