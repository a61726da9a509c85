"""The command line as a new user meets it: each case asserts the exit code, stdout and stderr separately.
Output files that were not asked for, or options that would be ignored, are refused rather than dropped; every
record that can be read is reported before the worst exit code.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import AS_OF_004, PAPER_004, SEED_004


def outcome(result) -> tuple[int, str, str]:
    return result.exit_code, result.stdout, result.stderr


def test_replay_out_onto_a_file_is_refused_in_one_line(seeded, tmp_path):
    (tmp_path / "notes.txt").write_text("mine\n")
    assert outcome(seeded("replay", "--as-of", "2026-08-24", "--out", "notes.txt")) == (
        2, "", "ledger: --out notes.txt: exists and is not a folder (without --paper, --out is a folder: one file per "
               "paper)\n")
    assert outcome(seeded("replay", "--as-of", "2026-08-24", "--out", "notes.txt/sub")) == (
        2, "", "ledger: --out notes.txt/sub: cannot make the folder: Not a directory\n")
    assert outcome(seeded("replay", "--as-of", "2026-08-24", "--paper", PAPER_004, "--out", "notes.txt/sub")) == (
        2, "", "ledger: notes.txt/sub: cannot write: Not a directory\n")
    assert (tmp_path / "notes.txt").read_text() == "mine\n"


def test_replay_evidence_with_out_writes_both(seeded, tmp_path):
    assert seeded("keygen", "example.org/ledger").exit_code == 0
    result = seeded("replay", "--paper", PAPER_004, "--as-of", AS_OF_004, "--evidence", "b.json", "--key", "ledger.key",
                    "--out", "rec.json")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.splitlines()[1] == f"wrote rec.json: the record of arXiv:{PAPER_004} as of {AS_OF_004}"
    assert (tmp_path / "rec.json").read_bytes() == SEED_004.read_bytes()
    assert json.loads((tmp_path / "b.json").read_bytes())["record"] == json.loads(SEED_004.read_bytes())


@pytest.mark.parametrize("args, stderr", [
    (["replay", "--as-of", "2026-08-24", "--key", "ledger.key"],
     "ledger: --key: only with --evidence (it signs the bundle's checkpoint)\n"),
    (["replay", "--paper", PAPER_004, "--as-of", "2026-08-24", "--evidence", "b.json", "--key", "ledger.key", "--stats"],
     "ledger: --evidence: --stats and --jobs do not apply to a bundle\n"),
    (["verify", "--evidence", "b.json", "--verifier-key", "ledger.vkey", str(SEED_004)],
     "ledger: --evidence: checks one bundle, nothing else: verify RECORD files (or --strict) in another run\n"),
    (["verify", str(SEED_004), "--verifier-key", "ledger.vkey"],
     "ledger: --verifier-key: only with --evidence, --index or a backup's manifest\n"),
])
@pytest.mark.slow
def test_an_option_that_would_be_ignored_is_refused(seeded, tmp_path, args, stderr):
    assert seeded("keygen", "example.org/ledger").exit_code == 0
    assert outcome(seeded(*args)) == (2, "", stderr)
    assert not (tmp_path / "b.json").exists()


def test_verify_reports_every_record_it_read_before_the_worst_code(seeded, tmp_path):
    (tmp_path / "a.json").write_bytes(SEED_004.read_bytes())
    record = json.loads(SEED_004.read_bytes())
    record["thesis"] += " "
    (tmp_path / "tampered.json").write_text(json.dumps(record))
    code, stdout, stderr = outcome(seeded("verify", "a.json", "missing.json", "tampered.json"))
    assert code == 2  # a file not read is worse than a check that failed
    assert stdout.startswith("a.json: ok: 12 observation digests and the context digest re-check; agrees ")
    assert stdout.count("\n") == 1
    lines = stderr.splitlines()
    assert lines[0].startswith("ledger: tampered.json: context_digest: published sha256:")
    assert lines[-1] == "ledger: missing.json: no such file"
    assert outcome(seeded("verify", "a.json", "tampered.json"))[0] == 1


def test_verify_takes_a_folder_as_import_does(seeded, tmp_path):
    (tmp_path / "records" / "deep").mkdir(parents=True)
    (tmp_path / "records" / "deep" / "a.json").write_bytes(SEED_004.read_bytes())
    (tmp_path / "records" / "notes.txt").write_text("not a record\n")
    code, stdout, stderr = outcome(seeded("verify", "records"))
    assert (code, stderr) == (0, "")
    assert stdout.startswith("records/deep/a.json: ok: 12 observation digests") and stdout.count("\n") == 1
    (tmp_path / "empty").mkdir()
    assert outcome(seeded("verify", "empty")) == (2, "", "ledger: empty: a directory with no .json file in it\n")


def test_counts_are_worded_in_the_singular_when_they_are_one(seeded, tmp_path):
    code, stdout, stderr = outcome(seeded("publish", "--as-of", "2026-08-09", "site"))
    assert (code, stderr) == (0, "")
    assert stdout.startswith("published 1 paper as of 2026-08-09T23:59:59.999999Z and the log of 40 events to site: "
                             "rendered 1 paper (no earlier publish in this folder), wrote ")
    line = b'{"kind":"source.checked","payload":{"observed_at":"2026-08-10T00:00:00Z","paper":"2407.20018",' \
           b'"source":"crossref"}}\n'
    (tmp_path / "one.jsonl").write_bytes(line)
    code, stdout, stderr = outcome(seeded("import", "one.jsonl"))
    assert (code, stderr) == (0, "") and stdout.startswith("appended 1 event (0 already present); head 41 ")


def test_publish_shows_its_progress_on_a_terminal(seeded, tmp_path, monkeypatch):
    # The meter's words are tested with the meter (test_cli); here, that publish tells it every paper it wrote.
    from ledger.cli import common, publish_commands

    told: list[tuple] = []

    class Watched(common.Meter):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.live = True  # as on a terminal

        def update(self, *args):
            told.append(("update", *args))
            super().update(*args)

        def close(self):
            told.append(("close",))
            super().close()

    monkeypatch.setattr(publish_commands, "Meter", Watched)
    (tmp_path / "other.jsonl").write_bytes(
        b'{"kind":"paper.snapshot","payload":{"arxiv_id":"2501.00001","snapshot_observed_at":"2026-07-01T00:00:00Z",'
        b'"title":"Another"}}\n')
    assert seeded("import", "other.jsonl").exit_code == 0
    result = seeded("publish", "--as-of", "2026-08-09", "site")
    assert result.exit_code == 0, result.stderr
    assert told == [("update", "", 1, 2, 1), ("update", "", 2, 2, 2), ("close",)]
    assert result.stderr.startswith("\rpublish: 50%, 1 paper")
    assert "\rpublish: 100%, 2 papers" in result.stderr and result.stderr.endswith("\n")  # the line ends once
