"""The coverage-guided fuzzer's checked-in corpus (benchmarks/fuzz_corpus/) replayed through its targets, with
no atheris: every input the job found or started from keeps passing, and the seeds still reach past their
signatures (the context's notes verify, the seed proofs and bundles prove what they should)."""

import pytest

from benchmarks.fuzz import CORPUS, TARGETS, context, corpus, keys
from ledger.audit.auditor import load_json, verify_proof
from ledger.audit.evidence import verify_bundle
from ledger.log.signed_notes import verify_checkpoint


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_the_corpus_replays_through_its_target(target):
    inputs = corpus(target)
    assert inputs, f"no corpus for {target}"
    for data in inputs:
        TARGETS[target](data)


def test_the_corpus_is_small_and_every_target_has_one():
    files = [path for path in CORPUS.rglob("*") if path.is_file()]
    assert sum(path.stat().st_size for path in files) < 1 << 20 and len(files) < 200
    assert {path.name for path in CORPUS.iterdir() if path.is_dir()} == set(TARGETS) | {"context"}


def test_the_seeds_verify_against_the_context():
    _, verifier, *_ = keys()
    notes = context()
    for note in (notes.note, notes.index_note, notes.cosigned, notes.held_note):
        verify_checkpoint(note, verifier)
    seed = lambda name: load_json(name, (CORPUS / "proofs" / name).read_bytes())  # noqa: E731
    assert verify_proof(seed("inclusion.json"), notes.note, verifier).tree_size > 0
    assert verify_proof(seed("consistency.json"), notes.note, verifier).new_size > 0
    assert verify_proof(seed("paper.json"), notes.index_note, verifier).count > 0
    for bundle in ("bundle.json", "compact.json"):
        assert verify_bundle(seed(bundle), verifier).events > 0
