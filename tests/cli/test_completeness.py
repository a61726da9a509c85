"""Completeness from the command line: prove --paper, bundles that hold every event of their paper, the
named mutation vectors (each refused, exit 1, one line per finding on stderr), bundles from before the
index, and the monitor (verify --index) against a checkpoint whose index root lies."""

from __future__ import annotations

import base64
import copy
import json

import orjson
import pytest

from ledger.log.signed_notes import Checkpoint, parse_signer
from tests.conftest import PAPER_004, SEED_004
from tests.helpers import event_line

OTHER = "2999.12345"  # a second paper with its own paper-level events
AS_OF = "2026-08-09"


def snapshot(paper: str, when: str) -> dict:
    return {"arxiv_id": paper, "last_updated": "2024-07-29T13:53:27Z", "latest_version": 1,
            "primary_category": "cs.DC", "snapshot_observed_at": when, "submitted_at": "2024-07-29T13:53:27Z",
            "title": f"Paper {paper}"}


@pytest.fixture
def keyed(cli, tmp_path, monkeypatch):
    """The seed, then a later import: another paper, and events of the seed's paper effective after the
    record's as_of (a bundle must hold them too; the rebuild ignores them)."""
    monkeypatch.chdir(tmp_path)
    assert cli("init").exit_code == 0
    assert cli("import", str(SEED_004)).exit_code == 0
    later = tmp_path / "later.jsonl"
    later.write_bytes(
        event_line("paper.snapshot", snapshot(OTHER, "2026-07-01T00:00:00Z"))
        + event_line("source.checked", {"observed_at": "2026-07-02T00:00:00Z", "paper": OTHER, "source": "crossref"})
        + event_line("paper.snapshot", snapshot(PAPER_004, "2026-09-01T00:00:00Z"))
        + event_line("source.checked", {"observed_at": "2026-09-02T00:00:00Z", "paper": PAPER_004,
                                        "source": "crossref"}))
    assert cli("import", str(later)).exit_code == 0
    assert cli("keygen", "example.org/ledger").exit_code == 0
    return cli


def bundle_of(cli, tmp_path, paper: str = PAPER_004, *extra: str) -> dict:
    made = cli("replay", "--paper", paper, "--as-of", AS_OF, "--evidence", "b.json", "--key", "ledger.key", *extra)
    assert made.exit_code == 0, made.stderr
    return json.loads((tmp_path / "b.json").read_bytes())


def check(cli, tmp_path, bundle):
    (tmp_path / "check.json").write_bytes(orjson.dumps(bundle))
    return cli.runner.invoke(__import__("ledger.cli.main").cli.main.app, ["--db", str(tmp_path / "absent.db"), "verify",
                             "--evidence", "check.json", "--verifier-key", "ledger.vkey"])


def refused(result, *expected: str) -> None:
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert result.stdout == "" and "Traceback" not in result.stderr
    assert all(line.startswith("ledger: ") for line in result.stderr.splitlines())
    for text in expected:
        assert text in result.stderr, result.stderr


@pytest.fixture
def bundle(keyed, tmp_path):
    return bundle_of(keyed, tmp_path)


def test_a_bundle_holds_every_event_of_its_paper_and_verifies_complete(keyed, bundle, tmp_path):
    assert [e["seq"] for e in bundle["events"]] == list(range(1, 41)) + [43, 44]  # 43, 44: after as_of
    assert bundle["index"]["count"] == 42 and bundle["index"]["tree_size"] == 44
    assert [e["paper_proof"]["index"] for e in bundle["events"]] == list(range(42))
    result = check(keyed, tmp_path, bundle)
    assert result.exit_code == 0, result.stderr
    assert "complete: the signed paper index counts 42 events of arXiv:2407.20018 in the log of size 44" in result.stdout
    as_json = keyed("verify", "--evidence", "check.json", "--verifier-key", "ledger.vkey", "--json")
    assert json.loads(as_json.stdout)["complete"] is True


def test_a_bundle_known_at_an_earlier_time_says_so_and_is_complete(keyed, tmp_path):
    when = keyed("export").stdout.splitlines()[0]
    known = json.loads(when)["recorded_at"]
    bundle = bundle_of(keyed, tmp_path, PAPER_004, "--known-at", known)
    assert bundle["known_at"] == known and len(bundle["events"]) == 42
    result = check(keyed, tmp_path, bundle)
    assert result.exit_code == 0 and f"known at {known}" in result.stdout and "complete" in result.stdout


# -- the named mutation vectors ---------------------------------------------------------------------------
def test_one_event_left_out_of_the_middle(keyed, bundle, tmp_path):
    del bundle["events"][20]
    refused(check(keyed, tmp_path, bundle), "incomplete: 1 of the 42 events of arXiv:2407.20018 in the log of "
            "size 44 is missing from the bundle: 1 event between seq 20 and seq 22")


def test_the_first_event_left_out(keyed, bundle, tmp_path):
    del bundle["events"][0]
    refused(check(keyed, tmp_path, bundle), "missing from the bundle: 1 event before seq 2")


def test_the_last_event_left_out(keyed, bundle, tmp_path):
    # Effective after as_of: the record does not change without it; only the index can tell.
    del bundle["events"][-1]
    result = check(keyed, tmp_path, bundle)
    refused(result, "missing from the bundle: 1 event after seq 43")
    assert "not the rebuild" not in result.stderr


def test_several_runs_left_out_are_each_located(keyed, bundle, tmp_path):
    bundle["events"] = [e for i, e in enumerate(bundle["events"]) if i not in (5, 6, 30)]
    refused(check(keyed, tmp_path, bundle),
            "3 of the 42 events", "2 events between seq 5 and seq 8; 1 event between seq 30 and seq 32")


def test_an_event_of_another_paper_slipped_in(keyed, bundle, tmp_path):
    stranger = bundle_of(keyed, tmp_path, OTHER)["events"][0]  # seq 41, with its own proofs
    bundle = bundle_of(keyed, tmp_path)
    bundle["events"].insert(40, stranger)
    refused(check(keyed, tmp_path, bundle), "event seq 41: not among the 42 events the signed paper index counts "
            "for arXiv:2407.20018 (it is an event of arXiv:2999.12345)")


def test_the_index_proof_of_another_paper(keyed, bundle, tmp_path):
    bundle["index"] = bundle_of(keyed, tmp_path, OTHER)["index"]
    refused(check(keyed, tmp_path, bundle), "index proof: it is of arXiv:2999.12345, the record is of arXiv:2407.20018")


def test_the_index_proof_from_an_older_checkpoint_size(keyed, bundle, tmp_path):
    older = keyed("prove", "--paper", PAPER_004, "--tree-size", "40", "--json")
    assert older.exit_code == 0, older.stderr
    bundle["index"] = json.loads(older.stdout)
    refused(check(keyed, tmp_path, bundle), "index proof: it is of the tree of size 40, the checkpoint's is 44")


def flipped(text: str) -> str:
    data = bytearray(bytes.fromhex(text))
    data[0] ^= 0x01
    return data.hex()


@pytest.mark.parametrize("where", ["a sibling", "the count", "the digest", "the index root"])
def test_a_flipped_bit_in_the_index_proof(keyed, bundle, tmp_path, where):
    index = bundle["index"]
    if where == "a sibling":
        first = next(i for i, s in enumerate(index["siblings"]) if s)
        index["siblings"][first] = flipped(index["siblings"][first])
    elif where == "the count":
        index["count"] ^= 1
    elif where == "the digest":
        index["events_root"] = flipped(index["events_root"])
    else:
        index["index_root"] = flipped(index["index_root"])
    refused(check(keyed, tmp_path, bundle), "index proof of arXiv:2407.20018:")


def test_a_flipped_bit_in_an_events_place(keyed, bundle, tmp_path):
    event = bundle["events"][9]
    event["paper_proof"]["path"][0] = flipped(event["paper_proof"]["path"][0])
    refused(check(keyed, tmp_path, bundle), "event seq 10: not among the 42 events",
            "1 event between seq 9 and seq 11")


def test_an_event_claiming_anothers_place(keyed, bundle, tmp_path):
    bundle["events"][9]["paper_proof"] = copy.deepcopy(bundle["events"][8]["paper_proof"])
    refused(check(keyed, tmp_path, bundle), "event seq 10: not among the 42 events")


def test_an_index_root_that_disagrees_with_the_log(keyed, bundle, tmp_path):
    # The signer lies: a checkpoint of the right size and tree root, but another paper index root.
    signer = parse_signer((tmp_path / "ledger.key").read_text())
    honest = keyed("checkpoint", "--key", "ledger.key").stdout
    lines = honest.split("\n\n")[0].split("\n")
    lie = Checkpoint(lines[0], int(lines[1]), base64.b64decode(lines[2]), b"\x42" * 32)
    bundle["checkpoint"] = signer.sign(lie.text())
    refused(check(keyed, tmp_path, bundle), "index proof of arXiv:2407.20018: its index root is not the one the "
            "checkpoint signs")
    (tmp_path / "lie.txt").write_text(signer.sign(lie.text()))
    (tmp_path / "log.jsonl").write_bytes(keyed("export").stdout_bytes)
    result = keyed("verify", "--index", "log.jsonl", "--checkpoint", "lie.txt", "--verifier-key", "ledger.vkey")
    refused(result, "lie.txt: the paper index root it signs (QkJC", "is not the index of the log at size 44")


# -- bundles from before the index, proofs of papers, the monitor ------------------------------------------
def test_a_bundle_from_before_the_index_verifies_and_says_completeness_is_not_proven(keyed, bundle, tmp_path):
    old = {"checkpoint": bundle["checkpoint"], "record": bundle["record"],
           "events": [{k: v for k, v in e.items() if k != "paper_proof"} for e in bundle["events"][:40]]}
    result = check(keyed, tmp_path, old)
    assert result.exit_code == 0, result.stderr
    assert "completeness not proven: the bundle carries no paper index proof" in result.stdout
    assert json.loads(keyed("verify", "--evidence", "check.json", "--verifier-key", "ledger.vkey",
                            "--json").stdout)["complete"] is None


def test_prove_paper_for_a_paper_with_events_and_one_without(keyed, tmp_path):
    (tmp_path / "checkpoint.txt").write_text(keyed("checkpoint", "--key", "ledger.key", "--paper-index").stdout)
    for paper, says in ((PAPER_004, "has 42 events"), ("2412.56789", "has no events")):
        proof = keyed("prove", "--paper", paper, "--json")
        assert proof.exit_code == 0, proof.stderr
        (tmp_path / "p.json").write_text(proof.stdout)
        ok = keyed("verify-proof", "p.json", "--checkpoint", "checkpoint.txt", "--verifier-key", "ledger.vkey")
        assert ok.exit_code == 0 and f"ok: arXiv:{paper} {says}" in ok.stdout, ok.stderr
    absent = json.loads((tmp_path / "p.json").read_text())
    assert absent["count"] == 0 and absent["events_root"] is None
    assert len((tmp_path / "p.json").read_bytes()) < 2048
    text = keyed("prove", "--paper", PAPER_004)
    assert text.exit_code == 0 and text.stdout.startswith("arXiv:2407.20018 has 42 events")


def test_prove_paper_at_a_size_the_head_never_had_is_that_prefix_of_the_log(keyed, tmp_path):
    from ledger.importing.logfile import log_entries
    from ledger.log.paper_index import index_of_log

    (tmp_path / "log.jsonl").write_bytes(keyed("export").stdout_bytes)
    result = keyed("prove", "--paper", PAPER_004, "--tree-size", "42", "--json")  # within a transaction
    assert result.exit_code == 0, result.stderr
    proof = orjson.loads(result.stdout)
    prefix = index_of_log(log_entries(str(tmp_path / "log.jsonl")), 42)
    assert proof["tree_size"] == 42 and proof["index_root"] == prefix.root.hex()
    assert proof["count"] == len(prefix.members.events(PAPER_004))
    assert keyed("prove", "--paper", PAPER_004, "--tree-size", "45").exit_code == 2  # past the head
    assert keyed("prove", "--paper", PAPER_004, "--consistency", "3").exit_code == 2


def test_the_monitor_recomputes_the_index_of_an_exported_log(keyed, tmp_path):
    (tmp_path / "checkpoint.txt").write_text(keyed("checkpoint", "--key", "ledger.key", "--paper-index").stdout)
    (tmp_path / "log.jsonl").write_bytes(keyed("export").stdout_bytes)
    ok = keyed("verify", "--index", "log.jsonl", "--checkpoint", "checkpoint.txt", "--verifier-key", "ledger.vkey")
    assert ok.exit_code == 0, ok.stderr
    assert ok.stdout == "log.jsonl: ok: the paper index checkpoint.txt signs at size 44 is the log's: 14 papers, " \
                        "re-computed from 44 events\n"


def test_the_monitor_names_bad_input(keyed, tmp_path):
    signer = parse_signer((tmp_path / "ledger.key").read_text())
    honest = keyed("checkpoint", "--key", "ledger.key", "--paper-index").stdout
    lines = honest.split("\n\n")[0].split("\n")
    (tmp_path / "old.txt").write_text(signer.sign(Checkpoint(lines[0], 44, base64.b64decode(lines[2])).text()))
    (tmp_path / "checkpoint.txt").write_text(honest)
    log = keyed("export").stdout_bytes
    (tmp_path / "log.jsonl").write_bytes(log)
    (tmp_path / "short.jsonl").write_bytes(b"".join(log.splitlines(keepends=True)[:30]))
    for args, code, message in (
            (["--checkpoint", "old.txt"], 2, "ledger: old.txt: carries no paper-index/v1 line: give the paper "
                                             "index note (ledger checkpoint --paper-index), not the checkpoint "
                                             "witnesses cosign\n"),
            (["--index", "short.jsonl"], 2, "ledger: checkpoint.txt: is of size 44, the log holds 30 events\n"),
            (["--checkpoint", "checkpoint.txt", "--evidence", "b.json"], 2,
             "ledger: --index: needs --checkpoint and --verifier-key, and nothing else to verify\n")):
        options = {"--index": "log.jsonl", "--checkpoint": "checkpoint.txt"}
        options.update(dict(zip(args[::2], args[1::2])))
        argv = [x for pair in options.items() for x in pair]
        result = keyed("verify", *argv, "--verifier-key", "ledger.vkey")
        assert (result.exit_code, result.stderr) == (code, message)
    tampered = log.replace(b"pdf_text", b"pdf_texT", 1)
    (tmp_path / "log.jsonl").write_bytes(tampered)
    result = keyed("verify", "--index", "log.jsonl", "--checkpoint", "checkpoint.txt", "--verifier-key", "ledger.vkey")
    assert result.exit_code in (1, 2) and "Traceback" not in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize("change, named", [
    (lambda b: b["index"]["siblings"].__setitem__(0, "zz"), "field index.siblings[0]: expected 64 hex digits"),
    # 64 characters that Python's bytes.fromhex would read (spaces between the bytes): not 64 hex digits
    (lambda b: b["index"].__setitem__("index_root", " ".join([b["index"]["index_root"][:2]] * 21) + "  "),
     "field index.index_root: expected 64 hex digits"),
    (lambda b: b["index"].__setitem__("count", "42"), "field index.count: expected"),
    (lambda b: b["events"][3].pop("paper_proof"), "field events[3].paper_proof: missing"),
    (lambda b: b["events"][3]["paper_proof"].__setitem__("index", -1), "field events[3].paper_proof.index"),
    (lambda b: b.__setitem__("known_at", 5), "field known_at: expected"),
])
def test_a_malformed_index_proof_or_place_is_bad_input(keyed, bundle, tmp_path, change, named):
    change(bundle)
    result = check(keyed, tmp_path, bundle)
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith(f"ledger: check.json: {named}") and result.stderr.count("\n") == 1
