"""Every input a user hands a command is read up to a limit, checked while reading: `/dev/zero`, a symlink
to it inside a folder, and 300 MB piped on stdin end with exit 2 and one line, under an address space of
256 MiB (a normal run needs under 100 MiB: measured), with nothing appended and no spool file left behind.
The default limits are the ones exercised: no setting makes them smaller here.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

from ledger.core.canonical import CanonicalError, parse_json
from tests.conftest import PAPER_004, SEED_004, Cli

CAP = 256 << 20  # RLIMIT_AS: a record's 64 MiB limit read whole fits; /dev/zero read whole would not
STDIN_BYTES = "300M"


def capped(args: list[str], cwd, tmpdir, stdin=None) -> subprocess.CompletedProcess:
    """`ledger ARGS` in a real process under the address-space cap, its temporary files in `tmpdir`."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))

    env = {k: v for k, v in os.environ.items() if k != "LEDGER_DB"} | {"TMPDIR": str(tmpdir)}
    return subprocess.run([sys.executable, "-m", "ledger.cli", *args], cwd=cwd, env=env, stdin=stdin,
                          capture_output=True, timeout=120, preexec_fn=limit)


def zeros_piped(args: list[str], cwd, tmpdir) -> subprocess.CompletedProcess:
    """`ledger ARGS` with 300 MB of NUL bytes streamed on stdin by another process, as a shell pipe does."""
    source = subprocess.Popen(["head", "-c", STDIN_BYTES, "/dev/zero"], stdout=subprocess.PIPE)
    try:
        return capped(args, cwd, tmpdir, stdin=source.stdout)
    finally:
        source.stdout.close()
        source.kill()
        source.wait()


@pytest.fixture
def hostile(keyed, tmp_path):
    """The keyed ledger, a checkpoint of it, and a folder holding a symlink to /dev/zero under every name a
    command reads (a record, event lines, a key, a proof)."""
    cli = keyed
    (tmp_path / "cp.txt").write_text(cli("checkpoint", "--key", "ledger.key").stdout)
    folder = tmp_path / "folder"
    folder.mkdir()
    for name in ("proof.json", "zero.jsonl", "ledger.key"):  # the first in path order is named
        (folder / name).symlink_to("/dev/zero")
    (tmp_path / "spool").mkdir()
    return cli


# What each command reads, with the arguments around it; `X` is the hostile input.
COMMANDS = {
    "import": (["import", "X"], "folder"),
    "verify": (["verify", "X"], "folder"),
    "checkpoint --key": (["checkpoint", "--key", "X"], "folder/ledger.key"),
    "verify-proof": (["verify-proof", "X", "--checkpoint", "cp.txt", "--verifier-key", "ledger.vkey"],
                     "folder/proof.json"),
}
ZERO_FOLDER = "folder/proof.json: not a regular file (a device), in a directory of inputs"
EXPECTED = {  # command -> (/dev/zero, symlink in a folder, 300 MB of stdin)
    "import": ("/dev/zero: contains NUL bytes: binary file?", ZERO_FOLDER, "-: contains NUL bytes: binary file?"),
    "verify": ("/dev/zero: over the 64 MiB limit for a record or an event line", ZERO_FOLDER,
               "-: over the 64 MiB limit for a record or an event line"),
    "checkpoint --key": ("/dev/zero: over the 4 KiB limit for a key file",
                         "folder/ledger.key: over the 4 KiB limit for a key file",
                         "-: over the 4 KiB limit for a key file"),
    "verify-proof": ("/dev/zero: over the 1 MiB limit for a proof",
                     "folder/proof.json: over the 1 MiB limit for a proof",
                     "-: over the 1 MiB limit for a proof"),
}


@pytest.mark.slow
@pytest.mark.parametrize("command", list(COMMANDS))
def test_endless_inputs_end_with_exit_2_in_one_line_under_an_address_space_cap(hostile, tmp_path, command):
    args, in_folder = COMMANDS[command]
    head = hostile("head").stdout
    spool = tmp_path / "spool"
    db = ["--db", hostile.location]
    runs = [capped(db + [in_folder if a == "X" and which == "folder" else "/dev/zero" if a == "X" else a
                         for a in args], tmp_path, spool) for which in ("zero", "folder")]
    runs.append(zeros_piped(db + ["-" if a == "X" else a for a in args], tmp_path, spool))
    for run, expected in zip(runs, EXPECTED[command]):
        assert (run.returncode, run.stdout, run.stderr.decode()) == (2, b"", f"ledger: {expected}\n")
    assert hostile("head").stdout == head  # nothing appended
    assert os.listdir(spool) == []  # no spool file left behind


@pytest.mark.slow
def test_a_normal_run_passes_under_the_same_cap(hostile, tmp_path):
    # The cap is not what stops the runs above: a real import and verify need far less.
    spool = tmp_path / "spool"
    db = ["--db", hostile.location]
    assert capped(db + ["import", str(SEED_004)], tmp_path, spool).returncode == 0
    ran = capped(db + ["verify"], tmp_path, spool)
    assert ran.returncode == 0, ran.stderr
    stdin = SEED_004.read_bytes()
    ran = subprocess.run([sys.executable, "-m", "ledger.cli", *db, "import", "-"], input=stdin, capture_output=True,
                         preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP)), timeout=120)
    assert ran.returncode == 0, ran.stderr


def test_a_pipe_named_as_an_import_input_is_read_as_stdin_is(keyed, tmp_path):
    # `ledger import <(zcat events.jsonl.gz)`: a FIFO has no size and can be read once only; it is kept.
    fifo = tmp_path / "events.fifo"
    os.mkfifo(fifo)
    exported = keyed("export").stdout_bytes
    writer = subprocess.Popen(["sh", "-c", f'cat > "{fifo}"'], stdin=subprocess.PIPE)
    writer.stdin.write(exported)
    writer.stdin.close()
    again = keyed("import", str(fifo))
    writer.wait(timeout=60)
    assert again.exit_code == 0, again.stderr
    assert "appended 0 events (40 already present)" in again.stderr + again.stdout


# Each kind of file a command reads, one byte over its limit (a sparse file: refused by its size, unread).
OVER = {
    "a key file": (4 << 10, ["checkpoint", "--key", "F"]),
    "a signed checkpoint": (64 << 10, ["verify", "--index", "log.jsonl", "--checkpoint", "F", "--verifier-key",
                                       "ledger.vkey"]),
    "a witness policy": (64 << 10, ["monitor", ".", "--verifier-key", "ledger.vkey", "--state", "st", "--policy", "F"]),
    "a proof": (1 << 20, ["verify-proof", "F", "--checkpoint", "cp.txt", "--verifier-key", "ledger.vkey"]),
    "an evidence bundle": (64 << 20, ["verify", "--evidence", "F", "--verifier-key", "ledger.vkey"]),
    "a record or an event line": (64 << 20, ["verify", "F"]),
}


@pytest.mark.parametrize("what", list(OVER))
def test_each_kind_of_file_over_its_limit_is_refused_in_one_line_naming_the_limit(hostile, tmp_path, what):
    size, args = OVER[what]
    name = "big.json"
    with open(tmp_path / name, "wb") as big:
        big.truncate(size + 1)
    ran = hostile(*[name if arg == "F" else arg for arg in args])
    limit = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
    assert (ran.exit_code, ran.stdout, ran.stderr) == (2, "", f"ledger: {name}: over the {limit} limit for {what}\n")


def test_an_exported_log_over_its_limit_is_refused_unread(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with open("log.jsonl", "wb") as big:
        big.truncate((1 << 30) + 1)  # sparse: read whole, it would cost a GiB
    ran = Cli("log.jsonl")("verify")
    assert (ran.exit_code, ran.stdout, ran.stderr) == \
        (2, "", "ledger: log.jsonl: over the 1 GiB limit for an exported log read as --db\n")


@pytest.mark.parametrize("digits", [21, 4301, 5000])
def test_an_integer_of_thousands_of_digits_is_an_input_error_not_an_internal_one(seeded, tmp_path, digits):
    record = tmp_path / "big.json"
    record.write_text(f'{{"arxiv_id": "{PAPER_004}", "n": {"9" * digits}}}')
    ran = seeded("import", str(record))
    assert (ran.exit_code, ran.stdout) == (2, "")
    assert ran.stderr == f"ledger: {record}: an integer of {digits:,} digits exceeds the 64-bit range\n"
    with pytest.raises(CanonicalError, match=f"an integer of {digits:,} digits exceeds the 64-bit range"):
        parse_json("[-%s]" % ("1" * digits))


@pytest.mark.slow
def test_stdin_past_what_memory_holds_stops_spooling_at_its_first_nul_byte(hostile, tmp_path):
    # 70 MB of text lines (past the 64 MiB held in memory: the rest goes to the spool file), then 300 MB of
    # NUL bytes: the copy stops at the first, so the writer is cut off long before its end; the spool file is
    # closed (unnamed: gone), nothing is appended.
    spool = tmp_path / "spool"
    head = hostile("head").stdout
    source = subprocess.Popen([sys.executable, "-c", SOURCE], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ran = capped(["--db", hostile.location, "import", "-"], tmp_path, spool, stdin=source.stdout)
    source.stdout.close()
    written = int(source.communicate(timeout=60)[1])
    assert (ran.returncode, ran.stdout, ran.stderr) == (2, b"", b"ledger: -: contains NUL bytes: binary file?\n")
    assert 70 << 20 < written < 90 << 20  # read up to the first NUL block and the pipe's buffer, not 370 MB
    assert hostile("head").stdout == head and os.listdir(spool) == []


# Writes 70 MiB of text lines then 300 MiB of NUL bytes to stdout, and how many bytes got through to stderr.
SOURCE = """
import sys
out, written = sys.stdout.buffer, 0
try:
    for block in [b"{}\\n" * (1 << 19)] * 47 + [bytes(1 << 20)] * 300:  # 1.5 MiB of lines each
        out.write(block)
        written += len(block)
    out.flush()
except BrokenPipeError:
    pass
sys.stderr.write(str(written))
"""
