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
from typing import Any

import orjson

from .errors import InputError

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


def canonical(value: Any, floats: bool = True) -> bytes:
    """Return the canonical JSON bytes of `value`, or raise CanonicalError.

    `floats=False` is the caller's word that `value` holds no float at all (a chain entry: integers,
    strings and an already canonical payload), so the NaN/Infinity check, a third of the cost, is skipped.
    """
    try:
        encoded = orjson.dumps(value, option=_OPTIONS)
    except TypeError as exc:  # orjson.JSONEncodeError is a TypeError
        raise CanonicalError(f"cannot encode canonically: {exc}") from None
    # orjson writes NaN and Infinity as null: only where a null appears can one have been coerced.
    if floats and b"null" in encoded and _has_non_finite(value):
        raise CanonicalError(f"{_non_finite_path(value, '')}: NaN and Infinity have no JSON form")
    return encoded


def sha256_digest(value: Any) -> str:
    """`sha256:<hex>` of the canonical bytes of `value`.
    Raises CanonicalError (an InputError) for a value with no canonical form."""
    return "sha256:" + hashlib.sha256(canonical(value)).hexdigest()


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


def parse_json(text: str) -> Any:
    """Parse one JSON text strictly: no duplicate keys, no NaN/Infinity, no integer beyond 64 bits.

    Raises CanonicalError (an InputError) whose message says what is wrong; the caller adds the file name.
    """
    try:
        value = json.loads(
            text, object_pairs_hook=_pairs_without_duplicates, parse_constant=_refuse_constant
        )
    except json.JSONDecodeError as exc:
        raise CanonicalError(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise CanonicalError("JSON nested too deeply") from None
    canonical(value)  # refuses big integers, lone surrogates: fail at parse time, not at hash time
    return value
