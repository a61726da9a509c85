"""The hash chain: the exact bytes of an entry, its blake3 hash, and the links between entries.

    entry(n)      = canonical({"effective_at", "kind", "payload", "recorded_at", "seq"})
    entry_hash(n) = blake3(entry(n))
    chain(n)      = blake3(chain(n-1) || entry_hash(n)),  chain(0) = 32 zero bytes

`payload` is embedded as its stored canonical bytes (an orjson Fragment), so the entry is exactly the
canonical encoding of the event object with no re-parse. Pure functions only: verification returns None or
raises IntegrityError naming the first sequence number that does not re-compute.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import orjson
from blake3 import blake3

from ledger.core.canonical import canonical_parsed
from ledger.core.errors import IntegrityError

GENESIS = bytes(32)


class Entry(NamedTuple):
    """One row of the log, as stored and as exported (a tuple: built for every appended row)."""

    seq: int
    kind: str
    effective_at: str
    recorded_at: str
    payload: bytes
    entry_hash: bytes
    chain_hash: bytes


def entry_object(seq: int, kind: str, effective_at: str, recorded_at: str, payload: bytes) -> dict[str, object]:
    """The fields of an entry, as hashed (and, with its hashes added, as exported)."""
    return {
        "effective_at": effective_at,
        "kind": kind,
        "payload": orjson.Fragment(payload),  # canonical bytes already: encoded, and checked, when appended
        "recorded_at": recorded_at,
        "seq": seq,
    }


def entry_bytes(seq: int, kind: str, effective_at: str, recorded_at: str, payload: bytes) -> bytes:
    """The canonical byte string whose blake3 is the entry hash (and which is the Merkle leaf).

    A field that cannot be encoded raises CanonicalError (the payload is trusted to be canonical bytes)."""
    return canonical_parsed(entry_object(seq, kind, effective_at, recorded_at, payload))  # no float in an entry


def entry_hash(seq: int, kind: str, effective_at: str, recorded_at: str, payload: bytes) -> bytes:
    """blake3 of `entry_bytes`; the payload must be canonical bytes."""
    return blake3(entry_bytes(seq, kind, effective_at, recorded_at, payload)).digest()


def link(previous: bytes, entry_digest: bytes) -> bytes:
    """chain(n) from chain(n-1) and entry_hash(n)."""
    return blake3(previous + entry_digest).digest()


def seal(previous: bytes, seq: int, kind: str, effective_at: str, recorded_at: str,
         payload: bytes) -> tuple[bytes, bytes, bytes]:
    """(entry bytes, entry hash, chain hash) of event `seq` continuing the chain at `previous`: the one place
    an entry is hashed and linked (appending, importing an exported log, verifying). The payload must be
    canonical bytes."""
    data = entry_bytes(seq, kind, effective_at, recorded_at, payload)
    digest = blake3(data).digest()
    return data, digest, blake3(previous + digest).digest()


def hex_hash(digest: bytes) -> str:
    """`blake3:<hex>`, the printed form of a chain or entry hash."""
    return "blake3:" + digest.hex()


def verify_entries(entries: Iterable[Entry], previous: bytes = GENESIS, start: int = 1) -> tuple[int, bytes]:
    """Re-compute every entry hash and chain link; return the head (seq, chain hash).

    Raises: IntegrityError naming the first sequence number whose stored hash does not re-compute (or the
    first gap), and how many entries from there on depend on it.
    """
    expected_seq = start
    chain = previous
    failure: str | None = None
    first_bad = 0
    last_seq = start - 1
    for seq, kind, effective_at, recorded_at, payload, stored_entry, stored_chain in entries:  # Entry fields
        last_seq = seq
        if failure is not None:
            continue
        if seq != expected_seq:
            failure, first_bad = f"sequence gap: expected seq {expected_seq}, found seq {seq}", seq
            continue
        _, recomputed, linked = seal(chain, seq, kind, effective_at, recorded_at, payload)
        if recomputed != stored_entry:
            failure, first_bad = (f"seq {seq}: entry hash does not re-compute (stored "
                                  f"{hex_hash(stored_entry)}, re-computed {hex_hash(recomputed)})"), seq
            continue
        chain = linked
        if chain != stored_chain:
            failure, first_bad = (f"seq {seq}: chain hash does not re-compute (stored "
                                  f"{hex_hash(stored_chain)}, re-computed {hex_hash(chain)})"), seq
            continue
        expected_seq += 1
    if failure is not None:
        affected = last_seq - first_bad + 1
        raise IntegrityError(f"chain broken at {failure}; seq {first_bad}..{last_seq} ({affected} entries) "
                             "depend on it")
    return expected_seq - 1, chain
