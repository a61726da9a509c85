"""Paper ids on the command line, read once at the option by `ledger.model.arxiv` (issue 28): a bad id is exit 2
before anything is opened; `arXiv:` is dropped; a version is answered for the paper, with a note on stderr."""

import pytest

from tests.conftest import AS_OF_004, PAPER_004, Cli

EXPECTED = "not an arXiv id (expected e.g. 2407.20018 or hep-th/9901001)"
NOTE = "ledger: note: 2407.20018v2 names version 2; records are per paper: answering for arXiv:2407.20018\n"
OBSERVATION = "b7d1cb3d-82fc-453c-be89-0574bc0e903d"  # an observation of the seed


BAD = [
    (["replay", "--as-of", AS_OF_004, "--paper", "bogus"], "--paper bogus"),
    (["replay", "--as-of", AS_OF_004, "--paper", "arXiv:arXiv:2407.20018"], "--paper arXiv:arXiv:2407.20018"),
    (["replay", "--paper", "2407.2001", "--as-of", AS_OF_004, "--evidence", "b.json", "--key", "ledger.key"],
     "--paper 2407.2001"),
    (["prove", "--paper", "bogus"], "--paper bogus"),
    (["prove", "--paper", "2407.20018v0", "--json"], "--paper 2407.20018v0"),
    (["diff", "bogus", "--from", "2026-08-01", "--to", "2026-08-09"], "ID bogus"),
    (["diff", "", "--from", "2026-08-01", "--to", "2026-08-09"], "ID ''"),
    (["history", "2407.2001"], "ID 2407.2001"),
    (["history", "arXiv:bogus"], "ID arXiv:bogus"),
    (["history", "hep-th/99"], "ID hep-th/99"),
]


@pytest.mark.parametrize("args, named", BAD)
def test_a_bad_paper_id_is_exit_2_in_one_line(keyed, tmp_path, args, named):
    result = keyed(*args)
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", f"ledger: {named}: {EXPECTED}\n")
    assert not (tmp_path / "b.json").exists()


@pytest.mark.parametrize("args, named", BAD)
def test_a_bad_paper_id_opens_nothing(tmp_path, args, named):
    # Read at the option, before the command runs: a --db that names no ledger is never reached.
    missing = tmp_path / "typo.db"
    result = Cli(str(missing))(*args)
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", f"ledger: {named}: {EXPECTED}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_prove_paper_bogus_exits_2_as_the_user_found_it(keyed):
    result = keyed("prove", "--paper", "bogus")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.startswith("ledger: --paper bogus: not an arXiv id") and result.stderr.count("\n") == 1


@pytest.mark.slow
@pytest.mark.parametrize("typed", ["arXiv:2407.20018", "arxiv:2407.20018", "ARXIV:2407.20018"])
def test_an_arxiv_prefix_names_the_paper(keyed, seed_bytes, typed):
    result = keyed("replay", "--as-of", AS_OF_004, "--paper", typed)
    assert (result.exit_code, result.stdout_bytes, result.stderr) == (0, seed_bytes, "")
    bare, prefixed = keyed("prove", "--paper", PAPER_004, "--json"), keyed("prove", "--paper", typed, "--json")
    assert (prefixed.exit_code, prefixed.stdout, prefixed.stderr) == (0, bare.stdout, "")


def test_a_version_is_answered_for_the_paper_with_a_note(keyed, seed_bytes, tmp_path):
    result = keyed("replay", "--as-of", AS_OF_004, "--paper", "2407.20018v2")
    assert (result.exit_code, result.stdout_bytes, result.stderr) == (0, seed_bytes, NOTE)
    prefixed = keyed("replay", "--as-of", AS_OF_004, "--paper", "arXiv:2407.20018v2")
    assert (prefixed.exit_code, prefixed.stdout_bytes) == (0, seed_bytes)
    assert prefixed.stderr == NOTE.replace("note: 2407", "note: arXiv:2407")
    out = tmp_path / "record.json"
    written = keyed("replay", "--as-of", AS_OF_004, "--paper", "2407.20018v1", "--out", str(out))
    assert (written.exit_code, written.stdout) == (0, "") and out.read_bytes() == seed_bytes
    assert written.stderr == NOTE.replace("v2 names version 2", "v1 names version 1")


def test_a_version_in_prove_and_diff_answers_for_the_paper(keyed):
    bare = keyed("prove", "--paper", PAPER_004)
    versioned = keyed("prove", "--paper", "2407.20018v2")
    assert (versioned.exit_code, versioned.stdout, versioned.stderr) == (0, bare.stdout, NOTE)
    span = ["--from", "2026-08-01", "--to", "2026-08-09", "--json"]
    bare, versioned = keyed("diff", PAPER_004, *span), keyed("diff", "2407.20018v2", *span)
    assert (versioned.exit_code, versioned.stdout, versioned.stderr) == (0, bare.stdout, NOTE)
    prefixed = keyed("diff", "arXiv:2407.20018", *span)
    assert (prefixed.exit_code, prefixed.stdout, prefixed.stderr) == (0, bare.stdout, "")


def test_an_evidence_bundle_is_of_the_paper_named_with_a_prefix(keyed, tmp_path):
    args = ["replay", "--as-of", AS_OF_004, "--evidence", "b.json", "--key", "ledger.key"]
    result = keyed(*args, "--paper", "arXiv:2407.20018")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.startswith(f"wrote b.json: every event of arXiv:{PAPER_004} in the log of size 40 ")
    checked = keyed("verify", "--evidence", "b.json", "--verifier-key", "ledger.vkey")
    assert checked.exit_code == 0, checked.stderr


def test_history_reads_a_paper_id_and_passes_an_observation_id(keyed):
    bare = keyed("history", PAPER_004, "--json")
    assert bare.exit_code == 0 and bare.stdout.count("seq") == 40
    for typed, note in (("arXiv:2407.20018", ""), ("2407.20018v2", NOTE)):
        result = keyed("history", typed, "--json")
        assert (result.exit_code, result.stdout, result.stderr) == (0, bare.stdout, note)
    observed = keyed("history", OBSERVATION, "--json")
    assert (observed.exit_code, observed.stderr) == (0, "") and 0 < observed.stdout.count("seq") < 40
    unknown = keyed("history", "bogus")
    assert (unknown.exit_code, unknown.stdout, unknown.stderr) == (1, "", "ledger: no events of bogus in this ledger\n")


def test_an_old_style_id_is_read_and_looked_up(keyed):
    for typed in ("hep-th/9901001", "arXiv:hep-th/9901001v1"):
        result = keyed("replay", "--as-of", AS_OF_004, "--paper", typed)
        assert (result.exit_code, result.stdout) == (1, "")
        assert result.stderr.splitlines()[-1] == f"ledger: no record of arXiv:hep-th/9901001 as of {AS_OF_004}"
