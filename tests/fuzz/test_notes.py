"""Fuzzing signed notes, checkpoints, cosignatures, keys of every kind and tlog-policies (ledger/log/
signed_notes.py, cosignature.py, ledger/audit/quorum.py). Nothing may raise but a LedgerError."""

import base64

from hypothesis import given
from hypothesis import strategies as st

from benchmarks.fuzz import HELD, context, keys, target_notes, target_witness
from ledger.services.cosigning_witness import submission
from tests.fuzz.strategies import FUZZ, mutated, outside_bytes


@FUZZ
@given(outside_bytes("notes", big=True))
def test_mutated_and_raw_notes_keys_and_policies_raise_only_documented_errors(data):
    target_notes(data)


@FUZZ
@given(st.lists(st.sampled_from(["log", "witness", "group", "quorum", "#", "none", "all", "any", "0", "1", "2",
                                 "9" * 5000, "w1", "w2", "g", "", "\u2014"]), max_size=5),
       st.integers(0, 6))
def test_a_policy_spliced_from_its_own_words_raises_only_documented_errors(words, at):
    """A policy's lines with words of its grammar put in the wrong order, counts and names mixed up."""
    lines = keys()[4].split("\n")
    lines.insert(min(at, len(lines)), " ".join(words))
    target_notes("\n".join(lines).encode())


@FUZZ
@given(st.sampled_from([0, 1, 2]), st.sampled_from(["origin", "size", "root", "extension", "signature"]),
       st.sampled_from(["", " ", "0", "-1", "01", "1" * 25, "9" * 5000, "\u202e", "AAAA", "=" * 44, "a b", "\u2014"]))
def test_a_checkpoint_with_a_hostile_line_raises_only_documented_errors(which, line, value):
    """A real signed checkpoint with one of its lines replaced: the size and the root above all."""
    note = [context().note, context().index_note, context().cosigned][which]
    text, signatures = note.split("\n\n")
    body = text.split("\n")
    spot = {"origin": 0, "size": 1, "root": 2, "extension": 3}.get(line)
    if spot is None:
        signatures = f"\u2014 {keys()[0].name} {value}\n" + signatures
    elif spot < len(body):
        body[spot] = value
    else:
        body.append(value)
    target_notes(("\n".join(body) + "\n\n" + signatures).encode())


BODIES = [context().note.split("\n\n")[0].encode() + b"\n", context().index_note.split("\n\n")[0].encode() + b"\n"]
ROOT = context().note.split("\n")[2]
SIZES = st.one_of(st.integers(0, 2**70).map(str), st.sampled_from(["9" * 5000, "-1", "01", "1e3", "", " 1"]))
ROOTS = st.one_of(st.just(ROOT), st.binary(max_size=40).map(lambda b: base64.b64encode(b).decode()))


@st.composite
def checkpoint_bodies(draw):
    """A checkpoint's lines, each hostile or not: its origin, size, root and extension lines."""
    lines = [draw(st.sampled_from([keys()[0].name, keys()[0].name + " ", "other.example/log"])), draw(SIZES),
             draw(ROOTS)]
    lines += draw(st.lists(st.one_of(ROOTS.map(lambda r: "paper-index/v1 " + r), st.text(max_size=20)), max_size=3))
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")


@FUZZ
@given(st.one_of(mutated(BODIES, big=True), checkpoint_bodies()))
def test_a_hostile_checkpoint_the_log_signed_raises_only_documented_errors(body):
    """The log as the adversary (of a witness, a monitor, a verifier): any body, validly signed by its key."""
    text = body.decode("utf-8", "replace")
    signed = keys()[0].sign(text if text.endswith("\n") else text + "\n")
    target_notes(signed.encode())
    target_witness(submission(0, [], signed))
    target_witness(submission(HELD, [], signed))
