"""What an auditor vendors: checks of inclusion and consistency proofs, signed checkpoints and evidence
bundles, with no database.

It never imports the store (a test holds it to that): a proof or a bundle, a signed checkpoint and a
verifier key are all it needs. Verifiers return a short account or raise: IntegrityError naming each event,
proof or field that does not verify; InputError for a file that is not a proof or a bundle at all.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from projections.record import rebuild_mismatch

from .canonical import canonical, parse_json
from .errors import InputError, IntegrityError, NotFoundError
from .events import Fact, make_event
from .inputs import decode_input
from .merkle import leaf_hash, verify_consistency, verify_inclusion
from .signed_notes import Checkpoint, Verifier, verify_checkpoint
from .published import check_record, digest_mismatches


def _hex(value: Any, what: str) -> bytes:
    try:
        data = bytes.fromhex(value)
    except (TypeError, ValueError):
        raise IntegrityError(f"{what}: not a hex hash: {value!r}") from None
    if len(data) != 32:
        raise IntegrityError(f"{what}: not a 32-byte hash")
    return data


def _int(proof: dict, key: str) -> int:
    value = proof.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise IntegrityError(f"proof field {key}: expected an integer, found {value!r}")
    return value


def _path(proof: dict, what: str) -> list[bytes]:
    path = proof.get("path")
    if not isinstance(path, list):
        raise IntegrityError(f"{what}: path: expected a list of hex hashes")
    return [_hex(p, f"{what}: path[{i}]") for i, p in enumerate(path)]


def verify_proof(proof: Any, note: str, verifier: Verifier) -> str:
    """Check an inclusion or consistency proof against a signed checkpoint of the same tree.
    Raises InputError for a proof that is not one, IntegrityError when it does not verify against the signed checkpoint."""
    if not isinstance(proof, dict):
        raise InputError("proof: expected a JSON object")
    signed = verify_checkpoint(note, verifier)
    if "leaf_index" in proof:
        index, size = _int(proof, "leaf_index"), _int(proof, "tree_size")
        if size != signed.size:
            raise IntegrityError(f"inclusion proof: for a tree of size {size}, the checkpoint is of size {signed.size}")
        digest = _hex(proof.get("leaf_hash"), "leaf_hash")
        if "leaf" in proof and leaf_hash(_b64(proof["leaf"], "leaf")) != digest:
            raise IntegrityError("inclusion proof: leaf_hash is not the hash of leaf")
        if "root" in proof and _hex(proof["root"], "root") != signed.root:
            raise IntegrityError("inclusion proof: its root is not the checkpoint's root")
        verify_inclusion(digest, index, size, _path(proof, "inclusion proof"), signed.root)
        return f"ok: leaf {index} is in the tree of size {size} signed by {verifier.name}"
    old, new = _int(proof, "old_size"), _int(proof, "new_size")
    if new != signed.size:
        raise IntegrityError(f"consistency proof: new size {new}, the checkpoint is of size {signed.size}")
    if _hex(proof.get("new_root"), "new_root") != signed.root:
        raise IntegrityError("consistency proof: new_root is not the checkpoint's root")
    verify_consistency(old, new, _hex(proof.get("old_root"), "old_root"), signed.root, _path(proof, "consistency proof"))
    return f"ok: the tree of size {old} is a prefix of the tree of size {new} signed by {verifier.name}"


def _b64(value: Any, what: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError, TypeError):
        raise IntegrityError(f"{what}: not base64") from None


def _bundle_fact(index: int, item: Any, signed: Checkpoint) -> Fact:
    where = f"events[{index}]"
    if not isinstance(item, dict) or not isinstance(item.get("proof"), dict):
        raise IntegrityError(f"{where}: expected an object with leaf, proof and seq")
    leaf = _b64(item.get("leaf"), f"{where}.leaf")
    proof = item["proof"]
    seq = _int(item, "seq")
    where = f"event seq {seq}"
    if _int(proof, "leaf_index") != seq - 1:
        raise IntegrityError(f"{where}: proof is for leaf {proof['leaf_index']}, the event is leaf {seq - 1}")
    if _int(proof, "tree_size") != signed.size:
        raise IntegrityError(f"{where}: proof is for a tree of size {proof['tree_size']}, the checkpoint's is {signed.size}")
    try:
        verify_inclusion(leaf_hash(leaf), seq - 1, signed.size, _path(proof, where), signed.root)
    except IntegrityError as exc:
        raise IntegrityError(f"{where}: not in the signed log: {exc}") from None
    # The leaf is in the log; now read it, and insist it is the canonical entry it claims to be.
    try:
        entry = parse_json(leaf.decode("utf-8"))
        if not isinstance(entry, dict) or set(entry) != {"effective_at", "kind", "payload", "recorded_at", "seq"} \
                or entry["seq"] != seq or canonical(entry) != leaf:
            raise InputError("not a canonical log entry")
        event = make_event(entry["kind"], entry["payload"], entry["effective_at"])
    except (InputError, UnicodeDecodeError) as exc:
        raise IntegrityError(f"{where}: leaf is not a ledger event: {exc}") from None
    return Fact(seq, event.kind, event.subject, entry["effective_at"], event.effective_key, entry["recorded_at"],
                event.payload)


def verify_bundle(bundle: Any, verifier: Verifier) -> str:
    """Prove offline that each event is in the signed log and that the record is their rebuild at its as_of.

    Raises InputError for a file that is not a bundle, IntegrityError naming each event or field that fails."""
    if not isinstance(bundle, dict) or set(bundle) != {"checkpoint", "events", "record"}:
        raise InputError("evidence bundle: expected an object with checkpoint, events and record")
    if not isinstance(bundle["checkpoint"], str) or not isinstance(bundle["events"], list):
        raise InputError("evidence bundle: checkpoint must be a signed note, events a list")
    signed = verify_checkpoint(bundle["checkpoint"], verifier)
    problems, facts = [], []
    for index, item in enumerate(bundle["events"]):
        try:
            facts.append(_bundle_fact(index, item, signed))
        except IntegrityError as exc:
            problems.append(str(exc))
    record = check_record(bundle["record"])
    problems += [f"record: {p}" for p in digest_mismatches(record)]
    if problems:
        raise IntegrityError(f"evidence bundle: {len(problems)} problem(s)", problems)
    paper = record["paper"]["arxiv_id"]
    try:
        mismatch = rebuild_mismatch(facts, record)
    except NotFoundError as exc:
        raise IntegrityError(f"evidence bundle: {exc}") from None
    if mismatch is not None:
        found = [f"record is not the rebuild of the bundle's events (an event is missing or altered): {p}"
                 for p in mismatch.each()]
        raise IntegrityError(f"evidence bundle: {len(found)} problem(s)", found)
    return (f"ok: {len(facts)} events are in the log of size {signed.size} signed by {verifier.name}, and the "
            f"record of arXiv:{paper} as of {record['as_of']} is exactly their rebuild")


def load_json(name: str, data: bytes) -> Any:
    """Parse a proof or an evidence bundle with the records' strict parser: a key given twice is refused, not
    read as its last value (a reader who keeps the first would be checking something else).
    Raises InputError naming the file."""
    text = decode_input(name, data, expected="a proof or an evidence bundle")
    try:
        return parse_json(text)
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None
