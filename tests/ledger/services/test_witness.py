"""The witness (C2SP tlog-witness): what it cosigns, what it refuses with which status, and what it keeps.

A real ledger (SQLite, the seed's 40 events) gives the checkpoints and the consistency proofs; the witness's
state is a real SQLite file; requests go through its HTTP application.
"""

from __future__ import annotations

import base64
import hashlib

import pytest
from starlette.testclient import TestClient

from ledger.core.errors import InputError
from ledger.importing.importer import import_files
from ledger.log.cosignature import generate_cosigner
from ledger.log.signed_notes import Checkpoint, generate_signer
from ledger.services.cosigning_witness import EMPTY_ROOT, MAX_BODY, Witness, submission
from ledger.services.proofs import checkpoint, prove_consistency
from ledger.storage.store import Store
from ledger.web.witness_app import create_witness_app
from tests.conftest import SEED_004

SIGNER = generate_signer("example.org/ledger")
COSIGNER = generate_cosigner("witness.example.org/w1")


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    store = Store.create(str(tmp_path_factory.mktemp("log") / "ledger.db"))
    import_files(store, [str(SEED_004)])
    yield store
    store.close()


class Clock:
    def __init__(self, now: float = 1_700_000_000):
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def witness(tmp_path):
    return Witness(COSIGNER, {SIGNER.name: SIGNER.verifier}, str(tmp_path / "witness.db"), new=True, clock=Clock())


@pytest.fixture
def client(witness):
    return TestClient(create_witness_app(witness))


def note(log, size: int) -> str:
    return checkpoint(log, SIGNER, size)[0]


def proof(log, old: int, new: int) -> list[bytes]:
    return [bytes.fromhex(h) for h in prove_consistency(log, old, new)["path"]]


def add(client, old: int, path: list[bytes], text: str):
    return client.post("/add-checkpoint", content=submission(old, path, text))


def test_a_first_checkpoint_is_cosigned_and_the_cosignature_verifies(log, witness, client):
    answer = add(client, 0, [], note(log, 20))
    assert answer.status_code == 200, answer.text
    body = note(log, 20).split("\n\n")[0] + "\n"
    assert COSIGNER.key.timestamp(body, answer.text.rstrip("\n")) == 1_700_000_000
    size, root, kept, _ = witness.held(SIGNER.name)
    assert (size, kept) == (20, note(log, 20)) and witness.history(SIGNER.name) == [(20, root, 1_700_000_000)]


def test_growth_needs_the_consistency_proof_from_the_size_held(log, witness, client):
    assert add(client, 0, [], note(log, 20)).status_code == 200
    stale = add(client, 0, [], note(log, 40))
    # 409 carries the size held, as text/x.tlog.size with no charset, so a client can send the right proof
    assert (stale.status_code, stale.headers["content-type"], stale.text) == (409, "text/x.tlog.size", "20\n")
    grown = add(client, 20, proof(log, 20, 40), note(log, 40))
    assert grown.status_code == 200 and witness.held(SIGNER.name)[0] == 40
    again = add(client, 40, [], note(log, 40))  # the same checkpoint again: cosigned again, the state unchanged
    assert again.status_code == 200 and [h[0] for h in witness.history(SIGNER.name)] == [20, 40]


def test_re_pushing_the_checkpoint_held_is_cosigned_and_stores_nothing(log, tmp_path):
    clock = Clock()
    path = tmp_path / "w.db"
    witness = Witness(COSIGNER, {SIGNER.name: SIGNER.verifier}, str(path), new=True, clock=clock)
    first = witness.add_checkpoint(submission(0, [], note(log, 20)))
    before = hashlib.sha256(path.read_bytes()).digest()  # each call closes its connection: no -wal left
    body = note(log, 20).split("\n\n")[0] + "\n"
    for _ in range(50):  # the same second: the same cosignature, and not one byte written
        assert witness.add_checkpoint(submission(20, [], note(log, 20))) == first
    assert hashlib.sha256(path.read_bytes()).digest() == before and not (tmp_path / "w.db-wal").exists()
    clock.now += 60  # later: a fresh timestamp, kept in place (so the next one is never before it), no new row
    fresh = witness.add_checkpoint(submission(20, [], note(log, 20) + "\u2014 someone AAAA\n"))
    assert COSIGNER.key.timestamp(body, fresh.rstrip("\n")) == clock.now == witness.held(SIGNER.name)[3]
    assert witness.history(SIGNER.name) == [(20, witness.held(SIGNER.name)[1], 1_700_000_000)]
    assert witness.held(SIGNER.name)[2] == note(log, 20)  # kept with the log's signature only


def test_a_proof_that_does_not_verify_is_422_and_nothing_is_kept(log, witness, client):
    """Anyone can pair the log's honest note with a bad proof: it says nothing about the log."""
    assert add(client, 0, [], note(log, 20)).status_code == 200
    wrong = proof(log, 20, 40)
    wrong[0] = bytes(32)
    refused = add(client, 20, wrong, note(log, 40))
    assert refused.status_code == 422 and "from size 20 to 40" in refused.text
    assert witness.held(SIGNER.name)[0] == 20 and witness.evidence() == []
    assert add(client, 20, proof(log, 20, 40), note(log, 40)).status_code == 200  # and accuses nobody


def test_the_size_held_with_another_root_is_a_fork_refused_with_422_and_kept_once(log, witness, client):
    assert add(client, 0, [], note(log, 20)).status_code == 200
    forked = SIGNER.sign(Checkpoint(SIGNER.name, 20, bytes(range(32))).text())  # the log's key, another tree
    refused = add(client, 20, [], forked)
    assert refused.status_code == 422 and "forked" in refused.text  # C2SP PR #280; 409 before it
    # The same fork again, and with signature lines anyone can add: one row, with the log's signature only.
    assert add(client, 20, [], forked).status_code == 422
    assert add(client, 20, [], forked + "\u2014 junk AAAAAAAA\n" * 100).status_code == 422
    assert witness.evidence() == [(SIGNER.name, "the size held (20) with another root: the log has forked", forked,
                                   note(log, 20))]  # the two notes the log signed that contradict
    assert witness.held(SIGNER.name)[0] == 20


def test_evidence_is_capped_per_origin(log, witness, client, monkeypatch, caplog):
    import ledger.services.cosigning_witness as service

    monkeypatch.setattr(service, "EVIDENCE_ROWS", 3)
    assert add(client, 0, [], note(log, 20)).status_code == 200
    forks = [SIGNER.sign(Checkpoint(SIGNER.name, 20, bytes([i]) * 32).text()) for i in range(6)]
    for forked in forks:
        assert add(client, 20, [], forked).status_code == 422
    assert [row[2] for row in witness.evidence()] == forks[:3]
    said = [r.getMessage() for r in caplog.records if r.name == "ledger.witness"]
    assert len(said) == 4 and f"evidence kept for {SIGNER.name} is at its cap" in said[3]  # three kept, then once
    monkeypatch.setattr(service, "EVIDENCE_ROWS", 1000)
    monkeypatch.setattr(service, "EVIDENCE_BYTES", 1)  # the byte cap as well
    assert add(client, 20, [], forks[4]).status_code == 422 and len(witness.evidence()) == 3


def test_a_checkpoint_of_size_zero_must_have_the_empty_root(witness, client):
    wrong = SIGNER.sign(Checkpoint(SIGNER.name, 0, bytes(32)).text())
    assert add(client, 0, [], wrong).status_code == 422  # signed, and false whatever it holds: kept
    assert witness.evidence() == [(SIGNER.name, "a checkpoint of size 0 must have the empty tree's root", wrong, "")]
    empty = SIGNER.sign(Checkpoint(SIGNER.name, 0, EMPTY_ROOT).text())
    assert add(client, 0, [], empty).status_code == 200
    assert add(client, 0, [], wrong).status_code == 422 and len(witness.evidence()) == 1  # kept once


OTHER = generate_signer("example.org/ledger")  # the same origin, another key


@pytest.mark.parametrize("name, build, status", [
    ("unknown origin", lambda log: (0, [], generate_signer("example.org/other").sign(
        Checkpoint("example.org/other", 20, bytes(32)).text())), 404),
    ("signed by another key", lambda log: (0, [], OTHER.sign(Checkpoint(OTHER.name, 20, bytes(32)).text())), 403),
    ("old larger than the checkpoint", lambda log: (30, [], note(log, 20)), 400),
    ("a proof from size 0", lambda log: (0, [bytes(32)], note(log, 20)), 422),
])
def test_refusals_have_the_status_tlog_witness_gives_and_store_nothing(log, witness, client, name, build, status):
    old, path, text = build(log)
    assert add(client, old, path, text).status_code == status, name
    assert witness.held(SIGNER.name) is None and witness.history(SIGNER.name) == []
    assert witness.evidence() == []  # none is a log-signed contradiction of what it holds


@pytest.mark.parametrize("body", [
    b"", b"old 0\n", b"old 01\n\nx", b"new 0\n\nx", b"old 0\nnot base64!\n\nx", b"old 0\nAAAA\n\nx",
    b"old 0\n" + b"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n" * 64 + b"\n" + b"x", b"\xff\xfe\n\nx",
    b"old 0\n\nexample.org/ledger\n20\nnot a root\n\n\xe2\x80\x94 example.org/ledger AAAA\n",
])
def test_a_malformed_request_is_400_in_one_line_and_stores_nothing(witness, client, body):
    answer = client.post("/add-checkpoint", content=body)
    assert answer.status_code in (400, 403, 404) and answer.text.count("\n") == 1, (body, answer.text)
    assert witness.evidence() == [] and witness.held(SIGNER.name) is None


def test_an_oversized_body_is_413_before_it_is_read(log, witness, client):
    answer = client.post("/add-checkpoint", content=submission(0, [], note(log, 20)) + b" " * MAX_BODY)
    assert answer.status_code == 413 and witness.held(SIGNER.name) is None


def test_timestamps_never_go_back_when_the_clock_does(log, tmp_path):
    clock = Clock(1_700_000_500)
    witness = Witness(COSIGNER, {SIGNER.name: SIGNER.verifier}, str(tmp_path / "w.db"), new=True, clock=clock)
    witness.add_checkpoint(submission(0, [], note(log, 20)))
    clock.now = 1_700_000_000  # the clock went back 500 s
    witness.add_checkpoint(submission(20, proof(log, 20, 30), note(log, 30)))
    assert [h[2] for h in witness.history(SIGNER.name)] == [1_700_000_500, 1_700_000_500]


def test_the_state_file_must_exist_unless_new_and_must_be_a_witness_state(log, tmp_path):
    logs = {SIGNER.name: SIGNER.verifier}
    with pytest.raises(InputError, match="no such witness state; give --new"):
        Witness(COSIGNER, logs, str(tmp_path / "absent.db"))
    Witness(COSIGNER, logs, str(tmp_path / "w.db"), new=True).add_checkpoint(submission(0, [], note(log, 20)))
    with pytest.raises(InputError, match="already exists"):
        Witness(COSIGNER, logs, str(tmp_path / "w.db"), new=True)
    assert Witness(COSIGNER, logs, str(tmp_path / "w.db")).held(SIGNER.name)[0] == 20  # kept across a restart
    with pytest.raises(InputError, match="not a witness state"):
        Witness(COSIGNER, logs, log.url[len("sqlite:///"):])
    (tmp_path / "junk.db").write_bytes(b"not sqlite at all, not at all" * 10)
    with pytest.raises(InputError, match="not a witness state"):
        Witness(COSIGNER, logs, str(tmp_path / "junk.db"))


def test_the_witness_cosigns_extension_lines_too(log, witness, client):
    # Sunlight's witness refuses them; the cosignature/v1 message covers them, so this one need not.
    indexed = checkpoint(log, SIGNER, 20, paper_index=True)[0]
    answer = add(client, 0, [], indexed)
    body = indexed.split("\n\n")[0] + "\n"
    assert answer.status_code == 200 and COSIGNER.key.timestamp(body, answer.text.rstrip("\n")) is not None
    assert base64.b64decode(answer.text.split()[2])[:4] == COSIGNER.key.id


def test_a_state_from_before_evidence_keeps_its_forks_and_drops_the_failing_proofs(log, tmp_path):
    import sqlite3

    path = tmp_path / "old.db"
    forked = SIGNER.sign(Checkpoint(SIGNER.name, 20, bytes(range(32))).text())
    with sqlite3.connect(path) as db:  # the schema and rows a witness kept before
        db.executescript("""
            CREATE TABLE logs (origin TEXT PRIMARY KEY, size INTEGER NOT NULL, root BLOB NOT NULL,
                               note TEXT NOT NULL, cosigned_at INTEGER NOT NULL);
            CREATE TABLE cosigned (id INTEGER PRIMARY KEY, origin TEXT NOT NULL, size INTEGER NOT NULL,
                                   root BLOB NOT NULL, cosigned_at INTEGER NOT NULL);
            CREATE TABLE refused (id INTEGER PRIMARY KEY, origin TEXT NOT NULL, received_at INTEGER NOT NULL,
                                  status INTEGER NOT NULL, reason TEXT NOT NULL, request BLOB NOT NULL);""")
        db.execute("INSERT INTO refused VALUES (1, ?, 5, 422, 'from size 20 to 40: the proof does not verify', ?)",
                   (SIGNER.name, submission(20, [bytes(32)], note(log, 40))))
        db.execute("INSERT INTO refused VALUES (2, ?, 6, 422, 'the size held (20) with another root: the log has "
                   "forked', ?)", (SIGNER.name, submission(20, [], forked)))
    witness = Witness(COSIGNER, {SIGNER.name: SIGNER.verifier}, str(path))
    assert witness.evidence() == [(SIGNER.name, "the size held (20) with another root: the log has forked", forked, "")]
    with sqlite3.connect(path) as db:
        assert {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")} == {
            "logs", "cosigned", "evidence"}
    assert Witness(COSIGNER, {SIGNER.name: SIGNER.verifier}, str(path)).evidence() == witness.evidence()


def test_the_rate_limit_is_a_bounded_token_bucket_per_address():
    from ledger.web.witness_app import RateLimit

    clock = Clock(0)
    limit = RateLimit(2, tracked=3, clock=clock)  # 2 a second, bursts of 4
    assert [limit.wait("192.0.2.1") for _ in range(5)] == [0, 0, 0, 0, 0.5]
    assert limit.wait("192.0.2.2") == 0  # another client has its own bucket
    assert limit.wait("2001:db8::1") == 0 and [limit.wait("2001:db8::2") for _ in range(3)] == [0, 0, 0]
    assert limit.wait("2001:db8::ffff") == 0.5  # an IPv6 client is its /64
    clock.now = 0.5  # a token back
    assert limit.wait("192.0.2.1") == 0 and limit.wait("192.0.2.1") == 0.5
    for i in range(10):  # a flood of addresses: the limiter still tracks 3
        limit.wait(f"198.51.100.{i}")
    assert len(limit.buckets) == 3


def test_a_client_over_the_rate_gets_429_with_retry_after_before_its_body_is_read(log, witness):
    client = TestClient(create_witness_app(witness, rate=1))  # bursts of 2
    assert [client.post("/add-checkpoint", content=b"x").status_code for _ in range(2)] == [400, 400]
    limited = add(client, 0, [], note(log, 20))
    assert limited.status_code == 429 and limited.headers["retry-after"] == "1" and limited.text.count("\n") == 1
    assert witness.held(SIGNER.name) is None
    unlimited = TestClient(create_witness_app(witness, rate=0))
    assert all(unlimited.post("/add-checkpoint", content=b"x").status_code == 400 for _ in range(30))


def test_the_cosignature_is_over_the_text_signed_and_the_note_kept_has_the_verified_signature(witness, client):
    root = base64.b64encode(EMPTY_ROOT).decode()
    text = f"{SIGNER.name}\n0\n{root}\nother/v1 x\npaper-index/v1 {base64.b64encode(bytes(32)).decode()}\n"
    signed = SIGNER.sign(text)  # extension lines in an order parse-then-print would change
    bogus = f"\u2014 {SIGNER.name} {base64.b64encode(SIGNER.verifier.id + bytes(10)).decode()}\n"  # not 68 bytes
    text_part, signature = signed.split("\n\n")
    answer = add(client, 0, [], f"{text_part}\n\n{bogus}{signature}")
    assert answer.status_code == 200 and COSIGNER.key.timestamp(text, answer.text.rstrip("\n")) is not None
    assert witness.held(SIGNER.name)[2] == signed


@pytest.mark.parametrize("method, path, status", [
    ("GET", "/add-checkpoint", 405), ("PUT", "/add-checkpoint", 405), ("DELETE", "/add-checkpoint", 405),
    ("GET", "/", 404), ("POST", "/add-checkpoint/x", 404), ("GET", "/docs", 404), ("POST", "/%0d%0aX:%20y", 404),
])
def test_another_method_or_path_is_one_text_line_as_every_answer_is(witness, client, method, path, status):
    answer = client.request(method, path, content=b"")
    assert answer.status_code == status and answer.headers["content-type"] == "text/plain; charset=utf-8"
    assert answer.text.count("\n") == 1 and answer.text.endswith("\n") and "{" not in answer.text, answer.text
    assert "x:" not in answer.text.lower() and "docs" not in answer.text  # the request is never quoted
    assert answer.headers.get("allow") == ("POST" if status == 405 else None)
    assert witness.evidence() == [] and witness.held(SIGNER.name) is None
