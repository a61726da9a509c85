"""Test helpers: build consistent records and event lines without going through the ledger."""

from __future__ import annotations

import copy
import json
from datetime import datetime

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


# -- records of seed 004's paper built by hand, as a publisher's independent model of the format -------------
# Synthetic citing papers 2608.NNNNN sort after every citing paper of seed 004 (the last is 2607.05439).
SWEEP = "2026-08-09T06:31:02.800959+00:00"  # seed 004's standing-notices sweep
PAGE_CAP = 100


def citing_observation(n: int, observed_at: str, checked: bool = True, month: str = "2608") -> dict:
    """Seed 004's first inbound observation, as if cited by synthetic paper `month`.n, observed at `observed_at`;
    its notice is the seed's (checked at the sweep) or, unless `checked`, not checked."""
    obs = copy.deepcopy(json.loads(SEED_004.read_bytes())["inbound"][0])
    arxiv_id = f"{month}.{n:05d}"
    obs["citation"]["citing_paper"].update(arxiv_id=arxiv_id, title=f"Citing paper {n}")
    obs["citation"]["source_observed_at"] = observed_at
    obs["links"]["citing_paper"] = f"/paper/{arxiv_id}"
    obs["observation_id"] = f"00000000-0000-4000-8000-{n:012d}"
    if not checked:
        obs["standing_notice"] = {"events": [], "reason": "not_checked", "source_receipts": [], "state": "unavailable"}
    obs["observation_digest"] = observation_digest(obs)
    return obs


def published(as_of: str, inbound: list[dict]) -> dict:
    """Seed 004's record as of `as_of` whose inbound observations are `inbound` (any order): the first
    PAGE_CAP in page order listed, every lane counting all of them, digests re-computed."""
    record = seed_record()
    ordered = sorted(inbound, key=lambda o: (o["citation"]["citing_paper"]["arxiv_id"],
                                             o["citation"]["reference_index"], o["observation_id"]))
    listed = ordered[:PAGE_CAP]
    checked = sum(1 for o in ordered if o["standing_notice"]["reason"] != "not_checked")
    record["as_of"], record["inbound"] = as_of, listed
    for lane in record["coverage"]:
        if lane["lane"] == "standing_notices":
            lane.update(denominator=len(ordered), records_observed=checked)
        elif lane["lane"] == "inbound_itemization":
            lane.update(denominator=len(ordered), records_observed=len(listed),
                        source_observed_at=max((o["citation"]["source_observed_at"] for o in listed), default=None))
    day = datetime.fromisoformat(as_of.replace("Z", "+00:00"))
    record["thesis"] = (f"As of {day.day} {day:%B %Y}, this Paper Citation Record lists 0 of 0 outbound references "
                        f"and {len(listed)} inbound Pith citation observations for arXiv:2407.20018.")
    return redigest(record)


def one_entry_site(site, leaf: bytes, key: str = "ledger.key") -> None:
    """A published folder `site` of a log holding the single entry `leaf`: its level-0 tile, its entry bundle and a
    checkpoint signed over them with `key`, as a log whose key signed any bytes would publish them."""
    from ledger.log.merkle import leaf_hash
    from ledger.log.signed_notes import Checkpoint
    from ledger.services.keys import load_signer

    (site / "tile" / "0" / "000.p").mkdir(parents=True)
    (site / "tile" / "entries" / "000.p").mkdir(parents=True)
    (site / "tile" / "0" / "000.p" / "1").write_bytes(leaf_hash(leaf))
    (site / "tile" / "entries" / "000.p" / "1").write_bytes(len(leaf).to_bytes(2, "big") + leaf)
    signer = load_signer(key)
    (site / "checkpoint").write_text(signer.sign(Checkpoint(signer.name, 1, leaf_hash(leaf)).text()))


def stop_process(process) -> None:
    """End a server started in its own session: SIGTERM to its group, SIGKILL when it has not exited in 20 s."""
    import os
    import signal
    import subprocess

    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
