"""The change view is about papers, not UUIDs (issue 43): `diff` and `history` name each observation by its
other paper's id and title, the observation id and digests kept as a detail; a title from outside stays one
line; a date-only difference is "no change in content"; a state that reads the same says what changed."""

import json

import pytest

from ledger.model.parts import citation_label, in_quotes, other_paper
from tests.conftest import AS_OF_004, PAPER_004, SEED_004
from tests.helpers import citing_observation, event_line, seed_record

SEED = {o["citation"]["citing_paper"]["arxiv_id"]: o for o in seed_record()["inbound"]}
MEMORY, HYBRID, DESIGN = SEED["2502.08182"], SEED["2604.23467"], SEED["2607.05439"]
HOSTILE = 'Tabs\tand "quotes" \x1b[31mred'  # a citing title with a tab, quotes and a terminal escape
NEW = citing_observation(7, "2026-08-20T10:00:00Z")
NEW["citation"]["citing_paper"]["title"] = HOSTILE
REASON = "reference extracted in error"


def later_lines() -> bytes:
    """After seed 004: a new citing paper, a withdrawal, a resolution re-observed in the same state, and a
    notice checked again with the same payload."""
    return b"".join([
        event_line("citation.observed", {"citation": NEW["citation"], "observation_id": NEW["observation_id"]}),
        event_line("observation.withdrawn", {"observation_id": MEMORY["observation_id"],
                                             "observed_at": "2026-08-20T00:00:00Z", "reason": REASON}),
        event_line("resolution.recorded", {"observation_id": HYBRID["observation_id"],
                                           "resolution": dict(HYBRID["resolution"], observed_at="2026-08-21T00:00:00Z")}),
        event_line("notice.checked", {"observation_id": DESIGN["observation_id"],
                                      "standing_notice": DESIGN["standing_notice"]}, "2026-08-21T00:00:00Z"),
    ])


@pytest.fixture
def later(cli, tmp_path):
    (tmp_path / "later.jsonl").write_bytes(later_lines())
    assert cli("init").exit_code == 0
    assert cli("import", str(SEED_004), str(tmp_path / "later.jsonl")).exit_code == 0
    return cli


def replayed(cli, as_of: str) -> dict:
    result = cli("replay", "--paper", PAPER_004, "--as-of", as_of)
    assert (result.exit_code, result.stderr) == (0, "")
    return json.loads(result.stdout)


def test_a_title_from_outside_stays_one_line_and_shows_exactly():
    assert in_quotes(HOSTILE) == '"Tabs\\tand \\"quotes\\" \\x1b[31mred"'
    assert in_quotes("Line\u2028break é \\") == '"Line\\u2028break é \\\\"'


def test_the_other_paper_is_the_citing_one_inbound_and_the_cited_work_outbound():
    citation = MEMORY["citation"]
    assert other_paper(citation, "inbound") == ("arXiv:2502.08182", MEMORY["citation"]["citing_paper"]["title"])
    assert other_paper(citation, "outbound") == (
        "arXiv:2407.20018", "Efficient Training of Large Language Models on Distributed Infrastructures: A Survey")
    doi_only = {"citing_paper": {"arxiv_id": "2401.00001", "title": "T"}, "cited_paper": None,
                "cited_work": {"arxiv_id": None, "doi": "10.1/x", "title": None}}
    assert other_paper(doi_only, "outbound") == ("doi:10.1/x", None)
    assert citation_label(doi_only, "2401.00001") == "cites doi:10.1/x"
    assert citation_label(dict(doi_only, cited_work={}), "2401.00001") == "cites an unresolved cited work"
    assert citation_label(doi_only) == 'arXiv:2401.00001 "T" cites doi:10.1/x'


def test_diff_names_added_removed_and_changed_observations_by_their_citing_papers(later):
    before, after = replayed(later, AS_OF_004), replayed(later, "2026-08-22")
    digest = {o["observation_id"]: o["observation_digest"] for o in after["inbound"]}
    result = later("diff", PAPER_004, "--from", AS_OF_004, "--to", "2026-08-22")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.splitlines() == [
        f"arXiv:{PAPER_004} from {AS_OF_004} to 2026-08-22T23:59:59.999999Z",
        f"context_digest {before['context_digest']} → {after['context_digest']}",
        f'added: cited by arXiv:2608.00007 "Tabs\\tand \\"quotes\\" \\x1b[31mred" (observation {NEW["observation_id"]}, '
        f'{digest[NEW["observation_id"]]})',
        f'removed: cited by arXiv:2502.08182 "Memory Offloading for Large Language Model Inference with Latency SLO '
        f'Guarantees": withdrawn on 2026-08-20: {REASON} (observation {MEMORY["observation_id"]}, '
        f'{MEMORY["observation_digest"]})',
        'changed: cited by arXiv:2604.23467 "Hybrid JIT-CUDA Graph Optimization for Low-Latency Large Language Model '
        f'Inference": resolution: changed observed_at (observation {HYBRID["observation_id"]}, '
        f'{HYBRID["observation_digest"]} → {digest[HYBRID["observation_id"]]})',
        "coverage standing_notices: 12 of 12 (scholarly_work_events, retraction_status_cache, observed "
        "2026-08-09T06:31:02.800959+00:00) → 11 of 12 (scholarly_work_events, retraction_status_cache, observed "
        "2026-08-09T06:31:02.800959+00:00)",
        "coverage inbound_itemization: 12 of 12 (paper_references, paper_reference_links, observed "
        "2026-08-08T10:10:22.827490Z) → 12 of 12 (paper_references, paper_reference_links, observed "
        "2026-08-20T10:00:00Z)"]
    assert "\x1b" not in result.stdout and "\t" not in result.stdout


def test_diff_json_adds_the_other_paper_and_keeps_every_field(later):
    found = json.loads(later("diff", PAPER_004, "--from", AS_OF_004, "--to", "2026-08-22", "--json").stdout)
    [added], [removed], [changed] = found["added"], found["removed"], found["changed"]
    assert (added["other_id"], added["title"], added["direction"]) == ("arXiv:2608.00007", HOSTILE, "inbound")
    assert set(removed) == {"observation_id", "direction", "digest", "account", "other_id", "title"}
    assert (removed["other_id"], removed["title"]) == ("arXiv:2502.08182", MEMORY["citation"]["citing_paper"]["title"])
    assert set(changed) == {"observation_id", "direction", "parts", "details", "from_digest", "to_digest", "other_id",
                            "title"}
    assert found["content_changed"] is True


def test_a_date_only_difference_is_no_change_in_content(seeded, cli):
    days = replayed(cli, "2026-08-10"), replayed(cli, "2026-08-11")
    assert days[0]["context_digest"] != days[1]["context_digest"]  # the thesis names the day
    result = cli("diff", PAPER_004, "--from", "2026-08-10", "--to", "2026-08-11")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == (
        f"arXiv:{PAPER_004} from 2026-08-10T23:59:59.999999Z to 2026-08-11T23:59:59.999999Z\n"
        f"context_digest {days[0]['context_digest']} → {days[1]['context_digest']}\n"
        "no change in content (the context digest follows the date: it covers the thesis, which names the day)\n")
    found = json.loads(cli("diff", PAPER_004, "--from", "2026-08-10", "--to", "2026-08-11", "--json").stdout)
    assert (found["content_changed"], found["added"], found["coverage"], found["fields"]) == (False, [], [], [])
    same_day = cli("diff", PAPER_004, "--from", "2026-08-10T01:00:00Z", "--to", "2026-08-10T02:00:00Z")
    assert same_day.stdout.splitlines()[1:] == [
        f"context_digest {days[0]['context_digest']} → {days[0]['context_digest']}", "no change"]


def test_history_names_the_citation_and_what_changed_inside(later):
    result = later("history", PAPER_004)
    assert (result.exit_code, result.stderr) == (0, "")
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert all(len(row) == 5 for row in rows)  # a title's tab cannot add a column
    design = '"Design-CP: Context Parallelism for Design of Protein Nanoparticles"'
    assert [row[3:] for row in rows[-4:]] == [
        ["observation.withdrawn", 'cited by arXiv:2502.08182 "Memory Offloading for Large Language Model Inference '
                                  f'with Latency SLO Guarantees": withdrawn on 2026-08-20: {REASON}'],
        ["citation.observed", 'cited by arXiv:2608.00007 "Tabs\\tand \\"quotes\\" \\x1b[31mred": observation added '
                              "(reference 21, pdf_text)"],
        ["resolution.recorded", 'cited by arXiv:2604.23467 "Hybrid JIT-CUDA Graph Optimization for Low-Latency Large '
                                'Language Model Inference": resolution verified_exact (arxiv_id): changed observed_at'],
        ["notice.checked", f"cited by arXiv:2607.05439 {design}: standing notice unavailable "
                           "(canonical_work_link_unavailable): re-checked, unchanged"]]
    first = next(row for row in rows if row[3] == "resolution.recorded" and "2607.05439" in row[4])
    assert first[4] == f"cited by arXiv:2607.05439 {design}: resolution unresolved (first recorded)"


def test_history_json_adds_the_citation_to_each_row(later):
    rows = json.loads(later("history", PAPER_004, "--json").stdout)
    assert all(set(row) == {"seq", "kind", "subject", "effective_at", "recorded_at", "account", "citation"}
               for row in rows)
    assert {row["citation"] for row in rows if row["kind"] == "paper.snapshot"} == {None}
    notice = rows[-1]
    assert notice["citation"] == ('cited by arXiv:2607.05439 "Design-CP: Context Parallelism for Design of Protein '
                                  'Nanoparticles"')
    assert notice["account"] == notice["citation"] + (": standing notice unavailable (canonical_work_link_unavailable): "
                                                      "re-checked, unchanged")
    # An observation's own history names both papers: no paper to see it from.
    own = json.loads(later("history", DESIGN["observation_id"], "--json").stdout)
    assert {row["citation"] for row in own} == {
        'arXiv:2607.05439 "Design-CP: Context Parallelism for Design of Protein Nanoparticles" cites arXiv:2407.20018 '
        '"Efficient Training of Large Language Models on Distributed Infrastructures: A Survey"'}


def test_history_rows_stay_one_line_of_five_columns_whatever_a_title_or_reason_holds(cli, tmp_path):
    # A paper snapshot's title and a withdrawal's reason are printed as they were written, but escaped.
    snapshot = json.loads(SEED_004.read_bytes())["paper"]
    lines = [event_line("paper.snapshot", dict(snapshot, arxiv_id="2608.00001", title="A\ttitle\nwith a break")),
             event_line("observation.withdrawn", {"observation_id": MEMORY["observation_id"],
                                                  "observed_at": "2026-08-20T00:00:00Z", "reason": "bad\tcut\x1b[2J"})]
    (tmp_path / "odd.jsonl").write_bytes(b"".join(lines))
    assert cli("init").exit_code == 0
    assert cli("import", str(SEED_004), str(tmp_path / "odd.jsonl")).exit_code == 0
    for paper, account in (("2608.00001", "paper snapshot v1: A\\ttitle\\nwith a break"),
                           (PAPER_004, "withdrawn on 2026-08-20: bad\\tcut\\x1b[2J")):
        result = cli("history", paper)
        assert (result.exit_code, result.stderr) == (0, "")
        rows = [line.split("\t") for line in result.stdout.splitlines()]
        assert [len(row) for row in rows] == [5] * len(rows) and "\x1b" not in result.stdout
        assert [row[4] for row in rows if row[4].endswith(account)] != []
