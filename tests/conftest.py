"""Shared fixtures: the seed records, a fresh ledger on every configured backend, the CLI.

Backends: SQLite always; PostgreSQL whenever LEDGER_TEST_POSTGRES holds a server URL (.ci/run starts a real
server and sets it). Under CI the PostgreSQL backend is required: a missing URL fails, never skips.
"""

from __future__ import annotations

import os
import subprocess
import sys
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
    def of(cls, store) -> "Cli":
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
