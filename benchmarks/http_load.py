"""Serving under load, on loopback only: `ledger serve` and nginx started in process groups of their own and
stopped by themselves at the latest, a bounded Python load generator (a fixed number of requests from a fixed
number of threads, every body checked), and wrk when it is installed.
"""

from __future__ import annotations

import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from benchmarks.common import GateError, gate


def timed(work, count: int) -> list[float]:
    """Milliseconds of each of `count` runs of `work`."""
    times = []
    for _ in range(count):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000)
    return times


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    """`ledger serve` in a process group of its own, stopped by itself after `limit` seconds at the latest."""

    def __init__(self, db: Path, workers: int, key: Path, limit: int = 900, options: tuple[str, ...] = (),
                 log: Path | None = None):
        """`options`: more of serve's (`--no-metrics`, ...); `log`: the file its stderr goes to (default: none)."""
        self.port = free_port()
        self.process = subprocess.Popen(
            ["timeout", "--kill-after=5", str(limit), sys.executable, "-m", "ledger.cli", "--db", str(db), "serve",
             "--port", str(self.port), "--workers", str(workers), "--key", str(key), *options],
            stdout=subprocess.DEVNULL, stderr=open(log, "ab") if log else subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 60
        while True:
            try:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                connection.request("GET", "/evidence")
                if connection.getresponse().status == 200:
                    connection.close()
                    return
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise GateError("ledger serve did not start")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


class Nginx:
    """nginx (Debian's package) serving the folder `publish` wrote, one worker process, on loopback: the anchor a
    static host gives. Installed by `apt-get install nginx-light` when missing; run in the foreground, its own
    prefix, pid and logs in `folder`."""

    def __init__(self, folder: Path, root: Path):
        folder.chmod(0o755)  # nginx's workers run as another user (nobody, www-data) when started as root
        if shutil.which("nginx") is None and shutil.which("/usr/sbin/nginx") is None:
            subprocess.run(["apt-get", "install", "-y", "-q", "nginx-light"], check=True, capture_output=True)
        self.port = free_port()
        conf = folder / "nginx.conf"
        conf.write_text(
            f"worker_processes 1;\nerror_log {folder}/nginx-error.log;\npid {folder}/nginx.pid;\ndaemon off;\n"
            "events { worker_connections 256; }\n"
            "http {\n  access_log off;\n  types { application/json json; text/html html; text/css css; "
            "application/javascript js; }\n  default_type application/octet-stream;\n"
            f"  server {{\n    listen 127.0.0.1:{self.port};\n    root {root};\n"
            "    location / { try_files $uri $uri/index.html =404; }\n  }\n}\n")
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        self.process = subprocess.Popen([binary, "-c", str(conf), "-p", str(folder)], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise GateError("nginx did not start") from None
                time.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=20)


def load(port: int, path: str, expected: bytes, total: int, threads: int) -> tuple[float, list[float]]:
    """Requests per second and each request's latency (ms): `total` GETs of `path` from `threads` threads."""
    latencies: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()

    def worker(count: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        mine = []
        for _ in range(count):
            started = time.perf_counter()
            connection.request("GET", path)
            response = connection.getresponse()
            body = response.read()
            mine.append((time.perf_counter() - started) * 1000)
            if response.status != 200 or body != expected:
                failures.append(f"{path}: status {response.status}, {len(body)} bytes")
        connection.close()
        with lock:
            latencies.extend(mine)

    per_thread = total // threads
    pool = [threading.Thread(target=worker, args=(per_thread,)) for _ in range(threads)]
    started = time.perf_counter()
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    elapsed = time.perf_counter() - started
    gate(not failures, failures[0] if failures else "")
    return len(latencies) / elapsed, latencies


def wrk(port: int, path: str, seconds: int = 5) -> tuple[float, float, float] | None:
    """(requests/s, p50 ms, p99 ms) from wrk (2 threads, 4 connections) for `seconds`, or None without wrk: a
    load generator in C, so that nginx's figure is not the Python client's bound."""
    binary = shutil.which("wrk")
    if binary is None:
        return None
    done = subprocess.run([binary, "-t2", "-c4", f"-d{seconds}s", "--latency", f"http://127.0.0.1:{port}{path}"],
                          capture_output=True, text=True, timeout=seconds + 30)
    rate = re.search(r"Requests/sec:\s+([\d.]+)", done.stdout)
    gate(done.returncode == 0 and rate is not None and "Non-2xx" not in done.stdout, f"wrk: {done.stdout[-300:]}")
    units = {"us": 0.001, "ms": 1.0, "s": 1000.0}
    quantiles = {q: float(v) * units[u] for q, v, u in re.findall(r"\s(50|99)%\s+([\d.]+)(us|ms|s)\b", done.stdout)}
    return float(rate.group(1)), quantiles.get("50", 0.0), quantiles.get("99", 0.0)

