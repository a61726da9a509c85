"""`ledger verify` against `ledger verify --full` on one ledger, each the whole command in a fresh process, in
turn in the same run: events/s, max RSS and their ratio.

    .venv/bin/python -m benchmarks.verify_full --events 1000000          # builds it: minutes
    .venv/bin/python -m benchmarks.verify_full --ledger L.db             # a ledger built before (its size)
    .venv/bin/python -m benchmarks.verify_full --events 100000 --reps 3  # quicker

The ledger is the generator's (`benchmarks.generate`, as in the sizes table of `benchmarks.run`), its paper
index kept at its head (as `checkpoint --paper-index` keeps it; not timed), so `--full` re-computes an index
of the whole log. Gates: both commands exit 0 and name the head. The figures go to benchmarks/RESULTS.md, in a
section of their own.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.common import HERE, build_ledger, command, compiled, gate, replace_section, run_main
from benchmarks.generate import generate
from ledger.storage.store import Store

SECTION_BEGIN, SECTION_END = "<!-- benchmarks.verify_full: begin -->", "<!-- benchmarks.verify_full: end -->"
SECTION_TITLE = "## `verify` and `verify --full` (`benchmarks.verify_full`)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--ledger", default=None, help="a ledger built before (default: build one of --events)")
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--out", default=str(HERE / "RESULTS.md"))
    args = parser.parse_args(argv)
    compiled()
    if args.ledger is None:
        path = Path(tempfile.mkdtemp(prefix="ledger-verify-bench-")) / "ledger.db"
        store = build_ledger(generate(args.events, seed=args.events), path)
    else:
        path = Path(args.ledger)
        store = Store.open(str(path))
    size = store.head()[0]
    store.keep_index(size)
    store.close()
    runs: dict[str, list[tuple[float, int]]] = {"plain": [], "full": []}
    for _ in range(args.reps):  # in turn: the machine's load falls on both alike
        for name, extra in (("plain", []), ("full", ["--full"])):
            seconds, stdout, rss = command(["--db", str(path), "verify", *extra])
            gate(stdout.startswith(f"ok: {size} events".encode()), f"verify {extra}: {stdout[:200]!r}")
            runs[name].append((seconds, rss))
    plain = statistics.median(s for s, _ in runs["plain"])
    full = statistics.median(s for s, _ in runs["full"])
    mb = 1024 * 1024
    lines = [SECTION_BEGIN, SECTION_TITLE, "",
             f"Command: `python -m benchmarks.verify_full --events {size}`, on 2 cores. The ledger: {size:,} events "
             "(SQLite file), its paper index kept at its head. Each row is the whole command in a fresh process, "
             f"from its start to its exit, the two in turn, median of {args.reps}:", "",
             "| command | includes | seconds | events/s | max RSS MB |", "|---|---|---|---|---|",
             f"| `verify` | every entry hash and chain link | {plain:.1f} | {size / plain:,.0f} | "
             f"{max(r for _, r in runs['plain']) / mb:.0f} |",
             f"| `verify --full` | the same, and every event's derived columns, the paper links, the Merkle nodes, "
             f"every paper index node and root, the latest index re-computed from the log | {full:.1f} | "
             f"{size / full:,.0f} | {max(r for _, r in runs['full']) / mb:.0f} |", "",
             f"`--full` / `verify`: {full / plain:.2f} of the time. Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
             SECTION_END]
    print("\n".join(lines))
    replace_section(Path(args.out), "\n".join(lines), SECTION_BEGIN, SECTION_END)
    return 0


if __name__ == "__main__":
    run_main(main)
