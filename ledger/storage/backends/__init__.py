"""What differs by database, behind one interface: one small module per backend (`sqlite`, `postgres`).

The store (`ledger.storage.store`, its cursor and its writer) asks its backend for everything
database-specific: the engine, the guards that make the log append-only, how a write transaction begins
(taking the write lock), bulk inserts, the fact-key probe, and what a driver error means (recognised by error
code, never by message text). Every backend passes the same contract suite (`tests/ledger/storage/test_store.py`).
"""

from __future__ import annotations

from ledger.core.errors import InputError
from ledger.core.redact import redact_url
from ledger.storage.backends.base import LOCK_TIMEOUT_SECONDS, Backend
from ledger.storage.backends.postgres import PostgreSQL
from ledger.storage.backends.sqlite import SQLite, file_of

__all__ = ["LOCK_TIMEOUT_SECONDS", "Backend", "PostgreSQL", "SQLite", "backend_for"]


def backend_for(url: str) -> Backend:
    """The backend of a SQLAlchemy URL.
    Raises: InputError for a database this ledger does not support."""
    if url.startswith("sqlite"):
        return SQLite()
    if url.startswith("postgresql"):
        return PostgreSQL()
    raise InputError(f"--db {redact_url(url)}: not a SQLite file or a postgresql:// URL")


def database_url(location: str) -> str:
    """`--db` takes a SQLAlchemy URL or a path to a SQLite file; the URL either way."""
    return location if "://" in location else f"sqlite:///{location}"


def shown_location(url: str) -> str:
    """A database as errors name it: a SQLite file by its path, a server by its URL without the password."""
    return file_of(url) or redact_url(url)


def sqlite_path(location: str) -> str | None:
    """The file behind a `--db` location when it names a SQLite file (None for a server or an in-memory
    database)."""
    return file_of(database_url(location))
