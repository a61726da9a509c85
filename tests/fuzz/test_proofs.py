"""Fuzzing inclusion, consistency and paper index proofs and evidence bundles (ledger/audit), checked against
real signed checkpoints: nothing may raise but a LedgerError."""

import re

import pytest
from hypothesis import given

from benchmarks.fuzz import CORPUS, corpus, target_proofs
from ledger.audit.auditor import load_json
from ledger.core.errors import InputError
from tests.fuzz.strategies import BIG_INT, FUZZ, json_mutated, outside_bytes


@FUZZ
@given(outside_bytes("proofs"))
def test_mutated_and_raw_proofs_and_bundles_raise_only_documented_errors(data):
    target_proofs(data)


@FUZZ
@given(json_mutated(corpus("proofs"), big=True))
def test_hostile_json_values_in_proofs_and_bundles_raise_only_documented_errors(data):
    target_proofs(data)


@pytest.mark.parametrize("seed", ["inclusion.json", "consistency.json", "bundle.json"])
def test_a_5000_digit_integer_in_a_proof_is_an_input_error(seed):
    data = re.sub(rb'("(?:leaf_index|old_size|seq)": )[0-9]+', rb"\g<1>" + BIG_INT.encode(),
                  (CORPUS / "proofs" / seed).read_bytes(), count=1)
    assert BIG_INT.encode() in data
    with pytest.raises(InputError):
        load_json("fuzz", data)
