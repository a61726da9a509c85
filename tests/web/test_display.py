"""The one display function (`web.views.shown`), applied by construction: Jinja's `finalize` passes what every
`{{ ... }}` of every template prints through it, so a title's bidi controls, C0/C1 controls and zero-width
characters show as their code point (`⟨U+202E⟩`) on every page kind, served or published, and check.js shows
them alike. (tests/web/test_browser.py reads the same pages in Chromium.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from markupsafe import Markup

from ledger.core.times import when
from ledger.importing.importer import import_files
from ledger.web.app import create_app
from ledger.web.views import HIDDEN, finalize, shown
from tests.helpers import event_line

PAPER = "2601.00002"
# Every kind of character HIDDEN names, and markup: nothing here may reach a page as it is.
TITLE = ("Safe \u202eevil\u202c, a bell\x07, an escape\x1b[31m, an isolate \u2066x\u2069, a joiner a\u200db, a "
         "space\u200b, a BOM\ufeff, a C1\x9b <script>window.__pwned = 9</script> end")
SHOWN = ("Safe ⟨U+202E⟩evil⟨U+202C⟩, a bell⟨U+0007⟩, an escape⟨U+001B⟩[31m, an isolate ⟨U+2066⟩x⟨U+2069⟩, "
         "a joiner a⟨U+200D⟩b, a space⟨U+200B⟩, a BOM⟨U+FEFF⟩, a C1⟨U+009B⟩ "
         "<script>window.__pwned = 9</script> end")
# Each page kind; those that show the paper's title say so.
PAGES = {"/": True, "/papers/2601": True, f"/paper/{PAPER}": True, f"/paper/{PAPER}/citation-record": True,
         f"/paper/{PAPER}/as-of/2026-09-01/citation-record": True, f"/paper/{PAPER}/as-of/2026-09-01/changes": False,
         f"/paper/{PAPER}/diff?from=2026-08-01&to=2026-09-02": False, f"/paper/{PAPER}/integrity": False,
         "/evidence": False, "/404.html": False}


def hostile_lines() -> bytes:
    me = {"arxiv_id": PAPER, "snapshot_observed_at": "2026-09-01T00:00:00Z", "title": TITLE}
    return event_line("paper.snapshot", {**me, "latest_version": 1}) + event_line("citation.observed", {
        "observation_id": "hostile-out-1", "citation": {
            "cited_paper": None, "cited_work": {"title": TITLE}, "citing_paper": me, "reference_index": 1,
            "source": "pdf_text\u202e", "source_observed_at": "2026-09-01T00:00:00Z"}})


@pytest.fixture
def hostile(store, tmp_path):
    lines = tmp_path / "hostile.jsonl"
    lines.write_bytes(hostile_lines())
    import_files(store, [str(lines)])
    return store


def visible(html: str) -> str:
    """The text a reader sees (tags dropped), entities decoded enough for the comparison."""
    return re.sub(r"<[^>]*>", "", html).replace("&lt;", "<").replace("&gt;", ">").replace("&#34;", '"')


def test_shown_names_each_hidden_character_once_and_is_idempotent():
    assert shown(TITLE) == SHOWN
    assert shown(SHOWN) == SHOWN
    assert not HIDDEN.search(SHOWN)
    assert shown("Tab\tand\nline ends, é, 日本, 😀 stay") == "Tab\tand\nline ends, é, 日本, 😀 stay"


def test_finalize_shows_plain_text_and_markup_alike_and_keeps_markup_markup():
    assert finalize(TITLE) == SHOWN and not isinstance(finalize(TITLE), Markup)
    kept = finalize(Markup("<b>\u202e</b>"))
    assert isinstance(kept, Markup) and kept == Markup("<b>⟨U+202E⟩</b>")
    assert finalize(3) == "3" and finalize(None) == "None"  # as Jinja prints them


@pytest.mark.parametrize("path", PAGES)
def test_every_page_kind_served_shows_the_code_points_never_the_characters(hostile, path):
    client = TestClient(create_app(hostile))
    response = client.get(path, headers={"accept": "text/html"})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    assert HIDDEN.findall(response.text) == []
    assert "<script>window" not in response.text  # the title's markup is escaped, as text
    if PAGES[path]:
        assert SHOWN in visible(response.text)


def test_an_error_page_shows_a_hostile_path_as_code_points(hostile):
    client = TestClient(create_app(hostile))
    response = client.get("/nothing%E2%80%AE%07here", headers={"accept": "text/html"})
    assert response.status_code == 404 and HIDDEN.findall(response.text) == []
    assert "no such path: /nothing⟨U+202E⟩⟨U+0007⟩here" in response.text


def test_every_published_page_shows_the_code_points_never_the_characters(hostile, tmp_path):
    from ledger.web.publish import publish

    out = tmp_path / "site"
    publish(hostile, out, when("--as-of", "2026-09-02"))
    pages = sorted(out.rglob("*.html"))
    assert len(pages) >= 6
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert HIDDEN.findall(text) == [], page
    assert SHOWN in visible((out / "paper" / PAPER / "index.html").read_text(encoding="utf-8"))


def test_check_js_hides_exactly_what_shown_hides():
    script = (Path(__file__).parents[2] / "web" / "assets" / "check.js").read_text(encoding="utf-8")
    js = re.compile(re.search(r"var HIDDEN = /(\[[^\]]+\])/g;", script)[1])  # JS's \xNN and \uNNNN read alike here
    differ = [hex(c) for c in range(0x10000) if bool(js.fullmatch(chr(c))) != bool(HIDDEN.fullmatch(chr(c)))]
    assert differ == []
