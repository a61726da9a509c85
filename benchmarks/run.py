"""The ledger against what a Python user would pick instead, measured as ratios in one run.

    .venv/bin/python -m benchmarks.run                 # 10k and 100k events (a few minutes on 2 cores)
    .venv/bin/python -m benchmarks.run --million       # adds the 1M-event ledger
    .venv/bin/python -m benchmarks.run --postgres URL  # adds 1, 2, 4 and 8 concurrent PostgreSQL writers
    .venv/bin/python -m benchmarks.run --index         # the paper index's figures alone, as their own section

Every figure is the median of --reps repetitions (at least 5). Contenders run interleaved, on the same
file system with the same `synchronous` setting, and every comparison is the median of the ratios taken
within each repetition: these machines are noisy, absolute numbers from another run mean little.
Correctness gates (the chain verifies, sequence numbers are contiguous, every row is there, no lock error)
fail the run; performance targets are reported as met or missed. The latest output is kept in
benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.appends import floor_append, footprint, ours_append, peer_append, sql_alone, without_tree
from benchmarks.common import HERE, SYNCHRONOUS, build_ledger, gate, kept_section, replace_section, run_main
from benchmarks.generate import generate
from benchmarks.index_costs import INDEX_BEGIN, INDEX_END, index_section
from benchmarks.monitor import SECTION_BEGIN as MONITOR_BEGIN
from benchmarks.monitor import SECTION_END as MONITOR_END
from benchmarks.publish import SECTION_BEGIN as PUBLISH_BEGIN
from benchmarks.publish import SECTION_END as PUBLISH_END
from benchmarks.serve import SECTION_BEGIN, SECTION_END  # the serving figures share the file; kept
from benchmarks.pg_writers import postgres_writers
from benchmarks.sizes import corpus_scale, peak_memory, rebuild_latencies, verify_speed
from benchmarks.whole import replay_command, whole_commands


# -- the report ------------------------------------------------------------------------------------------
# Figures of earlier runs, moved out of the README with their dates: kept when a run rewrites the file.
ARCHIVE = ("<!-- figures formerly in the README: begin -->", "<!-- figures formerly in the README: end -->")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--million", action="store_true", help="also build and measure a 1M-event ledger")
    parser.add_argument("--postgres", default=os.environ.get("LEDGER_TEST_POSTGRES"))
    parser.add_argument("--out", default=str(HERE / "RESULTS.md"))
    parser.add_argument("--papers", type=int, default=1010, help="papers in the whole-command corpus")
    parser.add_argument("--records", type=int, default=1000, help="of them, published records imported")
    parser.add_argument("--only-whole", action="store_true", help="only the whole-command section (a quick check)")
    parser.add_argument("--index", action="store_true", help="only the paper index's figures, written as their own "
                        "section of --out (the rest of the file is kept)")
    args = parser.parse_args(argv)
    gate(args.reps >= 5, "--reps must be at least 5")
    os.environ["LEDGER_SQLITE_SYNCHRONOUS"] = SYNCHRONOUS
    folder = Path(tempfile.mkdtemp(prefix="ledger-bench-", dir=HERE.parent))
    if args.index:
        try:
            section = index_section(args.reps, folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        replace_section(Path(args.out), section.rstrip("\n"), INDEX_BEGIN, INDEX_END)
        return 0
    lines, verdicts = [], []

    def say(line: str = "") -> None:
        print(line, flush=True)
        lines.append(line)

    def target(name: str, ok: bool | None, detail: str) -> None:
        verdicts.append((name, ok, detail))

    try:
        say(f"# Benchmark results\n\nRun {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {os.cpu_count()} "
            f"cores, Python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}, synchronous={SYNCHRONOUS}, "
            f"medians of {args.reps} repetitions. Command: `python -m benchmarks.run{' --million' if args.million else ''}"
            f"{' --postgres URL' if args.postgres else ''}`.\n")
        whole_commands(args, folder, say, target)
        if not args.only_whole:
            workload = generate(10_000, seed=11)
            single = workload[:1_000]
            say("## Appends (SQLite file, same file system, same synchronous setting)\n")
            say("| path | events/s (median) |\n|---|---|")
            contenders = ("ours100", "notree100", "peer100", "floor100", "sql100", "again100", "ours1", "peer1")
            figures: dict[str, list[float]] = {k: [] for k in contenders}
            for _ in range(args.reps):  # interleaved, so a slow moment hurts every contender alike
                figures["ours100"].append(ours_append(workload, 100, folder))
                with without_tree():
                    figures["notree100"].append(ours_append(workload, 100, folder))
                figures["peer100"].append(peer_append(workload, 100, folder))
                figures["floor100"].append(floor_append(workload, 100, folder))
                figures["sql100"].append(sql_alone(workload, 100, folder))
                figures["again100"].append(ours_append(workload, 100, folder, again=True))
                figures["ours1"].append(ours_append(single, 1, folder))
                figures["peer1"].append(peer_append(single, 1, folder))
            med = {k: statistics.median(v) for k, v in figures.items()}

            def paired(ours: str, theirs: str) -> float:
                """The median of the ratios measured side by side in each repetition: steadier than a ratio of
                medians when the machine's speed drifts during the run."""
                return statistics.median(a / b for a, b in zip(figures[ours], figures[theirs]))

            names = {"ours100": "ledger import path, 100 events/transaction (dedupe + chain + Merkle tree + guards)",
                     "notree100": "the same without keeping the Merkle tree",
                     "peer100": "eventsourcing SQLiteApplicationRecorder, 100 events/transaction",
                     "floor100": "plain sqlite3.executemany, same rows and table, no hashing, 100/transaction",
                     "sql100": "our transactions' SQL alone: an import's inserts replayed, rows precomputed, guards on",
                     "again100": "ledger, the same batches imported again (every fact present: refused, then looked up)",
                     "ours1": "ledger, 1 event/transaction (durable commit each)",
                     "peer1": "eventsourcing, 1 event/transaction"}
            for key, name in names.items():
                say(f"| {name} | {med[key]:,.0f} |")
            disk = footprint(workload, folder)
            say(f"\nOn disk, per event: ledger {disk['ours']:,.0f} bytes (events, fact index, paper links, Merkle "
                f"nodes), eventsourcing {disk['peer']:,.0f}, plain rows {disk['floor']:,.0f}. Importing batches whose "
                f"facts are all present runs at {paired('again100', 'ours100'):.2f} of a first import's speed. The database "
                f"work of our appends alone (an import's inserts replayed with every row precomputed, the gap-free "
                f"guard on) runs at {paired('sql100', 'peer100'):.2f} of the peer's whole append; our import path at "
                f"{paired('ours100', 'sql100'):.2f} of its own SQL.")
            say()
            ratio = paired("ours100", "peer100")
            target("batched import vs the eventsourcing recorder alone (target retired by issue 16: reported)", None,
                   f"{ratio:.2f}")
            for name, ours, theirs, least in (("single-event appends vs peer", "ours1", "peer1", 0.9),
                                               ("import vs executemany floor", "ours100", "floor100", 0.5),
                                               ("appends keeping the Merkle tree vs without it (reported)", "ours100",
                                                "notree100", 0.8)):
                ratio = paired(ours, theirs)
                target(f"{name} (>= {least})", ratio >= least, f"{ratio:.2f}")

            sizes = [10_000, 100_000] + ([1_000_000] if args.million else [])
            say("## Ledgers of several sizes\n")
            say("| events | build s | probe rebuild ms (median) | SQL statements | events read | verify events/s "
                "| tight loop events/s | replay-all + verify: traced peak MB | max RSS MB | `replay --out --jobs 2` records/s "
                "| its largest process, max RSS MB |\n|---|---|---|---|---|---|---|---|---|---|---|")
            results, paths = {}, {}
            for size in sizes:
                events = generate(size, seed=size)
                started = time.perf_counter()
                paths[size] = folder / f"ledger-{size}.db"
                store = build_ledger(events, paths[size])
                built = time.perf_counter() - started
                del events
                verify_rate, tight_rate, verify_ratio = verify_speed(store, size, args.reps)
                store.close()
                papers, n, traced, rss = peak_memory(paths[size])
                gate(n == size, "peak run: wrong event count")
                replay_rate, _, replay_rss = replay_command(paths[size], 2, folder, papers)
                results[size] = dict(built=built, verify=verify_rate, tight=tight_rate, verify_ratio=verify_ratio,
                                     traced=traced, rss=rss, papers=papers, replay=replay_rate, replay_rss=replay_rss)
            rounds = rebuild_latencies(paths, args.reps)  # after every ledger is built: interleaved, paired
            for size, result in results.items():
                latency = statistics.median(t for t, _, _ in rounds[size])
                statements, read = max(s for _, s, _ in rounds[size]), rounds[size][0][2]
                result.update(latency=latency, statements=statements)
                say(f"| {size:,} | {result['built']:.1f} | {latency * 1000:.2f} | {statements} | {read} | "
                    f"{result['verify']:,.0f} | {result['tight']:,.0f} | {result['traced'] / 1e6:.1f} | {result['rss'] / 1e6:.0f} | "
                    f"{result['replay']:,.0f} | {result['replay_rss'] / 1e6:.0f} |")
            say()
            large = results[sizes[-1]]
            corpus_scale(paths[sizes[-1]], sizes[-1], large["papers"], args.reps, folder, say, target)
            target("rebuild statements (<= 6)", all(r["statements"] <= 6 for r in results.values()),
                   str(max(r["statements"] for r in results.values())))
            latency_ratio = statistics.median(a[0] / b[0] for a, b in zip(rounds[sizes[-1]], rounds[sizes[0]]))
            target(f"rebuild latency {sizes[-1]:,} vs {sizes[0]:,} events (<= 1.3)", latency_ratio <= 1.3,
                   f"{latency_ratio:.2f}")
            target("verify vs tight recompute loop (>= 0.5)", min(r["verify_ratio"] for r in results.values()) >= 0.5,
                   f"{min(r['verify_ratio'] for r in results.values()):.2f}")
            ref = results[100_000]
            target(f"peak memory {sizes[-1]:,} vs 100,000 events (<= 1.3), traced",
                   large["traced"] / ref["traced"] <= 1.3, f"{large['traced'] / ref['traced']:.2f}")
            target(f"peak memory {sizes[-1]:,} vs 100,000 events (<= 1.3), RSS",
                   large["rss"] / ref["rss"] <= 1.3, f"{large['rss'] / ref['rss']:.2f}")
            target(f"peak memory of `replay --out --jobs 2` {sizes[-1]:,} vs 100,000 events (<= 1.3), RSS",
                   large["replay_rss"] / ref["replay_rss"] <= 1.3, f"{large['replay_rss'] / ref['replay_rss']:.2f}")

            if args.postgres:
                say("## PostgreSQL, batched (100 events/transaction)\n")
                pg_events = generate(20_000, seed=5)
                counts = (1, 2, 4, 8)
                for _ in range(args.reps):
                    for n in counts:
                        figures.setdefault(f"pg{n}", []).append(postgres_writers(args.postgres, pg_events, n, folder))
                say("| concurrent writer processes | events/s (median) | vs 1 writer (paired) |\n|---|---|---|")
                for n in counts:
                    say(f"| {n} | {statistics.median(figures[f'pg{n}']):,.0f} | {paired(f'pg{n}', 'pg1'):.2f} |")
                say()
                ratio = paired("pg4", "pg1")
                target("PostgreSQL 4 writers vs 1 (>= 0.8)", ratio >= 0.8, f"{ratio:.2f}")
                # Appends are serialized: past the writers it takes to keep the lock busy, more writers queue. The
                # lock collapses throughput if the rate keeps falling as they are added.
                plateau = paired("pg8", "pg2")
                target("PostgreSQL 8 writers vs 2: a plateau, not a collapse (>= 0.8)", plateau >= 0.8, f"{plateau:.2f}")
        say("## Targets\n")
        say("| target | ratio | met |\n|---|---|---|")
        for name, ok, detail in verdicts:
            say(f"| {name} | {detail} | {'reported' if ok is None else 'yes' if ok else 'NO'} |")
        say("\nCorrectness gates passed: chains verify, sequence numbers contiguous, every row present, no lock errors.")
        if not args.only_whole:
            say()
            lines.append(index_section(args.reps, folder).rstrip("\n"))  # it printed its lines itself
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    kept = (kept_section(args.out, SECTION_BEGIN, SECTION_END) + kept_section(args.out, PUBLISH_BEGIN, PUBLISH_END)
            + kept_section(args.out, MONITOR_BEGIN, MONITOR_END) + kept_section(args.out, *ARCHIVE))
    Path(args.out).write_text("\n".join(lines) + "\n" + kept)
    return 0


if __name__ == "__main__":
    run_main(main)
