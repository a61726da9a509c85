"""An auditing witness (`ledger witness serve --audit`) in a real process, five logs with keys of their own
pushing to it: one honest (a real ledger, published and served by a static host, asked by `ledger checkpoint
--witness`), the others writing what an honest log never would (tests.audit_sites) and pushing over HTTP. Also
the faults of the audit path: a slow log, a huge tile, a missing tile.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

from ledger.importing.importer import import_files
from ledger.log.signed_notes import Checkpoint, generate_signer
from ledger.services.cosigning_witness import submission
from ledger.services.keys import load_signer
from ledger.storage.store import Store
from tests.audit_sites import contradicting, index_root, leaves_of, tree_root, write_site
from tests.conftest import SEED_004, _free_port, run_ledger
from tests.helpers import stop_process
from tests.ledger.services.test_witness import proof

PAPER_004 = "2407.20018"


class Host:
    """A static host of a folder, each answer under /tile/ held back `delay` seconds (a slow log)."""

    def __init__(self, folder, delay: float = 0.0):
        class Handler(http.server.SimpleHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (the http.server name)
                if self.path.startswith("/tile/"):
                    time.sleep(delay)  # the slow log itself: what the witness's deadline is for
                super().do_GET()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(folder)))
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def hosts():
    made = []
    yield lambda folder, delay=0.0: made.append(Host(folder, delay)) or made[-1]
    for host in made:
        host.server.shutdown()


@pytest.fixture
def logs(tmp_path):
    """The dishonest logs' signers, by name, and a ledger of the seed's events to take honest entries from."""
    signers = {name: generate_signer(f"{name}.example") for name in ("junk", "contra", "index", "faults")}
    for name, signer in signers.items():
        (tmp_path / f"{name}.vkey").write_text(str(signer.verifier) + "\n")
        (tmp_path / name).mkdir()
    store = Store.create(str(tmp_path / "entries.db"))
    import_files(store, [str(SEED_004)])
    yield signers, store
    store.close()


def start_witness(folder, *options: str, db: str = "w.db") -> tuple[subprocess.Popen, str]:
    if not (folder / "witness.key").exists():
        made = run_ledger("keygen", "--cosigner", "w.example", cwd=folder, timeout=60)
        assert made.returncode == 0, made.stderr
    port = _free_port()
    process = subprocess.Popen(
        ["timeout", "--kill-after=5", "300", sys.executable, "-m", "ledger.cli", "--db", db, "witness", "serve",
         "--new", "--key", "witness.key", "--port", str(port), *options], cwd=folder, stdout=open(folder / "w.log", "wb"),
        stderr=subprocess.STDOUT, env={k: v for k, v in os.environ.items() if k != "LEDGER_DB"}, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while post(url, b"")[0] != 400:
        assert process.poll() is None and time.monotonic() < deadline, (folder / "w.log").read_text()
        time.sleep(0.1)
    return process, url


def post(url: str, body: bytes, path: str = "/add-checkpoint") -> tuple[int, dict, str]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url + path, data=body, method="POST"), timeout=30) as answer:
            return answer.status, dict(answer.headers), answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()
    except OSError:
        return 0, {}, ""


def push(url: str, note: str, old: int = 0, proof: list[bytes] = ()) -> tuple[int, str]:
    """A push as a log's client makes it, asking again after each 503 (Retry-After) for up to 60 s."""
    deadline = time.monotonic() + 60
    while True:
        status, headers, body = post(url, submission(old, list(proof), note))
        if status != 503 or time.monotonic() > deadline:
            return status, body
        time.sleep(float(headers.get("Retry-After", "1")))


def test_three_logs_push_to_one_auditing_witness(keyed, tmp_path, logs, hosts):
    signers, entries = logs
    assert keyed("publish", "--as-of", "2026-09-03", "out", "--key", "ledger.key").exit_code == 0
    honest = hosts(tmp_path / "out", delay=2.5)  # slower than a request waits: the client must ask again
    audits = ["--audit", f"example.org/ledger={honest.url}"]
    logs_of = ["--log", "example.org/ledger=ledger.vkey"]
    for name, signer in signers.items():
        logs_of += ["--log", f"{signer.name}={name}.vkey"]
        audits += ["--audit", f"{signer.name}={tmp_path / name}"]
    witness, url = start_witness(tmp_path, *logs_of, *audits, "--audit-timeout", "30")
    try:
        # The honest log: cosigned within its --timeout (503 and Retry-After first), its index note too.
        made = keyed("checkpoint", "--key", "ledger.key", "--witness", f"{url}=witness.vkey", "--timeout", "40")
        assert made.exit_code == 0, made.stderr
        assert "note: the paper index note of tree 40 is cosigned by 1 auditing witness: w.example" in made.stderr
        out = keyed("replay", "--paper", PAPER_004, "--as-of", "2026-08-09", "--evidence", "b.json", "--key", "ledger.key")
        assert out.exit_code == 0, out.stderr
        bundle = json.loads((tmp_path / "b.json").read_text())
        assert bundle["checkpoint"].count("\n\u2014 ") == 2  # the log's signature and the witness's cosignature
        checked = keyed("verify", "--evidence", "b.json", "--verifier-key", "ledger.vkey", "--witness-key",
                        "witness.vkey", "--quorum", "1")
        assert checked.exit_code == 0, checked.stderr
        assert "the index checked by 1 auditing witness: w.example (1 of 1)" in checked.stdout
        # verify --index, the same options: the index note as the bundle carries it, re-computed from the export.
        (tmp_path / "index.txt").write_text(bundle["checkpoint"])
        (tmp_path / "log.jsonl").write_bytes(keyed("export").stdout_bytes)
        asked = ["--verifier-key", "ledger.vkey", "--witness-key", "witness.vkey"]
        index = keyed("verify", "--index", "log.jsonl", "--checkpoint", "index.txt", *asked)
        assert index.exit_code == 0 and "the index checked by 1 auditing witness: w.example" in index.stdout
        # Not met: exit 1, naming who cosigned.
        from ledger.log.cosignature import generate_cosigner
        (tmp_path / "absent.vkey").write_text(f"{generate_cosigner('absent.example').key}\n")
        short = keyed("verify", "--evidence", "b.json", *asked, "--witness-key", "absent.vkey", "--quorum", "2")
        assert short.exit_code == 1 and "cosigned by w.example (1 of the 2 witnesses it lists)" in short.stderr, short.stderr
        # A split view: the same size with another root, shown to the witness: caught as a plain witness does.
        signer = load_signer(str(tmp_path / "ledger.key"))
        split = signer.sign(Checkpoint(signer.name, 40, tree_root(leaves_of(entries, 39) + [b"{}"])).text())
        status, body = push(url, split, 40)
        assert status == 422 and "the log has forked" in body, body

        # A non-event entry in signed tiles: refused, naming its index.
        junk = signers["junk"]
        note = write_site(tmp_path / "junk", junk, leaves_of(entries, 40) + [b"\x00not an event"], index_root(entries, 40))
        status, body = push(url, note)
        assert status == 422 and body.startswith(f"{tmp_path / 'junk'}: log entry 41: "), body
        # An event contradicting an earlier fact: refused, naming both.
        contra = signers["contra"]
        leaves = leaves_of(entries, 40)
        note = write_site(tmp_path / "contra", contra, leaves + [contradicting(leaves, 1)], index_root(entries, 40))
        status, body = push(url, note)
        assert status == 422 and "contradicts event seq 1" in body and "as seq 41" in body, body
        # An index note that leaves one event of a paper out: refused, naming the paper and both roots.
        index = signers["index"]
        assert push(url, write_site(tmp_path / "index", index, leaves_of(entries, 39), index_root(entries, 39)))[0] == 200
        note = write_site(tmp_path / "index", index, leaves_of(entries, 40), index_root(entries, 39))
        status, body = push(url, note, 39, proof(entries, 39, 40))
        assert status == 422 and f"differs at paper arXiv:{PAPER_004}" in body and "note gives root" in body, body
    finally:
        stop_process(witness)
    with __import__("sqlite3").connect(tmp_path / "w.db") as db:
        reasons = [r[0] for r in db.execute("SELECT reason FROM evidence ORDER BY id")]
    assert len(reasons) == 4 and "the log has forked" in reasons[0] and "log entry 41" in reasons[1]


def test_the_audit_path_bounds_a_slow_log_a_huge_tile_and_a_missing_tile(keyed, tmp_path, logs, hosts):
    signers, entries = logs
    signer = signers["faults"]
    slow = hosts(tmp_path / "faults", delay=30)
    note = write_site(tmp_path / "faults", signer, leaves_of(entries, 40), index_root(entries, 40))
    witness, url = start_witness(tmp_path, "--log", f"{signer.name}=faults.vkey", "--audit",
                                 f"{signer.name}={slow.url}", "--audit-timeout", "3")
    try:
        status, body = push(url, note)  # a tile held back past the audit's deadline: 502, nobody accused
        assert status == 502 and "could not be read" in body and "deadline" in body, body
    finally:
        stop_process(witness)
    witness, url = start_witness(tmp_path, "--log", f"{signer.name}=faults.vkey", "--audit",
                                 f"{signer.name}={tmp_path / 'faults'}", db="w2.db")
    try:
        tile = tmp_path / "faults" / "tile" / "0" / "000.p" / "40"
        data = tile.read_bytes()
        tile.write_bytes(data * 8)  # a huge tile: over its cap, never read whole
        status, body = push(url, note)
        assert status == 502 and "limit" in body, body
        tile.unlink()
        status, body = push(url, note)  # a missing tile: the log's own checkpoint needs it
        assert status == 422 and "does not serve tile/0/000.p/40" in body, body
    finally:
        stop_process(witness)


def test_checkpoint_witness_reports_an_audit_refusal_per_witness(keyed, tmp_path):
    assert keyed("publish", "--as-of", "2026-09-03", "out", "--key", "ledger.key").exit_code == 0
    (tmp_path / "out" / "paper-index" / "40").unlink()  # a log that never published its index note for 40
    witness, url = start_witness(tmp_path, "--log", "example.org/ledger=ledger.vkey", "--audit",
                                 "example.org/ledger=out")
    try:
        made = keyed("checkpoint", "--key", "ledger.key", "--witness", f"{url}=witness.vkey", "--timeout", "20")
    finally:
        stop_process(witness)
    assert made.exit_code == 1 and made.stdout == ""
    assert made.stderr == ("ledger: witness w.example: answered 424: 'the log gives no paper index note for tree 40 "
                           "(out/paper-index/40): nothing to audit the index against'\n"
                           "ledger: checkpoint: the quorum is not met: 0 of 1 witness cosigned\n")


def test_witness_serve_refuses_bad_audit_options_in_one_line(keyed, tmp_path):
    assert keyed("keygen", "--cosigner", "w.example").exit_code == 0
    logged = ["--log", "example.org/ledger=ledger.vkey", "--new"]
    for args, problem in [
        (["--audit", "example.org/other=out"], "--audit example.org/other: not a --log this witness follows"),
        (["--audit", "example.org/ledger"], "--audit example.org/ledger: expected ORIGIN=URL|DIR"),
        (["--audit", "example.org/ledger=no-such-folder"], "no-such-folder: not a URL (http:// or https://) nor a "
                                                          "published folder"),
        (["--audit", "example.org/ledger=.", "--audit", "example.org/ledger=."], "--audit example.org/ledger: given twice"),
    ]:
        refused = run_ledger("--db", "state.db", "witness", "serve", "--key", "witness.key", *logged, *args, cwd=tmp_path)
        assert refused.returncode == 2 and refused.stderr.count(b"\n") == 1 and problem.encode() in refused.stderr, \
            refused.stderr
        assert not (tmp_path / "state.db").exists()
