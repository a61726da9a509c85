"""Writes the known-answer vectors of tests/vectors/ (README.md there says what each file holds).

Every expected answer is what the Python implementation answers, computed here and written down; the cases,
their inputs and where the JavaScript is known to answer otherwise (`js_expect`, with `js_why`) are chosen
here by hand. Keys and timestamps are fixed and the store's clock frozen, so a run writes the same bytes:

    .venv/bin/python -m tests.vectors.make_vectors            # rewrite tests/vectors/*.json
    .venv/bin/python -m tests.vectors.make_vectors OUT_DIR    # or write them elsewhere, to compare
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
import tempfile
from pathlib import Path

from freezegun import freeze_time

from benchmarks.generate import generate
from ledger.log.cosignature import Cosigner
from ledger.log.merkle import consistency_path, inclusion_path, leaf_hash, multi_inclusion_path, root
from ledger.log.paper_index import events_tree, paper_key
from ledger.log.signed_notes import DASH, Checkpoint, Signer
from tests.ledger.log.test_merkle import KAT_LEAVES, KAT_ROOTS
from tests.ledger.test_vectors import answer

HERE = Path(__file__).resolve().parent
REJECT = "reject"


def seed(label: str) -> bytes:
    return hashlib.sha256(f"ledger test vectors: {label}".encode()).digest()


def flip(hex_or_bytes, at: int = 0):
    """One bit flipped in byte `at` (of a hex string or of bytes)."""
    data = bytes.fromhex(hex_or_bytes) if isinstance(hex_or_bytes, str) else hex_or_bytes
    flipped = data[:at] + bytes([data[at] ^ 1]) + data[at + 1:]
    return flipped.hex() if isinstance(hex_or_bytes, str) else flipped


def cases(rule: str, drafts: list[dict]) -> list[dict]:
    """Each draft with `expect` set to the Python implementation's answer."""
    for case in drafts:
        case["expect"] = answer(rule, case)
    return drafts


# -- the canonical encoder and the parser's acceptance rules -----------------------------------------------
NOT_CANONICAL = "the page re-encodes the published bytes, which are canonical: it keeps a number's digits as sent"


def canonical_cases() -> list[dict]:
    plain = [
        ("keys sorted, compact", '{"b": 1, "a": [true, false, null], "c": {"z": "", "y": []}}'),
        ("whitespace of every kind between tokens", ' \t\r\n{ "a" :\n[ 1 , 2 ] }\n'),
        ("keys sort by code point, not UTF-16 unit", '{"\\ue000": 1, "\\ud83d\\ude00": 2, "z": 3, "\\u00e9": 4}'),
        ("a key that is a prefix sorts first", '{"ab": 1, "a": 2, "": 3}'),
        ("short escapes kept, others written raw", '["\\"\\\\\\/\\b\\f\\n\\r\\t", "\\u0041\\u00e9\\u2028\\u007f"]'),
        ("other controls as \\u00XX, lower-case hex", '["\\u0000\\u0001\\u001f\\u001F"]'),
        ("a surrogate pair escape is one character", '"\\ud83d\\ude00"'),
        ("markup is not escaped", '{"t": "</script><!--&"}'),
        ("integers at the 64-bit bounds", '[0, -1, 9223372036854775807, -9223372036854775808, 18446744073709551615]'),
        ("a canonical float", '[1.5, -0.25, 1e-7, 1e+16]'),
        ("empty containers and a scalar document", '[{}, [], "", 0]'),
        ("a bare string", '"x"'),
    ]
    rejected = [
        ("a duplicate key", '{"a": 1, "a": 2}'), ("a duplicate key after an escape", '{"a": 1, "\\u0061": 2}'),
        ("NaN", '[NaN]'), ("Infinity", '[-Infinity]'), ("a trailing comma", '[1,]'),
        ("single quotes", "{'a': 1}"), ("trailing characters", '{} x'), ("an unterminated string", '"abc'),
        ("a raw control character in a string", '"a\u0001b"'), ("an unknown escape", '"\\x41"'),
        ("a short \\u escape", '"\\u12"'), ("a leading zero", '01'), ("a bare fraction", '.5'),
        ("a dot without digits", '1.'), ("a plus sign", '+1'), ("nothing at all", ''), ("an unquoted key", '{a: 1}'),
    ]
    drafts = [{"name": name, "text": text} for name, text in plain + rejected]
    differ = [  # where the page's parser answers otherwise, on purpose: it never reads what Python wrote so
        ("an integer beyond 64 bits", "18446744073709551616", "keeps the digits of any integer"),
        ("an exponent, not canonical", "1e2", NOT_CANONICAL), ("negative zero", "-0", NOT_CANONICAL),
        ("a trailing zero", "1.50", NOT_CANONICAL), ("a number literal beyond a double", "1e400", NOT_CANONICAL),
    ]
    drafts += [{"name": name, "text": text, "js_why": why, "js_expect": kept(text, text)} for name, text, why in differ]
    drafts.append({"name": "a lone surrogate", "text": '"\\ud800"', "js_expect": kept('"\ud800"', '"\ufffd"'),
                   "js_why": "keeps a lone surrogate (UTF-8 then writes U+FFFD)"})
    return cases("canonical", drafts)


def kept(canonical: str, hashed: str) -> dict:
    """The page's answer where it keeps what it read: `canonical`, and SHA-256 of the UTF-8 of `hashed`."""
    return {"canonical": canonical, "sha256": "sha256:" + hashlib.sha256(hashed.encode()).hexdigest()}


# -- signed notes ----------------------------------------------------------------------------------------
LOG = Signer("example.org/ledger", seed("log"))
IMPOSTOR = Signer("example.org/ledger", seed("another log key"))  # the same name, another key
ROOT = hashlib.sha256(b"a tree root").digest()
INDEX = hashlib.sha256(b"an index root").digest()


def with_blob(line: str, change) -> str:
    """A signature line with its base64 blob's bytes changed by `change`."""
    dash, name, blob = line.split(" ")
    return f"{dash} {name} {base64.b64encode(change(base64.b64decode(blob))).decode()}"


def signed_note_cases() -> list[dict]:
    vkey = str(LOG.verifier)
    text = Checkpoint(LOG.name, 7, ROOT, INDEX).text()
    note = LOG.sign(text)
    sig = note.rstrip("\n").split("\n")[-1]
    other = Signer("example.org/witness", seed("a stranger"))
    raw_key = base64.b64decode(vkey.split("+", 2)[2])  # base64 holds "+" too
    drafts = [
        {"name": "a checkpoint with the paper index line", "note": note},
        {"name": "a checkpoint without extension lines", "note": LOG.sign(Checkpoint(LOG.name, 1, ROOT).text())},
        {"name": "size 0, the empty tree's root",
         "note": LOG.sign(Checkpoint(LOG.name, 0, hashlib.sha256().digest()).text())},
        {"name": "the largest size the page reads exactly (2**53 - 1)",
         "note": LOG.sign(Checkpoint(LOG.name, 2**53 - 1, ROOT, INDEX).text())},
        {"name": "another key's line first", "note": note[:-1] + "\n" + other.sign(text).split("\n")[-2] + "\n"},
        {"name": "signed by another key of the same name", "note": IMPOSTOR.sign(text)},
        {"name": "signed only by another name", "note": other.sign(text)},
        {"name": "a flipped byte in the signature", "note": text + "\n" + with_blob(sig, lambda b: flip(b, 40)) + "\n"},
        {"name": "the signature shortened by a byte", "note": text + "\n" + with_blob(sig, lambda b: b[:-1]) + "\n"},
        {"name": "a flipped byte in the body (the size)", "note": note.replace("\n7\n", "\n6\n", 1)},
        {"name": "no blank line before the signature", "note": note.replace("\n\n", "\n", 1)},
        {"name": "a size with a leading zero", "note": LOG.sign(text.replace("\n7\n", "\n07\n", 1))},
        {"name": "a root of 31 bytes", "note": LOG.sign(text.replace(base64.b64encode(ROOT).decode(),
                                                                      base64.b64encode(ROOT[:31]).decode()))},
        {"name": "the verifier key's id does not match", "note": note,
         "vkey": vkey.replace(vkey.split("+")[1], "00000000")},
        {"name": "a verifier key of type 0x04 (a witness's)", "note": note,
         "vkey": "+".join(vkey.split("+", 2)[:2] + [base64.b64encode(b"\x04" + raw_key[1:]).decode()])},
        {"name": "a checkpoint of another origin", "note": LOG.sign(Checkpoint("example.org/other", 7, ROOT).text()),
         "js_why": "the page shows the origin and the key's name; it does not compare them",
         "js_expect": {"index_root": None, "origin": "example.org/other", "root": base64.b64encode(ROOT).decode(),
                       "size": 7}},
        {"name": "a size of 17 digits", "note": LOG.sign(Checkpoint(LOG.name, 10**16, ROOT).text()),
         "js_why": "the page reads a size of at most 16 digits, exact as a JavaScript number", "js_expect": REJECT},
        {"name": "a malformed line before the signature", "note": text + "\nnot a signature\n" + sig + "\n",
         "js_why": "the page passes over every line that is not a signature by its key",
         "js_expect": {"index_root": base64.b64encode(INDEX).decode(), "origin": LOG.name,
                       "root": base64.b64encode(ROOT).decode(), "size": 7}},
    ]
    for case in drafts:
        case.setdefault("vkey", vkey)
    return cases("signed_notes", drafts)


# -- cosignatures ----------------------------------------------------------------------------------------
WITNESS = Cosigner("example.org/witness", seed("witness"))
T = 1767225600  # 2026-01-01T00:00:00Z


def cosignature_cases() -> list[dict]:
    text = Checkpoint(LOG.name, 7, ROOT, INDEX).text()
    signed = LOG.sign(text)
    key = str(WITNESS.key)
    line = WITNESS.cosign(text, T).rstrip("\n")
    stranger = Cosigner("example.org/witness", seed("another witness key"))
    drafts = [
        {"name": "cosigned", "note": signed + line + "\n"},
        {"name": "cosigned at time 0", "note": signed + WITNESS.cosign(text, 0)},
        {"name": "cosigned at the largest time", "note": signed + WITNESS.cosign(text, 2**63 - 1)},
        {"name": "two lines by the key: the last counts", "note": signed + WITNESS.cosign(text, 1) + line + "\n"},
        {"name": "no line by the key", "note": signed},
        {"name": "a line by another key of the same name", "note": signed + stranger.cosign(text, T)},
        {"name": "a flipped byte in the signature", "note": signed + with_blob(line, lambda b: flip(b, 20)) + "\n"},
        {"name": "the time changed", "note": signed + with_blob(line, lambda b: flip(b, 11)) + "\n"},
        {"name": "75 bytes, not 76", "note": signed + with_blob(line, lambda b: b[:-1]) + "\n"},
        {"name": "cosigned without the extension line",
         "note": signed + WITNESS.cosign(Checkpoint(LOG.name, 7, ROOT).text(), T)},
        {"name": "the log's key given as a witness key (type 0x01)", "note": signed + line + "\n",
         "key": str(LOG.verifier)},
        {"name": "a line of the witness's name that is not base64", "note": signed + f"{DASH} {WITNESS.name} ###\n",
         "js_why": "the page refuses a line of its witness's name it cannot read; Python passes over it",
         "js_expect": REJECT},
        {"name": "a witness key whose id does not match", "note": signed + line + "\n",
         "key": key.replace(key.split("+")[1], "00000000")},
    ]
    for case in drafts:
        case.setdefault("key", key)
    return cases("cosignatures", drafts)


# -- RFC 9162 -----------------------------------------------------------------------------------------------
# The first eight leaves are the reference data of Certificate Transparency (RFC 6962), whose tree heads other
# implementations publish (transparency-dev/merkle, testonly/constants.go): REFERENCE_ROOTS checks ours.
REFERENCE_LEAVES = [leaf.hex() for leaf in KAT_LEAVES]
REFERENCE_ROOTS = KAT_ROOTS[1:]  # the empty tree's is not among the reference heads
# PATH(0, D[8]) over them, as the same file gives it.
REFERENCE_PATH = ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
                  "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                  "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"]
LEAVES = [leaf_hash(bytes.fromhex(leaf)) for leaf in REFERENCE_LEAVES] + [
    leaf_hash(f"leaf {i}".encode()) for i in range(8, 16)]


def tree(size: int):
    return events_tree(LEAVES[:size])


def inclusion(size: int, indices: list[int]) -> dict:
    nodes = tree(size)
    case = {"size": size, "leaves": [[i, LEAVES[i].hex()] for i in indices], "root": root(nodes, size).hex(),
            "multi_path": [h.hex() for h in multi_inclusion_path(nodes, indices, size)], "path": None}
    if len(indices) == 1:
        case["path"] = [h.hex() for h in inclusion_path(nodes, indices[0], size)]
    return case


def inclusion_cases() -> list[dict]:
    drafts = []
    for size, index in [(1, 0), (2, 0), (2, 1), (3, 2), (4, 0), (4, 3), (5, 4), (7, 3), (8, 0), (8, 7), (13, 12),
                        (13, 5), (16, 9)]:
        drafts.append({"name": f"leaf {index} of {size}", **inclusion(size, [index])})
    assert next(c for c in drafts if c["name"] == "leaf 0 of 8")["path"] == REFERENCE_PATH
    for size, indices in [(8, [0, 7]), (13, [2, 3, 12]), (5, [0, 1, 2, 3, 4])]:
        drafts.append({"name": f"leaves {indices} of {size}", **inclusion(size, indices)})

    def mutated(name, base, **change):
        case = {**base, **change, "name": name}
        drafts.append(case)

    good = inclusion(13, [5])
    mutated("wrong root", good, root=flip(good["root"]))
    # The path's shape is all that binds the size: 14 leaves put leaf 5 where 13 do (the root binds the size).
    mutated("leaf 5 of 13 said of size 14, the same shape: accepted", good, size=14)
    mutated("leaf 5 of 13 said of size 8", good, size=8)
    mutated("the last leaf, 12 of 13, said of size 14", inclusion(13, [12]), size=14)
    mutated("the last leaf, 12 of 13, said of size 12", inclusion(13, [12]), size=12)
    mutated("wrong index", good, leaves=[[4, good["leaves"][0][1]]])
    mutated("a flipped byte in the leaf", good, leaves=[[5, flip(good["leaves"][0][1], 31)]])
    mutated("a flipped byte in a sibling", good, path=[good["path"][0], flip(good["path"][1])] + good["path"][2:],
            multi_path=[p if p != good["path"][1] else flip(p) for p in good["multi_path"]])
    mutated("a sibling dropped", good, path=good["path"][:-1], multi_path=good["multi_path"][:-1])
    mutated("a sibling added", good, path=good["path"] + [LEAVES[0].hex()],
            multi_path=good["multi_path"] + [LEAVES[0].hex()])
    mutated("an index outside the tree", inclusion(8, [7]), size=7)
    mutated("size 1 with a path", inclusion(1, [0]), path=[LEAVES[1].hex()], multi_path=[LEAVES[1].hex()])
    many = inclusion(13, [2, 3, 12])
    mutated("leaves not ascending", many, leaves=[many["leaves"][1], many["leaves"][0], many["leaves"][2]])
    mutated("one of several leaves flipped", many, leaves=many["leaves"][:2] + [[12, flip(many["leaves"][2][1])]])
    for case in drafts:
        case.setdefault("path", None)
    return cases("rfc9162_inclusion", drafts)


def consistency(old: int, new: int) -> dict:
    nodes = tree(new)
    return {"old": old, "new": new, "old_root": root(tree(old), old).hex(), "new_root": root(nodes, new).hex(),
            "path": [h.hex() for h in consistency_path(nodes, old, new)]}


def consistency_cases() -> list[dict]:
    drafts = [{"name": f"{old} to {new}", **consistency(old, new)}
              for old, new in [(1, 1), (1, 2), (1, 8), (2, 3), (3, 7), (4, 8), (4, 13), (5, 8), (7, 8), (8, 16),
                               (6, 13), (12, 13), (13, 13)]]
    good = consistency(6, 13)

    def mutated(name, base, **change):
        drafts.append({**base, **change, "name": name})

    mutated("wrong old root", good, old_root=flip(good["old_root"]))
    mutated("wrong new root", good, new_root=flip(good["new_root"]))
    mutated("wrong old size", good, old=5)
    # As for inclusion, the path's shape is all that binds the sizes; the new root binds them.
    mutated("new size 14 for 13, the same shape: accepted", good, new=14)
    mutated("new size 7 for 13", good, new=7)
    mutated("new size 32 for 13", good, new=32)
    mutated("a flipped byte in the path", good, path=[flip(good["path"][0])] + good["path"][1:])
    mutated("the path shortened", good, path=good["path"][:-1])
    mutated("the path lengthened", good, path=good["path"] + [LEAVES[0].hex()])
    power = consistency(4, 13)
    mutated("a power-of-two old size given its own root in the path", power, path=[power["old_root"]] + power["path"])
    mutated("equal sizes with a path", consistency(8, 8), path=[LEAVES[0].hex()])
    mutated("equal sizes, other roots", consistency(8, 8), new_root=flip(consistency(8, 8)["new_root"]))
    mutated("old size 0", consistency(1, 8), old=0)
    mutated("old larger than new", consistency(8, 13), old=13, new=8)
    return cases("rfc9162_consistency", drafts)


# -- the paper index -----------------------------------------------------------------------------------
def index_proofs() -> tuple[dict, dict, dict]:
    """A member's proof, an absent paper's proof (ending at a neighbour) and the member's at an older size."""
    from ledger.storage.index_reads import prove
    from ledger.storage.store import Store

    with tempfile.TemporaryDirectory() as folder, freeze_time("2026-06-01T00:00:00Z"):
        store = Store.create(str(Path(folder) / "ledger.db"))
        events = generate(120, seed=3)
        for part in (events[:60], events[60:]):
            with store.writing() as writer:
                writer.append(part)
        store.keep_index(60)
        store.keep_index(120)
        with store.reading() as cursor:
            member = prove(cursor, store.index_nodes, events[0].paper, 120)
            absent = next(p for p in (prove(cursor, store.index_nodes, f"8{n:03d}.00000", 120) for n in range(100))
                          if p.neighbour is not None)
            older = prove(cursor, store.index_nodes, events[0].paper, 60)
        store.close()
    return member.to_json(), absent.to_json(), older.to_json()


def paper_index_cases() -> list[dict]:
    member, absent, older = index_proofs()
    drafts = [{"name": "a paper's proof", "proof": member}]

    def mutated(name, **change):
        drafts.append({"name": name, "proof": {**member, **change}})

    first = next(i for i, s in enumerate(member["siblings"]) if s is not None)
    siblings = list(member["siblings"])
    siblings[first] = flip(siblings[first])
    mutated("a flipped byte in a sibling", siblings=siblings)
    mutated("a sibling dropped", siblings=member["siblings"][:-1])
    mutated("a sibling added", siblings=member["siblings"] + ["01" * 32])
    mutated("an empty sibling made a hash", siblings=[s or "00" * 31 + "01" for s in member["siblings"]])
    mutated("another paper's id", paper=member["paper"] + "0", key=paper_key(member["paper"] + "0").hex())
    mutated("a key that is not the paper's", key=flip(member["key"]))
    mutated("the count one more", count=member["count"] + 1)
    mutated("a flipped byte in the events root", events_root=flip(member["events_root"]))
    mutated("the index root not the path's", index_root=flip(member["index_root"]))
    drafts.append({"name": "a proof of an older size against today's root", "proof": older,
                   "signed_root": member["index_root"]})
    drafts.append({"name": "an older size against its own root", "proof": older})
    absent_why = "the page proves a paper with events; an absent paper's proof has no events root to read"
    drafts.append({"name": "an absent paper, ending at a neighbour", "proof": absent, "js_why": absent_why})
    drafts.append({"name": "an absent paper given the neighbour's count as its own",
                   "proof": {**absent, "count": absent["neighbour"]["count"],
                             "events_root": absent["neighbour"]["root"], "neighbour": None}})
    for case in drafts:
        case.setdefault("signed_root", case["proof"]["index_root"])
        case["kind"] = "proof"
    for size in (1, 2, 3, 4, 5, 6, 7, 8, 13):
        reference = " (RFC 6962's reference leaves)" if size <= len(REFERENCE_ROOTS) else ""
        drafts.append({"name": f"the events root of {size} events{reference}", "kind": "events_root",
                       "leaves": [h.hex() for h in LEAVES[:size]]})
    drafts = cases("paper_index", drafts)
    roots = [case["expect"]["root"] for case in drafts if case["name"].endswith("reference leaves)")]
    assert roots == REFERENCE_ROOTS, "the events root is not RFC 6962's tree head"
    for case in drafts:
        if "js_why" in case:
            case["js_expect"] = REJECT
    return drafts


# -- arXiv ids ------------------------------------------------------------------------------------------
LINK_WHY = "the home page's box also reads an arxiv.org link"


def arxiv_cases() -> list[dict]:
    good = ["2407.20018", "arXiv:2407.20018", "ARXIV:2407.20018", "2407.20018v2", "2407.20018v10", "0704.0001",
            "1412.9999", "1501.00001", "hep-th/9901001", "hep-th/9901001v1", "math.AG/0601001",
            "arXiv:math.AG/0601001v3", "cond-mat-mes-hall/0601001"]
    bad = ["1501.0001", "1412.00001", "2407.2001", "2407.200181", "24070.20018", "2407.20018v0", "2407.20018v",
           "2407.20018v01", "2407.20018v2v3", "hep-th/990100", "hep-th/99010011", "HEP-TH/9901001", "math.ag/0601001",
           "math.AGX/0601001", "hep-/9901001", " 2407.20018", "2407.20018\n", "", "arXiv:", "arXiv:arXiv:2407.20018",
           "\u0662\u0664\u0660\u0667.\u0662\u0660\u0660\u0661\u0668", "2407.20018 ", "2407\u200b.20018"]
    drafts = [{"name": text, "text": text} for text in good + bad]
    links = [("https://arxiv.org/abs/2407.20018", "2407.20018"), ("arxiv.org/pdf/2407.20018v2.pdf", "2407.20018"),
             ("http://export.arxiv.org/abs/hep-th/9901001", "hep-th/9901001")]
    drafts += [{"name": text, "text": text, "js_why": LINK_WHY, "js_expect": {"paper": paper}} for text, paper in links]
    return cases("arxiv_ids", drafts)


RULES = {"canonical": canonical_cases, "signed_notes": signed_note_cases, "cosignatures": cosignature_cases,
         "rfc9162_inclusion": inclusion_cases, "rfc9162_consistency": consistency_cases,
         "paper_index": paper_index_cases, "arxiv_ids": arxiv_cases}


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for rule, make in RULES.items():
        # ASCII, every other character escaped: a lone surrogate (a case of its own) has no UTF-8 form
        (out / f"{rule}.json").write_text(json.dumps(make(), indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
