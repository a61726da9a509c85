"""The page form: records built from the facts seeds 000 and 003 show render to exactly those pages."""

import pytest

from ledger.core.times import When
from ledger.importing.importer import import_files
from ledger.projections.record import build_record
from ledger.projections.text import render_text
from tests.conftest import SEED_000, SEED_003
from tests.helpers import event_line
from tests.page_facts import page_events


@pytest.mark.parametrize("seed", [SEED_000, SEED_003], ids=["seed_000", "seed_003"])
def test_a_record_built_from_a_page_renders_to_that_page(cli, seed, tmp_path):
    page = seed.read_text(encoding="utf-8")
    arxiv_id, as_of, lines = page_events(page)
    events = tmp_path / "page.jsonl"
    events.write_bytes(lines)
    assert cli("init").exit_code == 0
    imported = cli("import", str(events))
    assert imported.exit_code == 0, imported.stderr
    result = cli("replay", "--as-of", as_of, "--paper", arxiv_id, "--format", "text")
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == seed.read_bytes()


def test_notice_events_render_one_line_each_and_unknown_types_are_kept(store, tmp_path):
    arxiv_id, as_of, lines = page_events(SEED_003.read_text(encoding="utf-8"))
    oid = "cca14982-b4a1-4f08-983e-2a7c1e0bf6ca"
    notice = {"events": [{"date": "2026-08-18", "source": "crossref", "type": "correction"},
                         {"date": "2026-08-18", "source": "retraction_watch", "type": "expression_of_concern"},
                         {"date": "2026-08-19", "source": "crossref", "type": "erratum_v2"}],
              "observation": "3 events found in the named queried sources as of 2026-08-19T06:40:00Z.",
              "reason": None, "source_receipts": [{"observed_at": "2026-08-19T06:40:00Z", "source": "crossref"}],
              "state": "measured"}
    failed = {"events": [], "reason": "source_timeout", "source_receipts": [], "state": "check_failed"}
    events = tmp_path / "page.jsonl"
    events.write_bytes(lines + event_line("notice.checked", {"observation_id": oid, "standing_notice": notice})
                       + event_line("notice.checked", {"observation_id": "2b7404cb-0d72-4344-9513-d0b078a2de96",
                                                       "standing_notice": failed}, "2026-08-19T07:00:00Z"))
    import_files(store, [str(events)])
    record = build_record(arxiv_id, store.paper_facts(arxiv_id), When.at("2026-08-20T23:59:59.999999Z"))
    page = render_text(record)
    assert ("Correction, reported by crossref, dated 2026-08-18.\n"
            "Expression of concern, reported by retraction_watch, dated 2026-08-18.\n"
            "erratum_v2, reported by crossref, dated 2026-08-19.\n\n"
            "3 events found in the named queried sources as of 2026-08-19T06:40:00Z.") in page
    assert "Check failed: source timeout." in page
    shown = next(o for o in record["outbound"] if o["observation_id"] == oid)
    assert shown["standing_notice"]["events"][2]["type"] == "erratum_v2"
    lane = next(lane for lane in record["coverage"] if lane["lane"] == "standing_notices")
    # Three states stay apart: checked-nothing-found, check failed (not counted as observed), not checked.
    assert (lane["denominator"], lane["records_observed"]) == (33, 32)


def test_an_unknown_notice_state_is_refused(store, tmp_path):
    notice = {"events": [], "reason": None, "source_receipts": [], "state": "probably_fine"}
    path = tmp_path / "bad.jsonl"
    path.write_bytes(event_line("notice.checked", {"observation_id": "x", "standing_notice": notice}, "2026-08-19T07:00:00Z"))
    with pytest.raises(Exception, match="state: expected one of measured, unavailable, check_failed"):
        import_files(store, [str(path)])
