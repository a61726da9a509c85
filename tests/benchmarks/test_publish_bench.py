"""The publish benchmark's parts, kept working at a tiny size: its steps' gates, its cache, its section.
(Timings are never asserted here; they live in benchmarks/RESULTS.md.)"""

import orjson
import pytest

from benchmarks.common import GateError


def test_a_tiny_run_passes_its_gates_writes_its_section_and_keeps_its_ledgers(tmp_path):
    from benchmarks.publish import SECTION_BEGIN, SECTION_TITLE, ledger_of, main

    results, cache = tmp_path / "RESULTS.md", tmp_path / "cache"
    results.write_text("# Benchmark results\n\nfrom benchmarks.run\n")
    assert main(["--papers", "5,10", "--reps", "1", "--cache", str(cache), "--out", str(results)]) == 0
    text = results.read_text()
    assert text.startswith("# Benchmark results\n\nfrom benchmarks.run\n") and text.count(SECTION_BEGIN) == 1
    assert SECTION_TITLE in text and "Correctness gates passed" in text
    for step in "abcde":
        assert f"| 10 | {step} |" in text
    assert "| other | 10 / " in text  # home, 404, evidence, five assets, the checkpoint and the paper index note
    assert "b at 10 / b at 5 papers:" in text and "the targets are for 1,000 to 10,000 papers" in text
    again = ledger_of(10, 29, cache)  # the run's own ledger, not built a second time
    assert again.cached and again.events > 0 and again.db.parent == cache


def test_a_file_not_restored_byte_for_byte_fails_the_gate(tmp_path):
    from benchmarks.publish import restored

    (tmp_path / "a.json").write_bytes(b"{}")
    restored(tmp_path, {"a.json": b"{}"})
    with pytest.raises(GateError, match="a.json: not restored"):
        restored(tmp_path, {"a.json": b"{ }"})
    with pytest.raises(GateError, match="b.html: not restored"):
        restored(tmp_path, {"b.html": b"<p>"})


def test_every_kind_of_published_file_is_named_by_its_path():
    from benchmarks.publish import kind_of

    paper = "paper/2999.00001"
    assert [kind_of(path) for path in (
        f"{paper}/citation-record.json", f"{paper}/as-of/2026-05-01/citation-record.json",
        f"{paper}/citation-record/index.html", f"{paper}/as-of/2026-05-01/citation-record/index.html",
        f"{paper}/as-of/2026-05-01/changes/index.html", f"{paper}/index.html", f"{paper}/history.json", f"{paper}/integrity.json", f"{paper}/integrity/index.html",
        "tile/0/000", "tile/1/000.p/3", "tile/entries/000", "tile/entries/001.p/7", "checkpoint", "index.html",
        "paper/hep-th/9901001/citation-record.json", "papers/2407/index.html", "papers/hep-th/9901/index.html")] == [
        "record JSON", "day record JSON", "record HTML", "day HTML", "day changes", "paper page", "history.json",
        "integrity.json",
        "integrity HTML", "tiles", "tiles", "entry bundles", "entry bundles", "other", "other", "record JSON",
        "month lists", "month lists"]


def test_the_monitor_benchmark_passes_its_gates_at_a_tiny_size_and_writes_its_section(tmp_path):
    from benchmarks.monitor import SECTION_BEGIN, SECTION_TITLE, main

    results = tmp_path / "RESULTS.md"
    results.write_text("# Benchmark results\n\nfrom benchmarks.run\n")
    assert main(["--papers", "5", "--cache", str(tmp_path / "cache"), "--out", str(results)]) == 0
    text = results.read_text()
    assert text.startswith("# Benchmark results\n\nfrom benchmarks.run\n") and text.count(SECTION_BEGIN) == 1
    assert SECTION_TITLE in text and "Correctness gates passed" in text
    for step in ("anchor", "a", "b", "c"):
        assert f"| {step} | " in text


@pytest.mark.slow
def test_the_site_days_benchmark_passes_its_gates_at_a_tiny_size_and_writes_its_section(tmp_path):
    from benchmarks.site_days import MIX, SECTION_BEGIN, SECTION_TITLE, main

    results = tmp_path / "RESULTS.md"
    results.write_text("# Benchmark results\n\nfrom benchmarks.run\n")
    assert main(["--papers", "2", "--mix", "1", "--day-records", "100000,1", "--out", str(results)]) == 0
    text = results.read_text()
    assert text.startswith("# Benchmark results\n\nfrom benchmarks.run\n") and text.count(SECTION_BEGIN) == 1
    assert SECTION_TITLE in text and "Correctness gates passed" in text
    [row] = [line for line in text.splitlines() if line.startswith("| day record JSON |")]
    assert row.startswith("| day record JSON | 42 / ") and " | 2 / " in row  # 2 papers x 21 days, then 1 each
    for k in MIX:
        assert f"\n| {k} | " in text


def test_a_held_out_paper_changes_on_its_days_and_a_mixed_one_on_as_many_as_its_shape_says():
    from benchmarks.site_days import HELD_OUT, corpus, held_out, mixed

    events, counts = corpus(held_out(2) + mixed(1), 45)
    assert sum(counts.values()) == len(events)
    payloads = [(e.effective_at[:10], orjson.loads(e.payload)) for e in events]
    for paper, days in held_out(2) + mixed(1):
        effective = {day for day, payload in payloads if payload.get("arxiv_id") == paper
                     or str(payload.get("observation_id", "")).startswith(f"{paper}/")}
        assert len(effective) == days, (paper, days)
    assert held_out(1) == [("2601.00001", HELD_OUT)]
