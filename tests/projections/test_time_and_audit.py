"""Two time axes, later records of the same paper, history, diff, and the exported log standing in for
the database. The recorded clock is driven with freezegun."""

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from freezegun import freeze_time
from hypothesis import given
from hypothesis import strategies as st

from ledger.core.canonical import canonical
from ledger.core.times import When
from ledger.importing.importer import import_files
from ledger.projections.record import build_record
from ledger.storage.store import Store
from tests.conftest import AS_OF_004, PAPER_004, SEED_004, Cli
from tests.helpers import event_line

OBS = "b7d1cb3d-82fc-453c-be89-0574bc0e903d"
MEASURED = ["35de0436-c3a4-484f-9168-1ffb5cd22212", "48726fde-754e-426c-a80f-d1b89877c04d",
            "0022a8f5-28ce-4012-a5fb-decb4f70c9d3"]
NEW_OBS = "9a0d1c52-6f0e-4c1e-9a57-3d0b8f1e2a77"
MEMORY = "Memory Offloading for Large Language Model Inference with Latency SLO Guarantees"  # OBS's citing paper
LATER = "2026-08-24T23:59:59.999999Z"


def later_facts() -> bytes:
    """Facts observed after seed 004: a new version, a new citation, a changed resolution, a new sweep."""
    seed = json.loads(SEED_004.read_bytes())
    paper = dict(seed["paper"], latest_version=2, last_updated="2026-08-19T09:00:00Z",
                 snapshot_observed_at="2026-08-20T00:00:00Z")
    cited = seed["inbound"][0]["citation"]["cited_paper"]
    citation = {"cited_paper": cited, "cited_work": {"arxiv_id": PAPER_004, "title": "Efficient training"},
                "citing_paper": {"arxiv_id": "2608.01234", "snapshot_observed_at": "2026-08-20T09:59:00Z",
                                 "title": "A later paper", "version": 1},
                "reference_index": 12, "source": "arxiv_source", "source_observed_at": "2026-08-20T10:00:00Z"}
    receipts = [{"observed_at": "2026-08-23T06:31:00Z", "source": "crossref"},
                {"observed_at": "2026-08-23T06:30:50Z", "source": "retraction_watch"}]
    quiet = {"events": [], "observation": "No event found in the named queried sources as of 2026-08-23T06:31:00Z.",
             "reason": None, "source_receipts": receipts, "state": "measured"}
    corrected = dict(quiet, events=[{"date": "2026-08-22", "source": "crossref", "type": "correction"}],
                     observation="1 event found in the named queried sources as of 2026-08-23T06:31:00Z.")
    lines = [
        event_line("paper.snapshot", paper),
        event_line("citation.observed", {"citation": citation, "observation_id": NEW_OBS}),
        event_line("resolution.recorded", {"observation_id": NEW_OBS, "resolution": {
            "observed_at": "2026-08-20T10:05:00Z", "resolver_source": "arxiv_id", "status": "verified_exact"}}),
        event_line("resolution.recorded", {"observation_id": OBS, "resolution": {
            "observed_at": "2026-08-15T00:00:00Z", "resolver_source": "raw_fallback", "status": "verified_fuzzy"}}),
        event_line("source.checked", {"observed_at": "2026-08-23T06:31:00Z", "paper": PAPER_004, "source": "crossref"}),
        event_line("source.checked", {"observed_at": "2026-08-23T06:30:50Z", "paper": PAPER_004, "source": "retraction_watch"}),
        event_line("notice.checked", {"observation_id": MEASURED[0], "standing_notice": corrected}),
        *[event_line("notice.checked", {"observation_id": o, "standing_notice": quiet}) for o in MEASURED[1:] + [NEW_OBS]],
    ]
    return b"".join(lines)


@pytest.fixture
def history_ledger(store, tmp_path):
    """Seed 004 recorded on 10 August, later facts recorded on 24 August."""
    facts = tmp_path / "later.jsonl"
    facts.write_bytes(later_facts())
    with freeze_time("2026-08-10T00:00:00Z"):
        import_files(store, [str(SEED_004)])
    with freeze_time("2026-08-24T12:00:00Z"):
        import_files(store, [str(facts)])
    return store


def rebuild(store, as_of, known_at=None) -> bytes:
    return canonical(build_record(PAPER_004, store.paper_facts(PAPER_004, known_at), When.at(as_of)))


def test_recorded_time_comes_from_the_clock(history_ledger):
    recorded = {e.recorded_at for e in history_ledger.entries()}
    assert recorded == {"2026-08-10T00:00:00.000000Z", "2026-08-24T12:00:00.000000Z"}


def test_the_seed_still_rebuilds_at_its_as_of_after_later_facts(history_ledger, seed_bytes):
    assert rebuild(history_ledger, AS_OF_004) == seed_bytes
    later = json.loads(rebuild(history_ledger, LATER))
    assert later["paper"]["latest_version"] == 2
    assert len(later["inbound"]) == 13
    assert "13 inbound Pith citation observations" in later["thesis"]


def test_a_record_published_on_day_k_is_reproduced_with_known_at_k(store, tmp_path):
    with freeze_time("2026-08-10T00:00:00Z"):
        import_files(store, [str(SEED_004)])
        published = rebuild(store, "2026-08-10T00:00:00Z")
    # A late fact about an earlier date: the resolution was observed on 9 August, learned on 25 August.
    late = tmp_path / "late.jsonl"
    late.write_bytes(event_line("resolution.recorded", {"observation_id": OBS, "resolution": {
        "observed_at": "2026-08-09T12:00:00Z", "resolver_source": "local_arxiv", "status": "verified_exact"}}))
    with freeze_time("2026-08-25T00:00:00Z"):
        import_files(store, [str(late)])
    assert rebuild(store, "2026-08-10T00:00:00Z") != published
    assert rebuild(store, "2026-08-10T00:00:00Z", known_at="2026-08-10T00:00:00.000000Z") == published
    assert rebuild(store, AS_OF_004, known_at="2026-08-10T00:00:00.000000Z") == SEED_004.read_bytes()


def test_known_at_on_the_command_line(history_ledger, tmp_path):
    cli = Cli.of(history_ledger)
    now = cli("replay", "--as-of", "2026-08-24", "--paper", PAPER_004)
    then = cli("replay", "--as-of", "2026-08-24", "--paper", PAPER_004, "--known-at", "2026-08-10T00:00:00Z")
    assert now.exit_code == then.exit_code == 0
    assert json.loads(then.stdout)["paper"]["latest_version"] == 1
    assert json.loads(now.stdout)["paper"]["latest_version"] == 2
    before = cli("replay", "--as-of", "2026-08-24", "--paper", PAPER_004, "--known-at", "2026-08-09")
    assert before.exit_code == 1
    assert before.stderr == (f"ledger: no record of arXiv:{PAPER_004} as of 2026-08-24T23:59:59.999999Z known at "
                             "2026-08-09T23:59:59.999999Z\n")
    every = cli("replay", "--as-of", "2026-08-24", "--known-at", "2026-08-09")
    assert (every.exit_code, every.stderr) == (1, "ledger: no record of any paper as of 2026-08-24T23:59:59.999999Z "
                                                  "known at 2026-08-09T23:59:59.999999Z\n")


@pytest.mark.parametrize("order", ["seed_first", "later_first"])
def test_later_records_import_in_either_order_with_the_same_results(history_ledger, new_location, tmp_path,
                                                                    order, seed_bytes):
    later_bytes = rebuild(history_ledger, LATER)
    later_path = tmp_path / "later-record.json"
    later_path.write_bytes(later_bytes)
    files = [str(SEED_004), str(later_path)]
    fresh = Store.create(new_location())
    for name in files if order == "seed_first" else reversed(files):
        import_files(fresh, [name])
    assert rebuild(fresh, AS_OF_004) == seed_bytes
    assert rebuild(fresh, LATER) == later_bytes


def test_history_of_an_observation_names_what_changed(history_ledger):
    cli = Cli.of(history_ledger)
    result = cli("history", OBS)
    assert result.exit_code == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0] == "seq\teffective_at\trecorded_at\tkind\taccount"
    assert lines[1].split("\t")[3] == "resolution.recorded"
    assert lines[-1].endswith("resolution unresolved → verified_fuzzy (raw_fallback)")
    assert lines[-1].split("\t")[2] == "2026-08-24T12:00:00.000000Z"
    rows = json.loads(cli("history", OBS, "--json").stdout)
    assert [r["effective_at"] for r in rows] == sorted([r["effective_at"] for r in rows])
    assert set(rows[0]) == {"seq", "kind", "subject", "effective_at", "recorded_at", "account", "citation"}
    paper = json.loads(cli("history", PAPER_004, "--json").stdout)
    assert len(paper) == len(list(history_ledger.entries()))
    assert any(r["account"] == "paper v1 → v2" for r in paper)
    assert cli("history", "no-such-thing").exit_code == 1


def test_diff_lists_added_changed_coverage_and_both_digests(history_ledger, seed_bytes):
    cli = Cli.of(history_ledger)
    result = cli("diff", PAPER_004, "--from", AS_OF_004, "--to", "2026-08-24", "--json")
    assert result.exit_code == 0
    d = json.loads(result.stdout)
    assert d["from"]["context_digest"] == json.loads(seed_bytes)["context_digest"]
    assert d["to"]["context_digest"] == json.loads(rebuild(history_ledger, LATER))["context_digest"]
    assert [a["observation_id"] for a in d["added"]] == [NEW_OBS] and d["removed"] == []
    changed = {c["observation_id"]: c for c in d["changed"]}
    assert changed[OBS]["parts"] == ["resolution"]
    assert changed[OBS]["details"] == ["resolution: unresolved → verified_fuzzy (raw_fallback)"]
    assert changed[MEASURED[0]]["parts"] == ["standing_notice"]
    assert "Correction, reported by crossref, dated 2026-08-22" in changed[MEASURED[0]]["details"][0]
    assert {c["lane"] for c in d["coverage"]} == {"standing_notices", "inbound_itemization"}
    assert d["fields"] == ["paper", "standing_sources"]
    text = cli("diff", PAPER_004, "--from", AS_OF_004, "--to", "2026-08-24")
    assert [(a["other_id"], a["title"]) for a in d["added"]] == [("arXiv:2608.01234", "A later paper")]
    lines = text.stdout.splitlines()
    assert f'added: cited by arXiv:2608.01234 "A later paper" (observation {NEW_OBS}, {d["added"][0]["digest"]})' in lines
    assert (f'changed: cited by arXiv:2502.08182 "{MEMORY}": resolution: unresolved → verified_fuzzy (raw_fallback) '
            f'(observation {OBS}, {changed[OBS]["from_digest"]} → {changed[OBS]["to_digest"]})') in lines
    assert ("coverage standing_notices: 12 of 12 (scholarly_work_events, retraction_status_cache, observed "
            "2026-08-09T06:31:02.800959+00:00) → 13 of 13 (scholarly_work_events, retraction_status_cache, observed "
            "2026-08-23T06:31:00Z)") in lines


@pytest.mark.slow
def test_export_import_reproduces_the_head_and_the_log_stands_in_for_the_database(history_ledger, tmp_path, seed_bytes):
    cli = Cli.of(history_ledger)
    exported = cli("export")
    assert exported.exit_code == 0
    log = tmp_path / "log.jsonl"
    log.write_bytes(exported.stdout_bytes)
    head = cli("head").stdout
    fresh = Cli(str(tmp_path / "copy.db"))
    assert fresh("init").exit_code == 0
    assert fresh("import", str(log)).exit_code == 0
    assert fresh("head").stdout == head
    assert fresh("import", str(log)).stdout.startswith("appended 0 events")
    offline = Cli(str(log))
    assert offline("verify").stdout.startswith(f"ok: {head.split()[0]} events")
    assert offline("replay", "--as-of", AS_OF_004, "--paper", PAPER_004).stdout_bytes == seed_bytes
    assert offline("history", OBS).stdout == cli("history", OBS).stdout
    assert offline("diff", PAPER_004, "--from", AS_OF_004, "--to", "2026-08-24").stdout == \
        cli("diff", PAPER_004, "--from", AS_OF_004, "--to", "2026-08-24").stdout
    refused = offline("import", str(SEED_004))
    assert refused.exit_code == 2 and "read-only" in refused.stderr


def test_a_tampered_exported_log_is_caught(history_ledger, tmp_path):
    cli = Cli.of(history_ledger)
    lines = cli("export").stdout_bytes.splitlines(keepends=True)
    lines[9] = lines[9].replace(b'"reference_index":7', b'"reference_index":8')
    assert b'"reference_index":8' in lines[9]
    log = tmp_path / "tampered.jsonl"
    log.write_bytes(b"".join(lines))
    offline = Cli(str(log))
    verified = offline("verify")
    assert verified.exit_code == 1 and "seq 10: entry hash does not re-compute" in verified.stderr
    replayed = offline("replay", "--as-of", AS_OF_004, "--paper", PAPER_004)
    assert replayed.exit_code == 1 and "line 10: seq 10: entry hash does not re-compute" in replayed.stderr
    dropped = tmp_path / "dropped.jsonl"
    dropped.write_bytes(b"".join(lines[:4] + lines[5:]))
    gap = Cli(str(dropped))("verify")
    assert gap.exit_code == 1 and "sequence gap: expected seq 5, found seq 6" in gap.stderr


def test_event_lines_are_not_an_exported_log(tmp_path):
    facts = tmp_path / "facts.jsonl"
    facts.write_bytes(later_facts())
    result = Cli(str(facts))("verify")
    assert result.exit_code == 2
    assert result.stderr == f"ledger: {facts}: line 1: not a log entry (an exported log line carries seq and hashes)\n"


@pytest.mark.parametrize("early, late", [("0999-12-31T23:59:59Z", "1000-01-01T00:00:00Z"),
                                         ("0005-01-02T03:04:05+01:00", "2026-08-09T00:00:00Z"),
                                         ("2026-08-09T23:59:59.999999Z", "2026-08-10T01:00:00+01:00")])
def test_ordering_keys_sort_as_the_instants_do(early, late):
    # Keys are compared as text, so every key must be zero-padded, UTC, microseconds.
    from ledger.core.times import instant_key

    assert instant_key(early) < instant_key(late)
    assert len(instant_key(early)) == len("2026-08-09T00:00:00.000000Z")


@pytest.mark.parametrize("text", ["0001-01-01T00:30:00+01:00", "9999-12-31T23:30:00-01:00", "2026-02-30T00:00:00Z",
                                  "2026-02-29T00:00:00.000000Z", "2026-01-01T24:00:00.000000Z",
                                  "2026-12-31T23:59:60.000000Z", "0000-01-01T00:00:00.000000Z"])
def test_instants_outside_the_calendar_are_refused(text):
    from ledger.core.times import TimeError, instant_key

    with pytest.raises(TimeError, match="not a valid timestamp"):
        instant_key(text)


@given(st.datetimes(min_value=datetime(1, 1, 2), timezones=st.just(UTC)), st.sampled_from(["Z", "+00:00"]),
       st.sampled_from(["seconds", "milliseconds", "microseconds"]))
def test_a_key_is_the_instant_in_utc_with_microseconds_whatever_form_it_was_written_in(moment, zone, spec):
    # Written in the key's own form, an instant is its own key; in any other form it is parsed and formatted:
    # both ways give the same key for the same instant.
    from ledger.core.times import instant_key

    text = moment.replace(tzinfo=None).isoformat(timespec=spec) + zone
    written = datetime.fromisoformat(text)
    assert instant_key(text) == written.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
    assert instant_key(text) == instant_key(written.astimezone(timezone(timedelta(hours=-3))).isoformat())
