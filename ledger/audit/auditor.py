"""What an auditor vendors: checks of inclusion, consistency and paper index proofs, signed checkpoints, and
the monitor's re-computation of the paper index from an exported log, with no database (evidence bundles
are `ledger.audit.evidence`'s).

It never imports the store (a test holds it to that): a proof or a bundle, a signed checkpoint and a
verifier key are all it needs. Verifiers return the facts they proved (a typed result: the interfaces word
it) or raise, naming the file: InputError (exit 2) for a proof or bundle that is malformed (a field missing,
of the wrong type, a hash that is not 64 hex digits, base64 that is not), naming the field; IntegrityError
(exit 1) naming each event, proof or field of a well-formed one that does not verify.
"""

from __future__ import annotations

import base64
from typing import Any, NamedTuple

from ledger.audit.evidence import _b64, _checked_index_proof, _path
from ledger.audit.results import Included, IndexMatch, PaperCount, Prefix
from ledger.core.canonical import parse_json
from ledger.core.errors import InputError, IntegrityError, LedgerError
from ledger.core.inputs import decode_input
from ledger.log.chain import Entry, verify_entries
from ledger.log.merkle import leaf_hash, verify_consistency, verify_inclusion
from ledger.log.paper_index import IndexProof, index_of_log, parse_proof
from ledger.log.signed_notes import INDEX_EXTENSION, Verifier, verify_checkpoint
from ledger.model.parts import counted
from ledger.model.published import _type_name, count_field, field, sha256_field


class _Inclusion(NamedTuple):
    index: int  # type: ignore[assignment]  # a proof's word (shadows tuple.index)
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
        raise InputError(f"{name}: carries no {INDEX_EXTENSION} line: give the paper index note (ledger checkpoint "
                         f"--paper-index), not the checkpoint witnesses cosign")
    prefix = [entry for entry in entries if entry.seq <= signed.size]
    if len(prefix) < signed.size:
        raise InputError(f"{name}: is of size {signed.size}, the log holds {counted(len(prefix), 'event')}")
    verify_entries(prefix)
    index, log_root, members = index_of_log(prefix, signed.size)
    if log_root != signed.root:
        raise IntegrityError(f"{name}: its root is not the Merkle tree of the log's first {counted(signed.size, 'event')}")
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
