"""What `serve` and `witness serve` tell their operator, through their real applications over a real ledger and
a real witness state: /metrics (requests by route pattern and status, the cache, the log's size, the cosigned
checkpoint's age, a witness's cosignatures and refusals), /healthz and /readyz, and the line per request."""

from __future__ import annotations

import io
import os
import time

import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from ledger.log.cosignature import generate_cosigner
from ledger.log.signed_notes import generate_signer
from ledger.services.cosigning_witness import Witness, submission
from ledger.services.proofs import checkpoint
from ledger.storage.cosigned_checkpoint import keep_cosigned
from ledger.web.app import create_app, observed
from ledger.web.health import observed_witness
from ledger.web.logs import Requests
from ledger.web.witness_app import create_witness_app
from tests.conftest import PAPER_004

RECORD = f"/paper/{PAPER_004}/citation-record.json?as_of=2026-09-02"
ROUTE = "/paper/{paper}/citation-record.json"


def samples(text: str) -> dict[tuple, float]:
    """(name, labels as sorted pairs) -> value, of every sample of an exposition."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def served(store, signer=None, stream=None, form="json", **options) -> TestClient:
    app = create_app(store, signer, options.pop("max_age", None))
    requests = Requests(form, stream) if stream is not None else None
    client = TestClient(observed(app, requests, True, **options))
    client.requests = requests  # the test flushes its lines: they are written at most DELAY seconds later
    return client


def test_requests_are_counted_by_route_pattern_and_status_with_the_cache_and_the_log(rich):
    store, _ = rich
    client = served(store)
    for _ in range(3):
        assert client.get(RECORD).status_code == 200
    assert client.get("/no/such/path").status_code == 404
    assert client.get("/paper/2407.99999/citation-record.json").status_code == 404
    found = samples(client.get("/metrics").text)
    count = "ledger_http_request_duration_seconds_count"
    assert found[count, (("route", ROUTE), ("status", "200"))] == 3
    assert found[count, (("route", ROUTE), ("status", "404"))] == 1
    assert found[count, (("route", "other"), ("status", "404"))] == 1
    assert found["ledger_log_size", ()] == store.head()[0] > 0
    assert found["ledger_cache_hits_total", ()] == 2 and found["ledger_cache_misses_total", ()] >= 1
    assert found["ledger_cache_bytes", ()] > 0 and found["ledger_database_up", ()] == 1
    assert found["ledger_database_errors_total", ()] == 0
    # A label is a pattern, never a path asked: the series stay few whatever clients send.
    labels = {value for _, pairs in found for _, value in pairs}
    assert not any(PAPER_004 in value or "2407.99999" in value or "/no/such" in value for value in labels)
    # The scrape itself is counted at the next one.
    assert samples(client.get("/metrics").text)[count, (("route", "/metrics"), ("status", "200"))] == 1


@pytest.mark.parametrize("form", ["json", "plain"])
def test_a_line_per_request_names_the_route_never_the_query(rich, form):
    store, _ = rich
    stream = io.StringIO()
    client = served(store, stream=stream, form=form)
    secret = "ed25519SECRETKEYMATERIAL"
    assert client.get(RECORD).status_code == 200
    assert client.get(f"/paper/{PAPER_004}/citation-record.json?known_at={secret}").status_code == 400
    client.requests.flush()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2 and secret not in stream.getvalue() and PAPER_004 not in stream.getvalue()
    if form == "json":
        first, second = (orjson.loads(line) for line in lines)
        assert (first["route"], first["status"], first["method"], first["client"]) == (ROUTE, 200, "GET", "testclient")
        assert second["status"] == 400 and first["duration_ms"] >= 0 and first["time"].endswith("Z")
    else:
        assert lines[0].split()[1:6] == ["request", "testclient", "GET", ROUTE, "200"]
        assert lines[1].split()[5] == "400" and lines[1].endswith("ms")


def _cosigned(store, signer, when: float) -> None:
    """Keep a checkpoint of the log cosigned by a witness at `when` (Unix time)."""
    witness_db = f"{store.url.removeprefix('sqlite:///')}.witness-{time.monotonic_ns()}"
    cosigner = generate_cosigner("witness.example/w1")
    witness = Witness(cosigner, {signer.name: signer.verifier}, witness_db, new=True, clock=lambda: when)
    note = checkpoint(store, signer)[0]
    assert keep_cosigned(store, note + witness.add_checkpoint(submission(0, [], note)))


def test_readyz_says_why_in_one_line_and_the_checkpoint_age_is_reported(rich, signer, tmp_path):
    store, _ = rich
    client = served(store, signer)
    assert (client.get("/healthz").status_code, client.get("/healthz").text) == (200, "ok\n")
    assert (client.get("/readyz").status_code, client.get("/readyz").text) == (200, "ready\n")
    strict = served(store, signer, max_age=60)
    refused = strict.get("/readyz")
    assert refused.status_code == 503 and "no cosigned checkpoint" in refused.text
    assert len(refused.text.strip().splitlines()) == 1
    if not store.url.startswith("sqlite"):
        return  # the witness's state is a file beside an SQLite ledger
    _cosigned(store, signer, time.time() - 3600)
    refused = strict.get("/readyz")
    assert refused.status_code == 503 and "old, over --max-checkpoint-age 60 s" in refused.text
    assert served(store, signer, max_age=7200).get("/readyz").status_code == 200
    found = samples(strict.get("/metrics").text)
    assert 3590 < found["ledger_checkpoint_cosigned_age_seconds", ()] < 3700
    assert found["ledger_checkpoint_cosigned_size", ()] == store.head()[0]
    assert ("ledger_checkpoint_cosignature_timestamp_seconds", (("witness", "witness.example/w1"),)) in found
    assert found["ledger_database_errors_total", ()] == 0  # an old checkpoint is not the database's error


def test_on_a_metrics_port_metrics_are_answered_there_only(rich):
    store, _ = rich
    app = observed(create_app(store), None, True, 9100)
    main, side = TestClient(app), TestClient(app, base_url="http://testserver:9100")
    assert main.get("/metrics").status_code == 404
    assert side.get("/metrics").status_code == 200 and side.get(RECORD).status_code == 404
    assert main.get(RECORD).status_code == 200


def test_without_metrics_nothing_is_counted_and_metrics_is_not_a_path(rich):
    store, _ = rich
    client = TestClient(observed(create_app(store), None, False))
    assert client.get("/metrics").status_code == 404 and client.get(RECORD).status_code == 200


LOG = generate_signer("example.org/ledger")


def test_a_witness_counts_what_it_cosigned_and_refused_by_origin_and_reason(rich, tmp_path):
    store, _ = rich
    witness = Witness(generate_cosigner("w.example/w"), {LOG.name: LOG.verifier}, str(tmp_path / "w.db"), new=True)
    client = TestClient(observed_witness(create_witness_app(witness, 0), witness, None, True))
    note = checkpoint(store, LOG, 10)[0]
    assert client.post("/add-checkpoint", content=submission(0, [], note)).status_code == 200
    assert client.post("/add-checkpoint", content=submission(0, [], note)).status_code == 409
    stranger = generate_signer("evil.example/log")
    assert client.post("/add-checkpoint", content=submission(0, [], checkpoint(store, stranger, 10)[0])).status_code == 404
    assert client.post("/add-checkpoint", content=b"not a request").status_code == 400
    assert (client.get("/healthz").text, client.get("/readyz").text) == ("ok\n", "ready\n")
    found = samples(client.get("/metrics").text)
    total = "ledger_witness_checkpoints_total"
    assert found[total, (("origin", LOG.name), ("outcome", "cosigned"))] == 1
    assert found[total, (("origin", LOG.name), ("outcome", "size_mismatch"))] == 1
    assert found[total, (("origin", "other"), ("outcome", "unknown_log"))] == 1  # never the stranger's origin
    assert found[total, (("origin", "other"), ("outcome", "malformed"))] == 1
    assert found["ledger_witness_held_size", (("origin", LOG.name),)] == 10
    count = "ledger_http_request_duration_seconds_count"
    assert found[count, (("route", "/add-checkpoint"), ("status", "200"))] == 1
    assert "evil.example" not in client.get("/metrics").text
    os.rename(tmp_path / "w.db", tmp_path / "moved.db")
    refused = client.get("/readyz")
    assert (refused.status_code, refused.text) == (503, "not ready: the witness's state file is gone\n")
    assert samples(client.get("/metrics").text)["ledger_database_up", ()] == 0


@pytest.mark.parametrize("args, says", [
    (["serve", "--log-format", "xml"], "--log-format xml: expected one of plain, json, none"),
    (["-v", "serve", "--quiet"], "--quiet and -v: give one of them"),
    (["witness", "serve", "--key", "w.key", "--log", "a=b", "--log-format", "yaml"], "--log-format yaml"),
])
def test_a_wrong_log_option_is_refused_in_one_line_before_anything_starts(tmp_path, args, says):
    from tests.conftest import run_ledger

    done = run_ledger("--db", str(tmp_path / "none.db"), *args, cwd=tmp_path)
    first, *rest = done.stderr.decode().splitlines()
    assert done.returncode == 2 and says in first
    assert rest == [] or "-v" in args  # -v adds the traceback, as for every error
