"""Interop with an implementation that is not ours: Go's golang.org/x/mod/sumdb/note (Debian's
golang-golang-x-mod-dev, installed by .ci/run) opens the checkpoints the log signs and the witnesses
(`ledger witness serve`, a real process) cosign, and signs, as a log that is not ours, a checkpoint our witness
cosigns. tests/interop/opennote.go and signnote.go wrap it; the cosignature/v1 verifier is the spec's message
and key id written in Go, plugged into the package's own note parsing.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest

from tests.cli.test_witnessing import witnesses  # noqa: F401 (the fixture)
from tests.conftest import run_ledger

NOTE_PACKAGE = Path("/usr/share/gocode/src/golang.org/x/mod/sumdb/note")
SOURCE = Path(__file__).parents[1] / "interop" / "opennote.go"


def _built(folder: Path, name: str) -> Path:
    if shutil.which("go") is None or not NOTE_PACKAGE.is_dir():
        if os.environ.get("CI"):
            pytest.fail("CI must install golang-go and golang-golang-x-mod-dev (.ci/run)")
        pytest.skip("Go or Debian's golang-golang-x-mod-dev is not installed")
    env = {**os.environ, "GO111MODULE": "off", "GOPATH": "/usr/share/gocode", "GOCACHE": str(folder / "cache")}
    built = subprocess.run(["go", "build", "-o", str(folder / name), str(SOURCE.with_name(f"{name}.go"))], env=env,
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    return folder / name


@pytest.fixture(scope="session")
def opennote(tmp_path_factory) -> Path:
    return _built(tmp_path_factory.mktemp("go"), "opennote")


@pytest.fixture(scope="session")
def signnote(tmp_path_factory) -> Path:
    return _built(tmp_path_factory.mktemp("go"), "signnote")


def go_open(opennote: Path, note: Path, *keys: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(opennote), str(note), *keys], capture_output=True, text=True, timeout=60)


def test_go_opens_a_cosigned_checkpoint_with_the_log_key_and_checks_the_cosignatures(keyed, witnesses, opennote,
                                                                                       tmp_path):
    from ledger.services.keys import load_cosigner_key

    first, second = witnesses.start(2)
    made = keyed("checkpoint", "--key", "ledger.key", "--witness", f"{first}=w0.vkey", "--witness", f"{second}=w1.vkey")
    assert made.exit_code == 0, made.stderr
    (tmp_path / "cosigned.txt").write_text(made.stdout)
    text = made.stdout.split("\n\n")[0] + "\n"
    # The log's key alone: Go verifies the log's signature and leaves the witnesses' lines unknown.
    alone = go_open(opennote, tmp_path / "cosigned.txt", "ledger.vkey")
    assert alone.returncode == 0, alone.stderr
    assert alone.stdout == text + "verified example.org/ledger\nunknown w0.example\nunknown w1.example\n"
    # With the witnesses' keys: each cosignature verifies, with the time our own parser reads from it.
    times = {}
    for i in (0, 1):
        key = load_cosigner_key(f"w{i}.vkey")
        times[key.name] = next(t for line in made.stdout.split("\n") if (t := key.timestamp(text, line)) is not None)
    both = go_open(opennote, tmp_path / "cosigned.txt", "ledger.vkey", "w0.vkey", "w1.vkey")
    assert both.returncode == 0, both.stderr
    assert both.stdout == text + "verified example.org/ledger\n" + "".join(
        f"verified {name} time {times[name]}\n" for name in ("w0.example", "w1.example"))
    # A cosignature altered by one bit: a known key's line that does not verify rejects the note.
    lines = made.stdout.split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith("— w1.example "))
    name, blob = lines[at].rsplit(" ", 1)
    raw = bytearray(base64.b64decode(blob))
    raw[-1] ^= 1
    lines[at] = f"{name} {base64.b64encode(bytes(raw)).decode()}"
    (tmp_path / "altered.txt").write_text("\n".join(lines))
    altered = go_open(opennote, tmp_path / "altered.txt", "ledger.vkey", "w1.vkey")
    assert altered.returncode == 1 and "invalid signature" in altered.stderr
    assert go_open(opennote, tmp_path / "altered.txt", "ledger.vkey").returncode == 0  # unknown there: ignored


def test_go_opens_the_paper_index_note_and_the_served_checkpoint(keyed, opennote, tmp_path):
    index = keyed("checkpoint", "--key", "ledger.key", "--paper-index")
    (tmp_path / "index.txt").write_text(index.stdout)
    opened = go_open(opennote, tmp_path / "index.txt", "ledger.vkey")
    assert opened.returncode == 0 and opened.stdout.split("\n")[3].startswith("paper-index/v1 "), opened.stderr
    other = tmp_path / "other"  # another key of the same name
    other.mkdir()
    assert run_ledger("keygen", "example.org/ledger", cwd=other).returncode == 0
    refused = go_open(opennote, tmp_path / "index.txt", str(other / "ledger.vkey"))
    assert refused.returncode == 1 and "verif" in refused.stderr  # same name, another key: not opened


def test_our_witness_cosigns_a_checkpoint_go_signed_and_go_verifies_it(opennote, signnote, tmp_path):
    """A log that is not ours (Go's note.Sign, its own key), our `witness serve` in a real process, and
    Go's note.Open checking both signatures."""
    from ledger.services.cosigning_witness import submission
    from tests.cli.test_witnessing import Witnesses

    made = subprocess.run([str(signnote), "gen", "go.example/log"], capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    skey, vkey = made.stdout.split()
    (tmp_path / "go.key").write_text(skey + "\n")
    (tmp_path / "ledger.vkey").write_text(vkey + "\n")  # what Witnesses names the log it follows by
    (tmp_path / "text").write_text("go.example/log\n3\n" + base64.b64encode(bytes(range(32))).decode() + "\n")
    signed = subprocess.run([str(signnote), "sign", str(tmp_path / "go.key"), str(tmp_path / "text")],
                            capture_output=True, text=True, timeout=60)
    assert signed.returncode == 0, signed.stderr
    running = Witnesses(tmp_path)
    try:
        [url] = running.start(1, origin="go.example/log")
        request = urllib.request.Request(f"{url}/add-checkpoint", data=submission(0, [], signed.stdout), method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            line = response.read().decode()
    finally:
        running.stop()
    assert line.startswith("— w0.example ") and line.endswith("\n")
    (tmp_path / "cosigned.txt").write_text(signed.stdout + line)
    both = go_open(opennote, tmp_path / "cosigned.txt", str(tmp_path / "ledger.vkey"), str(tmp_path / "w0.vkey"))
    assert both.returncode == 0, both.stderr
    assert both.stdout.startswith("go.example/log\n3\n") and "verified go.example/log\n" in both.stdout
    assert "verified w0.example time " in both.stdout


def test_go_opens_what_an_auditing_witness_cosigned_the_checkpoint_and_the_paper_index_note(keyed, witnesses,
                                                                                            opennote, tmp_path):
    import json

    assert keyed("publish", "--as-of", "2026-09-03", "out", "--key", "ledger.key").exit_code == 0
    [url] = witnesses.start(1, "example.org/ledger", "--audit", "example.org/ledger=out")
    made = keyed("checkpoint", "--key", "ledger.key", "--witness", f"{url}=w0.vkey", "--timeout", "30")
    assert made.exit_code == 0 and "cosigned by 1 auditing witness: w0.example" in made.stderr, made.stderr
    (tmp_path / "cosigned.txt").write_text(made.stdout)
    opened = go_open(opennote, tmp_path / "cosigned.txt", "ledger.vkey", "w0.vkey")
    assert opened.returncode == 0 and opened.stdout.endswith("verified example.org/ledger\nverified w0.example time "
                                                             f"{opened.stdout.rsplit(' ', 1)[-1]}"), opened.stderr
    assert keyed("replay", "--paper", "2407.20018", "--as-of", "2026-08-09", "--evidence", "b.json", "--key",
                 "ledger.key").exit_code == 0
    (tmp_path / "index.txt").write_text(json.loads((tmp_path / "b.json").read_text())["checkpoint"])
    index = go_open(opennote, tmp_path / "index.txt", "ledger.vkey", "w0.vkey")
    assert index.returncode == 0 and "paper-index/v1 " in index.stdout, index.stderr
    assert index.stdout.endswith(opened.stdout.split("\n", 3)[3]), (index.stdout, opened.stdout)  # one time for both
