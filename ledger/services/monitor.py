"""A monitor: follows a served (URL) or published (folder) log from outside, as a C2SP tlog-tiles client,
and keeps what it verified in a state folder of its own.

Each run: the checkpoint is verified (the log's key, and the witnesses' cosignatures when a policy is given);
only the tiles past the tree it holds are fetched (the partial ones of the new size, as C2SP tlog-tiles
names them): entry bundles and level-0 tiles checked against each other, higher tiles against the tree the
entries make; every new entry is checked (its seq, its canonical form, an event of the
vocabulary) and the tree it extends must be the one the checkpoint signs. The entries are then appended to the
monitor's own ledger (`ledger.db` in the state folder, through `import`'s path, which re-computes every hash),
and for every paper that changed the record the site serves is compared, byte for byte, with the rebuild from
those entries, and the paper index note of its evidence with the index re-computed here.

The state folder holds `ledger.db`, `seen` (the last checkpoint whose entries it holds) and `checkpoint` (the
last checkpoint it vouches for: saved only once every check of the run held). A fork, a rollback to another
tree, a tile or a record that disagrees raises MisbehaviourError, with evidence another party can check offline.
What it reads the log through (`Source`) and that error are `ledger.services.monitor_source`'s.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

from blake3 import blake3

from ledger.audit.quorum import witnessed
from ledger.core.canonical import canonical, parse_json
from ledger.core.errors import InputError, IntegrityError, LedgerError, StoreError
from ledger.core.files import write_file
from ledger.core.inputs import decode_input, read_input
from ledger.core.limits import NOTE
from ledger.core.times import When
from ledger.importing.importer import import_inputs, parse_input
from ledger.log.chain import GENESIS, hex_hash, link
from ledger.log.cosignature import Policy
from ledger.log.merkle import consistency_path, frontier_nodes, leaf_hash, root
from ledger.log.paper_index import edge_root, extend
from ledger.log.signed_notes import Checkpoint, Verifier, verify_checkpoint
from ledger.log.tiles import WIDTH, Tile, read_bundle, tiles_of, tiles_of_level0
from ledger.model.arxiv import is_paper_id
from ledger.model.paths import INTEGRITY, RECORD, fill
from ledger.model.shards import EVERY, Shard
from ledger.services.fetch import UnreachableError
from ledger.services.monitor_source import TIMEOUT, MisbehaviourError, Source, note_text
from ledger.services.proofs import prove_consistency
from ledger.services.replay import record_as_of
from ledger.services.tilestore import read_entries, read_tile
from ledger.storage.index_reads import root_at
from ledger.storage.store import Store

LEDGER, SEEN, VOUCHED = "ledger.db", "seen", "checkpoint"
CHUNK = 8192  # entries per import transaction: what is held parsed at once
__all__ = ["Followed", "MisbehaviourError", "Source", "UnreachableError", "catch_up", "follow"]


@dataclass
class Followed:
    """What a run verified."""
    origin: str
    size: int
    root: str  # base64, as the checkpoint writes it
    new_entries: int
    records: int  # records compared
    index_notes: int  # paper index notes compared with the index re-computed here
    witnesses: dict[str, int] = field(default_factory=dict)  # who cosigned (name -> time), with a policy
    behind: int | None = None  # the checkpoint served is of an older size than the one held: nothing new
    later: int = 0  # published records of papers changed past the checkpoint: compared once it covers them


def follow(where: str, verifier: Verifier, state: Path, policy: Policy | None = None,
           paper: str | None = None, timeout: float = TIMEOUT, shard: Shard = EVERY) -> Followed:
    """Follow the log at `where` from the state in `state` (made when missing); see the module's account.
    `paper`: compare that paper's record and index note only (the whole log is still checked); `shard`: only
    the records and index notes of that shard's papers (the checkpoint, the tiles and every entry all the same).
    `timeout`: seconds the whole run may take; every fetch past them fails the run (UnreachableError).
    Raises: UnreachableError (exit 3), MisbehaviourError (exit 1), InputError for a state folder that is not one."""
    source = Source(where, timeout)
    note = note_text(source.get("checkpoint", "checkpoint"), f"{where}/checkpoint")
    try:
        signed = verify_checkpoint(note, verifier)
        found = witnessed(note, verifier, policy) if policy is not None else {}
    except LedgerError as exc:
        raise MisbehaviourError(f"{where}/checkpoint: {exc}", {"checkpoint": note}) from None
    if state.exists() and not state.is_dir():
        raise InputError(f"--state {state}: not a folder (the monitor keeps its ledger and checkpoints there)")
    state.mkdir(parents=True, exist_ok=True)
    vouched = _read_note(state / VOUCHED, verifier)
    location = str(state / LEDGER)
    store = Store.open(location) if Path(location).exists() else Store.create(location)
    try:
        held, seen = store.head()[0], _state_note(state / SEEN) if (state / SEEN).exists() else None
        new = catch_up(source, store, note, signed, seen, where)
        if signed.size < held:
            return Followed(signed.origin, signed.size, _b64(signed.root), 0, 0, 0, found, behind=held)
        _save(state / SEEN, note)
        since = vouched.size if vouched is not None else 0
        papers = {paper} if paper is not None else set(shard.papers(_changed(store, since, signed.size)))
        records, notes, later = _compare(source, store, sorted(papers), signed, verifier, note)
        _save(state / VOUCHED, note)
        return Followed(signed.origin, signed.size, _b64(signed.root), new, records, notes, found,
                        later=later)
    finally:
        store.close()


def catch_up(source: Source, store: Store, note: str, signed: Checkpoint, seen: str | None, where: str) -> int:
    """Bring `store`, a copy of the log at `source`, to the tree of the log-signed `note` (`signed`; `seen`: the
    held tree's note, for evidence), each new entry checked and imported; how many (0: a prefix of the tree held).
    Raises: MisbehaviourError (a fork, a tile or an entry that is not the log's), UnreachableError."""
    held = store.head()[0]
    if signed.size <= held:
        if _root(store, signed.size) != signed.root:
            evidence: dict = {"checkpoints": [seen, note]}
            if 0 < signed.size < held:  # the held tree's own proof: its prefix is not the new checkpoint's
                evidence["consistency"] = prove_consistency(store, signed.size, held)
            raise MisbehaviourError(f"{where}: the checkpoint of size {signed.size} is not the tree this monitor "
                                    f"holds (size {held}): the log forked", evidence)
        if signed.size < held:
            return 0
    # Two passes (memory flat, nothing unverified imported): the level-0 tiles alone give the root, checked
    # before any entry is appended; then each bundle, checked against its tile's digest, is imported.
    edge = [_nodes(store, held)[pair] for pair in frontier_nodes(held)]
    digests = _tree(source, held, signed.size, edge)
    if edge_root(edge) != signed.root:
        raise _fork(source, store, held, seen, note, signed)
    new = _append(store, _leaves(source, held, signed.size, digests), held, where)
    _higher_tiles(source, store, held, signed.size)
    return new


def _b64(digest: bytes) -> str:
    return base64.b64encode(digest).decode()


def _read_note(path: Path, verifier: Verifier) -> Checkpoint | None:
    if not path.exists():
        return None
    note = _state_note(path)
    try:
        return verify_checkpoint(note, verifier)
    except LedgerError as exc:
        raise InputError(f"{path}: not a checkpoint of this log's key ({exc}): another log's state?") from None


def _state_note(path: Path) -> str:
    """A checkpoint the state folder keeps, read up to a note's limit (--state is the user's, but a file in it
    may be anything: /dev/zero).
    Raises: InputError naming the file."""
    return decode_input(str(path), read_input(str(path), NOTE), "a signed checkpoint")


def _save(path: Path, note: str) -> None:
    """Through the one file writer (a rename: a run killed midway leaves the state it had; never through a
    symbolic link planted in --state)."""
    write_file(path, note.encode())


def _root(store: Store, size: int) -> bytes:
    with store.snapshot() as cursor:
        return root(cursor.node_source(size), size)


def _nodes(store: Store, size: int) -> dict[tuple[int, int], bytes]:
    with store.reading() as cursor:
        return cursor.tree_nodes(frontier_nodes(size), size)


def _missing(source: Source, path: str, size: int) -> MisbehaviourError:
    return MisbehaviourError(f"{source.where}: the log does not serve {path}, which its checkpoint of size {size} "
                        f"needs", {"tile": path})


def _tree(source: Source, held: int, size: int, edge: list[bytes]) -> list[bytes]:
    """The first pass: the level-0 tiles a tree of `held` did not have (the partial ones of `size`), their
    new hashes added to `edge` (the right edge of the held tree, updated in place); the SHA-256 of each
    tile's bytes, for the second pass to check its bundle against (32 bytes a tile of 256 entries).
    Raises: MisbehaviourError for a missing tile or one not of its width."""
    digests = []
    for tile in tiles_of_level0(size, held - held % WIDTH):
        hashes = source.get(tile.path(), "tile")
        if hashes is None:
            raise _missing(source, tile.path(), size)
        if len(hashes) != 32 * tile.width:
            raise MisbehaviourError(f"{source.where}/{tile.path()}: {len(hashes)} bytes, not the {32 * tile.width} of "
                               f"{tile.width} hashes", {"tile": tile.path()})
        first = tile.index * WIDTH
        extend(edge, max(held, first), (hashes[at:at + 32] for at in range(32 * max(0, held - first), len(hashes), 32)))
        digests.append(hashlib.sha256(hashes).digest())
    return digests


def _leaves(source: Source, held: int, size: int, digests: list[bytes]) -> Iterator[bytes]:
    """The second pass: the leaves held + 1 .. size, from the entry bundles of the tiles of the first, each
    bundle checked against its tile's digest before its entries are given; one bundle held at a time.
    Raises: MisbehaviourError for a missing or malformed bundle, or one whose hashes are not its tile's."""
    for tile, digest in zip(tiles_of_level0(size, held - held % WIDTH), digests):
        bundle = Tile(None, tile.index, tile.width)
        data = source.get(bundle.path(), "entry bundle")
        if data is None:
            raise _missing(source, bundle.path(), size)
        try:
            entries = read_bundle(data)
        except LedgerError as exc:
            raise MisbehaviourError(f"{source.where}/{bundle.path()}: {exc}", {"tile": bundle.path()}) from None
        hashes = b"".join(leaf_hash(e) for e in entries)
        if len(entries) != tile.width or hashlib.sha256(hashes).digest() != digest:
            raise MisbehaviourError(f"{source.where}/{tile.path()}: its hashes are not those of {bundle.path()}'s "
                               f"{len(entries)} entries", {"tile": tile.path()})
        yield from entries[max(0, held - tile.index * WIDTH):]


def _higher_tiles(source: Source, store: Store, held: int, size: int) -> None:
    """The hash tiles above level 0 that a tree of `held` did not have (what a client proving inclusion
    reads), each the bytes this monitor's own tree gives.
    Raises: MisbehaviourError for one missing or different."""
    for tile in tiles_of(size, held):
        if tile.entries or tile.level == 0:
            continue  # checked against the entries as they were fetched
        served = source.get(tile.path(), "tile")
        if served is None:
            raise _missing(source, tile.path(), size)
        if served != read_tile(store, tile)[0]:
            raise MisbehaviourError(f"{source.where}/{tile.path()}: its hashes are not those of the tree its entries "
                               f"make", {"tile": tile.path()})


def _append(store: Store, leaves: Iterable[bytes], held: int, where: str) -> int:
    """Append the new entries to the monitor's ledger as an exported log would be (`import`'s path: every
    line parsed as an event, every hash re-computed), CHUNK at a time, as they arrive; how many. The tree
    they make was checked already, so a chunk refused leaves the ones before it as entries of the signed log.
    Raises: MisbehaviourError for an entry that is not one (its seq, its canonical form, its event)."""
    with store.reading() as cursor:
        chain = cursor.head()[1] if held else GENESIS
    leaves, appended = iter(leaves), 0
    while chunk := list(islice(leaves, CHUNK)):
        lines = []
        for seq, leaf in enumerate(chunk, start=held + appended + 1):
            try:
                fields = parse_json(leaf.decode("utf-8"))
                if not isinstance(fields, dict) or fields.get("seq") != seq or canonical(fields) != leaf:
                    raise IntegrityError(f"entry {seq} is not the canonical entry of seq {seq}")
            except (LedgerError, UnicodeDecodeError) as exc:
                raise MisbehaviourError(f"{where}: log entry {seq}: {exc}", {"seq": seq, "entry": _b64(leaf)}) from None
            digest = blake3(leaf).digest()
            chain = link(chain, digest)
            lines.append(canonical({**fields, "entry_hash": hex_hash(digest), "chain_hash": hex_hash(chain)}) + b"\n")
        span = [held + appended + 1, held + appended + len(lines)]
        try:
            import_inputs(store, [parse_input(f"log entries {span[0]}-{span[1]}", b"".join(lines))])
        except StoreError:
            raise
        except LedgerError as exc:  # not an event of the vocabulary, a repeated fact: no honest log holds one
            raise MisbehaviourError(f"{where}: {exc}", {"entries": span}) from None
        appended += len(lines)
    return appended


def _fork(source: Source, store: Store, held: int, seen: str | None, note: str, signed: Checkpoint) -> MisbehaviourError:
    """What a tree that does not extend the held one shows: the whole log's bundles fetched again (their leaf
    hashes kept, 32 bytes an entry, not the entries), the first entry that differs, and the consistency proof
    the log's own tree gives (which fails against the held checkpoint)."""
    hashes = bytearray()
    for tile in tiles_of_level0(signed.size, 0):
        bundle = Tile(None, tile.index, tile.width)
        data, served = source.get(bundle.path(), "entry bundle"), source.get(tile.path(), "tile")
        if data is None or served is None:
            raise _missing(source, bundle.path() if data is None else tile.path(), signed.size)
        try:
            entries = read_bundle(data)
        except LedgerError as exc:
            raise MisbehaviourError(f"{source.where}/{bundle.path()}: {exc}", {"tile": bundle.path()}) from None
        leaf_hashes = b"".join(leaf_hash(e) for e in entries)
        if len(entries) != tile.width or leaf_hashes != served:
            raise MisbehaviourError(f"{source.where}/{tile.path()}: its hashes are not those of {bundle.path()}'s "
                               f"{len(entries)} entries", {"tile": tile.path()})
        hashes += leaf_hashes

    def source_of(level: int, index: int) -> bytes:  # a node source over the tree the tiles make
        edge: list[bytes] = []
        lo = index << level
        extend(edge, 0, (bytes(hashes[32 * n:32 * n + 32]) for n in range(lo, min(lo + (1 << level), signed.size))))
        return edge_root(edge)

    if root(source_of, signed.size) != signed.root:
        return MisbehaviourError(f"{source.where}: its tiles are not the tree its checkpoint of size {signed.size} signs",
                            {"checkpoint": note, "tiles_root": _b64(root(source_of, signed.size))})
    differs, ours = held, b""
    with store.reading() as cursor:
        for first in range(0, held, CHUNK):
            for seq, leaf in read_entries(cursor, first, min(CHUNK, held - first)):
                if leaf_hash(leaf) != hashes[32 * (seq - 1):32 * seq]:
                    differs, ours = seq, leaf
                    break
            else:
                continue
            break
        if not ours and held:
            ours = read_entries(cursor, held - 1, 1)[0][1]
    at = (differs - 1) // WIDTH
    bundle = Tile(None, at, min(WIDTH, signed.size - at * WIDTH))
    try:  # fetched again: a log that serves another bundle now is misbehaving, not the user's input
        theirs = read_bundle(source.get(bundle.path(), "entry bundle") or b"")
    except LedgerError as exc:
        raise MisbehaviourError(f"{source.where}/{bundle.path()}: {exc}", {"tile": bundle.path()}) from None
    path = consistency_path(source_of, held, signed.size)
    # In `ledger prove --consistency --json`'s form: it verifies against the new checkpoint (verify-proof),
    # and its old_root, the new tree's prefix, is not the root the held checkpoint signs.
    proof = {"new_root": signed.root.hex(), "new_size": signed.size, "old_root": root(source_of, held).hex(),
             "old_size": held, "path": [p.hex() for p in path]}
    return MisbehaviourError(
        f"{source.where}: the checkpoint of size {signed.size} does not extend the tree of size {held} this "
        f"monitor holds (entry {differs} differs): the log forked",
        {"checkpoints": [seen, note], "first_difference": {
            "seq": differs, "held": _b64(ours),
            "served": _b64(theirs[(differs - 1) % WIDTH]) if len(theirs) > (differs - 1) % WIDTH else None},
         "consistency": proof})


def _changed(store: Store, since: int, size: int) -> set[str]:
    with store.reading() as cursor:
        return cursor.papers_since(since, size)


def _compare(source: Source, store: Store, papers: list[str], signed: Checkpoint, verifier: Verifier,
             note: str) -> tuple[int, int, int]:
    """Each paper's evidence's paper index note against the index re-computed here, and its record as the
    site serves it against the rebuild here; (records compared, index notes compared, records left for a
    later run). A published record holds every event the site had: when its evidence is of a tree past the
    checkpoint (the paper changed after the witnesses last cosigned), it is left for the run that holds it.
    Raises: MisbehaviourError naming the first that differs."""
    with store.reading() as cursor:
        known = cursor.entry(signed.size).recorded_at if signed.size else None
    query = {"known_at": known} if source.remote and known else None  # what the site knew at the checkpoint
    records = notes = later = 0
    for paper in papers:
        if not is_paper_id(paper):  # a citation's linked id is data (`../../x`): never part of a path
            continue
        compared, of = _index_note(source, store, paper, signed, verifier)
        notes += compared
        if query is None and of is not None and of > signed.size:
            later += 1
            continue
        path = fill(RECORD, json=True, paper=paper).lstrip("/")
        served = source.get(path, "record", query)
        if served is None:
            continue
        records += 1
        try:
            as_of = When.at(parse_json(served.decode("utf-8"))["as_of"])
            rebuilt = canonical(record_as_of(store, paper, as_of, When.parse(known) if query else None))
        except (LedgerError, UnicodeDecodeError, KeyError, TypeError) as exc:
            rebuilt = f"(no rebuild: {exc})".encode()
        if rebuilt != served:
            raise MisbehaviourError(f"{source.where}/{path}: the record served is not the rebuild from the log of "
                               f"size {signed.size}", {"checkpoint": note, "record": {
                                   "paper": paper, "path": path, "served": served.decode("utf-8", "replace"),
                                   "rebuilt": rebuilt.decode("utf-8", "replace")}})
    return records, notes, later


def _index_note(source: Source, store: Store, paper: str, signed: Checkpoint,
                verifier: Verifier) -> tuple[int, int | None]:
    """(1, its size) when the paper's evidence carries a paper index note of a tree this monitor holds, whose
    roots are the ones re-computed here; (0, its size) for a note of a newer tree; (0, None) for none (a site
    served or published without a key).
    Raises: MisbehaviourError when a root differs or the note is not the log's."""
    path = fill(INTEGRITY, json=True, paper=paper).lstrip("/")
    data = source.get(path, "record")
    try:
        index_note = parse_json(data.decode("utf-8")).get("checkpoint") if data is not None else None
    except (LedgerError, UnicodeDecodeError, AttributeError):
        index_note = None
    if not isinstance(index_note, str):
        return 0, None
    try:
        cp = verify_checkpoint(index_note, verifier)
    except LedgerError as exc:
        raise MisbehaviourError(f"{source.where}/{path}: its checkpoint: {exc}", {"checkpoint": index_note}) from None
    if cp.size > signed.size or cp.index_root is None:
        return 0, cp.size
    store.keep_index(cp.size)
    with store.snapshot() as cursor:
        tree, index = root(cursor.node_source(cp.size), cp.size), root_at(cursor, cp.size, store.index_nodes)
    if tree != cp.root or index is None or index[1] != cp.index_root:
        raise MisbehaviourError(f"{source.where}/{path}: its paper index note of size {cp.size} signs "
                           f"{'another tree' if tree != cp.root else 'an index root'} than the one re-computed from "
                           f"the log", {"checkpoint": index_note, "rebuilt": {
                               "root": _b64(tree), "index_root": _b64(index[1]) if index else None}})
    return 1, cp.size
