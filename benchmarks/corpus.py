"""A publisher's corpus on disk, as a user hands it to `ledger import`: published records and event lines.

`write_corpus` builds a ledger from the generator's first `papers` papers (through the real append path),
then writes what a user would import into a new ledger:

- `events.jsonl`: the ledger's export with the hashes stripped (no `seq`, `recorded_at`, `entry_hash`,
  `chain_hash`): plain event lines, every generated fact with its history (changed resolutions, every sweep);
- `records/<arxiv_id>.json`: each paper's published record as of AS_OF, exactly as `replay --out` writes it,
  for every paper whose record itemizes all its observations (a record cut at the page cap of 100 cannot be
  rebuilt from itself alone, so a new ledger refuses it, as it should).
"""

from __future__ import annotations

from pathlib import Path

import orjson

from benchmarks.common import AS_OF
from benchmarks.generate import generate_papers
from ledger.core.canonical import canonical
from ledger.core.times import When
from ledger.importing.importer import Parsed, import_inputs
from ledger.log.export import export_line
from ledger.model.events import Event
from ledger.services.replay import records_as_of
from ledger.storage.store import Store


def event_line(entry_line: bytes) -> bytes:
    """An exported line without the ledger's own fields: what a publisher's pipeline would emit."""
    entry = orjson.loads(entry_line)
    return canonical({"effective_at": entry["effective_at"], "kind": entry["kind"], "payload": entry["payload"]}) + b"\n"


def write_corpus(folder: Path, papers: int, seed: int = 300) -> tuple[Path, Path, Path, int, int]:
    """(events file, records folder, the ledger they came from, event lines, records written) for the first
    `papers` generated papers."""
    folder.mkdir(parents=True, exist_ok=True)
    events: list[Event] = generate_papers(papers, seed=seed)
    store = Store.create(str(folder / "source.db"))
    for i in range(0, len(events), 5000):
        import_inputs(store, [Parsed("corpus", events=[(0, e) for e in events[i:i + 5000]])])
    lines = folder / "events.jsonl"
    with lines.open("wb") as out:
        for entry in store.entries():
            out.write(event_line(export_line(entry)))
    records = folder / "records"
    records.mkdir(exist_ok=True)
    written = 0
    for arxiv_id, record in records_as_of(store, When.at(AS_OF)):
        lanes = {lane["lane"]: lane for lane in record["coverage"]}
        if lanes["inbound_itemization"]["denominator"] > len(record["inbound"]):
            continue
        (records / f"{arxiv_id}.json").write_bytes(canonical(record))
        written += 1
    store.close()
    return lines, records, folder / "source.db", len(events), written
