"""Comparing a record with the ledger's rebuild of it: whether they agree byte for byte, the first place
they differ, each observation that differs, the observations a record leaves out, and two long values shown
where they differ. Pure: handed the facts and the record, it never reads storage; the fold is `record`'s.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import orjson

from ledger.core.canonical import canonical_parsed
from ledger.core.times import When
from ledger.model.events import Fact
from ledger.projections.record import PAGE_ORDER, build_record, counted_past_cap, directions, folded


class Mismatch(NamedTuple):
    """A record and the ledger's rebuild of it at its own as_of, which differ."""

    rebuilt: dict
    record: dict

    def first(self) -> str:
        """The first place they differ, in canonical key order (digests last)."""
        return first_difference(self.rebuilt, self.record) or "record"

    def each(self) -> list[str]:
        """One line per observation or field that differs (at least one line)."""
        return history_differences(self.rebuilt, self.record) or [self.first()]


def rebuild_mismatch(facts: Iterable[Fact], record: dict) -> Mismatch | None:
    """Rebuild `record`'s paper from `facts` at the record's own `as_of`: None when the rebuild is the record
    byte for byte, else the Mismatch. The one rebuild-and-compare of import, verify and evidence bundles;
    `record` is parsed JSON (see `canonical.canonical_parsed`).

    Raises: NotFoundError when the facts hold no snapshot of the paper by then.
    """
    rebuilt = build_record(record["paper"]["arxiv_id"], facts, When.at(record["as_of"]))
    return None if canonical_parsed(rebuilt) == canonical_parsed(record) else Mismatch(rebuilt, record)


def missing_observations(facts: Iterable[Fact], record: dict) -> list[str]:
    """The observations the ledger's rebuild from `facts` at `record`'s as_of lists that the record does not;
    page order, inbound first. In a direction where the record counts more than it lists (over its page cap),
    only those that would come before its last listed one are missing: one after it is past the cap. Needs no
    snapshot of the paper."""
    fold = folded(record["paper"]["arxiv_id"], facts, When.at(record["as_of"]))
    inbound, outbound = directions(fold.draft())
    missing: list[str] = []
    for direction, ours in (("inbound", inbound), ("outbound", outbound)):
        theirs, order = record[direction], PAGE_ORDER[direction]
        listed = {obs["observation_id"] for obs in theirs}
        capped = bool(theirs) and counted_past_cap(record, direction) is not None
        missing += [obs["observation_id"] for obs in ours
                    if obs["observation_id"] not in listed and obs["observation_id"] not in missing
                    and not (capped and order(obs) > order(theirs[-1]))]
    return missing


def history_differences(rebuilt: dict, record: dict) -> list[str]:
    """What a record says that the ledger's rebuild at the same as_of does not, one line per finding (empty
    when they agree but for the order of observations)."""
    problems = []
    for direction in ("inbound", "outbound"):
        ours = {o["observation_id"]: o for o in rebuilt[direction]}
        theirs = {o["observation_id"]: o for o in record[direction]}
        for oid, obs in theirs.items():
            if oid not in ours:
                problems.append(f"observation {oid} ({direction}): not in the ledger's history as of {record['as_of']}")
            elif ours[oid] != obs:
                problems.append(f"observation {oid} ({direction}): differs from the ledger's history at "
                                f"{first_difference(ours[oid], obs)}")
        for oid in ours.keys() - theirs.keys():
            problems.append(f"observation {oid} ({direction}): in the ledger's history but missing from the record")
    for key in sorted(set(rebuilt) | set(record)):
        if key in ("inbound", "outbound") or rebuilt.get(key) == record.get(key):
            continue
        problems.append(f"{first_difference(rebuilt.get(key), record.get(key), key)}")
    return problems


def first_difference(expected: object, found: object, path: str = "") -> str | None:
    """The first place two JSON values differ, in canonical key order (digests last); None when equal. Two
    differing values are shown as `shown_apart` shows them."""
    if type(expected) is not type(found) or not isinstance(expected, (dict, list)):
        if type(expected) is type(found) and expected == found:
            return None
        return f"{path or 'record'}: ledger has %s, record has %s" % shown_apart(expected, found)
    if isinstance(expected, dict):
        # Digests differ whenever anything else does; name the cause, not its consequence.
        for key in sorted(set(expected) | set(found), key=lambda k: (k.endswith("_digest"), k)):
            where = f"{path}.{key}" if path else key
            if key not in found:
                return f"{where}: ledger has {_show(expected[key])}, record has no such field"
            if key not in expected:
                return f"{where}: record has {_show(found[key])}, ledger has no such field"
            difference = first_difference(expected[key], found[key], where)
            if difference:
                return difference
        return None
    if isinstance(expected, list):
        for index, (a, b) in enumerate(zip(expected, found)):
            label = f"{path}[{index}]"
            if isinstance(a, dict) and "observation_id" in a:
                label = f"{path}[{index}: {a['observation_id']}]"
            difference = first_difference(a, b, label)
            if difference:
                return difference
        if len(expected) != len(found):
            return f"{path}: ledger has {len(expected)} items, record has {len(found)}"
    return None


_WHOLE = 60  # a value whose JSON is at most this long is shown whole
_CONTEXT = 20  # characters kept either side of where two long values differ, as in a diff's hunk
_SPAN = 40  # of the differing part itself: more than _CONTEXT + 1, so two shown sides never read the same


def shown_apart(a: object, b: object) -> tuple[str, str]:
    """Two JSON values that differ, as two strings that differ: whole when both are short, else the part where
    they differ with a little context, the prefix and suffix they share elided with "…" alike on both sides.
    Strings keep their JSON quotes and escapes, so whitespace and a final "." show."""
    whole = _json(a), _json(b)
    if max(map(len, whole)) <= _WHOLE:
        return whole
    strings = isinstance(a, str) and isinstance(b, str)
    x, y = (a, b) if strings else whole
    same = next((i for i, (m, n) in enumerate(zip(x, y)) if m != n), min(len(x), len(y)))
    tail = next((i for i, (m, n) in enumerate(zip(reversed(x[same:]), reversed(y[same:]))) if m != n),
                min(len(x), len(y)) - same)
    start = max(0, same - _CONTEXT)
    sides = []
    for text in (x, y):
        cut = len(text) - tail
        middle = text[same:cut]
        after = ((_text(middle[:_SPAN], strings), "…") if len(middle) > _SPAN else
                 (_text(text[same:cut + _CONTEXT], strings), "…" if tail > _CONTEXT else ""))
        side = ("…" if start else "") + _text(text[start:same], strings) + "".join(after)
        sides.append(f'"{side}"' if strings else side)
    return sides[0], sides[1]


def _json(value: object) -> str:
    return orjson.dumps(value).decode()


def _text(piece: str, escaped: bool) -> str:
    return _json(piece)[1:-1] if escaped else piece


def _show(value: object) -> str:
    text = _json(value)
    return text if len(text) <= _WHOLE else text[:_WHOLE - 1] + "…"
