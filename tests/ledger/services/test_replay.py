"""Replaying every paper streams: peak memory follows one record, not the number of papers."""

import tracemalloc

import pytest

from ledger.core.times import When
from ledger.importing.importer import import_files
from ledger.services.replay import records_as_of
from ledger.storage.store import Store
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


def ledger_of(tmp_path, count: int) -> Store:
    store = Store.create(str(tmp_path / f"papers-{count}.db"))
    path = tmp_path / f"papers-{count}.jsonl"
    path.write_bytes(paper_lines(count))
    import_files(store, [str(path)])
    assert store.head()[0] == count * 6  # the size it claims: every paper and its five citations
    return store


def peak(replay) -> tuple[int, object]:
    """Peak traced memory while `replay()` runs, and what it returned."""
    tracemalloc.start()
    try:
        result = replay()
        return tracemalloc.get_traced_memory()[1], result
    finally:
        tracemalloc.stop()


def consume(records) -> tuple[int, bool]:
    """How many records, and whether they came in arXiv id order, holding none of them."""
    seen, in_order, last = 0, True, ""
    for paper, record in records:
        in_order = in_order and paper > last and record["paper"]["arxiv_id"] == paper
        seen, last = seen + 1, paper
    return seen, in_order


@pytest.mark.slow
def test_replaying_every_paper_keeps_memory_flat(tmp_path):
    # Five times the papers; nothing is held across papers (not records, not the list of ids). The
    # baseline reads one full page of ids (500) and has the one-time growth (pool registry, allocator) in it.
    as_of = When("2026-08-09T00:00:00Z", "2026-08-09T00:00:00.000000Z")
    stores = {count: ledger_of(tmp_path, count) for count in (500, 2500)}
    for store in stores.values():  # warm up caches (SQLAlchemy's statement cache) before measuring
        for _ in zip(range(3), records_as_of(store, as_of)):
            pass
    measured = {}
    for count, store in stores.items():
        store.statements = 0
        measured[count], (seen, in_order) = peak(lambda: consume(records_as_of(store, as_of)))  # noqa: B023 (called here)
        # It exercised its case: every paper was rebuilt, in id order, its ids read in pages of 500.
        assert (seen, in_order) == (count, True)
        assert store.statements >= count + count // 500
    small, large = measured[500], measured[2500]
    assert large < small * 1.3, (small, large)
    # And the check can fail: holding every record of the larger ledger, as a replay that did not stream
    # would, peaks far above the bound (some 300 times the baseline when measured).
    held, records = peak(lambda: list(records_as_of(stores[2500], as_of)))
    assert len(records) == 2500 and held > small * 10, (small, held)
