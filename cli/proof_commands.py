"""Commands for outsiders' proofs: keygen, checkpoint, prove (events, consistency, papers), verify-proof."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from ledger.cli.common import Json, open_store, paper_option, read_text, write_json, write_stdout
from ledger.services.keys import load_signer, load_verifier
from ledger.cli.wording import proof_account
from ledger.audit.auditor import load_json, verify_proof
from ledger.core.errors import InputError
from ledger.core.inputs import read_input
from ledger.services.proofs import checkpoint as signed_checkpoint
from ledger.services.proofs import prove_consistency, prove_inclusion, prove_paper
from ledger.log.cosignature import generate_cosigner
from ledger.log.signed_notes import generate_signer

app = typer.Typer()
KEY_FILE, VKEY_FILE = "ledger.key", "ledger.vkey"
COSIGNER_KEY_FILE, COSIGNER_VKEY_FILE = "witness.key", "witness.vkey"


@app.command()
def keygen(
    origin: Annotated[Optional[str], typer.Argument(help="The log's origin, e.g. example.org/ledger.")] = None,
    cosigner: Annotated[Optional[str], typer.Option(
        "--cosigner", metavar="NAME", help="Instead, a witness's cosigner key (C2SP cosignature/v1) named NAME, "
                                           "e.g. witness.example.org/w1: witness.key and witness.vkey.")] = None,
) -> None:
    """Write ledger.key (signing key) and ledger.vkey (verifier key) here, or with --cosigner a witness's
    witness.key and witness.vkey; never overwrites."""
    if (origin is None) == (cosigner is None):
        raise InputError("keygen: give the log's ORIGIN or --cosigner NAME (one of them)")
    made = generate_signer(origin) if cosigner is None else generate_cosigner(cosigner)
    public = made.verifier if cosigner is None else made.key
    key_file, vkey_file = (KEY_FILE, VKEY_FILE) if cosigner is None else (COSIGNER_KEY_FILE, COSIGNER_VKEY_FILE)
    for name in (key_file, vkey_file):
        if Path(name).exists():
            raise InputError(f"{name}: already exists; refusing to overwrite a key")
    with open(key_file, "x", opener=lambda path, flags: os.open(path, flags, 0o600)) as handle:
        handle.write(f"{made}\n")
    Path(vkey_file).write_text(f"{public}\n")
    typer.echo(f"wrote {key_file} (keep it secret) and {vkey_file}: {public}")


@app.command()
def checkpoint(
    ctx: typer.Context,
    key: Annotated[str, typer.Option("--key", help="The signing key file (ledger keygen).")],
) -> None:
    """A signed checkpoint (C2SP tlog-checkpoint) of the current Merkle tree."""
    write_stdout(signed_checkpoint(open_store(ctx), load_signer(key))[0].encode())


@app.command()
def prove(
    ctx: typer.Context,
    seq: Annotated[Optional[int], typer.Argument(help="Sequence number of the event to prove included (none: give "
                                                      "--consistency or --paper).")] = None,
    consistency: Annotated[Optional[int], typer.Option("--consistency", help="Prove this older tree size is a prefix "
                                                                             "(default: none, an inclusion proof).")] = None,
    paper: Annotated[Optional[str], typer.Option(
        "--paper", callback=paper_option,
        help="Prove how many events of this arXiv id the paper index counts (default: none, an inclusion proof).")] = None,
    tree_size: Annotated[Optional[int], typer.Option("--tree-size", help="Prove against this size (default: now).")] = None,
    json: Json = False,
) -> None:
    """An inclusion proof of one event, a consistency proof between two tree sizes, or a paper index proof."""
    if [seq, consistency, paper].count(None) != 2:
        raise InputError("prove: give one of SEQ, --consistency OLD_SIZE or --paper ID")
    store = open_store(ctx)
    if paper is not None:
        proof = prove_paper(store, paper, tree_size)
    elif seq is not None:
        proof = prove_inclusion(store, seq, tree_size)
    else:
        proof = prove_consistency(store, consistency, tree_size)
    if json:
        write_json(proof)
    elif paper is not None:
        held = f"{proof['count']} events (events root {proof['events_root']})" if proof["count"] else "no events"
        typer.echo(f"arXiv:{paper} has {held} in the paper index of tree {proof['tree_size']}; index root "
                   f"{proof['index_root']}; path of {len(proof['siblings'])} hashes (--json for the proof)")
    elif seq is not None:
        typer.echo(f"event {seq} is leaf {proof['leaf_index']} of {proof['tree_size']}; root {proof['root']}; "
                   f"path of {len(proof['path'])} hashes (--json for the proof)")
    else:
        typer.echo(f"tree {proof['old_size']} ({proof['old_root']}) is a prefix of tree {proof['new_size']} "
                   f"({proof['new_root']}); path of {len(proof['path'])} hashes (--json for the proof)")


@app.command("verify-proof")
def verify_proof_command(
    proof: Annotated[str, typer.Argument(help="A proof from `ledger prove --json`.")],
    checkpoint_file: Annotated[str, typer.Option("--checkpoint", help="A signed checkpoint.")],
    verifier_key: Annotated[str, typer.Option("--verifier-key", help="The log's verifier key: a .vkey file or its "
                                                                     "text.")],
) -> None:
    """Check a proof (inclusion, consistency or paper index) against a signed checkpoint, with no database."""
    data = load_json(proof, read_input(proof))
    note = read_text(checkpoint_file, "a signed checkpoint")
    typer.echo(proof_account(verify_proof(data, note, load_verifier(verifier_key), proof, checkpoint_file)))
