"""What an auditor vendors: checks of inclusion and consistency proofs, signed checkpoints and evidence
bundles, with no database.

It never imports the store (a test holds it to that): a proof or a bundle, a signed checkpoint and a
verifier key are all it needs. Verifiers return a short account or raise, naming the file: InputError (exit
2) for a proof or bundle that is malformed (a field missing, of the wrong type, a hash that is not 64 hex
digits, base64 that is not), naming the field; IntegrityError (exit 1) naming each event, proof or field of a
well-formed one that does not verify.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, NamedTuple

from projections.record import rebuild_mismatch

from .canonical import canonical, parse_json
from .errors import InputError, IntegrityError, LedgerError, NotFoundError
from .events import Fact, make_event
from .inputs import decode_input
from .merkle import leaf_hash, verify_consistency, verify_inclusion
from .signed_notes import Checkpoint, Verifier, verify_checkpoint
from .published import _type_name, check_record, digest_mismatches, field


_HASH = re.compile(r"[0-9a-fA-F]{64}")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _where(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _hash(value: Any, where: str) -> bytes:
    if not isinstance(value, str) or not _HASH.fullmatch(value):
        raise InputError(f"field {where}: expected 64 hex digits (a SHA-256 hash), found {_show(value)}")
    return bytes.fromhex(value)


def _count(obj: dict, key: str, path: str = "") -> int:
    value = field(obj, key, int, path)
    if value < 0:
        raise InputError(f"field {_where(path, key)}: expected a non-negative integer, found {value}")
    return value


def _path(obj: dict, path: str = "") -> list[bytes]:
    return [_hash(p, f"{_where(path, 'path')}[{i}]") for i, p in enumerate(field(obj, "path", list, path))]


def _b64(obj: dict, key: str, path: str = "") -> bytes:
    value = field(obj, key, str, path)
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise InputError(f"field {_where(path, key)}: expected base64, found {_show(value)}") from None


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
        return _Inclusion(_count(proof, "leaf_index"), _count(proof, "tree_size"),
                          _hash(field(proof, "leaf_hash", str, ""), "leaf_hash"),
                          _b64(proof, "leaf") if "leaf" in proof else None,
                          _hash(proof["root"], "root") if "root" in proof else None, _path(proof))
    return _Consistency(_count(proof, "old_size"), _count(proof, "new_size"),
                        _hash(field(proof, "old_root", str, ""), "old_root"),
                        _hash(field(proof, "new_root", str, ""), "new_root"), _path(proof))


def verify_proof(proof: Any, note: str, verifier: Verifier, name: str = "proof", note_name: str = "checkpoint") -> str:
    """Check an inclusion or consistency proof against a signed checkpoint of the same tree. `name` and
    `note_name` name the proof's and the checkpoint's files in every message.
    Raises InputError for a proof or a note that is malformed (naming the file and the field),
    IntegrityError when a well-formed proof does not verify against the signed checkpoint."""
    try:
        read = _read_proof(proof)
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None
    try:
        signed = verify_checkpoint(note, verifier)
    except LedgerError as exc:  # InputError: not a note; IntegrityError: not signed by this key
        raise type(exc)(f"{note_name}: {exc}") from None
    try:
        if isinstance(read, _Inclusion):
            if read.size != signed.size:
                raise IntegrityError(f"inclusion proof: for a tree of size {read.size}, the checkpoint is of size "
                                     f"{signed.size}")
            if read.leaf is not None and leaf_hash(read.leaf) != read.leaf_hash:
                raise IntegrityError("inclusion proof: leaf_hash is not the hash of leaf")
            if read.root is not None and read.root != signed.root:
                raise IntegrityError("inclusion proof: its root is not the checkpoint's root")
            verify_inclusion(read.leaf_hash, read.index, read.size, read.path, signed.root)
            return f"ok: leaf {read.index} is in the tree of size {read.size} signed by {verifier.name}"
        if read.new != signed.size:
            raise IntegrityError(f"consistency proof: new size {read.new}, the checkpoint is of size {signed.size}")
        if read.new_root != signed.root:
            raise IntegrityError("consistency proof: new_root is not the checkpoint's root")
        verify_consistency(read.old, read.new, read.old_root, signed.root, read.path)
    except IntegrityError as exc:
        raise IntegrityError(f"{name}: {exc}") from None
    return f"ok: the tree of size {read.old} is a prefix of the tree of size {read.new} signed by {verifier.name}"


class _Event(NamedTuple):
    seq: int
    leaf: bytes
    index: int  # the proof's leaf index
    size: int  # the proof's tree size
    path: list[bytes]


def _read_event(index: int, item: Any) -> _Event:
    """One event of a bundle, every field checked for shape. Raises InputError naming events[i] and the field."""
    at = f"events[{index}]"
    if not isinstance(item, dict):
        raise InputError(f"field {at}: expected an object with leaf, proof and seq, found {_type_name(item)}")
    seq = field(item, "seq", int, at)
    if seq < 1:
        raise InputError(f"field {at}.seq: expected a sequence number (1 or more), found {seq}")
    leaf = _b64(item, "leaf", at)
    proof = field(item, "proof", dict, at)
    return _Event(seq, leaf, _count(proof, "leaf_index", f"{at}.proof"), _count(proof, "tree_size", f"{at}.proof"),
                  _path(proof, f"{at}.proof"))


def _bundle_fact(event: _Event, signed: Checkpoint) -> Fact:
    """A well-formed event of a bundle as a Fact. Raises IntegrityError when it is not in the signed log or
    is not a ledger event."""
    seq, where = event.seq, f"event seq {event.seq}"
    if event.index != seq - 1:
        raise IntegrityError(f"{where}: proof is for leaf {event.index}, the event is leaf {seq - 1}")
    if event.size != signed.size:
        raise IntegrityError(f"{where}: proof is for a tree of size {event.size}, the checkpoint's is {signed.size}")
    try:
        verify_inclusion(leaf_hash(event.leaf), seq - 1, signed.size, event.path, signed.root)
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
    return Fact(seq, made.kind, made.subject, entry["effective_at"], made.effective_key, entry["recorded_at"],
                made.payload)


def verify_bundle(bundle: Any, verifier: Verifier, name: str = "evidence bundle") -> str:
    """Prove offline that each event is in the signed log and that the record is their rebuild at its as_of.
    `name` names the bundle's file in every message. Every field's shape is checked before anything is
    verified, so a malformed bundle is always reported as malformed.

    Raises InputError for a bundle that is malformed (naming the file and the field, the record's and the
    checkpoint's included), IntegrityError naming each event or field that does not verify."""
    try:
        if not isinstance(bundle, dict) or set(bundle) != {"checkpoint", "events", "record"}:
            raise InputError("expected an evidence bundle: an object with checkpoint, events and record")
        field(bundle, "checkpoint", str, "")
        events = [_read_event(index, item) for index, item in enumerate(field(bundle, "events", list, ""))]
        try:
            record = check_record(bundle["record"])
        except InputError as exc:
            raise InputError(f"record: {exc}") from None
        try:
            signed = verify_checkpoint(bundle["checkpoint"], verifier)
        except LedgerError as exc:  # InputError: not a checkpoint; IntegrityError: not signed by this key
            message = str(exc)
            raise type(exc)(message if message.startswith("checkpoint: ") else f"checkpoint: {message}") from None
    except LedgerError as exc:
        raise type(exc)(f"{name}: {exc}") from None
    problems, facts = [], []
    for event in events:
        try:
            facts.append(_bundle_fact(event, signed))
        except IntegrityError as exc:
            problems.append(f"{name}: {exc}")
    problems += [f"{name}: record: {p}" for p in digest_mismatches(record)]
    if problems:
        raise IntegrityError(f"{name}: {len(problems)} problem(s)", problems)
    try:
        mismatch = rebuild_mismatch(facts, record)
    except NotFoundError as exc:
        raise IntegrityError(f"{name}: {exc}") from None
    if mismatch is not None:
        found = [f"{name}: record is not the rebuild of the bundle's events (an event is missing or altered): {p}"
                 for p in mismatch.each()]
        raise IntegrityError(f"{name}: {len(found)} problem(s)", found)
    return (f"ok: {len(facts)} events are in the log of size {signed.size} signed by {verifier.name}, and the "
            f"record of arXiv:{record['paper']['arxiv_id']} as of {record['as_of']} is exactly their rebuild")


def load_json(name: str, data: bytes) -> Any:
    """Parse a proof or an evidence bundle with the records' strict parser: a key given twice is refused, not
    read as its last value (a reader who keeps the first would be checking something else).
    Raises InputError naming the file."""
    text = decode_input(name, data, expected="a proof or an evidence bundle")
    try:
        return parse_json(text)
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None
