"""The witness (C2SP tlog-witness): what it cosigns, what it refuses with which status, and what it keeps.

A real ledger (SQLite, the seed's 40 events) gives the checkpoints and the consistency proofs; the witness's
state is a real SQLite file; requests go through its HTTP application.
"""

from __future__ import annotations

import base64

import pytest
from starlette.testclient import TestClient

from ledger.core.errors import InputError
from ledger.importing.importer import import_files
from ledger.log.cosignature import generate_cosigner
from ledger.log.signed_notes import Checkpoint, generate_signer
from ledger.services.proofs import checkpoint, prove_consistency
from ledger.services.witness import EMPTY_ROOT, MAX_BODY, Witness, submission
from ledger.storage.store import Store
from ledger.web.witness import create_witness_app
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
    assert again.status_code == 200 and [h[0] for h in witness.history(SIGNER.name)] == [20, 40, 40]


def test_a_proof_that_does_not_verify_is_422_and_the_checkpoint_is_kept_as_evidence(log, witness, client):
    assert add(client, 0, [], note(log, 20)).status_code == 200
    wrong = proof(log, 20, 40)
    wrong[0] = bytes(32)
    refused = add(client, 20, wrong, note(log, 40))
    assert refused.status_code == 422 and "from size 20 to 40" in refused.text
    assert witness.held(SIGNER.name)[0] == 20
    [(origin, status, reason, request)] = witness.refused()
    assert (origin, status) == (SIGNER.name, 422) and request == submission(20, wrong, note(log, 40))


def test_the_size_held_with_another_root_is_a_fork_refused_with_422(log, witness, client):
    assert add(client, 0, [], note(log, 20)).status_code == 200
    forked = SIGNER.sign(Checkpoint(SIGNER.name, 20, bytes(range(32))).text())  # the log's key, another tree
    refused = add(client, 20, [], forked)
    assert refused.status_code == 422 and "forked" in refused.text  # C2SP PR #280; 409 before it
    assert witness.refused()[0][3] == submission(20, [], forked) and witness.held(SIGNER.name)[0] == 20


def test_a_checkpoint_of_size_zero_must_have_the_empty_root(witness, client):
    empty = SIGNER.sign(Checkpoint(SIGNER.name, 0, EMPTY_ROOT).text())
    assert add(client, 0, [], empty).status_code == 200
    wrong = SIGNER.sign(Checkpoint(SIGNER.name, 0, bytes(32)).text())
    assert add(client, 0, [], wrong).status_code == 422


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
    assert len(witness.refused()) == (status == 422)  # only a log-signed checkpoint refused with 422 is kept


@pytest.mark.parametrize("body", [
    b"", b"old 0\n", b"old 01\n\nx", b"new 0\n\nx", b"old 0\nnot base64!\n\nx", b"old 0\nAAAA\n\nx",
    b"old 0\n" + b"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n" * 64 + b"\n" + b"x", b"\xff\xfe\n\nx",
    b"old 0\n\nexample.org/ledger\n20\nnot a root\n\n\xe2\x80\x94 example.org/ledger AAAA\n",
])
def test_a_malformed_request_is_400_in_one_line_and_stores_nothing(witness, client, body):
    answer = client.post("/add-checkpoint", content=body)
    assert answer.status_code in (400, 403, 404) and answer.text.count("\n") == 1, (body, answer.text)
    assert witness.refused() == [] and witness.held(SIGNER.name) is None


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
