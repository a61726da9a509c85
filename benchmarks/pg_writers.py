"""Concurrent PostgreSQL writers: N processes appending through the real import path into one throwaway
schema, timed on one clock from the first "go" to the last writer's last append; the schema is dropped after.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

from benchmarks.common import HERE, gate, paired
from benchmarks.generate import generate
from ledger.log.chain import verify_entries
from ledger.storage.store import Store

PG_WRITER = """
import pickle, sys, time
from benchmarks.common import import_batch
from ledger.storage.store import Store
store = Store.open(sys.argv[1])
events = pickle.load(open(sys.argv[2], "rb"))
store.head()  # connected
print("ready", flush=True)
sys.stdin.readline()  # the clock starts when every writer is ready: interpreter start-up is not measured
for i in range(0, len(events), 100):
    import_batch(store, events[i:i + 100])
print(time.clock_gettime(time.CLOCK_MONOTONIC), flush=True)  # and stops at the last append, not at exit
"""


def postgres_writers(url: str, events, writers: int, folder: Path) -> float:
    import pickle

    import psycopg

    schema = f"bench_{uuid.uuid4().hex[:10]}"
    plain = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    location = f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"
    try:
        Store.create(location).close()
        share = len(events) // writers
        files = []
        for w in range(writers):
            path = folder / f"pg-{w}.pickle"
            path.write_bytes(pickle.dumps(events[w * share:(w + 1) * share]))
            files.append(path)
        procs = [subprocess.Popen([sys.executable, "-c", PG_WRITER, location, str(f)], cwd=HERE.parent,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for f in files]
        gate(all(p.stdout.readline() == b"ready\n" for p in procs), "PostgreSQL writer did not start")
        # One clock for every process (CLOCK_MONOTONIC is system-wide): from the first "go" to the last writer's
        # last append. Timing until the processes exit counted their interpreters' teardown, 0.16 s for one
        # writer and 0.9 s for eight on 2 cores: more writers looked slower than they append.
        started = time.clock_gettime(time.CLOCK_MONOTONIC)
        for p in procs:
            p.stdin.write(b"go\n")
            p.stdin.flush()
        outcomes = [p.communicate() for p in procs]
        gate(all(p.returncode == 0 for p in procs), f"PostgreSQL writer failed: {[e for _, e in outcomes]}")
        elapsed = max(float(out) for out, _ in outcomes) - started
        store = Store.open(location)
        entries = list(store.entries())
        gate([e.seq for e in entries] == list(range(1, share * writers + 1)), "PostgreSQL: sequence not contiguous")
        gate(verify_entries(entries)[0] == share * writers, "PostgreSQL: chain does not verify")
        store.close()
        return share * writers / elapsed
    finally:
        with psycopg.connect(plain, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")



def postgres_section(url: str, reps: int, folder: Path, say, target) -> None:
    """1, 2, 4 and 8 concurrent writers, `reps` rounds of each in turn, and their targets."""
    say("## PostgreSQL, batched (100 events/transaction)\n")
    events = generate(20_000, seed=5)
    counts = (1, 2, 4, 8)
    figures: dict[str, list[float]] = {f"pg{n}": [] for n in counts}
    for _ in range(reps):
        for n in counts:
            figures[f"pg{n}"].append(postgres_writers(url, events, n, folder))
    say("| concurrent writer processes | events/s (median) | vs 1 writer (paired) |\n|---|---|---|")
    for n in counts:
        say(f"| {n} | {statistics.median(figures[f'pg{n}']):,.0f} | {paired(figures, f'pg{n}', 'pg1'):.2f} |")
    say()
    ratio = paired(figures, "pg4", "pg1")
    target("PostgreSQL 4 writers vs 1 (>= 0.8)", ratio >= 0.8, f"{ratio:.2f}")
    # Appends are serialized: past the writers it takes to keep the lock busy, more writers queue. The lock
    # collapses throughput if the rate keeps falling as they are added.
    plateau = paired(figures, "pg8", "pg2")
    target("PostgreSQL 8 writers vs 2: a plateau, not a collapse (>= 0.8)", plateau >= 0.8, f"{plateau:.2f}")
