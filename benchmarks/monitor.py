"""`ledger monitor` following a published site: the first run over the whole log, a run with nothing new, and
a run after one fact, each the whole command in a fresh process; anchored on `ledger import` of the same
log's exported entries (the monitor's own append step, alone) in the same run.

    .venv/bin/python -m benchmarks.monitor --papers 1000          # ~100,000 events
    .venv/bin/python -m benchmarks.monitor --papers 20            # quicker
    .venv/bin/python -m benchmarks.monitor --entries 1024000 --cache /var/tmp/monbench   # the first run only

`--entries N` measures the first run alone, over a signed log of about N entries (the first papers of the
generator that make at least N events, ~100 an event each): its site, published once with a key, is kept in
`--cache` beside the ledger (a build of ~1M events and its publish take ~20 minutes), so a re-run only follows.

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

from benchmarks.common import AS_OF, HERE, command, compiled, gate, replace_section, run_main
from benchmarks.publish import ledger_of, one_fact

SECTION_BEGIN, SECTION_END = "<!-- benchmarks.monitor: begin -->", "<!-- benchmarks.monitor: end -->"
SECTION_TITLE = "## Following a published log (`benchmarks.monitor`)"
LARGE_BEGIN, LARGE_END = "<!-- benchmarks.monitor large: begin -->", "<!-- benchmarks.monitor large: end -->"
LARGE_TITLE = "## Following a large signed log: the first run's memory (`benchmarks.monitor --entries`)"
PER_PAPER = 100  # events per generated paper, about (1,000 papers: 100,094 events)


def follow(out: Path, folder: Path, state: Path | None = None, *options: str) -> tuple[float, int, dict]:
    seconds, stdout, rss = command(["monitor", str(out), "--verifier-key", str(folder / "ledger.vkey"), "--state",
                                    str(state or folder / "state"), "--json", *options])
    answer = json.loads(stdout)
    gate(answer.get("status") == "consistent", f"monitor: {answer}")
    return seconds, rss, answer


def site_of(papers: int, seed: int, cache: Path) -> tuple[Path, int]:
    """The folder a key-signed `publish` of the generator's first `papers` papers made, kept in `cache` with
    its `ledger.vkey` (built unless it is already: `done`, written last, says it is whole), and its events."""
    built = ledger_of(papers, seed, cache)
    site = cache / f"site-{papers}-seed{seed}"
    if not (site / "done").exists():
        shutil.rmtree(site, ignore_errors=True)
        site.mkdir(parents=True)
        made = subprocess.run([sys.executable, "-m", "ledger.cli", "keygen", "bench.example/ledger"], cwd=site,
                              capture_output=True, text=True)
        gate(made.returncode == 0, f"ledger keygen: {made.stderr}")
        db = site / "ledger.db"
        shutil.copy(built.db, db)
        command(["--db", str(db), "publish", str(site / "out"), "--as-of", AS_OF, "--key", str(site / "ledger.key")])
        db.unlink()
        (site / "done").write_text(str(built.events))
    return site, built.events


def large(args: argparse.Namespace) -> int:
    """The first run alone over a log of about `--entries` entries: its seconds and max RSS."""
    papers = -(-args.entries // PER_PAPER)
    site, events = site_of(papers, args.seed, Path(args.cache))
    state = Path(tempfile.mkdtemp(prefix="ledger-monitor-bench-"))
    try:
        compiled()
        seconds, rss, answer = follow(site / "out", site, state / "state", "--timeout", "7200")  # not the 600 s default
        gate(answer["new_entries"] == events, f"first run: {answer}")
    finally:
        shutil.rmtree(state, ignore_errors=True)
    lines = [LARGE_BEGIN, LARGE_TITLE, "",
             f"Command: `python -m benchmarks.monitor --entries {args.entries} --seed {args.seed} --cache DIR`, on 2 "
             f"cores. The log: {papers:,} papers, {events:,} entries, published once with a key (not timed). The "
             "row is the whole first `ledger monitor OUT --state S --json --timeout 7200` in a fresh process, from its start to its "
             "exit (every tile and bundle read and checked, the entries imported, every record rebuilt and "
             "compared):", "",
             "| entries | seconds | max RSS MB | answer |", "|---|---|---|---|",
             f"| {events:,} | {seconds:.1f} | {rss / 1024 / 1024:.0f} | {answer['status']}, "
             f"{answer['new_entries']:,} new, {answer['records']:,} records |", LARGE_END]
    print("\n".join(lines))
    replace_section(Path(args.out), "\n".join(lines), LARGE_BEGIN, LARGE_END)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--cache", default=None, help="folder keeping the built ledger (default: a temporary one)")
    parser.add_argument("--out", default=str(HERE / "RESULTS.md"))
    parser.add_argument("--entries", type=int, default=None,
                        help="measure the first run alone over a log of about this many entries (needs --cache)")
    args = parser.parse_args(argv)
    if args.entries is not None:
        gate(args.cache is not None, "--entries needs --cache DIR (the site of ~N entries is kept there)")
        return large(args)
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
