"""The exported form of one log entry: one canonical JSON line with its hashes.

The payload is embedded as its stored canonical bytes, so the line is canonical and `import` can
re-compute every hash from it.
"""

from __future__ import annotations

from ledger.core.canonical import canonical
from ledger.log.chain import Entry, entry_object, hex_hash


def export_line(entry: Entry) -> bytes:
    """The entry's own fields (`chain.entry_object`) plus its two hashes, for a stored entry."""
    line = entry_object(entry.seq, entry.kind, entry.effective_at, entry.recorded_at, entry.payload)
    line.update(chain_hash=hex_hash(entry.chain_hash), entry_hash=hex_hash(entry.entry_hash))
    return canonical(line) + b"\n"
