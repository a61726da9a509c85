"""The paper page and the record page as a reader meets them (issue 43): a day before the paper's first record
links to nothing, the history table fits a desk and wraps on a phone, the snapshot speaks in words, the first
screen of a record shows who cites the paper, and the integrity page's recipe runs as printed. The browser tests
drive a real `ledger serve` (test_browser's fixtures) and keep a picture of each point at 1280 and 390 px."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from html.parser import HTMLParser

import orjson
import pytest

from ledger.log.signed_notes import generate_signer
from tests.conftest import PAPER_004, Cli
from tests.web.conftest import LATER
from tests.web.test_browser import ARTIFACTS, AXE, CHROMIUM, DESK, PHONE, browser, server, watched  # noqa: F401 (fixtures)

browsed = pytest.mark.skipif(not os.path.exists(CHROMIUM) and not os.environ.get("CI"),
                             reason="needs Debian's chromium (.ci/run installs it)")
PAPER_PAGE = f"/paper/{PAPER_004}?as_of={LATER}"
RECORD_PAGE = f"/paper/{PAPER_004}/citation-record?as_of={LATER}"


def picture(w, name: str, size: str, full_page: bool = True) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / f"{name}-{size}.png"
    w.page.screenshot(path=str(shot), full_page=full_page)
    assert shot.stat().st_size > 5_000


# -- 1. the days before the paper's first record -----------------------------------------------------------
def test_a_day_before_the_first_record_says_so_and_links_nowhere(client, rich):
    """Each listed day links to the record `replay --as-of <day>` gives, byte for byte, or, where replay finds
    no record, says "no record yet" with no link at all."""
    store, _ = rich
    html = client.get(PAPER_PAGE).text
    days = re.findall(r"<li(?: class=\"no-record\")?>(?:<a href=\"([^\"]+)\">)?As of the end of (\d{4}-\d\d-\d\d)(.*?)</li>",
                      html[html.index('<ul class="days">'):])
    missing = []
    for link, day, rest in days:
        replayed = Cli.of(store)("replay", "--paper", PAPER_004, "--as-of", day)
        if replayed.exit_code == 1:
            missing.append(day)
            assert link == "" and "<a " not in rest and rest.startswith(": no record yet, the first is as of 2026-07-06 ("), day
        else:
            assert replayed.exit_code == 0, replayed.stderr
            shown = client.get(re.search(r'\(<a href="([^"]+)">JSON</a>', rest).group(1).replace("&amp;", "&"))
            assert shown.content == replayed.stdout_bytes.rstrip(b"\n"), day
            assert client.get(link.replace("&amp;", "&")).status_code == 200
    assert missing == ["2026-05-11", "2026-05-10"] and len(days) > len(missing) + 2


# -- 3. the snapshot in words --------------------------------------------------------------------------------
class Visible(HTMLParser):
    """A page's text outside <code>, <pre>, <script>, <style> and <title>, and its labels: what dt, th and
    section headings say, and the labels a stacked table shows before each cell (`data-label`)."""

    HIDDEN, LABELS = {"code", "pre", "script", "style", "title"}, {"dt", "th", "h2"}  # h1, h3: titles, data
    EMPTY = {"br", "col", "img", "input", "link", "meta", "wbr"}

    def __init__(self):
        super().__init__()
        self.open, self.text, self.labels = [], [], []

    def handle_starttag(self, tag, attrs):
        self.labels += [value for name, value in attrs if name == "data-label"]
        if tag not in self.EMPTY:
            self.open.append(tag)

    def handle_endtag(self, tag):
        while self.open and self.open.pop() != tag:
            pass

    def handle_data(self, data):
        if not self.HIDDEN & set(self.open):
            self.text.append(data)
            if self.LABELS & set(self.open):
                self.labels.append(data)


def keys_and_words(value, keys: set, words: set) -> None:
    """Every key of the JSON `value` into `keys`; every snake_case word its strings hold (data, such as a
    resolver source named `arxiv_id`) into `words`."""
    if isinstance(value, dict):
        keys.update(value)
        for item in value.values():
            keys_and_words(item, keys, words)
    elif isinstance(value, list):
        for item in value:
            keys_and_words(item, keys, words)
    elif isinstance(value, str):
        words.update(SNAKE.findall(value))


SNAKE = re.compile(r"\b[a-z0-9]+(?:_[a-z0-9]+)+\b")


def test_the_pages_label_in_words_and_show_no_field_name(client, rich):
    """No label on the paper or record pages is a snake_case name, and no field name of the JSON the page shows
    (the record's, the history's) is in its text outside <code>, unless the data itself says that word."""
    _, dates = rich
    for paper, as_of in [(PAPER_004, LATER)] + [(p, d[-1]) for p, d in dates.items() if p != PAPER_004]:
        keys, words = set(), set()
        for json_path in (f"/paper/{paper}/citation-record.json", f"/paper/{paper}/history.json"):
            keys_and_words(orjson.loads(client.get(json_path, params={"as_of": as_of}).content), keys, words)
        fields = {key for key in keys if "_" in key} - words
        if paper == PAPER_004:
            assert {"latest_version", "snapshot_observed_at", "context_digest", "effective_at"} <= fields
        for path in (f"/paper/{paper}", f"/paper/{paper}/citation-record"):
            page = Visible()
            page.feed(client.get(path, params={"as_of": as_of}).text)
            assert [label for label in page.labels if SNAKE.search(label)] == [], path
            assert sorted(fields & set(SNAKE.findall(" ".join(page.text)))) == [], path
    snapshot = Visible()
    snapshot.feed(client.get(PAPER_PAGE).text)
    assert {"Snapshot observed", "Latest version", "arXiv id", "Submitted"} <= set(snapshot.labels)


# -- 2, 1 and 3 in a browser: the history table at a desk and on a phone -----------------------------------
@browsed
def test_the_history_table_fits_a_desk_and_wraps_on_a_phone(watched, server):
    for size, viewport in (("1280", DESK), ("390", PHONE)):
        w = watched(viewport=viewport)
        w.page.goto(server + PAPER_PAGE)
        width, client_width = w.page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert width <= client_width == viewport["width"], size
        edges = w.page.eval_on_selector_all(
            "table.history td:last-child", "cells => cells.map(c => [c.getBoundingClientRect().left, "
            "c.getBoundingClientRect().right, c.scrollWidth <= c.clientWidth])")
        end = w.page.evaluate("document.querySelector('main').getBoundingClientRect().right")  # inside the page's column
        assert len(edges) == 20 and all(0 <= left < right <= end <= client_width and inside for left, right, inside in edges), size
        table = w.page.eval_on_selector("table.history", "t => [t.getBoundingClientRect().right, t.parentElement.getBoundingClientRect().right]")
        assert table[0] <= table[1], size  # the table ends where its section does: nothing cut off
        before = w.page.locator("ul.days li.no-record")
        assert before.all_inner_texts() == [f"As of the end of {d}: no record yet, the first is as of 2026-07-06 ({s})"
                                            for d, s in (("2026-05-11", "1 measurements.checked, 2 resolution.recorded"),
                                                         ("2026-05-10", "1 resolution.recorded"))]
        assert before.locator("a").count() == 0
        labels = w.page.locator("dl.snapshot dt").all_inner_texts()
        assert "Snapshot observed" in labels and not [label for label in labels if "_" in label]
        picture(w, "paper-history", size)
        assert w.errors == []


# -- 4. the first screen of a record ---------------------------------------------------------------------
@browsed
def test_a_record_opens_on_who_cites_the_paper_and_still_checks_itself(watched, server):
    for size, viewport in (("1280", {"width": 1280, "height": 2000}), ("390", PHONE)):
        w = watched(viewport=viewport)
        w.page.goto(server + RECORD_PAGE)
        assert w.verdict() == "pass", w.page.text_content("#check-summary")
        top = w.page.evaluate("""() => Object.fromEntries(['#inbound-title', '#inbound-1', '#digests-title',
            '#coverage-title', '#check-summary'].map(s => [s, document.querySelector(s).getBoundingClientRect().top]))""")
        assert top["#inbound-title"] < top["#inbound-1"] < top["#digests-title"] < top["#coverage-title"], size
        assert top["#check-summary"] < top["#inbound-title"], size  # the page's own check is said up front
        if size == "1280":
            assert top["#inbound-1"] + 100 < viewport["height"]  # the first citing paper's card, on the first screen
        assert len(w.states()) == 12 and set(w.states().values()) == {"pass"}
        picture(w, "record-first-screen", size, full_page=False)
        assert w.errors == []


# -- 5. the integrity page's recipe, as printed ---------------------------------------------------------------
@browsed
def test_the_integrity_recipe_runs_as_a_reader_copies_it(watched, server, tmp_path):
    """The recipe as the served page shows it (its URL made absolute by the page) runs in a shell with the
    reader's `ledger` and no key file; with another log's key in its place it fails."""
    shim = tmp_path / "bin" / "ledger"  # the reader's installed `ledger`
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ledger.cli "$@"\n')
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "LEDGER_DB"} | {"PATH": f"{shim.parent}:{os.environ['PATH']}"}
    w = watched(viewport=PHONE)
    for size, viewport in (("1280", DESK), ("390", PHONE)):
        w.page.set_viewport_size(viewport)
        w.page.goto(server + f"/paper/{PAPER_004}/integrity")
        w.page.wait_for_selector("#verdict[data-check]", timeout=30_000)
        recipe = w.page.inner_text("pre code")
        picture(w, "integrity-recipe", size)
    assert "ledger.vkey" not in recipe and recipe.startswith(f"curl -s '{server}/paper/{PAPER_004}/integrity.json?as_of=")
    ran = subprocess.run(["bash", "-euo", "pipefail", "-c", recipe], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120)
    assert (ran.returncode, ran.stderr) == (0, ""), ran.stderr
    assert ran.stdout.startswith("bundle.json: ok: ") and f"the record of arXiv:{PAPER_004} as of " in ran.stdout
    key = re.search(r"--verifier-key (\S+)$", recipe).group(1)
    other = str(generate_signer(key.split("+")[0]).verifier)
    forged = subprocess.run(["bash", "-euo", "pipefail", "-c", recipe.replace(key, other)], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert forged.returncode == 1 and forged.stdout == "" and len(forged.stderr.splitlines()) == 1


# -- 6. axe on the pages of this issue, at a desk and on a phone ----------------------------------------------
@browsed
@pytest.mark.skipif(not AXE.is_file() and not os.environ.get("CI"), reason="needs axe-core from npm (.ci/run installs it)")
def test_axe_finds_no_serious_violation_on_the_paper_and_record_pages(watched, server):
    found = {}
    for size, viewport in (("1280", DESK), ("390", PHONE)):
        w = watched(viewport=viewport, bypass_csp=True)  # only so that the test can load axe into the page
        for path in (PAPER_PAGE, RECORD_PAGE, f"/paper/{PAPER_004}/as-of/2026-07-06/citation-record"):
            w.page.goto(server + path)
            if w.page.locator("#check-summary").count():
                assert w.verdict() == "pass", path
            w.page.add_script_tag(path=str(AXE))
            violations = w.page.evaluate("""async () => (await axe.run(document, {resultTypes: ["violations"]}))
                .violations.map(v => [v.id, v.impact, v.nodes.length])""")
            found[(path, size)] = [v for v in violations if v[1] in ("serious", "critical")]
    assert found and all(bad == [] for bad in found.values()), found
