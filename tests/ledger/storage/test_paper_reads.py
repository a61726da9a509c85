"""One paper's events are read through the indexes, not by reading the log: the rows a paper's reads fetch from the
event table, as the database itself counts them in the reading transaction (`pg_stat_xact_user_tables`), follow
the paper, not the log. On PostgreSQL, where `subject IN (subquery)` had every event of the log filtered for each
paper (a rebuild's cost grew with the log: docs/scale.md)."""

from __future__ import annotations

import pytest

from ledger.importing.importer import import_files
from tests.conftest import POSTGRES
from tests.helpers import event_line

pytestmark = pytest.mark.skipif(not POSTGRES, reason="PostgreSQL's own counts: set LEDGER_TEST_POSTGRES")

PAPERS = [f"2603.{n:05d}" for n in range(1, 41)]


def corpus() -> bytes:
    """40 papers, each with a snapshot and 30 outbound citations, each citation resolved: 2,440 events."""
    lines = []
    for paper in PAPERS:
        me = {"arxiv_id": paper, "snapshot_observed_at": "2026-08-01T00:00:00Z", "title": f"Paper {paper}"}
        lines.append(event_line("paper.snapshot", {**me, "latest_version": 1}))
        for ref in range(1, 31):
            citation = {"cited_paper": None, "cited_work": {"title": f"Work {ref}"}, "citing_paper": {**me, "version": 1},
                        "reference_index": ref, "source": "pdf_text", "source_observed_at": "2026-08-01T00:00:00Z"}
            lines.append(event_line("citation.observed", {"citation": citation, "observation_id": f"{paper}/{ref}"}))
            lines.append(event_line("resolution.recorded", {"observation_id": f"{paper}/{ref}", "resolution": {
                "observed_at": "2026-08-02T00:00:00Z", "resolver_source": None, "status": "unresolved"}}))
    return b"".join(lines)


def test_a_papers_reads_fetch_its_events_not_the_logs(store, tmp_path):
    if store.dialect != "postgresql":
        pytest.skip("PostgreSQL's own counts (SQLite's plan reads the two indexes already)")
    (tmp_path / "corpus.jsonl").write_bytes(corpus())
    import_files(store, [str(tmp_path / "corpus.jsonl")])
    with store.reading() as cursor:
        cursor.execute("ANALYZE")  # as autovacuum leaves a table this size: the plan of a ledger in use
    size = store.head()[0]
    assert size == 40 * 61
    for paper in PAPERS[::13]:
        with store.snapshot() as cursor:  # one transaction: the counts below are its reads only
            facts = cursor.paper_facts(paper)
            version = cursor.paper_version(paper)
            summary = cursor.paper_summary(paper, "9999")
            seqs = cursor.paper_seqs(paper)
            read = cursor.execute("SELECT seq_tup_read, idx_tup_fetch FROM pg_stat_xact_user_tables "
                                  "WHERE relname = 'events' AND schemaname = current_schema()").fetchone()
        assert len(facts) == 61 and version == (61, facts[-1].seq) and summary[1] == 61 and len(seqs) == 61
        fetched = read[0] + (read[1] or 0)  # read by a scan, fetched through an index
        # Four reads of the paper's 61 events: a few hundred rows at most (a bitmap's rechecks count), where
        # reading the log for each of them is 4 x 2,440.
        assert 61 <= fetched < size / 2, f"{paper}: {read} rows of the event table read for 4 reads of 61 events"
