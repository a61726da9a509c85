"""Proofs an outsider can check: inclusion and consistency proofs (RFC 9162), signed checkpoints, and
evidence bundles that carry one record with every event that built it.

Building reads the store; verifying is pure and needs no database: a bundle or a proof, a signed
checkpoint and a verifier key. Verifiers return a short account or raise IntegrityError naming each
event, proof or field that fails.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from projections.record import build_record

from .canonical import canonical, parse_json
from .chain import entry_bytes
from .errors import InputError, IntegrityError, NotFoundError
from .events import Fact, make_event
from .importer import decode_input
from .merkle import consistency_path, inclusion_path, leaf_hash, root, verify_consistency, verify_inclusion
from .notes import Checkpoint, Signer, Verifier, verify_checkpoint
from .record import check_record, digest_mismatches
from .store import Store


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


def _size(session, size: int | None) -> int:
    head = session.head()[0]
    if size is None:
        return head
    if not 0 < size <= head:
        raise InputError(f"tree size {size}: the ledger holds {head} events")
    return size


def checkpoint(store: Store, signer: Signer) -> str:
    """A signed note of the current tree: origin (the key's name), size, root."""
    with store.reading() as session:
        return _signed_checkpoint(signer, session.node_source(), session.head()[0])


def _signed_checkpoint(signer: Signer, nodes, size: int) -> str:
    return signer.sign(Checkpoint(signer.name, size, root(nodes, size)).text())


def _inclusion(nodes, seq: int, size: int, kind: str, effective_at: str, recorded_at: str, payload: bytes) -> dict:
    leaf = entry_bytes(seq, kind, effective_at, recorded_at, payload)
    return {"leaf": base64.b64encode(leaf).decode(), "leaf_hash": leaf_hash(leaf).hex(), "leaf_index": seq - 1,
            "path": [p.hex() for p in inclusion_path(nodes, seq - 1, size)], "seq": seq, "tree_size": size}


def prove_inclusion(store: Store, seq: int, size: int | None = None) -> dict:
    with store.reading() as session:
        size = _size(session, size)
        if not 0 < seq <= size:
            raise InputError(f"seq {seq}: not in a tree of size {size}")
        entry = session.entry(seq)
        nodes = session.node_source()
        proof = _inclusion(nodes, seq, size, entry.kind, entry.effective_at, entry.recorded_at, entry.payload)
        proof["root"] = root(nodes, size).hex()
        return proof


def prove_consistency(store: Store, old: int, new: int | None = None) -> dict:
    with store.reading() as session:
        new = _size(session, new)
        if not 0 < old <= new:
            raise InputError(f"--consistency {old}: expected a size from 1 to {new}")
        nodes = session.node_source()
        return {"new_root": root(nodes, new).hex(), "new_size": new, "old_root": root(nodes, old).hex(),
                "old_size": old, "path": [p.hex() for p in consistency_path(nodes, old, new)]}


def verify_proof(proof: Any, note: str, verifier: Verifier) -> str:
    """Check an inclusion or consistency proof against a signed checkpoint of the same tree."""
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


# -- evidence bundles ----------------------------------------------------------------------------------
def evidence_bundle(store: Store, paper: str, as_of: str, as_of_key: str, signer: Signer,
                    known_at: str | None = None) -> dict:
    """The record, every event that built it (each with its leaf and inclusion proof), a signed checkpoint."""
    with store.reading() as session:
        size = session.head()[0]
        facts = [f for f in session.paper_facts(paper, known_at) if f.effective_key <= as_of_key]
        record = build_record(paper, facts, as_of, as_of_key)
        nodes = session.node_source()
        events = []
        for f in facts:
            proof = _inclusion(nodes, f.seq, size, f.kind, f.effective_at, f.recorded_at, f.payload)
            events.append({"leaf": proof.pop("leaf"), "proof": proof, "seq": f.seq})
        note = _signed_checkpoint(signer, nodes, size)
    return {"checkpoint": note, "events": events, "record": record}


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
    """Prove offline that each event is in the signed log and that the record is their rebuild at its as_of."""
    from .verify import history_differences

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
        rebuilt = build_record(paper, facts, record["as_of"])
    except NotFoundError as exc:
        raise IntegrityError(f"evidence bundle: {exc}") from None
    if canonical(rebuilt) != canonical(record):
        found = [f"record is not the rebuild of the bundle's events (an event is missing or altered): {p}"
                 for p in history_differences(rebuilt, record)]
        raise IntegrityError(f"evidence bundle: {len(found)} problem(s)", found)
    return (f"ok: {len(facts)} events are in the log of size {signed.size} signed by {verifier.name}, and the "
            f"record of arXiv:{paper} as of {record['as_of']} is exactly their rebuild")


def load_json(name: str, data: bytes) -> Any:
    """Parse a proof or an evidence bundle with the records' strict parser: a key given twice is refused, not
    read as its last value (a reader who keeps the first would be checking something else)."""
    text = decode_input(name, data, expected="a proof or an evidence bundle")
    try:
        return parse_json(text)
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None
