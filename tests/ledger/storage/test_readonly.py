"""Opening a file reads before it writes: a read-only ledger (the file 0444 in a folder 0555) is read by every read
command and by `serve`, and leaves no file behind; a file that is not a ledger (empty, another SQLite database,
text) is refused in one line with every byte of it unchanged.

Tests run as root, whom file modes do not stop: each command runs in a process that has dropped the capabilities
that let root ignore them (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER), as an ordinary user would be.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import sqlite3
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.conftest import PAPER_004, SEED_004, _free_port

_PR_CAPBSET_DROP = 24
_CAPS_OVER_MODES = (1, 2, 3)  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER


def _as_a_user() -> None:
    """preexec_fn: a root child gives up what lets it ignore file modes (from its bounding set, so the program it
    runs never has them)."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in _CAPS_OVER_MODES:
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def ledger(*args: str, cwd=None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "LEDGER_DB"}
    return subprocess.run([sys.executable, "-m", "ledger.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, preexec_fn=_as_a_user)


def digests(folder) -> dict[str, str]:
    return {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in sorted(os.listdir(folder))}


@pytest.fixture
def read_only(tmp_path):
    """A seeded ledger whose file is 0444 and whose folder is 0555 (restored afterwards, for the clean-up)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    db = str(folder / "ledger.db")
    for args in (["init"], ["import", str(SEED_004)]):
        assert ledger("--db", db, *args).returncode == 0
    os.chmod(db, 0o444)
    os.chmod(folder, 0o555)
    probe = ledger("--db", db, "import", str(SEED_004))
    if probe.returncode == 0:
        pytest.skip("file modes do not stop this process (no way to drop root's capabilities here)")
    yield folder, db
    os.chmod(folder, 0o755)
    os.chmod(db, 0o644)


READS = {
    "head": ["head"],
    "export": ["export"],
    "verify": ["verify"],
    "history": ["history", PAPER_004],
    "diff": ["diff", PAPER_004, "--from", "2026-07-01", "--to", "2026-08-09"],
    "replay": ["replay", "--paper", PAPER_004, "--as-of", "2026-08-09"],
    "replay --out": ["replay", "--as-of", "2026-08-09", "--out", "{out}"],
    "prove": ["prove", "17"],
    "prove --consistency": ["prove", "--consistency", "3", "--tree-size", "10"],
    "prove --paper": ["prove", "--paper", PAPER_004],  # the paper index, kept in memory: it cannot be stored
}


def test_a_read_only_ledger_is_read_by_every_read_command(read_only, tmp_path):
    folder, db = read_only
    before = digests(folder)
    for name, args in READS.items():
        out = tmp_path / f"out-{len(name)}"
        result = ledger("--db", db, *[arg.replace("{out}", str(out)) for arg in args])
        assert (result.returncode, result.stderr) == (0, ""), name
        assert result.stdout or out.exists(), name
    assert digests(folder) == before  # no -wal, -shm or journal left, and the ledger's bytes unchanged


def test_a_write_to_a_read_only_ledger_is_refused_in_one_line(read_only):
    _, db = read_only
    result = ledger("--db", db, "import", str(SEED_004))
    assert result.returncode == 3 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "readonly database" in result.stderr


def test_serve_reads_a_read_only_ledger(read_only):
    folder, db = read_only
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "LEDGER_DB"}
    server = subprocess.Popen([sys.executable, "-m", "ledger.cli", "--db", db, "serve", "--port", str(port)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_as_a_user)
    try:
        deadline, answers = time.monotonic() + 30, {}
        for path in ("/", f"/paper/{PAPER_004}", "/tile/0/000.p/40"):
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
                        answers[path] = response.status
                    break
                except urllib.error.HTTPError as exc:
                    answers[path] = exc.code
                    break
                except OSError:
                    assert time.monotonic() < deadline and server.poll() is None, "serve did not start"
                    time.sleep(0.1)
        assert answers == {path: 200 for path in answers}
    finally:
        server.terminate()
        server.communicate(timeout=30)
    assert sorted(os.listdir(folder)) == ["ledger.db"]


def _other_sqlite(path) -> None:
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE notes (body TEXT)")
    connection.execute("INSERT INTO notes VALUES ('kept as it is')")
    connection.commit()
    connection.close()


@pytest.mark.parametrize("kind, why", [("empty", "an empty file"), ("sqlite", "no ledger_meta table"),
                                       ("text", "file is not a database")])
@pytest.mark.parametrize("command", [["head"], ["verify"], ["export"], ["import", str(SEED_004)]])
def test_opening_a_file_that_is_not_a_ledger_changes_none_of_its_bytes(tmp_path, kind, why, command):
    path = tmp_path / "other.db"
    if kind == "sqlite":
        _other_sqlite(path)
    else:
        path.write_bytes(b"" if kind == "empty" else b"not a database\n")
    before = digests(tmp_path)
    result = ledger("--db", str(path), *command)
    assert (result.returncode, result.stdout, result.stderr) == (2, "", f"ledger: {path}: not a ledger ({why})\n")
    assert digests(tmp_path) == before
