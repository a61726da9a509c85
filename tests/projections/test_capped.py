"""A record over the page cap (it lists 100 of the 110 inbound observations it counts), built by hand from seed 004
(`tests.helpers.published`): it imports and rebuilds byte for byte, the ledger keeping the ten it was not shown as a
count (coverage.counted), never as invented observations; the count yields to the full facts however they arrive.
"""

from __future__ import annotations

import base64
import json

import pytest

from ledger.core.canonical import canonical
from ledger.model.events import CITATION_OBSERVED, COVERAGE_COUNTED, NOTICE_CHECKED, RESOLUTION_RECORDED
from tests.conftest import AS_OF_004, PAPER_004, SEED_004
from tests.helpers import SWEEP, citing_observation, event_line, published, redigest, seed_record, write_record

CAPPED_AT = "2026-08-24T00:00:00Z"
SYNTHETIC_AT = "2026-08-20T00:00:00Z"


def everything() -> list[dict]:
    """Seed 004's 12 inbound observations and 98 more (every other one with its notice checked): 110."""
    return seed_record()["inbound"] + [citing_observation(n, SYNTHETIC_AT, checked=n % 2 == 0) for n in range(1, 99)]


def hidden() -> list[dict]:
    """The ten a record of all 110 does not list: the last in page order, 2608.00089 to 2608.00098."""
    return [citing_observation(n, SYNTHETIC_AT, checked=n % 2 == 0) for n in range(89, 99)]


def as_lines(observations: list[dict]) -> bytes:
    lines = []
    for obs in observations:
        oid = obs["observation_id"]
        lines.append(event_line(CITATION_OBSERVED, {"citation": obs["citation"], "observation_id": oid}))
        lines.append(event_line(RESOLUTION_RECORDED, {"observation_id": oid, "resolution": obs["resolution"]}))
        if obs["standing_notice"]["reason"] != "not_checked":
            lines.append(event_line(NOTICE_CHECKED, {"observation_id": oid, "standing_notice": obs["standing_notice"]},
                                    SWEEP))
    return b"".join(lines)


def replay(cli, as_of: str) -> bytes:
    result = cli("replay", "--paper", PAPER_004, "--as-of", as_of)
    assert (result.exit_code, result.stderr) == (0, "")
    return result.stdout_bytes


def lanes(record: bytes) -> dict:
    return {lane["lane"]: (lane["denominator"], lane["records_observed"]) for lane in json.loads(record)["coverage"]}


@pytest.fixture
def capped(cli, tmp_path) -> bytes:
    """Seed 004, then its record as of 24 August over the cap; returns that record's bytes."""
    record = published(CAPPED_AT, everything())
    assert cli("init").exit_code == 0
    assert cli("import", str(SEED_004)).exit_code == 0
    result = cli("import", write_record(tmp_path / "capped.json", record))
    assert (result.exit_code, result.stderr) == (0, "")
    return canonical(record)


def test_the_hand_built_record_is_over_the_cap():
    record = published(CAPPED_AT, everything())
    assert len(record["inbound"]) == 100
    assert lanes(canonical(record))["inbound_itemization"] == (110, 100)
    assert lanes(canonical(record))["standing_notices"] == (110, 12 + 49)
    assert record["inbound"][-1]["citation"]["citing_paper"]["arxiv_id"] == "2608.00088"


def test_a_capped_record_imports_and_rebuilds_byte_for_byte(cli, capped):
    assert replay(cli, CAPPED_AT) == capped
    assert replay(cli, AS_OF_004) == SEED_004.read_bytes()  # the count is not read before its time


def test_the_ledger_keeps_the_count_not_invented_observations(cli, capped):
    rows = [line.split("\t") for line in cli("history", PAPER_004).stdout.splitlines()]
    observed = {row[4] for row in rows if row[3] == CITATION_OBSERVED}
    assert len([row for row in rows if row[3] == CITATION_OBSERVED]) == 100  # 12 from the seed, 88 listed since
    counts = [row for row in rows if row[3] == COVERAGE_COUNTED]
    assert [(row[1], row[4]) for row in counts] == [
        (CAPPED_AT, "counted on 2026-08-24: inbound 110 counted, 100 itemized; outbound 0 counted, 0 itemized; "
                    "notices checked on 61 of 110 counted")]
    assert not any("2608.00089" in account for account in observed)


def test_the_count_stays_in_force_after_its_date(cli, capped):
    later = json.loads(replay(cli, "2026-09-01"))
    assert lanes(canonical(later))["inbound_itemization"] == (110, 100)
    assert later["inbound"] == json.loads(capped)["inbound"]


def test_the_missing_ten_arriving_later_leave_the_record_and_are_not_counted_twice(cli, capped, tmp_path):
    path = tmp_path / "ten.jsonl"
    path.write_bytes(as_lines(hidden()))
    result = cli("import", str(path))
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.startswith("appended 25 events (0 already present)")  # 10 citations and resolutions, 5 checks
    assert replay(cli, CAPPED_AT) == capped
    assert lanes(replay(cli, "2026-09-01"))["inbound_itemization"] == (110, 100)


@pytest.mark.slow
def test_with_every_fact_in_the_ledger_the_count_says_what_the_facts_say(cli, capped, tmp_path):
    # The ten arrive; from then on the rebuild is the one a ledger holding only the 110 as event lines gives.
    (tmp_path / "ten.jsonl").write_bytes(as_lines(hidden()))
    assert cli("import", str(tmp_path / "ten.jsonl")).exit_code == 0
    (tmp_path / "all.jsonl").write_bytes(as_lines(everything()[12:]))
    full = type(cli)(str(tmp_path / "full.db"))
    assert full("init").exit_code == 0
    assert full("import", str(SEED_004), str(tmp_path / "all.jsonl")).exit_code == 0
    for as_of in (CAPPED_AT, "2026-09-01"):
        assert replay(cli, as_of) == replay(full, as_of)


def test_the_missing_ten_arriving_earlier_leave_the_record_as_it_is(cli, tmp_path):
    path = tmp_path / "ten.jsonl"
    path.write_bytes(as_lines(hidden()))
    record = published(CAPPED_AT, everything())
    assert cli("init").exit_code == 0
    assert cli("import", str(path)).exit_code == 0
    result = cli("import", str(SEED_004), write_record(tmp_path / "capped.json", record))
    assert (result.exit_code, result.stderr) == (0, "")
    assert replay(cli, CAPPED_AT) == canonical(record)


def test_a_new_observation_after_the_count_is_counted_on_top(cli, capped, tmp_path):
    newer = citing_observation(500, "2026-08-28T00:00:00Z")
    path = tmp_path / "new.jsonl"
    path.write_bytes(as_lines([newer]))
    assert cli("import", str(path)).exit_code == 0
    assert replay(cli, CAPPED_AT) == capped
    assert lanes(replay(cli, "2026-09-01"))["inbound_itemization"] == (111, 100)
    assert lanes(replay(cli, "2026-09-01"))["standing_notices"] == (111, 62)


def test_a_later_record_that_lists_all_it_counts_ends_the_count(cli, capped, tmp_path):
    # 1 September: the 98 citing papers were withdrawn upstream; the record lists and counts the seed's 12.
    record = published("2026-09-01T00:00:00Z", seed_record()["inbound"])
    result = cli("import", "--withdraw-missing", write_record(tmp_path / "later.json", record))
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.startswith("appended 89 events (")  # 88 withdrawals and the record's count
    assert replay(cli, "2026-09-01T00:00:00Z") == canonical(record)
    assert replay(cli, CAPPED_AT) == capped
    assert replay(cli, AS_OF_004) == SEED_004.read_bytes()


@pytest.mark.slow
def test_a_later_capped_record_that_drops_a_listed_one_takes_in_the_next(cli, capped, tmp_path):
    # One listed citing paper withdrawn upstream: the record now lists 2608.00089, which the ledger never saw.
    gone = citing_observation(5, SYNTHETIC_AT, checked=False)["observation_id"]
    rest = [obs for obs in everything() if obs["observation_id"] != gone]
    record = published("2026-09-01T00:00:00Z", rest)
    assert record["inbound"][-1]["citation"]["citing_paper"]["arxiv_id"] == "2608.00089"
    refused = cli("import", write_record(tmp_path / "later.json", record))
    assert refused.exit_code == 2 and f"no longer lists observation {gone} " in refused.stderr
    result = cli("import", "--withdraw-missing", str(tmp_path / "later.json"))
    assert (result.exit_code, result.stderr) == (0, "")
    assert replay(cli, "2026-09-01T00:00:00Z") == canonical(record)
    assert lanes(canonical(record))["inbound_itemization"] == (109, 100)
    assert replay(cli, CAPPED_AT) == capped


def test_a_record_listing_fewer_than_it_counts_under_its_cap_is_refused(cli, tmp_path):
    record = published(CAPPED_AT, everything()[:50])
    next(lane for lane in record["coverage"] if lane["lane"] == "inbound_itemization")["denominator"] = 60
    assert cli("init").exit_code == 0
    path = write_record(tmp_path / "short.json", redigest(record))
    result = cli("import", path)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (f"ledger: {path}: field coverage[inbound_itemization].denominator: counts 60 inbound "
                             "observations but the record lists 50, under its cap of 100\n")
    assert cli("head").stdout.startswith("0 blake3:0000")  # nothing appended


def test_verify_says_what_is_counted_and_what_itemized(cli, capped, tmp_path):
    path = tmp_path / "capped.json"
    path.write_bytes(capped)
    result = cli("verify", str(path))
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.startswith(f"{path}: ok: 100 observation digests and the context digest re-check; agrees "
                                    f"with the ledger's history at {CAPPED_AT} (what the ledger knew from ")
    assert result.stdout.endswith("on); inbound 110 counted, 100 itemized (past the page cap: the rest are known "
                                  "only by count)\n")


def test_the_text_page_says_what_is_past_the_cap(cli, capped):
    result = cli("replay", "--paper", PAPER_004, "--as-of", CAPPED_AT, "--format", "text")
    assert (result.exit_code, result.stderr) == (0, "")
    blocks = result.stdout.split("\n\n")
    assert blocks[-1] == ("Past the page cap of 100: inbound 110 counted, 100 itemized; the rest are known only by "
                          "count.")  # the page form ends without a newline
    assert "measured 100 of 110 inbound itemization" in blocks


@pytest.mark.slow
def test_the_pages_say_what_is_past_the_cap(cli, capped):
    from fastapi.testclient import TestClient

    from ledger.log.signed_notes import generate_signer
    from ledger.web.app import create_app
    from ledger.web.urls import integrity_url, page_url, record_url

    client = TestClient(create_app(cli.location, generate_signer("example.org/ledger")))
    words = "inbound 110 counted, 100 itemized"
    page = client.get(record_url(PAPER_004, CAPPED_AT)).text
    assert f'<p class="capped">Past the page cap of 100: {words}; the rest are known only by count.</p>' in page
    integrity = client.get(integrity_url(PAPER_004, CAPPED_AT, html=False)).json()
    assert integrity["counted"] == [words] and len(integrity["observations"]) == 100
    assert f"Past the page cap: {words}." in client.get(integrity_url(PAPER_004, CAPPED_AT)).text
    assert client.get(integrity_url(PAPER_004, AS_OF_004, html=False)).json()["counted"] == []
    paper = client.get(page_url(PAPER_004, CAPPED_AT)).text  # its history table has the count's line
    assert f"<td data-label=\"What changed\" class=\"changed\">counted on 2026-08-24: {words}; outbound 0 counted, 0 itemized; notices checked on 61 of 110 counted</td>" in paper


@pytest.mark.slow
def test_a_bundle_holds_the_count_and_one_without_it_is_incomplete(cli, capped, tmp_path, monkeypatch):
    from tests.cli.test_completeness import check, refused

    monkeypatch.chdir(tmp_path)
    assert cli("keygen", "example.org/ledger").exit_code == 0
    made = cli("replay", "--paper", PAPER_004, "--as-of", CAPPED_AT, "--evidence", "b.json", "--key", "ledger.key")
    assert made.exit_code == 0, made.stderr
    bundle = json.loads((tmp_path / "b.json").read_bytes())
    assert bundle["record"] == json.loads(capped)
    kinds = [json.loads(base64.b64decode(event["leaf"]))["kind"] for event in bundle["events"]]
    assert kinds.count(COVERAGE_COUNTED) == 1 and kinds.count(CITATION_OBSERVED) == 100
    whole = check(cli, tmp_path, bundle)
    assert whole.exit_code == 0, whole.stderr
    assert f"complete: the signed paper index counts {len(kinds)} events" in whole.stdout
    del bundle["events"][kinds.index(COVERAGE_COUNTED)]
    refused(check(cli, tmp_path, bundle), "missing from the bundle: 1 event")


def _count(**changes) -> dict:
    lanes = {"inbound_itemization": {"denominator": 110, "records_observed": 100},
             "reference_resolution": {"denominator": 0, "records_observed": 0},
             "standing_notices": {"denominator": 110, "records_observed": 61}}
    return {"lanes": lanes, "observed_at": CAPPED_AT, "paper": PAPER_004, **changes}


@pytest.mark.parametrize("payload, error", [
    ({"observed_at": CAPPED_AT, "paper": PAPER_004}, "field payload.lanes: missing"),
    (_count(observed_at=None), "field payload.observed_at: expected a string, found null"),
    (_count(lanes={"inbound_itemization": {"denominator": 1, "records_observed": 1}}),
     "field payload.lanes: expected the lanes inbound_itemization, reference_resolution, standing_notices, found "
     "inbound_itemization"),
    (_count(lanes={**_count()["lanes"], "standing_notices": {"denominator": 3, "records_observed": 5}}),
     "field payload.lanes.standing_notices: records_observed 5 is not between 0 and the denominator 3"),
    (_count(lanes={**_count()["lanes"], "inbound_itemization": {"denominator": "110", "records_observed": 100}}),
     "field payload.lanes.inbound_itemization.denominator: expected an integer, found a string"),
])
def test_a_bad_count_line_is_refused_naming_the_field(cli, tmp_path, payload, error):
    assert cli("init").exit_code == 0
    path = tmp_path / "bad.jsonl"
    path.write_bytes(event_line(COVERAGE_COUNTED, payload))
    result = cli("import", str(path))
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == f"ledger: {path}: line 1: {error}\n"
    assert cli("head").stdout.startswith("0 ")  # nothing appended
