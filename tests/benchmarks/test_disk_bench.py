"""The disk benchmark's own parts: its realistic events and the section it writes (sizes never asserted here:
they live in benchmarks/RESULTS.md)."""

import re

import pytest

from benchmarks import disk
from tests.conftest import POSTGRES


def test_the_realistic_events_are_copies_of_seed_004_that_share_no_key():
    events = disk.realistic(120, seed=3)
    assert len(events) == 120 and events[:40] != events[40:80]
    assert [e.kind for e in events[:40]] == [e.kind for e in events[40:80]]
    assert sorted(map(len, (e.payload for e in events[:40]))) == sorted(map(len, (e.payload for e in events[40:80])))
    assert len({e.key for e in events}) == 120
    assert disk.realistic(120, seed=3) == events


@pytest.mark.slow
def test_the_disk_benchmark_writes_its_section_and_keeps_the_rest(tmp_path):
    out = tmp_path / "RESULTS.md"
    out.write_text("# Benchmark results\n\nkept\n")
    args = ["--events", "80", "--out", str(out)] + (["--postgres", POSTGRES] if POSTGRES else [])
    assert disk.main(args) == 0
    text = out.read_text()
    assert text.startswith("# Benchmark results\n\nkept\n") and disk.SECTION_END in text
    rows = dict(re.findall(r"^\| `([a-z_0-9]+)` \| ([0-9.,]+) \|", text, re.M))
    assert {"events", "merkle_nodes", "observation_papers", "index_nodes"} <= set(rows)
    assert re.search(r"\| SQLite database: .* \| [0-9.,]+ \| [0-9.]+ \|", text)
    assert ("PostgreSQL: tables" in text) == bool(POSTGRES)
    assert re.search(r"\| `citation.observed` \| [0-9]+% \| [0-9,]+ \| [0-9,]+ \|", text)
    assert re.search(r"\| `ledger verify` .* \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|", text)
