"""`--json` shapes from the command line (docs/json.md): one object per run for keygen, checkpoint,
verify-proof and verify; the text forms unchanged beside them; and with --json, an error is still one line
on stderr with its exit code, and nothing on stdout. Also the witness options' refusals, the same words at
every command that takes them (one function parses them: `cli.common.witness_policy`).
"""

from __future__ import annotations

import base64
import json

import pytest

from tests.conftest import PAPER_004


def _json(result) -> dict:
    assert (result.exit_code, result.stderr) == (0, ""), result.stderr
    assert result.stdout.endswith("\n") and result.stdout.count("\n") == 1  # one line, one object
    return json.loads(result.stdout)


def test_keygen_json_names_the_files_and_the_public_key_never_the_signing_key(seeded, tmp_path):
    result = seeded("keygen", "example.org/ledger", "--json")
    made = _json(result)
    vkey = (tmp_path / "ledger.vkey").read_text().strip()
    assert made == {"key": "ledger.key", "vkey": "ledger.vkey", "origin": "example.org/ledger", "cosigner": None,
                    "public": vkey}
    secret = (tmp_path / "ledger.key").read_text().strip().rsplit("+", 1)[1]
    assert "PRIVATE" not in result.stdout and secret not in result.stdout
    witness = _json(seeded("keygen", "--cosigner", "w.example", "--json"))
    assert witness == {"key": "witness.key", "vkey": "witness.vkey", "origin": None, "cosigner": "w.example",
                       "public": (tmp_path / "witness.vkey").read_text().strip()}


def test_checkpoint_json_carries_the_note_and_its_tree(keyed):
    note = keyed("checkpoint", "--key", "ledger.key").stdout
    made = _json(keyed("checkpoint", "--key", "ledger.key", "--json"))
    origin, size, root = note.split("\n\n")[0].split("\n")
    assert made == {"note": note, "origin": origin, "size": int(size), "root": base64.b64decode(root).hex(),
                    "index_root": None, "witnessed_by": None}
    assert (origin, made["size"]) == ("example.org/ledger", 40)
    indexed = keyed("checkpoint", "--key", "ledger.key", "--paper-index").stdout
    made = _json(keyed("checkpoint", "--key", "ledger.key", "--paper-index", "--json"))
    index_root = indexed.split("\n\n")[0].split("\n")[3]
    assert made["note"] == indexed and made["index_root"] == base64.b64decode(index_root.split()[-1]).hex()
    assert (made["size"], made["root"]) == (40, base64.b64decode(root).hex())


def test_verify_proof_json_says_what_each_kind_of_proof_proved(keyed, tmp_path):
    (tmp_path / "checkpoint.txt").write_text(keyed("checkpoint", "--key", "ledger.key").stdout)
    (tmp_path / "index.txt").write_text(keyed("checkpoint", "--key", "ledger.key", "--paper-index").stdout)
    (tmp_path / "proof.json").write_text(keyed("prove", "17", "--json").stdout)
    (tmp_path / "cons.json").write_text(keyed("prove", "--consistency", "20", "--json").stdout)
    (tmp_path / "paper.json").write_text(keyed("prove", "--paper", PAPER_004, "--json").stdout)
    paper = json.loads((tmp_path / "paper.json").read_text())
    signer = "example.org/ledger"
    expected = {
        ("proof.json", "checkpoint.txt"): {"kind": "inclusion", "seq": 17, "leaf_index": 16, "tree_size": 40,
                                           "signer": signer},
        ("cons.json", "checkpoint.txt"): {"kind": "consistency", "old_size": 20, "new_size": 40, "signer": signer},
        ("paper.json", "index.txt"): {"kind": "paper", "paper": PAPER_004, "count": paper["count"], "tree_size": 40,
                                      "events_root": paper["events_root"], "signer": signer},
    }
    assert paper["count"] == 40
    for (name, checkpoint), proved in expected.items():
        asked = ("verify-proof", name, "--checkpoint", checkpoint, "--verifier-key", "ledger.vkey")
        text = keyed(*asked)
        assert text.exit_code == 0 and text.stdout.startswith("ok: "), text.stderr
        assert _json(keyed(*asked, "--json")) == {"ok": True, "proof": proved, "account": text.stdout[:-1],
                                                  "witnessed_by": None}


def test_verify_json_is_one_object_in_every_mode(keyed, tmp_path):
    chain = keyed("verify")
    assert _json(keyed("verify", "--json")) == {"ok": True, "checked": "chain", "account": chain.stdout[:-1]}
    full = _json(keyed("verify", "--full", "--json"))
    assert (full["ok"], full["checked"], full["account"]) == (True, "store", keyed("verify", "--full").stdout[:-1])
    assert keyed("replay", "--paper", PAPER_004, "--as-of", "2026-08-09", "--evidence", "b.json", "--key",
                 "ledger.key", "--out", "record.json").exit_code == 0
    evidence = ("verify", "--evidence", "b.json", "--verifier-key", "ledger.vkey")
    said = keyed(*evidence).stdout[:-1]
    assert _json(keyed(*evidence, "--json")) == {"ok": True, "checked": "evidence", "file": "b.json", "complete": True,
                                                 "account": said.removeprefix("b.json: "), "witnessed_by": None}
    (tmp_path / "index.txt").write_text(keyed("checkpoint", "--key", "ledger.key", "--paper-index").stdout)
    (tmp_path / "log.jsonl").write_bytes(keyed("export").stdout_bytes)
    index = ("verify", "--index", "log.jsonl", "--checkpoint", "index.txt", "--verifier-key", "ledger.vkey")
    said = keyed(*index).stdout[:-1]
    assert _json(keyed(*index, "--json")) == {"ok": True, "checked": "index", "file": "log.jsonl",
                                              "account": said.removeprefix("log.jsonl: "), "witnessed_by": None}
    records = _json(keyed("verify", "record.json", "--json"))
    assert (records["ok"], records["checked"], [f["file"] for f in records["files"]]) == (True, "records",
                                                                                          ["record.json"])
    assert records["files"][0]["account"] == keyed("verify", "record.json").stdout.split("\n")[0]


def test_verify_json_of_records_that_fail_is_the_report_with_ok_false_and_exit_1(keyed, tmp_path):
    assert keyed("replay", "--paper", PAPER_004, "--as-of", "2026-08-09", "--out", "record.json").exit_code == 0
    record = json.loads((tmp_path / "record.json").read_text())
    record["title"] = "Another title"
    (tmp_path / "changed.json").write_text(json.dumps(record))
    result = keyed("verify", "record.json", "changed.json", "--json")
    assert result.exit_code == 1 and result.stderr.startswith("ledger: changed.json: "), result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] is False and [(f["file"], f["ok"]) for f in report["files"]] == [("record.json", True),
                                                                                         ("changed.json", False)]


ERRORS = {
    "keygen over a key": (["keygen", "example.org/ledger"], 2,
                          "ledger: ledger.key: already exists; refusing to overwrite a key\n"),
    "verify-proof of a missing file": (["verify-proof", "absent.json", "--checkpoint", "c.txt", "--verifier-key",
                                        "ledger.vkey"], 2, None),
    "checkpoint with a quorum alone": (["checkpoint", "--key", "ledger.key", "--quorum", "1"], 2,
                                       "ledger: --quorum counts witnesses: give --witness or --policy\n"),
    "verify with a quorum alone": (["verify", "--quorum", "1"], 2,
                                   "ledger: --witness-key, --quorum, --policy and --cosigned: only with --evidence or "
                                   "--index\n"),
}


@pytest.mark.parametrize("args, code, line", ERRORS.values(), ids=list(ERRORS))
def test_an_error_with_json_is_one_line_on_stderr_and_nothing_on_stdout(keyed, args, code, line):
    result = keyed(*args, "--json")
    assert (result.exit_code, result.stdout, result.stderr.count("\n")) == (code, "", 1), result.stderr
    assert line is None or result.stderr == line


def test_a_proof_that_does_not_verify_with_json_is_exit_1_and_no_json(keyed, tmp_path):
    (tmp_path / "checkpoint.txt").write_text(keyed("checkpoint", "--key", "ledger.key").stdout)
    proof = json.loads(keyed("prove", "17", "--json").stdout)
    proof["path"][2] = proof["path"][1]
    (tmp_path / "bad.json").write_text(json.dumps(proof))
    bad = keyed("verify-proof", "bad.json", "--checkpoint", "checkpoint.txt", "--verifier-key", "ledger.vkey", "--json")
    assert (bad.exit_code, bad.stdout, bad.stderr.count("\n")) == (1, "", 1) and "does not lead to the root" in bad.stderr


# The witness options' refusals, word for word at each command that takes them.
WITNESS_REFUSALS = [
    (["--quorum", "1"], "--quorum counts witnesses: give {keys} or --policy"),
    (["{keys}", "{key}", "--policy", "policy.txt"], "--policy: give it or {keys} with --quorum, not both"),
    (["{keys}", "{key}", "--quorum", "2"], "--quorum 2: must be between 0 and the 1 witness keys given"),
    (["{keys}", "{key}", "{keys}", "{key}"], "a witness key is given twice"),
    (["--policy", "other.txt"], "other.txt: its log lines do not list the log's key '<key text, not shown>'"),
]
COMMANDS = {
    "verify-proof": (["verify-proof", "proof.json", "--checkpoint", "checkpoint.txt", "--verifier-key", "ledger.vkey"],
                     "--witness-key", "w.vkey"),
    "verify --evidence": (["verify", "--evidence", "b.json", "--verifier-key", "ledger.vkey"], "--witness-key", "w.vkey"),
    "monitor": (["monitor", "site", "--verifier-key", "ledger.vkey", "--state", "state"], "--witness-key", "w.vkey"),
    "checkpoint": (["checkpoint", "--key", "ledger.key"], "--witness", "https://w.example=w.vkey"),
}


@pytest.fixture
def witnessable(keyed, tmp_path):
    """A proof, its checkpoint, a bundle, a witness key, a policy of this log and one of another."""
    assert keyed("keygen", "--cosigner", "w.example").exit_code == 0
    (tmp_path / "witness.vkey").rename(tmp_path / "w.vkey")
    (tmp_path / "checkpoint.txt").write_text(keyed("checkpoint", "--key", "ledger.key").stdout)
    (tmp_path / "proof.json").write_text(keyed("prove", "17", "--json").stdout)
    assert keyed("replay", "--paper", PAPER_004, "--as-of", "2026-08-09", "--evidence", "b.json", "--key",
                 "ledger.key").exit_code == 0
    vkey = (tmp_path / "w.vkey").read_text().strip()
    (tmp_path / "policy.txt").write_text(f"witness w {vkey}\nquorum w\n")
    (tmp_path / "other.txt").write_text(f"log example.org/other+00000000+AAAA\nwitness w {vkey}\nquorum w\n")
    return keyed


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("options, problem", WITNESS_REFUSALS, ids=["quorum", "both", "above", "twice", "other-log"])
def test_witness_options_are_refused_in_the_same_words_by_every_command(witnessable, command, options, problem):
    args, keys, key = COMMANDS[command]
    given = [option.format(keys=keys, key=key) for option in options]
    result = witnessable(*args, *given)
    assert (result.exit_code, result.stdout) == (2, ""), result.stderr
    assert result.stderr == f"ledger: {problem.format(keys=keys)}\n"


@pytest.mark.parametrize("command", ["verify-proof", "verify --evidence"])
def test_cosigned_without_a_witness_is_refused(witnessable, command):
    args, _, _ = COMMANDS[command]
    result = witnessable(*args, "--cosigned", "checkpoint.txt")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == "ledger: --cosigned gives a checkpoint to count witnesses on: give --witness-key or --policy\n"
