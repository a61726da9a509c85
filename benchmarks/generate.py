"""A deterministic generator of realistic ledgers.

Many papers; inbound citation counts with a long tail (a few papers beyond the page cap of 100); outbound
reference lists; resolutions that change over time; repeated standing-notice sweeps. Every paper's facts
are appended in the order a publishing service would learn them. `probe` papers have a fixed shape in
every ledger size, so one record of the same size can be rebuilt from a small and a large ledger.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ledger.model.events import (
    CITATION_OBSERVED,
    MEASUREMENTS_CHECKED,
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


def generate(total: int, seed: int = 7, realistic: bool = False) -> list[Event]:
    """About `total` events (exactly `total`, cut at the end), deterministic for a seed; `realistic`: the events
    of `realistic_papers`, the size of real ones (the default keeps the short events every test pins)."""
    events: list[Event] = []
    papers = realistic_papers(seed) if realistic else _papers(seed)
    while len(events) < total:
        events.extend(next(papers))
    return events[:total]


def generate_papers(count: int, seed: int = 7, realistic: bool = False) -> list[Event]:
    """Every event of the first `count` papers (the probe paper among them), deterministic for a seed;
    `realistic` as for `generate`."""
    papers = realistic_papers(seed) if realistic else _papers(seed)
    return [event for _ in range(count) for event in next(papers)]


# -- realistic events: the sizes of seed 004's, per kind -------------------------------------------------------
# `generate` and `generate_papers` above keep their short "Paper X" events byte for byte: tests/vectors and the
# other benchmarks' published figures are made from them. The events below are the size real ones are
# (tests/fixtures/seed_004_2407.20018.json taken apart): full paper blocks with their dates, titles of real
# length and vocabulary, UUID observation ids, resolver sources, notices with their sentences and receipts.
# Each paper's facts come from a random stream of its own (seed, number), so a 10M-event corpus is written
# paper by paper, never held, and a later day's events can cite any earlier paper again.
LEAD = ["Efficient", "Scalable", "Robust", "Adaptive", "Distributed", "Sparse", "Federated", "Provable", "Fast",
        "Hierarchical", "Contrastive", "Multimodal", "Self-Supervised", "Bayesian", "Differentiable", "Causal",
        "Low-Rank", "Quantized", "Asynchronous", "Memory-Efficient", "Communication-Efficient", "Stochastic"]
TOPIC = ["Training of Large Language Models", "Graph Neural Networks", "Mixture-of-Experts Inference",
         "Diffusion Models", "Pipeline Parallelism", "Retrieval-Augmented Generation", "Vision Transformers",
         "Reinforcement Learning from Human Feedback", "Speculative Decoding", "Key-Value Cache Compression",
         "Gradient Compression", "Neural Architecture Search", "Optimizer State Sharding", "Attention Kernels",
         "Quantum Error Correction", "Dark Matter Halos", "Protein Structure Prediction", "Time Series Forecasting"]
SETTING = ["on Distributed Infrastructures", "with Latency SLO Guarantees", "at Scale", "on Commodity Hardware",
           "under Heterogeneous Networks", "for Edge Devices", "in the Wild", "with Bounded Staleness",
           "across Data Centers", "without All-Reduce", "on Accelerator Clusters", "for Scientific Computing"]
TAIL = [": A Survey", ": Theory and Practice", ": An Empirical Study", ": Lessons Learned", ": A Benchmark",
        ": Bugs and Testing Practices", "", "", "", ""]
METHOD = ["Activation Checkpointing", "Optimal Transport", "Token Pruning", "Curriculum Sampling",
          "Tensor Decomposition", "Learned Indexes", "Zero-Bubble Scheduling", "Spectral Clustering"]
VENUE = ["Proceedings of the 29th Symposium on Operating Systems Principles", "Advances in Neural Information "
         "Processing Systems", "International Conference on Machine Learning", "USENIX Symposium on Networked "
         "Systems Design and Implementation", "Proceedings of the VLDB Endowment", "Physical Review Letters",
         "Journal of Machine Learning Research", "IEEE Transactions on Parallel and Distributed Systems"]
CATEGORY = ["cs.DC", "cs.LG", "cs.CL", "cs.CV", "cs.AI", "stat.ML", "quant-ph", "astro-ph.CO", "q-bio.BM"]
OUTCOMES = [("unresolved", None)] * 12 + [("verified_fuzzy", "raw_fallback")] * 7 + [
    ("verified_exact", "arxiv_id"), ("verified_exact", "local_arxiv"), ("parse_uncertain", "raw_fallback"),
    ("metadata_mismatch", "raw_fallback"), ("malformed_identifier", None)]
SWEPT = "%Y-%m-%dT%H:%M:%S.%f+00:00"  # the standing-source sweeps write their times this way (seed 004)
PER_MONTH = 24_000  # arXiv's new papers a month: ids 2101.00001, ... 2101.24000, 2102.00001, ...


def realistic_id(n: int) -> str:
    """The n-th generated paper's arXiv id (n >= 1), 24,000 a month from January 2021."""
    month, number = divmod(n - 1, PER_MONTH)
    return f"{21 + month // 12:02d}{month % 12 + 1:02d}.{number + 1:05d}"


def _title(rng: random.Random) -> str:
    """About 80 characters, as seed 004's titles are."""
    name = f"{''.join(rng.choice('ABCDEFGHKLMNOPRSTVZ') for _ in range(rng.randrange(3, 7)))}: " if rng.random() < 0.4 else ""
    how = f" via {rng.choice(METHOD)}" if rng.random() < 0.5 else ""
    return f"{name}{rng.choice(LEAD)} {rng.choice(TOPIC)}{how} {rng.choice(SETTING)}{rng.choice(TAIL)}"


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _at(t: float, form: str = "%Y-%m-%dT%H:%M:%S.%fZ") -> str:
    return (START + timedelta(seconds=t)).strftime(form)


def paper_block(arxiv_id: str, rng: random.Random, seen: float) -> dict:
    """A paper as a citation carries it: id, version, title and dates, seen at `seen` (seconds after START)."""
    yymm = arxiv_id[:4]
    clock = f"{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}"
    submitted = f"20{yymm[:2]}-{yymm[2:]}-{rng.randrange(1, 29):02d}T{clock}Z" if "01" <= yymm[2:] <= "12" else \
        _at(-rng.uniform(30, 900) * 86400, "%Y-%m-%dT%H:%M:%SZ")  # the probe's 2999: no such month
    return {"arxiv_id": arxiv_id, "last_updated": submitted, "snapshot_observed_at": _at(seen),
            "submitted_at": submitted, "title": _title(rng), "version": rng.choice((1, 1, 1, 2))}


def identity(seed: int, n: int) -> tuple[dict, random.Random]:
    """The n-th paper's own block, the same whenever it is asked for, and the stream of the rest of its facts."""
    rng = random.Random(f"{seed}/{n}")
    me = paper_block(PROBE if n == 0 else realistic_id(n), rng, rng.uniform(0, 200 * 86400))
    return me, rng


def _outbound(me: dict, ref: int, rng: random.Random, t: float) -> dict:
    year = rng.randrange(2012, 2026)
    known = rng.random() < 0.3  # an arXiv paper the resolver can name
    cited = paper_block(f"{year % 100:02d}{rng.randrange(1, 13):02d}.{rng.randrange(1, 24000):05d}", rng, t) if known else None
    title = _title(rng)
    work = {"arxiv_id": cited["arxiv_id"] if cited else None, "doi": f"10.{rng.randrange(1000, 9999)}/{_uuid(rng)[:13]}",
            "metadata_source": rng.choice(("crossref", "openalex", "pdf_text")), "pith_arxiv_id": None,
            "snapshot_observed_at": _at(t), "title": f"{title}. In {rng.choice(VENUE)}, {year}",
            "venue": rng.choice(VENUE), "work_id": f"W{rng.randrange(10**9, 10**10)}", "year": year}
    return {"cited_paper": cited, "cited_work": work, "citing_paper": me, "reference_index": ref,
            "source": "pdf_text", "source_observed_at": _at(t)}


def inbound_citation(me: dict, rng: random.Random, t: float) -> Iterator[Event]:
    """One new paper citing `me` at `t`: its observation and its first resolution."""
    oid, citing = _uuid(rng), paper_block(realistic_id(rng.randrange(1, 10**6)), rng, t + rng.uniform(60, 3600))
    work = {"arxiv_id": None, "doi": None, "metadata_source": None, "pith_arxiv_id": me["arxiv_id"],
            "snapshot_observed_at": _at(t), "title": None if rng.random() < 0.5 else
            f"{me['title'].lower()}.arXiv preprint arXiv:{me['arxiv_id']},", "venue": None, "work_id": None,
            "year": int(me["submitted_at"][:4]) if rng.random() < 0.7 else None}
    citation = {"cited_paper": me, "cited_work": work, "citing_paper": citing, "reference_index": rng.randrange(1, 80),
                "source": "pdf_text", "source_observed_at": _at(t)}
    yield make_event(CITATION_OBSERVED, {"citation": citation, "observation_id": oid})
    yield make_event(RESOLUTION_RECORDED, {"observation_id": oid, "resolution": {
        "observed_at": _at(t), "resolver_source": None, "status": "unresolved"}})


def _notice(oid: str, rng: random.Random, receipts: list[dict], at: str) -> Event:
    if rng.random() < 0.45:  # the cited work has no canonical link: nothing could be checked (seed 004)
        notice = {"events": [], "reason": "canonical_work_link_unavailable", "source_receipts": [], "state": "unavailable"}
        return make_event(NOTICE_CHECKED, {"observation_id": oid, "standing_notice": notice}, effective_at=at)
    found = [{"date": at[:10], "source": "crossref", "type": rng.choice(("correction", "retraction"))}] \
        if rng.random() < 0.01 else []
    sentence = "Events found in the named queried sources" if found else "No event found in the named queried sources"
    notice = {"events": found, "observation": f"{sentence} as of {receipts[0]['observed_at']}.", "reason": None,
              "source_receipts": receipts, "state": "measured"}
    return make_event(NOTICE_CHECKED, {"observation_id": oid, "standing_notice": notice})


def realistic_paper(seed: int, n: int, inbound: int, outbound: int, sweeps: int) -> Iterator[Event]:
    """Every fact of the n-th paper (0: the probe), in the order a publishing service learns them."""
    me, rng = identity(seed, n)
    t = instant_seconds(me["snapshot_observed_at"])
    yield make_event(PAPER_SNAPSHOT, {"arxiv_id": me["arxiv_id"], "last_updated": me["last_updated"],
                                      "latest_version": me["version"], "primary_category": rng.choice(CATEGORY),
                                      "snapshot_observed_at": me["snapshot_observed_at"],
                                      "submitted_at": me["submitted_at"], "title": me["title"]})
    observations = []
    for ref in range(outbound):
        t += rng.uniform(1, 60)
        oid = _uuid(rng)
        observations.append(oid)
        yield make_event(CITATION_OBSERVED, {"citation": _outbound(me, ref + 1, rng, t), "observation_id": oid})
        status, resolver = rng.choice(OUTCOMES)
        yield make_event(RESOLUTION_RECORDED, {"observation_id": oid, "resolution": {
            "observed_at": _at(t + rng.uniform(1, 30)), "resolver_source": resolver, "status": status}})
    for _ in range(inbound):
        t += rng.uniform(1, 600)
        cited = list(inbound_citation(me, rng, t))
        observations.append(cited[0].subject)
        yield from cited
    if rng.random() < 0.3:  # an arXiv reference count measured now and then (seed 004: one, empty)
        t += rng.uniform(1, 3600)
        counted = [{"citation_count": len(observations), "observed_at": _at(t), "source": "arxiv_reference"}] \
            if rng.random() < 0.5 else []
        yield make_event(MEASUREMENTS_CHECKED, {"measurements": counted, "observed_at": _at(t), "paper": me["arxiv_id"],
                                                "source": "arxiv_reference"})
    for _ in range(sweeps):
        t += 86400
        receipts = [{"observed_at": _at(t, SWEPT), "source": "crossref"},
                    {"observed_at": _at(t - 5.474, SWEPT), "source": "retraction_watch"}]
        for receipt in receipts:
            yield make_event(SOURCE_CHECKED, {"observed_at": receipt["observed_at"], "paper": me["arxiv_id"],
                                              "source": receipt["source"]})
        for oid in observations:
            yield _notice(oid, rng, receipts, receipts[0]["observed_at"])


def realistic_papers(seed: int = 7, first: int = 0) -> Iterator[list[Event]]:
    """Every paper's events from the `first`-th on (0: the probe, 60 inbound, 40 outbound, 3 sweeps, the same
    in every ledger), one list a paper, without end; deterministic for a seed."""
    if first == 0:
        yield list(realistic_paper(seed, 0, 60, 40, 3))
    n = max(first, 1)
    while True:
        shape = random.Random(f"{seed}/{n}/shape")  # of its own: a paper's shape does not depend on those before
        inbound = min(int(shape.paretovariate(1.2)) - 1, 400)
        yield list(realistic_paper(seed, n, inbound, shape.randrange(5, 40), shape.randrange(1, 3)))
        n += 1


def daily_events(seed: int, papers: int, count: int, day: str = "2027-05-31") -> list[Event]:
    """About `count` new facts on one day for a ledger of the first `papers` realistic papers: new inbound
    citations of random earlier papers, each with its resolution (the day's change `publish` and `monitor`
    follow)."""
    rng = random.Random(f"{seed}/day/{day}")
    t = instant_seconds(f"{day}T00:00:00Z")
    events: list[Event] = []
    while len(events) < count:
        me, _ = identity(seed, rng.randrange(papers))
        t += rng.uniform(1, 60)
        events.extend(inbound_citation(me, rng, t))
    return events


def instant_seconds(stamp: str) -> float:
    """Seconds after START of a timestamp the generator wrote."""
    return (datetime.fromisoformat(stamp.replace("Z", "+00:00")) - START).total_seconds()


def event_line(event: Event) -> bytes:
    """The event line `ledger import` reads: canonical {effective_at, kind, payload} (keys in order; the payload
    is canonical already)."""
    return b'{"effective_at":"%s","kind":"%s","payload":%s}\n' % (event.effective_at.encode(), event.kind.encode(),
                                                                 event.payload)


def write_realistic(path: Path, total: int, seed: int = 7) -> tuple[int, int]:
    """Write the first papers' realistic events, whole papers, until at least `total`, as event lines to
    `path`, streaming; (events, papers) written."""
    events = papers = 0
    with path.open("wb") as out:
        for paper in realistic_papers(seed):
            out.write(b"".join(event_line(e) for e in paper))
            events, papers = events + len(paper), papers + 1
            if events >= total:
                return events, papers
    raise AssertionError("unreachable: the papers never end")
