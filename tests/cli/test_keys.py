"""No secret is ever printed: every command that reads a key, given the wrong one (a signing key where a verifier
key belongs, key text inline, a damaged key file), is refused in one line naming the file and what it holds, and
nothing of the key's material reaches stdout or stderr. A verifier key may also be given as its text.
"""

from __future__ import annotations

import pytest

from tests.conftest import PAPER_004


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


@pytest.mark.parametrize("command", sorted(VERIFYING))
def test_a_verifier_key_may_be_given_as_its_text(keyed, tmp_path, command):
    text = (tmp_path / "ledger.vkey").read_text().strip()
    by_file, by_text = keyed(*VERIFYING[command], "ledger.vkey"), keyed(*VERIFYING[command], text)
    assert (by_text.exit_code, by_text.stderr) == (0, "")
    assert by_text.stdout == by_file.stdout and "ok: " in by_text.stdout
