"""Whether a server can do its work, and the figures it reports at a scrape (`web.metrics.Figure`): for `serve`,
read from its store in the store's thread (`/readyz` and `/healthz` are rows of the route table, rendered
here); for `witness serve`, read from its state, with `/healthz`, `/readyz` and the count of what it cosigned
and refused by origin and reason (`WitnessWatch`).

`/healthz` says the process answers; `/readyz` that it can serve: the database is there and can be read, its
schema is this version, and (with `--max-checkpoint-age`) the latest cosigned checkpoint is young enough.
Otherwise 503 and one line saying why. It never writes, and never names a key, a key's path or a password.
"""

from __future__ import annotations

import base64
import binascii
import os
import time
from collections import Counter
from collections.abc import Callable

from starlette.concurrency import run_in_threadpool

from ledger.core.errors import StoreError
from ledger.core.redact import redact_url
from ledger.log.signed_notes import split_note
from ledger.storage.backends import sqlite_path
from ledger.storage.cosigned_checkpoint import latest_cosigned
from ledger.storage.schema import SCHEMA_VERSION
from ledger.storage.store_open import schema_version
from ledger.web.logs import Requests
from ledger.web.metrics import OTHER, Figure, Metrics, Observed, answer_text
from ledger.web.site import TEXT, Body, Site

COSIGNATURE = 4 + 8 + 64  # a cosignature/v1 line's blob: key id, timestamp, Ed25519 signature
REASONS = {400: "malformed", 403: "bad_signature", 404: "unknown_log", 409: "size_mismatch", 413: "too_large",
           422: "inconsistent", 429: "rate_limited"}  # a witness's refusals by status (web.witness_app)


class NotReadyError(StoreError):
    """Not ready for a reason that is not the database's (the checkpoint's age): answered 503, not counted as
    a database error."""

    database = False


def cosigned_at(note: str | None) -> dict[str, int]:
    """The witnesses whose cosignature a checkpoint the ledger keeps carries, by name, and the time each gave
    (read from the lines, which the ledger verified before it kept the note; the log's own line is not one).
    Raises: nothing."""
    found: dict[str, int] = {}
    for line in split_note(note)[1] if note else []:
        name, _, blob = line.partition(" ")[2].partition(" ")
        try:
            raw = base64.b64decode(blob, validate=True)
        except (binascii.Error, ValueError):
            continue
        if len(raw) == COSIGNATURE:
            found[name] = int.from_bytes(raw[4:12], "big")
    return found


def alive(site: Site | None, question) -> Body:
    """`/healthz`: the process answers. Raises: nothing."""
    return Body(b"ok\n", TEXT, "no-store")


def ready(site: Site, question, max_age: float | None = None) -> Body:
    """`/readyz`: the database is there and reads, its schema is this version, the latest cosigned checkpoint
    is at most `max_age` seconds old (when given).
    Raises: StoreError saying why it is not ready (answered 503)."""
    store = site.store
    path = sqlite_path(store.url) if not store.url.endswith(".jsonl") else None
    if path is not None and path != ":memory:" and not os.access(path, os.R_OK):
        raise StoreError(f"not ready: the database file {path} is gone or unreadable")
    with store.reading() as cursor:
        found = schema_version(cursor, store.backend, redact_url(store.url))
    if found is not None and found != SCHEMA_VERSION:
        raise StoreError(f"not ready: the database's schema is version {found}, this server reads {SCHEMA_VERSION}")
    store.head()
    if max_age is not None:
        times = cosigned_at(latest_cosigned(store))
        if not times:
            raise NotReadyError("not ready: no cosigned checkpoint is held (--max-checkpoint-age is set)")
        age = time.time() - max(times.values())
        if age > max_age:
            raise NotReadyError(f"not ready: the latest cosigned checkpoint is {age:.0f} s old, over "
                             f"--max-checkpoint-age {max_age:g} s")
    return Body(b"ready\n", TEXT, "no-store")


def serve_figures(site: Site, errors: int, answers) -> list[Figure]:
    """What `serve` reports at a scrape, read in the store's thread: the log's size, the latest cosigned
    checkpoint (size, age, each witness's time), the cache, the database's errors so far.
    Raises: StoreError from the store (the caller reports the database as down)."""
    size = site.store.head()[0]
    note = latest_cosigned(site.store)
    times, now = cosigned_at(note), time.time()
    figures = [Figure("ledger_log_size", "gauge", "Entries in the log.").add(size)]
    if times:
        figures += [Figure("ledger_checkpoint_cosigned_size", "gauge", "The tree size of the latest cosigned "
                           "checkpoint the ledger holds.").add(int(note.split("\n", 2)[1])),
                    Figure("ledger_checkpoint_cosigned_age_seconds", "gauge", "Seconds since the latest "
                           "cosignature of the cosigned checkpoint the ledger holds.").add(now - max(times.values())),
                    _by("ledger_checkpoint_cosignature_timestamp_seconds", "gauge", "When each witness cosigned "
                        "the checkpoint the ledger holds (Unix time).", "witness", times)]
    return figures + cache_figures(answers, errors, up=True)


def cache_figures(answers, errors: int, up: bool) -> list[Figure]:
    """The page cache's hits, misses and bytes (`web.answers`), and the database's errors and state.
    Raises: nothing."""
    return [Figure("ledger_cache_hits_total", "counter", "Answers sent from the page cache.").add(
                answers.hits + answers.fast),
            Figure("ledger_cache_misses_total", "counter", "Pages rendered (not in the cache, or stale).").add(
                answers.misses),
            Figure("ledger_cache_bytes", "gauge", "Bytes of pages held in the cache.").add(answers.held),
            Figure("ledger_cache_entries", "gauge", "Pages held in the cache.").add(len(answers.kept)),
            Figure("ledger_database_errors_total", "counter", "Requests the database could not answer (down, "
                   "locked past its timeout, gone).").add(errors),
            Figure("ledger_database_up", "gauge", "1 when the database answered this scrape's reads.").add(int(up))]


def _by(name: str, kind: str, about: str, label: str, values: dict) -> Figure:
    figure = Figure(name, kind, about)
    for key, value in sorted(values.items()):
        figure.add(value, **{label: key})
    return figure


class WitnessWatch:
    """The witness's figures and health: checkpoints cosigned and refused by origin (one it follows, or
    "other") and reason, counted as answers are sent (`done`); `/healthz`, `/readyz` (`extra`)."""

    def __init__(self, witness):
        self.witness, self.counts, self.errors = witness, Counter(), 0

    def keep(self, scope) -> bool:
        return scope["path"] == "/add-checkpoint" and scope["method"] == "POST"

    def done(self, scope, body: bytes, status: int) -> None:
        """Count one answer to POST /add-checkpoint: its origin (the note's first line), cosigned or why not."""
        note = body.partition(b"\n\n")[2]
        origin = note.partition(b"\n")[0].decode("utf-8", "replace")
        origin = origin if origin in self.witness.logs else OTHER
        self.counts[origin, "cosigned" if status == 200 else REASONS.get(status, "error")] += 1

    def route_of(self, scope) -> str:
        return scope["path"] if scope["path"] in ("/add-checkpoint", "/healthz", "/readyz") else OTHER

    def _read(self) -> list[Figure]:
        if not os.path.exists(self.witness.state.path):
            raise StoreError("not ready: the witness's state file is gone")
        held = {origin: self.witness.held(origin) for origin in sorted(self.witness.logs)}
        size = Figure("ledger_witness_held_size", "gauge", "The tree size of the checkpoint last cosigned, by origin.")
        at = Figure("ledger_witness_cosigned_timestamp_seconds", "gauge", "When the witness last cosigned a "
                    "checkpoint of each origin (Unix time).")
        for origin, found in held.items():
            if found is not None:
                size.add(found[0], origin=origin)
                at.add(found[3], origin=origin)
        return [size, at]

    async def figures(self) -> list[Figure]:
        """Every figure of a scrape. Raises: nothing (a state that cannot be read is `ledger_database_up 0`)."""
        checkpoints = Figure("ledger_witness_checkpoints_total", "counter", "Checkpoints submitted, by origin and "
                             "outcome: cosigned, or the reason refused.")
        for (origin, outcome), count in sorted(self.counts.items()):
            checkpoints.add(count, origin=origin, outcome=outcome)
        try:
            read, up = await run_in_threadpool(self._read), 1
        except Exception:  # noqa: BLE001 - a state that cannot be read is what the figure reports
            self.errors += 1
            read, up = [], 0
        return [checkpoints, *read,
                Figure("ledger_database_errors_total", "counter", "Scrapes or probes whose state read failed.")
                .add(self.errors),
                Figure("ledger_database_up", "gauge", "1 when the witness's state answered this scrape's reads.")
                .add(up)]

    async def extra(self, scope, send: Callable) -> bool:
        """Answer `/healthz` and `/readyz`; False for every other path."""
        if scope["path"] == "/healthz":
            await answer_text(send, 200, b"ok\n")
            return True
        if scope["path"] != "/readyz":
            return False
        try:
            await run_in_threadpool(self._read)
        except Exception as exc:  # noqa: BLE001 - any failure to read the state is "not ready"
            self.errors += 1
            reason = str(exc) if isinstance(exc, StoreError) else f"not ready: the state cannot be read ({type(exc).__name__})"
            await answer_text(send, 503, (reason + "\n").encode())
            return True
        await answer_text(send, 200, b"ready\n")
        return True


def observed_witness(app, witness, requests: Requests | None, metrics: bool, metrics_port: int | None = None):
    """The witness's application counted and logged (`web.metrics.Observed`), with `/healthz` and `/readyz`.
    Raises: nothing."""
    watch = WitnessWatch(witness)
    return Observed(app, Metrics(watch.figures) if metrics else None, requests, watch.route_of, metrics_port,
                    watch.extra, watch.keep, watch.done)
