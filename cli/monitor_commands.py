"""`ledger monitor`: follow a served or published log from outside (`ledger.services.monitor`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ledger.cli.common import (
    Json,
    PolicyFile,
    Quorum,
    ShardOption,
    WitnessKeys,
    paper_option,
    witness_policy,
    write_json,
)
from ledger.core.errors import InputError
from ledger.model.parts import counted
from ledger.model.shards import EVERY
from ledger.services.keys import load_verifier
from ledger.services.monitor import TIMEOUT, MisbehaviourError, UnreachableError, follow

app = typer.Typer()


@app.command()
def monitor(
    where: Annotated[str, typer.Argument(metavar="URL|DIR", help="The log: a `ledger serve` URL or a `ledger publish` folder.")],
    verifier_key: Annotated[str, typer.Option("--verifier-key", help="The log's verifier key: a .vkey file or its text.")],
    state: Annotated[Path, typer.Option("--state", help="The monitor's own folder: what it verified so far (made when missing).")],
    witness_key: WitnessKeys = None,
    quorum: Quorum = None,
    policy: PolicyFile = None,
    paper: Annotated[str | None, typer.Option(
        "--paper", callback=paper_option, help="Compare this paper's record only (default: every paper that "
                                               "changed; the whole log is checked either way).")] = None,
    timeout: Annotated[float, typer.Option(
        "--timeout", min=0.1, help=f"Seconds the whole run may take, every request included (default: "
                                   f"{TIMEOUT:g}); a log that answers slower is unreachable.")] = TIMEOUT,
    shard: ShardOption = EVERY,
    json: Json = False,
) -> None:
    """Follow a log: its checkpoint verified and consistent with the last one kept, only the new tiles
    fetched and every new entry checked, the records of the papers that changed rebuilt and compared with the
    site's (with --shard, only that shard's papers; the log is checked whole). Exit 0 consistent, 1 misbehaviour (--json: the evidence), 3 unreachable."""
    if paper is not None and not shard.whole:
        raise InputError("--shard: splits the papers compared, not with --paper")
    verifier = load_verifier(verifier_key)
    witnessing = witness_policy(str(verifier), witness_key, quorum, policy)
    try:
        found = follow(where, verifier, state, witnessing.rule if witnessing else None, paper, timeout, shard)
    except MisbehaviourError as exc:
        if json:
            write_json({"status": "misbehaviour", "log": verifier.name, **exc.evidence})
        raise
    except UnreachableError as exc:
        if json:
            write_json({"status": "unreachable", "log": verifier.name, "problem": str(exc)})
        raise
    if json:
        write_json({"status": "consistent", "log": found.origin, "size": found.size, "root": found.root,
                    "new_entries": found.new_entries, "records": found.records, "index_notes": found.index_notes,
                    "witnesses": found.witnesses, "behind": found.behind, "later": found.later})
        return
    if found.behind is not None:
        typer.echo(f"{found.origin}: serves the checkpoint of size {found.size}, a prefix of the tree of size "
                   f"{found.behind} this monitor holds: nothing new (state kept)")
        return
    witnessed = f"; witnessed by {', '.join(sorted(found.witnesses))}" if found.witnesses else ""
    if found.later:
        witnessed += (f"; {counted(found.later, 'record')} left for a later run (their papers changed past this checkpoint, "
                      f"which does not hold those events yet)")
    typer.echo(f"{found.origin}: consistent at size {found.size} (root {found.root}); {counted(found.new_entries, 'new entry', 'new entries')} "
               f"checked, {counted(found.records, 'record')} and {counted(found.index_notes, 'paper index note')} compared"
               f"{witnessed}")
