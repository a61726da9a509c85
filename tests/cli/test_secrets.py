"""No secret in any output, by construction: every key kind (a log's signing and verifier keys, a witness's
cosigner and cosigner verifier keys), as its file and as its text, handed to every option and argument of
every command that takes a value, never puts any 16 characters of any key's base64 on stdout or stderr; and a
database URL's password is never printed, by `serve` (its start-up line) or by any error naming the database.
The options are enumerated from the typer app itself, so a new option is tested (or this test fails).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time

import pytest
from typer.main import get_command

from ledger.core.redact import HIDDEN_KEY, quoted, redact, redact_url
from tests.conftest import PAPER_004, SEED_004, Cli

AS_OF = "2026-08-09"
KEY_FILES = ("ledger.key", "ledger.vkey", "witness.key", "witness.vkey")
WINDOW = 16  # "a piece of a key": any run of this many characters of its base64


def _commands() -> dict[str, object]:
    """Every command of the app by its path ("witness serve"), from the click tree typer builds."""
    from ledger.cli.main import app

    found, todo = {}, [("", get_command(app))]
    while todo:
        prefix, group = todo.pop()
        for name, command in getattr(group, "commands", {}).items():
            path = f"{prefix} {name}".strip()
            if getattr(command, "commands", None):
                todo.append((path, command))
            else:
                found[path] = command
    return found


def _valued(command) -> list[str]:
    """The params of a command that take a value: an option by its first name, an argument by its name."""
    names = []
    for param in command.params:
        if getattr(param, "is_flag", False) or getattr(param, "count", False) or param.name == "help":
            continue
        names.append(param.opts[0] if param.param_type_name == "option" else param.name)
    return names


# Each command with every other value it needs to reach the param under test: `{}` marks an argument's place.
CONTEXT = {
    "import": {"files": []},
    "replay": {"--paper": PAPER_004, "--as-of": AS_OF, "--evidence": "e.json", "--key": "ledger.key"},
    "verify": {"--evidence": "b.json", "--verifier-key": "ledger.vkey"},
    "diff": {"id": []},
    "history": {"id": []},
    "keygen": {},
    "checkpoint": {"--key": "ledger.key"},
    "prove": {},
    "verify-proof": {"proof": ["proof.json"], "--checkpoint": "cp.txt", "--verifier-key": "ledger.vkey"},
    "serve": {"--key": "ledger.key"},
    "publish": {"out": ["site2"], "--as-of": AS_OF, "--key": "ledger.key"},
    "monitor": {"url": ["site"], "--verifier-key": "ledger.vkey", "--state": "watched"},
    "witness serve": {"--key": "witness.key", "--log": "example.org/ledger=ledger.vkey"},
    "backup": {"dest": ["bak.db"]},
    "restore": {"--verifier-key": "ledger.vkey", "--from": "site"},
}
# Where a param is read beside others than its command's usual ones.
BESIDE = {
    ("verify", "--index"): {"--checkpoint": "cp.txt", "--verifier-key": "ledger.vkey"},
    ("verify", "--checkpoint"): {"--index": "log.jsonl", "--verifier-key": "ledger.vkey"},
    ("verify", "records"): {},
}
# Options read as `PREFIX=<key>`: the key part is what is tested.
PREFIXED = {"--witness": "http://127.0.0.1:1/=", "--log": "example.org/ledger="}
# The key each option is meant to read (handing it that is not a mistake; the command would just run).
RIGHT = {"--key": {"ledger.key", "witness.key"}, "--verifier-key": {"ledger.vkey"},
         "--witness-key": {"witness.vkey"}, "--witness": {"witness.vkey"}, "--log": {"ledger.vkey"}}
# Values never tried: a host name is resolved (no traffic leaves 127.0.0.1 in tests); the port and these numbers
# are refused by typer as not numbers, which tests/cli/test_usage.py covers with the same one error path.
SKIPPED = {"--host"}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A seeded ledger with keys of both kinds, a checkpoint, a proof, a bundle, an exported log and a published
    site, in a folder that is the working directory while the module runs; and a port held busy, so no `serve`
    ever starts."""
    folder = tmp_path_factory.mktemp("secrets")
    before = os.getcwd()
    os.chdir(folder)
    cli = Cli(str(folder / "ledger.db"))
    try:
        for args in (["init"], ["import", str(SEED_004)], ["keygen", "example.org/ledger"],
                     ["keygen", "--cosigner", "witness.example.org/w1"]):
            assert cli(*args).exit_code == 0
        (folder / "cp.txt").write_text(cli("checkpoint", "--key", "ledger.key").stdout)
        (folder / "proof.json").write_text(cli("prove", "17", "--json").stdout)
        (folder / "log.jsonl").write_bytes(cli("export").stdout_bytes)
        assert cli("replay", "--paper", PAPER_004, "--as-of", AS_OF, "--evidence", "b.json", "--key",
                   "ledger.key").exit_code == 0
        assert cli("publish", "site", "--as-of", AS_OF, "--key", "ledger.key").exit_code == 0
        texts = {name: (folder / name).read_text().strip() for name in KEY_FILES}
        with socket.socket() as busy:
            busy.bind(("127.0.0.1", 0))
            busy.listen()
            yield cli, texts, busy.getsockname()[1]
    finally:
        os.chdir(before)


def pieces(texts: dict[str, str]) -> set[str]:
    """Every run of WINDOW characters of every key's base64."""
    found = set()
    for text in texts.values():
        blob = text.split("+")[-1] if not text.startswith("PRIVATE+KEY+") else text.split("+", 4)[4]
        found |= {blob[start:start + WINDOW] for start in range(len(blob) - WINDOW + 1)}
    return found


def leaked(output: str, texts: dict[str, str]) -> list[str]:
    return sorted(piece for piece in pieces(texts) if piece in output)


def invocations(texts: dict[str, str], port: int) -> list[tuple[str, list[str]]]:
    """(what is tried, the arguments) for every param of every command taking a value, and every key kind as
    its file and as its text."""
    commands = _commands()
    tried = []
    for path, command in sorted(commands.items()):
        for param in _valued(command):
            if param in SKIPPED:
                continue
            context = dict(BESIDE.get((path, param), CONTEXT.get(path, {})))
            for kind in KEY_FILES:
                for form, value in (("file", kind), ("text", texts[kind])):
                    if form == "file" and kind in RIGHT.get(param, ()):
                        continue  # the right key for the option: the command would run, not refuse
                    if form == "text" and kind in RIGHT.get(param, ()) and kind.endswith(".vkey"):
                        continue  # a verifier key may be given as its text
                    given = dict(context)
                    given[param] = PREFIXED.get(param, "") + value
                    args = path.split()
                    for name, arg in given.items():
                        if name.startswith("-"):
                            args += [name, arg]
                        else:
                            args += arg if isinstance(arg, list) else [arg]
                    if path in ("serve", "witness serve") and param != "--port":
                        args += ["--port", str(port)]
                    tried.append((f"{path} {param} <{kind} {form}>", args))
    return tried


def test_every_option_is_covered(world):
    # A command added without a CONTEXT here would be tried with no other value, and likely refused for that.
    assert {path for path in _commands() if any(p not in SKIPPED for p in _valued(_commands()[path]))} <= set(CONTEXT)


def test_no_key_text_reaches_any_output_whatever_option_it_is_given_to(world):
    cli, texts, port = world
    tried = invocations(texts, port)
    assert len(tried) > 200  # every command's every value-taking param, times 8 forms of a key
    found, kept = {}, set(os.listdir("."))
    for what, args in tried:
        result = cli(*args)
        for made in set(os.listdir(".")) - kept:  # each try starts from the same folder (publish OUT/ makes one)
            shutil.rmtree(made) if os.path.isdir(made) and not os.path.islink(made) else os.remove(made)
        output = result.stdout + result.stderr
        assert "Traceback" not in output, (what, output)
        if leaked(output, texts):
            found[what] = output[-300:]
    assert sorted(found) == []


@pytest.mark.parametrize("kind", KEY_FILES)
def test_verbose_tracebacks_are_redacted_too(world, kind):
    # `--log` quotes its value as given (no '=' in it: a key's base64 has none), so the exception holds the key.
    cli, texts, port = world
    for value in (kind, texts[kind]):
        result = cli("-v", "witness", "serve", "--key", "witness.key", "--log", value, "--port", str(port))
        assert result.exit_code == 2 and "Traceback" in result.stderr
        assert not leaked(result.stdout + result.stderr, texts), result.stderr[-300:]


def test_global_db_option_given_a_key_names_no_key(world):
    from ledger.cli.main import app

    cli, texts, _ = world
    for kind in KEY_FILES:
        for value in (kind, texts[kind]):
            result = cli.runner.invoke(app, ["--db", value, "head"], env={"LEDGER_DB": None})
            assert result.exit_code in (2, 3) and not leaked(result.stdout + result.stderr, texts), value


def test_redaction_hides_keys_and_passwords_but_keeps_the_rest(world):
    _, texts, _ = world
    for text in texts.values():
        assert redact(f"policy line 1: not {text!r}") == f"policy line 1: not '{HIDDEN_KEY}'"
        assert quoted(text) == repr(HIDDEN_KEY)
    assert redact("holds a signing key (PRIVATE+KEY+...), not a verifier key") == \
        "holds a signing key (PRIVATE+KEY+...), not a verifier key"
    assert redact("expected PRIVATE+KEY+<name>+<id>+<key>") == "expected PRIVATE+KEY+<name>+<id>+<key>"
    assert redact_url("postgresql://bob:s3cr@t@127.0.0.1:1/db") == "postgresql://bob:***@127.0.0.1:1/db"
    assert redact_url("postgresql+psycopg://bob@h/db?password=hunter2&x=1") == "postgresql+psycopg://bob@h/db?password=***&x=1"
    assert redact("--db host=h password=hunter2 user=bob: no ledger here") == "--db host=h password=*** user=bob: no ledger here"
    assert redact_url("sqlite:////tmp/a b/ledger.db") == "sqlite:////tmp/a b/ledger.db"
    long = "a\x1b[2Jb" + "x" * 100  # one line, control characters escaped, at most 80 characters of it
    assert quoted(long) == repr(long[:80]) + "..." and "\x1b" not in quoted(long)
    path = "/root/work/wt/secrets/tests/fixtures/seed_004_2407.20018.json"
    assert redact(path) == path
    # A JSON value where text was expected is quoted as Python writes it, never raising (found by tests/fuzz).
    assert (quoted(None), quoted(["a"]), quoted(12)) == ("None", "['a']", "12")


PASSWORD = "hunter2-Secret"


@pytest.mark.parametrize("command", [["serve", "--port", "0"], ["head"], ["init"], ["upgrade"]])
def test_a_postgresql_password_is_printed_nowhere(tmp_path, command):
    # UnreachableError on purpose (port 1 on loopback): the start-up line and the error both name the database.
    url = f"postgresql://ledger:{PASSWORD}@127.0.0.1:1/ledger"
    env = {k: v for k, v in os.environ.items() if k != "LEDGER_DB"}
    process = subprocess.Popen([sys.executable, "-m", "ledger.cli", "--db", url, *command], cwd=tmp_path, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    try:
        out, err = process.communicate(timeout=8 if command[0] == "serve" else 30)
    except subprocess.TimeoutExpired:  # serve keeps answering 503 until it can be opened: stop it
        process.terminate()
        out, err = process.communicate(timeout=max(1.0, deadline - time.monotonic()))
    text = (out + err).decode()
    assert PASSWORD not in text and "127.0.0.1:1" in text, text
    assert "ledger:***@" in text


@pytest.mark.skipif(not os.environ.get("LEDGER_TEST_POSTGRES"), reason="LEDGER_TEST_POSTGRES not set")
def test_serve_on_a_reachable_postgresql_prints_no_password(tmp_path):
    url = os.environ["LEDGER_TEST_POSTGRES"]
    shown = redact_url(url)
    process = subprocess.Popen([sys.executable, "-m", "ledger.cli", "--db", url, "serve", "--port", "0"],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = process.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        process.terminate()
        out, err = process.communicate(timeout=10)
    text = (out + err).decode()
    password = url.partition("://")[2].rpartition("@")[0].partition(":")[2]
    assert not password or password not in text
    assert shown in text or "not a ledger" in text or "schema version" in text
