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

This module only dispatches: each section is measured and written by the module of its job (whole.py,
appends.py, sizes.py, pg_writers.py, index_costs.py), and the sections other benchmarks wrote are kept.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.appends import appends_section
from benchmarks.common import HERE, SYNCHRONOUS, Report, gate, kept_section, replace_section, run_main
from benchmarks.disk import SECTION_BEGIN as DISK_BEGIN
from benchmarks.disk import SECTION_END as DISK_END
from benchmarks.fold import SECTION_BEGIN as FOLD_BEGIN
from benchmarks.fold import SECTION_END as FOLD_END
from benchmarks.index_costs import INDEX_BEGIN, INDEX_END, index_section
from benchmarks.monitor import SECTION_BEGIN as MONITOR_BEGIN
from benchmarks.monitor import SECTION_END as MONITOR_END
from benchmarks.observe_costs import SECTION_BEGIN as OBSERVE_BEGIN
from benchmarks.observe_costs import SECTION_END as OBSERVE_END
from benchmarks.pg_writers import postgres_section
from benchmarks.publish import SECTION_BEGIN as PUBLISH_BEGIN
from benchmarks.publish import SECTION_END as PUBLISH_END
from benchmarks.serve import SECTION_BEGIN, SECTION_END  # the serving figures share the file; kept
from benchmarks.site_days import SECTION_BEGIN as SITE_DAYS_BEGIN
from benchmarks.site_days import SECTION_END as SITE_DAYS_END
from benchmarks.sizes import sizes_section
from benchmarks.whole import whole_commands

# Figures of earlier runs, moved out of the README with their dates: kept when a run rewrites the file.
ARCHIVE = ("<!-- figures formerly in the README: begin -->", "<!-- figures formerly in the README: end -->")


def command_line() -> argparse.ArgumentParser:
    """The command line of `python -m benchmarks.run`."""
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
    return parser


def main(argv: list[str] | None = None) -> int:
    """Measure, print and write the results file: every section, or the whole commands or the index alone.

    Raises:
        GateError: when a correctness gate fails (run_main prints it as one line).
    """
    args = command_line().parse_args(argv)
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
    say = Report()
    try:
        sections(args, folder, say)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    kept = (kept_section(args.out, SECTION_BEGIN, SECTION_END) + kept_section(args.out, PUBLISH_BEGIN, PUBLISH_END)
            + kept_section(args.out, MONITOR_BEGIN, MONITOR_END) + kept_section(args.out, OBSERVE_BEGIN, OBSERVE_END)
            + kept_section(args.out, SITE_DAYS_BEGIN, SITE_DAYS_END)
            + kept_section(args.out, FOLD_BEGIN, FOLD_END) + kept_section(args.out, DISK_BEGIN, DISK_END)
            + kept_section(args.out, *ARCHIVE))
    Path(args.out).write_text("\n".join(say.lines) + "\n" + kept)
    return 0


def sections(args: argparse.Namespace, folder: Path, say: Report) -> None:
    """Every section of the full run in order, into `say`, the targets' table after them."""
    say(f"# Benchmark results\n\nRun {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {os.cpu_count()} "
        f"cores, Python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}, synchronous={SYNCHRONOUS}, "
        f"medians of {args.reps} repetitions. Command: `python -m benchmarks.run{' --million' if args.million else ''}"
        f"{' --postgres URL' if args.postgres else ''}`.\n")
    whole_commands(args, folder, say, say.target)
    if not args.only_whole:
        appends_section(args.reps, folder, say, say.target)
        sizes_section([10_000, 100_000] + ([1_000_000] if args.million else []), args.reps, folder, say, say.target)
        if args.postgres:
            postgres_section(args.postgres, args.reps, folder, say, say.target)
    say("## Targets\n")
    say("| target | ratio | met |\n|---|---|---|")
    for name, ok, detail in say.verdicts:
        say(f"| {name} | {detail} | {'reported' if ok is None else 'yes' if ok else 'NO'} |")
    say("\nCorrectness gates passed: chains verify, sequence numbers contiguous, every row present, no lock errors.")
    if not args.only_whole:
        say()
        say.lines.append(index_section(args.reps, folder).rstrip("\n"))  # it printed its lines itself


if __name__ == "__main__":
    run_main(main)
