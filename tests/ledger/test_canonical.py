"""The one canonical encoder: stable under key order, exact, and refusing what JSON cannot carry."""

import json
import math
import random

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.canonical import CanonicalError, canonical, parse_json, sha256_digest
from tests.conftest import SEED_004

json_leaves = (st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**63 - 1)
               | st.floats(allow_nan=False, allow_infinity=False) | st.text())
json_values = st.recursive(
    json_leaves,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=30,
)


def shuffled(value, rng):
    """The same JSON value with every object's keys in another insertion order."""
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: shuffled(v, rng) for k, v in items}
    if isinstance(value, list):
        return [shuffled(v, rng) for v in value]
    return value


@given(json_values, st.integers())
def test_canonical_is_stable_under_key_order(value, seed):
    assert canonical(shuffled(value, random.Random(seed))) == canonical(value)


@given(json_values)
def test_canonical_round_trips_through_the_strict_parser(value):
    encoded = canonical(value)
    assert canonical(parse_json(encoded.decode())) == encoded


@given(json_values)
def test_canonical_is_compact_sorted_utf8(value):
    encoded = canonical(value)
    assert encoded == orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    assert not encoded.endswith(b"\n")
    encoded.decode("utf-8")


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, {"a": [1, {"b": math.nan}]}, [math.inf]])
def test_canonical_refuses_non_finite_numbers(bad):
    with pytest.raises(CanonicalError):
        canonical(bad)


@given(st.one_of(st.integers(min_value=2**64), st.integers(max_value=-(2**63) - 1)))
def test_canonical_refuses_integers_beyond_64_bits(big):
    with pytest.raises(CanonicalError):
        canonical({"n": big})


@pytest.mark.parametrize("bad", [{1: "x"}, {None: 1}, {(1, 2): 3}, {"a": {2.5: 1}}])
def test_canonical_refuses_non_string_keys(bad):
    with pytest.raises(CanonicalError):
        canonical(bad)


def test_canonical_refuses_lone_surrogates():
    with pytest.raises(CanonicalError):
        canonical({"title": "\ud800"})


def test_string_containing_null_is_not_mistaken_for_nan():
    assert canonical({"a": "null", "b": None}) == b'{"a":"null","b":null}'


@pytest.mark.parametrize("text, problem", [
    ('{"a":1,"a":2}', "duplicate key 'a'"),
    ('{"x":{"b":1,"b":1}}', "duplicate key 'b'"),
    ('{"a":NaN}', "NaN is not a JSON value"),
    ('[Infinity]', "Infinity is not a JSON value"),
    ('{"a":-Infinity}', "-Infinity is not a JSON value"),
    ('{"a":18446744073709551616}', "64-bit"),
    ('{"a":1', "invalid JSON"),
    ('', "invalid JSON"),
])
def test_parse_json_refuses(text, problem):
    with pytest.raises(CanonicalError, match=problem):
        parse_json(text)


def test_seed_bytes_are_the_canonical_encoding_of_the_seed():
    data = SEED_004.read_bytes()
    assert canonical(json.loads(data)) == data


@settings(max_examples=50)
@given(json_values)
def test_sha256_digest_format(value):
    digest = sha256_digest(value)
    assert digest.startswith("sha256:") and len(digest) == 71
