"""A file read in blocks (an import's input of over 64 MiB) gives what reading it whole gives: the same lines
as `split_lines` (cut at "\\n" only, as JSON Lines cuts them), the same refusal in the same words as
`decode_input`, the same answer to whether the key `seq` occurs; whatever the block size, wherever a block
boundary falls (inside a character, between "\\r" and "\\n"). And a directory given as an input stands for
the `.json` and `.jsonl` files below it, in the order of their paths."""

import io
import os
import re
import sys
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.core.errors import InputError
from ledger.core.inputs import (
    decode_input,
    file_lines,
    input_files,
    is_stream,
    keep_stdin,
    read_input,
    scan_file,
    split_lines,
)
from ledger.core.limits import KEY, RECORD, Limit, size_text
from ledger.importing.units import SEQ_KEY

# Line breaks of every kind str.splitlines knows (only "\n" and "\r\n" end a line), multi-byte characters,
# the key seq plain and escaped.
TEXT_PIECES = ["a", "{", " ", "é", "€", "\U0001d11e", "\r", "\n", "\r\n", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85",
               "\u2028", "\u2029", '"seq"', '"\\u0073eq"', '"se']
# Bytes that are not UTF-8 (alone or cut short), NUL, ASCII whitespace.
BYTE_PIECES = [b"a", "é".encode(), "\U0001d11e".encode(), b"\xff", b"\xc3", b"\xe2\x82", b"\x80", b"\x00", b" ",
               b"\n", b"\t", b"\x0b"]


def outcome(read):
    try:
        return "ok", read()
    except InputError as exc:
        return "refused", str(exc)


@pytest.mark.slow
@settings(max_examples=300)
@given(st.lists(st.sampled_from(TEXT_PIECES), max_size=40), st.integers(1, 9))
def test_lines_read_in_blocks_are_the_lines_of_the_whole_text(tmp_path_factory, pieces, block):
    path = tmp_path_factory.mktemp("lines") / "input.jsonl"
    text = "".join(pieces)
    path.write_bytes(text.encode())
    lines = list(file_lines(str(path), block))
    assert [line for line, _ in lines] == split_lines(text)
    assert [read for _, read in lines] == sorted(read for _, read in lines)  # bytes read so far, never less
    assert not lines or lines[-1][1] == len(text.encode())


def json_lines(text):
    """The lines of `text` as jsonlines.org says, character by character: a line ends at "\\n", and a "\\r"
    just before it is part of its end; after a final "\\n" there is no line."""
    lines, line = [], ""
    for at, char in enumerate(text):
        if char == "\n":
            lines.append(line)
            line = ""
        elif not (char == "\r" and text[at + 1:at + 2] == "\n"):
            line += char
    return lines + [line] if line else lines


@settings(max_examples=300)
@given(st.lists(st.sampled_from(TEXT_PIECES), max_size=40))
def test_text_is_cut_into_lines_at_newline_only_as_json_lines_says(pieces):
    text = "".join(pieces)
    assert split_lines(text) == json_lines(text)


TEXTS = st.lists(st.sampled_from(TEXT_PIECES), max_size=30).map(lambda pieces: "".join(pieces).encode())
BYTES = st.lists(st.sampled_from(BYTE_PIECES), max_size=30).map(b"".join)


@pytest.mark.slow
@settings(max_examples=300)
@given(TEXTS | BYTES, st.integers(1, 9))
def test_a_file_scanned_in_blocks_is_refused_or_accepted_as_when_read_whole(tmp_path_factory, data, block):
    path = tmp_path_factory.mktemp("scan") / "input.jsonl"
    path.write_bytes(data)
    whole = outcome(lambda: SEQ_KEY.search(decode_input(str(path), data)) is not None)
    assert outcome(lambda: scan_file(str(path), SEQ_KEY, block=block)) == whole


@pytest.mark.parametrize("make", [lambda tmp: tmp / "missing.jsonl", lambda tmp: tmp])
def test_a_file_that_cannot_be_read_is_named_in_the_same_words(tmp_path, make):
    path = str(make(tmp_path))
    expected = outcome(lambda: read_input(path, RECORD))
    assert expected[0] == "refused"
    assert outcome(lambda: scan_file(path, re.compile("x"))) == expected
    assert outcome(lambda: list(file_lines(path))) == expected


def test_a_file_that_stops_being_utf8_between_the_two_readings_is_refused_in_one_line(tmp_path):
    path = tmp_path / "input.jsonl"
    path.write_bytes(b'{"a": 1}\n' * 3 + b"\xff\n")  # what the first reading would have refused
    lines = file_lines(str(path), 4)
    assert next(lines)[0] == '{"a": 1}'
    with pytest.raises(InputError, match="input.jsonl: changed while being read: no longer UTF-8 text"):
        list(lines)


def test_a_directory_stands_for_the_json_and_jsonl_files_below_it_in_path_order(tmp_path):
    corpus = tmp_path / "corpus"
    for path in ("b.json", "a.jsonl", "notes.txt", "records.json.gz", ".hidden.json", "sub/c.json", "sub/a.json",
                 ".cache/d.json", "empty/"):
        (corpus / path).parent.mkdir(parents=True, exist_ok=True)
        if not path.endswith("/"):
            (corpus / path).write_bytes(b"{}")
    single = tmp_path / "single.json"
    assert input_files([str(single), str(corpus), "-"]) == \
        [str(single)] + [str(corpus / p) for p in ("a.jsonl", "b.json", "sub/a.json", "sub/c.json")] + ["-"]
    # A name that is no directory is left to be read (and refused, when it must be) in its turn.
    assert input_files([str(tmp_path / "missing.json")]) == [str(tmp_path / "missing.json")]


def test_a_directory_with_nothing_to_read_or_that_cannot_be_read_is_named(tmp_path, monkeypatch):
    (tmp_path / "notes.txt").write_bytes(b"x")
    with pytest.raises(InputError) as refused:
        input_files([str(tmp_path)])
    assert str(refused.value) == f"{tmp_path}: a directory with no .json or .jsonl file in it"
    (tmp_path / "locked").mkdir()
    scandir = os.scandir

    def denied(path):  # the tests run as root, whom permissions do not stop: the refusal os.walk would meet
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", denied)
    with pytest.raises(InputError) as refused:
        input_files([str(tmp_path)])
    assert str(refused.value) == f"{tmp_path / 'locked'}: cannot read the directory: Permission denied"


def test_a_file_over_its_limit_is_refused_in_one_line_naming_the_limit(tmp_path):
    key = tmp_path / "key.txt"
    key.write_bytes(b"k" * KEY.size)
    assert read_input(str(key), KEY) == b"k" * KEY.size  # the limit itself is allowed
    key.write_bytes(b"k" * (KEY.size + 1))
    with pytest.raises(InputError) as refused:
        read_input(str(key), KEY)
    assert str(refused.value) == f"{key}: over the 4 KiB limit for a key file"


def test_what_is_not_a_regular_file_is_read_up_to_the_limit_and_no_further():
    # /dev/zero never ends: the read stops one byte past the limit (a 64 MiB record limit reads 64 MiB).
    with pytest.raises(InputError, match=r"^/dev/zero: over the 4 KiB limit for a key file$"):
        read_input("/dev/zero", KEY)
    assert is_stream("/dev/zero") and is_stream("-") and not is_stream("/dev/null/x") and not is_stream(".")


def test_a_fifo_is_read_as_a_stream(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert is_stream(str(fifo))
    writer = os.fork()
    if writer == 0:  # pragma: no cover - the child writes and leaves
        with open(fifo, "wb") as end:
            end.write(b"x" * 5000)
        os._exit(0)
    try:
        with pytest.raises(InputError, match="fifo: over the 4 KiB limit for a key file"):
            read_input(str(fifo), KEY)
    finally:
        os.waitpid(writer, 0)


def test_a_folder_input_that_is_not_a_regular_file_is_refused_unread(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.json").write_bytes(b"{}")
    (corpus / "real.json").symlink_to(corpus / "a.json")  # a symlink to a regular file is read as it
    assert input_files([str(corpus)]) == [str(corpus / "a.json"), str(corpus / "real.json")]
    (corpus / "zero.json").symlink_to("/dev/zero")
    with pytest.raises(InputError) as refused:
        input_files([str(corpus)])
    assert str(refused.value) == f"{corpus / 'zero.json'}: not a regular file (a device), in a directory of inputs"
    (corpus / "zero.json").unlink()
    os.mkfifo(corpus / "pipe.jsonl")
    with pytest.raises(InputError, match=r"pipe.jsonl: not a regular file \(a FIFO\), in a directory of inputs"):
        input_files([str(corpus)])


@pytest.fixture
def spooled(monkeypatch) -> list:
    """The temporary files stdin is kept in, as they are made."""
    kept, make = [], tempfile.TemporaryFile
    monkeypatch.setattr(tempfile, "TemporaryFile", lambda **options: kept.append(make(**options)) or kept[-1])
    return kept


def test_spooling_stdin_stops_at_its_limit_and_leaves_no_file(monkeypatch, spooled):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"a" * 5000)))
    with pytest.raises(InputError) as refused:
        keep_stdin(100, spool=Limit(4096, "stdin or a pipe (a file has none)"))
    assert str(refused.value) == "-: over the 4 KiB limit for stdin or a pipe (a file has none)"
    assert len(spooled) == 1 and spooled[0].closed
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"a" * 4096)))
    kept = keep_stdin(100, spool=Limit(4096, "stdin"))  # up to the limit itself: kept
    assert kept.seek(0, os.SEEK_END) == 4096
    kept.close()


@pytest.mark.parametrize("head", [10, 200])
def test_spooling_stops_at_the_first_nul_byte(monkeypatch, spooled, head):
    # No text input holds NUL (decode_input refuses it): /dev/zero on stdin costs a block, not a full disk.
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"a" * 150 + b"\0" * (5 << 20))))
    with pytest.raises(InputError, match=r"^-: contains NUL bytes: binary file\?$"):
        keep_stdin(head)
    assert all(file.closed for file in spooled)


def test_a_line_longer_than_the_limit_is_refused_while_it_is_read(tmp_path):
    path = tmp_path / "input.jsonl"
    path.write_bytes(b'{"a": 1}\n' + b"x" * 100 + b"\n")
    limit = Limit(50, "a record or an event line")
    lines = file_lines(str(path), 16, limit=limit)
    assert next(lines)[0] == '{"a": 1}'
    with pytest.raises(InputError, match=r"input.jsonl: line 2: over the 50 bytes limit for a record or an event line"):
        list(lines)


@settings(max_examples=100, deadline=None)
@given(size=st.integers(0, 3 * 4096), limit=st.integers(0, 2 * 4096), block=st.sampled_from([1, 7, 4096]))
def test_a_read_gives_the_bytes_up_to_the_limit_or_refuses_them_from_a_file_or_a_stream(tmp_path_factory, size,
                                                                                        limit, block):
    # The same answer for a regular file (its size known first) and for stdin (read in blocks, no size).
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    path = tmp_path_factory.mktemp("read") / "input"
    path.write_bytes(data)
    bound = Limit(limit, "a test")
    expected = ("ok", data) if size <= limit else ("refused", f"{path}: over the {size_text(limit)} limit for a test")
    assert outcome(lambda: read_input(str(path), bound)) == expected
    stdin = io.BufferedReader(io.BytesIO(data), buffer_size=block)
    from_stdin = outcome(lambda: read_input("-", bound, kept=stdin))
    assert from_stdin == (expected if size <= limit else ("refused", expected[1].replace(str(path), "-")))
