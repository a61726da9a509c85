"""What every benchmark shares: its correctness gates and entry point, the results file's sections, a `ledger`
command timed as a user runs it, and ledgers made through the real import path.

The benchmark modules import this one; it imports none of them, so the benchmarks' imports run one way.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

from ledger.importing.importer import Parsed, import_inputs
from ledger.storage.store import Store

HERE = Path(__file__).parent
SYNCHRONOUS = "FULL"
AS_OF = "2027-06-01T00:00:00Z"  # every record rebuilt or published is as of this date: later than any generated event


class GateError(RuntimeError):
    """A correctness gate failed: the run's figures cannot be trusted."""


def gate(condition: bool, message: str) -> None:
    """Stop the run unless `condition` holds.

    Raises:
        GateError: naming what failed, when `condition` is false.
    """
    if not condition:
        raise GateError(message)


def run_main(main) -> None:
    """A benchmark's entry point: its exit code, or 1 with one line when a correctness gate fails."""
    try:
        sys.exit(main())
    except GateError as exc:
        print(f"benchmark: correctness gate failed: {exc}", file=sys.stderr)
        sys.exit(1)


def percentile(values: list[float], q: float) -> float:
    """The value below which a share q of `values` lies (nearest rank).

    Raises:
        IndexError: for no values.
    """
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def paired(figures: dict[str, list[float]], ours: str, theirs: str) -> float:
    """The median of the ratios measured side by side in each repetition: steadier than a ratio of medians when
    the machine's speed drifts during the run."""
    return statistics.median(a / b for a, b in zip(figures[ours], figures[theirs]))


# -- the results file: one section per benchmark, each rewritten alone ---------------------------------------
def kept_section(path: str | Path, begin: str, end: str) -> str:
    """The section of a results file between `begin` and `end` (markers included), to keep when a benchmark
    rewrites the file; empty when there is none."""
    text = Path(path).read_text() if Path(path).exists() else ""
    if begin in text and end in text:
        return "\n" + text[text.index(begin):text.index(end) + len(end)] + "\n"
    return ""


def replace_section(path: Path, section: str, begin: str, end: str) -> None:
    """Put `section` (its text from the line `begin` to the line `end`) into the file at `path`: in place of
    the section there, or at its end; the rest of the file is kept."""
    text = path.read_text() if path.exists() else "# Benchmark results\n"
    if begin in text and end in text:
        text = text[:text.index(begin)] + section + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text)


class Report:
    """A run's lines, each printed as it is said (a long run shows its progress) and kept for the results file,
    and its verdicts on the targets (None: reported, not judged)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.verdicts: list[tuple[str, bool | None, str]] = []

    def __call__(self, line: str = "") -> None:
        print(line, flush=True)
        self.lines.append(line)

    def target(self, name: str, ok: bool | None, detail: str) -> None:
        self.verdicts.append((name, ok, detail))


# -- ledgers, through the real import path -------------------------------------------------------------------
def import_batch(store: Store, events) -> int:
    """One import of generated events: one transaction, through the real import path; events appended."""
    return import_inputs(store, [Parsed("bench", events=[(0, e) for e in events])]).appended


def build_ledger(events, path: Path) -> Store:
    """A new ledger at `path` holding `events`, imported 5,000 to a transaction; the store left open."""
    store = Store.create(str(path))
    for i in range(0, len(events), 5000):
        import_batch(store, events[i:i + 5000])
    return store


def remove(path: Path) -> None:
    """A database file and its SQLite companions: a run makes dozens, some of 100 MB."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def new_ledger(folder: Path) -> Path:
    """A new, empty ledger file in `folder`, under a name of its own."""
    path = folder / f"ledger-{uuid.uuid4().hex}.db"
    Store.create(str(path)).close()
    return path


# -- whole commands ------------------------------------------------------------------------------------------
def command(args: list[str], stdin: Path | None = None) -> tuple[float, bytes, int]:
    """Seconds from process start to exit, stdout, and the largest process's peak RSS (bytes) of a
    `ledger` command (a fresh interpreter, as a user starts it; `stdin` a file piped into it), run from a
    small wrapper so that the RSS is the command's and its workers', not this process's.

    Raises:
        GateError: when the command exits other than 0 or writes to stderr.
    """
    wrapper = ("import resource, subprocess, sys, time\n"
               "started = time.perf_counter()\n"
               "done = subprocess.run(sys.argv[1:], capture_output=True)\n"
               "elapsed = time.perf_counter() - started\n"
               "sys.stderr.buffer.write(done.stderr)\n"
               "sys.stdout.buffer.write(done.stdout)\n"
               "print(elapsed, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, done.returncode,\n"
               "      file=sys.stderr)\n")
    with open(stdin or "/dev/null", "rb") as given:
        done = subprocess.run([sys.executable, "-c", wrapper, sys.executable, "-m", "ledger.cli", *args], capture_output=True,
                              cwd=HERE.parent, stdin=given)
    *errors, summary = done.stderr.decode().strip().splitlines()
    elapsed, rss, code = summary.split()
    gate(code == "0" and not errors, f"ledger {' '.join(args[:4])}...: exit {code}: {errors}")
    return float(elapsed), done.stdout, int(rss)


def run_stamp() -> str:
    """When and where a figure was taken: "2026-12-07 22:46 UTC on 2 cores" (UTC now, this machine's cores)."""
    return f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {os.cpu_count()} cores"


def compiled() -> None:
    """The project's modules compiled to bytecode before any command is timed, as an installed package has
    them (pip compiles a wheel's modules; an editable install, run with PYTHONDONTWRITEBYTECODE set as on
    this machine, would compile every changed module again in every command).

    Raises:
        GateError: when a package does not compile.
    """
    import compileall

    for package in ("cli", "ledger", "projections", "web"):
        gate(compileall.compile_dir(str(HERE.parent / package), quiet=1), f"compileall {package}: failed")
