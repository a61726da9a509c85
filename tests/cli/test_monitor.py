"""`ledger monitor` following real logs: published folders, the same folders on a static HTTP host (whose
requests are logged, to see which tiles were fetched), and a `ledger serve` process; forks made with two
ledgers under one key, tampered files, a log whose entry is not an event, and hosts that do not answer.
"""

from __future__ import annotations

import base64
import functools
import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from ledger.core.errors import IntegrityError
from ledger.log.merkle import verify_consistency
from ledger.log.signed_notes import verify_checkpoint
from ledger.services.keys import load_verifier
from tests.conftest import PAPER_004, Cli, _free_port, run_ledger
from tests.helpers import event_line, one_entry_site, redigest, seed_record, write_record

AS_OF = "2026-09-03"


def snapshots(first: int, count: int) -> bytes:
    """`count` new papers' snapshots, from 2601.<first>: one event each."""
    return b"".join(event_line("paper.snapshot", {
        "arxiv_id": f"2601.{n:05d}", "latest_version": 1, "snapshot_observed_at": "2026-09-01T00:00:00Z",
        "title": f"Paper {n}"}) for n in range(first, first + count))


def grow(cli, folder, first: int, count: int) -> None:
    (folder / "more.jsonl").write_bytes(snapshots(first, count))
    assert cli("import", "more.jsonl").exit_code == 0


def publish(cli, out: str = "out") -> None:
    made = cli("publish", "--as-of", AS_OF, out, "--key", "ledger.key")
    assert made.exit_code == 0, made.stderr


def watch(cli, where: str, *extra: str):
    return cli("monitor", where, "--verifier-key", "ledger.vkey", "--state", "state", "--json", *extra)


def answer(result) -> dict:
    return json.loads(result.stdout)


class Host:
    """A static host of a published folder (as a site is deployed), noting every path asked for."""

    def __init__(self, folder):
        self.asked: list[str] = []
        host = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (the http.server name)
                host.asked.append(self.path)
                super().do_GET()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(folder)))
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def tiles(self) -> list[str]:
        return sorted(path for path in self.asked if path.startswith("/tile/"))


@pytest.fixture
def host(tmp_path):
    made = []
    yield lambda folder: made.append(Host(folder)) or made[-1]
    for running in made:
        running.server.shutdown()


def test_a_published_log_is_followed_and_only_new_tiles_are_fetched(keyed, tmp_path, host, monkeypatch):
    monkeypatch.setattr("ledger.services.monitor.CHUNK", 64)  # the 250 new entries in 4 import transactions
    publish(keyed)
    site = host(tmp_path / "out")
    first = watch(keyed, site.url)
    assert first.exit_code == 0, first.stderr
    assert answer(first) | {"root": None} == {
        "status": "consistent", "log": "example.org/ledger", "size": 40, "root": None, "new_entries": 40,
        "records": 1, "index_notes": 1, "witnesses": {}, "behind": None, "later": 0}
    assert site.tiles() == ["/tile/0/000.p/40", "/tile/entries/000.p/40"]
    # Across a tile boundary: the full tile 000 and the partial 001.p/34, not the old partial 000.p/40 again.
    grow(keyed, tmp_path, 1, 250)
    publish(keyed)
    site.asked.clear()
    second = watch(keyed, site.url)
    assert second.exit_code == 0, second.stderr
    assert answer(second)["new_entries"] == 250 and answer(second)["size"] == 290
    assert answer(second)["records"] == 250  # the papers that changed, each compared with its rebuild
    assert site.tiles() == ["/tile/0/000", "/tile/0/001.p/34", "/tile/1/000.p/1", "/tile/entries/000",
                            "/tile/entries/001.p/34"]
    # Nothing new: the partial tile of the size held is all it reads again, and no record.
    site.asked.clear()
    third = watch(keyed, site.url)
    assert third.exit_code == 0 and answer(third)["new_entries"] == 0 and answer(third)["records"] == 0
    assert site.tiles() == ["/tile/0/001.p/34", "/tile/entries/001.p/34"]
    # A level-1 tile that is not the tree's: caught, though its entries and level-0 tiles are right.
    shutil.copytree(tmp_path / "out", tmp_path / "high")
    high = tmp_path / "high" / "tile" / "1" / "000.p" / "1"
    high.write_bytes(bytes(32))
    wrong = keyed("monitor", "high", "--verifier-key", "ledger.vkey", "--state", "state3")
    assert wrong.exit_code == 1 and "tile/1/000.p/1: its hashes are not those of the tree" in wrong.stderr
    # The folder itself, with --paper: one record compared, in its text form.
    text = keyed("monitor", "out", "--verifier-key", "ledger.vkey", "--state", "state2", "--paper", PAPER_004)
    assert text.exit_code == 0 and text.stdout.startswith("example.org/ledger: consistent at size 290 "), text.stderr
    assert "290 new entries checked, 1 record and 1 paper index note compared" in text.stdout


@pytest.fixture
def served(keyed, ledger_location, tmp_path):
    """`ledger serve --key ledger.key` of the test's ledger, in a real process."""
    port = _free_port()
    process = subprocess.Popen(["timeout", "--kill-after=5", "300", sys.executable, "-m", "ledger.cli", "--db",
                                ledger_location, "serve", "--key", "ledger.key", "--port", str(port)], cwd=tmp_path,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                               env={k: v for k, v in os.environ.items() if k != "LEDGER_DB"})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{url}/checkpoint", timeout=2).close()
            break
        except OSError:
            assert process.poll() is None and time.monotonic() < deadline, "serve did not start"
            time.sleep(0.1)
    yield url
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=20)


def test_a_served_log_is_followed_with_what_it_knew_at_the_checkpoint(keyed, tmp_path, served):
    url = served
    assert watch(keyed, url).exit_code == 0
    grow(keyed, tmp_path, 1, 3)
    moved = watch(keyed, url)
    assert moved.exit_code == 0, moved.stderr
    assert (answer(moved)["size"], answer(moved)["new_entries"], answer(moved)["records"]) == (43, 3, 3)


def other_ledger(cli, tmp_path, *extra: int) -> Cli:
    """A second ledger (SQLite) under the same key: a copy of this one's log so far (its exported entries,
    the same bytes), then snapshots of papers from 2601.<extra[0]>."""
    (tmp_path / "log.jsonl").write_text(cli("export").stdout)
    other = Cli(str(tmp_path / "b.db"))
    assert other("init").exit_code == 0 and other("import", str(tmp_path / "log.jsonl")).exit_code == 0
    if extra:
        (tmp_path / "other.jsonl").write_bytes(snapshots(*extra))
        assert other("import", str(tmp_path / "other.jsonl")).exit_code == 0
    return other


def test_a_fork_under_one_key_is_caught_with_portable_evidence(keyed, tmp_path):
    """Two ledgers, one key: the same 40 events, then 1 of this one's and 2 of the other's."""
    other = other_ledger(keyed, tmp_path, 7, 2)
    grow(keyed, tmp_path, 1, 1)
    publish(keyed, "a")
    assert watch(keyed, "a").exit_code == 0
    kept = (tmp_path / "state" / "checkpoint").read_text()
    assert other("publish", "--as-of", AS_OF, "b", "--key", "ledger.key").exit_code == 0
    forked = watch(keyed, "b")
    assert forked.exit_code == 1 and "the log forked" in forked.stderr and forked.stderr.count("\n") == 1
    evidence = answer(forked)
    assert evidence["status"] == "misbehaviour" and evidence["checkpoints"][0] == kept
    verifier = load_verifier("ledger.vkey")
    old, new = (verify_checkpoint(note, verifier) for note in evidence["checkpoints"])  # both signed by the key
    assert (old.size, new.size) == (41, 42) and evidence["first_difference"]["seq"] == 41
    proof = [bytes.fromhex(h) for h in evidence["consistency"]["path"]]
    with pytest.raises(IntegrityError):  # the log's own proof does not lead from the tree kept to the new one
        verify_consistency(41, 42, old.root, new.root, proof)
    # Portable: the proof is `prove --consistency`'s form and holds against the new signed checkpoint, and the
    # prefix it proves is not the tree the kept checkpoint signs: two signed statements that contradict.
    (tmp_path / "proof.json").write_text(json.dumps(evidence["consistency"]))
    (tmp_path / "new.txt").write_text(evidence["checkpoints"][1])
    checked = keyed("verify-proof", "proof.json", "--checkpoint", "new.txt", "--verifier-key", "ledger.vkey")
    assert checked.exit_code == 0, checked.stderr
    assert bytes.fromhex(evidence["consistency"]["old_root"]) != old.root
    theirs, ours = (base64.b64decode(evidence["first_difference"][k]) for k in ("served", "held"))
    assert b'"seq":41' in theirs and b'"seq":41' in ours and theirs != ours
    assert (tmp_path / "state" / "checkpoint").read_text() == kept  # nothing saved
    assert watch(keyed, "b").exit_code == 1  # and it stays caught


def test_same_size_other_root_and_an_older_checkpoint(keyed, tmp_path):
    publish(keyed, "old")
    other = other_ledger(keyed, tmp_path, 9, 1)
    grow(keyed, tmp_path, 1, 1)
    publish(keyed, "a")
    assert watch(keyed, "a").exit_code == 0
    behind = watch(keyed, "old")  # a stale copy of the same log: a prefix of the tree held
    assert behind.exit_code == 0 and answer(behind)["behind"] == 41 and answer(behind)["size"] == 40
    assert other("publish", "--as-of", AS_OF, "b", "--key", "ledger.key").exit_code == 0
    forked = watch(keyed, "b")
    assert forked.exit_code == 1 and "is not the tree this monitor holds" in forked.stderr
    notes = answer(forked)["checkpoints"]
    assert [n.split("\n")[1] for n in notes] == ["41", "41"] and notes[0].split("\n")[2] != notes[1].split("\n")[2]
    # An older checkpoint of another tree: the held tree's proof from that size, which `verify-proof` accepts
    # against the held checkpoint, names another root for that prefix than the one the log now signs.
    grow(keyed, tmp_path, 20, 1)
    publish(keyed, "a")
    assert watch(keyed, "a").exit_code == 0
    older = watch(keyed, "b")  # b's tree of 41 against the 42 held
    assert older.exit_code == 1 and "is not the tree this monitor holds (size 42)" in older.stderr
    evidence = answer(older)
    (tmp_path / "proof.json").write_text(json.dumps(evidence["consistency"]))
    (tmp_path / "held.txt").write_text(evidence["checkpoints"][0])
    checked = keyed("verify-proof", "proof.json", "--checkpoint", "held.txt", "--verifier-key", "ledger.vkey")
    assert checked.exit_code == 0, checked.stderr
    served = verify_checkpoint(evidence["checkpoints"][1], load_verifier("ledger.vkey"))
    assert served.size == 41 and bytes.fromhex(evidence["consistency"]["old_root"]) != served.root


def test_tampered_files_are_misbehaviour_and_nothing_is_saved(keyed, tmp_path):
    publish(keyed)
    shutil.copytree(tmp_path / "out", tmp_path / "record")
    record = tmp_path / "record" / "paper" / PAPER_004 / "citation-record.json"
    record.write_bytes(record.read_bytes().replace(b'"title":"', b'"title":"X', 1))
    bad = watch(keyed, "record")
    assert bad.exit_code == 1 and "the record served is not the rebuild" in bad.stderr
    assert answer(bad)["record"]["paper"] == PAPER_004 and answer(bad)["record"]["served"] != answer(bad)["record"]["rebuilt"]
    assert not (tmp_path / "state" / "checkpoint").exists()
    shutil.copytree(tmp_path / "out", tmp_path / "tile")
    bundle = tmp_path / "tile" / "tile" / "entries" / "000.p" / "40"
    data = bytearray(bundle.read_bytes())
    data[-3] ^= 1
    bundle.write_bytes(bytes(data))
    broken = watch(keyed, "tile")
    assert broken.exit_code == 1 and "its hashes are not those of tile/entries/000.p/40" in broken.stderr
    (tmp_path / "tile" / "tile" / "entries" / "000.p" / "40").unlink()
    missing = watch(keyed, "tile")
    assert missing.exit_code == 1 and "does not serve tile/entries/000.p/40" in missing.stderr


def test_a_signed_entry_that_is_not_an_event_is_misbehaviour(keyed, tmp_path):
    """A log of one entry that is not JSON, its tiles and a checkpoint signed over them."""
    one_entry_site(tmp_path / "site", b"not an event")
    bad = watch(keyed, "site")
    assert bad.exit_code == 1 and "log entry 1:" in bad.stderr and answer(bad)["seq"] == 1


def test_unreachable_logs_exit_3_and_bad_options_exit_2(keyed, tmp_path):
    nobody = watch(keyed, f"http://127.0.0.1:{_free_port()}")
    assert nobody.exit_code == 3 and answer(nobody)["status"] == "unreachable" and "ledger: " in nobody.stderr
    assert watch(keyed, "no-such-folder").exit_code == 3
    (tmp_path / "empty").mkdir()
    assert watch(keyed, "empty").exit_code == 3  # a folder without a checkpoint
    assert not (tmp_path / "state" / "checkpoint").exists()
    publish(keyed)
    assert watch(keyed, "out", "--quorum", "1").exit_code == 2
    assert keyed("monitor", "out", "--verifier-key", "nope.vkey", "--state", "state").exit_code == 2
    (tmp_path / "file").write_text("")
    not_a_folder = keyed("monitor", "out", "--verifier-key", "ledger.vkey", "--state", "file")
    assert not_a_folder.exit_code == 2 and not_a_folder.stderr == ("ledger: --state file: not a folder (the "
                                                                   "monitor keeps its ledger and checkpoints there)\n")
    assert watch(keyed, "out").exit_code == 0
    (tmp_path / "other").mkdir()
    assert run_ledger("keygen", "other.example/log", cwd=tmp_path / "other").returncode == 0
    another = keyed("monitor", "out", "--verifier-key", "other/ledger.vkey", "--state", "state3")
    assert another.exit_code == 1 and another.stderr.startswith("ledger: out/checkpoint: ")  # not that key's log
    (tmp_path / "state" / "checkpoint").write_text("not a checkpoint\n")
    spoiled = keyed("monitor", "out", "--verifier-key", "ledger.vkey", "--state", "state")
    assert spoiled.exit_code == 2 and spoiled.stderr.startswith("ledger: state/checkpoint: not a checkpoint of this "
                                                                "log's key"), spoiled.stderr


def test_a_root_that_fails_appends_nothing_to_the_monitors_ledger(keyed, tmp_path):
    """The tiles are checked against the root before any entry is imported (the ledger cannot take one back):
    a new level-0 tile edited, or a new bundle edited, leaves the monitor's ledger at the size it held."""
    from ledger.storage.store import Store

    def held() -> int:
        store = Store.open(str(tmp_path / "state" / "ledger.db"))
        try:
            return store.head()[0]
        finally:
            store.close()

    publish(keyed)
    assert watch(keyed, "out").exit_code == 0 and held() == 40
    vouched = (tmp_path / "state" / "checkpoint").read_text()
    grow(keyed, tmp_path, 1, 250)
    publish(keyed)
    for edited in ("tile/0/001.p/34", "tile/entries/001.p/34"):
        shutil.rmtree(tmp_path / "bad", ignore_errors=True)
        shutil.copytree(tmp_path / "out", tmp_path / "bad")
        data = bytearray((tmp_path / "bad" / edited).read_bytes())
        data[-1] ^= 1
        (tmp_path / "bad" / edited).write_bytes(bytes(data))
        bad = watch(keyed, "bad")
        assert bad.exit_code == 1, bad.stderr
        assert "bad/tile/0/001.p/34: its hashes are not those of tile/entries/001.p/34's 34 entries" in bad.stderr
        assert held() == 40 and (tmp_path / "state" / "checkpoint").read_text() == vouched
    good = watch(keyed, "out")
    assert good.exit_code == 0 and answer(good)["new_entries"] == 250 and held() == 290


def test_a_symbolic_link_planted_in_the_state_is_never_written_through(keyed, tmp_path):
    publish(keyed)
    (tmp_path / "state").mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("kept\n")
    (tmp_path / "state" / "seen").symlink_to(outside)
    planted = watch(keyed, "out")
    assert planted.exit_code == 2 and planted.stderr.count("\n") == 1 and "symbolic link" in planted.stderr
    assert outside.read_text() == "kept\n" and not (tmp_path / "state" / "checkpoint").exists()


def test_a_citations_linked_id_never_becomes_a_path(cli, tmp_path, monkeypatch, host):
    """A citation's ids are data (`../../x` is kept as published) and papers_since names them: the monitor
    compares only the papers whose id `is_paper_id` accepts, so it neither asks a site for a path with `..`
    nor reads a file outside a published folder."""
    monkeypatch.chdir(tmp_path)
    record = seed_record()
    record["inbound"][0]["citation"]["citing_paper"]["arxiv_id"] = "../../x"
    record["inbound"][0]["links"]["citing_paper"] = "/paper/../../x"
    assert cli("init").exit_code == 0
    assert cli("import", write_record(tmp_path / "record.json", redigest(record))).exit_code == 0
    assert cli("keygen", "example.org/ledger").exit_code == 0
    publish(cli)
    (tmp_path / "x").mkdir()  # where out/paper/../../x/ leads: a record there would be compared, and differ
    for name in ("citation-record.json", "integrity.json"):
        (tmp_path / "x" / name).write_text('{"as_of": "2026-09-03T00:00:00Z"}')
    folder = watch(cli, "out")
    assert folder.exit_code == 0, folder.stderr
    assert answer(folder)["records"] == 1  # the seed's paper only
    site = host(tmp_path / "out")
    served = cli("monitor", site.url, "--verifier-key", "ledger.vkey", "--state", "state2", "--json")
    assert served.exit_code == 0, served.stderr
    assert answer(served)["records"] == 1 and not [path for path in site.asked if ".." in path], site.asked


def test_the_states_checkpoints_are_read_up_to_a_notes_limit(keyed, tmp_path):
    publish(keyed)
    (tmp_path / "state").mkdir()
    for name in ("checkpoint", "seen"):
        (tmp_path / "state" / name).write_bytes(b"x" * (64 * 1024 + 1))
        big = watch(keyed, "out")
        assert big.exit_code == 2 and big.stdout.count("\n") <= 1, big.stderr
        assert big.stderr == f"ledger: state/{name}: over the 64 KiB limit for a signed checkpoint\n"
        (tmp_path / "state" / name).unlink()
    assert watch(keyed, "out").exit_code == 0


def test_a_bundle_that_changes_while_a_fork_is_shown_is_misbehaviour(keyed, tmp_path, monkeypatch):
    """_fork fetches the first differing entry's bundle again: a log serving a broken one by then is
    misbehaving (exit 1), not the user's input (exit 2)."""
    from ledger.services import monitor

    other = other_ledger(keyed, tmp_path, 7, 2)
    grow(keyed, tmp_path, 1, 1)
    publish(keyed, "a")
    assert watch(keyed, "a").exit_code == 0
    assert other("publish", "--as-of", AS_OF, "b", "--key", "ledger.key").exit_code == 0
    fetched: dict[str, int] = {}
    plain = monitor.Source.get

    def changing(self, path, kind, query=None):
        fetched[path] = fetched.get(path, 0) + 1
        if kind == "entry bundle" and fetched[path] > 1:
            return b"\xff"  # not a bundle: its length prefix runs past its end
        return plain(self, path, kind, query)

    monkeypatch.setattr(monitor.Source, "get", changing)
    forked = watch(keyed, "b")
    assert forked.exit_code == 1 and forked.stderr.count("\n") == 1, forked.stderr
    assert forked.stderr.startswith("ledger: b/tile/entries/000.p/42: ") and answer(forked)["status"] == "misbehaviour"
