"""The scale benchmark's parts, kept working at a tiny size: the realistic generator's events, the whole run's
rows and gates, its ratios and its refusal of a size the disk cannot hold. (Timings are never asserted here.)"""

import re
import subprocess
import sys

import orjson
import pytest

from benchmarks.common import AS_OF, GateError
from benchmarks.generate import PROBE, daily_events, identity, realistic_papers, write_realistic
from ledger.core.canonical import canonical
from ledger.log.chain import entry_bytes
from tests.conftest import POSTGRES

SEED_004 = {"citation.observed": 1130, "resolution.recorded": 302, "paper.snapshot": 428, "source.checked": 233}


def first_papers(count, seed=7):
    papers = realistic_papers(seed)
    return [next(papers) for _ in range(count)]


def test_realistic_events_are_deterministic_and_the_probe_has_its_fixed_shape():
    first, again = first_papers(30), first_papers(30)
    assert [[(e.kind, e.effective_at, e.payload) for e in p] for p in first] == \
           [[(e.kind, e.effective_at, e.payload) for e in p] for p in again]
    assert first_papers(3, seed=8)[1] != first[1]
    probe = first[0]
    assert probe[0].paper == PROBE
    kinds = [e.kind for e in probe]
    assert (kinds.count("citation.observed"), kinds.count("source.checked")) == (100, 6)  # 60 in, 40 out; 3 sweeps
    assert kinds.count("notice.checked") == 300
    # A paper's events depend on its own stream only: a later paper is the same from any first paper on.
    assert next(realistic_papers(7, first=12)) == first[12]


def test_realistic_events_have_seed_004s_sizes_per_kind():
    sizes: dict[str, list[int]] = {}
    for paper in first_papers(80):
        for seq, e in enumerate(paper, start=1):
            entry = entry_bytes(seq * 1000, e.kind, e.effective_at, "2026-08-09T16:41:00.123456Z", e.payload)
            sizes.setdefault(e.kind, []).append(len(entry))
    for kind, seed in SEED_004.items():
        mean = sum(sizes[kind]) / len(sizes[kind])
        assert 0.85 * seed <= mean <= 1.1 * seed, (kind, mean, seed)
    assert "measurements.checked" in sizes
    assert 350 <= sum(map(sum, sizes.values())) / sum(map(len, sizes.values())) <= 800


def test_event_lines_are_canonical_and_written_whole_paper_by_paper(tmp_path):
    path = tmp_path / "events.jsonl"
    events, papers = write_realistic(path, 1500, seed=3)
    lines = path.read_bytes().splitlines(keepends=True)
    assert len(lines) == events >= 1500 and papers >= 2
    assert all(canonical(orjson.loads(line)) + b"\n" == line for line in lines)
    assert sum(b'"kind":"paper.snapshot"' in line for line in lines) == papers  # whole papers, each begun once
    assert events - sum(len(p) for p in first_papers(papers - 1, seed=3)) == len(first_papers(papers, seed=3)[-1])


def test_a_days_events_cite_earlier_papers_with_their_own_blocks():
    day = daily_events(5, 40, 30)
    assert len(day) >= 30 and {e.kind for e in day} == {"citation.observed", "resolution.recorded"}
    for e in day[::2]:
        cited = orjson.loads(e.payload)["citation"]["cited_paper"]
        number = 0 if cited["arxiv_id"] == PROBE else int(cited["arxiv_id"].split(".")[1])
        assert cited == identity(5, number)[0]
    assert all(e.effective_at.startswith("2027-05-31") and e.effective_at < AS_OF for e in day)


def test_a_size_the_disk_cannot_hold_is_refused(tmp_path):
    from benchmarks.scale import room

    with pytest.raises(GateError, match="need about .* GB of disk"):
        room(10**13, [], tmp_path)
    room(1000, [], tmp_path)  # a small one fits


def test_the_writers_chunks_hold_every_line_once_in_whole_papers(tmp_path):
    from benchmarks.scale_storage import chunks

    path = tmp_path / "events.jsonl"
    events, papers = write_realistic(path, 3000, seed=4)
    owned = chunks(path, tmp_path / "chunks", 3, size=400)
    assert len(owned) == 3 and all(owned)
    written = [line for mine in owned for chunk in mine for line in chunk.read_bytes().splitlines(keepends=True)]
    assert sorted(written) == sorted(path.read_bytes().splitlines(keepends=True))
    for mine in owned:
        for chunk in mine:
            assert chunk.read_bytes().startswith(b'{"effective_at":') and b'"kind":"paper.snapshot"' in \
                chunk.read_bytes().splitlines()[0]


def test_a_rebuild_that_is_not_replays_bytes_fails_the_gate(tmp_path):
    from benchmarks.scale_steps import digests, imported, ledger, rebuilds, replayed

    path, db = tmp_path / "events.jsonl", str(tmp_path / "ledger.db")
    events, papers = write_realistic(path, 400, seed=6)
    ledger(db, "init")
    imported(db, path, 1, events)
    replayed(db, tmp_path / "records", 1, papers)
    expected = digests(tmp_path / "records")
    ran, times = rebuilds(db, tmp_path, expected, 12, 1)
    assert len(times) == 12 and ran.rss > 0
    wrong = {name: "0" * 64 for name in expected}
    with pytest.raises(GateError, match="rebuild differs from replay --out"):
        rebuilds(db, tmp_path, wrong, 3, 1)


def test_the_ratios_are_marked_met_and_not_met():
    from benchmarks.scale import Size, ratio_lines
    from benchmarks.scale_steps import Row

    def size(events, seconds, rss, p99):
        rows = [Row("import 1", "", seconds, rss, events, "events"),
                Row("rebuild", "", 1.0, rss, 10, "records", 1.0, p99), Row("checkpoint", "", 1.0, rss, events, "")]
        return Size(events, 1, rows, {}, {}, {}, [], 0)

    lines = ratio_lines([size(1000, 1.0, 100, 2.0), size(10_000, 11.0, 140, 2.2)])
    assert "| import 1 | 1.10 met (<= 1.15) |  | 1.40 NOT met (<= 1.3) |" in lines
    assert "| rebuild |  | 1.10 met (<= 1.2) | 1.40 NOT met (<= 1.3) |" in lines
    assert "| checkpoint |  |  | 1.40 NOT met (<= 1.3) |" in lines
    lines = ratio_lines([size(1000, 1.0, 100, 2.0), size(10_000, 12.0, 100, 3.0)])
    assert "| import 1 | 1.20 NOT met (<= 1.15) |  | 1.00 met (<= 1.3) |" in lines


@pytest.mark.slow
def test_a_tiny_run_produces_every_row_passes_its_gates_and_writes_its_section(tmp_path):
    from benchmarks.scale import SECTION_BEGIN, SECTION_TITLE

    results = tmp_path / "RESULTS.md"
    results.write_text("# Benchmark results\n\nfrom benchmarks.run\n")
    done = subprocess.run([sys.executable, "-m", "benchmarks.scale", "--sizes", "1000,2000", "--rebuilds", "50",
                           "--requests", "12", "--postgres", "", "--folder", str(tmp_path / "work"), "--out", str(results)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    text = results.read_text()
    assert text.startswith("# Benchmark results\n\nfrom benchmarks.run\n") and text.count(SECTION_BEGIN) == 1
    assert SECTION_TITLE in text and "Correctness gates passed at every size below." in text
    tables = text.split("### ")[1:]
    assert len(tables) == 2
    keys = ["import 1", "import N", "verify", "verify full", "replay 1", "replay N", "rebuild", "export", "zstd",
            "checkpoint", "serve cached", "serve uncached", "publish first", "monitor first", "day import",
            "publish day", "monitor day"]
    for table in tables:
        rows = [line.split(" | ")[0].removeprefix("| ") for line in table.splitlines() if line.startswith("| ")]
        assert [k for k in keys if k not in rows] == []
        assert "| the SQLite file" in table and "zstd level 3 |" in table
        assert "not available in this build" in table or "| shards 4 |" in table
    assert "events against 1,0" in text  # the ratios of the larger size to the smaller
    assert "| all kinds, seed 004 | 40 | 569 |" in text
    assert " met (<= 1.15) |" in text and " (<= 1.3) |" in text
    assert list((tmp_path / "work").iterdir()) == []  # each size's ledger and site removed


@pytest.mark.slow
@pytest.mark.skipif(not POSTGRES, reason="needs LEDGER_TEST_POSTGRES")
def test_the_postgresql_rows_import_and_write_with_four_writers(tmp_path):
    from benchmarks.scale_storage import postgres_rows

    path = tmp_path / "events.jsonl"
    events, _ = write_realistic(path, 1200, seed=8)
    rows, (total, parts) = postgres_rows(POSTGRES, path, events, tmp_path)
    assert [r.key for r in rows] == ["pg import", "pg writers 1", "pg writers 4"]
    assert all(r.units == events and r.seconds > 0 and r.rss > 0 for r in rows)
    assert total == sum(parts.values()) > 0 and "events" in parts


def test_the_short_events_are_kept_and_the_realistic_ones_are_one_argument_away():
    from benchmarks.generate import generate, generate_papers

    short = generate(500, seed=3)
    assert short[0].payload.startswith(b'{"arxiv_id":"2999.00001","latest_version":1') and b"Paper 2999.00001" in short[0].payload
    realistic = generate(500, seed=3, realistic=True)
    assert len(realistic) == 500 and realistic == [e for p in first_papers(30, seed=3) for e in p][:500]
    assert generate_papers(4, seed=3, realistic=True) == [e for p in first_papers(4, seed=3) for e in p]


@pytest.mark.slow
def test_without_the_site_and_in_chunks_the_run_skips_publish_and_monitor_and_says_so(tmp_path):
    results = tmp_path / "RESULTS.md"
    done = subprocess.run([sys.executable, "-m", "benchmarks.scale", "--events", "1000", "--rebuilds", "20",
                           "--requests", "8", "--postgres", "", "--without-site", "--import-chunk", "300",
                           "--out", str(results)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    text = results.read_text()
    assert "`publish` and `monitor`: not run (`--without-site`" in text
    rows = [line.split(" | ")[0] for line in text.splitlines() if line.startswith("| ")]
    assert "| serve uncached" in rows and "| checkpoint" in rows
    assert not [r for r in rows if r.startswith(("| publish", "| monitor", "| day"))]
    assert "the site the first `publish` wrote" not in text
    assert re.search(r"1 job, [2-9] commands in turn, one a file of ~300 lines \(seconds summed\)", text)
