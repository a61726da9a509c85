"""`--shard K/N` on replay, publish and monitor (docs/scale.md, "More than one machine"): N real processes at once
against one ledger (one PostgreSQL, or one SQLite file), each into its own folder, and the union of their folders
is, file for file and byte for byte, what one unsharded run writes; no file is written by two shards. Monitors
of 2 shards compare between them the records and notes one monitor compares, and find the same misbehaviour."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ledger.importing.importer import import_files
from ledger.model.shards import shard_of
from ledger.storage.store import Store
from ledger.web.publish import STATE
from tests.conftest import PAPER_004, Cli
from tests.helpers import event_line
from tests.web.conftest import fill

AS_OF = "2026-09-03"
N = 3
# Papers of three months, each citing the next (a card links a paper of another shard) and seed 004.
PAPERS = [f"26{month:02d}.{n:05d}" for month in (3, 4, 5) for n in range(1, 9)] + ["hep-th/9901001"]


def more_papers() -> bytes:
    lines = []
    for at, paper in enumerate(PAPERS):
        me = {"arxiv_id": paper, "snapshot_observed_at": f"2026-08-{1 + at % 28:02d}T00:00:00Z", "title": f"Paper {at}"}
        lines.append(event_line("paper.snapshot", {**me, "latest_version": 1}))
        for ref, cited in enumerate((PAPERS[(at + 1) % len(PAPERS)], PAPER_004), start=1):
            citation = {"cited_paper": None, "cited_work": {"pith_arxiv_id": cited, "title": None},
                        "citing_paper": {**me, "version": 1}, "reference_index": ref, "source": "pdf_text",
                        "source_observed_at": me["snapshot_observed_at"]}
            lines.append(event_line("citation.observed", {"citation": citation, "observation_id": f"{paper}/out/{ref}"}))
    return b"".join(lines)


NEW, NEXT = "2606.00001", "2607.00001"


def next_day(new: str = NEW, cites: list[str] = PAPERS[:2], at: str = "2026-09-02T00:00:00Z") -> bytes:
    """A new paper citing `cites`, and a new version of one of ours, observed `at`."""
    me = {"arxiv_id": new, "snapshot_observed_at": at, "title": f"A new paper {new}"}
    lines = [event_line("paper.snapshot", {**me, "latest_version": 1}),
             event_line("paper.snapshot", {"arxiv_id": PAPERS[5], "latest_version": 2, "title": f"Paper 5, again {at}",
                                           "snapshot_observed_at": at})]
    for ref, cited in enumerate(cites, start=1):
        citation = {"cited_paper": None, "cited_work": {"pith_arxiv_id": cited, "title": None},
                    "citing_paper": {**me, "version": 1}, "reference_index": ref, "source": "pdf_text",
                    "source_observed_at": me["snapshot_observed_at"]}
        lines.append(event_line("citation.observed", {"citation": citation, "observation_id": f"{new}/out/{ref}"}))
    return b"".join(lines)


@pytest.fixture
def ledger(ledger_location, tmp_path, monkeypatch):
    """A ledger of 33 papers on the test's backend, a key beside it; the working directory the test's own."""
    monkeypatch.chdir(tmp_path)
    store = Store.create(ledger_location)
    fill(store, tmp_path)
    (tmp_path / "more.jsonl").write_bytes(more_papers())
    import_files(store, [str(tmp_path / "more.jsonl")])
    store.close()
    cli = Cli(ledger_location)
    assert cli("keygen", "example.org/ledger").exit_code == 0
    return cli


def ledger_processes(location: str, *runs: list[str]) -> list[subprocess.CompletedProcess]:
    """Each of `runs` a `ledger --db location ...` process, all started before any is waited for."""
    env = {k: v for k, v in os.environ.items() if k != "LEDGER_DB"}
    started = [subprocess.Popen([sys.executable, "-m", "ledger.cli", "--db", location, *args], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE) for args in runs]
    done = []
    for process in started:
        out, err = process.communicate(timeout=300)
        done.append(subprocess.CompletedProcess(process.args, process.returncode, out, err))
    return done


def files_of(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` by its relative path, but publish's own state (not a page of the site)."""
    found = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if path.is_file() and not relative.startswith(f"{STATE}/"):
            found[relative] = path.read_bytes()
    return found


def union(folders: list[Path]) -> dict[str, bytes]:
    """The files of `folders` together; each path in one folder only."""
    every: dict[str, bytes] = {}
    for folder in folders:
        found = files_of(folder)
        assert not set(found) & set(every), f"{folder}: written by two shards: {sorted(set(found) & set(every))[:3]}"
        every.update(found)
    return every


@pytest.mark.slow
def test_three_shards_replay_and_publish_what_one_process_does(ledger, tmp_path):
    shards = range(1, N + 1)
    whole = ledger_processes(ledger.location, ["replay", "--as-of", AS_OF, "--out", "records"],
                             ["publish", "site", "--as-of", AS_OF, "--key", "ledger.key"],
                             ["replay", "--as-of", AS_OF])
    assert [run.returncode for run in whole] == [0, 0, 0], [run.stderr for run in whole]
    runs = ledger_processes(ledger.location, *(
        [["replay", "--as-of", AS_OF, "--out", f"records-{k}", "--shard", f"{k}/{N}", "--jobs", str(k % 2 + 1)]
         for k in shards]
        + [["publish", f"site-{k}", "--as-of", AS_OF, "--key", "ledger.key", "--shard", f"{k}/{N}"] for k in shards]
        + [["replay", "--as-of", AS_OF, "--shard", f"{k}/{N}", "--jobs", "2"] for k in shards]))
    assert [run.returncode for run in runs] == [0] * 3 * N, [run.stderr for run in runs]

    records = files_of(tmp_path / "records")
    assert len(records) == len(PAPERS) + 4  # seed 004, the pages' two papers, the script paper, and ours
    assert union([tmp_path / f"records-{k}" for k in shards]) == records
    for k in shards:  # each shard wrote its own papers' records, and those only
        assert {name.removesuffix(".json") for name in files_of(tmp_path / f"records-{k}")} == \
            {name.removesuffix(".json") for name in records if shard_of(name.removesuffix(".json"), N) == k}
    site = files_of(tmp_path / "site")
    assert union([tmp_path / f"site-{k}" for k in shards]) == site
    not_papers = {name for name in site if not name.startswith("paper/")}
    assert "checkpoint" in not_papers and "index.html" in not_papers and any(n.startswith("tile/") for n in not_papers)
    assert not_papers <= set(files_of(tmp_path / "site-1"))  # the site's own files are shard 1's
    lines = sorted(line for run in runs[2 * N:] for line in run.stdout.splitlines())
    assert lines == sorted(whole[2].stdout.splitlines()) and len(lines) == len(records)

    # The next day: a new paper citing two of another shard's (their cards now link to it), a paper's new version.
    (tmp_path / "next.jsonl").write_bytes(next_day())
    assert ledger("import", "next.jsonl").exit_code == 0
    again = ledger_processes(ledger.location, ["publish", "site", "--as-of", AS_OF, "--key", "ledger.key"],
                             *[["publish", f"site-{k}", "--as-of", AS_OF, "--key", "ledger.key", "--shard", f"{k}/{N}"]
                               for k in shards])
    assert [run.returncode for run in again] == [0] * (N + 1), [run.stderr for run in again]
    site = files_of(tmp_path / "site")
    assert f"paper/{NEW}/index.html" in site and union([tmp_path / f"site-{k}" for k in shards]) == site
    rendered = [int(run.stdout.split(b"rendered ")[1].split()[0]) for run in again]
    assert sum(rendered[1:]) >= rendered[0] > 1  # a shard renders a linked paper also when the new one is not its own

    # And a quick daily run (--trust-folder: only the papers with new events are read) after a third day.
    (tmp_path / "third.jsonl").write_bytes(next_day(NEXT, PAPERS[7:9], "2026-09-03T00:00:00Z"))
    assert ledger("import", "third.jsonl").exit_code == 0
    quick = ledger_processes(ledger.location, *[[*run.args[5:], "--trust-folder"] for run in again])
    assert [run.returncode for run in quick] == [0] * (N + 1), [run.stderr for run in quick]
    site = files_of(tmp_path / "site")
    assert f"paper/{NEXT}/index.html" in site and union([tmp_path / f"site-{k}" for k in shards]) == site


def test_a_shard_with_no_paper_says_so_and_succeeds(cli, tmp_path, monkeypatch):
    from tests.conftest import SEED_004

    monkeypatch.chdir(tmp_path)
    assert cli("init").exit_code == 0 and cli("import", str(SEED_004)).exit_code == 0
    assert shard_of(PAPER_004, 2) == 2
    empty = cli("replay", "--as-of", AS_OF, "--shard", "1/2")
    assert empty.exit_code == 0 and empty.stdout == ""
    assert empty.stderr == f"ledger: note: no paper of shard 1/2 as of {AS_OF}T23:59:59.999999Z; the other shards hold them\n"
    held = cli("replay", "--as-of", AS_OF, "--shard", "2/2")
    assert held.exit_code == 0 and held.stdout == cli("replay", "--as-of", AS_OF).stdout != ""
    nothing = cli("replay", "--as-of", "2020-01-01", "--shard", "1/2")
    assert nothing.exit_code == 1 and "no record of any paper as of 2020-01-01" in nothing.stderr


@pytest.mark.parametrize("args", [
    ["replay", "--as-of", AS_OF, "--shard", "0/3"],
    ["replay", "--as-of", AS_OF, "--shard", "4/3"],
    ["publish", "out", "--as-of", AS_OF, "--shard", "1-3"],
    ["monitor", "out", "--verifier-key", "x.vkey", "--state", "state", "--shard", "3"],
])
def test_a_bad_shard_is_one_line_exit_2_before_anything_is_opened(cli, tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    refused = cli(*args)
    assert refused.exit_code == 2 and refused.stdout == ""
    assert refused.stderr.count("\n") == 1 and refused.stderr.startswith(f"ledger: --shard '{args[-1]}': expected K/N")
    assert not (tmp_path / "out").exists() and not (tmp_path / "state").exists() and not Path(cli.location).exists()


@pytest.mark.parametrize("args", [
    ["replay", "--as-of", AS_OF, "--paper", PAPER_004, "--shard", "1/2"],
    ["monitor", "out", "--verifier-key", "x.vkey", "--state", "state", "--paper", PAPER_004, "--shard", "1/2"],
])
def test_a_shard_does_not_go_with_one_paper(cli, tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    refused = cli(*args)
    assert refused.exit_code == 2 and refused.stderr.startswith("ledger: --shard: splits") and refused.stderr.count("\n") == 1


def watch(cli, site: str, state: str, *extra: str):
    return cli("monitor", site, "--verifier-key", "ledger.vkey", "--state", state, "--json", *extra)


@pytest.mark.slow
def test_two_monitor_shards_find_what_one_monitor_finds(ledger, tmp_path):
    assert ledger("publish", "site", "--as-of", AS_OF, "--key", "ledger.key").exit_code == 0
    one = watch(ledger, "site", "state")
    halves = [watch(ledger, "site", f"state-{k}", "--shard", f"{k}/2") for k in (1, 2)]
    assert [run.exit_code for run in [one, *halves]] == [0, 0, 0], [run.stderr for run in [one, *halves]]
    found, parts = json.loads(one.stdout), [json.loads(run.stdout) for run in halves]
    assert found["records"] == len(PAPERS) + 4 and found["index_notes"] == found["records"]
    for key in ("records", "index_notes", "later"):
        assert sum(part[key] for part in parts) == found[key]
    assert all(part["records"] > 0 for part in parts)
    for key in ("size", "root", "new_entries", "status"):  # each shard checked the whole log
        assert [part[key] for part in parts] == [found[key]] * 2

    paper = PAPERS[4]
    shutil.copytree(tmp_path / "site", tmp_path / "bad")
    record = tmp_path / "bad" / "paper" / paper / "citation-record.json"
    record.write_bytes(record.read_bytes().replace(b'"title":"', b'"title":"X', 1))
    bad = watch(ledger, "bad", "fresh")
    halves = [watch(ledger, "bad", f"fresh-{k}", "--shard", f"{k}/2") for k in (1, 2)]
    holder = shard_of(paper, 2)
    assert bad.exit_code == 1 and json.loads(bad.stdout)["record"]["paper"] == paper
    assert halves[holder - 1].exit_code == 1 and halves[holder - 1].stdout == bad.stdout
    assert halves[holder - 1].stderr == bad.stderr
    assert halves[2 - holder].exit_code == 0 and json.loads(halves[2 - holder].stdout)["status"] == "consistent"
