"""Verification: a published record against its own digests and against the ledger's history, and the
whole chain against its stored hashes.

Every `verify_*` returns a short account of what was checked or raises IntegrityError whose `problems`
name each observation, field or sequence number that failed. Nothing here writes.
"""

from __future__ import annotations

from projections.record import build_record, first_difference

from .canonical import parse_json
from .chain import hex_hash, verify_entries
from .errors import InputError, IntegrityError, NotFoundError
from .importer import decode_input
from .record import check_record, digest_mismatches
from .store import Store


def load_record(name: str, data: bytes) -> dict:
    """Parse and shape-check one published record (InputError, exit 2, when malformed)."""
    text = decode_input(name, data)
    try:
        return check_record(parse_json(text))
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None


def history_differences(rebuilt: dict, record: dict) -> list[str]:
    """What a record says that the ledger's rebuild at the same as_of does not, one line per finding."""
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


def verify_record(name: str, data: bytes, store: Store | None) -> str:
    """Check a published record's digests and, when the ledger holds its paper, its agreement with history."""
    record = load_record(name, data)
    problems = digest_mismatches(record)
    paper = record["paper"]["arxiv_id"]
    facts = store.paper_facts(paper) if store is not None else []
    compared = ""
    if facts:
        try:
            rebuilt = build_record(paper, facts, record["as_of"])
        except NotFoundError as exc:
            problems.append(f"history: {exc}")
        else:
            problems.extend(f"history: {p}" for p in history_differences(rebuilt, record))
            compared = f"; agrees with the ledger's history at {record['as_of']}"
    elif store is not None:
        compared = f"; the ledger holds no events of arXiv:{paper}, history not compared"
    else:
        compared = "; no ledger, history not compared"
    if problems:
        raise IntegrityError(f"{name}: {len(problems)} problem(s)", [f"{name}: {p}" for p in problems])
    count = len(record["inbound"]) + len(record["outbound"])
    return f"{name}: ok: {count} observation digests and the context digest re-check{compared}"


def _every(items, step: int, report):
    for count, item in enumerate(items, start=1):
        if count % step == 0:
            report(count)
        yield item


def verify_chain(entries, progress=None) -> str:
    """Re-compute every entry hash and chain link; name the first bad sequence number.

    `progress`, when given, is called every 100,000 entries (the CLI shows it on a terminal).
    """
    if progress:
        entries = _every(entries, 100_000, lambda n: progress(f"verified {n:,} entries"))
    seq, chain = verify_entries(entries)
    return f"ok: {seq} events, every entry hash and chain link re-computes; head {seq} {hex_hash(chain)}"


__all__ = ["load_record", "history_differences", "verify_chain", "verify_record"]
