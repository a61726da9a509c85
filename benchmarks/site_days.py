"""The static site against the number of days its papers change on (issue 45): `ledger publish` of a corpus
whose papers gain their inbound citations one day at a time, the site's bytes by kind of file, the site against
the record JSON it publishes, and the bytes per paper against its number of change days.

    .venv/bin/python -m benchmarks.site_days                      # the held-out shape: 600 papers, 21 change days
    .venv/bin/python -m benchmarks.site_days --papers 60 --mix 5  # smaller and quicker

The corpus (built here, deterministic): each paper has a snapshot and 5 outbound references on its first day,
then 20 inbound citations, each observed and resolved on a day of its own (21 change days), with titles of a
realistic length and one standing-notice sweep on its last day. `--mix N` adds N papers of each of the
shapes in MIX, whose 20 inbound citations fall on fewer days, or whose resolutions change on later days, so that
the table of bytes per paper covers 1 to 101 change days with the same 25 observations.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import NamedTuple

from benchmarks.common import AS_OF, HERE, build_ledger, command, compiled, gate, replace_section, run_main
from benchmarks.publish import KIND_NAMES, kind_of, publish_run, site_size
from ledger.model.events import CITATION_OBSERVED, NOTICE_CHECKED, PAPER_SNAPSHOT, RESOLUTION_RECORDED, make_event

SECTION_BEGIN, SECTION_END = "<!-- benchmarks.site_days: begin -->", "<!-- benchmarks.site_days: end -->"
SECTION_TITLE = "## The static site against change days (`benchmarks.site_days`)"
START = datetime(2026, 1, 1, tzinfo=UTC)
HELD_OUT = 21  # change days of each paper of the held-out shape: its first, then one per inbound citation
MIX = (1, 2, 6, 11, 21, 41, 101)  # change days of the mixed corpus's shapes, with the same 25 observations
EVERY = 100_000  # `--day-records` that keeps every change day's record: the site as it was before issue 45
WORDS = ("adaptive sparse attention retrieval graph neural operators scalable inference latency memory quantum "
         "transformer distributed consensus protocol benchmark robust estimation kernel spectral learning").split()
DAY_RECORD = ("day record JSON", "day HTML")


def _at(day: int, second: int) -> str:
    return (START + timedelta(days=day, seconds=second)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _title(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randrange(8, 14))).capitalize()


def paper_events(paper: str, days: int, rng: random.Random, inbound: int = 20, outbound: int = 5) -> list:
    """One paper's events over `days` change days: its snapshot and outbound references (resolved) on the first;
    its inbound citations, each observed and resolved the same day, spread over the next (one a day when there
    are enough); beyond 1 + `inbound` days, a resolution of one of them changes on each further day; a standing-
    notice sweep of every observation on its last day."""
    start = rng.randrange(0, 3600)
    me = {"arxiv_id": paper, "snapshot_observed_at": _at(0, start), "title": _title(rng), "version": 1}
    events = [make_event(PAPER_SNAPSHOT, {"arxiv_id": paper, "latest_version": 1, "primary_category": "cs.DC",
                                          "snapshot_observed_at": _at(0, start), "title": me["title"]})]
    observed = []

    def observe(oid: str, citation: dict, day: int, second: int) -> None:
        observed.append(oid)
        events.append(make_event(CITATION_OBSERVED, {"citation": citation, "observation_id": oid}))
        events.append(make_event(RESOLUTION_RECORDED, {"observation_id": oid, "resolution": {
            "observed_at": _at(day, second + 1), "resolver_source": None, "status": "unresolved"}}))

    for ref in range(outbound):
        observe(f"{paper}/out/{ref}", {"cited_paper": None, "cited_work": {"title": _title(rng), "year": 2024},
                                       "citing_paper": me, "reference_index": ref + 1, "source": "pdf_text",
                                       "source_observed_at": _at(0, start + ref + 1)}, 0, start + 100 + ref)
    spread = max(1, min(days - 1, inbound))
    for n in range(inbound):
        day, second = (1 + n % spread if days > 1 else 0), 4000 + 10 * n
        citing = {"arxiv_id": f"3{n % 1000:03d}.{rng.randrange(100000):05d}", "snapshot_observed_at": _at(day, second),
                  "title": _title(rng), "version": 1}
        observe(f"{paper}/in/{n}", {"cited_paper": me, "cited_work": {"pith_arxiv_id": paper, "title": None},
                                    "citing_paper": citing, "reference_index": rng.randrange(1, 80), "source": "pdf_text",
                                    "source_observed_at": _at(day, second)}, day, second)
    last = spread if days > 1 else 0
    for extra in range(max(0, days - 1 - spread)):
        last += 1
        events.append(make_event(RESOLUTION_RECORDED, {"observation_id": f"{paper}/in/{extra % inbound}", "resolution": {
            "observed_at": _at(last, 7000), "resolver_source": "raw_fallback",
            "status": ("verified_exact", "verified_fuzzy", "unresolved")[extra // inbound % 3]}}))
    receipts = [{"observed_at": _at(last, 8000), "source": "crossref"}]
    for oid in observed:
        events.append(make_event(NOTICE_CHECKED, {"observation_id": oid, "standing_notice": {
            "events": [], "observation": f"No event found in the named queried sources as of {_at(last, 8000)}.",
            "reason": None, "source_receipts": receipts, "state": "measured"}}))
    return events


def corpus(shapes: list[tuple[str, int]], seed: int) -> tuple[list, dict[str, int]]:
    """The events of papers of the given (id, change days), deterministic for a seed, and each paper's count."""
    rng, events, counts = random.Random(seed), [], {}
    for paper, days in shapes:
        own = paper_events(paper, days, rng)
        events += own
        counts[paper] = len(own)
    return events, counts


def held_out(papers: int) -> list[tuple[str, int]]:
    """The held-out shape (month 2601): every paper on HELD_OUT change days."""
    return [(f"2601.{n + 1:05d}", HELD_OUT) for n in range(papers)]


def mixed(each: int) -> list[tuple[str, int]]:
    """`each` papers of every shape of MIX (month 2602, the change days in the id)."""
    return [(f"2602.{k * 100 + n:05d}", k) for k in MIX for n in range(each)]


class Site(NamedTuple):
    window: int  # --day-records
    seconds: float  # the first publish, whole command
    rss: int
    kinds: dict[str, tuple[int, int]]  # kind -> (files, bytes), the whole site
    papers: dict[str, Counter]  # paper -> bytes of its own files (paper/<id>/...) by kind


def paper_bytes(out: Path, paper: str) -> Counter:
    """The bytes of a paper's own files, by kind."""
    found: Counter = Counter()
    for folder, _, names in os.walk(out / "paper" / paper):
        for name in names:
            path = Path(folder, name)
            found[kind_of(path.relative_to(out).as_posix())] += path.stat().st_size
    return found


def measure(db: Path, shapes: list[tuple[str, int]], folder: Path, key: Path, window: int) -> Site:
    """A first publish with `--day-records window` into a new folder, and the same again (gated: it writes and
    removes nothing); the site's bytes. A kept day record is gated against `ledger replay` of that day."""
    out = folder / f"site-{db.stem}-{window}"
    first = publish_run(db, out, AS_OF, key, "--day-records", str(window))
    kinds = site_size(out)
    files = sum(count for kind, (count, _) in kinds.items() if kind != "publish state")
    gate(first.printed["unchanged"] == 0 and first.printed["written"] == files, f"first publish: {first.printed}")
    again = publish_run(db, out, AS_OF, key, "--day-records", str(window))
    gate((again.printed["written"], again.printed.get("removed"), again.printed["rebuilt"]) == (0, 0, 0),
         f"the same publish again: {again.printed}")
    papers = {paper: paper_bytes(out, paper) for paper, _ in shapes}
    paper, days = max(shapes, key=lambda shape: shape[1])
    kept = sorted((out / "paper" / paper / "as-of").glob("*/citation-record.json"))
    gate(len(kept) == min(window, days), f"{paper}: {len(kept)} day records kept of {days} change days, window {window}")
    if kept:
        _, replayed, _ = command(["--db", str(db), "replay", "--paper", paper, "--as-of", kept[0].parent.name])
        gate(replayed == kept[0].read_bytes(), f"{kept[0]}: not the bytes of `ledger replay`")
    shutil.rmtree(out)
    return Site(window, first.seconds, first.rss, kinds, papers)


def ratios(site: Site) -> tuple[float, float]:
    """The site against the record JSON it publishes (the current records and the day records it keeps), and
    against the current records alone."""
    total = sum(size for _, size in site.kinds.values())
    current, days = site.kinds["record JSON"][1], site.kinds["day record JSON"][1]
    return total / (current + days), total / current


def window_name(window: int) -> str:
    return "every day (before issue 45)" if window >= EVERY else f"`--day-records {window}`"


def held_out_report(sites: list[Site], papers: int, events: int, say) -> None:
    """The held-out corpus: the site per kind of file for each window, its bytes per paper and its ratios."""
    say(f"\nThe held-out shape: {papers:,} papers, {events:,} events ({events / papers:.0f} a paper), each paper with 5 "
        f"outbound references and 20 inbound citations, each citation on a day of its own ({HELD_OUT} change days). "
        "The first publish into an empty folder, a whole command (`ledger --db DB publish OUT --as-of "
        f"{AS_OF} --key KEY --json --day-records N`), per kind of file (files / bytes):\n")
    say("| kind | " + " | ".join(window_name(s.window) for s in sites) + " |\n|---|" + "---|" * len(sites))
    for kind in KIND_NAMES:
        say(f"| {kind} | " + " | ".join(f"{s.kinds[kind][0]:,} / {s.kinds[kind][1]:,}" for s in sites) + " |")
    totals = [sum(size for _, size in s.kinds.values()) for s in sites]
    say("| all | " + " | ".join(f"**{total:,}**" for total in totals) + " |")
    say("| bytes per paper | " + " | ".join(f"{total / papers:,.0f}" for total in totals) + " |")
    say("| the site / the record JSON it publishes (current and the day records kept) | "
        + " | ".join(f"{ratios(s)[0]:.2f}" for s in sites) + " |")
    say("| the site / the current record JSON alone | " + " | ".join(f"{ratios(s)[1]:.2f}" for s in sites) + " |")
    say("| first publish, seconds (whole command) | " + " | ".join(f"{s.seconds:.1f}" for s in sites) + " |")
    say("| max RSS MB | " + " | ".join(f"{s.rss / 2**20:,.0f}" for s in sites) + " |")


def mixed_report(shapes: list[tuple[str, int]], events_of: dict[str, int], sites: list[Site], say) -> None:
    """Bytes per paper against its number of change days, for each window, with the kinds that follow events."""
    log = {s.window: s.kinds["tiles"][1] + s.kinds["entry bundles"][1] for s in sites}
    total_events = sum(events_of.values())
    say("\nBytes per paper against its change days (the mixed corpus: the same 25 observations a paper, its 20 inbound "
        "citations on fewer days, or with resolutions changing on later days; means over the papers of each "
        "shape). A paper's own files are those under `paper/<id>/`; its share of the log (hash tiles and entry "
        "bundles) is the log's bytes per event times its events:\n")
    say("| change days | events | " + " | ".join(f"own files, {window_name(s.window)}" for s in sites)
        + " | of which day records, last column | change pages | integrity.json | history.json | share of the log |")
    say("|---|---|" + "---|" * (len(sites) + 5))
    for k in sorted({days for _, days in shapes}):
        ids = [paper for paper, days in shapes if days == k]
        mean = {s.window: {kind: sum(s.papers[p][kind] for p in ids) / len(ids) for kind in KIND_NAMES} for s in sites}
        last = mean[sites[-1].window]
        events = sum(events_of[p] for p in ids) / len(ids)
        say(f"| {k} | {events:.0f} | " + " | ".join(f"{sum(mean[s.window].values()):,.0f}" for s in sites)
            + f" | {sum(last[kind] for kind in DAY_RECORD):,.0f} | {last['day changes']:,.0f} | "
              f"{last['integrity.json']:,.0f} | {last['history.json']:,.0f} | "
              f"{log[sites[-1].window] * events / total_events:,.0f} |")


def verdict(value: float, target: float) -> str:
    return f"{value:.2f} (target <= {target}: {'met' if value <= target else 'NOT met'})"


def summary(held: list[Site], papers: int, mix: tuple, say) -> None:
    """The figures the tables imply: bytes per paper before and after, the target, what a further change day
    costs, and what integrity.json and the log cost against events rather than change days."""
    before = next((s for s in held if s.window >= EVERY), None)
    total = {s.window: sum(size for _, size in s.kinds.values()) / papers for s in held}
    say("\nIn this run:")
    for site in held:
        versus = f" ({total[site.window] / total[before.window]:.2f} of every day's)" if before and site is not before else ""
        say(f"- {window_name(site.window)}: {total[site.window]:,.0f} bytes a paper{versus}; the site / the record JSON "
            f"it publishes {verdict(ratios(site)[0], 4)}; / the current record JSON alone {ratios(site)[1]:.2f}")
    shapes, counts, sites = mix
    low, high = HELD_OUT, max(MIX)
    mean = {}
    for k in (low, high):
        ids = [paper for paper, days in shapes if days == k]
        mean[k] = ({s.window: sum(sum(s.papers[p].values()) for p in ids) / len(ids) for s in sites},
                   {kind: sum(sites[-1].papers[p][kind] for p in ids) / len(ids) for kind in KIND_NAMES},
                   sum(counts[p] for p in ids) / len(ids))
    days, events = high - low, mean[high][2] - mean[low][2]
    say(f"- From {low} to {high} change days ({days} more, with {events:.0f} more events: a resolution changed a day), "
        "a paper's own files grow by, a change day: " + "; ".join(
            f"{(mean[high][0][s.window] - mean[low][0][s.window]) / days:,.0f} bytes with {window_name(s.window)}"
            for s in sites) + ". Of the last, " + ", ".join(
            f"{kind} {(mean[high][1][kind] - mean[low][1][kind]) / days:,.0f}"
            for kind in ("day changes", "integrity.json", "history.json", "paper page")) + ".")
    log = sum(sites[-1].kinds[kind][1] for kind in ("tiles", "entry bundles")) / sum(counts.values())
    per_event = (mean[high][1]["integrity.json"] - mean[low][1]["integrity.json"]) / events if events else 0
    say(f"- integrity.json (the paper's evidence bundle: every event of it, with one inclusion proof) is "
        f"{mean[low][1]['integrity.json']:,.0f} bytes a paper at {mean[low][2]:.0f} events and grows "
        f"{per_event:,.0f} bytes an event; the log's hash tiles and entry bundles are {log:,.0f} bytes an event. "
        "Both follow the paper's events, whatever days they fall on: at 1 to 21 change days (the same events) they "
        "are about the same (the mixed table).")


def write_section(path: Path, lines: list[str]) -> None:
    """This benchmark's section of the results file, in place of the last one (the rest of the file kept)."""
    replace_section(path, "\n".join([SECTION_BEGIN, *lines, SECTION_END]), SECTION_BEGIN, SECTION_END)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=600, help="papers of the held-out shape")
    parser.add_argument("--mix", type=int, default=10, help=f"papers of each shape of {MIX} change days")
    parser.add_argument("--day-records", default=f"{EVERY},4,3,0", help="the windows compared, comma-separated")
    parser.add_argument("--seed", type=int, default=45)
    parser.add_argument("--out", default=str(HERE / "RESULTS.md"))
    args = parser.parse_args(argv)
    windows = [int(n) for n in args.day_records.split(",")]
    folder = Path(tempfile.mkdtemp(prefix="ledger-site-days-"))
    lines: list[str] = []

    def say(line: str = "") -> None:
        print(line, flush=True)
        lines.append(line)

    try:
        compiled()
        made = subprocess.run([sys.executable, "-m", "ledger.cli", "keygen", "bench.example/ledger"], cwd=folder,
                              capture_output=True, text=True)
        gate(made.returncode == 0, f"ledger keygen: {made.stderr}")
        key, found = folder / "ledger.key", {}
        for name, shapes in (("held-out", held_out(args.papers)), ("mixed", mixed(args.mix))):
            events, counts = corpus(shapes, args.seed)
            db = folder / f"{name}.db"
            build_ledger(events, db).close()
            found[name] = (shapes, counts, [measure(db, shapes, folder, key, window) for window in windows])
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        say(SECTION_TITLE)
        say(f"\nRun {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {os.cpu_count()} cores, shared with other "
            f"work (load average {load} at the end), Python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}. "
            f"Command: `python -m benchmarks.site_days --papers {args.papers} --mix {args.mix} --day-records "
            f"{args.day_records} --seed {args.seed}`. Each corpus is built here (`benchmarks.site_days`), imported "
            "through the real append path into an SQLite file (not timed), and published with a signing key.")
        shapes, counts, sites = found["held-out"]
        held_out_report(sites, len(shapes), sum(counts.values()), say)
        mixed_report(*found["mixed"], say)
        summary(sites, len(shapes), found["mixed"], say)
        say("\nCorrectness gates passed: each first publish wrote every file in OUT/ and left none alone, the same "
            "publish again wrote and removed nothing, the paper with the most change days kept exactly the newest "
            "N day records, and the newest of them is the bytes of `ledger replay --as-of` that day.")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    write_section(Path(args.out), lines)
    return 0


if __name__ == "__main__":
    run_main(main)
