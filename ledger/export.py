"""The exported form of one log entry: one canonical JSON line with its hashes.

The payload is embedded as its stored canonical bytes, so the line is canonical and `import` can
re-compute every hash from it.
"""

from __future__ import annotations

import orjson

from .canonical import canonical
from .chain import Entry, hex_hash


def export_line(entry: Entry) -> bytes:
    return canonical({
        "chain_hash": hex_hash(entry.chain_hash),
        "effective_at": entry.effective_at,
        "entry_hash": hex_hash(entry.entry_hash),
        "kind": entry.kind,
        "payload": orjson.Fragment(entry.payload),
        "recorded_at": entry.recorded_at,
        "seq": entry.seq,
    }) + b"\n"
