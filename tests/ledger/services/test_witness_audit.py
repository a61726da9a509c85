"""The auditing witness (`witness serve --audit`): what it cosigns once the entries and the paper index hold,
and what it refuses, with which status and line, and keeps as evidence.

Each log is a static folder written from a real ledger's entries (tests.audit_sites); the witness's state and
its copy of each log are real SQLite files; requests go through its HTTP application, its audit worker a real
thread.
"""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from ledger.importing.importer import import_files
from ledger.log.cosignature import generate_cosigner
from ledger.log.signed_notes import generate_signer, open_note
from ledger.services.cosigning_witness import Witness, submission
from ledger.services.witness_audit import Auditor, folder_of
from ledger.storage.store import Store
from ledger.web.witness_app import create_witness_app
from tests.audit_sites import contradicting, index_root, leaves_of, tree_root, write_site
from tests.conftest import SEED_004
from tests.helpers import event_line

COSIGNER = generate_cosigner("witness.example.org/w1")


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    """The seed's 40 events and a 41st, a new version of the seed's paper."""
    folder = tmp_path_factory.mktemp("log")
    store = Store.create(str(folder / "ledger.db"))
    import_files(store, [str(SEED_004)])
    (folder / "more.jsonl").write_bytes(event_line("paper.snapshot", {
        "arxiv_id": "2601.00001", "latest_version": 1, "snapshot_observed_at": "2026-09-01T00:00:00Z",
        "title": "More"}))
    import_files(store, [str(folder / "more.jsonl")])
    yield store
    store.close()


class Audited:
    """A witness auditing the log `example.org/<name>`, published at tmp_path/<name>."""

    def __init__(self, tmp_path, name: str = "a"):
        self.signer = generate_signer(f"example.org/{name}")
        self.site = tmp_path / name
        self.site.mkdir()
        state = str(tmp_path / "witness.db")
        self.auditor = Auditor(self.signer.name, str(self.site), self.signer.verifier, folder_of(state, self.signer.name))
        self.auditor.start()
        self.witness = Witness(COSIGNER, {self.signer.name: self.signer.verifier}, state, new=True,
                               audits={self.signer.name: self.auditor})
        self.client = TestClient(create_witness_app(self.witness))

    def push(self, note: str, old: int = 0, proof: list[bytes] = ()):
        return self.client.post("/add-checkpoint", content=submission(old, list(proof), note))


def test_an_honest_log_is_cosigned_with_its_paper_index_note(log, tmp_path):
    audited = Audited(tmp_path)
    leaves = leaves_of(log, 40)
    note = write_site(audited.site, audited.signer, leaves, index_root(log, 40))
    answer = audited.push(note)
    assert answer.status_code == 200, answer.text
    assert COSIGNER.key.timestamp(open_note(note, audited.signer.verifier), answer.text.strip()) is not None
    index_note = (audited.site / "paper-index" / "40").read_text()
    line = audited.client.post("/paper-index", content=index_note)
    assert line.status_code == 200, line.text
    assert COSIGNER.key.timestamp(open_note(index_note, audited.signer.verifier), line.text.strip()) is not None
    assert audited.witness.held(audited.signer.name)[0] == 40
    # Grown by one entry: only the new one is fetched and checked, and the index note of 41 is cosigned.
    more = write_site(audited.site, audited.signer, leaves_of(log, 41), index_root(log, 41))
    from tests.ledger.services.test_witness import proof
    grown = audited.push(more, 40, proof(log, 40, 41))
    assert grown.status_code == 200, grown.text
    assert audited.client.post("/paper-index", content=index_note).status_code == 404  # the older tree's
    assert audited.witness.evidence() == []


def test_a_non_event_entry_is_refused_naming_its_index_and_kept(log, tmp_path):
    audited = Audited(tmp_path)
    leaves = leaves_of(log, 40) + [b"not an event"]
    note = write_site(audited.site, audited.signer, leaves, index_root(log, 40))
    answer = audited.push(note)
    assert answer.status_code == 422 and "log entry 41:" in answer.text, answer.text
    assert len(answer.text.strip().split("\n")) == 1
    [(origin, reason, kept, held)] = audited.witness.evidence()
    assert origin == audited.signer.name and "log entry 41" in reason and kept.startswith(note.split("\n\n")[0])
    assert '"seq":41' in held
    assert audited.witness.held(audited.signer.name) is None  # nothing cosigned


def test_an_event_contradicting_an_earlier_fact_is_refused_naming_both(log, tmp_path):
    audited = Audited(tmp_path)
    leaves = leaves_of(log, 40)
    leaves.append(contradicting(leaves, 1))
    note = write_site(audited.site, audited.signer, leaves, index_root(log, 40))
    answer = audited.push(note)
    assert answer.status_code == 422, answer.text
    assert "contradicts event seq 1" in answer.text and "seq 41" in answer.text, answer.text


def test_an_index_note_leaving_an_event_out_is_refused_naming_the_paper(log, tmp_path):
    audited = Audited(tmp_path)
    first = write_site(audited.site, audited.signer, leaves_of(log, 40), index_root(log, 40))
    assert audited.push(first).status_code == 200
    # Tree 41 adds an event of 2601.00001; its note gives the index of tree 40: that event left out.
    note = write_site(audited.site, audited.signer, leaves_of(log, 41), index_root(log, 40))
    from tests.ledger.services.test_witness import proof
    answer = audited.push(note, 40, proof(log, 40, 41))
    assert answer.status_code == 422, answer.text
    assert "differs at paper arXiv:2601.00001" in answer.text, answer.text
    assert "note gives root" in answer.text and "the entries give" in answer.text
    assert audited.witness.held(audited.signer.name)[0] == 40


def test_a_log_without_an_index_note_for_the_tree_gets_its_own_reason(log, tmp_path):
    audited = Audited(tmp_path)
    note = write_site(audited.site, audited.signer, leaves_of(log, 40), None)
    answer = audited.push(note)
    assert answer.status_code == 424 and "gives no paper index note for tree 40" in answer.text, answer.text


def test_a_missing_tile_is_refused_and_a_huge_one_is_unreadable(log, tmp_path):
    audited = Audited(tmp_path)
    note = write_site(audited.site, audited.signer, leaves_of(log, 40), index_root(log, 40))
    tile = audited.site / "tile" / "0" / "000.p" / "40"
    data = tile.read_bytes()
    tile.write_bytes(data + b"\0" * 9000)  # over a tile's 8 KiB cap: not read whole; 502, remembered by nobody
    huge = audited.push(note)
    assert huge.status_code == 502 and "limit" in huge.text, huge.text
    tile.unlink()
    missing = audited.push(note)
    assert missing.status_code == 422 and "does not serve tile/0/000.p/40" in missing.text, missing.text
    tile.write_bytes(data)
    assert audited.push(note).status_code == 422  # a refusal is the tree's: the same tree stays refused


def test_a_split_view_of_the_same_size_is_caught_as_today(log, tmp_path):
    audited = Audited(tmp_path)
    note = write_site(audited.site, audited.signer, leaves_of(log, 40), index_root(log, 40))
    assert audited.push(note).status_code == 200
    other = leaves_of(log, 39) + [b"{}"]
    from ledger.log.signed_notes import Checkpoint
    forked = audited.signer.sign(Checkpoint(audited.signer.name, 40, tree_root(other)).text())
    answer = audited.push(forked, 40)
    assert answer.status_code == 422 and "the log has forked" in answer.text, answer.text
    assert [reason for _, reason, _, _ in audited.witness.evidence()] == [
        "the size held (40) with another root: the log has forked"]


def test_with_a_poll_interval_the_tree_is_audited_before_it_is_asked_for(log, tmp_path):
    import time

    signer = generate_signer("example.org/p")
    site = tmp_path / "p"
    site.mkdir()
    note = write_site(site, signer, leaves_of(log, 40), index_root(log, 40))
    state = str(tmp_path / "witness.db")
    auditor = Auditor(signer.name, str(site), signer.verifier, folder_of(state, signer.name), poll=0.05)
    auditor.start()
    from ledger.log.signed_notes import verify_checkpoint
    checkpoint = verify_checkpoint(note, signer.verifier)
    deadline = time.monotonic() + 60
    while auditor.outcome(checkpoint) is None:  # nobody asked: the worker read /checkpoint itself
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert auditor.outcome(checkpoint).status == 200
    witness = Witness(COSIGNER, {signer.name: signer.verifier}, state, new=True, audits={signer.name: auditor})
    answer = TestClient(create_witness_app(witness)).post("/add-checkpoint", content=submission(0, [], note))
    assert answer.status_code == 200, answer.text


def test_a_plain_witness_has_no_paper_index_route_and_its_state_no_new_table(log, tmp_path):
    import sqlite3

    signer = generate_signer("example.org/plain")
    witness = Witness(COSIGNER, {signer.name: signer.verifier}, str(tmp_path / "plain.db"), new=True)
    client = TestClient(create_witness_app(witness))
    note = write_site(tmp_path, signer, leaves_of(log, 40), index_root(log, 40))
    assert client.post("/add-checkpoint", content=submission(0, [], note)).status_code == 200
    other = client.post("/paper-index", content=(tmp_path / "paper-index" / "40").read_text())
    assert other.status_code == 404 and other.text == "no such path: the witness answers POST /add-checkpoint\n"
    with sqlite3.connect(tmp_path / "plain.db") as db:
        assert {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")} == {
            "logs", "cosigned", "evidence"}


def test_serve_gives_the_paper_index_note_of_each_size_it_holds(log):
    from ledger.services.proofs import checkpoint
    from ledger.web.app import create_app

    signer = generate_signer("example.org/ledger")
    client = TestClient(create_app(log, signer))
    for size in (1, 40, 41):
        answer = client.get(f"/paper-index/{size}")
        assert answer.status_code == 200 and answer.text == checkpoint(log, signer, size, paper_index=True)[0]
    assert client.get("/paper-index/42").status_code == 404  # a tree the log does not hold
    assert client.get("/paper-index/040").status_code == 400
    assert TestClient(create_app(log, None)).get("/paper-index/40").status_code == 404  # no key: nothing signed
