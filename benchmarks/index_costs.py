"""The paper index, measured: what keeping it costs the appends (paired, transaction by transaction), the
catch-up after a bulk import, `prove --paper` latency at 100,000 papers and proof sizes at 100,000 and
1,000,000 papers (the latter exact from the tree's shape, without building it).

Written by `python -m benchmarks.run` (or `--index` for this section alone) as one section of
benchmarks/RESULTS.md.
"""

from __future__ import annotations

import bisect
import os
import sqlite3
import statistics
import sys
import time
import uuid
from pathlib import Path

from benchmarks.common import SYNCHRONOUS, Report, gate, import_batch, percentile
from benchmarks.generate import generate
from ledger.log.chain import verify_entries
from ledger.storage.store import Store


def interleaved_appends(events, batch: int, every: int, folder: Path) -> tuple[float, float]:
    """Events/s of two ledgers fed the same events: one where the paper index is also kept at the head after
    every `every`-th transaction (`Store.keep_index`, as a server signing a checkpoint then would; timed with
    the appends), one with appends alone (appends never write the index). Their transactions interleave:
    transaction i of one ledger, then of the other, alternating which goes first, so a busy neighbour slows
    both alike. Each ledger's chain and sequence are checked afterwards, and the kept index root against its
    re-computation from the log."""
    from ledger.log.paper_index import index_of_log
    from ledger.storage.index_reads import root_at

    stores = {True: Store.create(str(folder / f"kept-{uuid.uuid4().hex}.db")),
              False: Store.create(str(folder / f"appends-{uuid.uuid4().hex}.db"))}
    spent = {True: 0.0, False: 0.0}
    for n, i in enumerate(range(0, len(events), batch)):
        for keep in ((True, False) if n % 2 == 0 else (False, True)):
            started = time.perf_counter()
            import_batch(stores[keep], events[i:i + batch])
            if keep and (n + 1) % every == 0:
                stores[True].keep_index(min(i + batch, len(events)))
            spent[keep] += time.perf_counter() - started
    stores[True].keep_index(len(events))  # untimed: the gate below checks the index of the whole log
    for keep, store in stores.items():
        entries = list(store.entries())
        gate([e.seq for e in entries] == list(range(1, len(events) + 1)), "interleaved: sequence not contiguous")
        gate(verify_entries(entries)[0] == len(events), "interleaved: chain does not verify")
        with store.reading() as cursor:
            roots = cursor.execute("SELECT COUNT(*) FROM index_roots").fetchone()[0]
            if keep:
                gate(root_at(cursor, len(events))[1] == index_of_log(entries, len(events)).root,
                     "interleaved: the kept index is not the log's")
        transactions = -(-len(events) // batch)
        gate(roots == (-(-transactions // every) if keep else 0), "interleaved: index roots")
        store.close()
    return len(events) / spent[True], len(events) / spent[False]


def _paper_id(n: int) -> str:
    """The arXiv-style id of generated paper number n (snapshots, and the proofs that look them up)."""
    return f"1{n // 100000:03d}.{n % 100000:05d}"


def snapshots(count: int, first: int = 0) -> list:
    """A paper.snapshot each for `count` papers: the cheapest way to a ledger of many papers."""
    from ledger.model.events import PAPER_SNAPSHOT, make_event

    return [make_event(PAPER_SNAPSHOT, {"arxiv_id": _paper_id(n), "latest_version": 1,
                                        "primary_category": "cs.DC", "snapshot_observed_at": _stamp(n),
                                        "title": f"Paper {n}"}) for n in range(first, first + count)]


def _stamp(n: int) -> str:
    return f"2026-{1 + n % 12:02d}-{1 + n % 28:02d}T{n % 24:02d}:{n % 60:02d}:{n // 60 % 60:02d}.{n % 1000000:06d}Z"


def index_proofs(path: Path, papers: int, reps: int) -> dict[str, float]:
    """A ledger of `papers` papers (one snapshot each, then the generated workload on top): the median and
    99th percentile latency of `prove --paper` (ledger.proofs.prove_paper: a snapshot, one statement per level
    of the index, the proof built) for papers in the index and papers not in it, each on a store opened
    afresh for the run, and the sizes of those proofs as `prove --paper --json` prints them."""
    import random

    from ledger.core.canonical import canonical
    from ledger.log.paper_index import index_root
    from ledger.services.proofs import prove_paper

    store = Store.create(str(path))
    events = snapshots(papers) + generate(10_000, seed=13)
    for i in range(0, len(events), 5000):
        import_batch(store, events[i:i + 5000])
    store.close()
    store = Store.open(str(path))  # the first checkpoint after a bulk import: the whole log into the index
    started = time.perf_counter()
    store.keep_index(len(events))
    catch_up = time.perf_counter() - started
    store.close()
    rng = random.Random(5)
    present = [_paper_id(n) for n in rng.sample(range(papers), 200)]
    absent = [f"7{n:03d}.{n:05d}" for n in range(200)]
    timings, sizes, depths = {"present": [], "absent": []}, [], []
    for _ in range(max(1, reps // 5)):
        store = Store.open(str(path))
        for kind, names in (("present", present), ("absent", absent)):
            for paper in names:
                started = time.perf_counter()
                proof = prove_paper(store, paper)
                timings[kind].append(time.perf_counter() - started)
                sizes.append(len(canonical(proof)) + 1)
                depths.append(len(proof["siblings"]))
                gate((proof["count"] > 0) == (kind == "present"), f"index proof of {paper}: wrong membership")
        store.close()
    gate(index_root({}) == bytes(32), "empty index root")
    return {"catch_up_events": len(events), "catch_up_s": catch_up,
            "present_median": statistics.median(timings["present"]), "present_p99": percentile(timings["present"], 0.99),
            "absent_median": statistics.median(timings["absent"]), "absent_p99": percentile(timings["absent"], 0.99),
            "size_median": statistics.median(sizes), "size_max": max(sizes), "depth_median": statistics.median(depths)}


def proof_shape(keys: list[bytes], name: str, tree_size: int) -> tuple[int, int, int]:
    """The exact size of a paper's index proof from the index's shape (its sorted keys): the proof's
    siblings are the subtrees beside the key's path down to where the key is alone (null where a subtree is
    empty), and hashes' values do not change a proof's length. (JSON bytes as `prove --paper --json` prints
    it for a paper with one event, binary bytes: 32 a non-empty sibling, a bit each for empty or not, the
    leaf's count and root; depth.)"""
    from ledger.core.canonical import canonical
    from ledger.log.paper_index import paper_key

    key = paper_key(name)
    value = int.from_bytes(key, "big")
    at = bisect.bisect_left(keys, key)
    shared = -1  # the longest prefix the key shares with another key: its neighbours in sorted order
    for other in (keys[at - 1] if at else None, keys[at + 1] if at + 1 < len(keys) else None):
        if other is not None:
            shared = max(shared, 256 - (value ^ int.from_bytes(other, "big")).bit_length())
    depth = shared + 1
    siblings = [None if not _beside(keys, value, d) else "ab" * 32 for d in range(depth)]
    proof = {"count": 1, "events_root": "ab" * 32, "index_root": "ab" * 32, "key": key.hex(), "neighbour": None,
             "paper": name, "siblings": siblings, "tree_size": tree_size}
    return len(canonical(proof)) + 1, 32 * sum(1 for s in siblings if s) + (depth + 7) // 8 + 8 + 32, depth


def _beside(keys: list[bytes], value: int, depth: int) -> bool:
    """Whether some key shares the first `depth` bits of the key `value` and differs from it at bit `depth`."""
    prefix = (value >> (255 - depth)) ^ 1
    lo, hi = prefix << (255 - depth), ((prefix + 1) << (255 - depth)) - 1
    at = bisect.bisect_left(keys, lo.to_bytes(32, "big"))
    return at < len(keys) and keys[at] <= hi.to_bytes(32, "big")


def proof_shapes(papers: int, sample: int = 2000) -> dict[str, float]:
    """Index proof sizes in an index of `papers` papers (`proof_shape`), over a sample of them."""
    import random

    from ledger.log.paper_index import paper_key

    names = [_paper_id(n) for n in range(papers)]
    keys = sorted(paper_key(name) for name in names)
    shapes = [proof_shape(keys, name, papers) for name in random.Random(9).sample(names, min(sample, papers))]
    return {"json_median": statistics.median(s[0] for s in shapes), "json_max": max(s[0] for s in shapes),
            "binary_median": statistics.median(s[1] for s in shapes), "binary_max": max(s[1] for s in shapes),
            "depth_median": statistics.median(s[2] for s in shapes), "depth_max": max(s[2] for s in shapes)}


INDEX_SECTION = "## The paper index (issue 15)"
INDEX_BEGIN, INDEX_END = "<!-- benchmarks.run --index: begin -->", "<!-- benchmarks.run --index: end -->"


def index_section(reps: int, folder: Path) -> str:
    """`--index`: what keeping the paper index costs (appends alone, and appends with the index kept at every
    head or every 10th, paired transaction by transaction; the catch-up after a bulk import), proof latency
    at 100k papers and proof sizes at 100k and 1M papers, as one section."""
    say = Report()
    workload = generate(10_000, seed=11)
    cases = ((100, 10, workload), (100, 1, workload), (1, 100, workload[:1_000]), (1, 1, workload[:1_000]))
    figures: dict[tuple[int, int], list[tuple[float, float]]] = {(b, e): [] for b, e, _ in cases}
    for _ in range(reps):
        for batch, every, events in cases:
            figures[(batch, every)].append(interleaved_appends(events, batch, every, folder))
    paired = {case: [kept / alone for kept, alone in runs] for case, runs in figures.items()}
    proofs = index_proofs(folder / "papers.db", 100_000, reps)
    shapes = {n: proof_shapes(n) for n in (100_000, 1_000_000)}
    say(INDEX_BEGIN)
    say(f"{INDEX_SECTION}\n")
    say(f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} (`python -m benchmarks.run`, or `--index` for "
        f"this section alone), {reps} repetitions, on {os.cpu_count()} cores. Python {sys.version.split()[0]}, SQLite "
        f"{sqlite3.sqlite_version}, synchronous={SYNCHRONOUS}.\n")
    say("An append never writes the paper index: it is kept at a tree size when a checkpoint, a proof or a bundle "
        "first needs it there (`Store.keep_index`: the events since the largest size already kept, added in "
        "one transaction holding the write lock on SQLite). So its cost falls on whoever signs "
        "checkpoints, as often as they sign them. Below, two ledgers fed the same generated workload, their "
        "transactions interleaved one by one (the order alternating): one only appends, the other also keeps "
        "the index at its head after every transaction (a checkpoint per transaction: the most it can cost) or "
        "after every 10th / 100th; the ratio is taken within each repetition. The keeping ledger's store appended "
        "the events itself, so its catch-ups take them from memory (`Store.keep_index`, at most 10,000 of them); "
        "the first row of the proofs' table reads them back from the log, as a catch-up by another process "
        "does.\n")
    say("| appends (SQLite, the generated workload) | appends and the index kept, events/s (median) | appends "
        "alone, events/s (median) | paired ratio, median (each repetition) |\n|---|---|---|---|")
    for batch, every, _ in cases:
        runs = figures[(batch, every)]
        kept = "every transaction" if every == 1 else f"every {every}th transaction"
        say(f"| {batch} event{'s' if batch > 1 else ''}/transaction, index kept after {kept} | "
            f"{statistics.median(r[0] for r in runs):,.0f} | {statistics.median(r[1] for r in runs):,.0f} | "
            f"{statistics.median(paired[(batch, every)]):.2f} ({', '.join(f'{r:.2f}' for r in paired[(batch, every)])}) |")
    say()
    proofs_table(proofs, shapes, say)
    index_targets(cases, paired, proofs, shapes, say)
    say(INDEX_END)
    return "\n".join(say.lines) + "\n"


def proofs_table(proofs: dict[str, float], shapes: dict[int, dict[str, float]], say) -> None:
    """The table of the index's proofs: the catch-up, latency at 100,000 papers, sizes at 100,000 and 1M."""
    say("| the index's proofs | figure |\n|---|---|")
    say(f"| the first checkpoint after a bulk import: the index kept at once for a log of "
        f"{proofs['catch_up_events']:,} events (100,000 papers) | {proofs['catch_up_s']:.1f} s, "
        f"{proofs['catch_up_events'] / proofs['catch_up_s']:,.0f} events/s |")
    say(f"| `prove --paper` at 100,000 papers (a SQLite file; each proof a snapshot and one statement per level), "
        f"a paper in the index: median / 99th percentile | {proofs['present_median'] * 1000:.3f} ms / "
        f"{proofs['present_p99'] * 1000:.3f} ms |")
    say(f"| the same, a paper not in the index (non-membership) | {proofs['absent_median'] * 1000:.3f} ms / "
        f"{proofs['absent_p99'] * 1000:.3f} ms |")
    say(f"| those proofs as printed (JSON): median / largest | {proofs['size_median']:,.0f} / {proofs['size_max']:,.0f} "
        f"bytes ({proofs['depth_median']:.0f} siblings, median) |")
    for n, shape in shapes.items():
        say(f"| index proof at {n:,} papers, exact sizes from the tree's shape (2,000 papers): JSON median / largest; "
            f"binary median / largest; siblings median / largest | {shape['json_median']:,.0f} / "
            f"{shape['json_max']:,.0f} bytes; {shape['binary_median']:,.0f} / {shape['binary_max']:,.0f} bytes; "
            f"{shape['depth_median']:.0f} / {shape['depth_max']} |")
    say()


def index_targets(cases, paired: dict, proofs: dict[str, float], shapes: dict[int, dict[str, float]], say) -> None:
    """The table of the index's targets: appends with the index kept, proof latency and size."""
    say("| target | figure | met |\n|---|---|---|")
    rows = [(f"appends with the paper index kept after every {every}th transaction vs appends alone, {batch} "
             f"event{'s' if batch > 1 else ''}/transaction (>= 0.8)", statistics.median(paired[(batch, every)]), True)
            for batch, every, _ in cases if every > 1]
    rows += [(f"the same, the index kept after every transaction, {batch} event{'s' if batch > 1 else ''}/transaction "
              "(reported: a checkpoint per transaction)", statistics.median(paired[(batch, every)]), False)
             for batch, every, _ in cases if every == 1]
    for name, ratio, held in rows:
        say(f"| {name} | {ratio:.2f} | {('yes' if ratio >= 0.8 else 'NO') if held else 'reported'} |")
    for name, value, ok in (
            ("index proof at 100,000 papers, median (< 1 ms)", f"{proofs['present_median'] * 1000:.3f} ms",
             proofs["present_median"] < 0.001),
            ("index proof at 1,000,000 papers, JSON, median (< 2 KB)", f"{shapes[1_000_000]['json_median']:,.0f} bytes",
             shapes[1_000_000]["json_median"] < 2048)):
        say(f"| {name} | {value} | {'yes' if ok else 'NO'} |")
