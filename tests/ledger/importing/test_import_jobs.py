"""`import --jobs` and `replay --jobs`: the same ledger and the same refusals, word for word, as one process
decoding whole files; and Ctrl-C, in a real process, leaves nothing behind and no worker running."""

import dataclasses
import io
import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.core.errors import LedgerError
from ledger.core.workers import Workers
from ledger.importing import importer, transaction
from ledger.importing import units as cutting
from ledger.importing.decode import decode_unit
from ledger.importing.importer import Parsed, Sizes, import_files
from ledger.importing.transaction import Attempt
from ledger.importing.units import Part, input_units
from ledger.log.chain import verify_entries
from ledger.log.export import export_line
from ledger.storage.store import Store
from tests.conftest import AS_OF_004, SEED_004, run_ledger
from tests.helpers import event_line, redigest, seed_record, write_record
from tests.ledger.storage.test_concurrency import stream

# Each mode: jobs, and the import's sizes. With two jobs, a worker reads a test's (small) files itself and
# cuts them into units, or the writer reads them and sends each unit to a worker alone; one job decodes all
# of a test's input before it appends, or its first unit only and the rest as it appends; files are read
# whole, or in blocks of 5 bytes (as a file of over Sizes.stream_bytes is).
MODES = {"whole files, one job": (1, Sizes(chunk_lines=10**9)),
         "chunks, one job": (1, Sizes(chunk_lines=7)),
         "chunks, one job, decoding as it appends": (1, Sizes(chunk_lines=7, decode_ahead=1)),
         "chunks, one job, files read in blocks": (1, Sizes(chunk_lines=7, stream_bytes=0, stream_block=5)),
         "chunks, two jobs, in batches": (2, Sizes(chunk_lines=7)),
         "chunks, two jobs, a task each": (2, Sizes(chunk_lines=7, task_bytes=0))}


def import_with(location: str, paths, jobs: int, sizes: Sizes = Sizes()) -> tuple:  # noqa: B008 (frozen)
    """The outcome of one import: its counts, or its error's family and message."""
    with Workers(jobs) as workers:  # entered before the store connects, as the command does
        store = Store.open(location)
        try:
            result = import_files(store, [str(p) for p in paths], workers=workers, sizes=sizes)
            return "ok", result.appended, result.present, result.head[0]
        except LedgerError as exc:
            return type(exc).__name__, str(exc)
        finally:
            store.close()


def facts(location: str) -> list[tuple]:
    store = Store.open(location)
    try:
        entries = list(store.entries())
    finally:
        store.close()
    assert verify_entries(entries)[0] == len(entries)
    return [(e.seq, e.kind, e.effective_at, e.payload) for e in entries]


def lines_of(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def outcomes(new_location, monkeypatch, files, before=(), stdin=b""):
    """The outcome and the ledger after it, in every mode (`stdin` the bytes `-` reads); they must all be
    the same."""
    seen = {}
    for mode, (jobs, sizes) in MODES.items():
        location = new_location()
        Store.create(location).close()
        for path in before:
            assert import_with(location, [path], 1, sizes)[0] == "ok"
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        seen[mode] = (import_with(location, files, jobs, sizes), facts(location))
    return seen


def assert_same(seen: dict) -> tuple:
    first = next(iter(seen.values()))
    for mode, outcome in seen.items():
        assert outcome == first, mode
    return first[0]


def test_the_same_ledger_in_every_mode(new_location, monkeypatch, tmp_path):
    events = tmp_path / "events.jsonl"
    events.write_bytes(stream("2901", papers=12))  # 72 lines: 11 chunks of 7
    again = tmp_path / "again.jsonl"
    again.write_bytes(b"".join(lines_of(stream("2901", papers=12))[30:]) + stream("2902", papers=2))
    outcome = assert_same(outcomes(new_location, monkeypatch, [events, SEED_004, again, SEED_004]))
    assert outcome == ("ok", 72 + 40 + 12, 42 + 40, 124)


def test_a_repeat_across_chunks_counts_as_present(new_location, monkeypatch, tmp_path):
    lines = lines_of(stream("2903", papers=12))
    path = tmp_path / "repeat.jsonl"
    path.write_bytes(b"".join(lines + [lines[2]]))  # line 73 repeats line 3, ten chunks later
    assert assert_same(outcomes(new_location, monkeypatch, [path])) == ("ok", 72, 1, 72)


@pytest.mark.parametrize("case", ["bad_json", "duplicate_key_deep", "unknown_kind", "contradiction_in_file",
                                  "contradiction_with_stored"])
def test_every_refusal_is_worded_as_when_decoding_whole_files(new_location, monkeypatch, tmp_path, case):
    lines = lines_of(stream("2904", papers=12))
    citation = lines[40].decode()
    changed = {
        "bad_json": (49, b'{"kind": "paper.snapshot", "payload": \n'),
        # A duplicate key deep inside an event line, in the sixth chunk.
        "duplicate_key_deep": (40, citation.replace('"cited_work":{', '"cited_work":{"title":"x",', 1).encode()),
        "unknown_kind": (58, b'{"kind":"citation.deleted","payload":{}}\n'),
        "contradiction_in_file": (70, lines[1].replace(b'"source":"pdf_text"', b'"source":"arxiv_source"')),
    }
    before = ()
    if case == "contradiction_with_stored":
        first = tmp_path / "first.jsonl"
        first.write_bytes(b"".join(lines[:20]))
        before = (first,)
        lines = lines[20:]  # seq 16 is stored; the file states it again, otherwise, on its line 41
        lines[40] = lines_of(first.read_bytes())[15].replace(b'"source":"pdf_text"', b'"source":"arxiv_source"')
    else:
        number, line = changed[case]
        lines[number] = line
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"".join(lines))
    outcome = assert_same(outcomes(new_location, monkeypatch, [path], before))
    expected = {
        "bad_json": "events.jsonl: line 50: invalid JSON at line 1 column 39",
        "duplicate_key_deep": "events.jsonl: line 41: duplicate key 'title'",
        "unknown_kind": "events.jsonl: line 59: field kind: expected one of",
        "contradiction_in_file": "events.jsonl: line 71: citation.observed of 2904.00000/0 effective "
                                 "2026-08-02T00:00:00Z contradicts another fact in this import",
        "contradiction_with_stored": "events.jsonl: line 41: citation.observed of 2904.00002/2 effective "
                                     "2026-08-02T00:00:00Z contradicts event seq 16 (same subject",
    }[case]
    assert outcome[0] == "InputError" and expected in outcome[1], outcome


def test_a_contradiction_of_a_line_that_repeats_a_stored_fact_names_the_stored_event(new_location, monkeypatch,
                                                                                     tmp_path):
    # Line 16 repeats a stored fact (present); line 71, nine chunks on, contradicts it. The fact is the
    # ledger's event seq 16, and the refusal names it, in every mode, as an input taken whole and looked up
    # does. (The attempt that took inputs whole without looking up compared the file's own lines first and
    # said "another fact in this import": words that came from the order of the attempts, gone with it.)
    lines = lines_of(stream("2911", papers=12))
    first = tmp_path / "first.jsonl"
    first.write_bytes(b"".join(lines[:20]))
    lines[70] = lines[15].replace(b'"source":"pdf_text"', b'"source":"arxiv_source"')
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"".join(lines))
    outcome = assert_same(outcomes(new_location, monkeypatch, [path], before=(first,)))
    assert outcome[1].endswith("events.jsonl: line 71: citation.observed of 2911.00002/2 effective "
                               "2026-08-02T00:00:00Z contradicts event seq 16 (same subject, kind and effective "
                               "time, other payload)"), outcome


def test_a_bad_file_later_is_reported_before_a_refusal_met_while_appending(new_location, monkeypatch, tmp_path):
    # As when every input was decoded before anything was appended: the malformed file wins.
    record = seed_record()
    record["reference_resolution"]["displayed"] = 1
    unreproducible = write_record(tmp_path / "inconsistent.json", redigest(record))
    events = tmp_path / "events.jsonl"
    events.write_bytes(stream("2905", papers=12))
    lines = lines_of(stream("2906", papers=12))
    lines[65] = b"{not json}\n"
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"".join(lines))
    outcome = assert_same(outcomes(new_location, monkeypatch, [unreproducible, events, bad]))
    assert outcome[0] == "InputError" and outcome[1].startswith(f"{bad}: line 66: invalid JSON"), outcome
    alone = assert_same(outcomes(new_location, monkeypatch, [unreproducible, events]))
    assert "cannot reproduce this record at its as_of" in alone[1]


@pytest.fixture
def attempts(monkeypatch) -> list:
    """The kind of every attempt an import makes (`transaction.attempt`), as it makes them."""
    kinds, attempt = [], transaction.attempt
    monkeypatch.setattr(transaction, "attempt", lambda store, units, how, *rest, **options: kinds.append(how) or
                        attempt(store, units, how, *rest, **options))
    return kinds


def test_an_input_imported_again_is_looked_up_chunk_by_chunk(new_location, monkeypatch, tmp_path, attempts):
    # Every fact of the file is stored already: the chunked attempt gives up at once, and the import looks
    # every fact up, chunk by chunk: no attempt takes the file whole (which took ten times its size).
    events = tmp_path / "events.jsonl"
    events.write_bytes(stream("2910", papers=12))
    outcome = assert_same(outcomes(new_location, monkeypatch, [events], before=(events,)))
    assert outcome == ("ok", 0, 72, 72)
    assert set(attempts) == {Attempt.CHUNKED, Attempt.LOOK_UP}  # every mode: the import before it, then the two attempts


def test_a_refused_import_is_refused_by_the_attempt_that_looks_facts_up(new_location, monkeypatch, tmp_path,
                                                                        attempts):
    # Line 71 contradicts line 2, ten chunks before it: the attempt that looks every fact up, chunk by chunk,
    # refuses it in the words of the file taken whole, and no third attempt reads the file again whole (a
    # file of 147 MB with one contradiction took 438 MB of memory that way, and 30% longer).
    lines = lines_of(stream("2913", papers=12))
    lines[70] = lines[1].replace(b'"source":"pdf_text"', b'"source":"arxiv_source"')
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"".join(lines))
    outcome = assert_same(outcomes(new_location, monkeypatch, [path]))
    assert outcome[0] == "InputError" and outcome[1].endswith(
        "events.jsonl: line 71: citation.observed of 2913.00000/0 effective 2026-08-02T00:00:00Z contradicts "
        "another fact in this import"), outcome
    assert attempts == [Attempt.CHUNKED, Attempt.LOOK_UP] * len(MODES), attempts


def whole(units):
    """Units joined back into whole inputs: how the oracle below reads them."""
    current = None
    for unit in units:
        if current is None:
            current = dataclasses.replace(unit, events=list(unit.events), entries=list(unit.entries), last=True)
        else:
            current.events += unit.events
            current.entries += unit.entries
            current.size += unit.size
        if unit.last:
            yield current
            current = None


def import_taken_whole(location: str, paths: list[str], sizes: Sizes) -> tuple:
    """The oracle below: an import whose every input is one unit, its first attempt appending without looking
    anything up, and, should a fact be met twice or contradicted, its second looking every fact up."""
    store = Store.open(location)
    units = lambda: whole(map(decode_unit, input_units(paths, sizes)))  # noqa: E731
    try:
        result = transaction.attempt(store, units(), Attempt.CHUNKED)
        if result is None:  # given up: nothing appended
            result = transaction.attempt(store, units(), Attempt.LOOK_UP)
        return "ok", result.appended, result.present, result.head[0]
    except LedgerError as exc:
        return type(exc).__name__, str(exc)
    finally:
        store.close()


# Lines drawn from a few facts, each in one of two versions (the second contradicts the first).
FACT_LINES = [lines_of(stream("2912", papers=2, refs=2)), None]
FACT_LINES[1] = [line.replace(b'"Work ', b'"Other work ').replace(b'"Paper ', b'"Other paper ') for line in FACT_LINES[0]]
drawn_lines = st.lists(st.tuples(st.integers(0, 5), st.integers(0, 1)).map(lambda f: FACT_LINES[f[1]][f[0]]),
                       min_size=1, max_size=14)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stored=st.lists(drawn_lines, max_size=1), files=st.lists(drawn_lines, min_size=1, max_size=3),
       chunk=st.integers(1, 4))
def test_repeats_and_contradictions_come_out_as_when_inputs_were_taken_whole(tmp_path_factory, monkeypatch, stored,
                                                                            files, chunk):
    # Accepted or refused, the same outcome (counts, or the refusal's words) and the same ledger as the
    # oracle's, whatever the chunks: it fails should a contradiction of a fact from an earlier chunk of the
    # same input be worded otherwise than within one unit.
    directory = tmp_path_factory.mktemp("drawn")
    paths = []
    for number, lines in enumerate(stored + files):
        path = directory / f"{number}.jsonl"
        path.write_bytes(b"".join(lines))
        paths.append(str(path))
    seen = {}
    for way, lines_per_chunk in (("taken whole", chunk), ("one unit each", 10**9), ("in chunks", chunk)):
        sizes = Sizes(chunk_lines=lines_per_chunk)
        location = str(directory / f"{way}.db")
        Store.create(location).close()
        if stored:  # a first import, accepted or not
            import_with(location, paths[:1], 1, sizes)
        outcome = import_taken_whole(location, paths[len(stored):], sizes) if way == "taken whole" else \
            import_with(location, paths[len(stored):], 1, sizes)
        seen[way] = (outcome, facts(location))
    assert_same(seen)


@pytest.fixture
def kept_stdin(monkeypatch) -> list:
    """The temporary files stdin is kept in (`inputs.keep_stdin`), as they are made."""
    kept, make = [], tempfile.TemporaryFile
    monkeypatch.setattr(tempfile, "TemporaryFile", lambda **options: kept.append(make(**options)) or kept[-1])
    return kept


def test_stdin_in_every_mode(new_location, monkeypatch, tmp_path, kept_stdin):
    # stdin is held in memory, or beyond STREAM_BYTES (the mode reading files in blocks) kept in a temporary
    # file and read in blocks as a large file is: the same ledger either way. Its lines repeat facts of the
    # file before it, so every mode's first attempt gives up and the import reads stdin again, whole.
    events = tmp_path / "events.jsonl"
    events.write_bytes(stream("2907", papers=12))
    again = b"".join(lines_of(stream("2907", papers=12))[30:]) + stream("2908", papers=2)
    assert assert_same(outcomes(new_location, monkeypatch, [events, "-", SEED_004], stdin=again)) == \
        ("ok", 72 + 12 + 40, 42, 124)
    assert len(kept_stdin) == 1 and kept_stdin[0].closed  # made once, for the mode reading in blocks


def test_a_refusal_in_stdin_is_worded_the_same_in_every_mode(new_location, monkeypatch, kept_stdin):
    lines = lines_of(stream("2909", papers=12))
    lines[65] = b"{not json}\n"
    outcome = assert_same(outcomes(new_location, monkeypatch, [SEED_004, "-"], stdin=b"".join(lines)))
    assert outcome[0] == "InputError" and outcome[1].startswith("-: line 66: invalid JSON"), outcome
    assert len(kept_stdin) == 1 and kept_stdin[0].closed
    empty = assert_same(outcomes(new_location, monkeypatch, ["-"], stdin=b" \n"))
    assert empty[0] == "InputError" and empty[1] == "-: empty file, expected a record or event lines", empty


def test_a_record_on_stdin_beyond_the_limit_is_read_whole_from_where_it_was_kept(store, monkeypatch, seed_bytes,
                                                                               kept_stdin):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(seed_bytes)))
    assert import_files(store, ["-"], sizes=Sizes(stream_bytes=100)).appended == 40
    assert len(kept_stdin) == 1 and kept_stdin[0].closed


def test_stdin_that_cannot_be_kept_is_refused_in_one_line(store, monkeypatch, tmp_path, seed_bytes):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))  # no such directory
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(seed_bytes)))
    with pytest.raises(LedgerError) as refused:
        import_files(store, ["-"], sizes=Sizes(stream_bytes=100))
    assert str(refused.value) == "-: cannot keep stdin in a temporary file: No such file or directory"
    assert type(refused.value).__name__ == "InputError" and store.head()[0] == 0


@pytest.mark.parametrize("ahead, before_the_lock", [(10**9, 10), (1, 1)])
def test_one_job_decodes_at_most_its_budget_before_it_appends(new_location, monkeypatch, tmp_path, ahead,
                                                              before_the_lock):
    # Ten units (chunks of 7 lines): all decoded before the write transaction begins, or the first only
    # and the others as they are appended (memory bounded whatever the input's size); every event appended.
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"".join(lines_of(stream("2912", papers=12))[:70]))
    decoded, at_the_lock = [], []
    writing = Store.writing
    monkeypatch.setattr(importer, "decode_unit", lambda unit: decoded.append(unit.first) or decode_unit(unit))
    monkeypatch.setattr(Store, "writing", lambda self: at_the_lock.append(len(decoded)) or writing(self))
    location = new_location()
    Store.create(location).close()
    assert import_with(location, [path], 1, Sizes(chunk_lines=7, decode_ahead=ahead))[:2] == ("ok", 70)
    assert at_the_lock == [before_the_lock] and decoded == list(range(1, 71, 7))


def exported_log(new_location, tmp_path, prefix: str, seq_key: bytes = b'"seq"') -> tuple[str, bytes, bytes]:
    """(its ledger, the event lines of three papers, their ledger's export with `seq_key` for "seq")."""
    source = new_location()
    Store.create(source).close()
    log_source = tmp_path / "log-source.jsonl"
    log_source.write_bytes(stream(prefix, papers=3))
    assert import_with(source, [log_source], 1)[0] == "ok"
    store = Store.open(source)
    exported = b"".join(export_line(entry) for entry in store.entries()).replace(b'"seq"', seq_key)
    store.close()
    return source, log_source.read_bytes(), exported


@pytest.mark.parametrize("seq_key", [b'"seq"', b'"\\u0073eq"'])
def test_log_lines_go_before_new_facts_of_the_same_file(new_location, monkeypatch, tmp_path, seq_key):
    # A file of new facts whose log lines (an export of another ledger) come last, chunks later: the log
    # lines are appended first, as when the file is taken whole; also when their key `seq` is written with
    # an escape (the same key to a JSON parser).
    source, _, exported = exported_log(new_location, tmp_path, "2907", seq_key)
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(stream("2908", papers=5) + exported)
    seen = outcomes(new_location, monkeypatch, [path])
    assert assert_same(seen) == ("ok", 30 + 18, 0, 48)
    ledger = next(iter(seen.values()))[1]
    assert [payload for _, _, _, payload in ledger[:18]] == [e.payload for e in Store.open(source).entries()]


def test_a_new_fact_contradicting_a_log_line_of_its_own_file_names_the_log_line(new_location, monkeypatch,
                                                                                tmp_path):
    # The log lines go first, chunks later in the file; the new fact on line 1 contradicts the one of seq 5:
    # the refusal names seq 5, as the file taken whole does, not "another fact in this import".
    _, lines, exported = exported_log(new_location, tmp_path, "2914")
    contradiction = lines_of(lines)[4].replace(b'"source":"pdf_text"', b'"source":"arxiv_source"')
    assert contradiction != lines_of(lines)[4]
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(contradiction + stream("2915", papers=5) + exported)
    outcome = assert_same(outcomes(new_location, monkeypatch, [path]))
    assert outcome[0] == "InputError" and outcome[1].endswith(
        "mixed.jsonl: line 1: citation.observed of 2914.00000/3 effective 2026-08-02T00:00:00Z contradicts event "
        "seq 5 (same subject, kind and effective time, other payload)"), outcome


def test_a_file_of_log_lines_and_new_facts_comes_in_two_parts_each_read_in_full(new_location, monkeypatch,
                                                                                tmp_path):
    # Its log lines first, then its new facts, each part a pass over the whole file (nothing held back until
    # the file ends). Each part's units weigh the bytes they hold, so a worker's batch of the second part is
    # no larger than one of the first; progress counts the file's bytes once. A new fact whose text holds
    # "seq" (a title) is a new fact all the same: it goes after the log lines.
    _, _, exported = exported_log(new_location, tmp_path, "2917")
    titled = event_line("paper.snapshot", {"arxiv_id": "2921.00001", "snapshot_observed_at": "2026-08-01T00:00:00Z",
                                           "title": "seq", "latest_version": 1})
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(titled + stream("2918", papers=5) + exported)  # 49 lines: 7 chunks of 7
    units = list(input_units([str(path)], Sizes(chunk_lines=7)))
    assert [unit.part for unit in units] == [Part.LOG_LINES] * 7 + [Part.NEW_FACTS] * 7
    assert [unit.last for unit in units].count(True) == 2
    assert [unit.size for unit in units[7:]] == [unit.size for unit in units[:7]]
    assert sum(unit.size for unit in units[:7]) == path.stat().st_size
    decoded = [decode_unit(unit) for unit in units]
    assert sum(p.size for p in decoded) == path.stat().st_size
    assert sum(len(p.entries) for p in decoded[:7]) == 18 and not any(p.events for p in decoded[:7])
    assert sum(len(p.events) for p in decoded[7:]) == 31 and not any(p.entries for p in decoded[7:])
    seen = outcomes(new_location, monkeypatch, [path])
    assert assert_same(seen) == ("ok", 49, 0, 49)
    ledger = next(iter(seen.values()))[1]
    assert b'"title":"seq"' in ledger[18][3]  # the first new fact, after the 18 log lines


@pytest.mark.parametrize("block", [None, 5])
def test_an_export_alone_is_read_in_one_part(new_location, tmp_path, monkeypatch, block):
    # Every line a log line: no second pass, read whole or in blocks.
    _, _, exported = exported_log(new_location, tmp_path, "2922")
    path = tmp_path / "log.jsonl"
    path.write_bytes(exported)
    sizes = Sizes(chunk_lines=7, stream_bytes=0, stream_block=block) if block else Sizes(chunk_lines=7)
    units = list(input_units([str(path)], sizes))
    assert [unit.part for unit in units] == [Part.LOG_LINES] * 3
    assert sum(unit.size for unit in units) == path.stat().st_size


def test_a_bad_new_fact_before_a_bad_log_line_is_the_one_named(new_location, monkeypatch, tmp_path):
    # The part of log lines parses and checks every line, in order: the first bad line is named, whichever
    # part it belongs to.
    _, _, exported = exported_log(new_location, tmp_path, "2919")
    lines = lines_of(stream("2920", papers=5) + exported)
    lines[2] = b'{"kind":"citation.deleted","payload":{}}\n'
    lines[40] = lines[40].replace(b'"entry_hash":"blake3:', b'"entry_hash":"blake4:')
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"".join(lines))
    outcome = assert_same(outcomes(new_location, monkeypatch, [path]))
    assert outcome[0] == "InputError" and "mixed.jsonl: line 3: field kind: expected one of" in outcome[1], outcome


def test_replay_with_jobs_writes_the_same_records(imported_many, tmp_path):
    location, papers = imported_many
    outputs = {}
    for jobs in (1, 2):
        out = tmp_path / f"jobs-{jobs}"
        done = run_ledger("--db", location, "replay", "--as-of", "2026-08-09", "--out", str(out), "--jobs", str(jobs))
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
        outputs[jobs] = {path.name: path.read_bytes() for path in out.iterdir()}
        lines = run_ledger("--db", location, "replay", "--as-of", "2026-08-09", "--jobs", str(jobs))
        assert lines.returncode == 0
        outputs[f"stdout {jobs}"] = lines.stdout
    assert len(outputs[1]) == papers + 1 and outputs[1] == outputs[2]
    assert outputs["stdout 1"] == outputs["stdout 2"]
    assert outputs["stdout 1"].splitlines() == [outputs[1][name] for name in sorted(outputs[1])]


@pytest.fixture
def imported_many(tmp_path):
    location = str(tmp_path / "many.db")
    path = tmp_path / "many.jsonl"
    path.write_bytes(stream("2909", papers=40))
    assert run_ledger("--db", location, "init").returncode == 0
    assert run_ledger("--db", location, "import", str(path), str(SEED_004)).returncode == 0
    return location, 40


def test_replay_of_an_exported_log_with_jobs_runs_in_one_process(imported_many, tmp_path):
    location, _ = imported_many
    log = tmp_path / "log.jsonl"
    log.write_bytes(run_ledger("--db", location, "export").stdout)
    one = run_ledger("--db", str(log), "replay", "--as-of", AS_OF_004)
    two = run_ledger("--db", str(log), "replay", "--as-of", AS_OF_004, "--jobs", "2")
    assert (two.returncode, two.stderr) == (0, b"") and two.stdout == one.stdout != b""


def _square_unless_odd_above_four(n: int) -> int:
    if n > 4 and n % 2:
        raise ValueError(f"task {n}")
    return n * n


@pytest.mark.parametrize("jobs, load", [(1, 0), (2, 0), (2, 3), (2, 100)])
def test_workers_give_results_in_order_and_the_first_failure_after_every_result_before_it(jobs, load):
    # One task per batch (load 0), batches of three, one batch: the same results, the same failure.
    tasks = [3, 1, 2, 4, 0, 6, 8, 9, 5, 10, 7]
    seen = []
    with Workers(jobs) as workers:
        with pytest.raises(ValueError, match="task 9"):
            for result in workers.map(_square_unless_odd_above_four, tasks, lambda n: 1, load):
                seen.append(result)
        assert list(workers.map(_square_unless_odd_above_four, tasks[:7], lambda n: 1, load)) == seen
    assert seen == [9, 1, 4, 16, 0, 36, 64]


def test_jobs_must_be_at_least_one(tmp_path):
    done = run_ledger("--db", str(tmp_path / "x.db"), "import", "--jobs", "0", str(SEED_004))
    assert done.returncode == 2 and b"--jobs" in done.stderr and b"Traceback" not in done.stderr


# -- Ctrl-C ------------------------------------------------------------------------------------------------
def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open(f"/proc/{entry}/stat").read()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry))
    return members


def _wait_for_appends(wal, proc, least: int = 64 * 1024) -> None:
    """Until the open transaction has spilled pages into the write-ahead log: appends are under way."""
    deadline = time.monotonic() + 120
    while not (wal.exists() and wal.stat().st_size >= least):
        assert proc.poll() is None, f"the import ended first: {proc.communicate()}"
        assert time.monotonic() < deadline, "no appends seen"
        time.sleep(0.005)


def _as_in_a_terminal() -> None:
    # A process started in the background by a shell without job control inherits SIGINT ignored, and Python
    # then installs no Ctrl-C handler: the command would run on. A foreground command has the default.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("jobs, whom", [(2, "group"), (2, "parent"), (1, "group")])
def test_ctrl_c_in_the_middle_of_appending_leaves_nothing(tmp_path, jobs, whom):
    # SQLite only: the rollback is the database's; PostgreSQL's is covered by a SIGKILL in test_concurrency.
    db = tmp_path / "interrupted.db"
    assert run_ledger("--db", str(db), "init").returncode == 0
    big = tmp_path / "big.jsonl"
    big.write_bytes(stream("2910", papers=8000))
    files = [str(big)]
    if jobs > 1:
        # With workers, appends overlap decoding: the parent then blocks reading this pipe, which nobody
        # writes, with its transaction open. Without, everything is decoded first: the pipe would stop it early.
        fifo = tmp_path / "never.jsonl"
        os.mkfifo(fifo)
        files.append(str(fifo))
    proc = subprocess.Popen([sys.executable, "-m", "ledger.cli", "--db", str(db), "import", "--jobs", str(jobs), *files],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=_as_in_a_terminal)
    try:
        _wait_for_appends(tmp_path / "interrupted.db-wal", proc)
        if whom == "group":  # as a terminal's Ctrl-C: every process of the foreground group
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert (proc.returncode, out, err) == (130, b"", b"")  # typer's exit for Ctrl-C; no worker's traceback
    deadline = time.monotonic() + 30
    while _group_members(proc.pid):  # every worker has left too
        assert time.monotonic() < deadline, _group_members(proc.pid)
        time.sleep(0.05)
    store = Store.open(str(db))
    try:
        assert store.head()[0] == 0
        assert list(store.entries()) == []
    finally:
        store.close()


def test_a_record_that_rebuilds_from_its_own_events_is_still_checked_against_the_ledger(new_location, monkeypatch,
                                                                                         tmp_path):
    # A worker rebuilds each record from its own events; the writer relies on that only when the ledger's
    # facts of the paper are exactly those. Here the ledger holds one more (a later resolution, before the
    # record's as_of): the seed no longer reproduces, in every mode.
    resolution = {"observed_at": "2026-08-09T10:00:00Z", "resolver_source": "arxiv_id", "status": "verified_exact"}
    later = tmp_path / "later.jsonl"
    later.write_bytes(event_line("resolution.recorded", {"observation_id": "b7d1cb3d-82fc-453c-be89-0574bc0e903d",
                                                         "resolution": resolution}))
    outcome = assert_same(outcomes(new_location, monkeypatch, [SEED_004], before=(later,)))
    assert outcome[0] == "InputError" and "cannot reproduce this record at its as_of" in outcome[1], outcome
    assert "resolution" in outcome[1]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_record_whose_paper_holds_nothing_else_is_checked_without_reading_its_events_back(
        new_location, monkeypatch, jobs):
    # The ledger's facts of the paper are the record's own events, appended just now: their sequence numbers
    # say so, and the rebuild runs on the events in memory (one job) or was done by the worker (two jobs),
    # whose record the writer then never parses again.
    from ledger.storage.writer import Writer

    def read_back(*_):
        raise AssertionError("the paper's events were read back")

    location = new_location()
    Store.create(location).close()
    monkeypatch.setattr(Writer, "paper_facts", read_back)
    if jobs > 1:
        monkeypatch.setattr(Parsed, "the_record", read_back)
    assert import_with(location, [SEED_004], jobs)[:3] == ("ok", 40, 0)


def test_with_two_jobs_a_worker_reads_each_small_file_and_the_writer_only_large_ones(new_location, monkeypatch,
                                                                                      tmp_path):
    # A file of at most TASK_BYTES is read (and parsed, to see whether it is event lines) by a worker, not by
    # the writer; a larger one is read by the writer and cut into chunks, which both workers decode.
    large = tmp_path / "large.jsonl"
    large.write_bytes(stream("2911", papers=60))  # 360 lines, chunks of 7
    assert SEED_004.stat().st_size < 40_000 < large.stat().st_size
    location = new_location()
    Store.create(location).close()
    read, real = [], cutting.read_input
    with Workers(2) as workers:  # forked before read_input is watched: only the writer's reads are seen
        monkeypatch.setattr(cutting, "read_input", lambda name, limit, kept=None: read.append(name) or real(name, limit, kept))
        store = Store.open(location)
        try:
            result = import_files(store, [str(SEED_004), str(large), str(SEED_004)], workers=workers,
                                  sizes=Sizes(task_bytes=40_000, chunk_lines=7))
        finally:
            store.close()
    assert set(read) == {str(large)}  # read again by the attempt that looks facts up (the record's repeat)
    assert (result.appended, result.present) == (40 + 360, 40)


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_record_with_another_fact_of_its_paper_in_the_same_import_is_rebuilt_from_the_ledger(
        new_location, tmp_path, jobs):
    # The extra fact comes first in the same import: the paper's sequence numbers are not the record's own,
    # so its facts are read back, and the record no longer reproduces.
    resolution = {"observed_at": "2026-08-09T10:00:00Z", "resolver_source": "arxiv_id", "status": "verified_exact"}
    later = tmp_path / "later.jsonl"
    later.write_bytes(event_line("resolution.recorded", {"observation_id": "b7d1cb3d-82fc-453c-be89-0574bc0e903d",
                                                         "resolution": resolution}))
    location = new_location()
    Store.create(location).close()
    outcome = import_with(location, [later, SEED_004], jobs)
    assert outcome[0] == "InputError" and "cannot reproduce this record at its as_of" in outcome[1], outcome
    assert facts(location) == []
