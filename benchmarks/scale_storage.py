"""What `benchmarks/scale.py` measures of the disk and of PostgreSQL: bytes per event of the SQLite file (by table
and index, from SQLite's dbstat), of PostgreSQL's relations, of the entries' canonical bytes and of a
zstd-compressed `ledger export`; and the PostgreSQL import, one `ledger import` and 1 or 4 concurrent writers.

It reads the databases only (dbstat, pg_total_relation_size), in a throwaway PostgreSQL schema of its own that
it always drops; it never changes a ledger it measures.
"""

from __future__ import annotations

import shutil
import sqlite3
import sys
import uuid
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks.common import gate
from benchmarks.scale_steps import Ran, Row, imported, ledger, row, run, together, verified
from ledger.log.chain import entry_bytes
from ledger.model.events import PAPER_SNAPSHOT
from ledger.storage.store import Store


def sqlite_bytes(db: Path) -> tuple[int, dict[str, int]]:
    """The SQLite file's bytes (with its WAL, if one is left) and its pages' bytes by table or index (dbstat)."""
    total = sum(Path(f"{db}{suffix}").stat().st_size for suffix in ("", "-wal") if Path(f"{db}{suffix}").exists())
    connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        parts = dict(connection.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"))
    except sqlite3.OperationalError:  # a Python whose SQLite lacks the dbstat table: the total alone
        parts = {}
    finally:
        connection.close()
    return total, parts


def entry_sizes(location: str) -> dict[str, tuple[int, int]]:
    """(count, canonical entry bytes) by kind over the whole log: the bytes each entry hash is taken of."""
    sizes: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    store = Store.open(location)
    try:
        for e in store.entries():
            held = sizes[e.kind]
            held[0] += 1
            held[1] += len(entry_bytes(e.seq, e.kind, e.effective_at, e.recorded_at, e.payload))
    finally:
        store.close()
    return {kind: (count, total) for kind, (count, total) in sorted(sizes.items())}


def exported(db: str, folder: Path, events: int, seen=lambda: None) -> tuple[Ran, Ran, int]:
    """`ledger export` into a file, then `zstd` (level 3, its default, every core) of it: both runs and the
    compressed bytes; `seen` is called while both files are there. Both are then removed.

    Raises:
        GateError: when a command fails or zstd is not installed.
    """
    gate(shutil.which("zstd") is not None, "zstd is not installed (.ci/run installs it)")
    log, packed = folder / "export.jsonl", folder / "export.jsonl.zst"
    ran = ledger(db, "export", stdout=log)
    with log.open("rb") as lines:
        gate(sum(1 for _ in lines) == events, "export: not one line an event")
    squeezed = run(["zstd", "-q", "-f", "-T0", str(log), "-o", str(packed)], "zstd")
    size = packed.stat().st_size
    seen()  # the folder's peak: both files beside the ledger and the site
    log.unlink()
    packed.unlink()
    return ran, squeezed, size


# -- PostgreSQL ------------------------------------------------------------------------------------------------
@contextmanager
def schema(url: str) -> Iterator[str]:
    """A new, empty ledger in a throwaway schema of `url`'s database: its location; the schema dropped after."""
    import psycopg

    name = f"scale_{uuid.uuid4().hex[:10]}"
    plain = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    location = f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{name}"
    try:
        ledger(location, "init")
        yield location
    finally:
        with psycopg.connect(plain, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {name} CASCADE")


def relation_bytes(location: str) -> tuple[int, dict[str, int]]:
    """The bytes of the ledger's tables in its schema, each with its indexes and TOAST (pg_total_relation_size)."""
    import psycopg

    url, _, options = location.partition("?options=-csearch_path%3D")
    name = options.split("&")[0]
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as conn:
        parts = dict(conn.execute(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = %s AND c.relkind = 'r' ORDER BY 2 DESC", (name,)).fetchall())
    return sum(parts.values()), parts


SNAPSHOT_LINE = b'"kind":"%s"' % PAPER_SNAPSHOT.encode()  # a paper's events begin with its snapshot
WRITER = """
import sys
from ledger import import_files, open_ledger
with open_ledger(sys.argv[1]) as book:
    for chunk in sys.argv[2:]:
        import_files(book, chunk)  # one transaction a chunk: the sequence guard keeps the writers' seqs contiguous
"""


def chunks(lines: Path, folder: Path, writers: int, size: int = 5000) -> list[list[Path]]:
    """The event lines cut into files of about `size` lines at papers' boundaries (a paper's events start with its
    snapshot), the papers dealt to `writers` in turn: each writer's chunk files, in order."""
    folder.mkdir(parents=True, exist_ok=True)
    owned: list[list[Path]] = [[] for _ in range(writers)]
    buffers: list[list[bytes]] = [[] for _ in range(writers)]
    paper = -1

    def flush(w: int) -> None:
        path = folder / f"w{w}-{len(owned[w]):06d}.jsonl"
        path.write_bytes(b"".join(buffers[w]))
        owned[w].append(path)
        buffers[w].clear()

    with lines.open("rb") as given:
        for line in given:
            if SNAPSHOT_LINE in line:
                paper += 1
                if len(buffers[paper % writers]) >= size:
                    flush(paper % writers)
            buffers[paper % writers].append(line)
    for w in range(writers):
        if buffers[w]:
            flush(w)
    return owned


def import_rows(location: str, lines: Path, events: int, jobs: int, chunk: int | None, folder: Path) -> tuple[Ran, str]:
    """`ledger import --jobs N` of the event lines into the ledger at `location`: one command (one transaction), or
    with `chunk`, the lines cut into files of about `chunk` lines at papers' boundaries, one command each in turn
    (the seconds summed, the largest RSS); the run and what it includes.

    Raises:
        GateError: when a command fails or does not append every event of its file.
    """
    if not chunk:
        return imported(location, lines, jobs, events), "one command, one transaction"
    files = chunks(lines, folder, 1, size=chunk)[0]
    seconds, rss = 0.0, 0
    for path in files:
        with path.open("rb") as given:
            count = sum(1 for _ in given)
        ran = imported(location, path, jobs, count)
        seconds, rss = seconds + ran.seconds, max(rss, ran.rss)
    shutil.rmtree(folder)
    return Ran(seconds, rss, b""), f"{len(files):,} commands in turn, one a file of ~{chunk:,} lines (seconds summed)"


def postgres_rows(url: str, lines: Path, events: int, folder: Path,
                  chunk: int | None = None) -> tuple[list[Row], tuple[int, dict[str, int]]]:
    """On PostgreSQL: `ledger import` of the event lines (one transaction, or `chunk` as `import_rows`), then 1 and
    4 concurrent writers of chunked transactions, each into a new schema, each verified; and the relation bytes
    after the first.

    Raises:
        GateError: when an import, a writer or the verification fails.
    """
    rows = []
    with schema(url) as location:
        ran, how = import_rows(location, lines, events, 1, chunk, folder / "import")
        rows.append(row("pg import", f"`ledger --db postgresql://... import events.jsonl`, 1 job, {how} (start-up, "
                        "decoding, checks, append, tree)", ran, events, "events"))
        stored = relation_bytes(location)
        verified(location, events)
    for writers in (1, 4):
        owned = chunks(lines, folder / f"chunks-{writers}", writers)
        with schema(url) as location:
            ran = together([[sys.executable, "-c", WRITER, location, *map(str, mine)] for mine in owned],
                           f"{writers} PostgreSQL writers")
            verified(location, events)  # every seq once, in order, and the chain re-computes
        shutil.rmtree(folder / f"chunks-{writers}")
        who = "1 writer process" if writers == 1 else f"{writers} concurrent writer processes"
        rows.append(row(f"pg writers {writers}", f"{who} (`ledger.import_files`, one "
                        "transaction per chunk of ~5,000 lines, whole papers dealt in turn), first start to last "
                        "exit (start-up, decoding, checks, append, tree, waiting on the write lock)", ran, events, "events"))
    return rows, stored

