"""Test helpers: build consistent records and event lines without going through the ledger."""

from __future__ import annotations

import copy
import json

from ledger.core.canonical import canonical
from ledger.model.published import context_digest, observation_digest
from tests.conftest import SEED_004


def seed_record() -> dict:
    return json.loads(SEED_004.read_bytes())


def redigest(record: dict) -> dict:
    """Re-compute every digest so that a changed record is self-consistent."""
    record = copy.deepcopy(record)
    for direction in ("inbound", "outbound"):
        for obs in record[direction]:
            obs["observation_digest"] = observation_digest(obs)
    record["context_digest"] = context_digest(record)
    return record


def write_record(path, record: dict) -> str:
    path.write_bytes(canonical(record))
    return str(path)


def event_line(kind: str, payload: dict, effective_at: str | None = None) -> bytes:
    line = {"kind": kind, "payload": payload}
    if effective_at is not None:
        line["effective_at"] = effective_at
    return canonical(line) + b"\n"
