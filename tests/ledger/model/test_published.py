"""Published digests: every digest of seed 004 re-checks, and any change is named."""

import copy
import json

import pytest

from ledger.core.errors import InputError, IntegrityError
from ledger.model.published import check_record, context_digest, digest_mismatches, observation_digest, verify_digests
from tests.conftest import SEED_004


@pytest.fixture
def record():
    return json.loads(SEED_004.read_bytes())


def test_all_twelve_observation_digests_and_the_context_digest_recheck(record):
    observations = record["inbound"] + record["outbound"]
    assert len(observations) == 12
    for obs in observations:
        assert observation_digest(obs) == obs["observation_digest"]
    assert context_digest(record) == record["context_digest"]
    assert verify_digests(record) is None


def test_context_digest_leaves_out_as_of(record):
    later = dict(record, as_of="2026-12-31T00:00:00Z")
    assert context_digest(later) == record["context_digest"]


def test_a_changed_observation_is_named_with_the_context_digest(record):
    changed = copy.deepcopy(record)
    target = changed["inbound"][3]
    target["citation"]["reference_index"] += 1
    problems = digest_mismatches(changed)
    assert len(problems) == 2
    assert target["observation_id"] in problems[0]
    assert problems[1].startswith("context_digest")
    with pytest.raises(IntegrityError) as caught:
        verify_digests(changed)
    assert target["observation_id"] in str(caught.value)


def test_a_changed_published_digest_alone_is_named(record):
    changed = copy.deepcopy(record)
    changed["context_digest"] = "sha256:" + "0" * 64
    assert [p.split(":")[0] for p in digest_mismatches(changed)] == ["context_digest"]


@pytest.mark.parametrize("mutate, field", [
    (lambda r: r.pop("thesis"), "field thesis: missing"),
    (lambda r: r.__setitem__("schema", "pith.paper-citation-record.v2"), "field schema: expected"),
    (lambda r: r.__setitem__("as_of", "9 August 2026"), "field as_of"),
    (lambda r: r["inbound"][0]["resolution"].__setitem__("observed_at", "2026-13-01T00:00:00Z"),
     "inbound[0].resolution.observed_at"),
    (lambda r: r["inbound"][1]["resolution"].__setitem__("status", "kind_of_resolved"), "inbound[1].resolution.status"),
    (lambda r: r["inbound"][2]["citation"].__setitem__("reference_index", "7"), "inbound[2].citation.reference_index"),
    (lambda r: r["inbound"][2]["citation"].__setitem__("reference_index", True), "inbound[2].citation.reference_index"),
    (lambda r: r["inbound"][0].pop("observation_id"), "inbound[0].observation_id: missing"),
    (lambda r: r["inbound"][0]["citation"]["citing_paper"].__setitem__("snapshot_observed_at", "2026-08-08"),
     "citing_paper.snapshot_observed_at"),
    (lambda r: r["inbound"].append(copy.deepcopy(r["inbound"][0])), "appears twice"),
    (lambda r: r.__setitem__("inbound", {}), "field inbound: expected an array"),
])
def test_check_record_names_the_first_malformed_field(record, mutate, field):
    mutate(record)
    with pytest.raises(InputError, match=field.replace("[", r"\[").replace("]", r"\]")):
        check_record(record)
