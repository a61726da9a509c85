"""A backup that can be verified (`ledger backup DEST`, and `ledger verify` of it): a consistent snapshot of
the ledger taken while writers run (`ledger.storage.snapshot`), and beside it a manifest (`DEST.manifest.json`,
canonical JSON) recording its size, its head and the signed checkpoints it must be consistent with: the
latest cosigned checkpoint the ledger keeps, and one the operator gives (the one last published).

`verify_manifest` checks a ledger against a manifest: its head is the one recorded, and its tree is
consistent (RFC 9162, `ledger.log.merkle`'s verifier) with each checkpoint, whose signature is checked when the
log's verifier key is given. It never writes to the ledger it checks, and a backup never overwrites a file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ledger.core.canonical import canonical, parse_json
from ledger.core.errors import InputError, IntegrityError, LedgerError
from ledger.core.files import write_file
from ledger.core.inputs import decode_input, read_input
from ledger.core.limits import MANIFEST
from ledger.log.chain import hex_hash
from ledger.log.merkle import verify_consistency
from ledger.log.signed_notes import Checkpoint, Verifier, parse_checkpoint, split_note, verify_checkpoint
from ledger.services.proofs import prove_consistency
from ledger.storage.backends import sqlite_path
from ledger.storage.snapshot import copy_sqlite, dump_postgres
from ledger.storage.store import Store

FORMAT = "ledger.backup.v1"
SUFFIX = ".manifest.json"
_FIELDS = {"format", "snapshot", "backend", "size", "head", "checkpoints"}


@dataclass
class Backup:
    """What a backup wrote: the snapshot, its manifest, and what they record."""

    snapshot: Path
    manifest: Path
    size: int
    head: str  # the chain hash, hex
    checkpoints: list[int]  # the sizes of the checkpoints recorded


@dataclass
class ManifestCheck:
    """What `verify_manifest` found: the size and head, the checkpoints it holds to, whether signatures were checked."""

    manifest: str
    size: int
    head: str
    checkpoints: list[Checkpoint]
    signed: bool


def manifest_of(snapshot: str | Path) -> Path:
    """The manifest's path beside a snapshot."""
    snapshot = Path(snapshot)
    return snapshot.with_name(snapshot.name + SUFFIX)


def backup_manifest(location: str) -> str | None:
    """The manifest beside the SQLite ledger `location` (a backup's), when there is one; else None."""
    file = sqlite_path(location)
    return str(manifest_of(file)) if file is not None and manifest_of(file).is_file() else None


def read_note(note: str, verifier: Verifier | None, name: str) -> Checkpoint:
    """The checkpoint of a signed note: its signature checked by `verifier`, or only its body read without one.
    Raises: InputError for a malformed note, IntegrityError for a bad signature or another log's, naming `name`."""
    try:
        return verify_checkpoint(note, verifier) if verifier else parse_checkpoint(split_note(note)[0])
    except LedgerError as exc:
        raise type(exc)(f"{name}: {exc}") from None


def consistent(store: Store, checkpoint: Checkpoint, name: str) -> None:
    """Check that the ledger's tree extends the tree `checkpoint` signs: a consistency proof from its size to
    the ledger's, made from the ledger and verified against the checkpoint's root (RFC 9162).
    Raises: IntegrityError when the ledger holds fewer entries, or another tree."""
    size = store.head()[0]
    if checkpoint.size > size:
        raise IntegrityError(f"{name}: signs a tree of {checkpoint.size:,} entries; the ledger holds {size:,}: it is "
                             f"behind the checkpoint")
    if checkpoint.size == 0:
        return
    proof = prove_consistency(store, checkpoint.size, size)
    try:
        verify_consistency(checkpoint.size, size, checkpoint.root, bytes.fromhex(proof["new_root"]),
                           [bytes.fromhex(node) for node in proof["path"]])
    except LedgerError:
        raise IntegrityError(f"{name}: the ledger's tree of {size:,} entries is not consistent with the checkpoint "
                             f"of size {checkpoint.size:,}: another log's, or a fork") from None


def backup(store: Store, target: Path, given: str | None = None, given_name: str = "--checkpoint",
           verifier: Verifier | None = None) -> Backup:
    """Write a consistent snapshot of `store` to the new file `target` (SQLite: its online backup; PostgreSQL:
    pg_dump's custom format) and its manifest beside it: the snapshot's size and head, the cosigned checkpoint
    it keeps and `given` (a signed note), each checked consistent with the snapshot's tree first.
    Raises: InputError when `target` or its manifest exists or `given` is not a note, IntegrityError when the
    ledger is behind a checkpoint or not consistent with it, StoreError when the snapshot cannot be made."""
    manifest = manifest_of(target)
    if not target.parent.is_dir():
        raise InputError(f"{target}: no folder {target.parent}")
    for path in (target, manifest):
        if os.path.lexists(path):
            raise InputError(f"{path}: already exists; a backup is written to new files")
    partial = target.with_name(f".{target.name}.partial-{os.getpid()}")
    try:
        copied = (copy_sqlite if store.dialect == "sqlite" else dump_postgres)(store, str(partial))
        named = ([(copied.cosigned, "the cosigned checkpoint kept")] if copied.cosigned is not None else []) + \
            ([(given, given_name)] if given is not None else [])
        for note, name in named:
            checkpoint = read_note(note, verifier, name)
            if checkpoint.size > copied.size:
                raise IntegrityError(f"{name}: signs a tree of {checkpoint.size:,} entries; the ledger holds "
                                     f"{copied.size:,}: it is behind the checkpoint (restore it first)")
            consistent(store, checkpoint, name)  # the live tree's prefix of that size is the snapshot's
        notes = [note for note, _ in named]
        os.link(partial, target)  # never over a file that appeared meanwhile
    finally:
        if os.path.lexists(partial):
            os.unlink(partial)
    fields = {"format": FORMAT, "snapshot": target.name, "backend": store.dialect, "size": copied.size,
              "head": hex_hash(copied.chain), "checkpoints": notes}
    try:
        write_file(manifest, canonical(fields) + b"\n")
    except LedgerError:
        os.unlink(target)  # a snapshot without its manifest is not a backup that can be verified
        raise
    return Backup(target, manifest, copied.size, hex_hash(copied.chain),
                  [read_note(note, None, "checkpoint").size for note in notes])


def load_manifest(name: str) -> dict:
    """A backup's manifest, read within its limit and shape-checked.
    Raises: InputError naming the file and what is wrong."""
    fields = parse_json(decode_input(name, read_input(name, MANIFEST), "a backup manifest"))
    if not isinstance(fields, dict) or set(fields) != _FIELDS or fields["format"] != FORMAT:
        raise InputError(f"{name}: not a backup manifest ({FORMAT}: {', '.join(sorted(_FIELDS))})")
    if not isinstance(fields["size"], int) or not isinstance(fields["head"], str) or \
            not isinstance(fields["checkpoints"], list) or not all(isinstance(n, str) for n in fields["checkpoints"]):
        raise InputError(f"{name}: size, head or checkpoints: not of a backup manifest's types")
    return fields


def verify_manifest(store: Store, name: str, verifier: Verifier | None) -> ManifestCheck:
    """Check `store` (a restored or copied backup) against the manifest `name`: the head it records, and the
    tree consistent with each checkpoint it records (signatures checked by `verifier`, when given).
    Raises: InputError for a manifest that is not one, IntegrityError naming what does not hold."""
    fields = load_manifest(name)
    seq, chain, _ = store.head()
    if (seq, hex_hash(chain)) != (fields["size"], fields["head"]):
        raise IntegrityError(f"{name}: records the head {fields['size']} {fields['head']}; the ledger's is {seq} "
                             f"{hex_hash(chain)}")
    checkpoints = []
    for at, note in enumerate(fields["checkpoints"]):
        checkpoint = read_note(note, verifier, f"{name}: checkpoint {at + 1}")
        consistent(store, checkpoint, f"{name}: checkpoint {at + 1}")
        checkpoints.append(checkpoint)
    return ManifestCheck(name, seq, hex_hash(chain), checkpoints, verifier is not None)

