"""`ledger import --withdraw-missing RECORD`: a later record of seed 004 that no longer lists an inbound observation
is refused without the flag, naming it; with it, the observation is withdrawn at the record's as_of and the record
rebuilds byte for byte, seed 004 still at its own.
"""

from __future__ import annotations

import pytest

from ledger.core.canonical import canonical
from ledger.model.events import OBSERVATION_WITHDRAWN
from ledger.projections.compare import missing_observations
from ledger.storage.store import Store
from tests.conftest import AS_OF_004, PAPER_004, SEED_004
from tests.helpers import seed_record, write_record
from tests.projections.test_withdrawn import OID, without_first_inbound

LATER = "2026-08-21T00:00:00Z"


@pytest.fixture
def later(cli, tmp_path) -> str:
    """Seed 004 imported, and the path of its record as of 21 August without its first inbound observation."""
    assert cli("init").exit_code == 0
    assert cli("import", str(SEED_004)).exit_code == 0
    return write_record(tmp_path / "later.json", without_first_inbound(LATER))


def head(cli) -> str:
    return cli("import", str(SEED_004)).stdout.split("; head ")[1]


def replay(cli, as_of: str) -> bytes:
    result = cli("replay", "--paper", PAPER_004, "--as-of", as_of)
    assert (result.exit_code, result.stderr) == (0, "")
    return result.stdout_bytes


def test_without_the_flag_the_record_is_refused_naming_the_observation_and_the_flag(cli, later):
    before = head(cli)
    result = cli("import", later)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (f"ledger: {later}: the record no longer lists observation {OID} that the ledger's "
                             f"rebuild at its as_of {LATER} lists; `ledger import --withdraw-missing` appends their "
                             "withdrawals\n")
    assert head(cli) == before  # nothing appended


@pytest.mark.slow
def test_with_the_flag_one_withdrawal_is_appended_and_both_records_rebuild(cli, later):
    result = cli("import", "--withdraw-missing", later)
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.startswith("appended 1 event (")
    last = cli("history", OID).stdout.splitlines()[-1].split("\t")
    assert (last[1], last[3]) == (LATER, OBSERVATION_WITHDRAWN)
    assert last[4].endswith('"Efficient Training of Large Language Models on Distributed Infrastructures: A Survey": '
                            "withdrawn on 2026-08-21: not listed in later.json as of " + LATER)
    assert replay(cli, LATER) == canonical(without_first_inbound(LATER))
    assert replay(cli, AS_OF_004) == SEED_004.read_bytes()


def test_the_same_record_again_with_the_flag_appends_nothing(cli, later):
    assert cli("import", "--withdraw-missing", later).exit_code == 0
    before = head(cli)
    result = cli("import", "--withdraw-missing", later)
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.startswith("appended 0 events (")
    assert head(cli) == before


def test_an_observation_past_the_page_cap_is_not_missing(cli, later):
    # A record over its cap (it counts more than it lists) lists the first observations in page order: one
    # after its last listed is past the cap; one before it (the first, here) is missing all the same, and so
    # is every one not listed by a record at its cap that counts no more than it lists.
    store = Store.open(cli.location)
    facts = store.paper_facts(PAPER_004)
    store.close()
    record = without_first_inbound(LATER)
    assert missing_observations(facts, record) == [OID]
    record["caps"]["inbound"] = len(record["inbound"])
    assert missing_observations(facts, record) == [OID]
    full = seed_record()
    full["as_of"] = LATER
    last = full["inbound"].pop()["observation_id"]
    full["caps"]["inbound"] = len(full["inbound"])
    itemized = next(lane for lane in full["coverage"] if lane["lane"] == "inbound_itemization")
    itemized["denominator"] = len(full["inbound"])
    assert missing_observations(facts, full) == [last]
    itemized["denominator"] += 1
    assert missing_observations(facts, full) == []


def test_the_flag_is_in_the_import_help(cli):
    result = cli("import", "--help")
    assert result.exit_code == 0 and "--withdraw-missing" in result.stdout and "Default: off" in result.stdout
