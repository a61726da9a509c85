"""The record as of a date: smaller and consistent at earlier dates, never showing a later fact."""

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.core.canonical import canonical
from ledger.core.errors import NotFoundError
from ledger.core.times import When, format_utc, instant_key, parse_instant
from ledger.model.events import observed_times
from ledger.model.published import RESOLUTION_STATES, digest_mismatches
from ledger.projections.record import build_record
from tests.conftest import AS_OF_004, FIXTURES, PAPER_004

GOLDEN = FIXTURES / "golden"


@pytest.fixture(scope="module")
def facts(tmp_path_factory):
    from ledger.importing.importer import import_files
    from ledger.storage.store import Store
    from tests.conftest import SEED_004

    store = Store.create(str(tmp_path_factory.mktemp("p") / "ledger.db"))
    import_files(store, [str(SEED_004)])
    return store.paper_facts(PAPER_004)


def instants(facts) -> list[str]:
    """Every effective time, and the microsecond before each: the dates where a record can change."""
    keys = {f.effective_key for f in facts}
    return sorted(keys | {format_utc(parse_instant(k) - timedelta(microseconds=1)) for k in keys})


def check_consistent(record: dict, as_of_key: str) -> None:
    # No observation timestamp later than the date.
    for when in observed_times({k: v for k, v in record.items() if k != "as_of"}):
        assert instant_key(when) <= as_of_key, when
    # Every digest in the output re-checks.
    assert digest_mismatches(record) == []
    # Thesis, coverage and state counts agree with what is itemized.
    inbound, outbound = record["inbound"], record["outbound"]
    resolution = record["reference_resolution"]
    assert resolution["displayed"] == len(outbound)
    assert sum(resolution["state_counts"].values()) == len(outbound)
    assert set(resolution["state_counts"]) == set(RESOLUTION_STATES)
    lanes = {lane["lane"]: lane for lane in record["coverage"]}
    assert lanes["inbound_itemization"]["records_observed"] == len(inbound)
    assert lanes["reference_resolution"]["records_observed"] == len(outbound)
    checked = sum(1 for o in inbound + outbound if o["standing_notice"]["reason"] != "not_checked")
    assert lanes["standing_notices"]["records_observed"] == checked
    assert f"lists {len(outbound)} of {resolution['total_outbound_references']} outbound" in record["thesis"]
    assert f"and {len(inbound)} inbound Pith" in record["thesis"]


def test_replay_at_every_instant_is_consistent_and_only_grows(facts):
    seen: set[str] = set()
    shown = 0
    for when in instants(facts):
        try:
            record = build_record(PAPER_004, facts, When.at(when))
        except NotFoundError:
            assert not seen, "a record cannot disappear once it exists"
            continue
        check_consistent(record, when)
        ids = {o["observation_id"] for o in record["inbound"] + record["outbound"]}
        assert seen <= ids, "observations only ever appear as the date moves forward"
        seen = ids
        shown += 1
    assert len(seen) == 12 and shown > 10


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.datetimes(min_value=datetime(2026, 7, 1), max_value=datetime(2026, 9, 1)),
       st.datetimes(min_value=datetime(2026, 7, 1), max_value=datetime(2026, 9, 1)))
def test_as_of_monotonicity(facts, a, b):
    early, late = sorted([a, b])
    early_key, late_key = (format_utc(early.replace(tzinfo=UTC)), format_utc(late.replace(tzinfo=UTC)))
    try:
        first = build_record(PAPER_004, facts, When.at(early_key))
    except NotFoundError:
        return
    second = build_record(PAPER_004, facts, When.at(late_key))
    check_consistent(first, early_key)
    check_consistent(second, late_key)
    def ids(r):
        return {o["observation_id"] for o in r["inbound"] + r["outbound"]}
    assert ids(first) <= ids(second)


def test_before_the_first_snapshot_there_is_no_record(facts):
    with pytest.raises(NotFoundError, match="no record of arXiv:2407.20018 as of 2026-07-06T18:53:22.585500Z"):
        build_record(PAPER_004, facts, When.at("2026-07-06T18:53:22.585500Z"))


def test_the_projection_is_pure_in_the_order_facts_are_handed(facts):
    as_of = When.at(AS_OF_004)
    assert build_record(PAPER_004, list(reversed(facts)), as_of) == build_record(PAPER_004, facts, as_of)


GOLDEN_CASES = {
    "2407.20018@2026-08-09.json": ("2026-08-09T23:59:59.999999Z",),
    "2407.20018@2026-08-06.json": ("2026-08-06T23:59:59.999999Z",),
    "2407.20018@2026-07-07.json": ("2026-07-07T23:59:59.999999Z",),
}


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_golden_records(facts, name):
    """Regenerate with LEDGER_REGENERATE_GOLDEN=1, then review the diff like code."""
    data = canonical(build_record(PAPER_004, facts, When.at(*GOLDEN_CASES[name])))
    path: Path = GOLDEN / name
    if os.environ.get("LEDGER_REGENERATE_GOLDEN"):
        GOLDEN.mkdir(exist_ok=True)
        path.write_bytes(data)
    assert data == path.read_bytes()


def test_golden_bare_date_has_the_published_context_digest():
    import json

    record = json.loads((GOLDEN / "2407.20018@2026-08-09.json").read_bytes())
    assert record["as_of"] == "2026-08-09T23:59:59.999999Z"
    assert record["context_digest"] == "sha256:88bbcfe1847497cac1a7e1c3f5aa9530cb1662bfd44d13f772daaeb592ad2687"
