"""What an auditor vendors: checks of inclusion, consistency and paper index proofs, signed checkpoints,
evidence bundles (and whether one holds every event of its paper), and the monitor's re-computation of the
paper index from an exported log, with no database.

It never imports the store (a test holds it to that): a proof or a bundle, a signed checkpoint and a
verifier key are all it needs. Verifiers return the facts they proved (a typed result: the interfaces word
it) or raise, naming the file: InputError (exit 2) for a proof or bundle that is malformed (a field missing,
of the wrong type, a hash that is not 64 hex digits, base64 that is not), naming the field; IntegrityError
(exit 1) naming each event, proof or field of a well-formed one that does not verify.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, NamedTuple

from ledger.projections.record import rebuild_mismatch

from ledger.core.canonical import canonical, parse_json
from ledger.log.chain import Entry, verify_entries
from ledger.core.errors import InputError, IntegrityError, LedgerError, NotFoundError
from ledger.model.events import Event, Fact, make_event
from ledger.core.inputs import decode_input
from ledger.log.merkle import leaf_hash, verify_consistency, verify_inclusion
from ledger.log.paper_index import IndexProof, index_of_log, parse_proof, verify_index_proof
from ledger.log.signed_notes import INDEX_EXTENSION, Checkpoint, Verifier, verify_checkpoint
from ledger.audit.results import Evidence, Included, IndexMatch, PaperCount, Prefix
from ledger.model.published import _type_name, check_record, count_field, digest_mismatches, field, field_name, sha256_field, shown
from ledger.model.parts import counted


def _path(obj: dict, path: str = "") -> list[bytes]:
    return [sha256_field(p, f"{field_name(path, 'path')}[{i}]") for i, p in enumerate(field(obj, "path", list, path))]


def _b64(obj: dict, key: str, path: str = "") -> bytes:
    value = field(obj, key, str, path)
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise InputError(f"field {field_name(path, key)}: expected base64, found {shown(value)}") from None


class _Inclusion(NamedTuple):
    index: int
    size: int
    leaf_hash: bytes
    leaf: bytes | None
    root: bytes | None
    path: list[bytes]


class _Consistency(NamedTuple):
    old: int
    new: int
    old_root: bytes
    new_root: bytes
    path: list[bytes]


_INCLUSION_KEYS = {"leaf_index", "tree_size", "leaf_hash"}
_CONSISTENCY_KEYS = {"old_size", "new_size", "old_root", "new_root"}


def _read_proof(proof: Any) -> _Inclusion | _Consistency:
    """A proof's fields, every one checked for shape: InputError names the first that is missing or malformed."""
    if not isinstance(proof, dict):
        raise InputError(f"expected a proof (a JSON object), found {_type_name(proof)}")
    inclusion, consistency = _INCLUSION_KEYS & set(proof), _CONSISTENCY_KEYS & set(proof)
    if bool(inclusion) == bool(consistency):
        raise InputError("expected an inclusion proof (leaf_index, tree_size, leaf_hash, path) or a consistency "
                         "proof (old_size, new_size, old_root, new_root, path)")
    if inclusion:
        return _Inclusion(count_field(proof, "leaf_index"), count_field(proof, "tree_size"),
                          sha256_field(field(proof, "leaf_hash", str, ""), "leaf_hash"),
                          _b64(proof, "leaf") if "leaf" in proof else None,
                          sha256_field(proof["root"], "root") if "root" in proof else None, _path(proof))
    return _Consistency(count_field(proof, "old_size"), count_field(proof, "new_size"),
                        sha256_field(field(proof, "old_root", str, ""), "old_root"),
                        sha256_field(field(proof, "new_root", str, ""), "new_root"), _path(proof))


def verify_proof(proof: Any, note: str, verifier: Verifier, name: str = "proof",
                 note_name: str = "checkpoint") -> Included | Prefix | PaperCount:
    """Check an inclusion, consistency or paper index proof against a signed checkpoint of the same tree, and
    return what it proved. `name` and `note_name` name the proof's and the checkpoint's files in every message.

    Raises:
        InputError: for a proof or a note that is malformed, naming the file and the field.
        IntegrityError: when a well-formed proof does not verify against the signed checkpoint.
    """
    try:
        read = parse_proof(proof) if isinstance(proof, dict) and "siblings" in proof else _read_proof(proof)
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None
    try:
        signed = verify_checkpoint(note, verifier)
    except LedgerError as exc:  # InputError: not a note; IntegrityError: not signed by this key
        raise type(exc)(f"{note_name}: {exc}") from None
    try:
        if isinstance(read, IndexProof):
            counted = _checked_index_proof(read, signed)
            return PaperCount(counted.paper, counted.count, counted.root, counted.tree_size, verifier.name)
        if isinstance(read, _Inclusion):
            if read.size != signed.size:
                raise IntegrityError(f"inclusion proof: for a tree of size {read.size}, the checkpoint is of size "
                                     f"{signed.size}")
            if read.leaf is not None and leaf_hash(read.leaf) != read.leaf_hash:
                raise IntegrityError("inclusion proof: leaf_hash is not the hash of leaf")
            if read.root is not None and read.root != signed.root:
                raise IntegrityError("inclusion proof: its root is not the checkpoint's root")
            verify_inclusion(read.leaf_hash, read.index, read.size, read.path, signed.root)
            return Included(read.index, read.size, verifier.name)
        if read.new != signed.size:
            raise IntegrityError(f"consistency proof: new size {read.new}, the checkpoint is of size {signed.size}")
        if read.new_root != signed.root:
            raise IntegrityError("consistency proof: new_root is not the checkpoint's root")
        verify_consistency(read.old, read.new, read.old_root, signed.root, read.path)
    except IntegrityError as exc:
        raise IntegrityError(f"{name}: {exc}") from None
    return Prefix(read.old, read.new, verifier.name)


class _Event(NamedTuple):
    seq: int
    leaf: bytes
    index: int  # the proof's leaf index
    size: int  # the proof's tree size
    path: list[bytes]
    place: tuple[int, list[bytes]] | None  # its place in the paper's events tree (index, path), when given


def _read_event(index: int, item: Any, placed: bool) -> _Event:
    """One event of a bundle, every field checked for shape (its paper_proof when `placed`). Raises
    InputError naming events[i] and the field."""
    at = f"events[{index}]"
    if not isinstance(item, dict):
        raise InputError(f"field {at}: expected an object with leaf, proof and seq, found {_type_name(item)}")
    seq = field(item, "seq", int, at)
    if seq < 1:
        raise InputError(f"field {at}.seq: expected a sequence number (1 or more), found {seq}")
    leaf = _b64(item, "leaf", at)
    proof = field(item, "proof", dict, at)
    place = None
    if placed:
        paper_proof = field(item, "paper_proof", dict, at)
        place = (count_field(paper_proof, "index", f"{at}.paper_proof"), _path(paper_proof, f"{at}.paper_proof"))
    elif "paper_proof" in item:
        raise InputError(f"field {at}.paper_proof: a bundle without an index proof has no places to prove")
    return _Event(seq, leaf, count_field(proof, "leaf_index", f"{at}.proof"),
                  count_field(proof, "tree_size", f"{at}.proof"), _path(proof, f"{at}.proof"), place)


class _Read(NamedTuple):
    """A bundle's event once it is in the signed log: as a fact, as an event, its leaf hash, its place."""

    fact: Fact
    event: Event
    leaf_hash: bytes
    place: tuple[int, list[bytes]] | None


def _bundle_fact(event: _Event, signed: Checkpoint) -> _Read:
    """A well-formed event of a bundle, read. Raises IntegrityError when it is not in the signed log or is not
    a ledger event."""
    seq, where = event.seq, f"event seq {event.seq}"
    if event.index != seq - 1:
        raise IntegrityError(f"{where}: proof is for leaf {event.index}, the event is leaf {seq - 1}")
    if event.size != signed.size:
        raise IntegrityError(f"{where}: proof is for a tree of size {event.size}, the checkpoint's is {signed.size}")
    digest = leaf_hash(event.leaf)
    try:
        verify_inclusion(digest, seq - 1, signed.size, event.path, signed.root)
    except IntegrityError as exc:
        raise IntegrityError(f"{where}: not in the signed log: {exc}") from None
    # The leaf is in the log; now read it, and insist it is the canonical entry it claims to be.
    try:
        entry = parse_json(event.leaf.decode("utf-8"))
        if not isinstance(entry, dict) or set(entry) != {"effective_at", "kind", "payload", "recorded_at", "seq"} \
                or entry["seq"] != seq or canonical(entry) != event.leaf:
            raise InputError("not a canonical log entry")
        made = make_event(entry["kind"], entry["payload"], entry["effective_at"])
    except (InputError, UnicodeDecodeError) as exc:
        raise IntegrityError(f"{where}: leaf is not a ledger event: {exc}") from None
    return _Read(Fact(seq, made.kind, made.subject, entry["effective_at"], made.effective_key, entry["recorded_at"],
                      made.payload), made, digest, event.place)


_OLD_BUNDLE = frozenset({"checkpoint", "events", "record"})  # made before the paper index
_BUNDLES = (_OLD_BUNDLE, _OLD_BUNDLE | {"index"}, _OLD_BUNDLE | {"index", "known_at"})


class _Bundle(NamedTuple):
    """A bundle's fields, each of the right shape, and its checkpoint once its signature verified."""

    events: list[_Event]
    index: IndexProof | None
    known_at: str | None
    record: dict
    signed: Checkpoint


def _read_bundle(bundle: Any, verifier: Verifier) -> _Bundle:
    """Every field's shape, then the checkpoint's signature.
    Raises: InputError naming the field, or IntegrityError for a checkpoint this key did not sign."""
    if not isinstance(bundle, dict) or set(bundle) not in _BUNDLES:
        raise InputError("expected an evidence bundle: an object with checkpoint, events and record (and index, "
                         "known_at)")
    field(bundle, "checkpoint", str, "")
    placed = "index" in bundle
    events = [_read_event(index, item, placed) for index, item in enumerate(field(bundle, "events", list, ""))]
    proof = parse_proof(bundle["index"], "index") if placed else None
    known_at = field(bundle, "known_at", str, "") if "known_at" in bundle else None
    try:
        record = check_record(bundle["record"])
    except InputError as exc:
        raise InputError(f"record: {exc}") from None
    try:
        signed = verify_checkpoint(bundle["checkpoint"], verifier)
    except LedgerError as exc:  # InputError: not a checkpoint; IntegrityError: not signed by this key
        message = str(exc)
        raise type(exc)(message if message.startswith("checkpoint: ") else f"checkpoint: {message}") from None
    return _Bundle(events, proof, known_at, record, signed)


def verify_bundle(bundle: Any, verifier: Verifier, name: str = "evidence bundle") -> Evidence:
    """Prove offline that each event is in the signed log, that the record is their rebuild at its as_of (and
    known_at), and, for a bundle that carries the paper index proof, that it holds every event of the paper
    in the log of the checkpoint's size: each takes its own place in the paper's events tree, and no place is
    left empty. `name` names the bundle's file in every message. Every field's shape is checked before
    anything is verified, so a malformed bundle is always reported as malformed.

    Raises:
        InputError: for a bundle that is malformed, naming the file and the field (the record's and the
            checkpoint's included).
        IntegrityError: naming each event or field that does not verify, and for an incomplete bundle how
            many of the paper's events are missing and between which seqs.
    """
    try:
        given = _read_bundle(bundle, verifier)
    except LedgerError as exc:
        raise type(exc)(f"{name}: {exc}") from None
    problems, read, signed, proof = [], [], given.signed, given.index
    for event in given.events:
        try:
            read.append(_bundle_fact(event, signed))
        except IntegrityError as exc:
            problems.append(f"{name}: {exc}")
    problems += [f"{name}: record: {p}" for p in digest_mismatches(given.record)]
    paper = given.record["paper"]["arxiv_id"]
    if proof is not None:
        try:
            if proof.paper != paper:
                raise IntegrityError(f"index proof: it is of arXiv:{proof.paper}, the record is of arXiv:{paper}")
            _checked_index_proof(proof, signed)
        except IntegrityError as exc:
            problems.append(f"{name}: {exc}")
        else:
            problems += [f"{name}: {p}" for p in _completeness(proof, read)]
    # The rebuild is compared whatever else failed: a bundle without an event the record depends on says both.
    facts = [r.fact for r in read if given.known_at is None or r.fact.recorded_at <= given.known_at]
    try:
        mismatch = rebuild_mismatch(facts, given.record)
    except NotFoundError as exc:
        problems.append(f"{name}: {exc}")
    else:
        if mismatch is not None:
            problems += [f"{name}: record is not the rebuild of the bundle's events (an event is missing or altered): "
                         f"{p}" for p in mismatch.each()]
    if problems:
        raise IntegrityError(f"{name}: {counted(len(problems), 'problem')}", problems)
    return Evidence(len(read), signed.size, verifier.name, paper, given.record["as_of"], given.known_at,
                    proof.count if proof is not None else None)


def _checked_index_proof(proof: IndexProof, signed: Checkpoint) -> IndexProof:
    """The proof, once it is of the checkpoint's size and leads to the index root the checkpoint signs."""
    if signed.index_root is None:
        raise IntegrityError(f"index proof: the checkpoint carries no {INDEX_EXTENSION} line (signed before the "
                             "paper index), so no paper index proof can be checked against it")
    if proof.tree_size != signed.size:
        raise IntegrityError(f"index proof: it is of the tree of size {proof.tree_size}, the checkpoint's is "
                             f"{signed.size}")
    verify_index_proof(proof, signed.index_root)
    return proof


def _completeness(proof: IndexProof, read: list[_Read]) -> list[str]:
    """What keeps the bundle's events from being exactly the paper's events the index counts: each must take
    its own place in the paper's events tree, and every place must be taken; a gap is located by the seqs of
    the places beside it, which are proven too."""
    paper, problems, places = proof.paper, [], {}
    for fact, event, digest, (position, path) in read:
        where = f"event seq {fact.seq}"
        other = event.paper not in (None, paper)
        try:
            if proof.count == 0 or proof.root is None:
                raise IntegrityError("the index says the paper has no events")
            verify_inclusion(digest, position, proof.count, path, proof.root)
        except IntegrityError as exc:
            problems.append(f"{where}: not among the {proof.count} events the signed paper index counts for "
                            f"arXiv:{paper}{f' (it is an event of arXiv:{event.paper})' if other else ''}: {exc}")
            continue
        if other:
            problems.append(f"{where}: the signed paper index counts it for arXiv:{paper}, but it is an event of "
                            f"arXiv:{event.paper}: the index is not the log's (run a monitor: verify --index)")
        if position in places:
            problems.append(f"{where}: takes the place of seq {places[position]} in the paper's events")
            continue
        places[position] = fact.seq
    missing = [position for position in range(proof.count) if position not in places]
    if missing:
        runs, start = [], missing[0]
        for previous, position in zip(missing, missing[1:] + [None]):
            if position != previous + 1:
                runs.append((start, previous))
                start = position
        spans = []
        for first, last in runs:
            before, after, count = places.get(first - 1), places.get(last + 1), last - first + 1
            where = (f"between seq {before} and seq {after}" if before and after else f"after seq {before}"
                     if before else f"before seq {after}" if after else "(the bundle holds none of them)")
            spans.append(f"{count} event{'s' if count > 1 else ''} {where}")
        problems.append(f"incomplete: {len(missing)} of the {proof.count} events of arXiv:{paper} in the log of size "
                        f"{proof.tree_size} are missing from the bundle: {'; '.join(spans)}")
    ordered = [seq for _, seq in sorted(places.items())]
    if any(a >= b for a, b in zip(ordered, ordered[1:])):
        problems.append(f"the signed paper index places arXiv:{paper}'s events out of seq order: the index is not "
                        "the log's (run a monitor: verify --index)")
    return problems


def verify_index(entries: list[Entry], note: str, verifier: Verifier, name: str = "checkpoint") -> IndexMatch:
    """The monitor's check: re-compute the paper index from an exported log's entries up to the signed
    checkpoint's size, and compare it with the index root the checkpoint signs (and the log with its tree).
    Raises: InputError for a checkpoint without an index line or a log shorter than it, or IntegrityError
    when the log's chain breaks, its tree is not the signed one, or the signed index root is not the log's."""
    try:
        signed = verify_checkpoint(note, verifier)
    except LedgerError as exc:
        raise type(exc)(f"{name}: {exc}") from None
    if signed.index_root is None:
        raise InputError(f"{name}: carries no {INDEX_EXTENSION} line (signed before the paper index)")
    prefix = [entry for entry in entries if entry.seq <= signed.size]
    if len(prefix) < signed.size:
        raise InputError(f"{name}: is of size {signed.size}, the log holds {len(prefix)} events")
    verify_entries(prefix)
    index, log_root, members = index_of_log(prefix, signed.size)
    if log_root != signed.root:
        raise IntegrityError(f"{name}: its root is not the Merkle tree of the log's first {signed.size} events")
    if index != signed.index_root:
        raise IntegrityError(f"{name}: the paper index root it signs ({base64.b64encode(signed.index_root).decode()}) "
                             f"is not the index of the log at size {signed.size} "
                             f"(re-computed: {base64.b64encode(index).decode()})")
    return IndexMatch(signed.size, len(members.every_paper()))


def load_json(name: str, data: bytes) -> Any:
    """Parse a proof or an evidence bundle with the records' strict parser: a key given twice is refused, not
    read as its last value (a reader who keeps the first would be checking something else).
    Raises: InputError naming the file."""
    text = decode_input(name, data, expected="a proof or an evidence bundle")
    try:
        return parse_json(text)
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None
