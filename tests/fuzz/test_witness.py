"""Fuzzing add-checkpoint requests (ledger/services/cosigning_witness.py) against a witness holding a real checkpoint:
only a `CosignRefusedError` of a 4xx status may come out, never a 5xx or another exception."""

from hypothesis import given
from hypothesis import strategies as st

from benchmarks.fuzz import context, target_witness
from ledger.services.cosigning_witness import submission
from tests.fuzz.strategies import FUZZ, mutated, outside_bytes


@FUZZ
@given(outside_bytes("witness", big=True))
def test_mutated_and_raw_requests_are_refused_with_a_4xx_or_cosigned(data):
    target_witness(data)


@FUZZ
@given(st.integers(0, 2**70), st.lists(st.binary(min_size=32, max_size=32), max_size=66),
       st.one_of(st.sampled_from([context().note, context().held_note, context().cosigned]),
                 mutated([context().note.encode(), context().index_note.encode()], big=True).map(
                     lambda b: b.decode("utf-8", "replace"))))
def test_requests_of_any_size_proof_and_note_are_refused_with_a_4xx_or_cosigned(old, proof, note):
    target_witness(submission(old, proof, note))
