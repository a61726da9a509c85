"""Running the servers as an operator does, with real processes on loopback: `/readyz` of a `serve` whose
database goes away under it, the line per request on stderr (and none with --quiet), SIGTERM while requests are
in flight (they finish, new connections are refused, exit 0), and an import stopped by SIGTERM (nothing
appended, the ledger verifies and equals what it was)."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import orjson
import pytest

from ledger.importing.importer import import_files
from ledger.log.cosignature import generate_cosigner
from ledger.log.signed_notes import generate_signer
from ledger.services.cosigning_witness import submission
from ledger.services.proofs import checkpoint
from ledger.storage.store import Store
from tests.conftest import PAPER_004, SEED_004, run_ledger
from tests.helpers import stop_process
from tests.ledger.storage.test_concurrency import stream

pytestmark = pytest.mark.slow
GRACE = 20  # --grace-period given: far more than any request here takes, so an exit within it is the server's


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get(port: int, path: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def launch(folder: Path, *command: str) -> tuple[subprocess.Popen, int]:
    """A `ledger` server on a free port, started in its own session, once /healthz answers."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "LEDGER_DB"}
    process = subprocess.Popen([sys.executable, "-m", "ledger.cli", *command, "--port", str(port), "--grace-period",
                                str(GRACE)], cwd=folder, stdout=subprocess.DEVNULL,
                               stderr=open(folder / "server.log", "wb"), env=env, start_new_session=True)
    deadline = time.monotonic() + 60
    while True:
        try:
            if get(port, "/healthz")[0] == 200:
                return process, port
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            stop_process(process)
            pytest.fail(f"the server did not start: {(folder / 'server.log').read_text()}")
        time.sleep(0.1)


def seeded(folder: Path) -> Path:
    db = folder / "ledger.db"
    store = Store.create(str(db))
    import_files(store, [str(SEED_004)])
    store.close()
    return db


def test_readyz_fails_in_one_line_when_the_database_goes_away_and_recovers(tmp_path):
    db = seeded(tmp_path)
    process, port = launch(tmp_path, "--db", "ledger.db", "serve", "--log-format", "json")
    try:
        assert get(port, "/readyz") == (200, b"ready\n")
        os.rename(db, tmp_path / "elsewhere.db")
        status, body = get(port, "/readyz")
        assert status == 503 and b"ledger.db is gone or unreadable" in body and body.count(b"\n") == 1
        assert get(port, "/healthz") == (200, b"ok\n")  # the process is up: only readiness fails
        os.rename(tmp_path / "elsewhere.db", db)
        assert get(port, "/readyz") == (200, b"ready\n")
        assert get(port, f"/paper/{PAPER_004}/citation-record.json?as_of=2026-09-02")[0] == 200
    finally:
        stop_process(process)
    lines = [orjson.loads(line) for line in (tmp_path / "server.log").read_bytes().splitlines()
             if line.startswith(b"{")]
    requests = [line for line in lines if line["msg"] == "request"]
    assert [(r["route"], r["status"]) for r in requests][-4:] == [
        ("/readyz", 503), ("/healthz", 200), ("/readyz", 200), ("/paper/{paper}/citation-record.json", 200)]
    assert all(r["client"] == "127.0.0.1" and r["method"] == "GET" for r in requests)
    assert b"Traceback" not in (tmp_path / "server.log").read_bytes()


def test_quiet_writes_no_line_per_request(tmp_path):
    seeded(tmp_path)
    process, port = launch(tmp_path, "--db", "ledger.db", "serve", "--quiet")
    try:
        for _ in range(3):
            assert get(port, "/evidence")[0] == 200
    finally:
        stop_process(process)
    assert b"request" not in (tmp_path / "server.log").read_bytes()


def _send(port: int, path: str) -> socket.socket:
    conn = socket.create_connection(("127.0.0.1", port), timeout=60)
    conn.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    return conn


def _read(conn: socket.socket) -> bytes:
    got = b""
    while chunk := conn.recv(65536):
        got += chunk
    conn.close()
    return got


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def test_sigterm_lets_a_request_in_flight_finish_refuses_new_ones_and_exits_0(tmp_path):
    db = seeded(tmp_path)
    (tmp_path / "month.jsonl").write_bytes(stream("2910", papers=2000))
    assert run_ledger("--db", str(db), "import", str(tmp_path / "month.jsonl")).returncode == 0
    process, port = launch(tmp_path, "--db", "ledger.db", "serve")
    # A page of 2,000 papers (about 400 kB) to a client that reads none of it yet, through a small receive
    # window: the server is still sending it when the signal comes (its header timeout, 10 s, is far off).
    conn = socket.socket()
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    conn.settimeout(60)
    conn.connect(("127.0.0.1", port))
    conn.sendall(b"GET /papers/2910 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert conn.recv(1, socket.MSG_PEEK) == b"H"  # the answer has begun
    signalled = time.monotonic()
    os.killpg(process.pid, signal.SIGTERM)
    while not _refused(port):  # the listening socket closes: new connections are refused
        assert time.monotonic() < signalled + 10
        time.sleep(0.05)
    assert process.poll() is None  # still running: the answer is not all sent
    answer = _read(conn)
    assert process.wait(timeout=GRACE + 10) == 0 and time.monotonic() - signalled < GRACE
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 "), answer[:300]
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
    assert len(body) == length > 300_000  # whole, not cut off
    assert b"Traceback" not in (tmp_path / "server.log").read_bytes()


def test_a_witness_finishes_a_request_in_flight_on_sigterm_and_refuses_new_connections(tmp_path):
    log = generate_signer("example.org/ledger")
    (tmp_path / "w.key").write_text(f"{generate_cosigner('w.example')}\n")
    (tmp_path / "ledger.vkey").write_text(f"{log.verifier}\n")
    process, port = launch(tmp_path, "--db", "w.db", "witness", "serve", "--new", "--key", "w.key",
                           "--log", "example.org/ledger=ledger.vkey")
    store = Store.create(str(tmp_path / "ledger.db"))
    import_files(store, [str(SEED_004)])
    body = submission(0, [], checkpoint(store, log, 10)[0])
    store.close()
    conn = socket.create_connection(("127.0.0.1", port), timeout=60)
    conn.sendall(f"POST /add-checkpoint HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                 + body[:5])  # the application is reading the body when the signal arrives
    time.sleep(0.5)  # a stand-in for a slow client; the request is in flight either way
    os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while not _refused(port):  # the listening socket closes: new connections are refused
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    conn.sendall(body[5:])
    answer = _read(conn)
    assert answer.startswith(b"HTTP/1.1 200 ") and b"\xe2\x80\x94 w.example " in answer, answer
    assert process.wait(timeout=GRACE + 10) == 0


@pytest.mark.parametrize("jobs", [1, 2])
def test_an_import_stopped_by_sigterm_appends_nothing(tmp_path, jobs):
    db = seeded(tmp_path)
    before = run_ledger("--db", str(db), "head").stdout
    big = tmp_path / "big.jsonl"
    big.write_bytes(stream("2910", papers=8000))
    files = [str(big)]
    if jobs > 1:  # the parent then blocks on this pipe with its transaction open (as in test_import_jobs.py)
        os.mkfifo(tmp_path / "never.jsonl")
        files.append(str(tmp_path / "never.jsonl"))
    proc = subprocess.Popen([sys.executable, "-m", "ledger.cli", "--db", str(db), "import", "--jobs", str(jobs), *files],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        wal = tmp_path / "ledger.db-wal"
        while not (wal.exists() and wal.stat().st_size >= 64 * 1024):  # appends are under way
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.005)
        os.killpg(proc.pid, signal.SIGTERM)  # as systemd stops a service: every process of the group
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert (proc.returncode, out, err) == (130, b"", b"")  # as Ctrl-C: nothing printed, nothing appended
    assert run_ledger("--db", str(db), "head").stdout == before
    verified = run_ledger("--db", str(db), "verify", "--full")
    assert verified.returncode == 0, verified.stderr


class OwnPostgres:
    """A throwaway PostgreSQL server of this test's own (initdb in a tmp folder, loopback, trust), so that it
    can be stopped and started under a running `serve` without touching the server the other tests use."""

    def __init__(self):
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda b: int(b.split("/")[-2]))
        if not bins:
            if os.environ.get("CI"):
                pytest.fail("CI must install Debian's postgresql (.ci/run)")
            pytest.skip("PostgreSQL's server binaries are not installed (/usr/lib/postgresql/*/bin)")
        # Not below pytest's tmp folder, which the postgres user cannot enter (as the session fixture does).
        self.bin, self.data, self.port = bins[-1], Path(tempfile.mkdtemp(prefix="ledger-pg-own.")), free_port()
        os.chmod(self.data, 0o700)
        self.as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self.as_pg:
            shutil.chown(self.data, "postgres")
        self.user = "postgres" if self.as_pg else pwd.getpwuid(os.getuid()).pw_name
        subprocess.run([*self.as_pg, f"{self.bin}/initdb", "-D", str(self.data), "-A", "trust", "-U", self.user],
                       check=True, capture_output=True)
        self.url = f"postgresql+psycopg://{self.user}@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        subprocess.run([*self.as_pg, f"{self.bin}/pg_ctl", "-D", str(self.data), "-l", str(self.data / "log"), "-w",
                        "-o", f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.data}", "start"],
                       check=True, capture_output=True)

    def stop(self) -> None:
        subprocess.run([*self.as_pg, f"{self.bin}/pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop"],
                       capture_output=True)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.data, ignore_errors=True)


def test_readyz_fails_while_postgresql_is_stopped_and_recovers_when_it_is_back(tmp_path):
    database = OwnPostgres()
    database.start()
    try:
        assert run_ledger("--db", database.url, "init").returncode == 0
        assert run_ledger("--db", database.url, "import", str(SEED_004)).returncode == 0
        process, port = launch(tmp_path, "--db", database.url, "serve")
        try:
            assert get(port, "/readyz") == (200, b"ready\n")
            database.stop()
            status, body = get(port, "/readyz")
            assert status == 503 and body.count(b"\n") == 1 and b"Traceback" not in body, body
            assert get(port, "/healthz") == (200, b"ok\n")
            assert b"ledger_database_up 0.0" in get(port, "/metrics")[1]
            database.start()
            deadline = time.monotonic() + 30
            while get(port, "/readyz")[0] != 200:  # the pool reconnects at its next use
                assert time.monotonic() < deadline, get(port, "/readyz")
                time.sleep(0.2)
            assert get(port, f"/paper/{PAPER_004}/citation-record.json?as_of=2026-09-02")[0] == 200
        finally:
            stop_process(process)
    finally:
        database.remove()
