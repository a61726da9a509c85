"""Verification against the ledger: a published record against its own digests and the ledger's history,
and the whole chain against its stored hashes.

`verify_chain` returns the head it re-computed or raises IntegrityError naming the first bad sequence number;
`compare_record` returns its findings, every observation, field or difference that failed named, so that
several records are reported together. Both return facts, which the interfaces word. Nothing here writes.

A record is compared with what the ledger knew, not only with what it knows now: a fact recorded after the
record was published (a late fact, effective before its as_of) changes today's rebuild, yet the record was
the ledger's word when it was published. So the record passes when some recorded time rebuilt it exactly,
and the late facts are named; `strict` asks for today's rebuild.
"""

from __future__ import annotations

from typing import NamedTuple

from ledger.core.canonical import parse_json
from ledger.core.errors import InputError, NotFoundError
from ledger.core.inputs import decode_input
from ledger.log.chain import verify_entries
from ledger.model.parts import counted
from ledger.model.published import check_record, digest_mismatches
from ledger.projections.history import agreement
from ledger.projections.text import counted_lines
from ledger.storage.store import Store


def load_record(name: str, data: bytes) -> dict:
    """Parse and shape-check one published record.
    Raises: InputError (exit 2) naming the file when malformed."""
    text = decode_input(name, data)
    try:
        return check_record(parse_json(text))
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None


class RecordCheck(NamedTuple):
    """What `compare_record` found: `problems` (one line each, naming the file) is empty when it passed.
    `history` (as_of, agrees_now, windows, late_facts) is None when history was not compared: `ledger` False,
    no ledger was given; True, it holds no events of `paper`."""

    name: str
    paper: str
    observations: int  # how many observation digests re-checked (with the context digest)
    problems: list[str]
    history: dict | None
    ledger: bool
    counted: tuple[str, ...] = ()  # per direction over the page cap: "inbound 110 counted, 100 itemized"


def compare_record(name: str, data: bytes, store: Store | None, strict: bool = False) -> RecordCheck:
    """Check a published record's digests and, when the ledger holds its paper, its agreement with history.

    A record passes when some recorded time rebuilt it exactly at its as_of ("agrees with what the ledger
    knew from R1 until R2"), and the facts recorded since that changed the rebuild are named; it fails only
    when no recorded time ever rebuilt it, naming the differences from today's rebuild. `strict`: it must be
    today's rebuild. Returns the findings (problems included) rather than raising IntegrityError.
    Raises: InputError for a malformed record, or StoreError."""
    record = load_record(name, data)
    problems = digest_mismatches(record)
    paper, as_of = record["paper"]["arxiv_id"], record["as_of"]
    facts = store.paper_facts(paper) if store is not None else []
    history = None
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
            if found.mismatch is not None and (strict or not found.windows):
                problems.extend(f"history: {p}" for p in found.mismatch.each())
                if found.windows:
                    problems.append(f"history: under --strict it must be today's rebuild; it is what the ledger "
                                    f"knew {_spans(windows)}, and {counted(len(found.late), 'late fact')} changed it")
    count = len(record["inbound"]) + len(record["outbound"])
    return RecordCheck(name, paper, count, [f"{name}: {p}" for p in problems], history, store is not None,
                       tuple(counted_lines(record)))


def _spans(windows: list[dict]) -> str:
    return " and ".join(f"from {w['from']} until {w['until']}" if w["until"] else f"from {w['from']} on"
                        for w in windows)


def _every(items, step: int, report):
    for count, item in enumerate(items, start=1):
        if count % step == 0:
            report(count)
        yield item


class ChainHead(NamedTuple):
    """The chain re-computed: `seq` events, every entry hash and link; `chain` is the head's chain hash."""

    seq: int
    chain: bytes


def verify_chain(entries, progress=None) -> ChainHead:
    """Re-compute every entry hash and chain link; name the first bad sequence number.

    `progress`, when given, is called every 100,000 entries (the CLI shows it on a terminal).
    Raises: IntegrityError naming the first bad seq and how many entries depend on it.
    """
    if progress:
        entries = _every(entries, 100_000, lambda n: progress(f"verified {n:,} entries"))
    return ChainHead(*verify_entries(entries))
