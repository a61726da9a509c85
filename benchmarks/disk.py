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
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import orjson

from benchmarks.common import AS_OF, HERE, build_ledger, command, compiled, gate, paired, replace_section, run_main
from benchmarks.whole import replay_command
from ledger.core.times import When
from ledger.log.chain import entry_bytes, verify_entries
from ledger.model.events import Event, make_event, record_events
from ledger.services.replay import records_as_of
from ledger.storage.payloads import pack, unpack
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
    used: set[str] = set()  # no id twice, across copies (drawn at random, they would meet past ~100,000 events)
    for _ in range(max(1, round(n / len(template)))):
        events += _copy(template, rng, {}, used)
    return events


def _copy(template: list[Event], rng: random.Random, ids: dict[str, str], used: set[str]) -> list[Event]:
    def fresh(match: re.Match) -> str:
        old = match.group(0)
        while old not in ids:
            new = (str(uuid.UUID(int=rng.getrandbits(128), version=4)) if "-" in old
                   else f"{rng.randrange(2000, 2600)}.{rng.randrange(100000):05d}")
            if new not in used:
                used.add(new)
                ids[old] = new
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


def postgres_sizes(location: str, plain: bool = False) -> dict[str, int]:
    """Bytes of every table (heap, TOAST and maps) and index of the ledger's schema at `location`, after VACUUM;
    `plain`: first with every payload rewritten as its canonical bytes (version 2's layout), then VACUUM FULL."""
    store = Store.open(location)
    try:
        raw = store.engine.raw_connection()
        cursor = raw.cursor()
        if plain:
            rows = cursor.execute("SELECT seq, payload FROM events").fetchall()
            lift, restore = store.backend.rewrite_guard
            cursor.execute(lift)
            cursor.executemany("UPDATE events SET payload = %s WHERE seq = %s", [(unpack(p), seq) for seq, p in rows])
            cursor.execute(restore)
            raw.commit()
        raw.driver_connection.autocommit = True
        cursor.execute("VACUUM FULL ANALYZE" if plain else "VACUUM ANALYZE")
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


def vacuumed_copy(path: Path, folder: Path, plain: bool) -> Path:
    """A VACUUMed copy of the SQLite ledger at `path`; `plain`: with every payload stored as its canonical bytes
    (as schema 3 also reads them, and as version 2 kept them), the same ledger without the packing."""
    from ledger.storage.backends.sqlite import SQLite

    copy = folder / ("plain.db" if plain else "packed.db")
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    shutil.copyfile(path, copy)
    conn = sqlite3.connect(copy, isolation_level=None)
    if plain:
        rows = conn.execute("SELECT seq, payload FROM events").fetchall()
        lift, restore = SQLite.rewrite_guard
        conn.execute("BEGIN")
        conn.execute(lift)
        conn.executemany("UPDATE events SET payload = ? WHERE seq = ?", [(unpack(p), seq) for seq, p in rows])
        conn.execute(restore)
        conn.execute("COMMIT")
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return copy


def speeds(packed: Path, plain: Path, reps: int, folder: Path) -> dict[str, list[float]]:
    """Seconds of `ledger verify` and of `ledger replay --out` (every paper, one job) on both ledgers, whole
    commands in fresh processes, in turn in each repetition."""
    runs: dict[str, list[float]] = {}
    in_process(plain)  # once untimed: the first rebuild in a process loads the folds' modules
    for rep in range(reps):
        for name, path in (("packed", packed), ("plain", plain))[::1 if rep % 2 == 0 else -1]:  # each first in turn
            seconds, out, _ = command(["--db", str(path), "verify"])
            gate(out.startswith(b"ok: "), f"verify {name}: {out[:200]!r}")
            runs.setdefault(f"verify {name}", []).append(seconds)
            runs.setdefault(f"replay {name}", []).append(_replay_seconds(path, folder))
            for what, seconds in in_process(path).items():
                runs.setdefault(f"{what} {name}", []).append(seconds)
    return runs


def in_process(path: Path) -> dict[str, float]:
    """Seconds of the chain check and of every paper's rebuild, in this process (no start-up, no files written)."""
    store = Store.open(str(path))
    try:
        started = time.perf_counter()
        verify_entries(store.entries())
        middle = time.perf_counter()
        records = sum(1 for _ in records_as_of(store, When(AS_OF, "2027-06-01T00:00:00.000000Z")))
        gate(records > 0, f"{path}: no record rebuilt")
        return {"chain": middle - started, "rebuild": time.perf_counter() - middle}
    finally:
        store.close()


def _replay_seconds(path: Path, folder: Path) -> float:
    rate, written, _ = replay_command(path, 1, folder)
    gate(written > 0, f"replay {path}: no record written")
    return written / rate


def candidates(path: Path) -> list[str]:
    """The cuts measured and not made: what each would save at most, per event, from the columns' stored lengths
    (in the row, and in the unique fact key where the column is in it), before page overhead."""
    with sqlite3.connect(path) as conn:
        kind, effective, recorded, entry_hash = conn.execute(
            "SELECT AVG(LENGTH(kind)), AVG(LENGTH(effective_key)), AVG(LENGTH(recorded_at)), AVG(LENGTH(entry_hash)) "
            "FROM events").fetchone()
    rows = [("`kind` as a one-byte code (row and fact key)", 2 * (kind - 1)),
            ("`effective_key` as int64 microseconds (row and fact key)", 2 * (effective - 8)),
            ("`recorded_at` as int64 microseconds (row)", recorded - 8),
            ("`entry_hash` not stored, re-computed from the entry bytes on read (row)", entry_hash + 1)]
    return ["| cut not made | saves at most, bytes per event |", "|---|---|",
            *(f"| {name} | {saved:,.1f} |" for name, saved in rows)]


def by_kind(packed: Path, plain: Path) -> list[str]:
    """Per kind: its share of the events, its payloads' canonical bytes and as stored (mean): where packing pays."""
    query = "SELECT kind, COUNT(*), AVG(LENGTH(payload)) FROM events GROUP BY kind"
    with sqlite3.connect(packed) as a, sqlite3.connect(plain) as b:
        stored, canonical = ({k: (n, size) for k, n, size in conn.execute(query)} for conn in (a, b))
    total = sum(n for n, _ in stored.values())
    return ["| kind | share of events | payload bytes, canonical | as stored |", "|---|---|---|---|",
            *(f"| `{kind}` | {n / total:.0%} | {canonical[kind][1]:,.0f} | {size:,.0f} |"
              for kind, (n, size) in sorted(stored.items(), key=lambda kv: -kv[1][0]))]


def pack_share(events: list[Event], seconds: float) -> float:
    """The time `pack` takes over every payload of `events`, as a share of `seconds` (their import)."""
    started = time.perf_counter()
    for ev in events:
        pack(ev.payload)
    return (time.perf_counter() - started) / seconds


def table_rows(sizes: dict[str, int], plain: dict[str, int] | None, n: int) -> list[str]:
    """A table's lines: every table and index, largest first, in bytes per event (and beside it the plain
    copy's), and their total."""
    lines = ["| table or index | bytes per event |" + (" payloads plain (as version 2) |" if plain else ""),
             "|---|---|" + ("---|" if plain else "")]
    for name, size in sorted(sizes.items(), key=lambda kv: -kv[1]):
        lines.append(f"| `{name}` | {size / n:,.1f} |" + (f" {plain.get(name, 0) / n:,.1f} |" if plain else ""))
    lines.append(f"| **all** | **{sum(sizes.values()) / n:,.1f}** |"
                 + (f" **{sum(plain.values()) / n:,.1f}** |" if plain else ""))
    return lines


def measure(n: int, postgres: str | None, reps: int, folder: Path) -> list[str]:
    """The section's lines for a ledger of about `n` realistic events."""
    events = realistic(n)
    n = len(events)
    path = folder / "ledger.db"
    started = time.perf_counter()
    built(events, str(path))
    share = pack_share(events, time.perf_counter() - started)
    store = Store.open(str(path))
    canonical = canonical_bytes(store)
    store.close()
    exported, packed = export_sizes(str(path), folder)
    sqlite = sqlite_sizes(path)
    plain_path = vacuumed_copy(path, folder, plain=True)
    plain = sqlite_sizes(plain_path)
    runs = speeds(vacuumed_copy(path, folder, plain=False), plain_path, reps, folder)  # both VACUUMed: packing alone
    total = sum(sqlite.values())
    lines = [SECTION_BEGIN, SECTION_TITLE, "",
             f"Command: `python -m benchmarks.disk --events {n}{' --postgres URL' if postgres else ''} --reps {reps}`, "
             f"run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {os.cpu_count()} cores (a shared machine: "
             f"sizes do not depend on its load, times do), SQLite {sqlite3.sqlite_version}. {n:,} events: seed 004's "
             "record taken apart and replicated with fresh arXiv ids and observation UUIDs, imported 5,000 to a "
             "transaction, the paper index kept at the head (as `checkpoint` keeps it).", "",
             "| what | bytes per event | vs canonical JSON |", "|---|---|---|",
             f"| the events' canonical JSON (`entry(n)`: seq, kind, times, payload) | {canonical / n:,.1f} | 1.00 |",
             f"| `ledger export` (every hash included) | {exported / n:,.1f} | {exported / canonical:.2f} |",
             f"| `ledger export \\| zstd` (level 3; across lines, so copies of one record compress together) | "
             f"{packed / n:,.1f} | {packed / canonical:.2f} |",
             f"| SQLite database: tables, indexes, Merkle nodes, paper links, index nodes | {total / n:,.1f} | "
             f"{total / canonical:.2f} |",
             f"| the same, payloads plain (version 2's layout), VACUUMed | {sum(plain.values()) / n:,.1f} | "
             f"{sum(plain.values()) / canonical:.2f} |"]
    pg = pg_plain = None
    if postgres:
        pg, pg_plain = postgres_measured(events, postgres)
        lines += [f"| PostgreSQL: tables (heap, TOAST, maps) and indexes | {sum(pg.values()) / n:,.1f} | "
                  f"{sum(pg.values()) / canonical:.2f} |",
                  f"| the same, payloads plain (version 2's layout), VACUUM FULL | {sum(pg_plain.values()) / n:,.1f} | "
                  f"{sum(pg_plain.values()) / canonical:.2f} |"]
    lines += ["", "SQLite, by table and index (`dbstat`: whole pages, free space in them included):", "",
              *table_rows(sqlite, plain, n)]
    if pg is not None:
        lines += ["", "PostgreSQL, by table and index:", "", *table_rows(pg, pg_plain, n)]
    return lines + ["", *by_kind(path, plain_path), "", *speed_lines(runs, share, reps), "", *candidates(path), "",
                    *CUT]


CUT = ["What schema version 3 cut: each payload is stored deflated against a dictionary fixed forever "
       "(`ledger/storage/payloads.py`) when that is shorter; no column, index or guard was dropped. What the proofs "
       "still need, all kept: every event's seq, kind, effective_at, recorded_at and payload (inflated to its "
       "canonical bytes to re-make `entry(n)`, a leaf, a tile's entry bundle, an export line), its entry and chain "
       "hashes, the Merkle nodes of 16 leaves and more (smaller ones re-computed from their block's entries), the "
       "paper links, and the paper index's nodes and roots at every size it was kept at (docs/hash-chain.md, \"What "
       "the database keeps\")."]


def postgres_measured(events: list[Event], url: str) -> tuple[dict[str, int], dict[str, int]]:
    """The sizes of a PostgreSQL ledger of `events`, in a schema of its own, dropped after: as built, and with
    its payloads plain."""
    schema, location = postgres_schema(url)
    try:
        built(events, location)
        return postgres_sizes(location), postgres_sizes(location, plain=True)
    finally:
        drop_schema(url, schema)


def speed_lines(runs: dict[str, list[float]], share: float, reps: int) -> list[str]:
    """What packing costs: the commands' seconds on both ledgers and their ratios, paired in each repetition."""
    lines = [f"What the packing costs, on both SQLite ledgers (each a VACUUMed copy, so the layout differs only by "
             f"the payloads): whole commands in fresh processes, then the same work "
             f"in process, all in turn in each of {reps} repetitions (median seconds; packed / plain, the median of each repetition's ratio):", "",
             "| command | packed s | plain s | packed / plain |", "|---|---|---|---|"]
    for name, shown in (("verify", "`ledger verify` (every entry hash and chain link)"),
                        ("replay", "`ledger replay --as-of D --out DIR`, every paper, 1 job"),
                        ("chain", "in process: `verify_entries(store.entries())`"),
                        ("rebuild", "in process: every paper's record rebuilt (`records_as_of`), no file written")):
        lines.append(f"| {shown} | {statistics.median(runs[name + ' packed']):.2f} | "
                     f"{statistics.median(runs[name + ' plain']):.2f} | {paired(runs, name + ' packed', name + ' plain'):.2f} |")
    lines += ["", f"Packing every payload (`ledger.storage.payloads.pack`, level 9) took {share:.1%} of the import's time "
              "(`build_ledger`, in process, the same events)."]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=4_000)
    parser.add_argument("--postgres", default=None, help="a PostgreSQL server URL (a schema is made and dropped)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", default=str(HERE / "RESULTS.md"))
    args = parser.parse_args(argv)
    compiled()
    folder = Path(tempfile.mkdtemp(prefix="ledger-disk-bench-"))
    try:
        lines = measure(args.events, args.postgres, args.reps, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    lines.append(SECTION_END)
    print("\n".join(lines))
    replace_section(Path(args.out), "\n".join(lines), SECTION_BEGIN, SECTION_END)
    return 0


if __name__ == "__main__":
    run_main(main)
