"""Ledgers of a million events and more, built from realistic event lines through `ledger import` and measured
end to end: every row a whole command in a fresh process with its max RSS (issue 45).

    .venv/bin/python -m benchmarks.scale --events 50000                    # minutes, on SQLite
    .venv/bin/python -m benchmarks.scale --events 50000 --postgres URL     # and on PostgreSQL (or LEDGER_TEST_POSTGRES)
    .venv/bin/python -m benchmarks.scale --sizes 1000000,10000000 --folder /var/tmp/scale   # hours; the ratios
    .venv/bin/python -m benchmarks.scale --events 10000000 --without-site    # no publish, no monitor: less disk
    .venv/bin/python -m benchmarks.scale --events 10000000 --import-chunk 1000000   # imports of 1M lines each

The events are benchmarks/generate.py's realistic ones (seed 004's sizes per kind), whole papers, written to an
event-lines file as they are generated. Each size is built and measured in its own folder, removed before the
next; a size the disk cannot hold (estimated from the run's own bytes per event) is refused before it starts.
Gates: every import appends every event and verifies, `replay --out` writes the same bytes with 1 and N jobs
(and its shards' union), every rebuild and served body is those bytes, publish writes, the monitor says
consistent with the counts each step implies. The figures go to their own section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from benchmarks.common import HERE, compiled, gate, percentile, remove, replace_section, run_main
from benchmarks.generate import PROBE, daily_events, event_line, write_realistic
from benchmarks.scale_steps import (
    Row,
    digests,
    has_shard,
    imported,
    ledger,
    monitored,
    published,
    rebuilds,
    replayed,
    row,
    serving,
    sharded,
    verified,
)
from benchmarks.scale_storage import entry_sizes, exported, import_rows, postgres_rows, sqlite_bytes
from benchmarks.whole import ceiling

SECTION_BEGIN, SECTION_END = "<!-- benchmarks.scale: begin -->", "<!-- benchmarks.scale: end -->"
SECTION_TITLE = "## Ledgers at scale, end to end (`benchmarks.scale`)"
SEED_004 = HERE.parent / "tests" / "fixtures" / "seed_004_2407.20018.json"
BYTES_PER_EVENT = 9_000  # the disk a size needs before this run has measured its own (RESULTS.md: the peak at 50k)
LINEAR = ("import 1", "import N", "verify", "verify full", "replay 1", "replay N", "publish first", "monitor first")
LATENCY = ("rebuild", "serve cached", "serve uncached")
NOT_OURS = ("zstd",)


class Size(NamedTuple):
    events: int
    papers: int
    rows: list[Row]
    storage: dict[str, int]  # bytes: sqlite, canonical, lines, zstd, postgres
    parts: dict[str, dict[str, int]]  # bytes by table: "sqlite", "postgres"
    kinds: dict[str, tuple[int, int]]  # (count, canonical entry bytes) by kind
    notes: list[str]
    peak_disk: int


class Disk:
    """The most bytes the size's folder held, sampled (`du -sb`) where it holds the most: after the imports,
    beside both replays, beside the export, after the site."""

    def __init__(self, work: Path) -> None:
        self.work, self.peak = work, 0

    def __call__(self) -> None:
        self.peak = max(self.peak, du(self.work))


def du(folder: Path) -> int:
    """The bytes of the files under `folder` (`du -sb`: apparent sizes)."""
    done = subprocess.run(["du", "-sb", str(folder)], capture_output=True, text=True)
    return int(done.stdout.split()[0]) if done.returncode == 0 else 0


class Work(NamedTuple):
    """What every step of a size shares: the options, its folder, the rows and notes so far, its disk's peak."""
    args: argparse.Namespace
    folder: Path
    rows: list[Row]
    notes: list[str]
    disk: Disk
    storage: dict[str, int]  # bytes, by what holds them


def built(n: int, w: Work) -> tuple[Path, Path, int, int]:
    """The event lines of about `n` events, the ledger imported from them with 1 job (a second, with N jobs,
    imported and removed): (lines, ledger, events, papers)."""
    lines, db = w.folder / "events.jsonl", w.folder / "ledger.db"
    started = time.perf_counter()
    events, papers = write_realistic(lines, n, w.args.seed)
    w.notes.append(f"{events:,} events of {papers:,} papers generated in {time.perf_counter() - started:.0f} s "
                   f"({lines.stat().st_size / events:,.0f} bytes an event line).")
    ledger(str(db), "init")
    ran, how = import_rows(str(db), lines, events, 1, w.args.import_chunk, w.folder / "chunks")
    w.rows.append(row("import 1", f"`ledger import events.jsonl`, 1 job, {how} (start-up, decoding, checks, append, "
                      "tree)", ran, events, "events"))
    other = w.folder / "ledger-jobs.db"
    ledger(str(other), "init")
    ran, _ = import_rows(str(other), lines, events, w.args.jobs, w.args.import_chunk, w.folder / "chunks")
    w.rows.append(row("import N", f"the same, `--jobs {w.args.jobs}`", ran, events, "events"))
    verified(str(other), events)
    w.disk()
    remove(other)
    return lines, db, events, papers


def records(db: str, w: Work, events: int, papers: int) -> dict[str, str]:
    """verify, replay --out (1 and N jobs, and shards), the rebuilds: the records' digests."""
    w.rows.append(row("verify", "`ledger verify`: every entry hash and chain link re-computed", verified(db, events),
                      events, "events"))
    w.rows.append(row("verify full", "`ledger verify --full`: and every derived row re-derived (subjects, paper links, "
                      "Merkle nodes, paper index)", verified(db, events, "--full"), events, "events"))
    one, many = w.folder / "replay-1", w.folder / "replay-n"
    w.rows.append(row("replay 1", f"`ledger replay --as-of D --out DIR`, every paper ({papers:,}), 1 job (start-up, "
                      "rebuild, digests, files)", replayed(db, one, 1, papers), papers, "records"))
    w.rows.append(row("replay N", f"the same, `--jobs {w.args.jobs}`", replayed(db, many, w.args.jobs, papers), papers,
                      "records"))
    expected = digests(one)
    w.storage["records"] = sum(p.stat().st_size for p in one.iterdir())
    gate(digests(many) == expected, f"replay --jobs {w.args.jobs}: not the bytes of --jobs 1")
    w.disk()
    shutil.rmtree(one)
    shutil.rmtree(many)
    w.notes.append(f"The machine's own ceiling, measured after `replay N` (pure Python arithmetic, {w.args.jobs} "
                     f"processes vs 1, nothing shared): {ceiling(w.args.jobs):.2f}.")
    shards(db, w, papers, expected)
    ran, times = rebuilds(db, w.folder, expected, w.args.rebuilds, w.args.seed)
    w.rows.append(Row("rebuild", f"one fresh process rebuilding {len(times):,} papers' records (drawn at random, "
                      "with replacement) through the public API (`ledger.replay`, what `replay --paper` runs), each "
                      "timed alone, each compared with `replay --out`'s bytes; seconds and RSS are the whole process's",
                      ran.seconds, ran.rss, len(times), "records", percentile(times, 0.5), percentile(times, 0.99)))
    return expected


def shards(db: str, w: Work, papers: int, expected: dict[str, str]) -> None:
    """`replay --out --shard k/N` for 1, 2 and 4 shards as concurrent processes, beside the machine's ceiling."""
    if not has_shard():
        w.notes.append("`replay --shard`: not available in this build (`ledger replay --help` lists no `--shard`).")
        return
    for count in (1, 2, 4):
        ran = sharded(db, w.folder, count, expected)
        shutil.rmtree(w.folder / f"shards-{count}")
        w.rows.append(row(f"shards {count}", f"`ledger replay --out DIR --shard k/{count}`, the {count} shards as "
                          "concurrent processes, first start to last exit; their union is the unsharded records",
                          ran, papers, "records"))
    w.notes.append(f"The machine's own ceiling (pure Python arithmetic, N processes vs 1, nothing shared): 2: "
                   f"{ceiling(2):.2f}, 4: {ceiling(4):.2f}.")


def site(db: str, w: Work, events: int, papers: int, expected: dict[str, str]) -> None:
    """checkpoint, serve, the first publish and monitor, then a day's 0.1% new events, publish and monitor again."""
    made = subprocess.run([sys.executable, "-m", "ledger.cli", "keygen", "bench.example/ledger"], cwd=w.folder,
                          capture_output=True, text=True)
    gate(made.returncode == 0, f"ledger keygen: {made.stderr}")
    key, vkey, out, state = w.folder / "ledger.key", w.folder / "ledger.vkey", w.folder / "site", w.folder / "monitor-state"
    w.rows.append(row("checkpoint", "`ledger checkpoint --key K`: a signed checkpoint of the whole tree",
                      ledger(db, "checkpoint", "--key", str(key)), events, ""))
    w.rows.extend(serving(db, key, expected, PROBE, w.args.requests, w.args.jobs))
    if w.args.without_site:
        w.notes.append("`publish` and `monitor`: not run (`--without-site`, for a disk that cannot hold the site).")
        return
    w.rows.append(row("publish first", "`ledger publish OUT --as-of D --key K` into an empty folder: every page and "
                      "file of the site", published(db, out, key, True), papers, "papers"))
    w.rows.append(row("monitor first", "`ledger monitor OUT --state S`, first run: every tile and bundle read and "
                      "checked, the entries imported, every record rebuilt and compared",
                      monitored(out, vkey, state, events, papers), events, "entries"))
    w.storage["site"] = du(out)
    day = daily_events(w.args.seed, papers, max(2, events // 1000))
    (w.folder / "day.jsonl").write_bytes(b"".join(event_line(e) for e in day))
    w.rows.append(row("day import", f"`ledger import day.jsonl`: a day's {len(day):,} new events (0.1%: new inbound "
                      "citations of earlier papers, each with its resolution)",
                      imported(db, w.folder / "day.jsonl", 1, len(day)), len(day), ""))
    w.rows.append(row("publish day", "`ledger publish` again after the day: only what changed",
                      published(db, out, key, False), len(day), ""))
    w.disk()
    w.rows.append(row("monitor day", "`ledger monitor` again after the day: the new entries, their papers' records",
                      monitored(out, vkey, state, len(day), None), len(day), ""))


def measure(n: int, args: argparse.Namespace, folder: Path) -> Size:
    """Every row at about `n` events, in `folder` (made here; the caller removes it)."""
    folder.mkdir(parents=True)
    w = Work(args, folder, [], [], Disk(folder), {})
    lines, db, events, papers = built(n, w)
    on_disk, sqlite_parts = sqlite_bytes(db)
    kinds = entry_sizes(str(db))
    expected = records(str(db), w, events, papers)
    ran, squeezed, packed = exported(str(db), folder, events, w.disk)
    w.rows.append(row("export", "`ledger export > FILE`: every entry as a JSON line with its hashes", ran, events,
                      "events"))
    w.rows.append(row("zstd", "`zstd -T0` (level 3) of that file", squeezed, events, "events"))
    site(str(db), w, events, papers, expected)
    storage = {"sqlite": on_disk, "canonical": sum(total for _, total in kinds.values()),
               "lines": lines.stat().st_size, "zstd": packed, **w.storage}
    parts = {"sqlite": sqlite_parts}
    for done in (folder / "site", folder / "monitor-state"):
        shutil.rmtree(done, ignore_errors=True)  # before PostgreSQL's copy of the log: the disk holds one at a time
    remove(db)
    if args.postgres:
        pg_rows, (storage["postgres"], parts["postgres"]) = postgres_rows(args.postgres, lines, events, folder / "pg",
                                                                          args.import_chunk)
        w.rows.extend(pg_rows)
    return Size(events, papers, w.rows, storage, parts, kinds, w.notes, w.disk.peak)


def room(n: int, done: list[Size], folder: Path) -> None:
    """Refuse a size the disk cannot hold, from the bytes an event the last size took at its peak.

    Raises:
        GateError: when the estimate is over the free space.
    """
    per_event = done[-1].peak_disk / done[-1].events if done else BYTES_PER_EVENT
    need, free = int(n * per_event * 1.2), shutil.disk_usage(folder).free
    gate(need <= free, f"{n:,} events need about {need / 1e9:,.1f} GB of disk ({per_event:,.0f} bytes an event, and "
                       f"a fifth more), {free / 1e9:,.1f} GB free in {folder}")


def machine(folder: Path, url: str | None) -> str:
    """Cores, RAM, Python, SQLite, PostgreSQL and the disk the run used."""
    ram = next((int(line.split()[1]) * 1024 for line in open("/proc/meminfo") if line.startswith("MemTotal:")), 0)
    disk = subprocess.run(["df", "-hT", str(folder)], capture_output=True, text=True).stdout.splitlines()[-1].split()
    postgres = "not run"
    if url:
        import psycopg

        with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as conn:
            postgres = conn.execute("SHOW server_version").fetchone()[0]
    return (f"{os.cpu_count()} cores ({platform.processor() or platform.machine()}), {ram / 2**30:.1f} GiB RAM, "
            f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, PostgreSQL {postgres}, disk "
            f"{disk[1]} ({disk[2]}, {disk[4]} free at the start), {platform.system()} {platform.release()}")


def figure(r: Row) -> str:
    if r.p99 is not None:
        return f"p50 {r.p50:.1f} ms, p99 {r.p99:.1f} ms"
    return f"{r.units / r.seconds:,.0f} {r.unit}/s" if r.unit else ""  # no unit: a rate would mean nothing


def size_lines(s: Size) -> list[str]:
    """A size's table of rows, its storage and its notes."""
    out = [f"### {s.events:,} events, {s.papers:,} papers (SQLite file{', and PostgreSQL' if 'postgres' in s.storage else ''})",
           "", "| row | what it includes | seconds | rate or latency | max RSS MB |", "|---|---|---|---|---|"]
    out += [f"| {r.key} | {r.what} | {f'{r.seconds:.2f}' if r.seconds else ''} | {figure(r)} | {r.rss / 2**20:,.0f} |"
            for r in s.rows]
    per = {name: value / s.events for name, value in s.storage.items()}
    out += ["", "Storage, bytes an event:", "", "| what | bytes an event |", "|---|---|",
            f"| the SQLite file (events, their indexes, paper links, Merkle nodes, paper index) | {per['sqlite']:,.0f} |"]
    if "postgres" in per:
        out.append(f"| PostgreSQL, the ledger's tables with their indexes and TOAST (pg_total_relation_size) | "
                   f"{per['postgres']:,.0f} |")
    out += [f"| the entries' canonical bytes (what each entry hash is taken of) | {per['canonical']:,.0f} |",
            f"| the event lines imported | {per['lines']:,.0f} |",
            f"| `ledger export`, zstd level 3 | {per['zstd']:,.0f} |",
            f"| the records `replay --out` wrote (one file a paper) | {per['records']:,.0f} |",
            *([f"| the site the first `publish` wrote (`du -sb`; {s.storage['site'] / s.storage['records']:.2f} times "
               f"the records) | {per['site']:,.0f} |"] if "site" in per else []), ""]
    for name, parts in s.parts.items():
        if parts:
            out.append(f"{name} by table or index, bytes an event: " + ", ".join(
                f"{table} {value / s.events:,.0f}" for table, value in parts.items() if value / s.events >= 1) + ".")
    return out + ["", *s.notes, f"Disk used at the peak of this size: {s.peak_disk / 1e9:,.2f} GB "
                                f"({s.peak_disk / s.events:,.0f} bytes an event).", ""]


def kinds_lines(seed: dict[str, tuple[int, int]], ours: dict[str, tuple[int, int]]) -> list[str]:
    """The canonical entry bytes by kind: seed 004 taken apart beside the generator's."""
    def mean(sizes: dict[str, tuple[int, int]], kind: str) -> str:
        count, total = sizes.get(kind, (0, 0))
        return f"{count:,} | {total / count:,.0f}" if count else "0 | "

    out = ["Canonical entry bytes by kind (the bytes each entry hash is taken of): seed 004 "
           "(tests/fixtures/seed_004_2407.20018.json, imported) beside the generator's, at the largest size:", "",
           "| kind | seed 004 events | seed 004 mean bytes | generated events | generated mean bytes |",
           "|---|---|---|---|---|"]
    out += [f"| {kind} | {mean(seed, kind)} | {mean(ours, kind)} |" for kind in sorted(set(seed) | set(ours))]
    for name, sizes in (("seed 004", seed), ("generated", ours)):
        count, total = sum(c for c, _ in sizes.values()), sum(t for _, t in sizes.values())
        out.append(f"| all kinds, {name} | {count:,} | {total / count:,.0f} | | |" if name == "seed 004" else
                   f"| all kinds, {name} | | | {count:,} | {total / count:,.0f} |")
    return out + ["", "The issue's \"about 1 KB\" holds for the citation events; seed 004's events average "
                  f"{sum(t for _, t in seed.values()) / sum(c for c, _ in seed.values()):,.0f} bytes over every kind.", ""]


def ratio_lines(sizes: list[Size]) -> list[str]:
    """Each larger size against the smallest: per-unit costs (<= 1.15), p99 latencies (<= 1.2), max RSS (<= 1.3)."""
    small, out = sizes[0], []
    for large in sizes[1:]:
        out += [f"{large.events:,} events against {small.events:,}: the issue's ratios, met or NOT met:", "",
                "| row | per-unit cost | p99 | max RSS |", "|---|---|---|---|"]
        before = {r.key: r for r in small.rows}
        for r in large.rows:
            if r.key not in before:
                continue
            b = before[r.key]
            cost = (f"{(r.seconds / r.units) / (b.seconds / b.units):.2f} "
                    f"{'met' if (r.seconds / r.units) / (b.seconds / b.units) <= 1.15 else 'NOT met'} (<= 1.15)"
                    if r.key in LINEAR else "")
            p99 = f"{r.p99 / b.p99:.2f} {'met' if r.p99 / b.p99 <= 1.2 else 'NOT met'} (<= 1.2)" if r.key in LATENCY else ""
            rss = f"{r.rss / b.rss:.2f}" + (f" {'met' if r.rss / b.rss <= 1.3 else 'NOT met'} (<= 1.3)"
                                             if r.key not in NOT_OURS else " (not our command: reported)") if b.rss else ""
            out.append(f"| {r.key} | {cost} | {p99} | {rss} |")
        out.append("")
    return out


def seed_sizes(folder: Path) -> dict[str, tuple[int, int]]:
    """Seed 004 imported into a new ledger: its entries' canonical bytes by kind."""
    db = folder / "seed.db"
    ledger(str(db), "init")
    ledger(str(db), "import", str(SEED_004))
    found = entry_sizes(str(db))
    remove(db)
    return found


def section(args, argv: list[str], sizes: list[Size], seed: dict, about: str) -> str:
    lines = [SECTION_BEGIN, SECTION_TITLE, "",
             f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Command: `python -m benchmarks.scale {' '.join(argv)}`. "
             f"Machine: {about}. Rates are of this one run, "
             "a row at a time (ratios between sizes, not absolute figures, are what the issue judges).", "",
             f"Every row is a whole command (or one script where it says so) in a fresh process, from its start to its "
             f"exit, with the largest process's max RSS; N = {args.jobs}. The ledger is built from the generator's "
             "realistic event lines (benchmarks/generate.py, `write_realistic`, seed "
             f"{args.seed}). Correctness gates passed at every size below.", ""]
    for s in sizes:
        lines += size_lines(s)
    lines += kinds_lines(seed, sizes[-1].kinds) + ratio_lines(sizes)
    if sizes[-1].events < 1_000_000:
        lines += ["The 1M and 10M runs (`--sizes 1000000,10000000`, hours) are still to come, on a quiet machine: the "
                  "figures above are a development run, and the issue's ratios are judged on those.", ""]
    return "\n".join(lines + [SECTION_END])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=50_000, help="about this many events (whole papers)")
    parser.add_argument("--sizes", default=None, help="several sizes in one run, smallest first: 1000000,10000000")
    parser.add_argument("--postgres", default=os.environ.get("LEDGER_TEST_POSTGRES"),
                        help="a PostgreSQL URL (default: LEDGER_TEST_POSTGRES; none: SQLite only)")
    parser.add_argument("--jobs", type=int, default=2, help="N, for --jobs N and serve's workers")
    parser.add_argument("--rebuilds", type=int, default=1000, help="random papers rebuilt one at a time")
    parser.add_argument("--requests", type=int, default=400, help="requests a serve row makes")
    parser.add_argument("--seed", type=int, default=45)
    parser.add_argument("--import-chunk", type=int, default=None, metavar="LINES",
                        help="import the event lines as files of about LINES lines, one command each (default: one "
                             "command, one transaction; its memory grows with the file)")
    parser.add_argument("--without-site", action="store_true",
                        help="skip publish and monitor (the site is most of the disk a size takes)")
    parser.add_argument("--folder", default=None, help="where the ledgers are built (default: a new one in /var/tmp)")
    parser.add_argument("--out", default=str(HERE / "RESULTS.md"))
    args = parser.parse_args(argv)
    counts = [int(x) for x in args.sizes.split(",")] if args.sizes else [args.events]
    gate(counts == sorted(counts) and all(c >= 1000 for c in counts), "--sizes: smallest first, each >= 1000")
    folder = Path(args.folder) if args.folder else Path(tempfile.mkdtemp(prefix="ledger-scale-", dir="/var/tmp"))
    folder.mkdir(parents=True, exist_ok=True)
    about = machine(folder, args.postgres)
    compiled()
    done: list[Size] = []
    try:
        seed = seed_sizes(folder)
        for n in counts:
            room(n, done, folder)
            work = folder / f"size-{n}"
            try:
                done.append(measure(n, args, work))
            finally:
                shutil.rmtree(work, ignore_errors=True)  # the ledger and the site, before the next size
            # Written after every size: a larger size that fails hours later leaves the smaller ones' rows.
            text = section(args, argv, done, seed, about)
            replace_section(Path(args.out), text, SECTION_BEGIN, SECTION_END)
    finally:
        if not args.folder:
            shutil.rmtree(folder, ignore_errors=True)
    print(text)
    return 0


if __name__ == "__main__":
    run_main(main)
