"""Many writers and crashes, with real processes on every backend.

Concurrent importers must keep one gap-free chain with every event exactly once and no lock errors;
a SIGKILLed import must leave the ledger with all of that import or none of it.
"""

import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from ledger.core.times import When
from ledger.log.chain import verify_entries
from ledger.model.events import make_event
from ledger.services.proofs import evidence_bundle
from ledger.storage.backends import sqlite_path
from ledger.storage.backends.postgres import LOCK_ID as WRITE_LOCK
from ledger.storage.store import Store
from tests.conftest import AS_OF_004, PAPER_004, SEED_004
from tests.helpers import event_line


def stream(prefix: str, papers: int, refs: int = 5) -> bytes:
    """Event lines for `papers` papers of `refs` references each, ids unique to `prefix`."""
    lines = []
    for n in range(papers):
        arxiv_id = f"{prefix}.{n:05d}"
        lines.append(event_line("paper.snapshot", {"arxiv_id": arxiv_id, "snapshot_observed_at": "2026-08-01T00:00:00Z",
                                                   "title": f"Paper {arxiv_id}", "latest_version": 1}))
        for ref in range(refs):
            citation = {"cited_paper": None, "cited_work": {"title": f"Work {ref}"},
                        "citing_paper": {"arxiv_id": arxiv_id, "snapshot_observed_at": "2026-08-01T00:00:00Z"},
                        "reference_index": ref, "source": "pdf_text", "source_observed_at": "2026-08-02T00:00:00Z"}
            lines.append(event_line("citation.observed", {"citation": citation, "observation_id": f"{arxiv_id}/{ref}"}))
    return b"".join(lines)


def start_import(location: str, *files: str) -> subprocess.Popen:
    env = {**os.environ, "LEDGER_DB": location}
    return subprocess.Popen([sys.executable, "-m", "ledger.cli", "import", "--json", *files], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.parametrize("round_", range(3))
def test_concurrent_appenders_keep_one_gap_free_chain(store, ledger_location, tmp_path, round_):
    files = []
    for worker in range(4):
        path = tmp_path / f"worker-{worker}.jsonl"
        path.write_bytes(stream(f"26{round_}{worker}", papers=60))
        files.append(str(path))
    location = ledger_location  # where the store was created: a SQLite path or a PostgreSQL URL
    # Four event streams, and the same published record from two processes at once.
    procs = [start_import(location, f) for f in files] + [start_import(location, str(SEED_004)) for _ in range(2)]
    outcomes = [p.communicate(timeout=300) + (p.returncode,) for p in procs]
    for _, stderr, code in outcomes:
        assert (code, stderr) == (0, b""), stderr.decode()
    entries = list(store.entries())
    assert [e.seq for e in entries] == list(range(1, len(entries) + 1))
    assert verify_entries(entries)[0] == len(entries)
    # Every event of every process exactly once: 4 streams of 60 * 6 events, and the seed's 40 once.
    assert len(entries) == 4 * 60 * 6 + 40
    payloads = [e.payload for e in entries]
    assert len(set(payloads)) == len(payloads)
    appended = sorted(__import__("json").loads(out)["appended"] for out, _, _ in outcomes)
    assert appended == [0, 40, 360, 360, 360, 360]


def holds_the_write_lock(store) -> bool:
    """Whether some process holds the ledger's write lock now (asked from outside, without waiting for it)."""
    if store.dialect == "sqlite":
        probe = sqlite3.connect(sqlite_path(store.url), timeout=0, isolation_level=None)
        try:
            probe.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorname.startswith("SQLITE_BUSY"):
                return True
            raise
        else:
            probe.execute("ROLLBACK")
            return False
        finally:
            probe.close()
    with store.reading() as cursor:  # the advisory lock every writer takes: key 0x1ED6E2 is (classid 0, objid)
        return cursor.execute("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = 0 "
                              "AND objid = ? AND objsubid = 1", (WRITE_LOCK,)).fetchone() is not None


def test_a_killed_import_leaves_everything_or_nothing(store, ledger_location, tmp_path):
    location = ledger_location  # where the store was created: a SQLite path or a PostgreSQL URL
    outcomes = {"killed inside its transaction": 0, "committed before the kill": 0}
    for attempt in range(3):
        path = tmp_path / f"attempt-{attempt}.jsonl"
        path.write_bytes(stream(f"27{attempt:02d}", papers=1500))
        before = store.head()[0]
        proc = start_import(location, str(path))
        # Wait until the import is inside its write transaction (it holds the write lock, taken before it
        # reads the head and appends), then kill it: the case under test, observed, not hoped for by a timer.
        while not holds_the_write_lock(store):
            try:
                proc.wait(timeout=0.005)
            except subprocess.TimeoutExpired:
                continue
            raise AssertionError(f"attempt {attempt}: the import ended before it was seen appending: "
                                 f"{proc.stderr.read().decode()}")
        assert store.head()[0] == before  # nothing of it committed yet
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        assert proc.returncode == -signal.SIGKILL
        after_store = Store.open(location)
        entries = list(after_store.entries())
        after_store.close()
        assert verify_entries(entries)[0] == len(entries)
        appended = len(entries) - before
        assert appended in (0, 1500 * 6), f"attempt {attempt}: {appended} events survived a kill"
        outcomes["killed inside its transaction" if appended == 0 else "committed before the kill"] += 1
    print(f"kills on {store.dialect}: {outcomes}")
    assert outcomes["killed inside its transaction"] >= 1, outcomes
    # The ledger is whole and writable after the kills: the last stream imports in full.
    done = subprocess.run([sys.executable, "-m", "ledger.cli", "import", str(path)], capture_output=True, timeout=300,
                          env={**os.environ, "LEDGER_DB": location})
    assert done.returncode == 0, done.stderr.decode()
    assert verify_entries(store.entries())[0] == store.head()[0]


def test_sqlite_runs_with_durable_settings(tmp_path):
    store = Store.create(str(tmp_path / "durable.db"))
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"


def test_a_writer_kept_waiting_past_the_lock_timeout_exits_3_and_appends_nothing(store, ledger_location, tmp_path):
    location = ledger_location  # where the store was created: a SQLite path or a PostgreSQL URL
    path = tmp_path / "waiting.jsonl"
    path.write_bytes(stream("2800", papers=2))
    holder = Store.open(location)
    with holder.writing():  # another writer holds the write lock (BEGIN IMMEDIATE / the advisory lock)
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "ledger.cli", "import", str(path)], capture_output=True, timeout=120,
                              env={**os.environ, "LEDGER_DB": location, "LEDGER_LOCK_TIMEOUT": "1"})
        waited = time.monotonic() - started
    holder.close()
    assert done.returncode == 3, done.stderr.decode()
    assert done.stderr.decode().splitlines() == [f"ledger: {store.shown}: locked by another writer for more than 1s "
                                                 "(append)"]
    assert waited >= 1
    assert store.head()[0] == 0


def test_readers_do_not_wait_for_a_writer(seeded, ledger_location, tmp_path):
    location = ledger_location  # where the store was created: a SQLite path or a PostgreSQL URL
    holder = Store.open(location)
    with holder.writing() as writer:  # a writer holds the lock, with an append not yet committed
        writer.append([make_event("paper.snapshot", {"arxiv_id": "2801.00001", "title": "Uncommitted",
                                                     "snapshot_observed_at": "2026-08-01T00:00:00Z"})])
        done = subprocess.run([sys.executable, "-m", "ledger.cli", "head"], capture_output=True, timeout=60,
                              env={**os.environ, "LEDGER_DB": location, "LEDGER_LOCK_TIMEOUT": "1"})
    holder.close()
    assert (done.returncode, done.stderr) == (0, b"")
    assert done.stdout.split()[0] == b"40"  # the committed head, at once
    assert seeded.head()[0] == 41


AS_OF_004_AT = When(AS_OF_004, "2026-08-09T16:41:00.000000Z")

# A writer that appends one sweep of paper 2407.20018 per transaction, each effective before the seed's as_of,
# so each one enters the paper's record and its evidence bundle. It says "appending" once it has begun.
SWEEPER = """
import sys, time
from ledger.model.events import make_event
from ledger.storage.backends.postgres import LOCK_ID as WRITE_LOCK
from ledger.storage.backends import sqlite_path
from ledger.storage.store import Store

store = Store.open(sys.argv[1])
for n in range(int(sys.argv[2])):
    with store.writing() as writer:
        writer.append([make_event("source.checked", {"observed_at": f"2026-08-01T00:00:00.{n:06d}Z",
                                                     "paper": "2407.20018", "source": "crossref"})])
    if n == 0:
        print("appending", flush=True)
    time.sleep(0.002)  # a sweep waits on its sources: a writer in a tight loop would starve the bundles' lock
print("done", flush=True)
"""


def test_evidence_bundles_built_while_a_writer_appends_all_build_and_verify(seeded, ledger_location):
    from ledger.audit.evidence import verify_bundle
    from ledger.cli.wording import bundle_account
    from ledger.log.signed_notes import generate_signer

    signer = generate_signer("example.org/ledger")
    appends = 400
    writer = subprocess.Popen([sys.executable, "-c", SWEEPER, ledger_location, str(appends)], text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env={**os.environ, "LEDGER_SQLITE_SYNCHRONOUS": "OFF"})
    try:
        assert writer.stdout.readline() == "appending\n", writer.stderr.read()
        bundles = []
        while writer.poll() is None or len(bundles) < 3:
            bundles.append(evidence_bundle(seeded, PAPER_004, AS_OF_004_AT, signer))
    finally:
        if writer.poll() is None:
            writer.kill()
        writer.wait(timeout=60)
    assert writer.returncode == 0, writer.stderr.read()
    sizes = [len(bundle["events"]) for bundle in bundles]
    # The case was exercised: bundles were built at many sizes while the log grew under them.
    assert len(set(sizes)) >= 3 and sizes == sorted(sizes), sizes
    assert seeded.head()[0] == 40 + appends
    for bundle, size in zip(bundles, sizes):
        assert bundle_account(verify_bundle(bundle, signer.verifier)).startswith(f"ok: {size} events")


def sweep(n: int):
    return make_event("source.checked", {"observed_at": f"2026-08-01T00:00:00.{n:06d}Z", "paper": PAPER_004,
                                         "source": "crossref"})


def test_an_append_landing_between_a_bundles_reads_is_not_in_it(seeded, monkeypatch):
    # The interleaving the writer above can only make likely, forced: another connection commits a fact of
    # the paper right after the bundle has read the head, before it reads the paper's facts.
    from ledger.audit.evidence import verify_bundle
    from ledger.cli.wording import bundle_account
    from ledger.log.signed_notes import generate_signer
    from ledger.storage.cursor import Cursor

    other, read_facts, landed = Store.open(seeded.url), Cursor.paper_facts, []

    def append_first(cursor, *args, **kwargs):
        if not landed:
            with other.writing() as writer:
                landed.extend(writer.append([sweep(1)]))
        return read_facts(cursor, *args, **kwargs)

    monkeypatch.setattr(Cursor, "paper_facts", append_first)
    signer = generate_signer("example.org/ledger")
    bundle = evidence_bundle(seeded, PAPER_004, AS_OF_004_AT, signer)
    other.close()
    assert [e.seq for e in landed] == [41] and seeded.head()[0] == 41
    assert [event["seq"] for event in bundle["events"]] == list(range(1, 41))
    assert bundle_account(verify_bundle(bundle, signer.verifier)).startswith("ok: 40 events are in the log of size 40")


def test_a_snapshot_reads_the_ledger_as_of_one_instant(seeded):
    other = Store.open(seeded.url)
    with seeded.snapshot() as cursor:
        assert cursor.head()[0] == 40
        with other.writing() as writer:  # commits while the snapshot is open; it never waits for it
            writer.append([sweep(2)])
        assert cursor.head()[0] == 40
        assert len(cursor.paper_facts(PAPER_004)) == 40
    other.close()
    assert seeded.head()[0] == 41 and len(seeded.paper_facts(PAPER_004)) == 41
    with seeded.reading() as cursor:
        assert len(cursor.paper_facts(PAPER_004, size=40)) == 40
