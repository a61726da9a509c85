"""Replaying every paper streams: peak memory follows one record, not the number of papers."""

import tracemalloc

from ledger.importer import import_files
from ledger.replay import records_as_of
from ledger.store import Store
from tests.helpers import event_line


def paper_lines(count: int) -> bytes:
    lines = []
    for n in range(count):
        arxiv_id = f"2601.{n:05d}"
        lines.append(event_line("paper.snapshot", {"arxiv_id": arxiv_id, "snapshot_observed_at": "2026-08-01T00:00:00Z",
                                                   "title": f"Paper {n} " + "x" * 200, "latest_version": 1}))
        for ref in range(5):
            citation = {"cited_paper": None, "cited_work": {"title": f"Work {ref} " + "y" * 200},
                        "citing_paper": {"arxiv_id": arxiv_id, "snapshot_observed_at": "2026-08-01T00:00:00Z"},
                        "reference_index": ref, "source": "pdf_text", "source_observed_at": "2026-08-02T00:00:00Z"}
            lines.append(event_line("citation.observed", {"citation": citation, "observation_id": f"{arxiv_id}-{ref}"}))
    return b"".join(lines)


def peak_while_replaying(tmp_path, count: int) -> int:
    store = Store.create(str(tmp_path / f"papers-{count}.db"))
    path = tmp_path / f"papers-{count}.jsonl"
    path.write_bytes(paper_lines(count))
    import_files(store, [str(path)])
    # Warm up caches (SQLAlchemy's statement cache) before measuring.
    for _ in zip(range(3), records_as_of(store, "2026-08-09T00:00:00Z", "2026-08-09T00:00:00.000000Z")):
        pass
    tracemalloc.start()
    seen = sum(1 for _ in records_as_of(store, "2026-08-09T00:00:00Z", "2026-08-09T00:00:00.000000Z"))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert seen == count
    return peak


def test_replaying_every_paper_keeps_memory_flat(tmp_path):
    # Five times the papers; nothing is held across papers (not records, not the list of ids). The
    # baseline reads one full page of ids (500) and has the one-time growth (pool registry, allocator) in it.
    small, large = peak_while_replaying(tmp_path, 500), peak_while_replaying(tmp_path, 2500)
    assert large < small * 1.3, (small, large)
