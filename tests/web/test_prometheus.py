"""A real Prometheus (Debian's `prometheus`) scraping a real `serve` (on its --metrics-port) and a real
`witness serve`, on loopback with its own configuration and storage in a temporary folder: the series are read
back through its HTTP API and hold what was done (requests counted, the log's size, a cosignature), and no
label holds a key, a key's path or the ledger's path."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

from ledger.importing.importer import import_files
from ledger.log.cosignature import generate_cosigner
from ledger.log.signed_notes import generate_signer
from ledger.services.cosigning_witness import submission
from ledger.services.proofs import checkpoint
from ledger.storage.store import Store
from tests.conftest import PAPER_004, SEED_004
from tests.helpers import stop_process
from tests.web.test_operations import free_port, get, launch

pytestmark = pytest.mark.slow
PROMETHEUS = shutil.which("prometheus")
RECORD = f"/paper/{PAPER_004}/citation-record.json?as_of=2026-09-02"
CONFIG = """global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: serve
    static_configs: [{{targets: ["127.0.0.1:{serve}"]}}]
  - job_name: witness
    static_configs: [{{targets: ["127.0.0.1:{witness}"]}}]
"""


@pytest.fixture
def prometheus_binary() -> str:
    if PROMETHEUS is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install Debian's prometheus (.ci/run)")
        pytest.skip("Debian's prometheus is not installed")
    return PROMETHEUS


def query(port: int, expression: str) -> list[dict]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expression})
    with urllib.request.urlopen(url, timeout=10) as answer:
        found = json.load(answer)
    assert found["status"] == "success", found
    return found["data"]["result"]


def value_of(port: int, expression: str, wanted: float, seconds: float = 90) -> float:
    """The value of a one-series query, once Prometheus has scraped it as `wanted` (polled until a deadline)."""
    deadline, found = time.monotonic() + seconds, None
    while time.monotonic() < deadline:
        result = query(port, expression)
        found = float(result[0]["value"][1]) if len(result) == 1 else None
        if found == wanted:
            return found
        time.sleep(0.5)
    return found


def test_prometheus_scrapes_serve_and_a_witness_and_reads_the_series_back(prometheus_binary, tmp_path):
    signer = generate_signer("example.org/ledger")
    (tmp_path / "ledger.key").write_text(f"{signer}\n")
    (tmp_path / "ledger.key").chmod(0o600)
    (tmp_path / "ledger.vkey").write_text(f"{signer.verifier}\n")
    (tmp_path / "w.key").write_text(f"{generate_cosigner('w.example')}\n")
    (tmp_path / "w.key").chmod(0o600)
    store = Store.create(str(tmp_path / "ledger.db"))
    import_files(store, [str(SEED_004)])
    note = checkpoint(store, signer)[0]
    store.close()
    metrics_port = free_port()
    site, port = launch(tmp_path, "--db", "ledger.db", "serve", "--key", "ledger.key", "--metrics-port",
                        str(metrics_port))
    witness, witness_port = launch(tmp_path, "--db", "w.db", "witness", "serve", "--new", "--key", "w.key",
                                   "--log", "example.org/ledger=ledger.vkey")
    prometheus_port = free_port()
    (tmp_path / "prometheus.yml").write_text(CONFIG.format(serve=metrics_port, witness=witness_port))
    scraper = subprocess.Popen(
        ["timeout", "--kill-after=5", "300", prometheus_binary, f"--config.file={tmp_path / 'prometheus.yml'}",
         f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{prometheus_port}"],
        stdout=subprocess.DEVNULL, stderr=open(tmp_path / "prometheus.log", "wb"), start_new_session=True)
    try:
        for _ in range(5):
            assert get(port, RECORD)[0] == 200
        cosigned = urllib.request.Request(f"http://127.0.0.1:{witness_port}/add-checkpoint",
                                          data=submission(0, [], note), method="POST")
        with urllib.request.urlopen(cosigned, timeout=30) as answer:
            assert answer.status == 200
        deadline = time.monotonic() + 60
        while True:  # Prometheus's own API is up
            try:
                query(prometheus_port, "up")
                break
            except OSError:
                assert scraper.poll() is None and time.monotonic() < deadline, (tmp_path / "prometheus.log").read_text()
                time.sleep(0.2)
        assert value_of(prometheus_port, 'up{job="serve"}', 1) == 1
        assert value_of(prometheus_port, 'up{job="witness"}', 1) == 1
        counted = ('ledger_http_request_duration_seconds_count{job="serve",'
                   'route="/paper/{paper}/citation-record.json",status="200"}')
        assert value_of(prometheus_port, counted, 5) == 5
        assert value_of(prometheus_port, 'ledger_log_size{job="serve"}', 40) == 40
        assert value_of(prometheus_port, 'ledger_cache_hits_total{job="serve"}', 4) == 4
        assert value_of(prometheus_port, 'ledger_witness_checkpoints_total{job="witness",'
                                         'origin="example.org/ledger",outcome="cosigned"}', 1) == 1
        assert value_of(prometheus_port, 'ledger_witness_held_size{job="witness"}', 40) == 40
        # Every label value of every series both servers gave: none names a key, a key's path or the ledger.
        series = query(prometheus_port, '{job=~"serve|witness"}')
        values = {value for s in series for value in s["metric"].values()}
        assert len(series) > 20
        secrets = [(tmp_path / "ledger.key").read_text().strip(), (tmp_path / "w.key").read_text().strip(),
                   "ledger.key", "w.key", "ledger.db", "w.db", str(tmp_path)]
        assert [v for v in values for s in secrets if s in v] == []
    finally:
        stop_process(scraper)
        stop_process(site)
        stop_process(witness)
