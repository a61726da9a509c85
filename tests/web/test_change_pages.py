"""The change pages and /diff.json name each observation by its other paper (escaped: a title is data from
outside), keep the observation id and digests as a detail, show coverage counts before → after with the
words `ledger diff` uses, and say when only the date moved (issue 43)."""

from tests.conftest import PAPER_004, Cli
from tests.helpers import seed_record
from tests.web.conftest import SCRIPT_PAPER
from tests.web.test_paths import visible

FIRST = seed_record()["inbound"][0]  # cited by arXiv:2502.08182; its resolution changes on 20 August
MEMORY = "Memory Offloading for Large Language Model Inference with Latency SLO Guarantees"


def test_a_change_page_names_the_citing_paper_and_keeps_the_observation_as_a_detail(client):
    span = {"from": "2026-08-09", "to": "2026-08-20"}
    found = client.get(f"/paper/{PAPER_004}/diff.json", params=span).json()
    [changed] = found["changed"]
    assert (changed["other_id"], changed["title"], changed["observation_id"]) == (
        "arXiv:2502.08182", MEMORY, FIRST["observation_id"])
    html = client.get(f"/paper/{PAPER_004}/diff", params=span).text
    assert (f"<li>Cited by <cite>{MEMORY}</cite> (arXiv:2502.08182): resolution: unresolved → verified_fuzzy "
            f"(local_arxiv)<br><small>observation <code>{FIRST['observation_id']}</code>, digest "
            f'<code class="digest">{FIRST["observation_digest"]}</code> → '
            f'<code class="digest">{changed["to_digest"]}</code></small></li>') in html
    # The space between the two records' sentences (it was `…43f6d)to the record`).
    assert (f"(context digest {found['from']['context_digest']}) to the record as of 2026-08-20T23:59:59.999999Z "
            f"(context digest {found['to']['context_digest']})") in visible(html.encode())


def test_a_change_page_shows_coverage_counts_before_and_after_as_the_cli_does(client, rich):
    store, _ = rich
    span = ("2026-08-01", "2026-09-02")
    cli = Cli.of(store)("diff", SCRIPT_PAPER, "--from", span[0], "--to", span[1])
    assert cli.exit_code == 0
    coverage = [line[len("coverage "):] for line in cli.stdout.splitlines() if line.startswith("coverage ")]
    assert "inbound_itemization: none → 0 of 0 (paper_references, paper_reference_links)" in coverage
    html = client.get(f"/paper/{SCRIPT_PAPER}/diff", params={"from": span[0], "to": span[1]}).text
    section = html[html.index('<h2 id="coverage-title">'):]
    assert [f"<li>{line}</li>" in section for line in coverage] == [True] * len(coverage) and len(coverage) == 4


def test_a_title_with_markup_is_escaped_on_the_change_page(client):
    html = client.get(f"/paper/{SCRIPT_PAPER}/diff", params={"from": "2026-08-01", "to": "2026-09-02"}).text
    assert "<li>Cites <cite>&lt;/li&gt;&lt;script&gt;window.__pwned = 3&lt;/script&gt;</cite><br><small>" in html
    assert "<script>window" not in html


def test_a_date_only_difference_says_no_change_in_content(client):
    span = {"from": "2026-08-10", "to": "2026-08-11"}
    found = client.get(f"/paper/{PAPER_004}/diff.json", params=span).json()
    assert found["content_changed"] is False and found["from"]["context_digest"] != found["to"]["context_digest"]
    text = visible(client.get(f"/paper/{PAPER_004}/diff", params=span).content)
    assert ("No change in content: only the date moved. The context digest follows the date, because it covers the "
            "thesis, which names the day.") in text
    assert "Nothing the record shows changed." not in text
    assert client.get(f"/paper/{PAPER_004}/diff.json", params={"from": "2026-08-09", "to": "2026-08-20"}
                      ).json()["content_changed"] is True


def test_the_evidence_page_says_what_the_context_digest_covers(client):
    text = visible(client.get("/evidence").content)
    assert ("(record without context_digest and as_of)): it still covers the thesis, which names the day, so only "
            "same-day rebuilds of equal content share it.") in text
