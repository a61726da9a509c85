"""A deterministic generator of realistic ledgers.

Many papers; inbound citation counts with a long tail (a few papers beyond the page cap of 100); outbound
reference lists; resolutions that change over time; repeated standing-notice sweeps. Every paper's facts
are appended in the order a publishing service would learn them. `probe` papers have a fixed shape in
every ledger size, so one record of the same size can be rebuilt from a small and a large ledger.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from ledger.model.events import (
    CITATION_OBSERVED,
    NOTICE_CHECKED,
    PAPER_SNAPSHOT,
    RESOLUTION_RECORDED,
    SOURCE_CHECKED,
    Event,
    make_event,
)

START = datetime(2026, 1, 1, tzinfo=UTC)
PROBE = "2999.00001"  # 60 inbound, 40 outbound, 3 sweeps: the same record in every ledger
STATES = ["verified_exact", "verified_fuzzy", "unresolved", "parse_uncertain", "malformed_identifier", "metadata_mismatch"]


def _ts(rng_or_offset: float) -> str:
    return (START + timedelta(seconds=rng_or_offset)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _paper_events(arxiv_id: str, inbound: int, outbound: int, sweeps: int, rng: random.Random, t0: float) -> Iterator[Event]:
    t = t0
    me = {"arxiv_id": arxiv_id, "snapshot_observed_at": _ts(t), "title": f"Paper {arxiv_id}", "version": 1}
    yield make_event(PAPER_SNAPSHOT, {"arxiv_id": arxiv_id, "latest_version": 1, "primary_category": "cs.DC",
                                      "snapshot_observed_at": _ts(t), "title": f"Paper {arxiv_id}"})
    observations = []
    for ref in range(outbound):
        t += rng.uniform(1, 60)
        oid = f"{arxiv_id}/out/{ref}"
        citation = {"cited_paper": None, "cited_work": {"title": f"Reference {ref} of {arxiv_id}", "year": 2024},
                    "citing_paper": me, "reference_index": ref + 1, "source": "pdf_text", "source_observed_at": _ts(t)}
        observations.append(oid)
        yield make_event(CITATION_OBSERVED, {"citation": citation, "observation_id": oid})
    for n in range(inbound):
        t += rng.uniform(1, 600)
        oid = f"{arxiv_id}/in/{n}"
        citing = {"arxiv_id": f"3{n % 1000:03d}.{rng.randrange(100000):05d}", "snapshot_observed_at": _ts(t),
                  "title": f"Citing paper {n}", "version": 1}
        citation = {"cited_paper": me, "cited_work": {"pith_arxiv_id": arxiv_id, "title": None},
                    "citing_paper": citing, "reference_index": rng.randrange(1, 80), "source": "pdf_text",
                    "source_observed_at": _ts(t)}
        observations.append(oid)
        yield make_event(CITATION_OBSERVED, {"citation": citation, "observation_id": oid})
    for oid in observations:  # first resolution, and for some a later change
        t += rng.uniform(1, 30)
        yield make_event(RESOLUTION_RECORDED, {"observation_id": oid, "resolution": {
            "observed_at": _ts(t), "resolver_source": None, "status": "unresolved"}})
        if rng.random() < 0.3:
            t += rng.uniform(100, 10000)
            yield make_event(RESOLUTION_RECORDED, {"observation_id": oid, "resolution": {
                "observed_at": _ts(t), "resolver_source": "raw_fallback", "status": rng.choice(STATES)}})
    for _ in range(sweeps):
        t += 86400
        receipts = [{"observed_at": _ts(t), "source": "crossref"}, {"observed_at": _ts(t - 5), "source": "retraction_watch"}]
        for receipt in receipts:
            yield make_event(SOURCE_CHECKED, {"observed_at": receipt["observed_at"], "paper": arxiv_id,
                                              "source": receipt["source"]})
        for oid in observations:
            notice = {"events": [], "observation": f"No event found in the named queried sources as of {_ts(t)}.",
                      "reason": None, "source_receipts": receipts, "state": "measured"}
            yield make_event(NOTICE_CHECKED, {"observation_id": oid, "standing_notice": notice})


def _papers(seed: int) -> Iterator[list[Event]]:
    """Every paper's events, the probe paper first, without end; deterministic for a seed."""
    rng = random.Random(seed)
    yield list(_paper_events(PROBE, 60, 40, 3, random.Random(1), 0.0))
    n = 0
    while True:
        n += 1
        # Long tail: most papers have a handful of inbound citations, a few have hundreds.
        inbound = min(int(rng.paretovariate(1.2)) - 1, 400)
        outbound = rng.randrange(5, 40)
        sweeps = rng.randrange(1, 3)
        yield list(_paper_events(f"2{n // 100000:03d}.{n % 100000:05d}", inbound, outbound, sweeps, rng,
                                 rng.uniform(0, 200 * 86400)))


def generate(total: int, seed: int = 7) -> list[Event]:
    """About `total` events (exactly `total`, cut at the end), deterministic for a seed."""
    events: list[Event] = []
    papers = _papers(seed)
    while len(events) < total:
        events.extend(next(papers))
    return events[:total]


def generate_papers(count: int, seed: int = 7) -> list[Event]:
    """Every event of the first `count` papers (the probe paper among them), deterministic for a seed."""
    papers = _papers(seed)
    return [event for _ in range(count) for event in next(papers)]
