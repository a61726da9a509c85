"""Fuzzing what the monitor reads from a log it follows (ledger/services/monitor.py): a published folder of
real tiles, entry bundles, records and notes, one file of which a hostile log rewrites (a note re-signed with
the log's own key, so the rewrite reaches past its signature). `ledger monitor` must end with a documented
exit code and one line, never an internal error."""

import json
import os
import shutil

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from benchmarks.fuzz import keys
from ledger.model.paths import INTEGRITY, RECORD, fill
from tests.conftest import SEED_004, Cli
from tests.fuzz.strategies import EXAMPLES, FUZZ, mutated

AS_OF = "2026-09-03"


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """A ledger of seed 004 published with the fixed test key; its files, by path."""
    folder = tmp_path_factory.mktemp("published")
    signer, verifier, *_ = keys()
    (folder / "ledger.key").write_text(f"{signer}\n")
    os.chmod(folder / "ledger.key", 0o600)
    (folder / "ledger.vkey").write_text(f"{verifier}\n")
    cli = Cli(str(folder / "ledger.db"))
    assert cli("init").exit_code == 0 and cli("import", str(SEED_004)).exit_code == 0
    made = cli("publish", "--as-of", AS_OF, str(folder / "out"), "--key", str(folder / "ledger.key"))
    assert made.exit_code == 0, made.stderr
    paper = "2407.20018"
    files = ["checkpoint", fill(RECORD, json=True, paper=paper)[1:], fill(INTEGRITY, json=True, paper=paper)[1:]]
    files += sorted(str(p.relative_to(folder / "out")) for p in (folder / "out" / "tile").rglob("*") if p.is_file())
    assert all((folder / "out" / name).is_file() for name in files) and len(files) > 3
    return folder, files


def _signed_hostile(data, note: str) -> bytes:
    """The note's body mutated, signed again with the log's own key."""
    body = note.split("\n\n")[0].encode() + b"\n"
    hostile = data.draw(mutated([body], big=True), label="body").decode("utf-8", "replace")
    return keys()[0].sign(hostile if hostile.endswith("\n") else hostile + "\n").encode()


@settings(FUZZ, max_examples=max(EXAMPLES // 5, 10))
@given(st.data())
def test_a_hostile_log_gets_a_documented_exit_code_from_the_monitor(published, tmp_path_factory, data):
    folder, files = published
    work = tmp_path_factory.mktemp("follow")
    shutil.copytree(folder / "out", work / "out")
    name = data.draw(st.sampled_from(files), label="file")
    original = (work / "out" / name).read_bytes()
    if name == "checkpoint":
        changed = _signed_hostile(data, original.decode())
    elif name.endswith("integrity.json") and data.draw(st.booleans(), label="re-signed"):
        evidence = json.loads(original)
        evidence["checkpoint"] = _signed_hostile(data, evidence["checkpoint"]).decode()
        changed = json.dumps(evidence).encode()
    else:
        changed = data.draw(mutated([original], big=True), label="content")
    (work / "out" / name).write_bytes(changed)
    result = Cli(str(work / "unused.db"))("monitor", str(work / "out"), "--verifier-key",
                                          str(folder / "ledger.vkey"), "--state", str(work / "state"), "--json")
    event(f"exit {result.exit_code} {name.split('/')[0]}")
    assert result.exit_code in (0, 1, 2, 3), result.stderr
    assert "internal error" not in result.stderr, result.stderr
    assert result.exit_code == 0 or result.stderr.count("\n") == 1, result.stderr
