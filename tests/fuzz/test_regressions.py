"""What the fuzz tier found, each a regression test named after the bug (see docs/fuzzing.md)."""

import json
import os

import pytest

from benchmarks.fuzz import CORPUS, ORIGIN, keys, target_notes
from ledger.core.errors import InputError
from ledger.importing.decode import parse_input
from ledger.log.cosignature import parse_policy
from ledger.log.signed_notes import parse_checkpoint, verify_checkpoint
from ledger.services.cosigning_witness import CosignRefusedError, Witness, submission

ROOT = "0KfuhPRi1EPHGOk5IofoZBmpjcsjboaULBQtL7wrGVE="


@pytest.mark.parametrize("size", ["9" * 5000, str(1 << 63), str(1 << 64), "1" + "0" * 30], ids=["5000 digits", "2^63", "2^64", "10^30"])
def test_a_signed_checkpoint_of_a_size_past_64_bits_is_an_input_error(size):
    """A log's key signed a checkpoint whose size has 5,000 digits (ValueError: int() of past 4,300 digits,
    "internal error") or past 64 bits (a witness could not store it: OverflowError, a 500)."""
    signer, verifier, *_ = keys()
    note = signer.sign(f"{ORIGIN}\n{size}\n{ROOT}\n")
    with pytest.raises(InputError, match="expected origin, tree size and root hash lines"):
        verify_checkpoint(note, verifier)
    with pytest.raises(InputError):
        parse_checkpoint(f"{ORIGIN}\n{size}\n{ROOT}\n")


@pytest.mark.parametrize("size", ["9" * 5000, str(1 << 63), str(1 << 64)], ids=["5000 digits", "2^63", "2^64"])
def test_a_witness_refuses_with_400_a_signed_checkpoint_of_a_size_past_64_bits(size, tmp_path):
    signer, verifier, cosigners, *_ = keys()
    witness = Witness(cosigners[0], {ORIGIN: verifier}, str(tmp_path / "w.db"), new=True)
    with pytest.raises(CosignRefusedError) as refused:
        witness.add_checkpoint(submission(0, [], signer.sign(f"{ORIGIN}\n{size}\n{ROOT}\n")))
    assert refused.value.status == 400
    assert witness.held(ORIGIN) is None and os.path.getsize(tmp_path / "w.db") < 64 * 1024


def test_the_largest_tree_size_of_64_bits_is_still_a_checkpoint():
    assert parse_checkpoint(f"{ORIGIN}\n{(1 << 63) - 1}\n{ROOT}\n").size == (1 << 63) - 1


def test_a_policy_group_threshold_of_5000_digits_is_an_input_error():
    """`group g 999...9 w1 w2` gave ValueError (int() of past 4,300 digits): "internal error", exit 3."""
    policy = keys()[4].replace("group g any w1 w2", "group g " + "9" * 5000 + " w1 w2")
    with pytest.raises(InputError, match="policy line 4: threshold"):
        parse_policy(policy)
    target_notes(policy.encode())


def test_an_exported_log_line_whose_effective_at_is_null_is_an_input_error():
    """`"effective_at": null` in a log line gave TypeError (len(None) measuring the entry): "internal error"."""
    line = json.loads((CORPUS / "events" / "exported.jsonl").read_bytes().split(b"\n")[0])
    line["effective_at"] = None
    with pytest.raises(InputError, match="line 1: field effective_at: expected a string, found None"):
        parse_input("log.jsonl", json.dumps(line).encode())
