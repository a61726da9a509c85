"""Verification against the ledger: a published record against its own digests and the ledger's history,
and the whole chain against its stored hashes.

Every `verify_*` returns a short account of what was checked or raises IntegrityError whose `problems`
name each observation, field or sequence number that failed. Nothing here writes.
"""

from __future__ import annotations

from projections.record import rebuild_mismatch

from .canonical import parse_json
from .chain import hex_hash, verify_entries
from .errors import InputError, IntegrityError, NotFoundError
from .inputs import decode_input
from .published import check_record, digest_mismatches
from .store import Store


def load_record(name: str, data: bytes) -> dict:
    """Parse and shape-check one published record. Raises InputError (exit 2) naming the file when malformed."""
    text = decode_input(name, data)
    try:
        return check_record(parse_json(text))
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None


def verify_record(name: str, data: bytes, store: Store | None) -> str:
    """Check a published record's digests and, when the ledger holds its paper, its agreement with history.

    Raises InputError for a malformed record, IntegrityError naming each digest or difference, StoreError."""
    record = load_record(name, data)
    problems = digest_mismatches(record)
    paper = record["paper"]["arxiv_id"]
    facts = store.paper_facts(paper) if store is not None else []
    compared = ""
    if facts:
        try:
            mismatch = rebuild_mismatch(facts, record)
        except NotFoundError as exc:
            problems.append(f"history: {exc}")
        else:
            problems.extend(f"history: {p}" for p in (mismatch.each() if mismatch else []))
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

    `progress`, when given, is called every 100,000 entries (the CLI shows it on a terminal). Raises
    IntegrityError naming the first bad seq and how many entries depend on it.
    """
    if progress:
        entries = _every(entries, 100_000, lambda n: progress(f"verified {n:,} entries"))
    seq, chain = verify_entries(entries)
    return f"ok: {seq} events, every entry hash and chain link re-computes; head {seq} {hex_hash(chain)}"
