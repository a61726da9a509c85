"""Corrections read through time: `--known-at` says what the ledger said before a withdrawal or a count was
recorded; a record the ledger published before a withdrawal still verifies in its window, the withdrawal named as
the late fact; `diff` says why an observation left the record (withdrawn on D: reason, or past the page cap).
"""

from __future__ import annotations

import copy
import json

import pytest
from freezegun import freeze_time

from ledger.core.canonical import canonical
from ledger.model.events import CITATION_OBSERVED, OBSERVATION_WITHDRAWN
from tests.conftest import PAPER_004, SEED_004
from tests.helpers import citing_observation, event_line, published, seed_record, write_record
from tests.projections.test_capped import CAPPED_AT, everything
from tests.projections.test_withdrawn import OID, REASON, WITHDRAWN_AT, withdrawal, write_lines

PUBLISHED_AT = "2026-08-21T00:00:00Z"  # after the withdrawal's effective time, before it was recorded
CITING = "Memory Offloading for Large Language Model Inference with Latency SLO Guarantees"  # OID's citing paper


def replay(cli, as_of: str, *known_at: str) -> dict:
    result = cli("replay", "--paper", PAPER_004, "--as-of", as_of, *(("--known-at", *known_at) if known_at else ()))
    assert (result.exit_code, result.stderr) == (0, "")
    return json.loads(result.stdout)


def listed(record: dict) -> set[str]:
    return {obs["observation_id"] for obs in record["inbound"]}


@pytest.fixture
def late_withdrawal(cli, tmp_path):
    """Seed 004 recorded on 10 August; the ledger's record as of 21 August published (written) on 22 August; the
    withdrawal effective 20 August recorded on 25 August. Returns the published record's path."""
    assert cli("init").exit_code == 0
    with freeze_time("2026-08-10T00:00:00Z"):
        assert cli("import", str(SEED_004)).exit_code == 0
    with freeze_time("2026-08-22T00:00:00Z"):
        result = cli("replay", "--paper", PAPER_004, "--as-of", PUBLISHED_AT)
    (tmp_path / "published.json").write_bytes(result.stdout_bytes)
    with freeze_time("2026-08-25T00:00:00Z"):
        line = event_line(OBSERVATION_WITHDRAWN, withdrawal())
        assert cli("import", write_lines(tmp_path / "w.jsonl", line)).exit_code == 0
    return tmp_path / "published.json"


@pytest.mark.slow
def test_known_at_says_what_the_ledger_said_before_the_withdrawal_was_recorded(cli, late_withdrawal):
    assert OID in listed(replay(cli, PUBLISHED_AT, "2026-08-24"))
    assert OID not in listed(replay(cli, PUBLISHED_AT))
    assert canonical(replay(cli, PUBLISHED_AT, "2026-08-24")) == late_withdrawal.read_bytes()


@pytest.mark.slow
def test_a_record_published_before_the_withdrawal_verifies_in_its_window(cli, late_withdrawal):
    result = cli("verify", str(late_withdrawal))
    assert (result.exit_code, result.stderr) == (0, "")
    first, late = result.stdout.splitlines()
    assert first == (f"{late_withdrawal}: ok: 12 observation digests and the context digest re-check; agrees with what "
                     "the ledger knew from 2026-08-10T00:00:00.000000Z until 2026-08-25T00:00:00.000000Z (its rebuild "
                     f"at the record's as_of {PUBLISHED_AT}); 1 late fact recorded since changed that rebuild:")
    assert late == (f"{late_withdrawal}: late fact: seq 41, recorded 2026-08-25T00:00:00.000000Z, effective "
                    f"{WITHDRAWN_AT}, {OBSERVATION_WITHDRAWN} of {OID}: cited by arXiv:2502.08182 \"{CITING}\": withdrawn on "
                    f"2026-08-20: {REASON}")
    strict = cli("verify", "--strict", str(late_withdrawal))
    assert strict.exit_code == 1
    assert f"history: observation {OID} (inbound): not in the ledger's history as of {PUBLISHED_AT}" in strict.stderr


@pytest.mark.slow
def test_diff_says_the_observation_was_withdrawn_and_why(cli, late_withdrawal):
    result = cli("diff", PAPER_004, "--from", "2026-08-19", "--to", "2026-08-21")
    assert (result.exit_code, result.stderr) == (0, "")
    digest = next(o["observation_digest"] for o in seed_record()["inbound"] if o["observation_id"] == OID)
    assert (f'removed: cited by arXiv:2502.08182 "{CITING}": withdrawn on 2026-08-20: {REASON} (observation {OID}, {digest})'
            in result.stdout.splitlines())
    found = json.loads(cli("diff", PAPER_004, "--from", "2026-08-19", "--to", "2026-08-21", "--json").stdout)
    assert found["removed"] == [{"account": f"withdrawn on 2026-08-20: {REASON}", "digest": digest,
                                 "direction": "inbound", "observation_id": OID, "other_id": "arXiv:2502.08182",
                                 "title": CITING}]
    before = cli("diff", PAPER_004, "--from", "2026-08-19", "--to", "2026-08-21", "--known-at", "2026-08-24")
    assert before.exit_code == 0 and "removed" not in before.stdout  # not yet known then


@pytest.mark.slow
def test_known_at_says_what_the_ledger_said_before_the_count_was_recorded(cli, tmp_path):
    assert cli("init").exit_code == 0
    with freeze_time("2026-08-10T00:00:00Z"):
        assert cli("import", str(SEED_004)).exit_code == 0
    with freeze_time("2026-08-25T00:00:00Z"):
        assert cli("import", write_record(tmp_path / "capped.json", published(CAPPED_AT, everything()))).exit_code == 0
    then, now = replay(cli, CAPPED_AT, "2026-08-24"), replay(cli, CAPPED_AT)
    assert len(then["inbound"]) == 12 and "12 inbound" in then["thesis"]
    assert len(now["inbound"]) == 100
    assert [(lane["denominator"], lane["records_observed"]) for record in (then, now) for lane in record["coverage"]
            if lane["lane"] == "inbound_itemization"] == [(12, 12), (110, 100)]


@pytest.mark.slow
def test_diff_says_an_observation_fell_past_the_page_cap(cli, tmp_path):
    assert cli("init").exit_code == 0
    assert cli("import", str(SEED_004), write_record(tmp_path / "capped.json", published(CAPPED_AT, everything()))
               ).exit_code == 0
    early = copy.deepcopy(citing_observation(600, "2026-08-28T00:00:00Z"))
    early["citation"]["citing_paper"]["arxiv_id"] = "2501.00001"  # sorts first: the hundredth is pushed out
    line = event_line(CITATION_OBSERVED, {"citation": early["citation"], "observation_id": early["observation_id"]})
    assert cli("import", write_lines(tmp_path / "early.jsonl", line)).exit_code == 0
    pushed = citing_observation(88, "2026-08-20T00:00:00Z", checked=True)["observation_id"]
    result = cli("diff", PAPER_004, "--from", CAPPED_AT, "--to", "2026-09-01", "--json")
    found = json.loads(result.stdout)
    assert [(o["observation_id"], o["account"]) for o in found["removed"]] == [(pushed, "past the page cap of 100")]
    assert [o["observation_id"] for o in found["added"]] == [early["observation_id"]]


@pytest.mark.slow
def test_exported_and_imported_again_the_corrections_rebuild_the_same(cli, late_withdrawal, tmp_path):
    # The log of a ledger holding a withdrawal and a count, as exported lines: their hashes re-checked on the way in.
    capped = published(CAPPED_AT, [obs for obs in everything() if obs["observation_id"] != OID])  # 109 counted
    with freeze_time("2026-08-26T00:00:00Z"):
        assert cli("import", write_record(tmp_path / "capped.json", capped)).exit_code == 0
    log = tmp_path / "ledger.log"
    log.write_bytes(cli("export").stdout_bytes)
    again = type(cli)(str(tmp_path / "again.db"))
    assert again("init").exit_code == 0
    result = again("import", str(log))
    assert (result.exit_code, result.stderr) == (0, "")
    assert again("head").stdout == cli("head").stdout
    for as_of in (PUBLISHED_AT, CAPPED_AT, "2026-09-01"):
        assert canonical(replay(again, as_of)) == canonical(replay(cli, as_of))
    assert canonical(replay(again, CAPPED_AT)) == canonical(capped)
    assert canonical(replay(again, PUBLISHED_AT)) != late_withdrawal.read_bytes()  # the withdrawal came along
    assert canonical(replay(again, PUBLISHED_AT, "2026-08-24")) == late_withdrawal.read_bytes()
