"""The fold's fast paths give the one fold's record: generated facts of one paper (ties in effective time,
superseded resolutions and notices, withdrawals and observations again, counts in force, another paper's facts,
facts past the cutoff, past the page cap) rebuild the same bytes in any order, taken in one loop or one at a
time, and a fact `add` says changed nothing never changes the record. Replay's encoder is the canonical one
for every such record. `build_record` stays the oracle; the golden files pin its bytes."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ledger.core.canonical import canonical, canonical_parsed, loads_finite
from ledger.core.errors import NotFoundError
from ledger.core.times import When
from ledger.model.events import Fact, make_event
from ledger.model.kinds import KIND
from ledger.model.published import digest_mismatches
from ledger.projections.record import Fold, build_record, folded

PAPER, OTHER = "2601.00001", "2601.00002"
DAYS = [f"2026-03-{day:02d}T12:00:00Z" for day in range(1, 9)]  # few instants: many ties
AS_OF = When.at("2026-03-06T23:59:59Z")  # the last two days are past the cutoff


def _paper(arxiv_id: str, day: str, version: int = 1) -> dict:
    return {"arxiv_id": arxiv_id, "snapshot_observed_at": day, "title": f"Paper {arxiv_id} v{version}",
            "version": version}


def _payload(step: tuple) -> tuple[str, dict]:
    what, n, day, flag = step
    oid, when = f"obs-{n % 7}", DAYS[day]
    notice = {"events": [], "observation": f"No event as of {when}.", "reason": None,
              "source_receipts": [{"observed_at": when, "source": "crossref"}], "state": "measured"}
    source = "openalex" if flag else "semantic_scholar"
    lanes = {lane: {"denominator": 150 + n, "records_observed": n} for lane in
             ("inbound_itemization", "reference_resolution", "standing_notices")}
    return {
        "snapshot": ("paper.snapshot", {**_paper(OTHER if flag and n % 5 == 0 else PAPER, when, n % 3 + 1),
                                        "latest_version": n % 3 + 1}),
        "citation": ("citation.observed", {"observation_id": oid, "citation": {
            "cited_paper": _paper(PAPER, DAYS[0]) if flag else _paper(f"2512.{n:05d}", DAYS[0]),
            "cited_work": None, "citing_paper": _paper(f"2602.{n % 4:05d}", when) if flag else _paper(PAPER, DAYS[0]),
            "reference_index": n % 3 + 1, "source": "pdf_text", "source_observed_at": when}}),
        "resolution": ("resolution.recorded", {"observation_id": oid, "resolution": {
            "observed_at": when, "resolver_source": "raw_fallback" if flag else None,
            "status": ["verified_exact", "unresolved", "metadata_mismatch"][n % 3]}}),
        "notice": ("notice.checked", {"observation_id": oid, "standing_notice": notice if flag else {
            **notice, "state": "check_failed", "reason": "timeout", "observation": "The check failed."}}),
        "withdrawn": ("observation.withdrawn", {"observation_id": oid, "observed_at": when, "reason": "gone"}),
        "counted": ("coverage.counted", {"paper": PAPER, "observed_at": when, "lanes": lanes}),
        "source": ("source.checked", {"paper": OTHER if flag and n % 4 == 0 else PAPER, "observed_at": when,
                                      "source": ["crossref", "retraction_watch"][n % 2]}),
        # Two sources share the one measurement slot: the same day ties, broken by ledger order.
        "measurement": ("measurements.checked", {"paper": PAPER, "observed_at": when, "source": source,
                                                 "measurements": [{"citation_count": n, "source": source}]}),
    }[what]


def facts_of(steps: list[tuple]) -> list[Fact]:
    """The steps as the store gives facts: in ledger order, one per distinct fact key (a repeat is dropped)."""
    facts, keys = [], set()
    for step in steps:
        event = make_event(*_payload(step))
        if event.key in keys:
            continue
        keys.add(event.key)
        seq = len(facts) + 1
        facts.append(Fact(seq, event.kind, event.subject, event.effective_at, event.effective_key,
                          f"2026-04-01T00:00:{seq:02d}.000000Z", event.payload))
    return facts


WHAT = ["snapshot", "citation", "citation", "resolution", "resolution", "notice", "notice", "withdrawn",
        "counted", "source", "measurement"]
STEP = st.tuples(st.sampled_from(WHAT), st.integers(0, 40), st.integers(0, len(DAYS) - 1), st.booleans())


def record_or_none(fold: Fold) -> bytes | None:
    try:
        return canonical(fold.record())
    except NotFoundError:
        return None


def check_paths(facts: list[Fact]) -> None:
    for fact in facts:  # what lets the fold skip a payload: the kind's slot is the subject, whatever it says
        kind = KIND[fact.kind]
        assert not kind.subject_slot or kind.slot(PAPER, fact.subject, loads_finite(fact.payload)) == fact.subject
    try:
        record = build_record(PAPER, facts, AS_OF)
    except NotFoundError:
        record = None
    expected = None if record is None else canonical(record)
    if record is not None:
        assert digest_mismatches(record) == []
        assert canonical_parsed(record) == expected  # what replay writes: the canonical bytes
    shuffled = facts[:]
    random.Random(len(facts)).shuffle(shuffled)
    assert record_or_none(folded(PAPER, shuffled, AS_OF)) == expected
    one_by_one, before = Fold(PAPER, AS_OF), None
    for fact in sorted(facts, key=lambda f: (f.recorded_at, f.seq)):
        changed = one_by_one.add(fact)
        now = record_or_none(one_by_one)
        if not changed:
            assert now == before, f"add said seq {fact.seq} changed nothing, yet the record changed"
        before = now
    assert before == expected


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(STEP, min_size=1, max_size=40))
@example([("snapshot", 0, 0, False), ("citation", 1, 1, False), ("withdrawn", 1, 1, False),
          ("citation", 1, 2, False), ("withdrawn", 1, 2, False)])  # a withdrawal tied with its re-observation
@example([("snapshot", 0, 0, False), ("measurement", 1, 2, True), ("measurement", 2, 2, False)])  # a tie
@example([("snapshot", 0, 0, False), ("citation", 2, 1, True), ("counted", 3, 2, False),
          ("citation", 3, 3, True), ("resolution", 3, 4, False), ("resolution", 3, 4, True)])
def test_every_path_of_the_fold_rebuilds_the_same_record(steps):
    check_paths(facts_of(steps))


def test_past_the_page_cap_and_a_count_in_force_every_path_agrees():
    steps = [("snapshot", 0, 0, False)]
    steps += [("citation", n, n % 6, n % 2 == 0) for n in range(7)]
    facts = facts_of(steps)
    for n in range(130):  # observations of their own: 7 ids above cannot pass the cap
        day = DAYS[n % 7]
        event = make_event("citation.observed", {"observation_id": f"many-{n:03d}", "citation": {
            "cited_paper": _paper(PAPER, DAYS[0]), "cited_work": None, "citing_paper": _paper(f"2603.{n:05d}", day),
            "reference_index": n % 5 + 1, "source": "pdf_text", "source_observed_at": day}})
        seq = len(facts) + 1
        facts.append(Fact(seq, event.kind, event.subject, event.effective_at, event.effective_key,
                          f"2026-04-02T00:{seq // 60:02d}:{seq % 60:02d}.000000Z", event.payload))
    facts += [Fact(len(facts) + i + 1, *f[1:]) for i, f in enumerate(facts_of(
        [("counted", 9, 2, False), ("withdrawn", 3, 3, False), ("notice", 2, 4, True), ("resolution", 2, 5, False)]))]
    record = build_record(PAPER, facts, AS_OF)
    assert len(record["inbound"]) == 100 and record["coverage"][2]["denominator"] > 100
    check_paths(facts)
