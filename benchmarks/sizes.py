"""Ledgers of several sizes (10k, 100k, optionally 1M events): the probe record's rebuild latency and the
statements it sends, `verify` against a tight recompute loop, peak memory of replaying every paper, and
`replay --out` with 1 and 2 jobs at corpus scale beside the machine's own ceiling.

Written by `python -m benchmarks.run` as the section "Ledgers of several sizes" of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import AS_OF, HERE, build_ledger, gate
from benchmarks.generate import PROBE, generate
from benchmarks.whole import ceiling, replay_command
from ledger.core.times import When
from ledger.log.chain import GENESIS, entry_hash, link, verify_entries
from ledger.projections.record import build_record
from ledger.storage.store import Store


def rebuild(store: Store) -> tuple[float, int, int]:
    """Seconds to read and fold the probe record once; the statements it sent and the events it read."""
    store.statements = 0
    started = time.perf_counter()
    facts = store.paper_facts(PROBE)
    record = build_record(PROBE, facts, When.at(AS_OF))
    elapsed = time.perf_counter() - started
    gate(len(record["inbound"]) == 60 and len(record["outbound"]) == 40, "probe record has the wrong shape")
    return elapsed, store.statements, len(facts)


def rebuild_latencies(paths: dict[int, Path], reps: int) -> dict[int, list[tuple[float, int, int]]]:
    """The probe record rebuilt from every ledger in turn, at least 30 times: each round is one pairing."""
    stores = {size: Store.open(str(path)) for size, path in paths.items()}
    rounds = {size: [] for size in paths}
    for _ in range(max(reps, 30)):
        for size, store in stores.items():
            rounds[size].append(rebuild(store))
    for store in stores.values():
        store.close()
    return rounds


def verify_speed(store: Store, n: int, reps: int) -> tuple[float, float, float]:
    """Events/s of `verify` from the store and of the tight recompute loop over rows already in memory
    (medians), and the median of their ratio, each repetition running both."""
    rows = [(e.seq, e.kind, e.effective_at, e.recorded_at, e.payload) for e in store.entries()]
    verify_rates, tight_rates = [], []
    for _ in range(reps):
        started = time.perf_counter()
        head = verify_entries(store.entries())
        verify_rates.append(n / (time.perf_counter() - started))
        gate(head[0] == n, "verify: wrong head")
        started = time.perf_counter()
        chain = GENESIS
        for row in rows:
            chain = link(chain, entry_hash(*row))
        tight_rates.append(n / (time.perf_counter() - started))
        gate(chain == head[1], "tight loop disagrees with verify")
    ratio = statistics.median(v / t for v, t in zip(verify_rates, tight_rates))
    return statistics.median(verify_rates), statistics.median(tight_rates), ratio


PEAK_SCRIPT = """
import sys, tracemalloc
from ledger.log.chain import verify_entries
from ledger.core.times import When
from ledger.services.replay import records_as_of
from ledger.storage.store import Store
store = Store.open(sys.argv[1])
tracemalloc.start()
papers = sum(1 for _ in records_as_of(store, When(sys.argv[2], sys.argv[3])))
n = verify_entries(store.entries())[0]
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over fork and exec from the (large) parent process.
hwm = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(papers, n, tracemalloc.get_traced_memory()[1], hwm)
"""


def peak_memory(path: Path) -> tuple[int, int, int, int]:
    """Replay every paper and verify the chain in a fresh process: (papers, events, traced peak, max RSS)."""
    out = subprocess.run([sys.executable, "-c", PEAK_SCRIPT, str(path), AS_OF, "2027-06-01T00:00:00.000000Z"],
                         capture_output=True, text=True, check=True, cwd=HERE.parent)
    papers, n, traced, rss = map(int, out.stdout.split())
    return papers, n, traced, rss


def corpus_scale(ledger: Path, size: int, papers: int, reps: int, folder: Path, say, target) -> None:
    """`replay --out` of every paper of the largest ledger with 1 and 2 jobs, paired in each repetition, beside
    the machine's own ceiling measured in the same repetitions."""
    runs = []
    for _ in range(reps):
        one, _, rss1 = replay_command(ledger, 1, folder, papers)
        two, _, rss2 = replay_command(ledger, 2, folder, papers)
        runs.append((one, two, ceiling(), rss1, rss2))
    ratios = [two / one for one, two, *_ in runs]
    say(f"`ledger replay --as-of D --out DIR`, every paper ({papers:,}) of the {size:,}-event ledger (start-up, rebuild, "
        "digests, files), 1 and 2 jobs in turn in each repetition, and in the same repetitions the machine's own "
        "ceiling (2 processes of pure Python arithmetic vs 1):\n")
    say("| jobs | records/s (median) | largest process, max RSS MB |\n|---|---|---|")
    for jobs, index in ((1, 0), (2, 1)):
        say(f"| {jobs} | {statistics.median(r[index] for r in runs):,.0f} | {max(r[3 + index] for r in runs) / 1e6:,.0f} |")
    say(f"\n2 jobs vs 1, each repetition: {', '.join(f'{x:.2f}' for x in ratios)}; the ceiling: "
        f"{', '.join(f'{r[2]:.2f}' for r in runs)}.\n")
    ratio = statistics.median(ratios)
    target(f"replay --out --jobs 2 vs --jobs 1, every paper ({papers:,}) of the {size:,}-event ledger (>= 1.6)",
           ratio >= 1.6, f"{ratio:.2f}")



def measured(size: int, reps: int, folder: Path) -> tuple[Path, dict]:
    """A ledger of `size` generated events, built in `folder`, and its figures but the rebuild's."""
    events = generate(size, seed=size)
    started = time.perf_counter()
    path = folder / f"ledger-{size}.db"
    store = build_ledger(events, path)
    built = time.perf_counter() - started
    del events
    verify_rate, tight_rate, verify_ratio = verify_speed(store, size, reps)
    store.close()
    papers, n, traced, rss = peak_memory(path)
    gate(n == size, "peak run: wrong event count")
    replay_rate, _, replay_rss = replay_command(path, 2, folder, papers)
    return path, dict(built=built, verify=verify_rate, tight=tight_rate, verify_ratio=verify_ratio, traced=traced,
                      rss=rss, papers=papers, replay=replay_rate, replay_rss=replay_rss)


def sizes_section(sizes: list[int], reps: int, folder: Path, say, target) -> None:
    """The sizes table for ledgers of `sizes` events (at least two, smallest first), `replay --out` at corpus
    scale on the largest, and their targets."""
    say("## Ledgers of several sizes\n")
    say("| events | build s | probe rebuild ms (median) | SQL statements | events read | verify events/s "
        "| tight loop events/s | replay-all + verify: traced peak MB | max RSS MB | `replay --out --jobs 2` records/s "
        "| its largest process, max RSS MB |\n|---|---|---|---|---|---|---|---|---|---|---|")
    results, paths = {}, {}
    for size in sizes:
        paths[size], results[size] = measured(size, reps, folder)
    rounds = rebuild_latencies(paths, reps)  # after every ledger is built: interleaved, paired
    for size, result in results.items():
        latency = statistics.median(t for t, _, _ in rounds[size])
        statements, read = max(s for _, s, _ in rounds[size]), rounds[size][0][2]
        result.update(latency=latency, statements=statements)
        say(f"| {size:,} | {result['built']:.1f} | {latency * 1000:.2f} | {statements} | {read} | "
            f"{result['verify']:,.0f} | {result['tight']:,.0f} | {result['traced'] / 1e6:.1f} | {result['rss'] / 1e6:.0f} | "
            f"{result['replay']:,.0f} | {result['replay_rss'] / 1e6:.0f} |")
    say()
    corpus_scale(paths[sizes[-1]], sizes[-1], results[sizes[-1]]["papers"], reps, folder, say, target)
    sizes_targets(results, rounds, target)


def sizes_targets(results: dict[int, dict], rounds: dict[int, list], target) -> None:
    """The verdicts on the statements, latency, verify and memory targets: the largest ledger against the
    smallest (latency) and the second (memory: 100,000 events in the full run)."""
    sizes = list(results)
    large, ref = results[sizes[-1]], results[sizes[1]]
    target("rebuild statements (<= 6)", all(r["statements"] <= 6 for r in results.values()),
           str(max(r["statements"] for r in results.values())))
    latency_ratio = statistics.median(a[0] / b[0] for a, b in zip(rounds[sizes[-1]], rounds[sizes[0]]))
    target(f"rebuild latency {sizes[-1]:,} vs {sizes[0]:,} events (<= 1.3)", latency_ratio <= 1.3,
           f"{latency_ratio:.2f}")
    target("verify vs tight recompute loop (>= 0.5)", min(r["verify_ratio"] for r in results.values()) >= 0.5,
           f"{min(r['verify_ratio'] for r in results.values()):.2f}")
    target(f"peak memory {sizes[-1]:,} vs {sizes[1]:,} events (<= 1.3), traced",
           large["traced"] / ref["traced"] <= 1.3, f"{large['traced'] / ref['traced']:.2f}")
    target(f"peak memory {sizes[-1]:,} vs {sizes[1]:,} events (<= 1.3), RSS",
           large["rss"] / ref["rss"] <= 1.3, f"{large['rss'] / ref['rss']:.2f}")
    target(f"peak memory of `replay --out --jobs 2` {sizes[-1]:,} vs {sizes[1]:,} events (<= 1.3), RSS",
           large["replay_rss"] / ref["replay_rss"] <= 1.3, f"{large['replay_rss'] / ref['replay_rss']:.2f}")
