"""Witnesses and the log from the command line: `ledger witness serve` in real processes, `ledger checkpoint
--witness/--policy` collecting their cosignatures, and the verifiers counting them (`--witness-key`,
`--quorum`, `--policy`). Faults are real too: a port nobody listens on, a witness that never answers, one
that answers garbage, and two processes pushing one origin at once.
"""

from __future__ import annotations

import http.server
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from contextlib import closing
from pathlib import Path

import pytest

from tests.conftest import _free_port, run_ledger
from tests.helpers import event_line


class Witnesses:
    """`ledger witness serve` processes for the log of ledger.vkey in the test's folder, each with its own
    cosigner key (w<i>.key / w<i>.vkey) and state; all stopped at the end of the test."""

    def __init__(self, folder: Path):
        self.folder, self.processes = folder, []

    def start(self, count: int, origin: str = "example.org/ledger", *options: str) -> list[str]:
        started = []
        for i in range(len(self.processes), len(self.processes) + count):
            (self.folder / f"w{i}").mkdir()
            made = run_ledger("keygen", "--cosigner", f"w{i}.example", cwd=self.folder / f"w{i}", timeout=60)
            assert made.returncode == 0, made.stderr
            for suffix in ("key", "vkey"):
                os.replace(self.folder / f"w{i}" / f"witness.{suffix}", self.folder / f"w{i}.{suffix}")
            port = _free_port()
            log = open(self.folder / f"w{i}.log", "wb")
            process = subprocess.Popen(
                ["timeout", "--kill-after=5", "300", sys.executable, "-m", "ledger.cli", "--db", f"w{i}.db",
                 "witness", "serve", "--new", "--key", f"w{i}.key", "--log", f"{origin}=ledger.vkey",
                 "--port", str(port), *options], cwd=self.folder, stdout=log, stderr=subprocess.STDOUT,
                env={k: v for k, v in os.environ.items() if k != "LEDGER_DB"}, start_new_session=True)
            self.processes.append(process)
            started.append(f"http://127.0.0.1:{port}")
        for url, process in zip(started, self.processes[-count:]):
            deadline = time.monotonic() + 60
            while not _answers(url):
                assert process.poll() is None and time.monotonic() < deadline, "witness serve did not start"
                time.sleep(0.1)
        return started

    def stop(self) -> None:
        for process in self.processes:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=20)


def _answers(url: str) -> bool:
    try:
        urllib.request.urlopen(urllib.request.Request(f"{url}/add-checkpoint", data=b"", method="POST"), timeout=2)
    except urllib.error.HTTPError as error:
        return error.code in (400, 429)
    except OSError:
        return False
    return False


@pytest.fixture
def witnesses(keyed, tmp_path):
    running = Witnesses(tmp_path)
    yield running
    running.stop()


def held(folder: Path, i: int) -> int:
    with sqlite3.connect(folder / f"w{i}.db") as db:
        return db.execute("SELECT size FROM logs WHERE origin = 'example.org/ledger'").fetchone()[0]


def grow(cli, folder: Path, paper: str = "2601.00001") -> None:
    """A few events more: a paper's snapshot."""
    (folder / "more.jsonl").write_bytes(event_line("paper.snapshot", {
        "arxiv_id": paper, "latest_version": 1, "snapshot_observed_at": "2026-09-01T00:00:00Z", "title": "More"}))
    assert cli("import", "more.jsonl").exit_code == 0


def test_checkpoint_gathers_cosignatures_and_verifiers_count_them(keyed, witnesses, tmp_path):
    first, second = witnesses.start(2)
    made = keyed("checkpoint", "--key", "ledger.key", "--witness", f"{first}=w0.vkey", "--witness",
                 f"{second}=w1.vkey", "--quorum", "2")
    assert made.exit_code == 0, made.stderr
    body, signatures = made.stdout.split("\n\n")
    assert len(body.split("\n")) == 3  # no extension line: the checkpoint a witness in its default configuration takes
    assert [line.split()[1] for line in signatures.strip().split("\n")] == ["example.org/ledger", "w0.example",
                                                                            "w1.example"]
    (tmp_path / "cosigned.txt").write_text(made.stdout)
    (tmp_path / "proof.json").write_text(keyed("prove", "17", "--json").stdout)
    counted = keyed("verify-proof", "proof.json", "--checkpoint", "cosigned.txt", "--verifier-key", "ledger.vkey",
                    "--witness-key", "w0.vkey", "--witness-key", "w1.vkey", "--quorum", "2")
    assert counted.exit_code == 0 and "witnessed by w0.example, w1.example (2 of 2)" in counted.stdout, counted.stderr
    assert held(tmp_path, 0) == held(tmp_path, 1) == 40
    # The log grows: each witness answers 409 with the size it holds, and takes the proof from there.
    grow(keyed, tmp_path)
    again = keyed("checkpoint", "--key", "ledger.key", "--witness", f"{first}=w0.vkey", "--witness", f"{second}=w1.vkey")
    assert again.exit_code == 0 and again.stdout.split("\n")[1] == "41", again.stderr
    assert held(tmp_path, 0) == held(tmp_path, 1) == 41


def test_a_quorum_not_met_exits_1_with_a_line_per_witness_that_did_not_cosign(keyed, witnesses, tmp_path):
    [up] = witnesses.start(1)
    run_ledger("keygen", "--cosigner", "down.example", cwd=tmp_path / "w0")  # a key for a witness that is down
    down = f"http://127.0.0.1:{_free_port()}"
    asked = ["checkpoint", "--key", "ledger.key", "--witness", f"{up}=w0.vkey", "--witness",
             f"{down}={tmp_path / 'w0' / 'witness.vkey'}"]
    refused = keyed(*asked)
    assert refused.exit_code == 1 and refused.stdout == ""
    lines = refused.stderr.strip().split("\n")
    assert len(lines) == 2 and lines[0].startswith(f"ledger: witness down.example: unreachable at {down}/add-checkpoint")
    assert lines[1] == "ledger: checkpoint: the quorum is not met: 1 of 2 witnesses cosigned"
    enough = keyed(*asked, "--quorum", "1")
    assert enough.exit_code == 0 and enough.stdout.count("\n— ") == 2
    assert enough.stderr.startswith("ledger: note: witness down.example: unreachable")


class _Bad(http.server.BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (the http.server name)
        self.rfile.read(int(self.headers["Content-Length"]))
        kind = self.server.kind
        if kind == "hang":
            time.sleep(3)
        status, content_type, body = {"hang": (200, "text/plain", b""), "garbage": (200, "text/plain", b"hello\n"),
                                      "sizeless": (409, "text/plain", b"twenty\n"),
                                      "hostile": (400, "text/plain", HOSTILE)}[kind]
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class _BadServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # the hanging one writes to a client that gave up; its traceback would land in the captured stderr


def test_a_witness_that_hangs_or_answers_garbage_is_named_and_not_counted(keyed, tmp_path):
    urls, servers = {}, []
    for kind in ("hang", "garbage", "sizeless"):
        server = _BadServer(("127.0.0.1", 0), _Bad)
        server.kind = kind
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        (tmp_path / kind).mkdir()
        assert run_ledger("keygen", "--cosigner", f"{kind}.example", cwd=tmp_path / kind).returncode == 0
        urls[kind] = f"http://127.0.0.1:{server.server_address[1]}={tmp_path / kind / 'witness.vkey'}"
    try:
        started = time.monotonic()
        refused = keyed("checkpoint", "--key", "ledger.key", "--timeout", "0.5",
                        *[arg for url in urls.values() for arg in ("--witness", url)])
        took = time.monotonic() - started
    finally:
        for server in servers:
            server.shutdown()
    assert refused.exit_code == 1 and refused.stdout == "", refused.stderr
    lines = refused.stderr.strip().split("\n")
    assert all(": " in line for line in lines), refused.stderr
    said = dict(line.split(": ", 2)[1:] for line in lines[:-1])
    assert said == {"witness hang.example": "no answer within 0.5 s",
                    "witness garbage.example": "answered 200 without a cosignature by its key",
                    "witness sizeless.example": "answered 409 without its size ('text/plain')"}
    assert took < 2.5  # asked in parallel, each bounded by its timeout (not the 3 s the hanging one takes)


# A witness's refusal: a terminal escape (clear the screen), a carriage return to overwrite the line, key text.
HOSTILE = b"\x1b[2J\rgone PRIVATE+KEY+evil+01234567+AXkH9Gv0fQ\n"


@pytest.mark.parametrize("quorum", [[], ["--quorum", "0"]])
def test_a_witness_refusal_is_quoted_never_printed_raw(keyed, tmp_path, quorum):
    """Its words reach stderr quoted, as an error line (quorum not met) or a note (met): escaped, key text
    replaced, one line."""
    server = _BadServer(("127.0.0.1", 0), _Bad)
    server.kind = "hostile"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    (tmp_path / "w").mkdir()
    assert run_ledger("keygen", "--cosigner", "hostile.example", cwd=tmp_path / "w").returncode == 0
    try:
        result = keyed("checkpoint", "--key", "ledger.key", "--timeout", "5", *quorum, "--witness",
                       f"http://127.0.0.1:{server.server_address[1]}={tmp_path / 'w' / 'witness.vkey'}")
    finally:
        server.shutdown()
    assert result.exit_code == (0 if quorum else 1), result.stderr
    line = result.stderr.split("\n")[0]
    expected = "witness hostile.example: answered 400: '\\x1b[2J\\rgone <key text, not shown>'"
    assert line == ("ledger: note: " if quorum else "ledger: ") + expected
    assert "\x1b" not in result.stderr and "\r" not in result.stderr and "evil" not in result.stderr


def test_a_policy_names_the_witnesses_to_ask_and_the_quorum_to_meet(keyed, witnesses, tmp_path):
    first, second = witnesses.start(2)
    vkeys = [(tmp_path / f"w{i}.vkey").read_text().strip() for i in (0, 1)]
    (tmp_path / "policy.txt").write_text(
        f"log {(tmp_path / 'ledger.vkey').read_text().strip()}\n# two of ours\n"
        f"witness A {vkeys[0]} {first}\nwitness B {vkeys[1]} {second}\ngroup both all A B\nquorum both\n")
    made = keyed("checkpoint", "--key", "ledger.key", "--policy", "policy.txt")
    assert made.exit_code == 0, made.stderr
    (tmp_path / "cosigned.txt").write_text(made.stdout)
    (tmp_path / "proof.json").write_text(keyed("prove", "3", "--json").stdout)
    met = keyed("verify-proof", "proof.json", "--checkpoint", "cosigned.txt", "--verifier-key", "ledger.vkey",
                "--policy", "policy.txt")
    assert met.exit_code == 0 and "witnessed by A, B (2 of 2)" in met.stdout, met.stderr
    # A stricter reader's policy: a third witness, which never cosigned, must be among them.
    assert run_ledger("keygen", "--cosigner", "c.example", cwd=tmp_path / "w0").returncode == 0
    third = (tmp_path / "w0" / "witness.vkey").read_text().strip()
    (tmp_path / "strict.txt").write_text(f"witness A {vkeys[0]}\nwitness B {vkeys[1]}\nwitness C {third}\n"
                                         f"group all3 all A B C\nquorum all3\n")
    unmet = keyed("verify-proof", "proof.json", "--checkpoint", "cosigned.txt", "--verifier-key", "ledger.vkey",
                  "--policy", "strict.txt")
    assert unmet.exit_code == 1 and unmet.stderr == ("ledger: checkpoint: the witness policy is not met: cosigned by "
                                                    "A, B (2 of the 3 witnesses it lists)\n")


def test_paper_index_proofs_and_bundles_count_the_cosignatures_of_their_tree(keyed, witnesses, tmp_path):
    [url] = witnesses.start(1)
    (tmp_path / "cosigned.txt").write_text(keyed("checkpoint", "--key", "ledger.key", "--witness", f"{url}=w0.vkey").stdout)
    (tmp_path / "index.txt").write_text(keyed("checkpoint", "--key", "ledger.key", "--paper-index").stdout)
    (tmp_path / "paper.json").write_text(keyed("prove", "--paper", "2407.20018", "--json").stdout)
    asked = ["--verifier-key", "ledger.vkey", "--witness-key", "w0.vkey"]
    alone = keyed("verify-proof", "paper.json", "--checkpoint", "index.txt", *asked)
    assert alone.exit_code == 1 and "give --cosigned with the checkpoint they cosigned" in alone.stderr
    both = keyed("verify-proof", "paper.json", "--checkpoint", "index.txt", *asked, "--cosigned", "cosigned.txt")
    assert both.exit_code == 0 and "witnessed by w0.example (1 of 1)" in both.stdout, both.stderr
    as_json = json.loads(keyed("verify-proof", "paper.json", "--checkpoint", "index.txt", *asked, "--cosigned",
                               "cosigned.txt", "--json").stdout)
    assert as_json["witnessed_by"] == ["w0.example"] and as_json["account"] == both.stdout[:-1]
    assert keyed("replay", "--paper", "2407.20018", "--as-of", "2026-08-09", "--evidence", "b.json", "--key",
                 "ledger.key").exit_code == 0
    bundle = keyed("verify", "--evidence", "b.json", *asked, "--cosigned", "cosigned.txt")
    assert bundle.exit_code == 0 and "complete" in bundle.stdout and "witnessed by w0.example" in bundle.stdout
    (tmp_path / "log.jsonl").write_bytes(keyed("export").stdout_bytes)
    monitor = keyed("verify", "--index", "log.jsonl", "--checkpoint", "index.txt", *asked, "--cosigned", "cosigned.txt")
    assert monitor.exit_code == 0 and "witnessed by w0.example" in monitor.stdout, monitor.stderr
    again = json.loads(keyed("checkpoint", "--key", "ledger.key", "--witness", f"{url}=w0.vkey", "--json").stdout)
    assert again["witnessed_by"] == ["w0.example"] and again["note"].startswith("example.org/ledger\n40\n")
    # A cosigned checkpoint of another tree does not vouch for this one.
    grow(keyed, tmp_path)
    (tmp_path / "later.txt").write_text(keyed("checkpoint", "--key", "ledger.key", "--witness", f"{url}=w0.vkey").stdout)
    other = keyed("verify", "--evidence", "b.json", *asked, "--cosigned", "later.txt")
    assert other.exit_code == 1 and "later.txt: it is of the tree of size 41, the proof's is of size 40" in other.stderr


PUSHER = """
import json, sys
from ledger.log.cosignature import parse_cosigner_key
from ledger.log.signed_notes import parse_checkpoint
from ledger.services.cosign_gathering import Target, collect
url, vkey, plan = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3]))
target = Target("w", url, parse_cosigner_key(open(vkey).read()))
for size in plan["sizes"]:
    note, proofs = plan["notes"][str(size)], plan["proofs"][str(size)]
    [answer] = collect(note, parse_checkpoint(note.split("\\n\\n")[0] + "\\n"), [target],
                       lambda old: [bytes.fromhex(h) for h in proofs[str(old)]], 5)
    print(size, "cosigned" if answer.line else answer.why, flush=True)
"""


def test_two_logs_pushing_one_origin_at_once_never_roll_the_witness_back(keyed, witnesses, tmp_path):
    from ledger.services.keys import load_signer
    from ledger.services.proofs import checkpoint, prove_consistency
    from ledger.storage.store import Store

    [url] = witnesses.start(1, "example.org/ledger", "--rate", "0")  # two pushers on one address, as fast as they go
    store = Store.open(keyed.location)
    signer = load_signer("ledger.key")
    notes = {size: checkpoint(store, signer, size)[0] for size in range(1, 41)}
    proofs = {size: {old: ([] if old in (0, size) else prove_consistency(store, old, size)["path"])
                     for old in range(0, size + 1)} for size in notes}
    store.close()
    pushers = []
    for name, sizes in (("odd", list(range(1, 41, 2))), ("even", list(range(2, 41, 2)))):
        (tmp_path / f"{name}.json").write_text(json.dumps({"sizes": sizes, "notes": notes, "proofs": proofs}))
        pushers.append(subprocess.Popen([sys.executable, "-c", PUSHER, url, "w0.vkey", f"{name}.json"], cwd=tmp_path,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = [p.communicate(timeout=120) for p in pushers]
    assert all(p.returncode == 0 for p in pushers), [err for _, err in outputs]
    said = [line.split(" ", 1) for out, _ in outputs for line in out.strip().split("\n")]
    cosigned = [int(size) for size, outcome in said if outcome == "cosigned"]
    overtaken = [outcome for _, outcome in said if outcome != "cosigned"]
    assert len(said) == 40 and all(o.startswith("holds a larger tree") for o in overtaken), overtaken
    with sqlite3.connect(tmp_path / "w0.db") as db:
        history = [size for (size,) in db.execute("SELECT size FROM cosigned ORDER BY id")]
    assert sorted(history) == sorted(cosigned) and 40 in cosigned  # every cosignature given is in its history
    assert history == sorted(history) and held(tmp_path, 0) == 40  # and the witness's state only ever grew


def test_witness_serve_refuses_bad_options_in_one_line(keyed, tmp_path):
    assert keyed("keygen", "--cosigner", "w.example").exit_code == 0
    for args, problem in [
        (["--log", "example.org/other=ledger.vkey", "--new"], "--log example.org/other: the key is of the log"),
        (["--log", "example.org/ledger"], "--log example.org/ledger: expected ORIGIN=VKEY"),
        (["--log", "example.org/ledger=ledger.vkey"], "no such witness state; give --new"),
        (["--log", "example.org/ledger=ledger.key", "--new"], "not a verifier key"),
    ]:
        refused = run_ledger("--db", "state.db", "witness", "serve", "--key", "witness.key", *args, cwd=tmp_path)
        assert refused.returncode == 2 and refused.stderr.count(b"\n") == 1 and problem.encode() in refused.stderr, \
            refused.stderr
        assert not (tmp_path / "state.db").exists()


def test_serve_and_publish_give_the_latest_cosigned_checkpoint(keyed, witnesses, tmp_path, ledger_location):
    from fastapi.testclient import TestClient

    from ledger.services.keys import load_signer
    from ledger.storage.store import Store
    from ledger.web.app import create_app

    [url] = witnesses.start(1)
    made = keyed("checkpoint", "--key", "ledger.key", "--witness", f"{url}=w0.vkey")
    assert made.exit_code == 0, made.stderr
    grow(keyed, tmp_path)  # the log moves on past the witnessed tree (40 -> 41)
    bare = keyed("checkpoint", "--key", "ledger.key").stdout
    assert bare.split("\n")[1] == "41" and "w0.example" not in bare
    store = Store.open(ledger_location)
    try:
        served = TestClient(create_app(store, load_signer("ledger.key")))
        assert served.get("/checkpoint").text == made.stdout  # the witnessed one, not the newer bare one
    finally:
        store.close()
    published = keyed("publish", "--as-of", "2026-09-03", "out", "--key", "ledger.key")
    assert published.exit_code == 0, published.stderr
    assert (tmp_path / "out" / "checkpoint").read_text() == made.stdout
    for partial in ("tile/0/000.p/40", "tile/entries/000.p/40", "tile/0/000.p/41"):  # both trees' partial tiles
        assert (tmp_path / "out" / partial).is_file(), partial
    # A later cosigning of the grown tree replaces it; asking again for an older tree does not go back.
    newer = keyed("checkpoint", "--key", "ledger.key", "--witness", f"{url}=w0.vkey")
    assert newer.exit_code == 0 and newer.stdout.split("\n")[1] == "41", newer.stderr
    assert keyed("publish", "--as-of", "2026-09-03", "out", "--key", "ledger.key").exit_code == 0
    assert (tmp_path / "out" / "checkpoint").read_text() == newer.stdout
    from ledger.storage.cosigned_checkpoint import keep_cosigned, latest_cosigned

    store = Store.open(ledger_location)
    try:
        assert not keep_cosigned(store, made.stdout) and latest_cosigned(store) == newer.stdout
    finally:
        store.close()


def test_the_monitor_counts_the_cosignatures_of_the_checkpoint_it_follows(keyed, witnesses, tmp_path):
    first, _ = witnesses.start(2)
    assert keyed("checkpoint", "--key", "ledger.key", "--witness", f"{first}=w0.vkey").exit_code == 0
    assert keyed("publish", "--as-of", "2026-09-03", "out", "--key", "ledger.key").exit_code == 0
    watch = ("monitor", "out", "--verifier-key", "ledger.vkey", "--state", "state", "--witness-key", "w0.vkey")
    met = keyed(*watch, "--json")
    assert met.exit_code == 0 and list(json.loads(met.stdout)["witnesses"]) == ["w0.example"], met.stderr
    unmet = keyed(*watch, "--witness-key", "w1.vkey", "--quorum", "2")
    assert unmet.exit_code == 1 and "cosigned by w0.example (1 of the 2 witnesses it lists)" in unmet.stderr


def test_bundles_carry_the_latest_cosigned_checkpoint_of_their_tree(keyed, witnesses, tmp_path, ledger_location):
    from fastapi.testclient import TestClient

    from ledger.services.keys import load_signer
    from ledger.storage.store import Store
    from ledger.web.app import create_app

    [url] = witnesses.start(1)
    asked = ["--verifier-key", "ledger.vkey", "--witness-key", "w0.vkey"]
    grow(keyed, tmp_path)  # another paper's event: seed 004's paper has none past tree 40
    cosigned = keyed("checkpoint", "--key", "ledger.key", "--witness", f"{url}=w0.vkey").stdout
    assert cosigned.split("\n")[1] == "41"
    made = keyed("replay", "--paper", "2407.20018", "--as-of", "2026-08-09", "--evidence", "b.json", "--key", "ledger.key")
    assert made.exit_code == 0, made.stderr
    bundle = json.loads((tmp_path / "b.json").read_text())
    assert bundle["cosigned"] == cosigned and bundle["index"]["tree_size"] == 41  # the witnessed tree, not 40
    counted = keyed("verify", "--evidence", "b.json", *asked)  # no --cosigned: the bundle carries it
    assert counted.exit_code == 0 and "complete" in counted.stdout and "witnessed by w0.example" in counted.stdout
    assert keyed("verify", "--evidence", "b.json", "--verifier-key", "ledger.vkey").exit_code == 0
    # The site's integrity bundle carries it too, and is of that tree.
    store = Store.open(ledger_location)
    try:
        served = TestClient(create_app(store, load_signer("ledger.key"))).get("/paper/2407.20018/integrity.json")
    finally:
        store.close()
    assert served.status_code == 200 and served.json()["evidence"]["cosigned"] == cosigned
    # A carried note of another tree, or one the log did not sign, is refused before any witness is counted.
    grow(keyed, tmp_path, "2601.00002")
    bundle["cosigned"] = keyed("checkpoint", "--key", "ledger.key").stdout
    (tmp_path / "other.json").write_text(json.dumps(bundle))
    other = keyed("verify", "--evidence", "other.json", "--verifier-key", "ledger.vkey")
    assert other.exit_code == 1 and "cosigned: it is of the tree of size 42, the bundle's of size 41" in other.stderr
    bundle["cosigned"] = cosigned[:-4] + "AA=\n"  # the witness's line, its signature's last bytes changed
    (tmp_path / "broken.json").write_text(json.dumps(bundle))
    assert keyed("verify", "--evidence", "broken.json", "--verifier-key", "ledger.vkey").exit_code == 0  # not asked
    broken = keyed("verify", "--evidence", "broken.json", *asked)
    assert broken.exit_code == 1 and broken.stderr.startswith("ledger: the bundle's cosigned checkpoint: "), broken.stderr
    # A paper with an event past the witnessed tree: its bundle is of its own size, with nothing carried.
    made = keyed("replay", "--paper", "2601.00002", "--as-of", "2026-09-09", "--evidence", "c.json", "--key", "ledger.key")
    assert made.exit_code == 0, made.stderr
    assert "cosigned" not in json.loads((tmp_path / "c.json").read_text())


def test_the_monitor_leaves_a_published_record_newer_than_the_cosigned_checkpoint_for_later(keyed, witnesses,
                                                                                              tmp_path):
    """The site publishes at its head, /checkpoint is the older cosigned tree: a record holding an event past
    it is not the rebuild at that tree, and is not misbehaviour either."""
    [url] = witnesses.start(1)
    assert keyed("checkpoint", "--key", "ledger.key", "--witness", f"{url}=w0.vkey").exit_code == 0  # tree 40
    (tmp_path / "later.jsonl").write_bytes(event_line("paper.snapshot", {
        "arxiv_id": "2407.20018", "latest_version": 9, "snapshot_observed_at": "2026-08-20T00:00:00Z",
        "title": "A later title"}))
    assert keyed("import", "later.jsonl").exit_code == 0  # seed 004's own paper changes at 41
    assert keyed("publish", "--as-of", "2026-09-03", "out", "--key", "ledger.key").exit_code == 0
    assert (tmp_path / "out" / "checkpoint").read_text().split("\n")[1] == "40"
    watched = keyed("monitor", "out", "--verifier-key", "ledger.vkey", "--state", "state", "--json")
    assert watched.exit_code == 0, watched.stderr
    first = json.loads(watched.stdout)
    assert (first["size"], first["records"], first["later"]) == (40, 0, 1)
    # Once the witnesses cosign the tree that holds it, the record is compared.
    assert keyed("checkpoint", "--key", "ledger.key", "--witness", f"{url}=w0.vkey").exit_code == 0  # tree 41
    assert keyed("publish", "--as-of", "2026-09-03", "out", "--key", "ledger.key").exit_code == 0
    again = json.loads(keyed("monitor", "out", "--verifier-key", "ledger.vkey", "--state", "state", "--json").stdout)
    assert (again["size"], again["records"], again["later"]) == (41, 1, 0)


def _post(url: str, body: bytes) -> tuple[int, dict, bytes]:
    """One POST to the witness on a fresh connection: status, headers (lower-case names) and body."""
    request = urllib.request.Request(f"{url}/add-checkpoint", data=body, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, {k.lower(): v for k, v in answer.headers.items()}, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


def _state_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.glob("w0.db*"))  # the file, its -wal and -shm


def test_300_garbage_requests_store_under_64_kb_accuse_nobody_and_an_honest_push_still_succeeds(keyed, witnesses,
                                                                                                 tmp_path):
    import random

    from ledger.log.signed_notes import Checkpoint, generate_signer
    from ledger.services.cosigning_witness import MAX_BODY, submission

    [url] = witnesses.start(1, "example.org/ledger", "--rate", "1000")  # the flood is processed, not throttled
    assert keyed("checkpoint", "--key", "ledger.key", "--witness", f"{url}=w0.vkey").exit_code == 0  # holds 40
    grow(keyed, tmp_path)
    honest = keyed("checkpoint", "--key", "ledger.key").stdout  # the log's own note of 41, which anyone may copy
    state = tmp_path / "w0.db"
    with closing(sqlite3.connect(state)) as db:  # closed, so the witness's own connections are the last
        held_note = db.execute("SELECT note FROM logs").fetchone()[0]
    stranger = generate_signer("example.org/other")
    impostor = generate_signer("example.org/ledger")  # the log's name, another key
    rng = random.Random(42)
    kinds = [
        lambda: bytes(rng.randrange(256) for _ in range(rng.randrange(1, 2000))),  # malformed
        lambda: submission(40, [rng.randbytes(32) for _ in range(rng.randrange(1, 20))], honest),  # unsigned, bad
        lambda: submission(0, [rng.randbytes(32)], honest),  # 409: not the size it holds
        lambda: submission(0, [], stranger.sign(Checkpoint(stranger.name, 5, rng.randbytes(32)).text())),  # 404
        lambda: submission(40, [], impostor.sign(Checkpoint(impostor.name, 40, rng.randbytes(32)).text())),  # 403
        lambda: submission(40, [], honest) + b"x" * MAX_BODY,  # 413
        lambda: submission(40, [], held_note + f"\u2014 junk{rng.randrange(10**9)} AAAAAAAA\n"),  # the held one again
    ]
    before = _state_bytes(tmp_path)
    statuses = [_post(url, kinds[i % len(kinds)]())[0] for i in range(300)]
    grew = _state_bytes(tmp_path) - before
    print(f"300 requests: the state grew by {grew} bytes")
    assert set(statuses) == {400, 403, 404, 409, 413, 422, 200}, sorted(set(statuses))
    assert grew < 64 * 1024, grew
    with closing(sqlite3.connect(state)) as db:
        assert db.execute("SELECT count(*) FROM evidence").fetchone()[0] == 0  # nobody accused
        assert db.execute("SELECT count(*) FROM cosigned").fetchone()[0] == 1  # the held note again: no row
    again = keyed("checkpoint", "--key", "ledger.key", "--witness", f"{url}=w0.vkey")
    assert again.exit_code == 0 and again.stdout.split("\n")[1] == "41", again.stderr
    assert held(tmp_path, 0) == 41


def test_a_client_over_witness_serve_rate_gets_429_with_retry_after(keyed, witnesses, tmp_path):
    [url] = witnesses.start(1, "example.org/ledger", "--rate", "0.1")  # one request per 10 s, bursts of 1
    answers = [_post(url, b"old 0\n\nx") for _ in range(3)]  # the start-up probe may have taken the one token
    limited = [(headers, body) for status, headers, body in answers if status == 429]
    assert len(limited) >= 2 and all(status in (400, 429) for status, _, _ in answers)
    headers, body = limited[-1]
    assert 1 <= int(headers["retry-after"]) <= 10 and body.count(b"\n") == 1


def test_the_same_tree_cosigned_again_by_more_witnesses_is_merged_into_the_note_served(keyed, witnesses, tmp_path,
                                                                                       ledger_location):
    from fastapi.testclient import TestClient

    from ledger.log.signed_notes import Checkpoint
    from ledger.services.keys import load_signer
    from ledger.storage.cosigned_checkpoint import keep_cosigned, latest_cosigned
    from ledger.storage.store import Store
    from ledger.web.app import create_app

    first, second = witnesses.start(2)
    one = keyed("checkpoint", "--key", "ledger.key", "--witness", f"{first}=w0.vkey")
    assert one.exit_code == 0 and one.stdout.count("\n— ") == 2, one.stderr
    both = keyed("checkpoint", "--key", "ledger.key", "--witness", f"{first}=w0.vkey", "--witness", f"{second}=w1.vkey")
    assert both.exit_code == 0, both.stderr
    signers = lambda note: [line.split()[1] for line in note.split("\n\n")[1].strip().split("\n")]  # noqa: E731
    store = Store.open(ledger_location)
    try:
        kept = latest_cosigned(store)
        # One line per key: the log's and w0's as first kept, w1's added.
        assert kept.startswith(one.stdout) and signers(kept) == ["example.org/ledger", "w0.example", "w1.example"]
        assert TestClient(create_app(store, load_signer("ledger.key"))).get("/checkpoint").text == kept
        assert not keep_cosigned(store, one.stdout) and latest_cosigned(store) == kept  # fewer: nothing changes
        signer = load_signer("ledger.key")  # the same size, another tree: never mixed in
        other = signer.sign(Checkpoint("example.org/ledger", 40, bytes(32)).text())
        assert not keep_cosigned(store, other) and latest_cosigned(store) == kept
    finally:
        store.close()
    alone = keyed("checkpoint", "--key", "ledger.key", "--witness", f"{second}=w1.vkey")
    assert alone.exit_code == 0 and "it stays the one served" in alone.stderr  # w1's line was there already
