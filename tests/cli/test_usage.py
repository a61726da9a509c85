"""Usage as a new user meets it: usage errors in one line (exit 2), global options before or after the command,
--db named as the user wrote it (a folder, a file that is no ledger, a server without its password or driver),
dates that say which forms are accepted, --version and shell completion."""

from __future__ import annotations

import sys

import pytest
from typer.testing import CliRunner

from ledger import __version__
from ledger.cli.main import app, hoisted
from tests.conftest import SEED_004


def run(*args: str, env: dict | None = None):
    result = CliRunner().invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run("init")[0] == 0
    assert run("import", str(SEED_004))[0] == 0
    return tmp_path


@pytest.mark.parametrize("args, stderr", [
    (["replay"], "ledger: Missing option '--as-of'. (see `ledger replay --help`)\n"),
    (["bogus"], "ledger: No such command 'bogus'. (see `ledger --help`)\n"),
    (["replay", "--as-of", "2026-08-09", "--jobs", "0"],
     "ledger: Invalid value for '--jobs': 0 is not in the range x>=1. (see `ledger replay --help`)\n"),
    (["head", "--colour"], "ledger: No such option: --colour (see `ledger head --help`)\n"),
])
@pytest.mark.slow
def test_a_usage_error_is_one_line_and_exit_2(here, args, stderr):
    assert run(*args) == (2, "", stderr)


def test_global_options_may_follow_the_command(here):
    before = run("--db", "ledger.db", "head")
    assert before[0] == 0 and before[1].startswith("40 blake3:")
    assert run("head", "--db", "ledger.db") == before
    assert run("head", "--db=ledger.db", "-v") == before
    assert run("head", "--db", "other.db") == (2, "", "ledger: other.db: no ledger here; create one with `ledger init`\n")


def test_hoisting_moves_only_global_options_and_nothing_after_a_double_dash():
    assert hoisted(["head", "--db", "x", "-v"]) == ["--db", "x", "-v", "head"]
    assert hoisted(["--db", "x", "verify", "a.json", "--db=y"]) == ["--db=y", "--db", "x", "verify", "a.json"]
    assert hoisted(["import", "--", "--db"]) == ["import", "--", "--db"]
    assert hoisted(["replay", "--as-of", "2026-08-09"]) == ["replay", "--as-of", "2026-08-09"]


def test_a_folder_as_db_gets_one_answer_from_every_command(here):
    (here / "records").mkdir()
    said = "ledger: records: is a folder; --db names the ledger's file (e.g. records/ledger.db)\n"
    for command in (["init"], ["head"], ["replay", "--as-of", "2026-08-09"]):
        assert run("--db", "records", *command) == (2, "", said)


@pytest.mark.slow
def test_a_file_that_is_no_ledger_is_named_as_given(here):
    (here / "notes.txt").write_text("my notes\n" * 100)
    assert run("--db", "notes.txt", "head") == (2, "", "ledger: notes.txt: not a ledger (file is not a database)\n")


def test_a_server_without_its_driver_says_what_to_install_and_never_the_password(here, monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if psycopg were not installed
    code, stdout, stderr = run("--db", "postgresql+psycopg://reader:s3cret@localhost/ledger", "head")
    assert (code, stdout) == (2, "")
    assert stderr == ("ledger: --db postgresql+psycopg://reader:***@localhost/ledger: PostgreSQL needs the psycopg "
                      "driver: pip install 'ledger[postgres]' (in a checkout: pip install -e '.[postgres]')\n")


def test_a_bad_date_says_which_forms_are_accepted(here):
    assert run("replay", "--as-of", "2026-8-9") == (
        2, "", "ledger: --as-of: expected a date YYYY-MM-DD or an RFC 3339 timestamp with offset (2026-08-09, "
               "2026-08-09T16:41:00Z), found '2026-8-9'\n")


def test_version_and_shell_completion():
    assert run("--version") == (0, f"ledger {__version__}\n", "")
    code, stdout, stderr = run("--show-completion", "bash")
    assert (code, stderr) == (0, "") and "_ledger_completion" in stdout
    assert "--install-completion" in run("--help")[1]


def _parameters():
    import typer as _typer

    group = _typer.main.get_command(app)
    return [(name, param) for name, command in sorted(group.commands.items()) for param in command.params]


@pytest.mark.slow
@pytest.mark.parametrize("command, param", _parameters(), ids=lambda item: getattr(item, "name", item))
def test_every_option_says_what_it_does_and_its_default(command, param):
    # Help for every parameter; an optional one without a default typer prints says its own (or what not giving
    # it means); a flag is off unless given.
    assert (param.help or "").strip(), f"{command} {param.name}: no help"
    flag = getattr(param, "is_flag", False)
    shown = param.default not in (None, False, ()) and getattr(param, "show_default", True)
    if not (param.required or flag or shown):
        assert "default" in param.help or "none:" in param.help, f"{command} {param.name}: says no default"
    result = CliRunner().invoke(app, [command, "--help"])
    assert result.exit_code == 0 and "Usage: ledger " + command in result.stdout
