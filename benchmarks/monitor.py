"""`ledger monitor` following a published site: the first run over the whole log, a run with nothing new, and
a run after one fact, each the whole command in a fresh process; anchored on `ledger import` of the same
log's exported entries (the monitor's own append step, alone) in the same run.

    .venv/bin/python -m benchmarks.monitor --papers 1000          # ~100,000 events
    .venv/bin/python -m benchmarks.monitor --papers 20            # quicker

The ledger is the publish benchmark's (`benchmarks.publish.ledger_of`, every event of the generator's first N
papers), published once with a key (not timed). Gates: each run's `--json` says consistent, with the new
entries and the records compared that the step implies. The figures go to benchmarks/RESULTS.md, in a
section of their own.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.publish import AS_OF, ledger_of, one_fact
from benchmarks.run import gate, replace_section, run_main
from benchmarks.whole import command, compiled

HERE = Path(__file__).parent
SECTION_BEGIN, SECTION_END = "<!-- benchmarks.monitor: begin -->", "<!-- benchmarks.monitor: end -->"
SECTION_TITLE = "## Following a published log (`benchmarks.monitor`)"


def follow(out: Path, folder: Path) -> tuple[float, int, dict]:
    seconds, stdout, rss = command(["monitor", str(out), "--verifier-key", str(folder / "ledger.vkey"), "--state",
                                    str(folder / "state"), "--json"])
    answer = json.loads(stdout)
    gate(answer.get("status") == "consistent", f"monitor: {answer}")
    return seconds, rss, answer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--cache", default=None, help="folder keeping the built ledger (default: a temporary one)")
    parser.add_argument("--out", default=str(HERE / "RESULTS.md"))
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="ledger-monitor-bench-"))
    try:
        compiled()
        made = subprocess.run([sys.executable, "-m", "ledger.cli", "keygen", "bench.example/ledger"], cwd=folder,
                              capture_output=True, text=True)
        gate(made.returncode == 0, f"ledger keygen: {made.stderr}")
        built = ledger_of(args.papers, args.seed, Path(args.cache) if args.cache else folder / "cache")
        db, out, key = folder / "ledger.db", folder / "out", str(folder / "ledger.key")
        shutil.copy(built.db, db)
        command(["--db", str(db), "publish", str(out), "--as-of", AS_OF, "--key", key])
        _, exported, _ = command(["--db", str(db), "export"])
        (folder / "log.jsonl").write_bytes(exported)
        command(["--db", str(folder / "anchor.db"), "init"])
        anchor, _, anchor_rss = command(["--db", str(folder / "anchor.db"), "import", str(folder / "log.jsonl")])
        records = sum(1 for f in (out / "paper").rglob("citation-record.json") if "as-of" not in f.parts)
        first = follow(out, folder)
        gate(first[2]["new_entries"] == built.events and first[2]["records"] == records,
             f"first run: {first[2]} ({records} records published)")
        again = follow(out, folder)
        gate(again[2]["new_entries"] == 0 and again[2]["records"] == 0, f"nothing new: {again[2]}")
        command(["--db", str(db), "import", str(one_fact(folder))])
        command(["--db", str(db), "publish", str(out), "--as-of", AS_OF, "--key", key])
        fact = follow(out, folder)
        gate(fact[2]["new_entries"] == 1 and fact[2]["records"] >= 1, f"one fact: {fact[2]}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    mb = 1024 * 1024
    rows = [
        ("anchor", "`ledger import log.jsonl` of the site's log, exported, into a new ledger (start-up, decoding, "
                   "every hash re-computed, append, tree)", anchor, anchor_rss),
        ("a", "first `ledger monitor OUT --state S`: every tile and bundle read, checked, the entries imported, "
              "every paper's record rebuilt and compared, every paper index note checked", first[0], first[1]),
        ("b", "the same again, nothing new: the checkpoint, the partial tiles of its size", again[0], again[1]),
        ("c", "after one fact (imported and published, not timed): one new entry, its papers' records", fact[0], fact[1]),
    ]
    lines = [SECTION_BEGIN, SECTION_TITLE, "",
             f"Command: `python -m benchmarks.monitor --papers {args.papers} --seed {args.seed}`, on 2 cores, one "
             f"process at a time. The ledger: {args.papers:,} papers, {built.events:,} events (SQLite file). Each "
             "row is the whole command in a fresh process, from its start to its exit:", "",
             "| step | includes | seconds | max RSS MB |", "|---|---|---|---|"]
    lines += [f"| {step} | {what} | {seconds:.2f} | {rss / mb:.0f} |" for step, what, seconds, rss in rows]
    lines += ["", f"Ratios in this run: a / anchor {first[0] / anchor:.2f}; b / a {again[0] / first[0]:.3f}; "
                  f"c / a {fact[0] / first[0]:.3f}. Correctness gates passed.", SECTION_END]
    print("\n".join(lines))
    replace_section(Path(args.out), "\n".join(lines), SECTION_BEGIN, SECTION_END)
    return 0


if __name__ == "__main__":
    run_main(main)
