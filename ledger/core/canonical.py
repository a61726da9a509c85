"""The one canonical encoder, and the digests built on it.

`canonical(x)` is `orjson.dumps(x, option=OPT_SORT_KEYS)`: compact, keys sorted, UTF-8, no trailing
newline. Every digest and the hash chain use it, and nothing else may encode bytes that get hashed.
It refuses what JSON cannot carry exactly (NaN, Infinity, integers outside 64 bits, non-string keys,
lone surrogates) instead of coercing it: orjson would silently write NaN as null.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

import orjson

from ledger.core.errors import InputError

_OPTIONS = orjson.OPT_SORT_KEYS


class CanonicalError(InputError):
    """A value that has no exact canonical JSON form."""


def _has_non_finite(value: Any) -> bool:
    # A flat loop, not recursion: this runs on every entry of the chain, so it must stay cheap.
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is float:
            if not math.isfinite(item):
                return True
        elif kind is dict:
            stack.extend(item.values())
        elif kind is list or kind is tuple:
            stack.extend(item)
    return False


def _non_finite_path(value: Any, path: str) -> str | None:
    """Where the first NaN/Infinity is (slow path, only once one is known to exist)."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (path or "value")
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, (list, tuple)) else ()
    for key, item in items:
        where = _non_finite_path(item, f"{path}.{key}" if isinstance(value, dict) and path else
                                 str(key) if isinstance(value, dict) else f"{path}[{key}]")
        if where:
            return where
    return None


def canonical(value: Any) -> bytes:
    """Return the canonical JSON bytes of any value.

    Raises: CanonicalError (an InputError) for a float that is not finite, an integer outside 64 bits, a
    key that is not a string.
    """
    encoded = _encoded(value)
    # orjson writes NaN and Infinity as null: only where a null appears can one have been coerced.
    if b"null" in encoded and _has_non_finite(value):
        raise CanonicalError(f"{_non_finite_path(value, '')}: NaN and Infinity have no JSON form")
    return encoded


def canonical_parsed(value: Any) -> bytes:
    """Return the canonical JSON bytes of parsed JSON: a value `parse_json` or `loads_finite` returned, or one
    built from their parts, strings and integers (a record the fold builds, a chain entry).

    Precondition: such a value holds no NaN or Infinity (`loads_finite` says why), so the walk that looks for
    them is skipped; a float that is not finite would be written as null.

    Raises: CanonicalError (an InputError) for an integer outside 64 bits or a key that is not a string.
    """
    return _encoded(value)


def _encoded(value: Any, exact: bool = True) -> bytes:
    try:
        encoded = orjson.dumps(value, option=_OPTIONS)
    except TypeError as exc:  # orjson.JSONEncodeError is a TypeError
        raise CanonicalError(f"cannot encode canonically: {exc}") from None
    # orjson's result holds a buffer of at least 4 KiB however short the text: an import keeps one per event
    # (its payload), so a copy of the exact length is returned (the same bytes; a tenth of the memory). Bytes
    # only hashed (`exact` False: a record's digests, one per observation) are not kept, so not copied.
    return bytes(memoryview(encoded)) if exact else encoded


def sha256_digest(value: Any) -> str:
    """`sha256:<hex>` of the canonical bytes of any value.

    Raises: CanonicalError (an InputError) for a value with no canonical form.
    """
    return "sha256:" + hashlib.sha256(canonical(value)).hexdigest()


def parsed_digest(value: Any) -> str:
    """`sha256:<hex>` of the canonical bytes of parsed JSON (the precondition of `canonical_parsed`).

    Raises: CanonicalError (an InputError) for a value with no canonical form.
    """
    return "sha256:" + hashlib.sha256(_encoded(value, exact=False)).hexdigest()


def _pairs_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise CanonicalError(f"duplicate key {key!r}")
            seen.add(key)
    return result


def _refuse_constant(name: str) -> Any:
    raise CanonicalError(f"{name} is not a JSON value")


# Twenty digits hold every integer of 64 bits. Longer ones are refused before `int()` sees them: past 4,300
# digits it raises a ValueError of its own (CVE-2020-10735), and below that a long one costs quadratic time.
_INT_DIGITS = 20


def _bounded_int(digits: str) -> int:
    count = len(digits) - digits.startswith("-")
    if count > _INT_DIGITS:
        raise CanonicalError(f"an integer of {count:,} digits exceeds the 64-bit range")
    return int(digits)


# Why a value from `orjson.loads` holds only finite floats: orjson refuses the NaN and Infinity tokens and
# any number literal that overflows a double ("number is infinity when parsed as double"); it never makes
# a NaN. tests/ledger/core/test_canonical.py pins both, so an orjson that stopped refusing them fails there.
loads_finite = orjson.loads

# JSON's only escape that decodes to a colon, which would make the key count below come out short.
_ESCAPED_COLON = re.compile(r"\\u003[aA]")
_UNSURE = object()


def _parse_fast(text: str) -> Any:
    """orjson's parse, returned only when it is provably the strict parse's value; `_UNSURE` otherwise.

    orjson turns an integer outside 64 bits into a float silently; such a float is at least 2**63 in
    magnitude, and orjson writes every float from 1e16 up with an exponent (`9.3e+18`): an encoding without
    `e+` anywhere held no such integer. orjson keeps the last of duplicate keys silently. Every key in the text is followed by exactly one colon
    outside any string, and the canonical re-encoding writes each key it kept with one colon and every string
    with its colons as they were decoded: with no colon written as an escape, the text and its encoding hold
    the same number of colons exactly when no key was dropped (each dropped member takes at least its own
    colon away). Anything else orjson refuses, or might have coerced, goes to the strict parser, which
    decides as it always has, with its own messages.
    """
    try:
        value = orjson.loads(text)
        encoded = orjson.dumps(value, option=_OPTIONS)  # the canonical form: orjson nests 1024 deep, dumps 254
    except orjson.JSONDecodeError:
        return _UNSURE
    except TypeError:  # orjson.JSONEncodeError
        return _UNSURE
    if b"e+" in encoded or text.count(":") != encoded.count(b":"):
        return _UNSURE
    if "\\u" in text and _ESCAPED_COLON.search(text):
        return _UNSURE
    return value


def parse_json(text: str) -> Any:
    """Parse one JSON text strictly: no duplicate keys, no NaN/Infinity, no integer beyond 64 bits.

    The value holds only finite floats, so it may be encoded with `canonical_parsed`. orjson
    parses first; what it cannot prove clean is parsed again by the standard library's parser with
    duplicate-key and constant hooks, which names the problem.

    Raises: CanonicalError (an InputError) saying what is wrong; the caller adds the file name.
    """
    value = _parse_fast(text)
    return parse_json_strict(text) if value is _UNSURE else value


def parse_json_strict(text: str) -> Any:
    """`parse_json` by the standard library's parser alone, with the duplicate-key, constant and integer hooks:
    slower, and the oracle the fast path is tested against (the same value or the same refusal).
    Raises: CanonicalError saying what is wrong."""
    try:
        value = json.loads(
            text, object_pairs_hook=_pairs_without_duplicates, parse_constant=_refuse_constant,
            parse_int=_bounded_int,
        )
    except json.JSONDecodeError as exc:
        raise CanonicalError(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise CanonicalError("JSON nested too deeply") from None
    canonical(value)  # refuses big integers, lone surrogates: fail at parse time, not at hash time
    return value
