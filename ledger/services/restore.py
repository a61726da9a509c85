"""A restore that cannot fork the log (`ledger restore`): a snapshot is restored only up to the latest checkpoint
the log published or had cosigned, never behind it. Appending to a ledger behind a published checkpoint would
give new entries seqs the log already signed for others: a fork every witness and monitor rightly calls
misbehaviour.

The checkpoint comes from `--checkpoint FILE`, from the snapshot's manifest, or from the log's site
(`--from URL|DIR`: `serve` or a `publish` folder). The entries the snapshot lacks are fetched from the site's
tiles through the monitor (`ledger.services.monitor.follow`: tiles and entry bundles within their caps, checked
against the signed checkpoint, imported through `import`'s path), so the restored ledger is the lost one, entry
for entry. With no snapshot, the whole ledger is rebuilt from the site's tiles: the static site is a backup.

Everything is written in a folder beside the new ledger, and renamed into place only once every check held: a
refused restore leaves no ledger behind. It never writes to the snapshot.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ledger.audit.quorum import witnessed
from ledger.core.errors import InputError, IntegrityError
from ledger.log.chain import hex_hash
from ledger.log.cosignature import Policy
from ledger.log.signed_notes import Checkpoint, Verifier
from ledger.services.backup import consistent, manifest_of, read_note, verify_manifest
from ledger.services.monitor import LEDGER, UnreachableError, follow
from ledger.services.monitor_source import TIMEOUT
from ledger.services.verify import verify_chain
from ledger.storage.backends import sqlite_path
from ledger.storage.snapshot import copy_sqlite_file, settle_sqlite
from ledger.storage.store import Store


@dataclass
class Restored:
    """What a restore left: the new ledger's size and head, how many entries came from the site, and the
    largest checkpoint it was checked against (its size, and where it came from)."""

    size: int
    head: str
    fetched: int
    checkpoint: int
    checked_against: str


def restore(target: str, verifier: Verifier, snapshot: str | None = None, note: str | None = None,
            note_name: str = "--checkpoint", where: str | None = None, timeout: float = TIMEOUT,
            policy: Policy | None = None) -> Restored:
    """Restore `snapshot` (a SQLite file `ledger backup` wrote; None: rebuild from `where` alone) into the new
    SQLite ledger `target`, caught up to the latest of the checkpoints known (`note`, the snapshot's manifest's,
    `where`'s) from `where`'s tiles, and verified. With `policy`, `note` and `where`'s checkpoint must be cosigned
    as it asks (what the log had cosigned, not only signed).
    Raises: InputError, IntegrityError or StoreError. InputError: options that cannot restore (no checkpoint
    to hold it to, a target that exists or is not a SQLite file). IntegrityError: the ledger would be left
    behind a checkpoint (the sizes named) or is not consistent with one, or the site's tiles are not the
    checkpoint's (MisbehaviourError). StoreError: a file cannot be written."""
    path = _target(target)
    if snapshot is None and where is None:
        raise InputError("restore: give a SNAPSHOT, or --from URL|DIR to rebuild the ledger from the log's tiles")
    if where is not None and not where.startswith(("http://", "https://")) and not Path(where).is_dir():
        raise InputError(f"--from {where}: not a URL (http:// or https://) nor a published folder")
    if note is None and where is None and not (snapshot and manifest_of(snapshot).exists()):
        raise InputError("restore: give --checkpoint FILE (the latest the log published) or --from URL|DIR: a "
                         "restore is held to it, so that it cannot fork the log")
    work = Path(tempfile.mkdtemp(prefix=f".{path.name}.restore-", dir=path.parent))
    try:
        ledger = str(work / LEDGER)
        known: list[tuple[Checkpoint, str]] = [] if note is None else [(read_note(note, verifier, note_name), note_name)]
        if note is not None and policy is not None:
            witnessed(note, verifier, policy, name=note_name)
        if snapshot is not None:
            copy_sqlite_file(snapshot, ledger)
            known += _from_manifest(ledger, snapshot, verifier)
        held = _size(ledger) if snapshot is not None else 0
        fetched, site = 0, None
        if where is not None:
            try:
                followed = follow(where, verifier, work, policy, timeout=timeout)
            except UnreachableError as exc:
                raise IntegrityError(_refusal(snapshot, held, known, f"{where} could not be read ({exc})")) from None
            fetched, site = followed.new_entries, followed.size
        best = max(known, key=lambda pair: pair[0].size, default=None)
        store = Store.open(ledger)
        try:
            size = store.head()[0]
            if best is not None and best[0].size > size:
                said = f"{where}'s tiles hold {size:,}" if where else "give --from URL|DIR to fetch the missing entries"
                raise IntegrityError(_refusal(snapshot, held, known, said))
            for checkpoint, name in known:
                consistent(store, checkpoint, name)
            head = verify_chain(store.entries())
        finally:
            store.close()
        settle_sqlite(ledger)
        os.link(ledger, path)  # never over a file that appeared meanwhile
    finally:
        shutil.rmtree(work, ignore_errors=True)
    largest = max([site or 0] + [c.size for c, _ in known])
    origin = where if site is not None and site >= largest else (best[1] if best else str(where))
    return Restored(head.seq, hex_hash(head.chain), fetched, largest, origin)


def _target(target: str) -> Path:
    """The new ledger's file: a SQLite path that does not exist yet.
    Raises: InputError otherwise."""
    file = sqlite_path(target)
    if file is None:
        raise InputError("restore --db: a new SQLite file (a PostgreSQL backup is restored with pg_restore, then "
                         "checked with `ledger verify --manifest`: docs/operations.md)")
    path = Path(file)
    if os.path.lexists(path):
        raise InputError(f"{path}: already exists; restore writes a new ledger")
    if not path.parent.is_dir():
        raise InputError(f"{path}: no folder {path.parent}")
    return path


def _from_manifest(ledger: str, snapshot: str, verifier: Verifier) -> list[tuple[Checkpoint, str]]:
    """The checkpoints the snapshot's manifest records, once the copy is the head it records (none without one).
    Raises: InputError, IntegrityError as `verify_manifest`."""
    manifest = manifest_of(snapshot)
    if not manifest.exists():
        return []
    store = Store.open(ledger)
    try:
        checked = verify_manifest(store, str(manifest), verifier)
    finally:
        store.close()
    return [(checkpoint, f"{manifest}: checkpoint {at + 1}") for at, checkpoint in enumerate(checked.checkpoints)]


def _size(ledger: str) -> int:
    store = Store.open(ledger)
    try:
        return store.head()[0]
    finally:
        store.close()


def _refusal(snapshot: str | None, held: int, known: list[tuple[Checkpoint, str]], why: str) -> str:
    """The one line a refused restore says: the sizes, and why the missing entries could not be had."""
    what = f"{snapshot} holds {held:,} entries" if snapshot else "nothing to start from"
    if known:
        checkpoint, name = max(known, key=lambda pair: pair[0].size)
        what += f"; {name} signs {checkpoint.size:,}"
    return (f"restore refused: {what}; {why}: appending to a ledger behind a published checkpoint would fork the "
            f"log. Nothing was written")
