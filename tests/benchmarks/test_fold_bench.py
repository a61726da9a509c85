"""The fold benchmark's parts, kept working at its smallest size: its gates and its section. This tree's own
interpreter stands for today's command here (building 91eb5e8's venv takes a minute); the run itself builds it.
(Timings are never asserted here; they live in benchmarks/RESULTS.md.)"""

import sys

import pytest

from benchmarks.common import GateError


@pytest.mark.slow
def test_a_tiny_run_passes_its_gates_and_writes_its_section(tmp_path):
    from benchmarks.fold import SECTION_BEGIN, SECTION_TITLE, main

    results = tmp_path / "RESULTS.md"
    results.write_text("# Benchmark results\n\nfrom benchmarks.run\n")
    assert main(["--papers", "3", "--reps", "1", "--today-python", sys.executable, "--out", str(results)]) == 0
    text = results.read_text()
    assert text.startswith("# Benchmark results\n\nfrom benchmarks.run\n") and text.count(SECTION_BEGIN) == 1
    assert SECTION_TITLE in text and "Correctness gates passed" in text
    for row in ("today", "new", "floor"):
        assert f"\n| {row} | " in text
    assert "new / today, records/s: " in text and "new / floor, time: " in text


def test_two_replays_that_differ_by_one_byte_fail_the_gate(tmp_path):
    from benchmarks.fold import same_files

    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    ours.mkdir(), theirs.mkdir()
    for folder in (ours, theirs):
        (folder / "2601.00001.json").write_bytes(b"{}")
    assert same_files(ours, theirs) == 1
    (theirs / "2601.00001.json").write_bytes(b"{ }")
    with pytest.raises(GateError, match="2601.00001.json: not the same bytes"):
        same_files(ours, theirs)
    (theirs / "2601.00002.json").write_bytes(b"{}")
    with pytest.raises(GateError, match="not the same file names"):
        same_files(ours, theirs)
