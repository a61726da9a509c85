"""What docs/operations.md gives an operator, run: the systemd units in docs/systemd/ parsed and, where
Debian's systemd is installed, passed through `systemd-analyze verify` (with ExecStart pointed at this
checkout's `ledger`); the nginx configuration in docs/nginx/ run by Debian's nginx on loopback in front of a
real `ledger serve`, every route of the route table fetched through it and directly, conditional requests
included, and the answers compared byte for byte and header for header.
"""

from __future__ import annotations

import configparser
import http.client
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ledger.web.routes import ROUTES
from tests.conftest import PAPER_004, SEED_004, Cli, _free_port
from tests.helpers import stop_process
from tests.web.test_routes import row_of

ROOT = Path(__file__).resolve().parent.parent
UNITS = sorted((ROOT / "docs" / "systemd").iterdir())
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
LEDGER = Path(sys.executable).parent / "ledger"
# The headers a client or a cache acts on: what nginx must pass as serve sent them.
COMPARED = ("content-type", "content-encoding", "cache-control", "etag", "vary", "last-modified",
            "x-content-type-options", "content-security-policy")


def unit(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None, delimiters=("=",))
    parser.optionxform = str  # systemd's keys are case-sensitive
    parser.read_string(path.read_text())
    return parser


def test_the_units_are_serve_witness_and_checkpoint_on_a_timer_with_keys_as_credentials():
    assert [path.name for path in UNITS] == ["ledger-checkpoint.service", "ledger-checkpoint.timer",
                                             "ledger-serve.service", "ledger-witness.service"]
    serve, check, timer = (unit(ROOT / "docs" / "systemd" / name) for name in (
        "ledger-serve.service", "ledger-checkpoint.service", "ledger-checkpoint.timer"))
    assert serve["Service"]["ExecStart"].split()[1:4] == ["serve", "--host", "127.0.0.1"]
    assert "--key %d/ledger.key" in serve["Service"]["ExecStart"]
    assert serve["Service"]["LoadCredential"] == "ledger.key:/etc/ledger/ledger.key"
    assert check["Service"]["Type"] == "oneshot" and " checkpoint --key %d/ledger.key --policy " in check["Service"]["ExecStart"]
    assert timer["Timer"]["Unit"] == "ledger-checkpoint.service" and timer["Timer"]["Persistent"] == "true"
    for path in UNITS:
        parsed = unit(path)
        assert parsed.sections()[0] == "Unit" and parsed["Unit"]["Documentation"].endswith("docs/operations.md")
        if path.suffix == ".service":
            assert parsed["Service"]["User"] != "root" and parsed["Service"]["UMask"] == "0077"
            assert parsed["Service"]["ExecStart"].startswith("/opt/ledger/.venv/bin/ledger ")


@pytest.mark.skipif(shutil.which("systemd-analyze") is None and not os.environ.get("CI"),
                    reason="needs systemd-analyze (Debian's systemd; .ci/run installs it)")
def test_systemd_analyze_verify_accepts_every_unit(tmp_path):
    # verify wants each ExecStart binary to exist: the units' copies run this checkout's `ledger`. What it
    # cannot check here: that the user `ledger` and the paths under /etc and /var/lib exist on the host.
    for path in UNITS:
        (tmp_path / path.name).write_text(path.read_text().replace("/opt/ledger/.venv/bin/ledger", str(LEDGER)))
    done = subprocess.run(["systemd-analyze", "verify", "--man=no", *sorted(str(p) for p in tmp_path.iterdir())],
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    # It can fail: an unknown key is named (and a binary that is not there fails it).
    (tmp_path / "ledger-serve.service").write_text((tmp_path / "ledger-serve.service").read_text()
                                                   .replace("Type=exec", "Type=exec\nBogus=1"))
    wrong = subprocess.run(["systemd-analyze", "verify", "--man=no", str(tmp_path / "ledger-serve.service")],
                           capture_output=True, text=True, timeout=60)
    assert "Unknown key 'Bogus'" in wrong.stderr


def wait_for(port: int, process: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", "/checkpoint")
            connection.getresponse().read()
            connection.close()
            return
        except OSError:
            assert process.poll() is None and time.monotonic() < deadline, f"{what} did not start"
            time.sleep(0.1)


def nginx_conf(folder: Path, upstream: int, port: int) -> Path:
    """A main nginx.conf for a test: everything in `folder`, the docs' server block included with serve's port
    and a loopback listen port put in."""
    site = (ROOT / "docs" / "nginx" / "ledger.conf").read_text()
    site = site.replace("server 127.0.0.1:8080;", f"server 127.0.0.1:{upstream};")
    site = site.replace("listen 80;", f"listen 127.0.0.1:{port};").replace("listen [::]:80;", "")
    assert f"127.0.0.1:{upstream}" in site and f"127.0.0.1:{port}" in site
    (folder / "ledger.conf").write_text(site)
    temp = "\n".join(f"    {kind}_temp_path {folder}/{kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    user = "user root;\n" if os.geteuid() == 0 else ""
    (folder / "nginx.conf").write_text(
        f"{user}daemon off;\nworker_processes 1;\npid {folder}/nginx.pid;\nerror_log {folder}/error.log;\n"
        f"events {{ worker_connections 64; }}\nhttp {{\n    access_log off;\n{temp}\n    include {folder}/ledger.conf;\n}}\n")
    return folder / "nginx.conf"


def fetch(port: int, path: str, headers: dict | None = None) -> tuple[int, dict, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", path, headers=headers or {})
        answer = connection.getresponse()
        body = answer.read()
        return answer.status, {k.lower(): v for k, v in answer.getheaders() if k.lower() in COMPARED}, body
    finally:
        connection.close()


def url_of(relative: str) -> str:
    """The URL path of a file `ledger publish` wrote (an HTML page is its folder's index.html)."""
    if relative == "index.html":
        return "/"
    return "/" + relative.removesuffix("/index.html")


@pytest.mark.slow
@pytest.mark.skipif(NGINX is None and not os.environ.get("CI"), reason="needs nginx (Debian's; .ci/run installs it)")
def test_every_route_through_nginx_is_what_serve_answers(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cli = Cli(str(tmp_path / "ledger.db"))
    assert cli("init").exit_code == 0 and cli("import", str(SEED_004)).exit_code == 0
    assert cli("keygen", "example.org/ledger").exit_code == 0
    assert cli("publish", "--as-of", "2026-08-09", "site", "--key", "ledger.key").exit_code == 0
    files = sorted(str(p.relative_to(tmp_path / "site")) for p in (tmp_path / "site").rglob("*")
                   if p.is_file() and not str(p.relative_to(tmp_path / "site")).startswith(".ledger-publish"))
    rows = {row_of(relative) for relative in files}
    # As of a fixed time wherever a route takes one: a page "as of now" differs from one request to the next.
    urls = [url_of(relative) + ("?as_of=2026-08-09" if "as_of" in row_of(relative)[0].query else "")
            for relative in files] + [
        f"/paper/{PAPER_004}/diff.json?from=2026-08-01&to=2026-08-09", "/paper/2407.99999?as_of=2026-08-09",
        "/no/such/path", f"/paper/{PAPER_004}/citation-record.json?as_of=not-a-date", "/healthz", "/readyz"]
    covered = {route.name for route, _ in rows if route} | {"diff", "healthz", "readyz"}  # serve's own rows
    assert covered == {route.name for route in ROUTES}  # every row of the table is asked for
    serve_port, nginx_port = _free_port(), _free_port()
    env = {k: v for k, v in os.environ.items() if k != "LEDGER_DB"}
    serve = subprocess.Popen(["timeout", "--kill-after=5", "600", sys.executable, "-m", "ledger.cli", "--db",
                              "ledger.db", "serve", "--key", "ledger.key", "--port", str(serve_port)], cwd=tmp_path,
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    (tmp_path / "nginx").mkdir()
    conf = nginx_conf(tmp_path / "nginx", serve_port, nginx_port)
    checked = subprocess.run([NGINX, "-t", "-q", "-c", str(conf), "-e", str(tmp_path / "nginx" / "startup.log")],
                             capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stderr
    nginx = subprocess.Popen([NGINX, "-c", str(conf), "-e", str(tmp_path / "nginx" / "startup.log")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for(serve_port, serve, "serve")
        wait_for(nginx_port, nginx, "nginx")
        conditional, tagged = 0, set()
        for url in urls:
            direct, proxied = fetch(serve_port, url), fetch(nginx_port, url)
            assert proxied == direct, url
            etag = direct[1].get("etag")
            if direct[0] == 200 and etag:
                tagged.add(url.split("?")[0])
                again = fetch(nginx_port, url, {"If-None-Match": etag})
                assert again[0] == 304 and again[2] == b"", url
                assert again == fetch(serve_port, url, {"If-None-Match": etag}), url
                conditional += 1
        tagged_rows = {row_of(relative)[0].name for relative in files if url_of(relative) in tagged}
        assert {"record", "day_record"} <= tagged_rows and conditional >= 10  # records carry ETags: each asked again
        refused = http.client.HTTPConnection("127.0.0.1", nginx_port, timeout=30)
        refused.request("POST", "/checkpoint", body=b"x")
        assert refused.getresponse().status == 403  # read-only: only GET and HEAD pass
    finally:
        stop_process(nginx)
        stop_process(serve)
