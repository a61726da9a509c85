"""observation.withdrawn through the CLI, on seed 004: a withdrawal removes the observation from the record
from its effective time on, leaves earlier rebuilds byte for byte, and yields to a later re-observation.
"""

from __future__ import annotations

import copy
import json

import pytest

from ledger.core.canonical import canonical
from ledger.model.events import CITATION_OBSERVED, OBSERVATION_WITHDRAWN
from tests.conftest import AS_OF_004, PAPER_004, SEED_004
from tests.helpers import event_line, redigest, seed_record

WITHDRAWN_AT = "2026-08-20T00:00:00Z"
REASON = "reference extracted in error"
OID = seed_record()["inbound"][0]["observation_id"]


def withdrawal(**changes) -> dict:
    return {"observation_id": OID, "observed_at": WITHDRAWN_AT, "reason": REASON, **changes}


def write_lines(path, *lines: bytes) -> str:
    path.write_bytes(b"".join(lines))
    return str(path)


@pytest.fixture
def withdrawn(cli, tmp_path):
    """Seed 004 imported, then the withdrawal of its first inbound observation on 20 August."""
    assert cli("init").exit_code == 0
    assert cli("import", str(SEED_004)).exit_code == 0
    result = cli("import", write_lines(tmp_path / "w.jsonl", event_line(OBSERVATION_WITHDRAWN, withdrawal())))
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.startswith("appended 1 event (0 already present)")
    return cli


def replay(cli, as_of: str) -> bytes:
    result = cli("replay", "--paper", PAPER_004, "--as-of", as_of)
    assert (result.exit_code, result.stderr) == (0, "")
    return result.stdout_bytes


def without_first_inbound(as_of: str) -> dict:
    """Seed 004 as of `as_of` with its first inbound observation gone and every count one less."""
    record = seed_record()
    record["as_of"] = as_of
    del record["inbound"][0]
    for lane in record["coverage"]:
        if lane["lane"] in ("standing_notices", "inbound_itemization"):
            lane["denominator"] -= 1
            lane["records_observed"] -= 1
    itemized = next(lane for lane in record["coverage"] if lane["lane"] == "inbound_itemization")
    itemized["source_observed_at"] = max(o["citation"]["source_observed_at"] for o in record["inbound"])
    record["thesis"] = ("As of 21 August 2026, this Paper Citation Record lists 0 of 0 outbound references and 11 "
                        "inbound Pith citation observations for arXiv:2407.20018.")
    return redigest(record)


def test_before_the_withdrawal_the_seed_rebuilds_byte_for_byte(withdrawn):
    assert replay(withdrawn, AS_OF_004) == SEED_004.read_bytes()
    just_before = json.loads(replay(withdrawn, "2026-08-19T23:59:59Z"))
    assert just_before["inbound"] == seed_record()["inbound"] and just_before["coverage"] == seed_record()["coverage"]


def test_from_the_withdrawal_on_the_observation_is_gone_and_counted_nowhere(withdrawn):
    rebuilt = json.loads(replay(withdrawn, "2026-08-21T00:00:00Z"))
    assert OID not in {o["observation_id"] for o in rebuilt["inbound"]}
    assert rebuilt["thesis"].endswith("lists 0 of 0 outbound references and 11 inbound Pith citation observations "
                                      "for arXiv:2407.20018.")
    assert canonical(rebuilt) == canonical(without_first_inbound("2026-08-21T00:00:00Z"))
    at_the_time = json.loads(replay(withdrawn, WITHDRAWN_AT))  # effective at its observed_at, itself included
    assert OID not in {o["observation_id"] for o in at_the_time["inbound"]}


def test_observed_again_after_the_withdrawal_it_is_back(withdrawn, tmp_path):
    citation = copy.deepcopy(seed_record()["inbound"][0]["citation"])
    citation["source_observed_at"] = "2026-08-25T00:00:00Z"
    again = event_line(CITATION_OBSERVED, {"citation": citation, "observation_id": OID})
    result = withdrawn("import", write_lines(tmp_path / "again.jsonl", again))
    assert (result.exit_code, result.stderr) == (0, "")
    assert OID not in {o["observation_id"] for o in json.loads(replay(withdrawn, "2026-08-24T00:00:00Z"))["inbound"]}
    back = json.loads(replay(withdrawn, "2026-08-26T00:00:00Z"))
    assert [o["citation"] for o in back["inbound"] if o["observation_id"] == OID] == [citation]
    assert [(lane["denominator"], lane["records_observed"]) for lane in back["coverage"]
            if lane["lane"] == "inbound_itemization"] == [(12, 12)]
    assert "and 12 inbound Pith citation observations" in back["thesis"]
    assert replay(withdrawn, AS_OF_004) == SEED_004.read_bytes()


def test_history_accounts_for_the_withdrawal(withdrawn):
    citing = 'arXiv:2502.08182 "Memory Offloading for Large Language Model Inference with Latency SLO Guarantees"'
    cited = 'arXiv:2407.20018 "Efficient Training of Large Language Models on Distributed Infrastructures: A Survey"'
    # The observation's own history names both papers; the paper's, the other one.
    for subject, citation in ((OID, f"{citing} cites {cited}"), (PAPER_004, f"cited by {citing}")):
        result = withdrawn("history", subject)
        assert result.exit_code == 0 and result.stderr == ""
        last = result.stdout.splitlines()[-1].split("\t")
        assert (last[1], last[3], last[4]) == (WITHDRAWN_AT, OBSERVATION_WITHDRAWN,
                                                f"{citation}: withdrawn on 2026-08-20: {REASON}")


def test_the_paper_page_and_the_record_page_show_the_withdrawal(withdrawn):
    from fastapi.testclient import TestClient

    from ledger.web.app import create_app
    from ledger.web.urls import page_url, record_url

    client = TestClient(create_app(withdrawn.location))
    paper = client.get(page_url(PAPER_004, "2026-08-21")).text
    assert (f'<td data-label="Kind">{OBSERVATION_WITHDRAWN}</td><td data-label="Subject">{OID}</td>'
                f'<td data-label="What changed" class="changed">cited by arXiv:2502.08182 &#34;Memory Offloading for '
            f"Large Language Model Inference with Latency SLO Guarantees&#34;: withdrawn on 2026-08-20: {REASON}</td>") in paper
    assert OID not in client.get(record_url(PAPER_004, "2026-08-21")).text
    assert OID in client.get(record_url(PAPER_004, "2026-08-19")).text


def test_the_same_withdrawal_twice_is_the_same_fact(withdrawn, tmp_path):
    result = withdrawn("import", write_lines(tmp_path / "w.jsonl", event_line(OBSERVATION_WITHDRAWN, withdrawal())))
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.startswith("appended 0 events (1 already present); head 41 ")


@pytest.mark.slow
def test_another_withdrawal_of_the_observation_at_the_same_time_is_a_contradiction(withdrawn, tmp_path):
    path = write_lines(tmp_path / "w2.jsonl", event_line(OBSERVATION_WITHDRAWN, withdrawal(reason="duplicate")))
    result = withdrawn("import", path)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (f"ledger: {path}: line 1: observation.withdrawn of {OID} effective {WITHDRAWN_AT} "
                             "contradicts event seq 41 (same subject, kind and effective time, other payload)\n")


@pytest.mark.parametrize("payload, error", [
    ({"observation_id": OID, "reason": REASON}, "field payload.observed_at: missing"),
    ({"observation_id": OID, "observed_at": WITHDRAWN_AT}, "field payload.reason: missing"),
    (withdrawal(reason=3), "field payload.reason: expected a string, found an integer"),
    (withdrawal(observation_id=""), "field payload.observation_id: empty"),
])
def test_a_bad_withdrawal_is_refused_naming_the_field(withdrawn, tmp_path, payload, error):
    path = write_lines(tmp_path / "bad.jsonl", event_line(OBSERVATION_WITHDRAWN, payload))
    result = withdrawn("import", path)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == f"ledger: {path}: line 1: {error}\n"
    assert withdrawn("import", str(SEED_004)).stdout.startswith("appended 0 events (40 already present); head 41 ")


def test_withdrawing_an_observation_the_ledger_never_saw_is_refused(withdrawn, tmp_path):
    stranger = "00000000-0000-4000-8000-000000000000"
    valid = withdrawal(observed_at="2026-08-22T00:00:00Z", reason="duplicate")  # refused with the line after it
    path = write_lines(tmp_path / "w.jsonl", event_line(OBSERVATION_WITHDRAWN, valid),
                       event_line(OBSERVATION_WITHDRAWN, withdrawal(observation_id=stranger)))
    result = withdrawn("import", path)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (f"ledger: {path}: line 2: field payload.observation_id: observation {stranger} is not "
                             "in this ledger: there is nothing to withdraw\n")
    history = withdrawn("history", PAPER_004).stdout
    assert "duplicate" not in history and history.count(OBSERVATION_WITHDRAWN) == 1  # nothing appended


def test_an_observation_cited_in_the_same_import_may_be_withdrawn(cli, tmp_path):
    # The withdrawal comes first: what counts is what the ledger holds once the whole import is in.
    assert cli("init").exit_code == 0
    citation = seed_record()["inbound"][0]["citation"]
    path = write_lines(tmp_path / "both.jsonl", event_line(OBSERVATION_WITHDRAWN, withdrawal()),
                       event_line(CITATION_OBSERVED, {"citation": citation, "observation_id": OID}))
    result = cli("import", path)
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.startswith("appended 2 events (0 already present)")


@pytest.mark.slow
def test_a_withdrawal_earlier_than_the_observation_itself_is_refused(withdrawn, tmp_path):
    path = write_lines(tmp_path / "early.jsonl",
                       event_line(OBSERVATION_WITHDRAWN, withdrawal(observed_at="2026-01-05T00:00:00Z")))
    result = withdrawn("import", path)
    assert (result.exit_code, result.stdout) == (2, "")
    # The observation's own effective time: the latest time its citation was observed at.
    assert result.stderr == (f"ledger: {path}: line 1: field payload.observed_at: 2026-01-05T00:00:00Z is earlier "
                             f"than observation {OID} itself (2026-08-08T14:36:12.899386Z)\n")
    assert withdrawn("import", str(SEED_004)).stdout.startswith("appended 0 events (40 already present); head 41 ")


@pytest.mark.slow
def test_a_withdrawal_is_an_event_of_its_paper_and_a_bundle_without_it_is_incomplete(withdrawn, tmp_path,
                                                                                      monkeypatch):
    from tests.cli.test_completeness import check, refused

    monkeypatch.chdir(tmp_path)
    assert withdrawn("keygen", "example.org/ledger").exit_code == 0
    made = withdrawn("replay", "--paper", PAPER_004, "--as-of", "2026-08-21", "--evidence", "b.json",
                     "--key", "ledger.key")
    assert made.exit_code == 0, made.stderr
    bundle = json.loads((tmp_path / "b.json").read_bytes())
    assert [e["seq"] for e in bundle["events"]] == list(range(1, 42))  # seed 004's 40, then the withdrawal
    whole = check(withdrawn, tmp_path, bundle)
    assert whole.exit_code == 0 and "complete: the signed paper index counts 41 events" in whole.stdout
    del bundle["events"][-1]
    refused(check(withdrawn, tmp_path, bundle), "missing from the bundle: 1 event after seq 40")


def test_a_log_that_withdraws_what_it_never_observed_is_refused(cli, tmp_path):
    # Hashes that re-compute do not make a withdrawal of nothing acceptable: exported lines are checked as facts.
    from ledger.core.canonical import canonical
    from ledger.log.chain import GENESIS, Entry, seal
    from ledger.log.export import export_line

    payload = canonical(withdrawal())
    recorded = "2026-08-25T00:00:00.000000Z"
    _, digest, chain = seal(GENESIS, 1, OBSERVATION_WITHDRAWN, WITHDRAWN_AT, recorded, payload)
    log = tmp_path / "forged.log"
    log.write_bytes(export_line(Entry(1, OBSERVATION_WITHDRAWN, WITHDRAWN_AT, recorded, payload, digest, chain)))
    assert cli("init").exit_code == 0
    result = cli("import", str(log))
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (f"ledger: {log}: line 1: field payload.observation_id: observation {OID} is not in this "
                             "ledger: there is nothing to withdraw\n")
    assert cli("head").stdout.startswith("0 ")  # nothing appended
