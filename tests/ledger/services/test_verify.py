"""A published record against what the ledger knew: the recorded-time windows in which the ledger's rebuild at
the record's as_of was exactly the record, the late facts that changed it since, and `--strict`. Every
backend; the recorded clock is driven with freezegun."""

import json

import pytest
from freezegun import freeze_time

from ledger.importing.importer import import_files
from tests.conftest import PAPER_004, SEED_004, Cli
from tests.helpers import event_line, redigest, seed_record, write_record

OBS = "b7d1cb3d-82fc-453c-be89-0574bc0e903d"  # inbound; its notice check has no receipts
CITED_BY = 'cited by arXiv:2502.08182 "Memory Offloading for Large Language Model Inference with Latency SLO Guarantees"'
SEED = str(SEED_004)
T1, T2, T3, T4 = (f"2026-08-{day}T00:00:00.000000Z" for day in (10, 25, 26, 27))
UNAVAILABLE = {"events": [], "reason": "canonical_work_link_unavailable", "source_receipts": [], "state": "unavailable"}
FAILED = {"events": [], "reason": "source_timeout", "source_receipts": [], "state": "check_failed"}


def resolution(observed_at: str, status: str = "verified_exact") -> bytes:
    return event_line("resolution.recorded", {"observation_id": OBS, "resolution": {
        "observed_at": observed_at, "resolver_source": "local_arxiv", "status": status}})


def notice(effective_at: str, standing_notice: dict) -> bytes:
    return event_line("notice.checked", {"observation_id": OBS, "standing_notice": standing_notice}, effective_at)


def record_at(store, when: str, *lines: bytes, tmp_path) -> None:
    """Append event lines with the recorded clock at `when` (the seed itself when no line is given)."""
    path = tmp_path / f"facts-{when[:10]}.jsonl"
    path.write_bytes(b"".join(lines))
    with freeze_time(when):
        import_files(store, [str(path) if lines else SEED])


@pytest.fixture
def published(store, tmp_path):
    """Seed 004 imported (and so published) on 10 August."""
    record_at(store, T1, tmp_path=tmp_path)
    return store


def verify(store, *args: str):
    return Cli.of(store)("verify", *args)


def history_account(store, seq: int) -> str:
    rows = json.loads(Cli.of(store)("history", PAPER_004, "--json").stdout)
    return next(row["account"] for row in rows if row["seq"] == seq)


def test_a_late_fact_before_as_of_leaves_the_record_true_to_what_the_ledger_knew(published, tmp_path):
    record_at(published, T2, resolution("2026-08-08T12:00:00Z"), tmp_path=tmp_path)
    result = verify(published, SEED)
    assert (result.exit_code, result.stderr) == (0, ""), result.stderr
    account, late = result.stdout.splitlines()
    assert account.startswith(f"{SEED}: ok: 12 observation digests and the context digest re-check; ")
    assert f"agrees with what the ledger knew from {T1} until {T2} (its rebuild at the record's as_of " \
           "2026-08-09T16:41:00Z); 1 late fact recorded since changed that rebuild:" in account
    assert history_account(published, 41) == f"{CITED_BY}: resolution unresolved → verified_exact (local_arxiv)"
    assert late == (f"{SEED}: late fact: seq 41, recorded {T2}, effective 2026-08-08T12:00:00Z, resolution.recorded "
                    f"of {OBS}: {CITED_BY}: resolution unresolved → verified_exact (local_arxiv)")


def test_strict_asks_for_todays_history(published, tmp_path):
    record_at(published, T2, resolution("2026-08-08T12:00:00Z"), tmp_path=tmp_path)
    result = verify(published, "--strict", SEED)
    assert (result.exit_code, result.stdout) == (1, ""), result.stderr
    lines = result.stderr.splitlines()
    assert lines[0] == (f"ledger: {SEED}: history: observation {OBS} (inbound): differs from the ledger's history at "
                        'resolution.observed_at: ledger has "2026-08-08T12:00:00Z", record has "2026-08-08T10:10:22.827490Z"')
    assert lines[-1] == (f"ledger: {SEED}: history: under --strict it must be today's rebuild; it is what the ledger "
                         f"knew from {T1} until {T2}, and 1 late fact changed it")
    assert verify(published, "--strict", SEED).exit_code == 1


def test_json_gives_the_windows_and_the_late_facts(published, tmp_path):
    record_at(published, T2, resolution("2026-08-08T12:00:00Z"), tmp_path=tmp_path)
    result = verify(published, "--json", SEED)
    assert result.exit_code == 0, result.stderr
    [found] = json.loads(result.stdout)["files"]
    assert (found["file"], found["ok"]) == (SEED, True)
    assert found["history"] == {
        "as_of": "2026-08-09T16:41:00Z", "agrees_now": False, "windows": [{"from": T1, "until": T2}],
        "late_facts": [{"seq": 41, "kind": "resolution.recorded", "subject": OBS, "effective_at": "2026-08-08T12:00:00Z",
                        "recorded_at": T2, "account": f"{CITED_BY}: resolution unresolved → verified_exact (local_arxiv)",
                        "citation": CITED_BY}]}
    strict = json.loads(verify(published, "--json", "--strict", SEED).stdout)["files"][0]
    assert strict["ok"] is False and strict["history"] == found["history"] and len(strict["problems"]) == 3


def test_a_late_fact_after_as_of_changes_nothing(published, tmp_path):
    record_at(published, T2, resolution("2026-08-20T00:00:00Z"), tmp_path=tmp_path)
    for args in ([SEED], ["--strict", SEED]):
        result = verify(published, *args)
        assert (result.exit_code, result.stderr) == (0, "")
        assert result.stdout == (f"{SEED}: ok: 12 observation digests and the context digest re-check; agrees with "
                                 f"the ledger's history at 2026-08-09T16:41:00Z (what the ledger knew from {T1} on)\n")
    history = json.loads(verify(published, "--json", SEED).stdout)["files"][0]["history"]
    assert history["windows"] == [{"from": T1, "until": None}] and history["late_facts"] == []
    assert history["agrees_now"] is True


def test_a_late_fact_that_a_held_fact_supersedes_is_not_named(published, tmp_path):
    # Learned late, but older than the resolution the ledger holds (10:10): the rebuild does not change.
    # Recorded with it, a fact that does change it: only that one is named.
    record_at(published, T2, resolution("2026-08-08T09:00:00Z", "verified_fuzzy"),
              resolution("2026-08-09T12:00:00Z"), tmp_path=tmp_path)
    result = verify(published, SEED)
    assert result.exit_code == 0, result.stderr
    late = result.stdout.splitlines()[1:]
    assert [line.split(", ")[0] for line in late] == [f"{SEED}: late fact: seq 42"]


def test_several_windows_matched_stopped_matched_again_and_stopped(published, tmp_path):
    # The notice check of OBS has no receipts, so a later check may carry the very same payload: the record can
    # be the rebuild again after it stopped being it.
    record_at(published, T2, notice("2026-08-09T10:00:00Z", FAILED), tmp_path=tmp_path)  # seq 41: stops
    record_at(published, T3, notice("2026-08-09T11:00:00Z", UNAVAILABLE), tmp_path=tmp_path)  # seq 42: again
    now = json.loads(verify(published, "--json", SEED).stdout)["files"][0]["history"]
    assert now["windows"] == [{"from": T1, "until": T2}, {"from": T3, "until": None}] and now["agrees_now"]
    assert now["late_facts"] == []
    record_at(published, T4, resolution("2026-08-09T12:00:00Z"), tmp_path=tmp_path)  # seq 43: stops for good
    result = verify(published, SEED)
    assert result.exit_code == 0, result.stderr
    assert f"agrees with what the ledger knew from {T1} until {T2} and from {T3} until {T4} (" in result.stdout
    # Late facts are those since the last window ended, not the ones the record outlived.
    assert [line.split(", ")[0] for line in result.stdout.splitlines()[1:]] == [f"{SEED}: late fact: seq 43"]
    history = json.loads(verify(published, "--json", SEED).stdout)["files"][0]["history"]
    assert history["windows"] == [{"from": T1, "until": T2}, {"from": T3, "until": T4}]
    assert [row["seq"] for row in history["late_facts"]] == [43]


def test_a_record_no_recorded_time_ever_rebuilt_fails_naming_the_first_difference(published, tmp_path):
    record = seed_record()
    target = next(o for o in record["inbound"] if o["observation_id"] == OBS)
    target["resolution"]["status"] = "verified_fuzzy"
    path = write_record(tmp_path / "rewritten.json", redigest(record))
    record_at(published, T2, resolution("2026-08-08T12:00:00Z"), tmp_path=tmp_path)
    result = verify(published, path)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.splitlines()[0] == (
        f"ledger: {path}: history: observation {OBS} (inbound): differs from the ledger's history at "
        'resolution.observed_at: ledger has "2026-08-08T12:00:00Z", record has "2026-08-08T10:10:22.827490Z"')
    [found] = json.loads(verify(published, "--json", path).stdout)["files"]
    assert found["ok"] is False and found["history"]["windows"] == [] and found["history"]["late_facts"] == []


def test_records_published_at_different_recorded_times_each_get_their_window(published, tmp_path):
    # A record published from what the ledger knew on 25 August (after a late fact) agrees from then on; the
    # seed, published on 10 August, agrees until then. Both in one invocation, each with its own account.
    record_at(published, T2, resolution("2026-08-08T12:00:00Z"), tmp_path=tmp_path)
    later = Cli.of(published)("replay", "--as-of", "2026-08-09T16:41:00Z", "--paper", PAPER_004)
    path = tmp_path / "republished.json"
    path.write_bytes(later.stdout_bytes)
    result = verify(published, SEED, str(path))
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert f"from {T1} until {T2}" in lines[0] and lines[1].startswith(f"{SEED}: late fact: seq 41")
    assert lines[2].endswith(f"agrees with the ledger's history at 2026-08-09T16:41:00Z (what the ledger knew "
                             f"from {T2} on)")
