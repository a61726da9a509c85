"""The first hour, as a new user meets it: the README's quickstart and then its commands table's examples, typed
in that order in a fresh copy of a clone; a clone whose folder shadows the package; and `--help` as it reads.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from ledger.cli.main import app
from tests.conftest import FIXTURES
from tests.test_readme import README, section

# The quickstart's venv steps, replaced by a venv of this interpreter (a fresh venv and an install cost a minute):
# an `activate` that puts .venv/bin first on PATH as venv's does, and a `ledger` there that runs this checkout's
# as the installed script does (-P: the current folder is not imported, as it is not for a console script).
VENV_STEPS = ("python3 -m venv .venv", "pip install -q -e .")
# Examples that start a server or reach the network: not run here.
SKIPPED = {
    "ledger --db w.db witness serve --key witness.key --log example.org/ledger=ledger.vkey --new": "starts a server",
    "ledger monitor https://ledger.example --verifier-key ledger.vkey --state mon/": "reaches the network",
    "ledger serve --port 8080 --key ledger.key": "starts a server",
}
# Examples that need what a new user does not have (yet): one line on stderr and the documented exit code.
REFUSED = {
    "ledger init": (2, "ledger: ledger.db: already exists; a ledger is created only once\n"),  # the quickstart's
    "ledger import seed.json more.jsonl": (2, "ledger: seed.json: no such file\n"),
    "ledger import records/": (2, "ledger: records/: no such file\n"),  # `replay --out records/` comes later
    "ledger checkpoint --key ledger.key --witness https://w.example=w.vkey --quorum 1":
        (2, "ledger: w.vkey: no such file\n"),  # a witness's key, which someone else holds
}


def quickstart() -> str:
    return re.search(r"Run the main job.*?```\n(.*?)\n```", README.read_text(), re.S).group(1)


def table_examples() -> list[str]:
    examples = []
    for row in section("Commands").splitlines():
        if row.startswith("| `"):
            examples += re.findall(r"`([^`]+)`", re.split(r"(?<!\\)\|", row)[2])
    return examples


def fresh_clone(folder: Path) -> Path:
    """What a clone of this checkout holds (its tracked files as they are now), with the venv stand-in."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=README.parent, capture_output=True, check=True).stdout
    for name in files.decode().split("\0"):
        if name and (README.parent / name).is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes((README.parent / name).read_bytes())
    bin_ = folder / ".venv" / "bin"
    bin_.mkdir(parents=True)
    (bin_ / "activate").write_text(f'VIRTUAL_ENV="{folder / ".venv"}"\nexport VIRTUAL_ENV\n'
                                   'PATH="$VIRTUAL_ENV/bin:$PATH"\nexport PATH\n')
    (bin_ / "ledger").write_text(f'#!/bin/sh\nexec "{sys.executable}" -P -m ledger.cli "$@"\n')
    (bin_ / "ledger").chmod(0o755)
    return folder


def typed(line: str, clone: Path, activated: bool = True) -> subprocess.CompletedProcess:
    """`line` as typed in the shell the quickstart left: the venv active, in the clone, no LEDGER_DB."""
    env = {name: value for name, value in os.environ.items() if name not in ("LEDGER_DB", "VIRTUAL_ENV")}
    script = f". .venv/bin/activate && {line}" if activated else line
    return subprocess.run(["bash", "-c", script], cwd=clone, env=env, capture_output=True, timeout=300)


@pytest.mark.slow
def test_the_quickstart_twice_then_the_commands_table_as_a_new_user_types_it(tmp_path):
    line = quickstart()
    for step in VENV_STEPS:
        assert f"{step} && " in line
        line = line.replace(step, "true")
    clone = fresh_clone(tmp_path)
    for _ in range(2):  # run twice in a row in the same clone, as someone trying it again would
        done = typed(line, clone, activated=False)
        assert (done.returncode, done.stderr) == (0, b"")
        said, record = done.stdout.split(b"\n{", 1)
        assert re.fullmatch(rb"created an empty ledger at ledger\.db\nappended 40 events \(0 already present\); "
                            rb"head 40 blake3:[0-9a-f]{64}", said)
        assert b"{" + record == (FIXTURES / "golden" / "2407.20018@2026-08-09.json").read_bytes()
    examples = table_examples()
    assert set(SKIPPED) | set(REFUSED) <= set(examples)
    for example in examples:
        if example in SKIPPED:
            continue
        done = typed(example, clone)
        outcome = (done.returncode, done.stderr.decode())
        assert outcome == REFUSED.get(example, (0, "")), example
    # the quickstart's ledger, and the backup example's snapshot and the restore example's new ledger
    assert sorted(path.name for path in clone.glob("*.db")) == ["b.db", "ledger.db", "new.db"]


def test_a_clone_named_ledger_shadows_the_package_for_a_script_above_it_as_the_readme_says(tmp_path):
    script = "import ledger\nprint(ledger.create_ledger.__name__)\n"
    (tmp_path / "ledger").symlink_to(README.parent, target_is_directory=True)  # a clone in a folder named ledger
    (tmp_path / "above.py").write_text(script)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "script.py").write_text(script)
    shadowed = subprocess.run([sys.executable, "above.py"], cwd=tmp_path, capture_output=True, text=True)
    message = "module 'ledger' has no attribute 'create_ledger'"
    assert (shadowed.returncode, shadowed.stderr.splitlines()[-1]) == (1, f"AttributeError: {message}")
    assert message in " ".join(section("Use from Python").replace("`", "").split())
    elsewhere = subprocess.run([sys.executable, "script.py"], cwd=tmp_path / "elsewhere", capture_output=True,
                               text=True)
    assert (elsewhere.returncode, elsewhere.stdout, elsewhere.stderr) == (0, "create_ledger\n", "")


def forced_breaks(text: str) -> list[str]:
    """The lines of rendered help that the next line's first word would have fitted on: a line break carried from
    a docstring, where rich's greedy wrap would have gone on. `[default: ...]`-type lines start on their own."""
    found = []
    lines = text.splitlines()
    for above, below in zip(lines, lines[1:]):
        if above.startswith("│") != below.startswith("│") or above.startswith(("╭", "╰")):
            continue
        above, below = (line[1:-1] if line.startswith("│") else line for line in (above, below))
        words, column = below.split(), len(below) - len(below.lstrip())
        last_cell = max((match.end() for match in re.finditer(r"(?:^|  ) *(?=\S)", above)), default=-1)
        if not words or words[0].startswith("[") or column != last_cell:
            continue  # not the same cell going on
        if len(above.rstrip()) + 1 + len(words[0]) <= len(above) - 1:  # rich pads one column on the right
            found.append(f"{above.strip()} / {words[0]}")
    return found


def _help_paths(group, path=()):
    yield path
    for name, command in sorted(group.commands.items()):
        yield from _help_paths(command, path + (name,)) if hasattr(command, "commands") else [path + (name,)]


def test_forced_breaks_finds_a_docstring_line_break_and_not_a_wrap():
    wrapped = ("│ upgrade  Bring an older ledger to this version, │\n"
               "│          with more words here.          │\n")
    assert forced_breaks(wrapped) == []
    carried = ("│ upgrade  Bring an older ledger to this            │\n"
               "│          version, with more words here.           │\n")
    assert forced_breaks(carried) == ["upgrade  Bring an older ledger to this / version,"]


@pytest.mark.parametrize("path", list(_help_paths(typer.main.get_command(app))),
                         ids=lambda path: " ".join(("ledger", *path)))
def test_help_reads_as_reflowed_prose_at_100_columns(path):
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "100"})
    assert (result.exit_code, result.stderr) == (0, "")
    assert {len(line) for line in result.stdout.splitlines() if line.startswith("╭")} == {100}
    assert forced_breaks(result.stdout) == []
