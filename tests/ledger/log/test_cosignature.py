"""cosignature/v1 and tlog-policy (`ledger.log.cosignature`) against vectors taken by hand from the C2SP texts:
the key id's input, the signed message's bytes, the line's layout (key id, big-endian seconds, signature), the
spec's own example line, and the spec's example policy."""

import base64
import hashlib

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from ledger.core.errors import InputError, IntegrityError
from ledger.log.cosignature import (
    Cosigner,
    cosignatures,
    cosigned_message,
    generate_cosigner,
    parse_cosigner,
    parse_cosigner_key,
    parse_policy,
    quorum_policy,
)
from ledger.log.signed_notes import generate_signer

# tlog-cosignature's example: the checkpoint, and the cosignature line of witness.example.com/w1.
SPEC_TEXT = "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
SPEC_LINE_BLOB = ("jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dlrDJsX3b2oyin1nPZ"
                  "qhf5nNo0xUe+mbIUBkBIfZ+qnA==")
SEED = bytes(range(32))


def test_the_signed_message_is_the_specs_example_byte_for_byte():
    assert cosigned_message(SPEC_TEXT, 1679315147) == (
        b"cosignature/v1\ntime 1679315147\nexample.com/behind-the-sofa\n20852163\n"
        b"CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n")
    with pytest.raises(InputError):
        cosigned_message(SPEC_TEXT.rstrip("\n"), 1)
    with pytest.raises(InputError):
        cosigned_message(SPEC_TEXT, 2**63)


def test_a_line_has_the_specs_layout_key_id_then_big_endian_seconds_then_the_signature():
    spec = base64.b64decode(SPEC_LINE_BLOB)  # the spec's example: 76 bytes, id 8d66cf3f, time 1679315147
    assert (len(spec), spec[:4].hex(), int.from_bytes(spec[4:12], "big")) == (76, "8d66cf3f", 1679315147)
    cosigner = Cosigner("witness.example.com/w1", SEED)
    public = Ed25519PrivateKey.from_private_bytes(SEED).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    assert cosigner.key.id == hashlib.sha256(b"witness.example.com/w1\n\x04" + public).digest()[:4]
    encoded = base64.b64encode(bytes([4]) + public).decode()
    assert str(cosigner.key) == f"witness.example.com/w1+{cosigner.key.id.hex()}+{encoded}"
    line = cosigner.cosign(SPEC_TEXT, 1679315147)
    dash, name, blob = line.rstrip("\n").split(" ")
    raw = base64.b64decode(blob)
    assert (dash, name, len(raw), raw[:4], raw[4:12]) == ("\u2014", "witness.example.com/w1", 76, cosigner.key.id,
                                                         bytes.fromhex("00000000641850cb"))
    # Checked with the library directly over the message written out by hand: no code of ours in between.
    Ed25519PublicKey.from_public_bytes(public).verify(raw[12:], b"cosignature/v1\ntime 1679315147\n" + SPEC_TEXT.encode())


def test_keys_round_trip_and_refuse_another_type_or_a_wrong_id():
    cosigner = generate_cosigner("witness.example.org/w")
    assert parse_cosigner(str(cosigner)) == cosigner
    assert parse_cosigner_key(str(cosigner.key)) == cosigner.key
    log_key = generate_signer("witness.example.org/w")  # an Ed25519 note key (type 0x01), not a cosigner's
    with pytest.raises(InputError, match="type 0x04"):
        parse_cosigner_key(str(log_key.verifier))
    with pytest.raises(InputError, match="type 0x04"):
        parse_cosigner(str(log_key))
    name, id_hex, blob = str(cosigner.key).split("+", 2)
    with pytest.raises(InputError, match="key id does not match"):
        parse_cosigner_key(f"{name}+{'0' * 8 if id_hex != '0' * 8 else '1' * 8}+{blob}")
    with pytest.raises(InputError, match="expected <name>"):
        parse_cosigner_key(str(cosigner))  # the private key where the public one belongs
    with pytest.raises(InputError):
        generate_cosigner("two words")


def note_with(*lines: str) -> str:
    return SPEC_TEXT + "\n" + "".join(lines)


def test_cosignatures_of_known_keys_verify_and_unknown_ones_are_ignored():
    a, b = generate_cosigner("w.example/a"), generate_cosigner("w.example/b")
    stranger = generate_cosigner("w.example/a")  # the same name, another key (and so another id)
    log = generate_signer("example.com/behind-the-sofa").sign(SPEC_TEXT).split("\n\n", 1)[1]
    note = note_with(log, a.cosign(SPEC_TEXT, 10), stranger.cosign(SPEC_TEXT, 11), "\u2014 w.example/b !!!\n")
    assert cosignatures(note, [a.key, b.key]) == {"w.example/a": 10}
    flipped = a.cosign(SPEC_TEXT, 10)
    flipped = flipped[:-6] + ("A" if flipped[-6] != "A" else "B") + flipped[-5:]
    with pytest.raises(IntegrityError, match="w.example/a does not verify"):
        cosignatures(note_with(flipped), [a.key])
    raw = bytearray(base64.b64decode(a.cosign(SPEC_TEXT, 10).split(" ")[2]))
    raw[11] ^= 1  # the timestamp is signed: another second does not verify
    with pytest.raises(IntegrityError):
        cosignatures(note_with(f"\u2014 w.example/a {base64.b64encode(bytes(raw)).decode()}\n"), [a.key])


def test_the_specs_policy_example_and_its_quorums():
    keys = {n: generate_cosigner(f"{n.lower()}.example") for n in ("X1", "X2", "X3", "Y1", "Y2", "Y3")}
    log = generate_signer("example.com/log")
    text = "\n".join([f"log {log.verifier}", "", *[f"witness {n} {k.key}" for n, k in list(keys.items())[:3]],
                      "group X-witnesses 2 X1 X2 X3", "", "# comments and blank lines are ignored",
                      *[f"witness {n} {k.key} https://{n}.example/" for n, k in list(keys.items())[3:]],
                      "group Y-witnesses any Y1 Y2 Y3", "", "group X-and-Y all X-witnesses Y-witnesses",
                      "quorum X-and-Y", ""])
    policy = parse_policy(text)
    assert policy.logs == (str(log.verifier),)
    assert policy.met({"X1", "X3", "Y2"}) and not policy.met({"X1", "Y1", "Y2"}) and not policy.met({"X1", "X2"})
    note = note_with(keys["X1"].cosign(SPEC_TEXT, 5), keys["X2"].cosign(SPEC_TEXT, 6), keys["Y3"].cosign(SPEC_TEXT, 7))
    assert policy.cosigned(note) == {"X1": 5, "X2": 6, "Y3": 7} and policy.met(policy.cosigned(note))
    assert parse_policy("quorum none\n").met(set())


@pytest.mark.parametrize("text, why", [
    ("witness A {a}\nwitness A {b}\nquorum A\n", "line 2: the name 'A' is already used"),
    ("witness A {a}\nwitness B {a}\nquorum A\n", "line 2: this witness key is listed twice"),
    ("witness A {a}\ngroup G 2 A\nquorum G\n", "line 2: threshold '2'"),
    ("witness A {a}\ngroup G any A B\nquorum G\n", "line 2: members must be defined earlier"),
    ("quorum A\nwitness A {a}\n", "line 1: quorum 'A' is not a witness or group"),
    ("witness A {a}\n", "no quorum line"),
    ("witness A {a}\nquorum A\nquorum none\n", "line 3: a second quorum line"),
    ("witnesses A {a}\nquorum A\n", "line 1: expected log, witness, group or quorum"),
])
def test_a_bad_policy_is_refused_naming_its_line(text, why):
    a, b = generate_cosigner("a.example"), generate_cosigner("b.example")
    with pytest.raises(InputError, match=why.replace("(", r"\(")):
        parse_policy(text.format(a=a.key, b=b.key))


def test_a_quorum_of_repeated_witness_keys():
    keys = [generate_cosigner(f"w{n}.example").key for n in range(3)]
    policy = quorum_policy(keys, 2)
    assert policy.met({"w0.example", "w2.example"}) and not policy.met({"w1.example"})
    assert quorum_policy(keys, 0).met(set())
    with pytest.raises(InputError, match="between 0 and the 3"):
        quorum_policy(keys, 4)
    with pytest.raises(InputError, match="given twice"):
        quorum_policy([keys[0], keys[0]], 1)
