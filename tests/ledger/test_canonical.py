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


# -- the parser's fast path (orjson) must decide exactly as the strict one ---------------------------------
from ledger.canonical import _parse_strict, loads_finite  # noqa: E402

_SCALARS = st.sampled_from([
    "null", "true", "false", "0", "-0", "1.5", "1e5", "1E400", "-1e999", "1e20", "NaN", "-Infinity",
    "18446744073709551615", "18446744073709551616", "-9223372036854775808", "-9223372036854775809",
    "123456789012345678901234567890", '"a:b"', '"\\u003a"', '"\\u003A:"', '"\\ud800"', '"x"', '"\\u00e9"', '"é"',
    '"\\"a\\":"', '"\\\\"', '"e+1"', "01", "1.", "[1,]",
]) | st.integers().map(str) | st.floats(allow_nan=False, allow_infinity=False).map(repr)
_KEYS = st.sampled_from(['"a"', '"b"', '"a:"', '"a\\u003a"', '"\\u0061"', '"seq"', '"k\\":"', '""'])
_SPACE = st.sampled_from(["", "", " ", "\n", "\t", "\r\n", "\x0c", "\xa0"])


def _object(members):
    return "{" + ",".join(f"{space}{key}{space}:{value}" for key, value, space in members) + "}"


json_texts = st.recursive(
    _SCALARS,
    lambda children: st.lists(st.tuples(_KEYS, children, _SPACE), max_size=5).map(_object)
    | st.lists(children, max_size=4).map(lambda items: "[" + ",".join(items) + "]"),
    max_leaves=25,
)


def _outcome(parse, text):
    try:
        return "ok", canonical(parse(text))
    except CanonicalError as exc:
        return "refused", str(exc)


@settings(max_examples=1500)
@given(json_texts)
def test_the_fast_path_decides_every_text_as_the_strict_parser_does(text):
    # The oracle is the standard library's parser with the duplicate-key and constant hooks: the same
    # value (byte for byte once encoded) or the same refusal, word for word.
    assert _outcome(parse_json, text) == _outcome(_parse_strict, text)


@given(json_values)
def test_the_fast_path_round_trips_what_the_encoder_writes(value):
    assert canonical(parse_json(canonical(value).decode())) == canonical(value)


@pytest.mark.parametrize("text, problem", [
    # A duplicate deep inside an event line, among strings full of colons.
    ('{"kind":"citation.observed","payload":{"citation":{"cited_work":{"t":"a:b:c","t":"d"}},"observation_id":"x:y"}}',
     "duplicate key 't'"),
    # A colon written as an escape must not hide a duplicate from the count of colons.
    ('{"a\\u003a":1,"b":{"c":1,"c":2}}', "duplicate key 'c'"),
    ('{"a\\u003a":1,"a:":2}', "duplicate key 'a:'"),
    ('{"n":18446744073709551616}', "64-bit"),  # orjson would have made it a float
    ('{"n":-9223372036854775809}', "64-bit"),
    ('{"n":1e999}', "n: NaN and Infinity have no JSON form"),
    ('{"s":"\\ud800"}', "surrogates not allowed"),
])
def test_parse_json_refuses_what_orjson_alone_would_take_or_misname(text, problem):
    with pytest.raises(CanonicalError, match=problem):
        parse_json(text)


def test_the_64_bit_edges_stay_integers():
    assert parse_json('[18446744073709551615,-9223372036854775808]') == [2**64 - 1, -(2**63)]


def test_what_the_fast_path_relies_on_in_orjson():
    # loads_finite: orjson refuses NaN, Infinity and literals that overflow a double, so what it returns is
    # finite (the NaN walk is skipped for it). And it writes every float of 2**63 or more with an exponent
    # (`e+`), which is how the fast path sees an integer orjson turned into a float.
    for text in ("NaN", "[Infinity]", "-Infinity", "1e999", "[-1E400]"):
        with pytest.raises(orjson.JSONDecodeError):
            loads_finite(text)
    for number in (2.0**63, 2.0**64, -(2.0**63) - 4096, 1e300, float(10**25), -1.8446744073709552e19):
        assert b"e+" in orjson.dumps(number)
    assert loads_finite("18446744073709551616") == 2.0**64  # the coercion the fast path guards against


def test_canonical_bytes_hold_no_more_memory_than_their_length():
    # orjson's own result keeps a 4 KiB buffer however short: an import holds one per event.
    import tracemalloc

    tracemalloc.start()
    kept = [canonical({"n": n, "title": "x" * 300}) for n in range(500)]
    held = tracemalloc.get_traced_memory()[0] / len(kept)
    tracemalloc.stop()
    assert held < 1024, held
