"""Commands for outsiders' proofs: keygen, checkpoint, prove (events, consistency, papers), verify-proof."""

from __future__ import annotations

import functools
import os
from typing import Annotated

import typer

from ledger.audit.auditor import load_json, verify_proof
from ledger.audit.results import Included, PaperCount, Prefix
from ledger.cli.common import (
    Cosigned,
    Json,
    PolicyFile,
    Quorum,
    WitnessKeys,
    open_store,
    paper_option,
    read_text,
    say,
    witness_check,
    witness_policy,
    write_json,
    write_stdout,
)
from ledger.cli.wording import proof_account
from ledger.core.errors import InputError
from ledger.core.files import create_new
from ledger.core.inputs import read_input
from ledger.core.limits import PROOF
from ledger.core.redact import quoted
from ledger.log.cosignature import CosignerKey, generate_cosigner
from ledger.log.signed_notes import Verifier, generate_signer, open_note, verify_checkpoint
from ledger.model.parts import counted
from ledger.services.cosign_gathering import cosign, targets_of
from ledger.services.fetch import check_url
from ledger.services.keys import load_cosigner_key, load_signer, load_verifier
from ledger.services.proofs import checkpoint as signed_checkpoint
from ledger.services.proofs import prove_consistency, prove_inclusion, prove_paper
from ledger.storage.cosigned_checkpoint import INDEX_KEY, keep_cosigned

app = typer.Typer()
KEY_FILE, VKEY_FILE = "ledger.key", "ledger.vkey"
COSIGNER_KEY_FILE, COSIGNER_VKEY_FILE = "witness.key", "witness.vkey"


@app.command()
def keygen(
    origin: Annotated[str | None, typer.Argument(help="The log's origin, e.g. example.org/ledger (default: none, with --cosigner).")] = None,
    cosigner: Annotated[str | None, typer.Option(
        "--cosigner", metavar="NAME", help="Instead, a witness's cosigner key (C2SP cosignature/v1) named NAME, "
                                           "e.g. witness.example.org/w1: witness.key and witness.vkey (default: none, a log's key).")] = None,
    json: Json = False,
) -> None:
    """Write ledger.key (signing key) and ledger.vkey (verifier key) here, or with --cosigner a witness's
    witness.key and witness.vkey; never overwrites."""
    if (origin is None) == (cosigner is None):
        raise InputError("keygen: give the log's ORIGIN or --cosigner NAME (one of them)")
    made = generate_signer(origin) if cosigner is None else generate_cosigner(cosigner)
    public = made.verifier if cosigner is None else made.key
    key_file, vkey_file = (KEY_FILE, VKEY_FILE) if cosigner is None else (COSIGNER_KEY_FILE, COSIGNER_VKEY_FILE)
    for name in (key_file, vkey_file):
        if os.path.islink(name) and not os.path.exists(name):
            raise InputError(f"{name}: a symbolic link to a missing file; refusing to write a key through it")
        if os.path.lexists(name):
            raise InputError(f"{name}: already exists; refusing to overwrite a key")
    _write_new(key_file, f"{made}\n", 0o600)
    try:
        _write_new(vkey_file, f"{public}\n", 0o644)
    except InputError:
        os.remove(key_file)  # not half a pair: the key this run made goes with it
        raise
    if json:  # the files' names and the public key: never the signing key's text
        write_json({"key": key_file, "vkey": vkey_file, "origin": origin, "cosigner": cosigner, "public": str(public)})
    else:
        typer.echo(f"wrote {key_file} (keep it secret) and {vkey_file}: {public}")


def _write_new(name: str, text: str, mode: int) -> None:
    """Write a key file that must not exist yet, as `files.create_new` writes one, with `mode`.
    Raises: InputError naming the file when it exists or cannot be written here (nothing of it is left)."""
    try:
        create_new(name, text.encode(), mode)
    except FileExistsError:
        raise InputError(f"{name}: already exists; refusing to overwrite a key") from None
    except OSError as exc:
        raise InputError(f"{name}: cannot write here: {exc.strerror}") from None


def _witnesses(given: list[str]) -> list[tuple[str, CosignerKey]]:
    """`--witness URL=VKEY` options: (URL, the witness's key)."""
    found = []
    for option in given:
        url, sep, vkey = option.partition("=")
        if not sep or not url.startswith(("http://", "https://")) or not vkey:
            raise InputError(f"--witness {quoted(option)}: expected URL=VKEY, the witness's submission prefix "
                             f"(http:// or https://) and its cosigner key (a .vkey file or its text)")
        check_url(url, "--witness")
        found.append((url, load_cosigner_key(vkey)))
    return found


@app.command()
def checkpoint(
    ctx: typer.Context,
    key: Annotated[str, typer.Option("--key", help="The signing key file (ledger keygen).")],
    paper_index: Annotated[bool, typer.Option(
        "--paper-index", help="The paper index note instead: the same lines and the paper index root, which paper "
                              "index proofs are checked against (only auditing witnesses cosign it).")] = False,
    witness: Annotated[list[str] | None, typer.Option(
        "--witness", metavar="URL=VKEY", help="Ask this witness to cosign (repeat); URL is its submission prefix (default: none, no witness).")] = None,
    quorum: Annotated[int | None, typer.Option(
        "--quorum", min=0, help="How many of the --witness must cosign (default: all).")] = None,
    policy: Annotated[str | None, typer.Option(
        "--policy", help="A C2SP tlog-policy file: its witnesses (with a URL) are asked, its quorum must be met (default: none).")] = None,
    timeout: Annotated[float, typer.Option("--timeout", min=0.1, help="Seconds asking the witnesses may take, every round and request included (default: 10); a witness still answering then is refused.")] = 10.0,
    json: Json = False,
) -> None:
    """A signed checkpoint (C2SP tlog-checkpoint) of the current Merkle tree; with witnesses, cosigned by them
    (C2SP tlog-witness) and kept in the ledger, which `serve` and `publish` then give at /checkpoint: exit 1,
    a line per witness that did not cosign, when the quorum is not met."""
    signer, store = load_signer(key), open_store(ctx)
    witnesses = _witnesses(witness or [])
    witnessing = witness_policy(str(signer.verifier), [k for _, k in witnesses], quorum, policy, key_option="--witness")
    if witnessing is None:
        _write_checkpoint(signed_checkpoint(store, signer, paper_index=paper_index)[0], signer.verifier, json)
        return
    if paper_index:
        raise InputError("checkpoint: witnesses cosign the checkpoint, not the paper index note (no --paper-index)")
    rule = witnessing.rule
    targets = targets_of(witnesses, rule)
    note, size = signed_checkpoint(store, signer)

    def prove(old: int) -> list[bytes]:
        return [] if old in (0, size) else [bytes.fromhex(h) for h in prove_consistency(store, old, size)["path"]]

    @functools.cache
    def index() -> tuple[str, str]:  # asked of the witnesses that cosigned: an auditing one cosigns it too
        made = signed_checkpoint(store, signer, size, paper_index=True)[0]
        return made, open_note(made, signer.verifier)

    cosigned, refusals, index_cosigned = cosign(note, verify_checkpoint(note, signer.verifier), targets, rule,
                                                prove, timeout, index)
    for line in refusals:
        say(f"note: {line}")
    if not keep_cosigned(store, cosigned):
        say("note: the ledger holds a cosigned checkpoint of a tree as large; it stays the one served at /checkpoint")
    if index_cosigned is not None:
        _keep_index(store, index_cosigned, rule, signer.verifier, size)
    _write_checkpoint(cosigned, signer.verifier, json, sorted(rule.cosigned(cosigned)))


def _keep_index(store, note: str, rule, verifier: Verifier, size: int) -> None:
    """Keep the paper index note cosigned by auditing witnesses (bundles of its tree carry it), and say who."""
    keep_cosigned(store, note, INDEX_KEY)
    found = sorted(rule.cosigned(note))
    witnesses = counted(len(found), "auditing witness", "auditing witnesses")
    say(f"note: the paper index note of tree {size} is cosigned by {witnesses}: {', '.join(found)}")


def _write_checkpoint(note: str, verifier: Verifier, json: bool, witnessed_by: list[str] | None = None) -> None:
    """The signed note on stdout, exactly its bytes; with --json, an object that carries it (docs/json.md)."""
    if not json:
        write_stdout(note.encode())
        return
    signed = verify_checkpoint(note, verifier)
    write_json({"note": note, "origin": signed.origin, "size": signed.size, "root": signed.root.hex(),
                "index_root": None if signed.index_root is None else signed.index_root.hex(),
                "witnessed_by": witnessed_by})


@app.command()
def prove(
    ctx: typer.Context,
    seq: Annotated[int | None, typer.Argument(help="Sequence number of the event to prove included (none: give "
                                                      "--consistency or --paper).")] = None,
    consistency: Annotated[int | None, typer.Option("--consistency", help="Prove this older tree size is a prefix "
                                                                             "(default: none, an inclusion proof).")] = None,
    paper: Annotated[str | None, typer.Option(
        "--paper", callback=paper_option,
        help="Prove how many events of this arXiv id the paper index counts (default: none, an inclusion proof).")] = None,
    tree_size: Annotated[int | None, typer.Option("--tree-size", help="Prove against this size (default: now).")] = None,
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
        held = f"{counted(proof['count'], 'event')} (events root {proof['events_root']})" if proof["count"] else "no events"
        typer.echo(f"arXiv:{paper} has {held} in the paper index of tree {proof['tree_size']}; index root "
                   f"{proof['index_root']}; path of {counted(len(proof['siblings']), 'hash', 'hashes')} (--json for the proof)")
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
    witness_key: WitnessKeys = None,
    quorum: Quorum = None,
    policy: PolicyFile = None,
    cosigned: Cosigned = None,
    json: Json = False,
) -> None:
    """Check a proof (inclusion, consistency or paper index) against a signed checkpoint, with no database;
    with witness keys or a policy, also that witnesses cosigned that tree."""
    data = load_json(proof, read_input(proof, PROOF))
    note = read_text(checkpoint_file, "a signed checkpoint")
    verifier = load_verifier(verifier_key)
    witnessing = witness_policy(str(verifier), witness_key, quorum, policy, cosigned)
    proved = verify_proof(data, note, verifier, proof, checkpoint_file)
    words, found = witness_check(witnessing, verifier, note)
    if json:
        write_json({"ok": True, "proof": _proved(proved), "account": proof_account(proved) + words,
                    "witnessed_by": found})
    else:
        typer.echo(proof_account(proved) + words)


def _proved(proved: Included | Prefix | PaperCount) -> dict:
    """What a proof proved, for `verify-proof --json` (docs/json.md): its kind and its numbers."""
    if isinstance(proved, Included):
        return {"kind": "inclusion", "seq": proved.leaf_index + 1, "leaf_index": proved.leaf_index,
                "tree_size": proved.tree_size, "signer": proved.signer}
    if isinstance(proved, Prefix):
        return {"kind": "consistency", "old_size": proved.old_size, "new_size": proved.new_size,
                "signer": proved.signer}
    return {"kind": "paper", "paper": proved.paper, "count": proved.count, "tree_size": proved.tree_size,
            "events_root": None if proved.events_root is None else proved.events_root.hex(), "signer": proved.signer}
