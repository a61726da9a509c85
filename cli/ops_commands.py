"""`ledger backup` and `ledger restore`: a snapshot with a manifest that `verify` checks, and a restore held to
the latest published checkpoint (`ledger.services.backup`, `ledger.services.restore`). Thin: parse, call, render."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ledger.cli.common import (
    Json,
    PolicyFile,
    Quorum,
    WitnessKeys,
    db_location,
    open_store,
    read_text,
    witness_policy,
    write_json,
)
from ledger.services.backup import backup as take_backup
from ledger.services.keys import load_verifier
from ledger.services.monitor_source import TIMEOUT
from ledger.services.restore import restore as run_restore

app = typer.Typer()

CheckpointFile = Annotated[str | None, typer.Option(
    "--checkpoint", help="A signed checkpoint the log published (default: only the cosigned one the ledger keeps).")]
VerifierKey = Annotated[str | None, typer.Option(
    "--verifier-key", help="The log's verifier key: a .vkey file or its text (checks the checkpoints' signatures; "
                           "default: none, only that they are of the ledger's tree).")]


@app.command()
def backup(
    ctx: typer.Context,
    dest: Annotated[Path, typer.Argument(metavar="DEST", help="The new snapshot file (its manifest is written "
                                                                "beside it, DEST.manifest.json).")],
    checkpoint: CheckpointFile = None,
    verifier_key: VerifierKey = None,
    json: Json = False,
) -> None:
    """A consistent snapshot of the ledger while writers run (SQLite's online backup; PostgreSQL: pg_dump),
    and a manifest beside it: its size, its head and the signed checkpoints its tree must be consistent with.
    `ledger --db DEST verify` checks them. Exit 1 when the ledger is behind a checkpoint or forks from it."""
    note = read_text(checkpoint, "a signed checkpoint") if checkpoint is not None else None
    verifier = load_verifier(verifier_key) if verifier_key is not None else None
    made = take_backup(open_store(ctx), dest, note, f"--checkpoint {checkpoint}", verifier)
    if json:
        write_json({"snapshot": str(made.snapshot), "manifest": str(made.manifest), "size": made.size,
                    "head": made.head, "checkpoints": made.checkpoints})
        return
    held = ", ".join(f"{size:,}" for size in made.checkpoints) or "none kept or given"
    typer.echo(f"{made.snapshot}: {made.size:,} entries, head {made.head}; manifest {made.manifest} "
               f"(checkpoints of size: {held})")


@app.command()
def restore(
    ctx: typer.Context,
    verifier_key: Annotated[str, typer.Option(
        "--verifier-key", help="The log's verifier key: a .vkey file or its text.")],
    snapshot: Annotated[str | None, typer.Argument(metavar="[SNAPSHOT]", help="A snapshot `ledger backup` wrote "
                                                                               "(none: rebuild from --from).")] = None,
    where: Annotated[str | None, typer.Option(
        "--from", metavar="URL|DIR", help="The log's site (`ledger serve` URL or `ledger publish` folder): its "
                                          "checkpoint, and the tiles the entries missing are fetched from "
                                          "(default: none).")] = None,
    checkpoint: CheckpointFile = None,
    timeout: Annotated[float, typer.Option(
        "--timeout", min=0.1, help=f"Seconds reading --from may take in all (default: {TIMEOUT:g}).")] = TIMEOUT,
    witness_key: WitnessKeys = None,
    quorum: Quorum = None,
    policy: PolicyFile = None,
    json: Json = False,
) -> None:
    """Restore a snapshot into the new SQLite ledger --db, never behind the latest checkpoint the log published
    or had cosigned (--checkpoint, the snapshot's manifest, --from's; with --witness-key or --policy, cosigned as
    asked): the entries it lacks are fetched from the published tiles and checked against the checkpoint. Exit 1,
    nothing written, when they cannot be had."""
    note = read_text(checkpoint, "a signed checkpoint") if checkpoint is not None else None
    verifier = load_verifier(verifier_key)
    witnessing = witness_policy(str(verifier), witness_key, quorum, policy)
    done = run_restore(db_location(ctx), verifier, snapshot, note, f"--checkpoint {checkpoint}", where, timeout,
                       witnessing.rule if witnessing else None)
    if json:
        write_json({"db": db_location(ctx), "size": done.size, "head": done.head, "fetched": done.fetched,
                    "checkpoint": done.checkpoint, "checked_against": done.checked_against})
        return
    typer.echo(f"restored {db_location(ctx)}: {done.size:,} entries, head {done.head}; {done.fetched:,} fetched "
               f"from the published tiles; consistent with the checkpoint of size {done.checkpoint:,} "
               f"({done.checked_against})")
