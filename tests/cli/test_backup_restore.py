"""`ledger backup` and `ledger restore` on real files: a backup taken while a real `ledger import` process
appends, verified with its manifest; restores of a backup older than the published checkpoint, with the site
(caught up, the same export bytes) and without it (refused, nothing left); a ledger rebuilt from a published
folder alone, whose records replay byte for byte; a tampered tile named. PostgreSQL: pg_dump's path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.conftest import POSTGRES, SEED_004, Cli, _admin, _free_port, postgres_schema_url
from tests.helpers import event_line, stop_process

AS_OF = "2026-09-03"


def snapshots(first: int, count: int) -> bytes:
    """`count` new papers' snapshots, from 2601.<first>: one event each."""
    return b"".join(event_line("paper.snapshot", {
        "arxiv_id": f"2601.{n:05d}", "latest_version": 1, "snapshot_observed_at": "2026-09-01T00:00:00Z",
        "title": f"Paper {n}"}) for n in range(first, first + count))


@pytest.fixture
def lost(tmp_path, monkeypatch) -> Cli:
    """A keyed SQLite ledger of seed 004 (40 events), in the test's own working directory."""
    monkeypatch.chdir(tmp_path)
    cli = Cli(str(tmp_path / "ledger.db"))
    assert cli("init").exit_code == 0 and cli("import", str(SEED_004)).exit_code == 0
    assert cli("keygen", "example.org/ledger").exit_code == 0
    return cli


def grow(cli: Cli, first: int, count: int) -> None:
    with open("more.jsonl", "wb") as file:
        file.write(snapshots(first, count))
    assert cli("import", "more.jsonl").exit_code == 0


def listing(tmp_path) -> list[str]:
    return sorted(os.listdir(tmp_path))


def test_a_backup_records_its_head_and_checkpoint_and_verify_checks_them(lost, tmp_path):
    with open("cp.txt", "w") as file:
        file.write(lost("checkpoint", "--key", "ledger.key").stdout)
    made = lost("backup", "b.db", "--checkpoint", "cp.txt", "--verifier-key", "ledger.vkey", "--json")
    assert made.exit_code == 0, made.stderr
    head = json.loads(lost("head", "--json").stdout)
    assert json.loads(made.stdout) == {"snapshot": "b.db", "manifest": "b.db.manifest.json", "size": 40,
                                       "head": head["chain_hash"], "checkpoints": [40]}
    manifest = (tmp_path / "b.db.manifest.json").read_bytes()
    assert json.loads(manifest) == {"format": "ledger.backup.v1", "snapshot": "b.db", "backend": "sqlite",
                                    "size": 40, "head": head["chain_hash"],
                                    "checkpoints": [(tmp_path / "cp.txt").read_text()]}
    assert manifest == json.dumps(json.loads(manifest), sort_keys=True, separators=(",", ":"),
                                  ensure_ascii=False).encode() + b"\n"  # canonical JSON
    backup = Cli(str(tmp_path / "b.db"))
    checked = backup("verify", "--verifier-key", "ledger.vkey")
    assert checked.exit_code == 0, checked.stderr
    assert checked.stdout.endswith("tree consistent with its checkpoints of size 40 (signed by example.org/ledger)\n")
    assert "signatures not checked" in backup("verify").stdout
    # A manifest that is not this ledger's head: exit 1, naming it.
    (tmp_path / "b.db.manifest.json").write_bytes(manifest.replace(b'"size":40', b'"size":41'))
    wrong = backup("verify")
    assert wrong.exit_code == 1 and "b.db.manifest.json: records the head 41" in wrong.stderr
    # Never over an existing file; and a ledger behind the checkpoint given is refused, nothing written.
    again = lost("backup", "b.db")
    assert again.exit_code == 2 and "b.db: already exists" in again.stderr
    grow(lost, 1, 3)
    with open("cp43.txt", "w") as file:
        file.write(lost("checkpoint", "--key", "ledger.key").stdout)
    behind = Cli(str(tmp_path / "b.db"))("backup", "c.db", "--checkpoint", "cp43.txt")
    assert behind.exit_code == 1 and "signs a tree of 43 entries; the ledger holds 40" in behind.stderr
    assert not [name for name in listing(tmp_path) if name.startswith(("c.db", ".c.db"))]


def write_locked(path) -> bool:
    """Whether another connection holds the ledger's write lock now (an import appending in its transaction)."""
    import sqlite3

    probe = sqlite3.connect(path, timeout=0)
    try:
        probe.execute("BEGIN IMMEDIATE")
        probe.rollback()
        return False
    except sqlite3.OperationalError:
        return True
    finally:
        probe.close()


@pytest.mark.slow
def test_a_backup_taken_while_a_real_import_appends_verifies(lost, tmp_path):
    (tmp_path / "big.jsonl").write_bytes(snapshots(1, 20_000))
    # --jobs 2: the write lock is taken once the first unit is decoded, and appends overlap decoding.
    importing = subprocess.Popen([sys.executable, "-m", "ledger.cli", "--db", "ledger.db", "import", "--jobs", "2",
                                  "big.jsonl"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    taken, during, locked = 0, 0, 0
    try:
        while importing.poll() is None or taken == 0:
            running, holding = importing.poll() is None, write_locked(tmp_path / "ledger.db")
            if taken and not holding and importing.poll() is None:
                time.sleep(0.01)  # polling for the lock (no backup needed while only decoding)
                continue
            made = lost("backup", f"b{taken}.db", "--json")  # never waits for the import's lock
            assert made.exit_code == 0, made.stderr
            alive = running and importing.poll() is None  # the import ran from before to after this backup
            during += alive
            locked += alive and holding
            taken += 1
    finally:
        importing.wait(timeout=300)
    assert importing.returncode == 0, importing.stderr
    assert during >= 1 and locked >= 1, (during, locked)
    sizes = set()
    for n in range(taken):
        checked = Cli(str(tmp_path / f"b{n}.db"))("verify", "--json")
        assert checked.exit_code == 0, checked.stderr
        sizes.add(json.loads((tmp_path / f"b{n}.db.manifest.json").read_text())["size"])
    assert sizes <= {40, 20_040}  # all or nothing: a backup holds the import whole or not at all
    assert lost("backup", "after.db", "--json").exit_code == 0
    assert Cli("after.db")("verify", "--json").exit_code == 0 and Cli("after.db")("head").stdout.startswith("20040 ")


def publish(cli: Cli, out: str = "site") -> None:
    made = cli("publish", "--as-of", AS_OF, out, "--key", "ledger.key")
    assert made.exit_code == 0, made.stderr


@pytest.mark.slow
def test_a_backup_behind_the_published_checkpoint_catches_up_from_the_site(lost, tmp_path):
    assert lost("backup", "b.db").exit_code == 0
    grow(lost, 1, 300)  # past a full tile
    publish(lost)
    restored = Cli("r.db")("restore", "b.db", "--from", "site", "--verifier-key", "ledger.vkey", "--json")
    assert restored.exit_code == 0, restored.stderr
    head = json.loads(lost("head", "--json").stdout)
    assert json.loads(restored.stdout) == {"db": "r.db", "size": 340, "head": head["chain_hash"], "fetched": 300,
                                           "checkpoint": 340, "checked_against": "site"}
    assert Cli("r.db")("export").stdout == lost("export").stdout
    assert not [name for name in listing(tmp_path) if name.startswith(".r.db")]  # the work folder is gone
    assert Cli("r.db")("verify", "--full").exit_code == 0


def test_what_cannot_be_backed_up_or_restored_is_one_line_and_exit_2(lost, tmp_path):
    (tmp_path / "junk.db").write_text("hello\n")
    (tmp_path / "cp.txt").write_text(lost("checkpoint", "--key", "ledger.key").stdout)
    restore = ["--checkpoint", "cp.txt", "--verifier-key", "ledger.vkey"]
    cases = [
        (Cli("r.db")("restore", "junk.db", *restore), "ledger: junk.db: not a ledger (file is not a database)\n"),
        (Cli("r.db")("restore", "nosuch.db", *restore), "ledger: nosuch.db: no such file (a snapshot `ledger backup` wrote)\n"),
        (Cli("r.db")("restore", "--from", "nosuch", "--verifier-key", "ledger.vkey"),
         "ledger: --from nosuch: not a URL (http:// or https://) nor a published folder\n"),
        (Cli("ledger.db")("restore", "--from", ".", "--verifier-key", "ledger.vkey"),
         "ledger: ledger.db: already exists; restore writes a new ledger\n"),
        (Cli("r.db")("restore", "--verifier-key", "ledger.vkey"),
         "ledger: restore: give a SNAPSHOT, or --from URL|DIR to rebuild the ledger from the log's tiles\n"),
        (lost("backup", "nowhere/b.db"), "ledger: nowhere/b.db: no folder nowhere\n"),
    ]
    assert [(result.exit_code, result.stderr) for result, _ in cases] == [(2, said) for _, said in cases]
    assert [name for name in os.listdir(tmp_path) if name.startswith((".", "r.db", "b.db", "nowhere"))] == []


def test_a_manifest_is_read_within_its_limit_and_shape_checked(lost, tmp_path):
    endless = lost("verify", "--manifest", "/dev/zero")
    assert endless.exit_code == 2 and endless.stderr.count("\n") == 1 and "1 MiB" in endless.stderr, endless.stderr
    (tmp_path / "m.json").write_text('{"format": "ledger.backup.v1", "size": "40"}')
    shaped = lost("verify", "--manifest", "m.json")
    assert shaped.exit_code == 2 and shaped.stderr.startswith("ledger: m.json: not a backup manifest (")
    assert lost("verify", "--manifest", "m.json", str(SEED_004)).exit_code == 2  # records are another check


@pytest.mark.slow
def test_a_restore_catches_up_from_serve_and_a_site_older_than_the_backup_is_no_refusal(lost, tmp_path):
    assert lost("backup", "old.db").exit_code == 0
    publish(lost)  # the site: 40 entries
    grow(lost, 1, 30)
    assert lost("backup", "new.db").exit_code == 0  # 70: newer than the site, which is a prefix of it
    ahead = Cli("r1.db")("restore", "new.db", "--from", "site", "--verifier-key", "ledger.vkey", "--json")
    assert ahead.exit_code == 0, ahead.stderr
    assert (json.loads(ahead.stdout)["size"], json.loads(ahead.stdout)["fetched"]) == (70, 0)
    port = _free_port()
    serve = subprocess.Popen(["timeout", "--kill-after=5", "300", sys.executable, "-m", "ledger.cli", "--db",
                              "ledger.db", "serve", "--key", "ledger.key", "--port", str(port)], cwd=tmp_path,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                             env={k: v for k, v in os.environ.items() if k != "LEDGER_DB"})
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for_serve(url, serve)
        caught = Cli("r2.db")("restore", "old.db", "--from", url, "--verifier-key", "ledger.vkey", "--json")
        assert caught.exit_code == 0, caught.stderr
        assert (json.loads(caught.stdout)["size"], json.loads(caught.stdout)["fetched"]) == (70, 30)
    finally:
        stop_process(serve)
    assert Cli("r2.db")("export").stdout == lost("export").stdout


def wait_for_serve(url: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{url}/checkpoint", timeout=2).close()
            return
        except OSError:
            assert process.poll() is None and time.monotonic() < deadline, "serve did not start"
            time.sleep(0.1)


@pytest.mark.slow
def test_a_backup_behind_the_checkpoint_without_the_site_is_refused_and_nothing_is_left(lost, tmp_path):
    assert lost("backup", "b.db").exit_code == 0
    grow(lost, 1, 5)
    publish(lost)
    before = listing(tmp_path)
    refused = Cli("r.db")("restore", "b.db", "--checkpoint", "site/checkpoint", "--verifier-key",
                   "ledger.vkey")
    assert refused.exit_code == 1
    assert refused.stderr == ("ledger: restore refused: b.db holds 40 entries; --checkpoint site/checkpoint signs "
                              "45; give --from URL|DIR to fetch the missing entries: appending to a ledger behind a "
                              "published checkpoint would fork the log. Nothing was written\n")
    unreachable = Cli("r.db")("restore", "b.db", "--checkpoint", "site/checkpoint", "--from",
                       "http://127.0.0.1:9", "--verifier-key", "ledger.vkey", "--timeout", "5")
    assert unreachable.exit_code == 1 and "could not be read" in unreachable.stderr
    assert "b.db holds 40 entries; --checkpoint site/checkpoint signs 45" in unreachable.stderr
    assert listing(tmp_path) == before  # no r.db, no work folder
    # With no checkpoint to hold it to, a restore does not start.
    (tmp_path / "b.db.manifest.json").unlink()
    bare = Cli("r.db")("restore", "b.db", "--verifier-key", "ledger.vkey")
    assert bare.exit_code == 2 and "give --checkpoint FILE" in bare.stderr


@pytest.mark.slow
def test_a_ledger_rebuilt_from_a_published_site_replays_byte_for_byte(lost, tmp_path):
    grow(lost, 1, 20)
    publish(lost)
    rebuilt = Cli("new.db")("restore", "--from", "site", "--verifier-key", "ledger.vkey")
    assert rebuilt.exit_code == 0, rebuilt.stderr
    assert rebuilt.stdout.startswith("restored new.db: 60 entries")
    for name, cli in (("old", lost), ("new", Cli("new.db"))):
        assert cli("replay", "--as-of", AS_OF, "--out", name).exit_code == 0
    old = sorted(os.listdir("old"))
    assert len(old) == 21 and old == sorted(os.listdir("new"))
    assert all((tmp_path / "old" / n).read_bytes() == (tmp_path / "new" / n).read_bytes() for n in old)


@pytest.mark.slow
def test_with_a_witness_policy_the_checkpoint_held_to_must_be_cosigned(lost, tmp_path):
    from ledger.services.keys import load_cosigner

    assert lost("keygen", "--cosigner", "witness.example/w1").exit_code == 0
    assert lost("backup", "b.db").exit_code == 0
    grow(lost, 1, 2)
    publish(lost)
    asked = ["--from", "site", "--verifier-key", "ledger.vkey", "--witness-key", "witness.vkey"]
    unsigned = Cli("r.db")("restore", "b.db", *asked)
    assert unsigned.exit_code == 1, unsigned.stderr
    assert unsigned.stderr == ("ledger: site/checkpoint: checkpoint: the witness policy is not met: cosigned by no "
                               "witness (0 of the 1 witness it lists)\n")
    assert not os.path.exists("r.db")
    note = (tmp_path / "site" / "checkpoint").read_text()
    (tmp_path / "site" / "checkpoint").write_text(note + load_cosigner("witness.key").cosign(
        note.split("\n\n")[0] + "\n", 1_700_000_000))
    cosigned = Cli("r.db")("restore", "b.db", *asked)
    assert cosigned.exit_code == 0, cosigned.stderr
    assert cosigned.stdout.startswith("restored r.db: 42 entries")


@pytest.mark.slow
def test_a_tampered_tile_is_named_and_nothing_is_left(lost, tmp_path):
    assert lost("backup", "b.db").exit_code == 0
    grow(lost, 1, 300)
    publish(lost)
    bundle = tmp_path / "site" / "tile" / "entries" / "000"
    data = bytearray(bundle.read_bytes())
    data[100] ^= 1
    bundle.write_bytes(bytes(data))
    before = listing(tmp_path)
    for given in (["b.db"], []):
        refused = Cli("r.db")("restore", *given, "--from", "site", "--verifier-key", "ledger.vkey")
        assert refused.exit_code == 1
        assert refused.stderr == "ledger: site/tile/0/000: its hashes are not those of tile/entries/000's 256 entries\n"
        assert listing(tmp_path) == before


@pytest.mark.slow
@pytest.mark.skipif(not POSTGRES, reason="PostgreSQL: set LEDGER_TEST_POSTGRES (.ci/run does)")
def test_a_postgresql_backup_is_pg_dump_and_verifies_once_restored(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    schema = f"t_backup_{os.getpid()}"
    _admin(f"CREATE SCHEMA {schema}")
    try:
        cli = Cli(postgres_schema_url(schema))
        assert cli("init").exit_code == 0 and cli("import", str(SEED_004)).exit_code == 0
        made = cli("backup", "b.pgdump", "--json")
        assert made.exit_code == 0, made.stderr
        assert json.loads(made.stdout)["size"] == 40
        assert json.loads((tmp_path / "b.pgdump.manifest.json").read_text())["backend"] == "postgresql"
        listed = subprocess.run(["pg_restore", "--list", "b.pgdump"], capture_output=True, text=True)
        assert listed.returncode == 0 and "TABLE DATA" in listed.stdout and schema in listed.stdout
        _admin(f"DROP SCHEMA {schema} CASCADE")
        plain = POSTGRES.replace("postgresql+psycopg://", "postgresql://").split("?")[0]
        back = subprocess.run(["pg_restore", "--no-owner", f"--dbname={plain}", "b.pgdump"], capture_output=True,
                              text=True)
        assert back.returncode == 0, back.stderr
        checked = cli("verify", "--manifest", "b.pgdump.manifest.json")
        assert checked.exit_code == 0, checked.stderr
        assert "the head b.pgdump.manifest.json records" in checked.stdout
    finally:
        _admin(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
