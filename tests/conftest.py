"""Shared fixtures: the seed records, a fresh ledger on every configured backend, the CLI.

Backends: SQLite always; PostgreSQL whenever LEDGER_TEST_POSTGRES holds a server URL (.ci/run starts a real
server and sets it). Under CI the PostgreSQL backend is required: a missing URL fails, never skips.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

FIXTURES = Path(__file__).parent / "fixtures"
SEED_004 = FIXTURES / "seed_004_2407.20018.json"
SEED_000 = FIXTURES / "seed_000_2411.13055.txt"
SEED_003 = FIXTURES / "seed_003_2412.14374.txt"
PAPER_004 = "2407.20018"
AS_OF_004 = "2026-08-09T16:41:00Z"
POSTGRES = os.environ.get("LEDGER_TEST_POSTGRES")

if os.environ.get("CI") and not POSTGRES:
    raise pytest.UsageError("CI must run the PostgreSQL backend: set LEDGER_TEST_POSTGRES (see .ci/run)")

BACKENDS = ["sqlite"] + (["postgresql"] if POSTGRES else [])


def postgres_schema_url(schema: str) -> str:
    separator = "&" if "?" in POSTGRES else "?"
    return f"{POSTGRES}{separator}options=-csearch_path%3D{schema}"


def _admin(sql: str) -> None:
    import psycopg

    plain = POSTGRES.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute(sql)


class Standby:
    """A hot standby of the LEDGER_TEST_POSTGRES server (`pg_basebackup -R`), read-only, on loopback."""

    def __init__(self, url: str):
        self.url = url  # postgresql+psycopg://USER@127.0.0.1:PORT/postgres

    def schema_url(self, schema: str) -> str:
        """`postgres_schema_url(schema)` on the standby."""
        return postgres_schema_url(schema).replace(POSTGRES.split("?")[0], self.url, 1)

    def wait(self, timeout: float = 60) -> None:
        """Return once the standby has replayed everything the primary has written so far."""
        import psycopg

        with psycopg.connect(_plain(POSTGRES), autocommit=True) as primary:
            lsn = primary.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
        deadline = time.monotonic() + timeout
        with psycopg.connect(_plain(self.url), autocommit=True) as standby:
            while not standby.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (lsn,)).fetchone()[0]:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the standby did not replay up to {lsn} within {timeout:g}s")
                time.sleep(0.02)  # replication is asynchronous: the standby is polled, its clock is not the ledger's


def _plain(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# Settings a hot standby must hold at least as high as its primary, or it refuses to start.
_AS_PRIMARY = ("max_connections", "max_worker_processes", "max_wal_senders", "max_prepared_transactions",
               "max_locks_per_transaction")


@pytest.fixture(scope="session")
def standby():
    """A hot standby of the PostgreSQL server the tests use, made with `pg_basebackup -R -X stream` and started on
    a port of its own; stopped and removed at the end. Skipped without LEDGER_TEST_POSTGRES."""
    if not POSTGRES:
        pytest.skip("a hot standby needs PostgreSQL: set LEDGER_TEST_POSTGRES (see .ci/postgres.sh)")
    import psycopg
    from sqlalchemy.engine import make_url

    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda b: int(b.split("/")[-2]))
    if not bins:
        pytest.skip("a hot standby needs PostgreSQL's server binaries (/usr/lib/postgresql/*/bin)")
    primary = make_url(POSTGRES)
    with psycopg.connect(_plain(POSTGRES), autocommit=True) as conn:
        settings = {name: conn.execute(f"SHOW {name}").fetchone()[0] for name in _AS_PRIMARY}
    as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    data = tempfile.mkdtemp(prefix="ledger-standby.")
    if as_pg:
        shutil.chown(data, "postgres")
    os.chmod(data, 0o700)
    port = _free_port()
    options = f"-p {port} -c listen_addresses=127.0.0.1 -k {data} -c hot_standby=on " + \
              " ".join(f"-c {name}={value}" for name, value in settings.items())
    try:
        subprocess.run([*as_pg, f"{bins[-1]}/pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U",
                        primary.username, "-D", data, "-R", "-X", "stream"], check=True, capture_output=True)
        subprocess.run([*as_pg, f"{bins[-1]}/pg_ctl", "-D", data, "-l", f"{data}/server.log", "-w", "-o", options,
                        "start"], check=True, capture_output=True)
        made = Standby(f"postgresql+psycopg://{primary.username}@127.0.0.1:{port}/{primary.database}")
        made.wait()
        yield made
    finally:
        subprocess.run([*as_pg, f"{bins[-1]}/pg_ctl", "-D", data, "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    return request.param


@pytest.fixture
def new_location(backend, tmp_path):
    """A factory of fresh, not yet created ledger locations: SQLite paths or PostgreSQL schemas."""
    schemas = []

    def make() -> str:
        if backend == "sqlite":
            return str(tmp_path / f"ledger-{uuid.uuid4().hex[:8]}.db")
        schema = f"t_{uuid.uuid4().hex[:12]}"
        _admin(f"CREATE SCHEMA {schema}")
        schemas.append(schema)
        return postgres_schema_url(schema)

    yield make
    for schema in schemas:
        _admin(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def ledger_location(new_location) -> str:
    return new_location()


@pytest.fixture
def store(ledger_location):
    from ledger.storage.store import Store

    created = Store.create(ledger_location)
    yield created
    created.close()


@pytest.fixture
def seeded(store):
    from ledger.importing.importer import import_files

    import_files(store, [str(SEED_004)])
    return store


@pytest.fixture
def seed_bytes() -> bytes:
    return SEED_004.read_bytes()


class Cli:
    """Runs the real typer app in-process with --db set; stdout and stderr are kept apart."""

    def __init__(self, location: str):
        self.location = location
        self.runner = CliRunner()

    @classmethod
    def of(cls, store) -> Cli:
        return cls(store.url[len("sqlite:///"):] if store.dialect == "sqlite" else store.url)

    def __call__(self, *args: str, input: bytes | str | None = None):
        return self.runner.invoke(__import__("ledger.cli.main").cli.main.app, ["--db", self.location, *args], input=input,
                                  env={"LEDGER_DB": None})


@pytest.fixture
def cli(ledger_location) -> Cli:
    return Cli(ledger_location)


def run_ledger(*args: str, cwd: str | Path | None = None, env: dict | None = None, input: bytes | None = None,
               timeout: float = 120) -> subprocess.CompletedProcess:
    """The installed console script in a real process."""
    full_env = {k: v for k, v in os.environ.items() if k != "LEDGER_DB"}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "ledger.cli", *args], cwd=cwd, env=full_env, input=input,
                          capture_output=True, timeout=timeout)


# The slow tier, by whole file: browsers, servers and witnesses in subprocesses, crash and concurrency runs,
# property and fuzz runs, the benchmarks' own tests. A slow test elsewhere carries @pytest.mark.slow.
# `pytest -m "not slow"` (CONTRIBUTING.md) is the fast tier to run while working; CI runs everything.
SLOW_FOLDERS = ("tests/fuzz/", "tests/benchmarks/")
SLOW_FILES = {
    "tests/web/test_browser.py", "tests/web/test_reader_pages.py", "tests/web/test_fuzz.py",
    "tests/cli/test_witnessing.py", "tests/cli/test_auditing_witness.py", "tests/cli/test_secrets.py", "tests/cli/test_go_interop.py",
    "tests/cli/test_first_hour.py", "tests/cli/test_completeness.py", "tests/cli/test_http_client.py",
    "tests/cli/test_monitor.py", "tests/projections/test_corrections_property.py",
    "tests/ledger/storage/test_concurrency.py", "tests/ledger/storage/test_readonly.py",
    "tests/ledger/importing/test_import_jobs.py",
}


def pytest_collection_modifyitems(config, items):
    root = Path(__file__).resolve().parent.parent
    # A file renamed away from this list would quietly join the fast tier.
    assert [f for f in sorted(SLOW_FILES) if not (root / f).is_file()] == [], "SLOW_FILES names a missing file"
    for item in items:
        where = Path(item.fspath).resolve().relative_to(root).as_posix()
        if where in SLOW_FILES or where.startswith(SLOW_FOLDERS):
            item.add_marker(pytest.mark.slow)
