"""Audit views, pure like the record fold: the history of a subject with a one-line account of what each
event changed, and the difference between two rebuilds of a record.
"""

from __future__ import annotations

from typing import Iterable

import orjson

from ledger.events import (
    CITATION_OBSERVED,
    NOT_CHECKED,
    NOTICE_CHECKED,
    PAPER_SNAPSHOT,
    RESOLUTION_RECORDED,
    SOURCE_CHECKED,
    UNRESOLVED,
    Fact,
)
from ledger.standing_notices import describe_notice

from .text import UNTITLED, cited_label


def _resolution(r: dict) -> str:
    return r["status"] + (f" ({r['resolver_source']})" if r.get("resolver_source") else "")


def _changed_keys(old: dict, new: dict) -> str:
    keys = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    return ", ".join(keys) or "nothing"


def account(kind: str, old: dict | None, new: dict) -> str:
    """One line saying what this event changed, given the previous payload of the same kind and subject."""
    if kind == PAPER_SNAPSHOT:
        label = f"v{new.get('latest_version')}: {new.get('title')}"
        if old is None:
            return f"paper snapshot {label}"
        if old.get("latest_version") != new.get("latest_version"):
            return f"paper v{old.get('latest_version')} → v{new.get('latest_version')}"
        return f"paper snapshot re-observed; changed: {_changed_keys(old, new)}"
    if kind == CITATION_OBSERVED:
        citation = new["citation"]
        if old is None:
            return (f"observation added: arXiv:{citation['citing_paper']['arxiv_id']} cites {cited_label(citation) or UNTITLED} "
                    f"(reference {citation['reference_index']}, {citation['source']})")
        return f"citation re-observed; changed: {_changed_keys(old['citation'], citation)}"
    if kind == RESOLUTION_RECORDED:
        before = (old or {"resolution": UNRESOLVED})["resolution"]
        return f"resolution {_resolution(before)} → {_resolution(new['resolution'])}"
    if kind == NOTICE_CHECKED:
        before = (old or {"standing_notice": NOT_CHECKED})["standing_notice"]
        return f"standing notice {describe_notice(before)} → {describe_notice(new['standing_notice'])}"
    if kind == SOURCE_CHECKED:
        return f"{new['source']} swept" + (f" (previously {old['observed_at']})" if old else "")
    before = len(old["measurements"]) if old else 0
    return f"measurements from {new['source']}: {before} → {len(new['measurements'])}"


def history(facts: Iterable[Fact]) -> list[dict]:
    """Every event, oldest effective time first (ties: ledger order), each with its account."""
    rows = []
    previous: dict[tuple[str, str], dict] = {}
    for fact in sorted(facts, key=lambda f: (f.effective_key, f.seq)):
        payload = orjson.loads(fact.payload)
        key = (fact.kind, fact.subject)
        rows.append({"seq": fact.seq, "kind": fact.kind, "subject": key[1], "effective_at": fact.effective_at,
                     "recorded_at": fact.recorded_at, "account": account(fact.kind, previous.get(key), payload)})
        previous[key] = payload
    return rows


def _observations(record: dict | None) -> dict[tuple[str, str], dict]:
    if record is None:
        return {}
    return {(o["observation_id"], d): o for d in ("inbound", "outbound") for o in record[d]}


def _part_changes(old: dict, new: dict) -> list[str]:
    details = []
    for part in ("citation", "links", "resolution", "standing_notice"):
        if old[part] == new[part]:
            continue
        if part == "resolution":
            details.append(f"resolution: {_resolution(old[part])} → {_resolution(new[part])}")
        elif part == "standing_notice":
            details.append(f"standing_notice: {describe_notice(old[part])} → {describe_notice(new[part])}")
        else:
            details.append(f"{part}: changed {_changed_keys(old[part], new[part])}")
    return details


def diff(before: dict | None, after: dict) -> dict:
    """What changed between two rebuilds of one paper's record (`before` is None when it did not exist)."""
    old, new = _observations(before), _observations(after)
    added = [{"observation_id": k[0], "direction": k[1], "digest": new[k]["observation_digest"]}
             for k in sorted(new.keys() - old.keys())]
    removed = [{"observation_id": k[0], "direction": k[1], "digest": old[k]["observation_digest"]}
               for k in sorted(old.keys() - new.keys())]
    changed = []
    for k in sorted(old.keys() & new.keys()):
        if old[k]["observation_digest"] != new[k]["observation_digest"]:
            details = _part_changes(old[k], new[k])
            changed.append({"observation_id": k[0], "direction": k[1],
                            "parts": [d.split(":")[0] for d in details], "details": details,
                            "from_digest": old[k]["observation_digest"], "to_digest": new[k]["observation_digest"]})
    lanes_before = {lane["lane"]: lane for lane in (before or {}).get("coverage", [])}
    coverage = []
    for lane in after["coverage"]:
        was = lanes_before.get(lane["lane"])
        if was != lane:
            coverage.append({"lane": lane["lane"], "from": was, "to": lane})
    fields = [key for key in ("paper", "standing_sources", "external_citation_measurements")
              if (before or {}).get(key) != after[key]]
    return {
        "paper": after["paper"]["arxiv_id"],
        "from": {"as_of": before["as_of"] if before else None,
                 "context_digest": before["context_digest"] if before else None},
        "to": {"as_of": after["as_of"], "context_digest": after["context_digest"]},
        "added": added, "removed": removed, "changed": changed, "coverage": coverage, "fields": fields,
    }
