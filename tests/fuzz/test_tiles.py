"""Fuzzing entry bundles as the monitor reads them and tile paths as `serve` and the monitor name them
(ledger/log/tiles.py): nothing may raise but a LedgerError, and every path accepted is canonical."""

from hypothesis import given
from hypothesis import strategies as st

from benchmarks.fuzz import target_tiles
from ledger.core.errors import InputError
from ledger.log.tiles import bundle, parse_tile_path, read_bundle
from tests.fuzz.strategies import FUZZ, outside_bytes


@FUZZ
@given(outside_bytes("tiles", big=True))
def test_mutated_and_raw_tiles_raise_only_documented_errors(data):
    target_tiles(data)


@FUZZ
@given(st.lists(st.sampled_from(["tile", "entries", "0", "1", "63", "64", "x001", "x000", "001", "000", "1.p",
                                 "000.p", "255", "256", "0255", "x" + "9" * 5000, "9" * 5000, "", "..", "%2e"]),
                max_size=7))
def test_tile_paths_from_their_own_words_are_refused_or_canonical(words):
    path = "/".join(words)
    try:
        tile = parse_tile_path(path)
    except InputError:
        return
    assert tile.path() == path


@FUZZ
@given(st.lists(st.binary(max_size=300), max_size=8))
def test_an_entry_bundle_reads_back_its_entries(entries):
    assert read_bundle(bundle(list(enumerate(entries, start=1)))) == entries
