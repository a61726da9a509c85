"""Serving without rebuilding (`web.answers`): a page asked again at the same as-of is sent from the cache, until a
fact of its paper (or, for what shows the log's size, any fact) is appended, by this process or another; an
If-None-Match of its ETag is a 304 with no rebuild; a page as of the request instant is never kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from fastapi.testclient import TestClient

from ledger.log.signed_notes import generate_signer
from ledger.storage.store import Store
from ledger.web.answers import Answers
from ledger.web.app import create_app
from ledger.web.urls import integrity_url, record_url
from tests.conftest import AS_OF_004, PAPER_004, SEED_004
from tests.helpers import event_line

LATER = "2026-08-25"


@pytest.fixture
def served(cli):
    assert cli("init").exit_code == 0
    assert cli("import", str(SEED_004)).exit_code == 0
    app = create_app(cli.location, generate_signer("example.org/ledger"))
    with TestClient(app) as client:
        yield client, app.state.ledger.answers


def append_elsewhere(cli, tmp_path, *lines: bytes) -> None:
    """Append in another process, as a second writer would: the server learns of it only through the store."""
    path = write_lines(tmp_path, *lines)
    done = subprocess.run([sys.executable, "-m", "ledger.cli", "--db", cli.location, "import", str(path)],
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr


def write_lines(tmp_path, *lines: bytes):
    path = tmp_path / f"more-{len(os.listdir(tmp_path))}.jsonl"
    path.write_bytes(b"".join(lines))
    return path


def sweep(paper: str, at: str) -> bytes:
    return event_line("source.checked", {"observed_at": at, "paper": paper, "source": "crossref"})


def test_a_record_asked_again_is_not_rebuilt(served):
    client, answers = served
    first = client.get(record_url(PAPER_004, LATER, html=False))
    rendered = answers.renders
    again = client.get(record_url(PAPER_004, LATER, html=False))
    assert (first.status_code, again.status_code) == (200, 200) and again.content == first.content
    assert answers.renders == rendered  # answered from the cache
    assert client.get(record_url(PAPER_004, AS_OF_004, html=False)).content == SEED_004.read_bytes()
    assert answers.renders == rendered + 1  # another as-of is another answer


def test_if_none_match_is_a_304_without_a_rebuild(served):
    client, answers = served
    first = client.get(record_url(PAPER_004, LATER, html=False))
    rendered = answers.renders
    revalidated = client.get(record_url(PAPER_004, LATER, html=False), headers={"if-none-match": first.headers["etag"]})
    assert (revalidated.status_code, revalidated.content) == (304, b"")
    assert answers.renders == rendered


@pytest.mark.slow
def test_a_fact_appended_by_another_process_is_served_on_the_next_request(served, cli, tmp_path):
    client, answers = served
    before = client.get(record_url(PAPER_004, LATER, html=False)).json()
    append_elsewhere(cli, tmp_path, sweep(PAPER_004, "2026-08-20T00:00:00Z"))
    after = client.get(record_url(PAPER_004, LATER, html=False)).json()
    assert [s["observed_at"] for s in after["standing_sources"] if s["source"] == "crossref"] == ["2026-08-20T00:00:00Z"]
    assert after != before


@pytest.mark.slow
def test_another_papers_fact_leaves_the_record_and_the_integrity_page_kept(served, cli, tmp_path):
    client, answers = served
    client.get(record_url(PAPER_004, LATER, html=False))
    integrity = client.get(integrity_url(PAPER_004, LATER, html=False))
    rendered = answers.renders
    snapshot = {"arxiv_id": "2501.00001", "snapshot_observed_at": "2026-08-01T00:00:00Z", "title": "Another"}
    append_elsewhere(cli, tmp_path, event_line("paper.snapshot", snapshot))
    client.get(record_url(PAPER_004, LATER, html=False))
    again = client.get(integrity_url(PAPER_004, LATER, html=False))
    assert answers.renders == rendered  # both depend on the paper's own facts only: its evidence is at its size
    assert again.content == integrity.content and again.json()["index"]["tree_size"] < json.loads(cli("head", "--json").stdout)["seq"]


@pytest.mark.slow
def test_a_page_as_of_the_request_instant_is_never_kept(served):
    client, answers = served
    client.get(f"/paper/{PAPER_004}/citation-record.json")
    rendered = answers.renders
    client.get(f"/paper/{PAPER_004}/citation-record.json")
    assert answers.renders == rendered + 1


def test_the_cache_holds_at_most_its_budget(served):
    client, _ = served
    small = Answers(budget=25_000)  # a record of seed 004 is about 20 KB
    client.app.state.ledger.answers = small
    for day in ("2026-08-10", "2026-08-11", "2026-08-12"):
        assert client.get(record_url(PAPER_004, day, html=False)).status_code == 200
    assert len(small.kept) == 1 and 0 < small.held <= 25_000
    assert small.renders == 3


@pytest.mark.slow
def test_a_url_answered_before_is_answered_before_routing_with_the_same_headers(served, cli, tmp_path):
    client, answers = served
    url = record_url(PAPER_004, LATER, html=False)
    full = client.get(url)
    fast = client.get(url)
    assert answers.fast == 1 and fast.content == full.content
    assert {k: v for k, v in fast.headers.items() if k != "date"} == {k: v for k, v in full.headers.items() if k != "date"}
    assert client.get(url, headers={"if-none-match": full.headers["etag"]}).status_code == 304
    assert answers.fast == 2
    append_elsewhere(cli, tmp_path, sweep(PAPER_004, "2026-08-21T00:00:00Z"))
    changed = client.get(url)  # not fresh: the full route renders it again
    assert answers.fast == 2 and changed.content != full.content
    assert client.get(url + "&bogus=1").status_code == 400  # another URL: routed, and refused as before


@pytest.mark.slow
def test_the_commit_counter_moves_with_every_commit_of_another_process(cli, tmp_path):
    assert cli("init").exit_code == 0
    store = Store.open(cli.location)
    commits = store.backend.watch(store.url)
    if commits is None:
        assert store.dialect == "postgresql"  # no counter: every request reads the paper's version instead
        return
    try:
        seen = [commits()]
        for day in ("2026-08-20", "2026-08-21"):
            append_elsewhere(cli, tmp_path, sweep(PAPER_004, f"{day}T00:00:00Z"))
            seen += [commits(), commits()]
        assert seen[1] == seen[2] != seen[0] and seen[3] == seen[4] != seen[2]  # moved once per commit, then still
    finally:
        commits.close()
        store.close()


def test_an_unchanged_commit_counter_answers_without_reading_the_store(served, cli, tmp_path):
    client, answers = served
    ledger = client.app.state.ledger
    if ledger.commits is None:
        pytest.skip("no commit counter on this backend: each request reads the paper's version")
    url = record_url(PAPER_004, LATER, html=False)
    full = client.get(url)
    client.get(url)  # checked against the store once, and stamped with the counter
    read = ledger.site.store.statements
    fast = client.get(url)
    assert ledger.site.store.statements == read and answers.fast == 2 and fast.content == full.content
    assert client.get(url, headers={"if-none-match": full.headers["etag"]}).status_code == 304
    assert ledger.site.store.statements == read
    assert cli("import", str(write_lines(tmp_path, sweep(PAPER_004, "2026-08-22T00:00:00Z")))).exit_code == 0
    changed = client.get(url)  # appended in this process, through another connection: seen at once
    assert [s["observed_at"] for s in changed.json()["standing_sources"] if s["source"] == "crossref"] == \
        ["2026-08-22T00:00:00Z"]


@pytest.mark.slow
def test_another_papers_commit_costs_one_check_and_the_record_stays_kept(served, cli, tmp_path):
    client, answers = served
    url = record_url(PAPER_004, LATER, html=False)
    full = client.get(url)
    client.get(url)
    rendered, fast = answers.renders, answers.fast
    snapshot = {"arxiv_id": "2501.00002", "snapshot_observed_at": "2026-08-01T00:00:00Z", "title": "Other"}
    append_elsewhere(cli, tmp_path, event_line("paper.snapshot", snapshot))
    assert client.get(url).content == full.content and client.get(url).content == full.content
    assert (answers.renders, answers.fast) == (rendered, fast + 2)  # checked once, then stamped again
