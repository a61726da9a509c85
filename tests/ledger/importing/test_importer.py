"""Import: all-or-nothing, idempotent, refusing contradictions and records it cannot reproduce."""

import io
import json
import sys

import pytest

from ledger.core.canonical import canonical
from ledger.core.errors import InputError, IntegrityError
from ledger.core.times import When
from ledger.importing.importer import import_files
from ledger.log.chain import verify_entries
from ledger.log.export import export_line
from ledger.projections.record import build_record
from tests.conftest import AS_OF_004, PAPER_004, SEED_004
from tests.helpers import event_line, redigest, seed_record, write_record

OBS = "b7d1cb3d-82fc-453c-be89-0574bc0e903d"


def test_seed_round_trip_is_byte_identical(store, seed_bytes):
    import_files(store, [str(SEED_004)])
    rebuilt = build_record(PAPER_004, store.paper_facts(PAPER_004), When.at(AS_OF_004))
    assert canonical(rebuilt) == seed_bytes


def test_one_invocation_is_all_or_nothing(store, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "pith.paper-citation-record.v1"')
    with pytest.raises(InputError, match="bad.json"):
        import_files(store, [str(SEED_004), str(bad)])
    assert store.head()[0] == 0


def test_a_refusal_inside_the_transaction_rolls_back_earlier_files(store, tmp_path):
    record = seed_record()
    record["thesis"] = record["thesis"].replace("12 inbound", "13 inbound")
    other = write_record(tmp_path / "other.json", redigest(record))
    with pytest.raises(InputError, match="first difference at thesis"):
        import_files(store, [str(SEED_004), other])
    assert store.head()[0] == 0


def test_a_record_with_a_wrong_digest_exits_1_naming_the_observation(store, tmp_path):
    record = seed_record()
    record["inbound"][0]["citation"]["reference_index"] = 22
    path = write_record(tmp_path / "tampered.json", record)
    with pytest.raises(IntegrityError) as caught:
        import_files(store, [path])
    assert OBS in str(caught.value) and "tampered.json" in str(caught.value)
    assert store.head()[0] == 0


def test_a_self_consistent_record_the_ledger_cannot_reproduce_is_refused(store, tmp_path):
    record = seed_record()
    record["reference_resolution"]["displayed"] = 1  # derived field that disagrees with the itemized lists
    path = write_record(tmp_path / "inconsistent.json", redigest(record))
    with pytest.raises(InputError, match=r"first difference at reference_resolution\.displayed"):
        import_files(store, [path])
    assert store.head()[0] == 0


def test_a_fact_observed_after_as_of_cannot_be_published_in_that_record(store, tmp_path):
    record = seed_record()
    record["inbound"][0]["citation"]["citing_paper"]["snapshot_observed_at"] = "2026-08-10T00:00:00Z"
    path = write_record(tmp_path / "future.json", redigest(record))
    with pytest.raises(InputError, match="cannot reproduce"):
        import_files(store, [path])


def test_a_contradicting_fact_is_refused_naming_the_event(seeded, tmp_path):
    record = seed_record()
    target = next(o for o in record["inbound"] if o["observation_id"] == "35de0436-c3a4-484f-9168-1ffb5cd22212")
    target["resolution"]["resolver_source"] = "local_arxiv"  # same observation, same time, other payload
    path = write_record(tmp_path / "contradiction.json", redigest(record))
    with pytest.raises(InputError, match=r"resolution\.recorded of 35de0436.*contradicts event seq \d+"):
        import_files(seeded, [path])
    assert seeded.head()[0] == 40


def test_event_lines_append_facts_one_by_one(seeded, tmp_path):
    lines = tmp_path / "events.jsonl"
    resolution = {"observed_at": "2026-08-20T10:00:00Z", "resolver_source": "arxiv_id", "status": "verified_exact"}
    lines.write_bytes(event_line("resolution.recorded", {"observation_id": OBS, "resolution": resolution}))
    result = import_files(seeded, [str(lines)])
    assert result.appended == 1 and result.head[0] == 41
    later = build_record(PAPER_004, seeded.paper_facts(PAPER_004), When.at("2026-08-21T00:00:00Z"))
    assert next(o for o in later["inbound"] if o["observation_id"] == OBS)["resolution"] == resolution
    earlier = build_record(PAPER_004, seeded.paper_facts(PAPER_004), When.at(AS_OF_004))
    assert next(o for o in earlier["inbound"] if o["observation_id"] == OBS)["resolution"]["status"] == "unresolved"
    assert import_files(seeded, [str(lines)]).appended == 0


def test_event_lines_with_a_contradiction_are_refused(seeded, tmp_path):
    resolution = {"observed_at": "2026-08-08T10:10:22.827490Z", "resolver_source": "arxiv_id", "status": "verified_exact"}
    lines = tmp_path / "events.jsonl"
    lines.write_bytes(event_line("resolution.recorded", {"observation_id": OBS, "resolution": resolution}))
    with pytest.raises(InputError, match=r"events.jsonl: line 1: .*contradicts event seq"):
        import_files(seeded, [str(lines)])


def test_an_event_line_cannot_claim_a_time_its_payload_contradicts(store, tmp_path):
    lines = tmp_path / "events.jsonl"
    lines.write_bytes(event_line("paper.snapshot", {"arxiv_id": "2401.00001", "snapshot_observed_at": "2026-01-01T00:00:00Z"},
                                 "2026-02-01T00:00:00Z"))
    with pytest.raises(InputError, match="line 1: field effective_at: the payload says"):
        import_files(store, [str(lines)])


def test_a_notice_without_receipts_needs_its_sweep_time(store, tmp_path):
    notice = {"events": [], "reason": "canonical_work_link_unavailable", "source_receipts": [], "state": "unavailable"}
    lines = tmp_path / "events.jsonl"
    lines.write_bytes(event_line("notice.checked", {"observation_id": OBS, "standing_notice": notice}))
    with pytest.raises(InputError, match="needs its sweep time"):
        import_files(store, [str(lines)])


def test_stdin_is_one_input(store, monkeypatch, seed_bytes):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(seed_bytes)))
    assert import_files(store, ["-"]).appended == 40


def test_the_same_file_twice_in_one_invocation_appends_once(store):
    result = import_files(store, [str(SEED_004), str(SEED_004)])
    assert (result.appended, result.present) == (40, 40)


def rehashed_log(lines: list[dict]) -> bytes:
    """Log lines with their entry and chain hashes re-computed, as a forger who knows the layout would."""
    from ledger.core.canonical import canonical
    from ledger.log.chain import GENESIS, entry_hash, hex_hash, link

    chain, out = GENESIS, b""
    for line in lines:
        digest = entry_hash(line["seq"], line["kind"], line["effective_at"], line["recorded_at"],
                            canonical(line["payload"]))
        chain = link(chain, digest)
        out += canonical({**line, "entry_hash": hex_hash(digest), "chain_hash": hex_hash(chain)}) + b"\n"
    return out


def log_line(seq: int, recorded_at: str) -> dict:
    return {"seq": seq, "kind": "paper.snapshot", "effective_at": f"2026-01-0{seq}T00:00:00Z",
            "recorded_at": recorded_at,
            "payload": {"arxiv_id": f"2601.0000{seq}", "snapshot_observed_at": f"2026-01-0{seq}T00:00:00Z"}}


@pytest.mark.parametrize("times, problem", [
    (["2026-02-01T00:00:00Z"], "line 1: field recorded_at: expected the ledger's form 2026-02-01T00:00:00.000000Z"),
    (["2026-02-02T00:00:00.000000Z", "2026-02-01T00:00:00.000000Z"],
     "line 2: seq 2: recorded_at 2026-02-01T00:00:00.000000Z is earlier than seq 1's"),
])
def test_log_lines_keep_recorded_time_in_the_ledgers_form_and_order(store, tmp_path, times, problem):
    # Known-at compares recorded times as text and relies on their order: a rehashed log must keep both.
    path = tmp_path / "forged.jsonl"
    path.write_bytes(rehashed_log([log_line(n, t) for n, t in enumerate(times, start=1)]))
    with pytest.raises(InputError) as caught:
        import_files(store, [str(path)])
    assert problem in str(caught.value)
    assert store.head()[0] == 0


def test_new_facts_among_stored_ones_are_appended_and_the_rest_counted(seeded, tmp_path):
    # New facts are appended without a look-up; when the database refuses the batch because one is stored,
    # the importer looks them up and appends the others on an unbroken chain.
    resolution = {"observed_at": "2026-08-20T10:00:00Z", "resolver_source": "arxiv_id", "status": "verified_exact"}
    stored = next(line for line in export_lines(seeded) if line["kind"] == "resolution.recorded")
    lines = tmp_path / "events.jsonl"
    lines.write_bytes(event_line("resolution.recorded", {"observation_id": OBS, "resolution": resolution})
                      + event_line(stored["kind"], stored["payload"], stored["effective_at"])
                      + event_line("paper.snapshot", {"arxiv_id": "2601.00001", "snapshot_observed_at": "2026-01-01T00:00:00Z"}))
    result = import_files(seeded, [str(lines)])
    assert (result.appended, result.present, result.head[0]) == (2, 1, 42)
    assert verify_entries(seeded.entries())[0] == 42


def export_lines(store) -> list[dict]:
    return [json.loads(export_line(entry)) for entry in store.entries()]


def test_a_log_line_repeating_a_held_fact_under_another_seq_is_refused_naming_it(store, tmp_path):
    # A forged log that states one fact twice; the database's unique fact key refuses it, the importer names it.
    first = log_line(1, "2026-02-01T00:00:00.000000Z")
    again = {**first, "seq": 2}
    path = tmp_path / "forged.jsonl"
    path.write_bytes(rehashed_log([first, again]))
    with pytest.raises(InputError, match=r"forged.jsonl: line 2: paper.snapshot of 2601.00001 .*contradicts event "
                                         r"seq 1 \(a fact is held once; this line repeats it as seq 2\)"):
        import_files(store, [str(path)])
    assert store.head()[0] == 0
    path.write_bytes(rehashed_log([first]))
    import_files(store, [str(path)])
    path.write_bytes(rehashed_log([first, again]))  # seq 1 is held already: skipped; seq 2 repeats it
    with pytest.raises(InputError, match=r"line 2: .*contradicts event seq 1 \(a fact is held once"):
        import_files(store, [str(path)])
    assert store.head()[0] == 1


def test_the_cycle_collector_is_paused_while_importing_and_resumed_after(store, tmp_path):
    import gc

    seen = []  # whether the collector runs as each unit is decoded (one job reports each, stage "decoding")
    watch = lambda progress: progress.stage == "decoding" and seen.append(gc.isenabled())  # noqa: E731
    assert gc.isenabled()
    import_files(store, [SEED_004], watch)
    assert seen == [False] and gc.isenabled()
    record = seed_record()
    record["reference_resolution"]["displayed"] = 1
    with pytest.raises(InputError):
        import_files(store, [write_record(tmp_path / "inconsistent.json", redigest(record))], watch)
    assert seen == [False, False] and gc.isenabled()


@pytest.mark.parametrize("field", ["seq", "recorded_at", "effective_at", "entry_hash"])
def test_a_log_lines_bad_field_is_quoted_redacted_and_short(field):
    # A hostile log quotes back through quoted(): key text replaced, control characters escaped, 80 characters.
    from ledger.importing.decode import parse_entry

    line = {**log_line(1, "2026-02-01T00:00:00.000000Z"), "entry_hash": "blake3:" + "0" * 64, "chain_hash": "x"}
    line[field] = "\x1b[2J PRIVATE+KEY+evil+01234567+AXkH9Gv0fQ " + "a" * 500 if field != "effective_at" else [
        "\x1b[2J PRIVATE+KEY+evil+01234567+AXkH9Gv0fQ"] * 50
    with pytest.raises(InputError) as caught:
        parse_entry(line)
    said = str(caught.value)
    assert said.startswith(f"field {field}: ") and "<key text, not shown>" in said, said
    assert "evil" not in said and "\x1b" not in said and len(said) < 200, said
