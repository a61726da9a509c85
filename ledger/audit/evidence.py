"""Evidence bundles, checked offline: each event in the signed log, the record their rebuild, and (with the
paper index proof) the events exactly the paper's. Two forms: one inclusion proof per event (`ledger replay
--bundle`: a failure names the event), or compact (the integrity pages): each event its log entry, one
multi-leaf proof for all of them (`inclusion`: no sibling repeated), the events every event of the paper in
seq order, and the record named by its as-of time and context digest rather than copied.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, NamedTuple

from ledger.audit.results import Evidence
from ledger.core.canonical import canonical, parse_json
from ledger.core.errors import InputError, IntegrityError, LedgerError, NotFoundError
from ledger.core.times import When
from ledger.log.merkle import leaf_hash, root, verify_inclusion, verify_multi_inclusion
from ledger.log.paper_index import IndexProof, events_tree, parse_proof, verify_index_proof
from ledger.log.signed_notes import INDEX_EXTENSION, Checkpoint, Verifier, verify_checkpoint
from ledger.model.events import Event, Fact, make_event
from ledger.model.parts import counted
from ledger.model.published import (
    _type_name,
    check_record,
    count_field,
    digest_mismatches,
    field,
    field_name,
    sha256_field,
    shown,
    timestamp,
)
from ledger.projections.compare import rebuild_mismatch
from ledger.projections.record import build_record


def _path(obj: dict[str, Any], path: str = "") -> list[bytes]:
    return [sha256_field(p, f"{field_name(path, 'path')}[{i}]") for i, p in enumerate(field(obj, "path", list, path))]


def _b64(obj: dict[str, Any], key: str, path: str = "") -> bytes:
    value = field(obj, key, str, path)
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise InputError(f"field {field_name(path, key)}: expected base64, found {shown(value)}") from None



class _Event(NamedTuple):
    seq: int
    leaf: bytes
    index: int  # type: ignore[assignment]  # the proof's leaf index (the bundle's own word; shadows tuple.index)
    size: int  # the proof's tree size
    path: list[bytes] | None  # None in a compact bundle: its one multi-leaf proof covers every event
    place: tuple[int, list[bytes]] | None  # its place in the paper's events tree (index, path), when given


def _read_event(index: int, item: Any, placed: bool, compact: bool) -> _Event:
    """One event of a bundle, every field checked for shape (its paper_proof when `placed`; only seq and
    leaf when `compact`). Raises InputError naming events[i] and the field."""
    at = f"events[{index}]"
    if not isinstance(item, dict):
        raise InputError(f"field {at}: expected an object with leaf, proof and seq, found {_type_name(item)}")
    if compact:
        if set(item) != {"entry"}:
            raise InputError(f"field {at}: a compact bundle's event is its log entry alone (its inclusion is the "
                             f"bundle's), found {', '.join(sorted(item)) or 'nothing'}")
        entry = field(item, "entry", dict, at)
        seq = field(entry, "seq", int, f"{at}.entry")
        try:
            leaf = canonical(entry)  # the leaf: an entry is canonical JSON, so its parse encodes back to it
        except InputError as exc:
            raise InputError(f"field {at}.entry: {exc}") from None
        return _Event(seq, leaf, seq - 1, 0, None, None)
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
    """A well-formed event of a bundle, read (in the signed log, when it carries its own proof). Raises
    IntegrityError when it is not in the signed log or is not a ledger event."""
    seq, where = event.seq, f"event seq {event.seq}"
    digest = leaf_hash(event.leaf)
    if seq > signed.size:  # said in events before a proof's leaf index could say it off by one
        raise IntegrityError(f"{where}: not in the signed log of size {signed.size}")
    if event.path is not None:
        if event.index != seq - 1:  # the user's terms are seqs: event n is leaf index n - 1
            raise IntegrityError(f"{where}: proof is for event {event.index + 1} (leaf index {event.index}), not "
                                 f"event {seq}")
        if event.size != signed.size:
            raise IntegrityError(f"{where}: proof is for a tree of size {event.size}, the checkpoint's is {signed.size}")
        try:
            verify_inclusion(digest, seq - 1, signed.size, event.path, signed.root)
        except IntegrityError as exc:
            raise IntegrityError(f"{where}: not in the signed log: {exc}") from None
    # The event's bytes are in the log; now read them, and insist they are the canonical entry they claim to be.
    try:
        entry = parse_json(event.leaf.decode("utf-8"))
        if not isinstance(entry, dict) or set(entry) != {"effective_at", "kind", "payload", "recorded_at", "seq"} \
                or entry["seq"] != seq or canonical(entry) != event.leaf:
            raise InputError("not a canonical log entry")
        made = make_event(entry["kind"], entry["payload"], entry["effective_at"])
    except (InputError, UnicodeDecodeError) as exc:
        raise IntegrityError(f"{where}: its bytes are not a ledger event: {exc}") from None
    return _Read(Fact(seq, made.kind, made.subject, entry["effective_at"], made.effective_key, entry["recorded_at"],
                      made.payload), made, digest, event.place)


_OLD_BUNDLE = frozenset({"checkpoint", "events", "record"})  # made before the paper index
_COMPACT = frozenset({"as_of", "checkpoint", "context_digest", "events", "inclusion", "index"})
_BUNDLES = (_OLD_BUNDLE, _OLD_BUNDLE | {"index"}, _OLD_BUNDLE | {"index", "known_at"}, _COMPACT, _COMPACT | {"known_at"})


class _Bundle(NamedTuple):
    """A bundle's fields, each of the right shape, and its checkpoint once its signature verified."""

    events: list[_Event]
    inclusion: list[bytes] | None  # a compact bundle's one proof of every event
    index: IndexProof | None  # type: ignore[assignment]  # the bundle's own word (shadows tuple.index)
    known_at: str | None
    record: dict[str, Any] | None  # None in a compact bundle: it names the record by its as-of time and context digest
    as_of: str
    context: str | None
    signed: Checkpoint


def _read_bundle(bundle: Any, verifier: Verifier) -> _Bundle:
    """Every field's shape, then the checkpoint's signature.
    Raises: InputError naming the field, or IntegrityError for a checkpoint this key did not sign."""
    if not isinstance(bundle, dict) or set(bundle) - {"cosigned"} not in _BUNDLES or \
            "cosigned" in bundle and "index" not in bundle:
        raise InputError("expected an evidence bundle: an object with checkpoint, events and record (and index, "
                         "known_at, cosigned), or a compact one with as_of, checkpoint, context_digest, events, "
                         "inclusion and index (and known_at, cosigned)")
    field(bundle, "checkpoint", str, "")
    compact = "inclusion" in bundle
    placed = "index" in bundle and not compact
    events = [_read_event(index, item, placed, compact) for index, item in enumerate(field(bundle, "events", list, ""))]
    inclusion = [sha256_field(p, f"inclusion[{i}]") for i, p in enumerate(field(bundle, "inclusion", list, ""))] \
        if compact else None
    proof = parse_proof(bundle["index"], "index") if "index" in bundle else None
    known_at = field(bundle, "known_at", str, "") if "known_at" in bundle else None
    record, context = None, None
    if compact:
        timestamp(bundle, "as_of", "")
        as_of, context = bundle["as_of"], field(bundle, "context_digest", str, "")
        if not context.startswith("sha256:"):
            raise InputError(f"field context_digest: expected sha256:<64 hex>, found {shown(context)}")
        sha256_field(context.removeprefix("sha256:"), "context_digest")
    else:
        try:
            record = check_record(bundle["record"])
        except InputError as exc:
            raise InputError(f"record: {exc}") from None
        as_of = record["as_of"]
    try:
        signed = verify_checkpoint(bundle["checkpoint"], verifier)
    except LedgerError as exc:  # InputError: not a checkpoint; IntegrityError: not signed by this key
        message = str(exc)
        raise type(exc)(message if message.startswith("checkpoint: ") else f"checkpoint: {message}") from None
    if "cosigned" in bundle:  # the witnessed checkpoint of the same tree; its witnesses are counted by a policy
        try:
            of = verify_checkpoint(field(bundle, "cosigned", str, ""), verifier)
        except LedgerError as exc:
            raise type(exc)(f"cosigned: {exc}") from None
        if not of.same_tree(signed):
            raise IntegrityError(f"cosigned: it is of the tree of size {of.size}, the bundle's of size {signed.size} "
                                 f"(or has another root)")
    return _Bundle(events, inclusion, proof, known_at, record, as_of, context, signed)


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
    # An event past the checkpoint is named by its seq below; the multi-leaf proof would name only a leaf index.
    if given.inclusion is not None and all(e.seq <= signed.size for e in given.events):
        try:
            verify_multi_inclusion([(e.seq - 1, leaf_hash(e.leaf)) for e in given.events], signed.size,
                                   given.inclusion, signed.root)
        except IntegrityError as exc:
            problems.append(f"{name}: the events are not all in the signed log of size {signed.size}: {exc}")
    for event in given.events:
        try:
            read.append(_bundle_fact(event, signed))
        except IntegrityError as exc:
            problems.append(f"{name}: {exc}")
    if given.record is not None:
        problems += [f"{name}: record: {p}" for p in digest_mismatches(given.record)]
    # A bundle without its record is a compact one, which always carries its index proof (`_BUNDLES`).
    paper = given.record["paper"]["arxiv_id"] if given.record is not None else proof.paper  # type: ignore[union-attr]
    if proof is not None:
        try:
            if proof.paper != paper:
                raise IntegrityError(f"index proof: it is of arXiv:{proof.paper}, the record is of arXiv:{paper}")
            _checked_index_proof(proof, signed)
        except IntegrityError as exc:
            problems.append(f"{name}: {exc}")
        else:
            whole = _completeness if given.inclusion is None else _every_event
            problems += [f"{name}: {p}" for p in whole(proof, read)]
    # The rebuild is compared whatever else failed: a bundle without an event the record depends on says both.
    facts = [r.fact for r in read if given.known_at is None or r.fact.recorded_at <= given.known_at]
    try:
        if given.record is None:
            rebuilt = build_record(paper, facts, When.at(given.as_of))["context_digest"]
            if rebuilt != given.context:
                problems.append(f"{name}: the bundle's events rebuild the record of arXiv:{paper} as of {given.as_of} "
                                f"with context digest {rebuilt}, the bundle names {given.context}")
            mismatch = None
        else:
            mismatch = rebuild_mismatch(facts, given.record)
    except NotFoundError as exc:
        problems.append(f"{name}: {exc}")
    else:
        if mismatch is not None:
            problems += [f"{name}: record is not the rebuild of the bundle's events (an event is missing or altered): "
                         f"{p}" for p in mismatch.each()]
    if problems:
        raise IntegrityError(f"{name}: {counted(len(problems), 'problem')}", problems)
    return Evidence(len(read), signed.size, verifier.name, paper, given.as_of, given.known_at,
                    proof.count if proof is not None else None)


def _checked_index_proof(proof: IndexProof, signed: Checkpoint) -> IndexProof:
    """The proof, once it is of the checkpoint's size and leads to the index root the checkpoint signs."""
    if signed.index_root is None:
        raise IntegrityError(f"index proof: the checkpoint carries no {INDEX_EXTENSION} line (it is not the paper "
                             "index note), so no paper index proof can be checked against it")
    if proof.tree_size != signed.size:
        raise IntegrityError(f"index proof: it is of the tree of size {proof.tree_size}, the checkpoint's is "
                             f"{signed.size}")
    verify_index_proof(proof, signed.index_root)
    return proof


def _every_event(proof: IndexProof, read: list[_Read]) -> list[str]:
    """What keeps a compact bundle's events from being every event of the paper the index counts: in seq
    order, their leaf hashes must make the paper's events tree it signs."""
    paper = proof.paper
    problems = [f"event seq {r.fact.seq}: the bundle holds it for arXiv:{paper}, but it is an event of "
                f"arXiv:{r.event.paper}" for r in read if r.event.paper not in (None, paper)]
    digests = [r.leaf_hash for r in read]
    if len(digests) != proof.count or (digests and root(events_tree(digests), len(digests)) != proof.root):
        problems.append(f"incomplete or altered: the bundle's {counted(len(digests), 'event')} are not the "
                        f"{counted(proof.count, 'event')} of arXiv:{paper} the signed paper index counts in the log of size "
                        f"{proof.tree_size}")
    return problems


def _completeness(proof: IndexProof, read: list[_Read]) -> list[str]:
    """What keeps the bundle's events from being exactly the paper's events the index counts: each must take
    its own place in the paper's events tree, and every place must be taken; a gap is located by the seqs of
    the places beside it, which are proven too."""
    paper, problems = proof.paper, []
    places: dict[int, int] = {}  # position in the paper's events tree -> the seq that takes it
    for fact, event, digest, (position, path) in read:  # type: ignore[misc]  # read with the index: each has its place
        where = f"event seq {fact.seq}"
        other = event.paper not in (None, paper)
        try:
            if proof.count == 0 or proof.root is None:
                raise IntegrityError("the index says the paper has no events")
            verify_inclusion(digest, position, proof.count, path, proof.root)
        except IntegrityError as exc:
            problems.append(f"{where}: not among the {counted(proof.count, 'event')} the signed paper index counts for "
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
        for previous, following in zip(missing, [*missing[1:], None]):
            if following != previous + 1:
                runs.append((start, previous))
                if following is not None:
                    start = following
        spans = []
        for first, last in runs:
            before, after, count = places.get(first - 1), places.get(last + 1), last - first + 1
            where = (f"between seq {before} and seq {after}" if before and after else f"after seq {before}"
                     if before else f"before seq {after}" if after else "(the bundle holds none of them)")
            spans.append(f"{counted(count, 'event')} {where}")
        problems.append(f"incomplete: {len(missing)} of the {counted(proof.count, 'event')} of arXiv:{paper} in the log of "
                        f"size {proof.tree_size} {'is' if len(missing) == 1 else 'are'} missing from the bundle: {'; '.join(spans)}")
    ordered = [seq for _, seq in sorted(places.items())]
    if any(a >= b for a, b in zip(ordered, ordered[1:])):
        problems.append(f"the signed paper index places arXiv:{paper}'s events out of seq order: the index is not "
                        "the log's (run a monitor: verify --index)")
    return problems


