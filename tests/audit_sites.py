"""Logs as static sites, honest and not, for the auditing witness's tests: the entries of a real ledger (or
bytes an honest log would never sign) written as C2SP tiles, a checkpoint and a paper index note signed over
them with the library's own tile, tree and note functions, as a log whose key signed anything would publish.
"""

from __future__ import annotations

from pathlib import Path

from ledger.core.canonical import canonical, parse_json
from ledger.log.merkle import leaf_hash
from ledger.log.paper_index import edge_root, extend
from ledger.log.signed_notes import Checkpoint, Signer
from ledger.log.tiles import bundle
from ledger.services.tilestore import read_entries
from ledger.storage.index_reads import root_at
from ledger.storage.store import Store


def leaves_of(store: Store, size: int | None = None) -> list[bytes]:
    """The log entries 1 .. `size` (default: all) of a ledger, as its tiles carry them."""
    with store.reading() as cursor:
        size = cursor.head()[0] if size is None else size
        return [leaf for _, leaf in read_entries(cursor, 0, size)]


def index_root(store: Store, size: int) -> bytes:
    """The paper index root of the ledger at tree `size`."""
    store.keep_index(size)
    with store.snapshot() as cursor:
        return root_at(cursor, size, store.index_nodes)[1]


def tree_root(leaves: list[bytes]) -> bytes:
    edge: list[bytes] = []
    extend(edge, 0, (leaf_hash(leaf) for leaf in leaves))
    return edge_root(edge)


def write_site(site: Path, signer: Signer, leaves: list[bytes], index: bytes | None) -> str:
    """The log of `leaves` (fewer than 256: one partial tile) at `site`, its checkpoint (returned, and at
    /checkpoint) and, unless `index` is None, its paper index note with that root at /paper-index/<size>."""
    size = len(leaves)
    for folder in ("tile/0/000.p", "tile/entries/000.p", "paper-index"):
        (site / folder).mkdir(parents=True, exist_ok=True)
    (site / "tile" / "0" / "000.p" / str(size)).write_bytes(b"".join(leaf_hash(leaf) for leaf in leaves))
    (site / "tile" / "entries" / "000.p" / str(size)).write_bytes(bundle(list(enumerate(leaves, start=1))))
    root = tree_root(leaves)
    note = signer.sign(Checkpoint(signer.name, size, root).text())
    (site / "checkpoint").write_text(note)
    if index is not None:
        (site / "paper-index" / str(size)).write_text(signer.sign(Checkpoint(signer.name, size, root, index).text()))
    return note


def contradicting(leaves: list[bytes], seq: int) -> bytes:
    """The entry next after `leaves`: entry `seq`'s fact (its subject, kind and effective time) with another
    title, recorded when the last one was: what no honest log holds."""
    first, last = parse_json(leaves[seq - 1].decode()), parse_json(leaves[-1].decode())
    payload = {**first["payload"], "title": "Another title"}
    return canonical({**first, "payload": payload, "seq": len(leaves) + 1, "recorded_at": last["recorded_at"]})
