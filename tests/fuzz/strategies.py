"""Inputs an attacker would send, for the fuzz tier: valid inputs mutated (bytes flipped, inserted, deleted,
spliced; lines dropped, doubled and swapped; JSON values replaced by hostile ones) and raw bytes.

One settings profile for every fuzz test (`FUZZ`): a few hundred examples each, so the whole tier stays within
two minutes of CI on two cores; LEDGER_FUZZ_EXAMPLES raises it for a longer run. A failure prints the
reproduction blob (`@reproduce_failure`) to replay it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from benchmarks.fuzz import corpus

EXAMPLES = int(os.environ.get("LEDGER_FUZZ_EXAMPLES", "200"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, print_blob=True, derandomize=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture])

BIG_INT = "9" * 5000  # past CPython's 4,300-digit limit of int(str): a parser that calls int() on it raises ValueError
_BIG = "\x00big integer\x00"  # stands for BIG_INT in a document until it is encoded (int(BIG_INT) itself raises)
# Bytes that break parsers: numbers at and past 64 bits, JSON's forbidden constants, deep nesting, escapes of
# lone surrogates, a BOM, NUL, line breaks of every kind, bidi and control characters, a signed note's dash.
TOKENS = [
    b"0", b"-0", b"-1", b"1e999", b"-1e999", b"1.5", b"9223372036854775807", b"9223372036854775808",
    b"18446744073709551616", b"-9223372036854775809", b"NaN", b"Infinity", b"-Infinity", b"null", b"true", b"[]",
    b"{}", b'""', b'"\\ud800"', b'"\\udfff\\ud800"', b"\\u0000", b"\xef\xbb\xbf", b"\x00", b"\r\n", b"\r", b"\n\n",
    b"\x85", "\u2028".encode(), "\u202e".encode(), b"\x07\x1b", b"[" * 2000, b"{\"a\":" * 600, b"\xff\xfe",
    b"\xed\xa0\x80", "\u2014 ".encode(), b"+", b"=", b"/", b"../", b"%2e%2e/", b"x" * 70000,
]
BIG_TOKENS = [BIG_INT.encode(), b"-" + BIG_INT.encode()]

# JSON values that a well-formed document may hold in the wrong place: every type, the 64-bit edges, floats
# that are not finite, strings of lone surrogates, bidi and control characters, paths, deep nesting.
HOSTILE_STRINGS = ["", " ", "\ud800", "\u202e", "\x00", "\x1b[2J", "../../etc/passwd", "/tmp/x/OUTSIDE",
                   "2407.20018", "arXiv:2407.20018v2", "blake3:" + "0" * 64, "sha256:" + "0" * 64, "0" * 64,
                   "2026-08-09T16:41:00Z", "9999-12-31T23:59:59.999999-23:59", "A" * 70000]


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def json_values(big: bool = False) -> st.SearchStrategy[Any]:
    """Hostile JSON values; with `big`, integers of 5,000 digits too."""
    scalars = st.one_of(
        st.none(), st.booleans(), st.integers(), st.sampled_from([2**63 - 1, 2**63, -2**63, -2**63 - 1, 2**64]),
        st.floats(), st.text(max_size=30), st.sampled_from(HOSTILE_STRINGS),
        st.just(_nested(400)),
        *([st.just(_BIG)] if big else []))
    return st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                         st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                        max_leaves=6)


def _positions(value: Any, path: tuple = ()) -> list[tuple]:
    """Every path into a parsed JSON document (keys and indexes), the root's included."""
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _positions(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _positions(item, path + (index,))
    return found


def _dumps(value: Any, ascii_only: bool) -> bytes:
    text = json.dumps(value, allow_nan=True, ensure_ascii=ascii_only)  # NaN and Infinity as their tokens
    text = text.replace(json.dumps(_BIG, ensure_ascii=ascii_only), BIG_INT)
    return text.encode("utf-8", "surrogatepass")  # a lone surrogate unescaped: not UTF-8, on purpose


def _json_parts(seed: bytes) -> list[bytes]:
    """A seed's JSON documents: itself when it is one, else its lines when each is one or blank; [] when neither
    (an input the coverage-guided fuzzer kept)."""
    for parts in ([seed], seed.split(b"\n")):
        try:
            [json.loads(part) for part in parts if part.strip()]
            return parts
        except ValueError:
            continue
    return []


@st.composite
def json_mutated(draw: Callable, seeds: list[bytes], big: bool = False) -> bytes:
    """A seed JSON document (or one line of a seed of JSON lines) with one to three members replaced by a
    hostile value, removed, added or renamed, encoded again."""
    seed = draw(st.sampled_from([seed for seed in seeds if _json_parts(seed)]))
    lines = _json_parts(seed)
    at = draw(st.sampled_from([i for i, line in enumerate(lines) if line.strip()]))
    doc = json.loads(lines[at])
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_positions(doc)))
        op = draw(st.sampled_from(["replace", "replace", "delete", "add", "rename"]))
        value = draw(json_values(big))
        if not path:
            doc = value if op == "replace" else doc
            continue
        parent = doc
        for step in path[:-1]:
            parent = parent[step]
        last = path[-1]
        if op == "replace":
            parent[last] = value
        elif op == "delete":
            del parent[last]
        elif op == "add" and isinstance(parent, dict):
            parent[draw(st.text(max_size=8))] = value
        elif op == "add":
            parent.insert(last, value)
        elif op == "rename" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["seq", "kind", "payload", "schema", "paper", "arxiv_id", "siblings"]))] = \
                parent.pop(last)
    lines[at] = _dumps(doc, draw(st.booleans()))
    return b"\n".join(lines)


@st.composite
def mutated(draw: Callable, seeds: list[bytes], big: bool = False) -> bytes:
    """A seed with one to four byte- or line-level mutations: a bit flipped, bytes inserted or deleted, a span
    doubled, replaced by a hostile token (`TOKENS`; with `big`, 5,000-digit numbers too) or by another seed's
    bytes, the end cut off, a line dropped, doubled or swapped with another."""
    tokens = TOKENS + BIG_TOKENS if big else TOKENS
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        span = draw(st.integers(0, 64))
        op = draw(st.sampled_from(["flip", "insert", "delete", "double", "token", "token", "splice", "cut", "line"]))
        if op == "flip" and at < len(data):
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif op == "delete":
            del data[at:at + span]
        elif op == "double":
            data[at:at] = data[at:at + span]
        elif op == "token":
            data[at:at + draw(st.integers(0, 8))] = draw(st.sampled_from(tokens))
        elif op == "splice":
            other = draw(st.sampled_from(seeds))
            start = draw(st.integers(0, len(other)))
            data[at:at + span] = other[start:start + draw(st.integers(1, 256))]
        elif op == "cut":
            del data[at:]
        elif op == "line":
            lines = bytes(data).split(b"\n")
            i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            how = draw(st.sampled_from(["drop", "double", "swap"]))
            if how == "drop":
                del lines[i]
            elif how == "double":
                lines.insert(i, lines[i])
            else:
                lines[i], lines[j] = lines[j], lines[i]
            data = bytearray(b"\n".join(lines))
    return bytes(data)


def outside_bytes(target: str, big: bool = False) -> st.SearchStrategy[bytes]:
    """What an outsider may send to a target: its seeds mutated, or raw bytes."""
    seeds = corpus(target)
    return st.one_of(mutated(seeds, big), mutated(seeds, big), st.binary(max_size=512))
