"""`ledger publish` as a publisher runs it daily, at 1,000 and 10,000 papers: the first publish, the same one
again, after one paper gains one fact, a day later, and after files of the site were deleted or edited by hand;
each the whole command in a fresh process (wall clock and max RSS), and the site's size per kind of file.

    .venv/bin/python -m benchmarks.publish --cache /var/tmp/pubbench   # 1,000 and 10,000 papers (~1.3M events)
    .venv/bin/python -m benchmarks.publish --papers 50,200             # smaller and quicker

Each ledger holds the generator's first N papers (benchmarks/generate.py, every event of each: it has no
setting for fewer), imported in batches through the real append path; built once per size and seed into
`--cache DIR` (default: a temporary folder, removed at the end) and copied for each run, so a re-run does not
import them again and the appended fact never reaches the cache. Gates: the JSON `publish --json` prints says
what was written and left alone; a first publish leaves nothing alone, a re-run writes nothing, the fact
changes its paper's record and adds its day's, and a deleted and an edited file come back byte for byte.
The figures go to benchmarks/RESULTS.md, in a section of their own that `benchmarks.run` keeps.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from benchmarks.common import AS_OF, HERE, command, compiled, gate, replace_section, run_main
from benchmarks.generate import PROBE, generate_papers
from ledger.core.canonical import canonical
from ledger.importing.importer import Parsed, import_inputs
from ledger.model.events import RESOLUTION_RECORDED, make_event
from ledger.storage.store import Store

NEXT_DAY = "2027-06-02T00:00:00Z"
FACT_AT = "2027-05-15T12:00:00.000000Z"  # the new fact's day: after every generated event, before AS_OF
EDITED = "2000.00001"  # the first generated paper after the probe: its paper page is edited by hand
SECTION_BEGIN, SECTION_END = "<!-- benchmarks.publish: begin -->", "<!-- benchmarks.publish: end -->"
SECTION_TITLE = "## Publishing day by day (`benchmarks.publish`)"
PRINTED = ("as_of", "out", "papers", "tree_size", "unchanged", "written")  # publish --json's fields as of issue 29
# A published file's kind, by its path under OUT/; the first pattern that matches names it (else "other").
KINDS = (("day record JSON", r"paper/.+/as-of/[^/]+/citation-record\.json"),
         ("day HTML", r"paper/.+/as-of/[^/]+/citation-record/index\.html"),
         ("record JSON", r"paper/.+/citation-record\.json"),
         ("record HTML", r"paper/.+/citation-record/index\.html"),
         ("history.json", r"paper/.+/history\.json"),
         ("integrity.json", r"paper/.+/integrity\.json"),
         ("integrity HTML", r"paper/.+/integrity/index\.html"),
         ("day changes", r"paper/.+/as-of/[^/]+/changes/index\.html"),
         ("paper page", r"paper/.+/index\.html"),
         ("month lists", r"papers/.+/index\.html"),
         ("entry bundles", r"tile/entries/.+"),
         ("tiles", r"tile/.+"),
         ("publish state", r"\.ledger-publish/.+"))
KIND_NAMES = ["record JSON", "day record JSON", "record HTML", "day HTML", "day changes", "paper page", "history.json",
              "integrity.json", "integrity HTML", "month lists", "tiles", "entry bundles", "publish state", "other"]


def kind_of(relative: str) -> str:
    """The kind of a published file, from its path relative to OUT/ (`paper/<id>/history.json`: history.json)."""
    return next((name for name, pattern in KINDS if re.fullmatch(pattern, relative)), "other")


class Built(NamedTuple):
    db: Path
    events: int
    seconds: float  # the import's, when it was built (cached or now)
    cached: bool


def ledger_of(papers: int, seed: int, cache: Path) -> Built:
    """The ledger of the generator's first `papers` papers in `cache`, built there unless it is already: the
    database and, written last, a note of its events and build time (a build cut short leaves no note)."""
    cache.mkdir(parents=True, exist_ok=True)
    db, note = cache / f"publish-{papers}-seed{seed}.db", cache / f"publish-{papers}-seed{seed}.json"
    if db.exists() and note.exists():
        known = json.loads(note.read_text())
        return Built(db, known["events"], known["seconds"], True)
    for stale in cache.glob(f"{db.name}*"):
        stale.unlink()
    started = time.perf_counter()
    events = generate_papers(papers, seed=seed)
    store = Store.create(str(db))
    appended = 0
    for start in range(0, len(events), 5000):
        batch = [(0, event) for event in events[start:start + 5000]]
        appended += import_inputs(store, [Parsed("bench", events=batch)]).appended
    gate(store.head()[0] == len(events) == appended, f"build: {appended} of {len(events)} events appended")
    store.close()
    seconds = time.perf_counter() - started
    note.write_text(json.dumps({"events": len(events), "seconds": seconds}))
    return Built(db, len(events), seconds, False)


class Run(NamedTuple):
    seconds: float
    rss: int
    printed: dict


def publish_run(db: Path, out: Path, as_of: str, key: Path, *options: str) -> Run:
    """`ledger --db DB publish OUT --as-of AS_OF --key KEY --json [options]`, the whole command in a fresh
    process."""
    seconds, stdout, rss = command(["--db", str(db), "publish", str(out), "--as-of", as_of, "--key", str(key),
                                    "--json", *options])
    printed = json.loads(stdout)
    gate(isinstance(printed.get("written"), int) and isinstance(printed.get("unchanged"), int),
         f"publish --json says nothing of what it wrote and left alone: {printed}")
    return Run(seconds, rss, printed)


def one_fact(folder: Path) -> Path:
    """An event line of one new fact of the probe paper: a later resolution of its first reference."""
    payload = {"observation_id": f"{PROBE}/out/0", "resolution": {
        "observed_at": FACT_AT, "resolver_source": "raw_fallback", "status": "verified_exact"}}
    event = make_event(RESOLUTION_RECORDED, payload)
    line = folder / "one-fact.jsonl"
    line.write_bytes(canonical({"effective_at": event.effective_at, "kind": event.kind, "payload": payload}) + b"\n")
    return line


def tamper(out: Path) -> dict[str, bytes]:
    """Delete the probe paper's record JSON and edit another paper's page by hand; their bytes before."""
    deleted, edited = f"paper/{PROBE}/citation-record.json", f"paper/{EDITED}/index.html"
    kept = {name: (out / name).read_bytes() for name in (deleted, edited)}
    (out / deleted).unlink()
    (out / edited).write_bytes(kept[edited].replace(b"</body>", b"<p>edited by hand</p></body>"))
    gate((out / edited).read_bytes() != kept[edited], "the edit changed nothing")
    return kept


def restored(out: Path, kept: dict[str, bytes]) -> None:
    """Each kept file is back under OUT/ with the bytes it had."""
    for name, data in kept.items():
        path = out / name
        gate(path.is_file() and path.read_bytes() == data, f"{name}: not restored to the bytes first written")


def site_size(out: Path) -> dict[str, tuple[int, int]]:
    """(files, bytes) of OUT/ per kind of file."""
    found = {name: [0, 0] for name in KIND_NAMES}
    for folder, _, names in os.walk(out):
        for name in names:
            path = Path(folder, name)
            counts = found[kind_of(path.relative_to(out).as_posix())]
            counts[0] += 1
            counts[1] += path.stat().st_size
    return {name: (files, size) for name, (files, size) in found.items()}


class Size(NamedTuple):
    papers: int
    built: Built
    db_bytes: int
    steps: list[tuple[str, str, Run]]  # (step, what it includes, the run; for b, the median's)
    import_seconds: float
    site: dict[str, tuple[int, int]]


def measure(papers: int, built: Built, folder: Path, key: Path, reps: int) -> Size:
    """Steps a to e on a copy of the built ledger, into a new folder; both removed after."""
    db, out = folder / f"ledger-{papers}.db", folder / f"site-{papers}"
    shutil.copyfile(built.db, db)
    try:
        first = publish_run(db, out, AS_OF, key)
        gate(first.printed["unchanged"] == 0 and first.printed["written"] > 0, f"first publish: {first.printed}")
        gate(first.printed["papers"] == papers, f"first publish: {first.printed['papers']} papers of {papers}")
        site = site_size(out)
        files = sum(count for kind, (count, _) in site.items() if kind != "publish state")  # a record, not a page
        gate(files == first.printed["written"],
             f"first publish: {files} files in OUT/, {first.printed['written']} written")
        medians = {}
        for options in ((), ("--trust-folder",)):  # interleaved, so that both see the same machine
            again = []
            for _ in range(reps):
                run = publish_run(db, out, AS_OF, key, *options)
                gate(run.printed["written"] == 0 and run.printed["unchanged"] == files
                     and run.printed.get("rebuilt", 0) == 0, f"publish again {' '.join(options)}: {run.printed}")
                again.append(run)
            medians[options] = sorted(again, key=lambda run: run.seconds)[len(again) // 2]
        record = out / f"paper/{PROBE}/citation-record.json"
        day = out / f"paper/{PROBE}/as-of/{FACT_AT[:10]}/citation-record.json"
        before = record.read_bytes()
        import_seconds, printed, _ = command(["--db", str(db), "import", str(one_fact(folder)), "--json"])
        gate(json.loads(printed)["appended"] == 1, f"import of one fact: {printed!r}")
        fact = publish_run(db, out, AS_OF, key)
        gate(fact.printed["written"] > 0 and record.read_bytes() != before and day.is_file()
             and fact.printed.get("rebuilt", 0) <= 2,
             f"after one fact: {fact.printed}; the paper's record changed: {record.read_bytes() != before}; "
             f"its day's record written: {day.is_file()}")
        later = publish_run(db, out, NEXT_DAY, key)
        gate(later.printed["written"] > 0 and later.printed["as_of"] == NEXT_DAY, f"a day later: {later.printed}")
        kept = tamper(out)
        mended = publish_run(db, out, NEXT_DAY, key)
        gate(mended.printed["written"] >= len(kept), f"after a deletion and an edit: {mended.printed}")
        restored(out, kept)
        steps = [("a", "first publish, into an empty folder: every file rendered and written", first),
                 ("b", f"the same again, nothing changed: the state read, every file's size and time checked, no "
                       f"paper rendered (median of {reps})", medians[()]),
                 ("b'", f"the same with `--trust-folder`: only the papers with events since asked for and their "
                        f"state rows read (none here) (median of {reps})", medians[("--trust-folder",)]),
                 ("c", "after one paper gained one fact (one event line through `ledger import`, not counted here)",
                  fact),
                 ("d", "`--as-of` a day later, nothing appended", later),
                 ("e", "after one file was deleted and another edited by hand: both restored, bytes checked", mended)]
        return Size(papers, built, built.db.stat().st_size, steps, import_seconds, site)
    finally:
        shutil.rmtree(out, ignore_errors=True)
        for stale in folder.glob(f"{db.name}*"):
            stale.unlink()


def verdict(value: float, target: float) -> str:
    return f"{value:.3f} (target <= {target}: {'met' if value <= target else 'NOT met'})"


def report(sizes: list[Size], args, say) -> None:
    """The section's lines, from every size's figures."""
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    say(SECTION_TITLE)
    say(f"\nRun {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {os.cpu_count()} cores (load average {load} "
        f"at the end), Python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}. Command: `python -m "
        f"benchmarks.publish --papers {args.papers} --reps {args.reps} --seed {args.seed}`. Each ledger holds the "
        "generator's first N papers with every event of each (SQLite file); the build is timed once and is in no "
        "ratio:\n")
    say("| papers | events | events/paper | build (import) s | ledger file MB |\n|---|---|---|---|---|")
    for size in sizes:
        built = size.built
        say(f"| {size.papers:,} | {built.events:,} | {built.events / size.papers:.0f} | {built.seconds:,.1f}"
            f"{' (cached)' if built.cached else ''} | {size.db_bytes / 1e6:,.1f} |")
    say(f"\nEach row is the whole command, `ledger --db DB publish OUT --as-of D --key KEY --json`, in a fresh process "
        "timed from its start to its exit (the interpreter's start, the modules, opening the ledger, rendering, "
        "comparing with what is there, writing), one process at a time, with the key `ledger keygen` made; max RSS is "
        f"the process's own (`getrusage` of its wrapper's children). D is {AS_OF}, and {NEXT_DAY} from step d on. "
        "`written` and `unchanged` are what the command printed; further integer fields it printed are listed:\n")
    say("| papers | step | includes | seconds | max RSS MB | written | unchanged | other fields printed |\n"
        "|---|---|---|---|---|---|---|---|")
    for size in sizes:
        for step, includes, run in size.steps:
            other = ", ".join(f"{k} {v:,}" for k, v in sorted(run.printed.items())
                              if k not in PRINTED and isinstance(v, int) and not isinstance(v, bool)) or "-"
            say(f"| {size.papers:,} | {step} | {includes} | {run.seconds:.2f} | {run.rss / 2**20:,.0f} | "
                f"{run.printed['written']:,} | {run.printed['unchanged']:,} | {other} |")
    say("\nThe import of the one event line (step c), also a whole command: "
        + ", ".join(f"{s.import_seconds:.2f} s at {s.papers:,} papers" for s in sizes) + ".")
    say("\nTargets (issue 29), in this run:")
    for size in sizes:
        seconds = {step: run.seconds for step, _, run in size.steps}
        say(f"- {size.papers:,} papers: b/a {verdict(seconds['b'] / seconds['a'], 0.02)}; "
            f"c/a {verdict(seconds['c'] / seconds['a'], 0.03)}")
    if len(sizes) > 1:
        small, large = sizes[0], sizes[-1]
        b, trusted = ({s.papers: next(run.seconds for step, _, run in s.steps if step == name) for s in (small, large)}
                      for name in ("b", "b'"))
        rss = {s.papers: max(run.rss for _, _, run in s.steps) for s in (small, large)}
        scale = "" if (small.papers, large.papers) == (1000, 10000) else (
            f" (the targets are for 1,000 to 10,000 papers; here {small.papers:,} to {large.papers:,})")
        say(f"- b at {large.papers:,} / b at {small.papers:,} papers: "
            f"{verdict(b[large.papers] / b[small.papers], 1.5)}{scale}; with `--trust-folder` (b'): "
            f"{verdict(trusted[large.papers] / trusted[small.papers], 1.5)}")
        say(f"- max RSS (of steps a to e) at {large.papers:,} / at {small.papers:,} papers: "
            f"{verdict(rss[large.papers] / rss[small.papers], 1.3)}{scale}")
    site_table(sizes, say)
    say("\nCorrectness gates passed: each publish printed `written` and `unchanged`; the first left nothing alone and "
        "wrote every file in OUT/, each re-run wrote none; the fact changed its paper's record and wrote its day's; "
        "the runs with `--trust-folder` the same; a day later wrote files as of that day; the deleted and the edited "
        "file came back byte for byte.")


def site_table(sizes: list[Size], say) -> None:
    """The site the first publish wrote, per kind of file, and its bytes against the record JSON's (a target)."""
    say("\nThe site the first publish wrote (step a), per kind of file (files / bytes):\n")
    say("| kind | " + " | ".join(f"{s.papers:,} papers" for s in sizes) + " |\n|---|" + "---|" * len(sizes))
    for kind in KIND_NAMES:
        say(f"| {kind} | " + " | ".join(f"{s.site[kind][0]:,} / {s.site[kind][1]:,}" for s in sizes) + " |")
    totals = [(sum(f for f, _ in s.site.values()), sum(b for _, b in s.site.values())) for s in sizes]
    say("| all | " + " | ".join(f"**{files:,} / {size:,}**" for files, size in totals) + " |")
    say("| bytes per paper | " + " | ".join(f"{size / s.papers:,.0f}" for s, (_, size) in zip(sizes, totals)) + " |")
    ratios = [size / (s.site["record JSON"][1] + s.site["day record JSON"][1]) for s, (_, size) in zip(sizes, totals)]
    say("| the site / its record JSON (current and per day) | " + " | ".join(f"{r:.1f}" for r in ratios) + " |")
    say("\nTarget (issue 29), the whole site at most 4 times the bytes of the record JSON it publishes: "
        + "; ".join(f"{s.papers:,} papers {verdict(r, 4)}" for s, r in zip(sizes, ratios)) + ".")


def write_section(path: Path, lines: list[str]) -> None:
    """This benchmark's section of the results file, in place of the last one (the rest of the file kept)."""
    replace_section(path, "\n".join([SECTION_BEGIN, *lines, SECTION_END]), SECTION_BEGIN, SECTION_END)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", default="1000,10000", help="corpus sizes, smallest first, comma-separated")
    parser.add_argument("--cache", default=None, help="folder keeping the built ledgers (default: a temporary one)")
    parser.add_argument("--reps", type=int, default=3, help="repetitions of step b (its median is reported)")
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--out", default=str(HERE / "RESULTS.md"))
    args = parser.parse_args(argv)
    counts = sorted(int(n) for n in args.papers.split(","))
    folder = Path(tempfile.mkdtemp(prefix="ledger-publish-bench-"))
    cache = Path(args.cache) if args.cache else folder / "cache"
    lines: list[str] = []

    def say(line: str = "") -> None:
        print(line, flush=True)
        lines.append(line)

    try:
        compiled()
        made = subprocess.run([sys.executable, "-m", "ledger.cli", "keygen", "bench.example/ledger"], cwd=folder,
                              capture_output=True, text=True)
        gate(made.returncode == 0, f"ledger keygen: {made.stderr}")
        sizes = []
        for papers in counts:
            built = ledger_of(papers, args.seed, cache)
            print(f"{papers:,} papers: {built.events:,} events, built in {built.seconds:.1f} s"
                  f"{' (cached)' if built.cached else ''}", flush=True)
            sizes.append(measure(papers, built, folder, folder / "ledger.key", args.reps))
        report(sizes, args, say)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    write_section(Path(args.out), lines)
    return 0


if __name__ == "__main__":
    run_main(main)
