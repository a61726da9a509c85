"""`--metrics-file PATH` of `checkpoint` and `monitor`, the commands a cron job or a systemd timer runs: the
figures of the run just ended, in the file node_exporter's textfile collector reads (`web.metrics.textfile`:
written beside it and renamed, so a scrape never reads half a file). Written when the run fails too, with
`..._success 0`: a failed run is what an alert is for.

Each figure is of the last run (gauges), with its time, so an alert on `time() - ..._timestamp_seconds`
catches a job that stopped running. It never writes a key, a key's path or a database URL: witnesses are named
by their key's name, the log by its origin.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import orjson
import typer

from ledger.core.errors import LedgerError
from ledger.web.health import cosigned_at
from ledger.web.logs import Clock
from ledger.web.metrics import Figure, textfile

MetricsFile = Annotated[str | None, typer.Option("--metrics-file", metavar="PATH", help=(
    "Write this run's figures to PATH in node_exporter's textfile form (a .prom file in its collector's folder), "
    "also when it fails (default: none)."))]


JobLog = Annotated[str, typer.Option("--log-format", help=(
    "A line on stderr when the run ends (its outcome, duration and size): plain, json, or none."))]


@contextmanager
def job_line(job: str, form: str) -> Iterator[dict]:
    """Write one line on stderr when the run of `job` ends (`--log-format`, none: no line): its outcome ("ok",
    or "failed" with the exit code), its duration, and what the run put in the dict yielded (sizes, counts).
    Raises: InputError for a --log-format that is not plain, json or none; what the run raises, after the line."""
    if form not in ("plain", "json", "none"):
        from ledger.core.errors import InputError

        raise InputError(f"--log-format {form}: expected one of plain, json, none")
    fields: dict = {}
    started, outcome, code = time.monotonic(), "ok", 0
    try:
        yield fields
    except LedgerError as exc:
        outcome, code = "failed", exc.exit_code
        raise
    finally:
        if form != "none":
            seconds, at = time.monotonic() - started, Clock()(time.time())
            if form == "json":
                line = orjson.dumps({"time": at, "level": "info", "msg": "job", "job": job, "outcome": outcome,
                                     "exit": code, "duration_ms": round(seconds * 1000, 3), **fields}).decode()
            else:
                extra = "".join(f" {name}={value}" for name, value in fields.items())
                line = f"{at} job {job} {outcome} exit={code} {seconds * 1000:.0f}ms{extra}"
            sys.stderr.write(line + "\n")


def checkpoint_figures(ok: bool, size: int | None, asked: list[str], refusals: list[str],
                       cosigned: str | None) -> list[Figure]:
    """The figures of one `checkpoint` run: whether it succeeded and when, the tree size signed, each witness
    asked and whether it cosigned, and the cosigned checkpoint the ledger holds now (its witnesses' times).
    Raises: nothing."""
    now = time.time()
    figures = [Figure("ledger_checkpoint_success", "gauge", "1 when the last checkpoint run signed (and met its "
                      "quorum), else 0.").add(int(ok)),
               Figure("ledger_checkpoint_last_run_timestamp_seconds", "gauge", "When the last checkpoint run "
                      "ended (Unix time).").add(now)]
    if ok and size is not None:
        figures += [Figure("ledger_checkpoint_signed_timestamp_seconds", "gauge", "When the latest checkpoint "
                           "was signed (Unix time).").add(now),
                    Figure("ledger_checkpoint_signed_size", "gauge", "The tree size of the latest signed "
                           "checkpoint.").add(size)]
    gathered = Figure("ledger_checkpoint_cosignatures_gathered", "gauge", "1 for each witness that cosigned in "
                      "the last run.")
    refused = Figure("ledger_checkpoint_cosignatures_refused", "gauge", "1 for each witness asked that did not "
                     "cosign in the last run (refused, unreachable or too slow).")
    for name in sorted(asked):
        missed = any(line.startswith(f"witness {name}: ") for line in refusals)
        gathered.add(int(not missed), witness=name)
        refused.add(int(missed), witness=name)
    times = cosigned_at(cosigned)
    if times:
        figures.append(Figure("ledger_checkpoint_cosigned_timestamp_seconds", "gauge", "The latest cosignature "
                              "of the cosigned checkpoint the ledger holds (Unix time).").add(max(times.values())))
    return figures + ([gathered, refused] if asked else [])


def monitor_figures(log: str, status: str, size: int | None = None, new_entries: int | None = None) -> list[Figure]:
    """The figures of one `monitor` run of the log `log` (its origin): its outcome ("consistent",
    "misbehaviour", "unreachable", or "error" for anything else), when, and the size verified.
    Raises: nothing."""
    outcome = Figure("ledger_monitor_status", "gauge", "1 for the outcome of the last monitor run, 0 for the others.")
    for name in ("consistent", "misbehaviour", "unreachable", "error"):
        outcome.add(int(name == status), log=log, status=name)
    figures = [Figure("ledger_monitor_success", "gauge", "1 when the last monitor run found the log consistent.")
               .add(int(status == "consistent"), log=log), outcome,
               Figure("ledger_monitor_last_run_timestamp_seconds", "gauge", "When the last monitor run ended "
                      "(Unix time).").add(time.time(), log=log)]
    if size is not None:
        figures.append(Figure("ledger_monitor_verified_size", "gauge", "The tree size the monitor verified.")
                       .add(size, log=log))
    if new_entries is not None:
        figures.append(Figure("ledger_monitor_new_entries", "gauge", "Entries the last run checked.")
                       .add(new_entries, log=log))
    return figures


def write_figures(path: str | None, figures: list[Figure]) -> None:
    """Write `figures` to `path` when given (`--metrics-file`).
    Raises: InputError naming the file when it cannot be written."""
    if path is not None:
        textfile(path, figures)
