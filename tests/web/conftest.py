"""A ledger worth publishing: seed 004, the facts of the seed 000 and 003 pages, later corrections to seed 004
(a new resolution, a second version, a notice check), and a paper whose strings are markup. Its site is
served through the ASGI test client over every configured backend, with a signing key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from ledger.importing.importer import import_files
from ledger.log.signed_notes import generate_signer
from tests.conftest import PAPER_004, SEED_000, SEED_003, SEED_004
from tests.helpers import event_line
from tests.page_facts import page_events

SCRIPT_PAPER = "2601.00001"
SCRIPT_TITLE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"> & "quotes"'
LATER = "2026-08-25"


def later_lines() -> bytes:
    """Facts that arrive after seed 004 was published: they change its record from 20 August on."""
    seed = json.loads(SEED_004.read_bytes())
    first = seed["inbound"][0]["observation_id"]
    paper = dict(seed["paper"], latest_version=2, snapshot_observed_at="2026-08-21T09:00:00Z")
    notice = {"events": [{"date": "2026-08-19", "source": "crossref", "type": "correction"}],
              "observation": "1 event found in the named queried sources as of 2026-08-22T06:00:00Z.",
              "reason": None, "source_receipts": [{"observed_at": "2026-08-22T06:00:00Z", "source": "crossref"}],
              "state": "measured"}
    me = {"arxiv_id": SCRIPT_PAPER, "snapshot_observed_at": "2026-09-01T00:00:00Z", "title": SCRIPT_TITLE}
    citation = {"cited_paper": None, "cited_work": {"title": "</li><script>window.__pwned = 3</script>"},
                "citing_paper": me, "reference_index": 1, "source": "pdf_text",
                "source_observed_at": "2026-09-01T00:00:00Z"}
    return b"".join([
        event_line("resolution.recorded", {"observation_id": first, "resolution": {
            "observed_at": "2026-08-20T12:00:00Z", "resolver_source": "local_arxiv", "status": "verified_fuzzy"}}),
        event_line("paper.snapshot", paper),
        event_line("notice.checked", {"observation_id": first, "standing_notice": notice}),
        event_line("paper.snapshot", {**me, "latest_version": 1}),
        event_line("citation.observed", {"citation": citation, "observation_id": "script-out-1"}),
    ])


def page_papers(tmp_path: Path) -> list[tuple[str, str, Path]]:
    """(arxiv id, as-of date, event lines file) for the facts the seed 000 and 003 pages show."""
    found = []
    for seed in (SEED_000, SEED_003):
        arxiv_id, as_of, lines = page_events(seed.read_text(encoding="utf-8"))
        path = tmp_path / f"{arxiv_id}.jsonl"
        path.write_bytes(lines)
        found.append((arxiv_id, as_of, path))
    return found


def fill(store, tmp_path: Path) -> dict[str, list[str]]:
    """Import everything; return the dates worth asking each paper's record about."""
    later = tmp_path / "later.jsonl"
    later.write_bytes(later_lines())
    pages = page_papers(tmp_path)
    import_files(store, [str(SEED_004)] + [str(p) for _, _, p in pages] + [str(later)])
    dates = {PAPER_004: ["2026-07-07", "2026-08-06", "2026-08-09T16:41:00Z", "2026-08-09", "2026-08-20",
                         "2026-08-21T09:00:00+00:00", LATER],
             SCRIPT_PAPER: ["2026-09-01"]}
    for arxiv_id, as_of, _ in pages:
        dates[arxiv_id] = [as_of]
    return dates


@pytest.fixture
def key_file(tmp_path) -> Path:
    signer = generate_signer("example.org/ledger")
    path = tmp_path / "ledger.key"
    path.write_text(f"{signer}\n")
    (tmp_path / "ledger.vkey").write_text(f"{signer.verifier}\n")
    return path


@pytest.fixture
def signer(key_file):
    from ledger.log.signed_notes import parse_signer

    return parse_signer(key_file.read_text())


@pytest.fixture
def rich(store, tmp_path):
    """(store, dates by paper)."""
    return store, fill(store, tmp_path)


@pytest.fixture
def client(rich, signer):
    from ledger.web.app import create_app

    store, _ = rich
    return TestClient(create_app(store, signer))


@pytest.fixture
def unused_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
