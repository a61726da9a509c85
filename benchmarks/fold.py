"""`ledger replay --as-of D --out DIR` of every paper, one job: today's command, this tree's, and their floor.

    .venv/bin/python -m benchmarks.fold                          # 300 papers (~30,000 events), 3 alternations
    .venv/bin/python -m benchmarks.fold --papers 2000 --reps 5   # the figures in RESULTS.md
    .venv/bin/python -m benchmarks.fold --venv /var/tmp/today    # keep today's venv for the next run

Three rows, each a whole command in a fresh process (process start to exit: wall clock, and CPU time, user +
system, which other work on a shared machine moves less), on one corpus, in turn in every repetition:

- today: `ledger replay` of TODAY (91eb5e8), installed non-editable into a venv of its own from a detached
  worktree of that commit, reading a ledger built by its own `ledger init` and `ledger import` of the corpus's
  event lines (another branch may change the schema);
- new: this tree's `ledger replay`, on a ledger built the same way by this tree's `ledger import`;
- floor: `python -c` with sqlite3 alone: for each paper (the list and the record sizes given), the statement(s)
  `Cursor.paper_facts` runs (captured from it, as the driver gets them), every row fetched, then as many bytes as the paper's record written to a file
  of the same name in an empty folder. No parse, no fold, no digest, no ledger module imported.

Gates: today's and the new folder hold the same files, byte for byte; the floor wrote the same names and
sizes, and fetched as many rows as the new ledger holds facts of those papers. `--profile` adds the top of
cProfile's table (by own time) for a replay of each version. The figures go to benchmarks/RESULTS.md, in a
section of their own that `benchmarks.run` keeps.
"""

from __future__ import annotations

import argparse
import os
import pstats
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

from benchmarks.common import AS_OF, HERE, compiled, gate, paired, replace_section, run_main
from benchmarks.corpus import write_corpus
from ledger.storage.store import Store

TODAY = "91eb5e824d7dd876f20cc73012f4e7f91c32d599"
SECTION_BEGIN, SECTION_END = "<!-- benchmarks.fold: begin -->", "<!-- benchmarks.fold: end -->"
SECTION_TITLE = "## Rebuilding every record (`benchmarks.fold`)"
ROWS = {
    "today": "`ledger replay --out`, 1 job, 91eb5e8 (start-up, paper list, reads, fold, digests, files)",
    "new": "`ledger replay --out`, 1 job, this tree (the same steps)",
    "floor": "floor: `python -c` + sqlite3, the same statement per paper, every row fetched, the record's size "
             "written to each file (start-up, reads, files)",
}
# Run by the wrapper of `timed`: the command's wall clock, CPU time and peak RSS, not the wrapper's.
_WRAPPER = ("import resource, subprocess, sys, time\n"
            "started = time.perf_counter()\n"
            "done = subprocess.run(sys.argv[1:], capture_output=True)\n"
            "elapsed = time.perf_counter() - started\n"
            "use = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
            "sys.stderr.buffer.write(done.stderr)\n"
            "sys.stdout.buffer.write(done.stdout)\n"
            "print(elapsed, use.ru_utime + use.ru_stime, use.ru_maxrss * 1024, done.returncode, file=sys.stderr)\n")
# The floor: what any replay must do, and nothing else (argv: database, manifest, folder).
FLOOR = ("import json, os, sqlite3, sys\n"
         "db, manifest, out = sys.argv[1:4]\n"
         "connection = sqlite3.connect(f'file:{db}?mode=ro', uri=True)\n"
         "rows = 0\n"
         "for name, size, statements in json.load(open(manifest)):\n"
         "    for sql, params in statements:\n"
         "        rows += len(connection.execute(sql, params).fetchall())\n"
         "    with open(os.path.join(out, name), 'wb') as file:\n"
         "        file.write(b'x' * size)\n"
         "print(rows)\n")


def timed(argv: list[str]) -> tuple[float, float, int, bytes]:
    """(wall seconds, CPU seconds, peak RSS in bytes, stdout) of one command in a fresh process.

    Raises:
        GateError: when it exits other than 0 or writes to stderr.
    """
    # Not run from the tree: its `ledger/` folder would stand in front of an installed (today's) package.
    done = subprocess.run([sys.executable, "-c", _WRAPPER, *argv], capture_output=True, cwd=tempfile.gettempdir())
    *errors, summary = done.stderr.decode().strip().splitlines()
    wall, cpu, rss, code = summary.split()
    gate(code == "0" and not errors, f"{' '.join(argv[:6])}...: exit {code}: {errors[-3:]}")
    return float(wall), float(cpu), int(rss), done.stdout


def today_python(venv: Path) -> Path:
    """The interpreter of a venv holding TODAY's ledger, installed non-editable from a detached worktree of
    that commit; built when `venv` has none (kept: the next run with the same `--venv` reuses it).

    Raises:
        GateError: when the worktree or the install fails.
    """
    python = venv / "bin" / "python"
    if python.exists():
        return python
    source = Path(tempfile.mkdtemp(prefix="fold-today-")) / "src"
    steps = [["git", "-C", str(HERE.parent), "worktree", "add", "--detach", str(source), TODAY],
             [sys.executable, "-m", "venv", str(venv)],
             [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(source)]]
    try:
        for step in steps:
            done = subprocess.run(step, capture_output=True)
            gate(done.returncode == 0, f"{' '.join(step[:4])}...: {done.stderr.decode()[-300:]}")
    finally:
        subprocess.run(["git", "-C", str(HERE.parent), "worktree", "remove", "--force", str(source)], capture_output=True)
        shutil.rmtree(source.parent, ignore_errors=True)
    return python


def ledger_of(python: Path, lines: Path, db: Path) -> None:
    """A ledger at `db` made by `python`'s own `ledger init` and `ledger import` of the event lines."""
    for args in (["init"], ["import", str(lines)]):
        timed([str(python), "-m", "ledger.cli", "--db", str(db), *args])


def emptied(out: Path) -> None:
    """`out` removed, and every file system write flushed: the last command's dirty pages and deleted files
    must not be written back during the next one's timing."""
    shutil.rmtree(out, ignore_errors=True)
    os.sync()


def replay(python: Path, db: Path, out: Path) -> list[float]:
    """[wall, CPU, RSS] of `ledger replay --as-of AS_OF --out` into an empty folder `out`."""
    emptied(out)
    wall, cpu, rss, _ = timed([str(python), "-m", "ledger.cli", "--db", str(db), "replay", "--as-of", AS_OF,
                               "--out", str(out)])
    return [wall, cpu, rss]


def floor(db: Path, manifest: Path, out: Path, rows: int) -> list[float]:
    """[wall, CPU, RSS] of the floor into an empty folder `out`.

    Raises:
        GateError: when it fetched another number of rows than `rows`.
    """
    emptied(out)
    out.mkdir()
    wall, cpu, rss, said = timed([sys.executable, "-c", FLOOR, str(db), str(manifest), str(out)])
    gate(int(said) == rows, f"floor: fetched {int(said)} rows, the ledger holds {rows} facts of its papers")
    return [wall, cpu, rss]


def same_files(ours: Path, theirs: Path) -> int:
    """How many files two replays wrote, once every one of them is the same, byte for byte, in both.

    Raises:
        GateError: naming the first file that differs or is missing from one of them.
    """
    names = sorted(p.name for p in ours.iterdir())
    gate(names == sorted(p.name for p in theirs.iterdir()), f"{ours} and {theirs}: not the same file names")
    for name in names:
        gate((ours / name).read_bytes() == (theirs / name).read_bytes(), f"{name}: not the same bytes")
    return len(names)


def statements_of(store: Store, paper: str) -> tuple[list[list], int]:
    """The statements `Cursor.paper_facts` runs for `paper`, as the driver gets them ([SQL, parameters] each),
    and how many facts it read: the floor runs exactly these, whatever storage's SQL becomes."""
    seen: list[list] = []
    with store.reading() as cursor:
        run = cursor.execute

        def spy(sql: str, params: tuple | list = ()):
            seen.append([store.backend.sql(sql), list(params)])
            return run(sql, params)

        cursor.execute = spy  # type: ignore[method-assign]
        try:
            facts = cursor.paper_facts(paper)
        finally:
            del cursor.execute  # the class's own again: the store keeps this cursor
    return seen, len(facts)


def manifest_of(db: Path, out: Path, path: Path) -> int:
    """Write the floor's list (file name, record size, the paper's statements) of the records in `out`, and
    return how many facts the ledger at `db` holds of those papers."""
    store, rows, listed = Store.open(str(db)), 0, []
    try:
        for file in sorted(out.iterdir()):
            statements, count = statements_of(store, file.name.removesuffix(".json"))
            listed.append([file.name, file.stat().st_size, statements])
            rows += count
    finally:
        store.close()
    path.write_bytes(orjson.dumps(listed))
    return rows


def top_of_profile(python: Path, db: Path, out: Path, folder: Path, count: int = 12) -> list[str]:
    """The top `count` rows of cProfile's table, by own time, of one replay by `python`."""
    shutil.rmtree(out, ignore_errors=True)
    stats = folder / "replay.prof"
    subprocess.run([str(python), "-m", "cProfile", "-o", str(stats), "-m", "ledger.cli", "--db", str(db), "replay",
                    "--as-of", AS_OF, "--out", str(out)], capture_output=True, check=True, cwd=folder)
    table = pstats.Stats(str(stats))
    total = table.total_tt  # type: ignore[attr-defined]
    rows = sorted(table.stats.items(), key=lambda item: -item[1][2])[:count]  # type: ignore[attr-defined]
    lines = [f"| own s | calls | function (of {total:.2f} s under the profiler) |", "|---|---|---|"]
    for (file, line, name), (_, calls, own, _, _) in rows:
        where = f"{Path(file).parent.name}/{Path(file).name}:{line}" if line else "built-in"
        lines.append(f"| {own:.3f} | {calls:,} | `{name}` ({where}) |")
    return lines


def measure(args: argparse.Namespace, folder: Path, say) -> None:
    """Every row, `args.reps` times in turn, and the ratios, into `say`."""
    old = Path(args.today_python) if args.today_python else today_python(Path(args.venv or folder / "venv"))
    lines, _, _, events, _ = write_corpus(folder / "corpus", args.papers, seed=args.seed)
    dbs = {"today": folder / "today.db", "new": folder / "new.db"}
    pythons = {"today": old, "new": Path(sys.executable)}
    for name, db in dbs.items():
        ledger_of(pythons[name], lines, db)
    outs = {name: folder / f"out-{name}" for name in ROWS}
    replay(pythons["new"], dbs["new"], outs["new"])
    rows = manifest_of(dbs["new"], outs["new"], folder / "manifest.json")
    figures: dict[str, list[list[float]]] = {name: [] for name in ROWS}
    for _ in range(args.reps):
        for name in ROWS:
            figures[name].append(floor(dbs["new"], folder / "manifest.json", outs[name], rows) if name == "floor"
                                 else replay(pythons[name], dbs[name], outs[name]))
        files = same_files(outs["new"], outs["today"])
    for name in ("floor",):  # the floor's files: the new records' names and sizes
        gate(sorted((p.name, p.stat().st_size) for p in outs[name].iterdir()) ==
             sorted((p.name, p.stat().st_size) for p in outs["new"].iterdir()), "floor: not the records' names and sizes")
    report(args, say, events, files, figures)
    if args.profile:
        for name in ("today", "new"):
            say(f"\nThe top of cProfile's table, one replay, {name} ({'91eb5e8' if name == 'today' else 'this tree'}):\n")
            for line in top_of_profile(pythons[name], dbs[name], outs[name], folder):
                say(line)


def report(args: argparse.Namespace, say, events: int, files: int, figures: dict[str, list[list[float]]]) -> None:
    """The table of the three rows and the ratios measured side by side in each repetition."""
    say(SECTION_TITLE)
    say(f"\nRun {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: `python -m benchmarks.fold --papers "
        f"{args.papers} --reps {args.reps}{' --folder ' + args.folder if args.folder else ''}`, ledgers and records "
        f"in {Path(args.folder or tempfile.gettempdir())}, {os.cpu_count()} cores (shared with other work: the CPU column moves "
        f"less than the wall clock), Python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}. Corpus: the "
        f"generator's first {args.papers:,} papers (seed {args.seed}), {events:,} event lines; {files:,} records "
        "rebuilt per command, as of AS_OF. Medians of the repetitions; the ratios are the medians of the "
        "ratios within each repetition (the three commands run in turn).\n")
    say("| row | includes | wall s | records/s | CPU s | max RSS MB |")
    say("|---|---|---|---|---|---|")
    for name, text in ROWS.items():
        wall, cpu, rss = (statistics.median(f[i] for f in figures[name]) for i in range(3))
        say(f"| {name} | {text} | {wall:.2f} | {files / wall:,.0f} | {cpu:.2f} | {rss / 2**20:.0f} |")
    walls = {name: [f[0] for f in figures[name]] for name in ROWS}
    cpus = {name: [f[1] for f in figures[name]] for name in ROWS}
    say(f"\nnew / today, records/s: {paired(walls, 'today', 'new'):.2f} by the wall clock, "
        f"{paired(cpus, 'today', 'new'):.2f} by CPU time (target: at least 2). new / floor, time: "
        f"{paired(walls, 'new', 'floor'):.2f} by the wall clock, {paired(cpus, 'new', 'floor'):.2f} by CPU time.")
    say("Correctness gates passed: every record file of the new command is today's, byte for byte; the floor "
        "wrote the same names and sizes and fetched every fact of those papers.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=300, help="corpus size in papers (~100 events each)")
    parser.add_argument("--reps", type=int, default=3, help="repetitions of the three commands, in turn")
    parser.add_argument("--seed", type=int, default=300)
    parser.add_argument("--venv", default=None, help="folder of today's venv, built there if missing and kept "
                                                      "(default: a temporary one)")
    parser.add_argument("--today-python", default=None, help="an interpreter whose `-m ledger.cli` stands for "
                                                              "today's command (tests), instead of building one")
    parser.add_argument("--profile", action="store_true", help="add the top of a cProfile table of each version")
    parser.add_argument("--folder", default=None, help="where the ledgers and the written records go (default: the "
                                                        "system's temporary folder; /dev/shm keeps disk traffic out)")
    parser.add_argument("--out", default=str(HERE / "RESULTS.md"))
    args = parser.parse_args(argv)
    compiled()
    lines: list[str] = []

    def say(line: str = "") -> None:
        print(line, flush=True)
        lines.append(line)

    folder = Path(tempfile.mkdtemp(prefix="fold-bench-", dir=args.folder))
    try:
        measure(args, folder, say)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    replace_section(Path(args.out), "\n".join([SECTION_BEGIN, *lines, SECTION_END]), SECTION_BEGIN, SECTION_END)
    return 0


if __name__ == "__main__":
    run_main(main)
