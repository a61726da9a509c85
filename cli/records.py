"""Commands about records: import, replay, verify."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Optional

import orjson
import typer

from cli.main import db_location, open_store, progress, write_stdout
from ledger.chain import hex_hash
from ledger.errors import InputError, IntegrityError, NotFoundError
from ledger.importer import import_files, read_input
from ledger.store import Store
from ledger.times import parse_when
from ledger.verify import verify_chain, verify_record
from projections.record import build_record, record_bytes
from projections.text import render_text

app = typer.Typer()

AsOf = Annotated[str, typer.Option("--as-of", help="Effective time: a date (end of that day, UTC) or a timestamp.")]
KnownAt = Annotated[Optional[str], typer.Option("--known-at", help="Only events the ledger had recorded by then.")]
Json = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


@app.command("import")
def import_(
    ctx: typer.Context,
    files: Annotated[list[str], typer.Argument(help="Published records (JSON) or event lines (JSONL); - for stdin.")],
    json: Json = False,
) -> None:
    """Append the facts of published records or event lines, all or nothing."""
    store = open_store(ctx)
    result = import_files(store, files)
    seq, chain = result.head
    if json:
        write_stdout(orjson.dumps({"appended": result.appended, "present": result.present,
                                   "head": {"seq": seq, "chain_hash": hex_hash(chain)}}) + b"\n")
    else:
        typer.echo(f"appended {result.appended} events ({result.present} already present); head {seq} {hex_hash(chain)}")


def _when(option: str, value: str | None) -> tuple[str, str] | None:
    if value is None:
        return None
    try:
        return parse_when(value)
    except InputError as exc:
        raise InputError(f"{option}: {exc}") from None


def _render(record: dict, fmt: str) -> bytes:
    return record_bytes(record) if fmt == "json" else render_text(record).encode()


@app.command()
def replay(
    ctx: typer.Context,
    as_of: AsOf,
    paper: Annotated[Optional[str], typer.Option("--paper", help="arXiv id; default: every paper.")] = None,
    known_at: KnownAt = None,
    fmt: Annotated[str, typer.Option("--format", help="json or text.")] = "json",
    out: Annotated[Optional[Path], typer.Option("--out", help="File (one paper) or folder (every paper).")] = None,
    stats: Annotated[bool, typer.Option("--stats", help="SQL statements, events read and time on stderr.")] = False,
) -> None:
    """Rebuild records as of a date, byte for byte as published."""
    if fmt not in ("json", "text"):
        raise InputError(f"--format: expected json or text, found {fmt!r}")
    as_of_text, as_of_key = _when("--as-of", as_of)
    known = _when("--known-at", known_at)
    known_key = known[1] if known else None
    store = open_store(ctx)
    started, store.statements = time.perf_counter(), 0
    if paper is not None:
        facts = store.paper_facts(paper, known_key)
        record = build_record(paper, facts, as_of_text, as_of_key)
        data = _render(record, fmt)
        if out is not None:
            _write(out, data)
        else:
            write_stdout(data)
        if stats:
            elapsed = (time.perf_counter() - started) * 1000
            typer.echo(f"statements: {store.statements}, events read: {len(facts)}, time: {elapsed:.1f} ms", err=True)
        return
    papers = store.papers(as_of_key, known_key)
    if not papers:
        raise NotFoundError(f"no record of any paper as of {as_of_text}")
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    suffix = ".json" if fmt == "json" else ".txt"
    for index, arxiv_id in enumerate(papers, start=1):
        record = build_record(arxiv_id, store.paper_facts(arxiv_id, known_key), as_of_text, as_of_key)
        data = _render(record, fmt)
        if out is not None:
            _write(out / f"{arxiv_id}{suffix}", data)
        else:
            write_stdout(data + b"\n")
        progress(f"{index}/{len(papers)} {arxiv_id}")
    if stats:
        elapsed = (time.perf_counter() - started) * 1000
        typer.echo(f"statements: {store.statements}, papers: {len(papers)}, time: {elapsed:.1f} ms", err=True)


def _write(path: Path, data: bytes) -> None:
    try:
        path.write_bytes(data)
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror}") from None


@app.command()
def verify(
    ctx: typer.Context,
    records: Annotated[Optional[list[str]], typer.Argument(help="Published records; none: the whole chain.")] = None,
    json: Json = False,
) -> None:
    """Re-check published records (digests and history), or with no file the whole chain."""
    location = db_location(ctx)
    if not records:
        if location.endswith(".jsonl"):
            from ledger.logfile import iter_log

            account = verify_chain(iter_log(location))
        else:
            store = open_store(ctx)
            account = verify_chain(store.entries())
        _say(json, [{"ok": True, "checked": "chain", "account": account}], account)
        return
    store = _store_if_any(ctx)
    results, failures = [], []
    for name in records:
        try:
            account = verify_record(name, read_input(name), store)
            results.append({"file": name, "ok": True, "account": account})
        except IntegrityError as exc:
            failures.extend(exc.problems)
            results.append({"file": name, "ok": False, "problems": exc.problems})
    if json:
        write_stdout(orjson.dumps(results) + b"\n")
    else:
        for result in results:
            if result["ok"]:
                typer.echo(result["account"])
    if failures:
        raise IntegrityError(f"{len(failures)} problem(s)", failures)


def _store_if_any(ctx: typer.Context) -> Store | None:
    """Records re-check without a ledger; with one, they are also compared with its history."""
    location = db_location(ctx)
    if "://" not in location and not Path(location).exists():
        progress(f"no ledger at {location}: checking published digests only")
        return None
    return open_store(ctx)


def _say(json: bool, results: list[dict], text: str) -> None:
    if json:
        write_stdout(orjson.dumps(results) + b"\n")
    else:
        typer.echo(text)
