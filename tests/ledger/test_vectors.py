"""The shared known-answer vectors (tests/vectors/, one file per rule) against the Python implementation.

Each case's inputs go through the public function that implements its rule, and the answer (a value, or
"reject" for a refusal of the ledger's own error families) must be the case's `expect`. The JavaScript
runs the same files (tests/web/test_js_vectors.py); `js_expect` concerns it alone.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from ledger.core.canonical import canonical, parse_json, sha256_digest
from ledger.core.errors import InputError, IntegrityError
from ledger.log.cosignature import cosignatures, parse_cosigner_key
from ledger.log.merkle import verify_consistency, verify_inclusion, verify_multi_inclusion
from ledger.log.paper_index import events_root, parse_proof, verify_index_proof
from ledger.log.signed_notes import parse_verifier, verify_checkpoint
from ledger.model.arxiv import parse_arxiv_id

VECTORS = Path(__file__).resolve().parent.parent / "vectors"
RULES = ("canonical", "signed_notes", "cosignatures", "rfc9162_inclusion", "rfc9162_consistency", "paper_index",
         "arxiv_ids")
REJECT = "reject"


def _canonical(case: dict) -> dict:
    value = parse_json(case["text"])
    return {"canonical": canonical(value).decode(), "sha256": sha256_digest(value)}


def _signed_note(case: dict) -> dict:
    checkpoint = verify_checkpoint(case["note"], parse_verifier(case["vkey"]))
    index = checkpoint.index_root
    return {"origin": checkpoint.origin, "size": checkpoint.size, "root": base64.b64encode(checkpoint.root).decode(),
            "index_root": None if index is None else base64.b64encode(index).decode()}


def _cosignature(case: dict) -> dict:
    key = parse_cosigner_key(case["key"])
    found = cosignatures(case["note"], [key])
    return {"timestamp": str(found[key.name]) if key.name in found else None}


def _inclusion(case: dict) -> dict:
    leaves = [(index, bytes.fromhex(digest)) for index, digest in case["leaves"]]
    root = bytes.fromhex(case["root"])
    verify_multi_inclusion(leaves, case["size"], [bytes.fromhex(h) for h in case["multi_path"]], root)
    if case["path"] is not None:  # the same proof as RFC 9162's PATH: it must give the same answer
        (index, leaf), = leaves
        verify_inclusion(leaf, index, case["size"], [bytes.fromhex(h) for h in case["path"]], root)
    return {"verified": True}


def _consistency(case: dict) -> dict:
    verify_consistency(case["old"], case["new"], bytes.fromhex(case["old_root"]), bytes.fromhex(case["new_root"]),
                       [bytes.fromhex(h) for h in case["path"]])
    return {"verified": True}


def _paper_index(case: dict) -> dict:
    if case["kind"] == "events_root":
        return {"root": events_root([bytes.fromhex(h) for h in case["leaves"]]).hex()}
    proof = parse_proof(case["proof"])
    verify_index_proof(proof, bytes.fromhex(case["signed_root"]))
    return {"count": proof.count, "events_root": None if proof.root is None else proof.root.hex()}


def _arxiv_id(case: dict) -> dict:
    paper, version = parse_arxiv_id(case["text"])
    return {"paper": paper, "version": version}


ANSWERS = {"canonical": _canonical, "signed_notes": _signed_note, "cosignatures": _cosignature,
           "rfc9162_inclusion": _inclusion, "rfc9162_consistency": _consistency, "paper_index": _paper_index,
           "arxiv_ids": _arxiv_id}


def answer(rule: str, case: dict):
    """The Python implementation's answer to one case: a JSON value, or "reject" when it refuses the input with
    one of the ledger's error families (any other exception is a bug and propagates)."""
    try:
        return ANSWERS[rule](case)
    except (InputError, IntegrityError):
        return REJECT


def load(folder: Path, rule: str) -> list[dict]:
    return json.loads((folder / f"{rule}.json").read_text())


def python_failures(folder: Path, rule: str) -> list[str]:
    """One line per case of `folder`/`rule`.json whose Python answer is not its `expect`."""
    return [f"{rule}: {case['name']!r}: expected {case['expect']!r}, Python answers {found!r}"
            for case in load(folder, rule) if (found := answer(rule, case)) != case["expect"]]


@pytest.mark.parametrize("rule", RULES)
def test_python_gives_every_known_answer(rule):
    assert python_failures(VECTORS, rule) == []


def test_every_rule_has_valid_and_rejected_cases():
    for rule in RULES:
        answers = [case["expect"] for case in load(VECTORS, rule)]
        assert REJECT in answers, rule
        assert any(a != REJECT for a in answers), rule
        assert len({case["name"] for case in load(VECTORS, rule)}) == len(answers), f"{rule}: a name given twice"


def test_the_files_are_the_ones_the_script_writes(tmp_path):
    from tests.vectors.make_vectors import main

    main(tmp_path)
    for rule in RULES:
        assert (tmp_path / f"{rule}.json").read_bytes() == (VECTORS / f"{rule}.json").read_bytes(), rule
