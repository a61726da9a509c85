"""Differences shown where they differ: two long values cut to the part that differs, a little context on each
side, never two sides that read the same; `diff` naming what changed inside a part or field that reads the
same before and after (issue 28)."""

import copy
import json

import pytest
from freezegun import freeze_time
from hypothesis import given
from hypothesis import strategies as st

from ledger.core.errors import InputError
from ledger.importing.importer import import_files
from ledger.projections.compare import first_difference, shown_apart
from ledger.projections.history import diff
from tests.conftest import AS_OF_004, PAPER_004, SEED_004
from tests.helpers import event_line, redigest, seed_record, write_record

TITLE = "Software Engineering for Large Language Models: Research Status, Challenges and the Road Ahead"
CITING = "ef5a41be-ff07-4dd8-bc1b-df9f3f17e670"  # inbound; its citing paper has TITLE
QUIET = "48726fde-754e-426c-a80f-d1b89877c04d"  # inbound; measured, no event, by crossref and retraction_watch
QUIET_DIGEST = "sha256:7a1082ed6bed92558de8cc32ddf0362787ce796da096599bf8df281986029db1"  # in seed 004
HYBRID = "Hybrid JIT-CUDA Graph Optimization for Low-Latency Large Language Model Inference"  # QUIET's citing paper
SWEPT = "2026-08-22T06:00:00Z"
RECEIPTS = [{"observed_at": SWEPT, "source": "crossref"},
            {"observed_at": "2026-08-09T06:30:57.326959+00:00", "source": "retraction_watch"}]


def test_a_final_full_stop_is_shown_at_the_end_of_a_long_title():
    assert first_difference({"title": TITLE}, {"title": TITLE + "."}) == \
        'title: ledger has "…s and the Road Ahead", record has "…s and the Road Ahead."'


def test_a_change_inside_a_long_string_is_shown_with_context_on_both_sides_alike():
    found = TITLE.replace("Research Status", "Research State")
    assert first_difference({"title": TITLE}, {"title": found}) == (
        'title: ledger has "…odels: Research Status, Challenges and the…", '
        'record has "…odels: Research State, Challenges and the…"')


def test_whitespace_stays_visible_in_quotes():
    assert first_difference(TITLE, TITLE.replace("Research ", "Research\t"), "title") == (
        'title: ledger has "…age Models: Research Status, Challenges a…", '
        'record has "…age Models: Research\\tStatus, Challenges a…"')


def test_short_values_are_shown_whole():
    assert first_difference({"a": "2026-08-08T12:00:00Z"}, {"a": "2026-08-08T10:10:22.827490Z"}) == \
        'a: ledger has "2026-08-08T12:00:00Z", record has "2026-08-08T10:10:22.827490Z"'
    assert first_difference({"a": 2}, {"a": True}) == "a: ledger has 2, record has true"
    assert first_difference("x", "y") == 'record: ledger has "x", record has "y"'


def test_a_long_differing_part_is_cut_after_forty_characters():
    assert shown_apart("a" * 100, "b" * 100) == ('"' + "a" * 40 + '…"', '"' + "b" * 40 + '…"')


def test_other_long_values_are_cut_in_their_json_form():
    assert shown_apart(list(range(30)), list(range(29)) + [300]) == (
        "…2,23,24,25,26,27,28,29]", "…2,23,24,25,26,27,28,300]")


def test_an_import_refusal_shows_where_the_thesis_differs(store, tmp_path):
    record = seed_record()
    record["thesis"] = record["thesis"].replace("12 inbound", "13 inbound")
    path = write_record(tmp_path / "other.json", redigest(record))
    with pytest.raises(InputError) as refused:
        import_files(store, [path])
    assert str(refused.value) == (
        f"{path}: the ledger cannot reproduce this record at its as_of {record['as_of']}: first difference at "
        'thesis: ledger has "…und references and 12 inbound Pith citati…", '
        'record has "…und references and 13 inbound Pith citati…"')


_TEXT = st.text(alphabet="ab .…\"\\\n\té", max_size=90)


@given(_TEXT, _TEXT, _TEXT, _TEXT)
def test_two_distinct_strings_are_never_shown_alike(prefix, a, b, suffix):
    ours, theirs = prefix + a + suffix, prefix + b + suffix
    if ours != theirs:
        shown = shown_apart(ours, theirs)
        assert shown[0] != shown[1]
        assert first_difference(ours, theirs) == f"record: ledger has {shown[0]}, record has {shown[1]}"


@given(st.lists(_TEXT, max_size=4), st.lists(_TEXT, max_size=4))
def test_two_distinct_json_values_are_never_shown_alike(ours, theirs):
    if ours != theirs:
        shown = shown_apart(ours, theirs)
        assert shown[0] != shown[1]


def _quiet_later(record: dict) -> dict:
    """The seed record, one sweep later: QUIET's crossref receipt moved, nothing else it reads as changed."""
    later = copy.deepcopy(record)
    target = next(o for o in later["inbound"] if o["observation_id"] == QUIET)
    target["standing_notice"]["source_receipts"] = RECEIPTS
    later["paper"].update(latest_version=2, snapshot_observed_at="2026-08-20T00:00:00Z")
    return redigest(later)


def test_a_notice_that_reads_the_same_names_the_receipts_that_moved():
    before = seed_record()
    found = diff(before, _quiet_later(before))
    [changed] = found["changed"]
    assert (changed["observation_id"], changed["parts"]) == (QUIET, ["standing_notice"])
    assert changed["details"] == [f"standing_notice: receipts crossref 2026-08-09T06:31:02.800959+00:00 → {SWEPT}"]
    assert found["fields"] == ["paper"]
    assert found["field_details"] == [
        'paper: latest_version 1 → 2; snapshot_observed_at "2026-07-06T18:53:22.585501Z" → "2026-08-20T00:00:00Z"']


def test_a_notice_that_reads_differently_is_told_as_before():
    before = seed_record()
    after = copy.deepcopy(before)
    target = next(o for o in after["inbound"] if o["observation_id"] == QUIET)
    target["standing_notice"].update(source_receipts=RECEIPTS[:1], observation="checked again")
    [changed] = diff(before, redigest(after))["changed"]
    assert changed["details"] == ["standing_notice: measured: no event (crossref, retraction_watch) → "
                                  "measured: no event (crossref)"]


def test_other_parts_and_fields_name_what_changed_inside_them():
    before = seed_record()
    after = copy.deepcopy(before)
    target = next(o for o in after["inbound"] if o["observation_id"] == CITING)
    target["citation"]["citing_paper"]["title"] += "."
    target["resolution"]["observed_at"] = "2026-08-20T00:00:00Z"
    after["paper"]["title"] += "."
    after["standing_sources"][1]["observed_at"] = SWEPT
    found = diff(before, redigest(after))
    [changed] = found["changed"]
    assert changed["details"] == ["citation: changed citing_paper", "resolution: changed observed_at"]
    assert found["field_details"] == [
        'paper: title "…structures: A Survey" → "…structures: A Survey."',
        f"standing_sources: retraction_watch 2026-08-09T06:30:57.326959+00:00 → {SWEPT}"]


def test_the_diff_command_prints_what_changed_inside(cli, tmp_path):
    record = seed_record()
    sweep = dict(next(o for o in record["inbound"] if o["observation_id"] == QUIET)["standing_notice"],
                 source_receipts=RECEIPTS)
    paper = dict(record["paper"], latest_version=2, snapshot_observed_at="2026-08-20T00:00:00Z")
    (tmp_path / "later.jsonl").write_bytes(
        event_line("paper.snapshot", paper, "2026-08-20T00:00:00Z")
        + event_line("notice.checked", {"observation_id": QUIET, "standing_notice": sweep}, SWEPT))
    assert cli("init").exit_code == 0
    assert cli("import", str(SEED_004), str(tmp_path / "later.jsonl")).exit_code == 0
    result = cli("diff", PAPER_004, "--from", AS_OF_004, "--to", "2026-08-23")
    assert (result.exit_code, result.stderr) == (0, "")
    lines = result.stdout.splitlines()
    assert lines[2] == (f'changed: cited by arXiv:2604.23467 "{HYBRID}": standing_notice: receipts crossref '
                        f"2026-08-09T06:31:02.800959+00:00 → {SWEPT} (observation {QUIET}, {QUIET_DIGEST} → "
                        "sha256:c63e00107363c54fe93404c4d5629ae2d91a3b0263668ff48d637fc20df24faa)")
    assert lines[3:] == [
        'paper: latest_version 1 → 2; snapshot_observed_at "2026-07-06T18:53:22.585501Z" → "2026-08-20T00:00:00Z"']
    found = json.loads(cli("diff", PAPER_004, "--from", AS_OF_004, "--to", "2026-08-23", "--json").stdout)
    assert (found["fields"], found["field_details"]) == (["paper"], lines[3:])


def test_verify_shows_the_full_stop_a_citing_title_gained(cli, tmp_path):
    record = seed_record()
    target = next(o for o in record["inbound"] if o["observation_id"] == CITING)
    assert target["citation"]["citing_paper"]["title"] == TITLE
    target["citation"]["citing_paper"]["title"] = TITLE + "."
    path = write_record(tmp_path / "dotted.json", redigest(record))
    assert cli("init").exit_code == 0
    with freeze_time("2026-08-10T00:00:00Z"):
        assert cli("import", str(SEED_004)).exit_code == 0
    result = cli("verify", path)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.splitlines()[0] == (
        f"ledger: {path}: history: observation {CITING} (inbound): differs from the ledger's history at "
        'citation.citing_paper.title: ledger has "…s and the Road Ahead", record has "…s and the Road Ahead."')
