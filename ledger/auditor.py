"""What an auditor vendors: checks of inclusion, consistency and paper index proofs, signed checkpoints,
evidence bundles (and whether one holds every event of its paper), and the monitor's re-computation of the
paper index from an exported log, with no database.

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
from .chain import Entry, verify_entries
from .errors import InputError, IntegrityError, NotFoundError
from .events import Event, Fact, make_event
from .inputs import decode_input
from .merkle import leaf_hash, verify_consistency, verify_inclusion
from .paper_index import IndexProof, index_of_log, parse_proof, verify_index_proof
from .signed_notes import INDEX_EXTENSION, Checkpoint, Verifier, verify_checkpoint
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
    if "siblings" in proof:
        return _paper_account(_checked_index_proof(parse_proof(proof), signed), verifier)
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


def _bundle_fact(index: int, item: Any, signed: Checkpoint) -> tuple[Fact, Event, bytes]:
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
    digest = leaf_hash(leaf)
    try:
        verify_inclusion(digest, seq - 1, signed.size, _path(proof, where), signed.root)
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
                event.payload), event, digest


_OLD_BUNDLE = {"checkpoint", "events", "record"}
_BUNDLE = _OLD_BUNDLE | {"index"}


def verify_bundle(bundle: Any, verifier: Verifier) -> str:
    """Prove offline that each event is in the signed log, that the record is their rebuild at its as_of, and
    (for a bundle that carries the paper index proof) that the bundle holds every event of the paper in the
    log of the checkpoint's size: the complete history, not a chosen part of it.

    Raises InputError for a file that is not a bundle, IntegrityError naming each event or field that fails,
    and, for an incomplete bundle, how many events are missing and between which seqs."""
    if not isinstance(bundle, dict) or set(bundle) not in (_OLD_BUNDLE, _BUNDLE, _BUNDLE | {"known_at"}):
        raise InputError("evidence bundle: expected an object with checkpoint, events and record (and index, "
                         "known_at)")
    if not isinstance(bundle["checkpoint"], str) or not isinstance(bundle["events"], list):
        raise InputError("evidence bundle: checkpoint must be a signed note, events a list")
    known_at = bundle.get("known_at")
    if known_at is not None and not isinstance(known_at, str):
        raise InputError("evidence bundle: known_at must be a recorded time")
    signed = verify_checkpoint(bundle["checkpoint"], verifier)
    problems, read = [], []
    for index, item in enumerate(bundle["events"]):
        try:
            read.append((item, *_bundle_fact(index, item, signed)))
        except IntegrityError as exc:
            problems.append(str(exc))
    record = check_record(bundle["record"])
    problems += [f"record: {p}" for p in digest_mismatches(record)]
    paper = record["paper"]["arxiv_id"]
    complete = None
    if "index" in bundle:
        proof = parse_proof(bundle["index"], "evidence bundle: index")
        try:
            if proof.paper != paper:
                raise IntegrityError(f"index proof: it is of arXiv:{proof.paper}, the record is of arXiv:{paper}")
            _checked_index_proof(proof, signed)
        except IntegrityError as exc:
            problems.append(f"evidence bundle: {exc}")
        else:
            found = _completeness(proof, read)
            problems += found
            complete = proof if not found else None
    # The rebuild runs whatever else failed: a bundle missing an event the record depends on says both.
    facts = [fact for _, fact, _, _ in read if known_at is None or fact.recorded_at <= known_at]
    try:
        mismatch = rebuild_mismatch(facts, record)
    except NotFoundError as exc:
        problems.append(f"evidence bundle: {exc}")
    else:
        if mismatch is not None:
            problems += [f"record is not the rebuild of the bundle's events (an event is missing or altered): {p}"
                         for p in mismatch.each()]
    if problems:
        raise IntegrityError(f"evidence bundle: {len(problems)} problem(s)", problems)
    known = f" known at {known_at}" if known_at is not None else ""
    account = (f"ok: {len(read)} events are in the log of size {signed.size} signed by {verifier.name}, and the "
               f"record of arXiv:{paper} as of {record['as_of']}{known} is exactly their rebuild")
    if complete is not None:
        return (f"{account}; complete: the signed paper index counts {complete.count} events of arXiv:{paper} in "
                f"the log of size {signed.size}, and the bundle holds every one")
    return (f"{account}; completeness not proven: the bundle carries no paper index proof (made before the index), "
            "so events of the paper may have been left out")


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


def _paper_account(proof: IndexProof, verifier: Verifier) -> str:
    if proof.count == 0:
        return (f"ok: arXiv:{proof.paper} has no events in the paper index of the tree of size {proof.tree_size} "
                f"signed by {verifier.name}")
    return (f"ok: arXiv:{proof.paper} has {proof.count} events (events root {proof.root.hex()}) in the paper index "
            f"of the tree of size {proof.tree_size} signed by {verifier.name}")


def _completeness(proof: IndexProof, read: list[tuple[Any, Fact, Event, bytes]]) -> list[str]:
    """What keeps the bundle's events from being exactly the paper's events the index counts: each event
    must take its own place in the paper's events tree (its paper proof), and every place must be taken."""
    paper, problems, places = proof.paper, [], {}
    for item, fact, event, digest in read:
        where = f"event seq {fact.seq}"
        placed = item.get("paper_proof")
        if not isinstance(placed, dict) or set(placed) != {"index", "path"}:
            raise InputError(f"evidence bundle: {where}: paper_proof: expected an object with index and path")
        position = placed["index"]
        if not isinstance(position, int) or isinstance(position, bool):
            raise InputError(f"evidence bundle: {where}: paper_proof.index: expected an integer, found {position!r}")
        path = _path(placed, f"{where}: paper_proof")
        try:
            if proof.count == 0 or proof.root is None:
                raise IntegrityError("the index says the paper has no events")
            verify_inclusion(digest, position, proof.count, path, proof.root)
        except IntegrityError as exc:
            other = f" (it is an event of arXiv:{event.paper})" if event.paper not in (None, paper) else ""
            problems.append(f"{where}: not among the {proof.count} events the signed paper index counts for "
                            f"arXiv:{paper}{other}: {exc}")
            continue
        if event.paper not in (None, paper):
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
            before, after = places.get(first - 1), places.get(last + 1)
            count = last - first + 1
            where = (f"between seq {before} and seq {after}" if before and after else f"after seq {before}"
                     if before else f"before seq {after}" if after else "(the bundle holds none of them)")
            spans.append(f"{count} event{'s' if count > 1 else ''} {where}")
        problems.append(f"incomplete: {len(missing)} of the {proof.count} events of arXiv:{paper} in the log of size "
                        f"{proof.tree_size} are missing from the bundle: {'; '.join(spans)}")
    ordered = sorted(places.items())
    if any(a[1] >= b[1] for a, b in zip(ordered, ordered[1:])):
        problems.append(f"the paper index places arXiv:{paper}'s events out of seq order")
    return problems


def verify_index(entries: list[Entry], note: str, verifier: Verifier, name: str = "checkpoint") -> str:
    """The monitor's check: re-compute the paper index from an exported log's entries up to the signed
    checkpoint's size, and compare it with the index root the checkpoint signs (and the log with its tree).
    Raises InputError for a checkpoint without an index line or a log shorter than it, IntegrityError when
    the log's chain breaks, its tree is not the signed one, or the signed index root is not the log's."""
    signed = verify_checkpoint(note, verifier)
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
    return (f"ok: the paper index {name} signs at size {signed.size} is the log's: {len(members.every_paper())} "
            f"papers, re-computed from {signed.size} events")


def load_json(name: str, data: bytes) -> Any:
    """Parse a proof or an evidence bundle with the records' strict parser: a key given twice is refused, not
    read as its last value (a reader who keeps the first would be checking something else).
    Raises InputError naming the file."""
    text = decode_input(name, data, expected="a proof or an evidence bundle")
    try:
        return parse_json(text)
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None
