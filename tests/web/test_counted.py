"""Counted words agree with their counts: a ledger of one paper and one event shows no "1 papers" on any page
and in no CLI answer, and no template spells a plural by hand instead of the one `counted` filter."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi.testclient import TestClient

from ledger.importing.importer import import_files
from tests.helpers import event_line
from tests.web.test_paths import visible

ONE_PAPER = "2601.00007"
SLIP = re.compile(r"\b1 (papers|events|citations|observations|witnesses|days|records|entries|notes|hashes)\b")
TEMPLATES = Path(__file__).parent.parent.parent / "web" / "templates"


def test_no_template_prints_a_count_before_a_plural_noun_or_makes_its_own_plural():
    for template in sorted(TEMPLATES.glob("*.html")):
        text = template.read_text()
        assert not re.findall(r"\}\}\s*(?:papers|events|citations|observations|witnesses|days|records)\b", text), template
        assert '"s" if' not in text, template


def test_a_ledger_of_one_paper_and_one_event_says_so_in_the_singular(store, signer, tmp_path, cli):
    from ledger.web.app import create_app

    lines = tmp_path / "one.jsonl"
    lines.write_bytes(event_line("paper.snapshot", {"arxiv_id": ONE_PAPER, "latest_version": 1, "title": "One",
                                                    "snapshot_observed_at": "2026-09-01T00:00:00Z"}))
    import_files(store, [str(lines)])
    client = TestClient(create_app(store, signer))
    texts = {}
    for path in ("/", f"/paper/{ONE_PAPER}", f"/paper/{ONE_PAPER}/integrity"):
        response = client.get(path)
        assert response.status_code == 200, path
        texts[path] = visible(response.content)
        assert not SLIP.search(texts[path]), (path, SLIP.search(texts[path]))
    assert "The 1 paper whose events came last into the log" in texts["/"]
    assert "this paper's 1 event," in texts[f"/paper/{ONE_PAPER}"]
    verified = cli("verify")
    assert (verified.exit_code, verified.stderr) == (0, "")
    assert verified.stdout.startswith("ok: 1 event, every entry hash and chain link re-computes")
    assert not SLIP.search(verified.stdout)
