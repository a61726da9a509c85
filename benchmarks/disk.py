"""Bytes per event on disk, by table and index, beside the events' canonical JSON bytes and a zstd-compressed
`ledger export` of the same log, on SQLite (and PostgreSQL with `--postgres URL`).

    .venv/bin/python -m benchmarks.disk                      # 4,000 events: seconds
    .venv/bin/python -m benchmarks.disk --events 100000 --postgres postgresql+psycopg://...

The events are realistic: seed 004's record (tests/fixtures/seed_004_2407.20018.json, 40 events of 569 canonical
entry bytes on average) taken apart into events and replicated over many papers, each copy with fresh arXiv ids
and observation UUIDs, imported through the real import path. The database is measured with its paper index kept
at its head (as a checkpoint keeps it), after `PRAGMA wal_checkpoint(TRUNCATE)`: SQLite's `dbstat` gives each
table's and index's pages; PostgreSQL's `pg_table_size` (heap, TOAST, free-space and visibility maps) and
`pg_relation_size` of each index. Gates: the chain verifies, the head is the events' count. The figures go to
benchmarks/RESULTS.md, in a section of their own. This module never writes outside its temporary folder but
the results file.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import sqlite3
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import orjson

from benchmarks.common import HERE, build_ledger, command, compiled, gate, replace_section, run_main
from ledger.log.chain import entry_bytes, verify_entries
from ledger.model.events import Event, make_event, record_events
from ledger.storage.store import Store

SECTION_BEGIN, SECTION_END = "<!-- benchmarks.disk: begin -->", "<!-- benchmarks.disk: end -->"
SECTION_TITLE = "## Bytes per event on disk (`benchmarks.disk`)"
SEED = HERE.parent / "tests" / "fixtures" / "seed_004_2407.20018.json"
_ARXIV = re.compile(r"\b\d{4}\.\d{5}\b")
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")


def realistic(n: int, seed: int = 45) -> list[Event]:
    """`n` events (a whole number of copies of seed 004's 40, at least one): each copy with its own arXiv ids
    and observation UUIDs, written in place of the seed's in every payload, so no two copies share a key."""
    template = record_events(orjson.loads(SEED.read_bytes()))
    rng = random.Random(seed)
    events: list[Event] = []
    for _ in range(max(1, round(n / len(template)))):
        events += _copy(template, rng, {})
    return events


def _copy(template: list[Event], rng: random.Random, ids: dict[str, str]) -> list[Event]:
    def fresh(match: re.Match) -> str:
        old = match.group(0)
        if old not in ids:
            ids[old] = (str(uuid.UUID(int=rng.getrandbits(128), version=4)) if "-" in old
                        else f"{rng.randrange(2000, 2600)}.{rng.randrange(100000):05d}")
        return ids[old]

    return [make_event(ev.kind, orjson.loads(_UUID.sub(fresh, _ARXIV.sub(fresh, ev.payload.decode()))), ev.effective_at)
            for ev in template]


def sqlite_sizes(path: Path) -> dict[str, int]:
    """Bytes of every table and index of the SQLite file `path` (its pages, from `dbstat`), after the write-ahead
    log is checkpointed into the file."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        rows = conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall()
    return dict(rows)


def postgres_sizes(location: str) -> dict[str, int]:
    """Bytes of every table (heap, TOAST and maps) and index of the ledger's schema at `location`, after VACUUM."""
    store = Store.open(location)
    try:
        raw = store.engine.raw_connection()
        raw.driver_connection.autocommit = True
        cursor = raw.cursor()
        cursor.execute("VACUUM ANALYZE")
        cursor.execute("SELECT c.relname, CASE WHEN c.relkind = 'i' THEN pg_relation_size(c.oid) ELSE "
                       "pg_table_size(c.oid) END FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                       "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'i')")
        sizes = dict(cursor.fetchall())
        raw.close()
        return sizes
    finally:
        store.close()


def canonical_bytes(store: Store) -> int:
    """The sum of every entry's canonical bytes (`entry(n)`: seq, kind, times, payload), re-made from the store."""
    return sum(len(entry_bytes(e.seq, e.kind, e.effective_at, e.recorded_at, e.payload)) for e in store.entries())


def export_sizes(location: str, folder: Path) -> tuple[int, int]:
    """Bytes of `ledger export` (the whole command) and of that file compressed by `zstd` (level 3, its default)."""
    _, out, _ = command(["--db", location, "export"])
    plain = folder / "export.jsonl"
    plain.write_bytes(out)
    packed = subprocess.run(["zstd", "-q", "-c", str(plain)], capture_output=True, check=True).stdout
    return len(out), len(packed)


def built(events: list[Event], location: str) -> int:
    """The ledger at `location` made of `events` and its paper index kept at its head; its verified size."""
    store = build_ledger(events, Path(location)) if "://" not in location else _built_elsewhere(events, location)
    try:
        head = verify_entries(store.entries())
        gate(head[0] == len(events), f"{location}: {head[0]} events, expected {len(events)}")
        store.keep_index(head[0])
        return head[0]
    finally:
        store.close()


def _built_elsewhere(events: list[Event], location: str) -> Store:
    from benchmarks.common import import_batch

    store = Store.create(location)
    for i in range(0, len(events), 5000):
        import_batch(store, events[i:i + 5000])
    return store


def postgres_schema(url: str) -> tuple[str, str]:
    """A new schema on the server at `url`, and the location of a ledger in it."""
    import psycopg

    schema = f"disk_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return schema, f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"


def drop_schema(url: str, schema: str) -> None:
    """Drop the schema `postgres_schema` made."""
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


def table_rows(sizes: dict[str, int], n: int) -> list[str]:
    """A table's lines: every table and index, largest first, in bytes per event, and their total."""
    lines = ["| table or index | bytes per event |", "|---|---|"]
    for name, size in sorted(sizes.items(), key=lambda kv: -kv[1]):
        lines.append(f"| `{name}` | {size / n:,.1f} |")
    lines.append(f"| **all** | **{sum(sizes.values()) / n:,.1f}** |")
    return lines


def measure(n: int, postgres: str | None, folder: Path) -> list[str]:
    """The section's lines for a ledger of about `n` realistic events."""
    events = realistic(n)
    n = len(events)
    path = folder / "ledger.db"
    built(events, str(path))
    store = Store.open(str(path))
    canonical = canonical_bytes(store)
    store.close()
    exported, packed = export_sizes(str(path), folder)
    sqlite = sqlite_sizes(path)
    total = sum(sqlite.values())
    lines = [SECTION_BEGIN, SECTION_TITLE, "",
             f"Command: `python -m benchmarks.disk --events {n}{' --postgres URL' if postgres else ''}`, run "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {os.cpu_count()} cores (a shared machine; "
             f"sizes do not depend on its load), SQLite {sqlite3.sqlite_version}. {n:,} events: seed 004's record taken "
             "apart and replicated with fresh arXiv ids and observation UUIDs, imported 5,000 to a transaction, the "
             "paper index kept at the head (as `checkpoint` keeps it).", "",
             "| what | bytes per event | vs canonical JSON |", "|---|---|---|",
             f"| the events' canonical JSON (`entry(n)`: seq, kind, times, payload) | {canonical / n:,.1f} | 1.00 |",
             f"| `ledger export` (every hash included) | {exported / n:,.1f} | {exported / canonical:.2f} |",
             f"| `ledger export \\| zstd` (level 3) | {packed / n:,.1f} | {packed / canonical:.2f} |",
             f"| SQLite database: tables, indexes, Merkle nodes, paper links, index nodes | {total / n:,.1f} | "
             f"{total / canonical:.2f} |"]
    pg = None
    if postgres:
        schema, location = postgres_schema(postgres)
        try:
            built(events, location)
            pg = postgres_sizes(location)
        finally:
            drop_schema(postgres, schema)
        lines.append(f"| PostgreSQL: tables (heap, TOAST, maps) and indexes | {sum(pg.values()) / n:,.1f} | "
                     f"{sum(pg.values()) / canonical:.2f} |")
    lines += ["", "SQLite, by table and index (`dbstat`: whole pages, free space in them included):", "",
              *table_rows(sqlite, n)]
    if pg is not None:
        lines += ["", "PostgreSQL, by table and index:", "", *table_rows(pg, n)]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=4_000)
    parser.add_argument("--postgres", default=None, help="a PostgreSQL server URL (a schema is made and dropped)")
    parser.add_argument("--out", default=str(HERE / "RESULTS.md"))
    args = parser.parse_args(argv)
    compiled()
    folder = Path(tempfile.mkdtemp(prefix="ledger-disk-bench-"))
    try:
        lines = measure(args.events, args.postgres, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    lines.append(SECTION_END)
    print("\n".join(lines))
    replace_section(Path(args.out), "\n".join(lines), SECTION_BEGIN, SECTION_END)
    return 0


if __name__ == "__main__":
    run_main(main)
