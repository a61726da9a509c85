"""Verification against the ledger: a published record against its own digests and the ledger's history,
and the whole chain against its stored hashes.

`verify_chain` returns a short account of what was checked or raises IntegrityError naming the first bad
sequence number; `compare_record` returns its findings, every observation, field or difference that failed
named, so that several records are reported together. Nothing here writes.

A record is compared with what the ledger knew, not only with what it knows now: a fact recorded after the
record was published (a late fact, effective before its as_of) changes today's rebuild, yet the record was
the ledger's word when it was published. So the record passes when some recorded time rebuilt it exactly,
and the late facts are named; `strict` asks for today's rebuild.
"""

from __future__ import annotations

from typing import NamedTuple

from ledger.projections.history import agreement

from ledger.core.canonical import parse_json
from ledger.log.chain import hex_hash, verify_entries
from ledger.core.errors import InputError, NotFoundError
from ledger.core.inputs import decode_input
from ledger.model.published import check_record, digest_mismatches
from ledger.storage.store import Store


def load_record(name: str, data: bytes) -> dict:
    """Parse and shape-check one published record. Raises InputError (exit 2) naming the file when malformed."""
    text = decode_input(name, data)
    try:
        return check_record(parse_json(text))
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None


class RecordCheck(NamedTuple):
    """What `compare_record` found: `problems` (one line each, naming the file) is empty when it passed."""

    name: str
    problems: list[str]
    lines: list[str]  # the account, then one line per late fact (when it passed)
    history: dict | None  # as_of, agrees_now, windows and late facts; None when history was not compared


def compare_record(name: str, data: bytes, store: Store | None, strict: bool = False) -> RecordCheck:
    """Check a published record's digests and, when the ledger holds its paper, its agreement with history.

    A record passes when some recorded time rebuilt it exactly at its as_of ("agrees with what the ledger
    knew from R1 until R2"), and the facts recorded since that changed the rebuild are named; it fails only
    when no recorded time ever rebuilt it, naming the differences from today's rebuild. `strict`: it must be
    today's rebuild. Returns the findings (problems included) rather than raising IntegrityError.
    Raises InputError for a malformed record, StoreError."""
    record = load_record(name, data)
    problems = digest_mismatches(record)
    paper, as_of = record["paper"]["arxiv_id"], record["as_of"]
    facts = store.paper_facts(paper) if store is not None else []
    compared, late_lines, history = "", [], None
    if facts:
        try:
            found = agreement(facts, record)
        except NotFoundError as exc:
            problems.append(f"history: {exc}")
            history = {"as_of": as_of, "agrees_now": False, "windows": [], "late_facts": []}
        else:
            windows = [{"from": w.start, "until": w.end} for w in found.windows]
            history = {"as_of": as_of, "agrees_now": found.mismatch is None, "windows": windows,
                       "late_facts": found.late}
            if found.mismatch is None:
                compared = f"; agrees with the ledger's history at {as_of} (what the ledger knew {_spans(windows)})"
            elif found.windows and not strict:
                compared = (f"; agrees with what the ledger knew {_spans(windows)} (its rebuild at the record's "
                            f"as_of {as_of}); {len(found.late)} late fact(s) recorded since changed that rebuild:")
                late_lines = [f"{name}: late fact: {_late(row)}" for row in found.late]
            else:
                problems.extend(f"history: {p}" for p in found.mismatch.each())
                if found.windows:
                    problems.append(f"history: under --strict it must be today's rebuild; it is what the ledger "
                                    f"knew {_spans(windows)}, and {len(found.late)} late fact(s) changed it")
    elif store is not None:
        compared = f"; the ledger holds no events of arXiv:{paper}, history not compared"
    else:
        compared = "; no ledger, history not compared"
    if problems:
        return RecordCheck(name, [f"{name}: {p}" for p in problems], [], history)
    count = len(record["inbound"]) + len(record["outbound"])
    account = f"{name}: ok: {count} observation digests and the context digest re-check{compared}"
    return RecordCheck(name, [], [account] + late_lines, history)


def _spans(windows: list[dict]) -> str:
    return " and ".join(f"from {w['from']} until {w['until']}" if w["until"] else f"from {w['from']} on"
                        for w in windows)


def _late(row: dict) -> str:
    return (f"seq {row['seq']}, recorded {row['recorded_at']}, effective {row['effective_at']}, {row['kind']} "
            f"of {row['subject']}: {row['account']}")


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
