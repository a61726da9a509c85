"""Commands about the log itself: init, head, export, history."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.main import Json, db_location, open_store, write_json, write_stdout
from ledger.chain import hex_hash
from ledger.errors import NotFoundError
from ledger.export import export_line
from ledger.store import Store
from projections import audit

app = typer.Typer()


@app.command()
def init(ctx: typer.Context) -> None:
    """Create an empty ledger. No other command creates one."""
    location = db_location(ctx)
    Store.create(location)
    typer.echo(f"created an empty ledger at {location}")


@app.command()
def head(ctx: typer.Context, json: Json = False) -> None:
    """The chain head: sequence number and chain hash (what gets published)."""
    seq, chain, recorded = open_store(ctx).head()
    if json:
        write_json({"seq": seq, "chain_hash": hex_hash(chain), "recorded_at": recorded})
    else:
        typer.echo(f"{seq} {hex_hash(chain)}")


@app.command()
def export(ctx: typer.Context) -> None:
    """The whole log as JSON lines, every hash included, oldest first."""
    for entry in open_store(ctx).entries():
        write_stdout(export_line(entry))


@app.command()
def history(
    ctx: typer.Context,
    subject: Annotated[str, typer.Argument(metavar="ID", help="An observation id or an arXiv id.")],
    json: Json = False,
) -> None:
    """Every event of an observation or a paper, oldest first, with what each changed."""
    store = open_store(ctx)
    facts = store.observation_facts(subject) or store.paper_facts(subject)
    if not facts:
        raise NotFoundError(f"no events of {subject} in this ledger")
    rows = audit.history(facts)
    if json:
        write_json(rows)
        return
    for row in rows:
        typer.echo(f"{row['seq']}\t{row['effective_at']}\trecorded {row['recorded_at']}\t{row['kind']}\t{row['account']}")
