"""What every command module shares: the global options' values, opening the store, reading key files and
dates, and writing results. Command modules import this, never `cli.main` (which imports them).

stdout carries results only (`write_stdout`, `write_json`); progress goes to stderr, and only on a terminal.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ledger.canonical import canonical
from ledger.errors import InputError
from ledger.inputs import decode_input, read_input
from ledger.logfile import open_ledger
from ledger.signed_notes import Signer, Verifier, parse_signer, parse_verifier
from ledger.store import Store
from ledger.times import parse_when

DEFAULT_DB = "ledger.db"
Json = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]  # every command's --json


def db_location(ctx: typer.Context) -> str:
    return ctx.obj["db"]


def open_store(ctx: typer.Context) -> Store:
    """The ledger named by --db (an exported .jsonl log is loaded read-only); never creates one."""
    return open_ledger(db_location(ctx))


def when(option: str, value: str | None) -> tuple[str, str] | None:
    """A date option's (text as shown, ordering key), or None when not given; errors name the option."""
    if value is None:
        return None
    try:
        return parse_when(value)
    except InputError as exc:
        raise InputError(f"{option}: {exc}") from None


def read_text(name: str, expected: str) -> str:
    return decode_input(name, read_input(name), expected)


def _load_key(name: str, parse, expected: str):
    try:
        return parse(read_text(name, expected))
    except InputError as exc:
        message = str(exc)
        raise InputError(message if message.startswith(f"{name}: ") else f"{name}: {message}") from None


def load_signer(name: str) -> Signer:
    return _load_key(name, parse_signer, "a signing key")


def load_verifier(name: str) -> Verifier:
    return _load_key(name, parse_verifier, "a verifier key")


def progress(message: str) -> None:
    """Progress goes to stderr, and only when a person is watching."""
    if sys.stderr.isatty():
        typer.echo(message, err=True)


def write_stdout(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def write_json(value: object) -> None:
    """`--json` output: one canonical line (stable, sorted keys) on stdout."""
    write_stdout(canonical(value) + b"\n")
