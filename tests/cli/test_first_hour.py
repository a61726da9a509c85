"""The first hour, as a new user meets it: `--help` as it reads."""

from __future__ import annotations

import re

import pytest
import typer
from typer.testing import CliRunner

from ledger.cli.main import app


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
    wrapped = "│ upgrade  Bring an older ledger to this version, │\n│          with more words here.          │\n"
    assert forced_breaks(wrapped) == []
    carried = "│ upgrade  Bring an older ledger to this            │\n│          version, with more words here.           │\n"
    assert forced_breaks(carried) == ["upgrade  Bring an older ledger to this / version,"]


@pytest.mark.parametrize("path", list(_help_paths(typer.main.get_command(app))), ids=" ".join)
def test_help_reads_as_reflowed_prose_at_100_columns(path):
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "100"})
    assert (result.exit_code, result.stderr) == (0, "")
    assert {len(line) for line in result.stdout.splitlines() if line.startswith("╭")} == {100}
    assert forced_breaks(result.stdout) == []
