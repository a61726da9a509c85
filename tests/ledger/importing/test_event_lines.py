"""Event lines and exported logs are cut at "\\n" only, as JSON Lines says (a "\\r" before it is part of the line
end), never as `str.splitlines` cuts text: a title holding a raw U+2028, U+2029 or U+0085 (legal raw in a JSON
string, and written raw by `export`) stays one line, so a ledger's own export imports again byte for byte,
whether the file is read whole or in blocks; and an error names the line a text editor shows."""

from __future__ import annotations

import json

import pytest

from ledger.core.errors import InputError
from ledger.importing.importer import import_files
from ledger.importing.units import Sizes
from tests.conftest import Cli
from tests.helpers import event_line

SNAPSHOT = {"snapshot_observed_at": "2026-01-01T00:00:00Z"}
# What str.splitlines ends a line at, but JSON Lines does not. The first three are legal raw inside a string;
# the rest are control characters, written as escapes by a JSON encoder and refused raw by the parser.
RAW = ["\u2028", "\u2029", "\x85"]
CONTROL = ["\x1c", "\x1d", "\x1e", "\v", "\f"]
# Read whole; in blocks of a few bytes, so a block boundary falls inside a line and inside a character.
SIZES = {"whole": Sizes(), "blocks": Sizes(stream_bytes=0, stream_block=5), "chunks": Sizes(chunk_lines=1)}


def snapshot(paper: str, title: str) -> bytes:
    """A snapshot line whose title holds U+2028 and its kind raw (as orjson writes them), control characters
    escaped, ended by "\\n"."""
    line = {"kind": "paper.snapshot", "payload": {"arxiv_id": paper, "title": title, **SNAPSHOT}}
    return json.dumps(line, ensure_ascii=False).encode() + b"\n"


@pytest.mark.slow
@pytest.mark.parametrize("char", RAW + CONTROL, ids=repr)
def test_a_title_holding_a_line_break_of_splitlines_imports_and_round_trips(tmp_path, new_location, char):
    lines = tmp_path / "titles.jsonl"
    lines.write_bytes(snapshot("2407.20018", f"Before{char}after") + snapshot("hep-th/9901001", f"{char}Second{char}"))
    first = Cli(new_location())
    assert first("init").exit_code == 0
    result = first("import", str(lines))
    assert (result.exit_code, result.stderr) == (0, ""), result.stderr
    exported = tmp_path / "exported.jsonl"
    exported.write_bytes(first("export").stdout_bytes)
    assert exported.read_bytes().count(b"\n") == 2  # one line per entry, the character kept inside its line
    if char in RAW:
        assert char.encode() in exported.read_bytes()  # written raw: the case str.splitlines cut in two
    again = Cli(new_location())
    assert again("init").exit_code == 0
    result = again("import", str(exported))
    assert (result.exit_code, result.stderr) == (0, ""), result.stderr
    assert again("head").stdout == first("head").stdout
    assert again("export").stdout_bytes == exported.read_bytes()


@pytest.mark.parametrize("how", SIZES)
def test_a_file_read_in_blocks_keeps_a_raw_line_separator_inside_its_line(store, tmp_path, how):
    lines = tmp_path / "titles.jsonl"
    body = b"".join(snapshot(paper, f"T{char}{paper}") for paper, char in
                    [("2407.20018", "\u2028"), ("2407.20019", "\u2029"), ("2407.20020", "\x85")])
    lines.write_bytes(body.replace(b"\n", b"\r\n", 1))  # "\r\n" ends a line too, even across two blocks
    import_files(store, [str(lines)], sizes=SIZES[how])
    assert store.head()[0] == 3


@pytest.mark.parametrize("char", RAW, ids=repr)
def test_an_error_after_a_raw_separator_names_the_line_an_editor_shows(cli, tmp_path, char):
    lines = tmp_path / "bad.jsonl"
    bad = event_line("paper.snapshot", {"arxiv_id": "..", **SNAPSHOT})
    lines.write_bytes(snapshot("2407.20018", f"A{char}B{char}C") + bad)
    assert cli("init").exit_code == 0
    result = cli("import", str(lines))
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.startswith(f"ledger: {lines}: line 2: field payload.arxiv_id: not an arXiv id: '..'")
    assert result.stderr.count("\n") == 1
    assert cli("head").stdout.startswith("0 ")


@pytest.mark.parametrize("how", SIZES)
def test_the_line_named_is_the_same_read_whole_in_blocks_or_in_chunks(store, tmp_path, how):
    lines = tmp_path / "bad.jsonl"
    good = b"".join(snapshot(f"2407.2002{n}", f"T{char}{char}") for n, char in enumerate(RAW))
    lines.write_bytes(good.replace(b"\n", b"\r\n") + event_line("paper.snapshot", {"arxiv_id": "..", **SNAPSHOT}))
    with pytest.raises(InputError, match=r"bad\.jsonl: line 4: field payload\.arxiv_id: not an arXiv id: '\.\.'"):
        import_files(store, [str(lines)], sizes=SIZES[how])
    assert store.head()[0] == 0


@pytest.mark.parametrize("char", CONTROL, ids=repr)
def test_a_raw_control_character_is_refused_on_its_own_line(cli, tmp_path, char):
    lines = tmp_path / "bad.jsonl"
    good = event_line("paper.snapshot", {"arxiv_id": "2407.20018", **SNAPSHOT})
    raw = snapshot("2407.20019", "A@B").replace(b"A@B", f"A{char}B".encode())  # as no JSON encoder writes it
    lines.write_bytes(good + raw + event_line("paper.snapshot", {"arxiv_id": "2407.20020", **SNAPSHOT}))
    assert cli("init").exit_code == 0
    result = cli("import", str(lines))
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.startswith(f"ledger: {lines}: line 2: ") and "control character" in result.stderr
    assert result.stderr.count("\n") == 1
    assert cli("head").stdout.startswith("0 ")
