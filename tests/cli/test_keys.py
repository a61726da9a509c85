"""No secret is ever printed: every command that reads a key, given the wrong one (a signing key where a verifier
key belongs, key text inline, a damaged key file), is refused in one line naming the file and what it holds, and
nothing of the key's material reaches stdout or stderr. A verifier key may also be given as its text.
"""

from __future__ import annotations

import os
import resource
import signal
import socket
import subprocess
import sys

import pytest

from ledger.log.signed_notes import MAX_KEY_NAME
from tests.conftest import PAPER_004
from tests.ledger.storage.test_readonly import _as_a_user


@pytest.fixture
def keyed(keyed, tmp_path):
    """The CLI tests' `keyed` ledger, with a checkpoint, a proof, a bundle, an exported log and damaged keys."""
    cli = keyed
    (tmp_path / "cp.txt").write_text(cli("checkpoint", "--key", "ledger.key", "--paper-index").stdout)
    (tmp_path / "proof.json").write_text(cli("prove", "17", "--json").stdout)
    (tmp_path / "log.jsonl").write_bytes(cli("export").stdout_bytes)
    made = cli("replay", "--paper", PAPER_004, "--as-of", "2026-08-09", "--evidence", "b.json", "--key", "ledger.key")
    assert made.exit_code == 0, made.stderr
    key = (tmp_path / "ledger.key").read_text().strip()
    (tmp_path / "damaged.key").write_text(key[:-6] + "!!" + key[-4:])  # one byte of its base64 made invalid
    (tmp_path / "damaged.vkey").write_text((tmp_path / "ledger.vkey").read_text().strip()[:-3] + "!!!")
    return cli


def secrets(tmp_path) -> list[str]:
    """Every piece of the signing key's text worth hiding: the whole line, its base64 key, and halves of it."""
    key = (tmp_path / "ledger.key").read_text().strip()
    blob = key.split("+", 4)[4]
    return [key, blob, blob[: len(blob) // 2], blob[len(blob) // 2:]]


VERIFYING = {
    "verify-proof": ["verify-proof", "proof.json", "--checkpoint", "cp.txt", "--verifier-key"],
    "verify --evidence": ["verify", "--evidence", "b.json", "--verifier-key"],
    "verify --index": ["verify", "--index", "log.jsonl", "--checkpoint", "cp.txt", "--verifier-key"],
}
SIGNING = {
    "checkpoint": ["checkpoint", "--key"],
    "replay --evidence": ["replay", "--paper", PAPER_004, "--as-of", "2026-08-09", "--evidence", "c.json", "--key"],
    "publish": ["publish", "--as-of", "2026-08-09", "site", "--key"],
    "serve": ["serve", "--port", "1", "--key"],
}


def refused(result, tmp_path, stderr: str) -> None:
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", stderr)
    for secret in secrets(tmp_path):
        assert secret not in result.stdout + result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("given", ["file", "text"])
@pytest.mark.parametrize("command", sorted(VERIFYING))
def test_a_signing_key_where_a_verifier_key_belongs_is_refused_and_not_echoed(keyed, tmp_path, command, given):
    # As its file (named in the refusal) or as its text (never repeated).
    key = "ledger.key" if given == "file" else (tmp_path / "ledger.key").read_text().strip()
    where = "ledger.key" if given == "file" else "verifier key given as text"
    refused(keyed(*VERIFYING[command], key), tmp_path,
            f"ledger: {where}: holds a signing key (PRIVATE+KEY+...), not a verifier key: give the .vkey that "
            "`ledger keygen` wrote beside it\n")


@pytest.mark.parametrize("command", sorted(SIGNING))
def test_signing_commands_refuse_key_text_and_damaged_keys_without_echo(keyed, tmp_path, command):
    key = (tmp_path / "ledger.key").read_text().strip()
    refused(keyed(*SIGNING[command], key), tmp_path,
            "ledger: the signing key was given as text: give the file that holds it (key text on a command line "
            "stays in the shell's history)\n")
    refused(keyed(*SIGNING[command], "damaged.key"), tmp_path,
            "ledger: damaged.key: signer key: not base64 (44 characters)\n")
    refused(keyed(*SIGNING[command], "ledger.vkey"), tmp_path,
            "ledger: ledger.vkey: holds a verifier key (<name>+<id>+<key>), not a signing key (PRIVATE+KEY+...)\n")


@pytest.mark.parametrize("command", sorted(VERIFYING))
def test_a_damaged_verifier_key_is_refused_without_echo(keyed, tmp_path, command):
    refused(keyed(*VERIFYING[command], "damaged.vkey"), tmp_path,
            "ledger: damaged.vkey: verifier key: not base64 (44 characters)\n")


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(VERIFYING))
def test_a_verifier_key_may_be_given_as_its_text(keyed, tmp_path, command):
    text = (tmp_path / "ledger.vkey").read_text().strip()
    by_file, by_text = keyed(*VERIFYING[command], "ledger.vkey"), keyed(*VERIFYING[command], text)
    assert (by_text.exit_code, by_text.stderr) == (0, "")
    assert by_text.stdout == by_file.stdout and "ok: " in by_text.stdout


# -- keygen refuses what it cannot write safely, and names a signed note cannot carry ---------------------------
def one_line_refusal(result, stderr: str) -> None:
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", stderr)


@pytest.mark.parametrize("name", ["ledger.key", "ledger.vkey"])
def test_keygen_refuses_a_dangling_symlink_and_writes_nothing(seeded, tmp_path, name):
    os.symlink(tmp_path / "elsewhere" / "target", tmp_path / name)
    one_line_refusal(seeded("keygen", "example.org/ledger"),
                     f"ledger: {name}: a symbolic link to a missing file; refusing to write a key through it\n")
    assert not (tmp_path / "elsewhere").exists()
    assert sorted(p for p in os.listdir(tmp_path) if p.endswith(("key", "vkey"))) == [name]


def test_keygen_refuses_an_unwritable_folder(tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir(mode=0o555)
    try:
        done = subprocess.run([sys.executable, "-m", "ledger.cli", "keygen", "--cosigner", "w.example.org/w1"],
                              cwd=folder, capture_output=True, text=True, timeout=60, preexec_fn=_as_a_user)
    finally:
        folder.chmod(0o755)
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", "ledger: witness.key: cannot write here: Permission denied\n")
    assert os.listdir(folder) == []


def _a_full_disk() -> None:
    """preexec_fn: files of at most 16 bytes, and a write past that fails with EFBIG (as on a full disk) instead
    of killing the process."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (16, 16))


def test_keygen_that_cannot_write_a_whole_key_leaves_no_part_of_it(tmp_path):
    """The key is written by `files.create_new`, which removes a file it made and could not fill."""
    done = subprocess.run([sys.executable, "-m", "ledger.cli", "keygen", "example.org/ledger"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, preexec_fn=_a_full_disk)
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", "ledger: ledger.key: cannot write here: File too large\n")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("option", [[], ["--cosigner"]])
@pytest.mark.parametrize("name, why", [
    ("a" * (MAX_KEY_NAME + 1), f"{MAX_KEY_NAME + 1} bytes, longer than the limit of {MAX_KEY_NAME}"),
    ("é" * 128, f"256 bytes, longer than the limit of {MAX_KEY_NAME}"),  # bytes, not characters
    ("example.org/a b", "must not contain spaces or '+'"),
    ("example.org/a\u2003b", "must not contain spaces or '+'"),  # a Unicode space
    ("example.org/a+b", "must not contain spaces or '+'"),
    ("example.org/\x1b[2Jlog", "must not contain control characters (a signed note's text may hold none)"),
    ("example.org/\x7f", "must not contain control characters (a signed note's text may hold none)"),
])
def test_keygen_refuses_a_name_a_signed_note_cannot_carry(seeded, tmp_path, option, name, why):
    from ledger.core.redact import quoted

    what = option[0] if option else "origin"
    shown = quoted(name, 40) if "bytes" in why else quoted(name)
    one_line_refusal(seeded("keygen", *option, name), f"ledger: {what} {shown}: {why}\n")
    assert not [p for p in os.listdir(tmp_path) if p.endswith(("key", "vkey"))]


def test_keygen_takes_a_name_of_the_longest_length(seeded, tmp_path):
    assert seeded("keygen", "a" * MAX_KEY_NAME).exit_code == 0
    assert seeded("checkpoint", "--key", "ledger.key").exit_code == 0


# -- a signing key others can read is named, as ssh names one ---------------------------------------------------
@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604])
def test_a_signing_key_others_can_read_gets_a_one_line_warning(keyed, tmp_path, mode):
    os.chmod(tmp_path / "ledger.key", mode)
    done = keyed("checkpoint", "--key", "ledger.key")
    assert done.exit_code == 0 and done.stdout
    assert done.stderr == f"ledger: WARNING: ledger.key is readable by others (mode {mode:04o}); chmod 600 it\n"
    again = keyed("checkpoint", "--key", "ledger.key")
    assert again.stderr == done.stderr  # every run says so


def test_a_signing_key_only_its_owner_reads_gets_no_warning(keyed, tmp_path):
    assert oct(os.stat(tmp_path / "ledger.key").st_mode & 0o777) == oct(0o600)  # as keygen wrote it
    done = keyed("checkpoint", "--key", "ledger.key")
    assert (done.exit_code, done.stderr) == (0, "")


def test_a_cosigner_key_others_can_read_gets_the_warning(seeded, tmp_path):
    assert seeded("keygen", "--cosigner", "w.example.org/w1").exit_code == 0
    assert seeded("keygen", "example.org/ledger").exit_code == 0
    os.chmod(tmp_path / "witness.key", 0o644)
    with socket.socket() as busy:  # the witness never starts: its port is taken
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        done = seeded("witness", "serve", "--key", "witness.key", "--log", "example.org/ledger=ledger.vkey",
                      "--port", str(busy.getsockname()[1]))
    assert done.exit_code == 3
    assert done.stderr.splitlines()[0] == "ledger: WARNING: witness.key is readable by others (mode 0644); chmod 600 it"
