"""Fuzzing event lines, records and exported logs (ledger/importing): whole, cut into units, and loaded as a
`--db log.jsonl` is. Nothing may raise but a LedgerError."""

import re

import pytest
from hypothesis import given

from benchmarks.fuzz import CORPUS, corpus, target_events
from ledger.core.canonical import canonical
from ledger.core.errors import InputError
from ledger.importing.decode import parse_input
from tests.fuzz.strategies import BIG_INT, FUZZ, json_mutated, outside_bytes
from tests.helpers import redigest, seed_record


@FUZZ
@given(outside_bytes("events"))
def test_mutated_and_raw_bytes_raise_only_documented_errors(data):
    target_events(data)


@FUZZ
@given(json_mutated(corpus("events"), big=True))
def test_hostile_json_values_raise_only_documented_errors(data):
    target_events(data)


@pytest.mark.parametrize("seed", ["record.json", "events.jsonl", "exported.jsonl"])
def test_a_5000_digit_integer_is_an_input_error(seed):
    data = (CORPUS / "events" / seed).read_bytes()
    number = re.compile(rb'(": ?)[0-9]+([,}\n])')  # the first number a member holds
    assert number.search(data)
    with pytest.raises(InputError):
        parse_input("fuzz", number.sub(rb"\g<1>" + BIG_INT.encode() + rb"\g<2>", data, count=1))


BAD_IDS = ["../../etc/passwd", "/tmp/x/OUTSIDE", "2407.2001", "zz", "2407.20018/../x"]
LINES = {"paper.snapshot": ("arxiv_id", '{"kind":"paper.snapshot","effective_at":"2026-07-06T18:53:22Z","payload":'
                                        '{"arxiv_id":"2407.20018","last_updated":"2024-07-29T13:53:27Z",'
                                        '"latest_version":1,"primary_category":"cs.DC","snapshot_observed_at":'
                                        '"2026-07-06T18:53:22Z","submitted_at":"2024-07-29T13:53:27Z","title":"T"}}'),
         "source.checked": ("paper", '{"kind":"source.checked","effective_at":"2026-08-09T06:31:02Z","payload":'
                                     '{"observed_at":"2026-08-09T06:31:02Z","paper":"2407.20018","source":"crossref"}}')}


@pytest.mark.parametrize("bad", BAD_IDS)
def test_a_record_of_a_malformed_paper_id_is_refused(bad):
    record = seed_record()
    record["paper"]["arxiv_id"] = bad
    with pytest.raises(InputError):
        parse_input("fuzz", canonical(redigest(record)))


@pytest.mark.parametrize("kind", sorted(LINES))
@pytest.mark.parametrize("bad", BAD_IDS)
def test_an_event_line_of_a_malformed_paper_id_is_refused(kind, bad):
    key, line = LINES[kind]
    assert parse_input("fuzz", line.encode()).events  # the line as it stands is a good one
    with pytest.raises(InputError):
        parse_input("fuzz", line.replace(f'"{key}":"2407.20018"', f'"{key}":"{bad}"').encode())
