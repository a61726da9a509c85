"""Commands about the log itself: create it (init), upgrade it, read its head, export it."""

from __future__ import annotations

import typer

from ledger.cli.common import Json, db_location, open_store, write_json, write_stdout
from ledger.core.redact import redact_url
from ledger.log.chain import hex_hash
from ledger.log.export import export_line
from ledger.storage.store import Store

app = typer.Typer()


@app.command()
def init(ctx: typer.Context) -> None:
    """Create an empty ledger. No other command creates one."""
    location = db_location(ctx)
    Store.create(location)
    typer.echo(f"created an empty ledger at {redact_url(location)}")


@app.command()
def upgrade(ctx: typer.Context) -> None:
    """Bring an older ledger to this version: schema version 1's tables, version 2's payloads packed, guards
    stored in an older form (the paper index is kept from the log when first needed)."""
    typer.echo(Store.upgrade(db_location(ctx)))


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
