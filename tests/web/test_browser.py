"""A real `ledger serve` process on loopback (two workers), driven by Playwright in Debian's Chromium: the
page's own script re-computes every digest in the browser, catches one changed byte, and encodes JSON
exactly as orjson does; markup from a record never runs; the page reads without JavaScript."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.importing.importer import import_files
from ledger.log.cosignature import generate_cosigner
from ledger.log.signed_notes import generate_signer
from ledger.services.proofs import checkpoint
from ledger.storage.cosigned_checkpoint import keep_cosigned
from ledger.storage.store import Store
from tests.conftest import AS_OF_004, PAPER_004
from tests.helpers import event_line, stop_process
from tests.web.conftest import SCRIPT_PAPER, SCRIPT_TITLE, fill

CHROMIUM = "/usr/bin/chromium"
WITNESS = generate_cosigner("witness.example/w1")  # cosigns the served log's checkpoint (the `server` fixture)
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
RECORD = f"/paper/{PAPER_004}/citation-record?as_of={AS_OF_004}"
BIDI_PAPER = "2601.00002"
BIDI_TITLE = ("Safe title \u202eevil\u202c and a bell\x07, an escape\x1b[31m, an isolate \u2066x\u2069, a joiner a\u200db "
              "<script>window.__pwned = 4</script> end")
SHOWN_TITLE = ("Safe title ⟨U+202E⟩evil⟨U+202C⟩ and a bell⟨U+0007⟩, an escape⟨U+001B⟩[31m, an isolate ⟨U+2066⟩x⟨U+2069⟩, a "
               "joiner a⟨U+200D⟩b <script>window.__pwned = 4</script> end")

# Skipped on a machine without it, never in CI (.ci/run installs it there; a missing browser fails).
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM) and not os.environ.get("CI"),
                                reason="needs Debian's chromium (.ci/run installs it)")


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`ledger serve` in its own process group, under `timeout` so that it stops by itself whatever happens
    to the test run; stopped at the end of the module."""
    folder = tmp_path_factory.mktemp("served")
    db = folder / "ledger.db"
    store = Store.create(str(db))
    fill(store, folder)
    bidi = folder / "bidi.jsonl"  # a paper whose title would reverse the text after it, and ring a bell
    me = {"arxiv_id": BIDI_PAPER, "snapshot_observed_at": "2026-09-01T00:00:00Z", "title": BIDI_TITLE}
    bidi.write_bytes(event_line("paper.snapshot", {**me, "latest_version": 1}) + event_line("citation.observed", {
        "observation_id": "bidi-out-1", "citation": {
            "cited_paper": None, "cited_work": {"title": BIDI_TITLE, "doi": "10.1000/xyz(1)"}, "citing_paper": me,
            "reference_index": 1, "source": "pdf_text", "source_observed_at": "2026-09-01T00:00:00Z"}}))
    import_files(store, [str(bidi)])
    signer = generate_signer("example.org/ledger")
    note = checkpoint(store, signer)[0]  # cosigned by the witness, as `checkpoint --witness` keeps it
    keep_cosigned(store, note + WITNESS.cosign(note.split("\n\n")[0] + "\n", 1_700_000_000))
    store.close()
    key = folder / "ledger.key"
    key.write_text(f"{signer}\n")
    port = free_port()
    log = open(folder / "serve.log", "wb")
    env = {k: v for k, v in os.environ.items() if k != "LEDGER_DB"}
    process = subprocess.Popen(["timeout", "--kill-after=5", "300", sys.executable, "-m", "ledger.cli", "--db", str(db), "serve",
                                "--port", str(port), "--key", str(key), "--workers", "2"],
                               stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{base}/evidence", timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            os.killpg(process.pid, signal.SIGKILL)
            pytest.fail(f"ledger serve did not start: {(folder / 'serve.log').read_text()}")
        time.sleep(0.2)
    yield base
    stop_process(process)
    log.close()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


class Watched:
    """A page whose console errors, page errors and requests are kept."""

    def __init__(self, browser, base: str, **options):
        self.context = browser.new_context(**options)
        self.page = self.context.new_page()
        self.errors, self.requests = [], []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.base = base

    def close(self):
        self.context.close()

    def states(self) -> dict[str, str | None]:
        return self.page.eval_on_selector_all(
            "li.observation", "items => Object.fromEntries(items.map(i => "
            "[i.querySelector('[data-field=observation_id]').textContent, i.dataset.check || null]))")

    def verdict(self) -> str:
        """The check's verdict, once the check the page runs on load has ended."""
        self.page.wait_for_selector("#check-summary[data-check]", timeout=30_000)
        return self.page.get_attribute("#check-summary", "data-check")

    def check(self) -> str:
        """Run the check again (the button), and its verdict."""
        self.verdict()
        self.page.click("#check-digests")
        return self.verdict()


@pytest.fixture
def watched(browser, server):
    opened = []

    def make(**options) -> Watched:
        opened.append(Watched(browser, server, **options))
        return opened[-1]

    yield make
    for w in opened:
        w.close()


def test_seed_004_page_checks_itself_on_load_all_12_observations(watched, server, tmp_path):
    w = watched()
    w.page.goto(server + RECORD)
    assert w.verdict() == "pass"
    states = w.states()
    assert len(states) == 12 and set(states.values()) == {"pass"}
    assert w.page.get_attribute('span.check[data-check-for="context"]', "data-check") == "pass"
    summary = w.page.text_content("#check-summary")
    assert summary.startswith("Checked in this browser: the 12 observation cards, ") and "values and 13 digests" in summary
    assert "Digests are not signatures" in summary and w.page.get_attribute("#check-summary", "role") == "status"
    assert w.page.locator("#check-failures li").count() == 0
    assert w.check() == "pass"  # and again on demand
    shot = tmp_path / "seed-004-checked.png"
    w.page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 20_000
    assert w.errors == []  # no script error, no Content-Security-Policy violation, no missing resource
    assert all(url.startswith(server + "/") for url in w.requests), w.requests  # nothing from another origin


def test_one_changed_title_byte_fails_that_observation_and_the_context_digest(watched, server, tmp_path):
    w = watched()
    record = orjson.loads(urllib.request.urlopen(f"{server}/paper/{PAPER_004}/citation-record.json?as_of={AS_OF_004}").read())
    target = record["inbound"][4]
    title = target["citation"]["citing_paper"]["title"].encode()
    assert record["inbound"][4]["citation"]["citing_paper"]["title"] not in [
        o["citation"]["citing_paper"].get("title") for o in record["inbound"][:4] + record["inbound"][5:]]
    changed = title[:-1] + bytes([title[-1] ^ 0x01])

    def tamper(route):
        response = route.fetch()
        body = response.body()
        assert body.count(title) == 1
        route.fulfill(response=response, body=body.replace(title, changed))

    w.page.route("**/citation-record.json*", tamper)
    w.page.goto(server + RECORD)
    assert w.verdict() == "fail"
    states = w.states()
    assert states.pop(target["observation_id"]) == "fail"
    assert len(states) == 11 and set(states.values()) == {"pass"}
    assert w.page.get_attribute('span.check[data-check-for="context"]', "data-check") == "fail"
    failed = w.page.text_content(f'li.observation:has(code[data-field="observation_id"]:text-is("{target["observation_id"]}")) span.check')
    assert failed.startswith("✗ failed: re-computed sha256:") and target["observation_digest"] not in failed
    # The summary lists the card, what the page shows, what the JSON says and what was re-computed.
    items = w.page.locator("#check-failures li").all_text_contents()
    card = next(i for i in items if i.startswith(title.decode()))
    assert f"the page shows “{title.decode()}” for citation.citing_paper.title, the JSON says “{changed.decode()}”" in card
    assert f"the JSON states the digest {target['observation_digest']}, re-computed from the JSON: sha256:" in card
    anchor = w.page.get_attribute(f'li.observation:has(code[data-field="observation_id"]:text-is("{target["observation_id"]}"))', "id")
    assert w.page.locator(f'#check-failures a[href="#{anchor}"]').count() == 1
    w.page.screenshot(path=str(tmp_path / "seed-004-one-byte-changed.png"), full_page=True)
    assert (tmp_path / "seed-004-one-byte-changed.png").stat().st_size > 20_000


@pytest.mark.parametrize("tamper", ["visible digest", "citing title", "card removed", "context digest"])
def test_what_the_page_shows_is_checked_not_only_the_json(watched, server, tamper):
    """The JSON as served, the page's HTML changed: a digest in the visible text, a
    title in the HTML only, a card taken away, the context digest shown."""
    w = watched()
    record = orjson.loads(urllib.request.urlopen(f"{server}/paper/{PAPER_004}/citation-record.json?as_of={AS_OF_004}").read())
    target = record["inbound"][3]

    def edit(route):
        response = route.fetch()
        html = response.text()
        if tamper == "visible digest":
            shown = f'data-field="observation_digest">{target["observation_digest"]}<'
            assert html.count(shown) == 1
            html = html.replace(shown, shown.replace(target["observation_digest"][-4:] + "<", "0000<"))
        elif tamper == "citing title":
            title = target["citation"]["citing_paper"]["title"]
            shown = f'data-field="citation.citing_paper.title">{title}<'
            assert html.count(shown) >= 1
            html = html.replace(shown, shown.replace(title, title + " (edited)"))
        elif tamper == "card removed":
            start = html.index('<li id="inbound-4"')
            html = html[:start] + html[html.index("</li>\n<li", start) + 6:]
        else:
            shown = f'data-record-field="context_digest">{record["context_digest"]}<'
            assert html.count(shown) == 1
            html = html.replace(shown, shown.replace(record["context_digest"][-4:] + "<", "ffff<"))
        route.fulfill(response=response, body=html)

    w.page.route("**/citation-record?*", edit)
    w.page.goto(server + RECORD)
    assert w.verdict() == "fail"
    failures = " ".join(w.page.locator("#check-failures li").all_text_contents())
    if tamper == "card removed":
        assert f"Observation {target['observation_id']} (inbound): it is in the record's JSON but not on this page" in failures
    elif tamper == "context digest":
        assert "for context_digest, the JSON says" in failures
    else:
        assert w.states()[target["observation_id"]] == "fail"
        assert sum(v == "pass" for v in w.states().values()) == 11


def test_a_change_day_page_with_its_cards_in_brief_is_checked_alike(watched, server):
    """A change day's page shows each card in brief (heading, states, id, digest): the check covers what it
    shows, and a digest changed in the HTML alone fails it."""
    day = f"/paper/{PAPER_004}/as-of/2026-08-09/citation-record"
    w = watched()
    w.page.goto(server + day)
    assert w.verdict() == "pass" and set(w.states().values()) == {"pass"} and len(w.states()) == 12
    assert w.page.locator("li.observation dl.facts").count() == 0  # in brief
    record = orjson.loads(urllib.request.urlopen(f"{server}/paper/{PAPER_004}/as-of/2026-08-09/citation-record.json").read())
    target = record["inbound"][0]

    def edit(route):
        response = route.fetch()
        html = response.text()
        shown = f'data-field="observation_digest">{target["observation_digest"]}<'
        assert html.count(shown) == 1
        route.fulfill(response=response, body=html.replace(shown, shown.replace(target["observation_digest"][-4:] + "<", "0000<")))

    w = watched()
    w.page.route(f"**{day}", edit)
    w.page.goto(server + day)
    assert w.verdict() == "fail" and w.states()[target["observation_id"]] == "fail"
    assert sum(v == "pass" for v in w.states().values()) == 11


def test_the_page_reads_fully_without_javascript(watched, server):
    w = watched(java_script_enabled=False)
    w.page.goto(server + RECORD)
    text = w.page.inner_text("main")
    assert "As of 9 August 2026, this Paper Citation Record lists 0 of 0 outbound references and 12 inbound" in text
    assert "sha256:88bbcfe1847497cac1a7e1c3f5aa9530cb1662bfd44d13f772daaeb592ad2687" in text
    assert w.page.locator("li.observation").count() == 12 and w.page.is_hidden("#check-digests")


def test_markup_in_a_record_never_runs(watched, server):
    w = watched()
    for path in (f"/paper/{SCRIPT_PAPER}/citation-record", f"/paper/{SCRIPT_PAPER}"):
        w.page.goto(server + path)
        assert w.page.evaluate("typeof window.__pwned") == "undefined"
        assert w.page.text_content("h1") == SCRIPT_TITLE
        assert w.page.locator("main img").count() == 0
    w.page.goto(server + f"/paper/{SCRIPT_PAPER}/citation-record")
    assert w.verdict() == "pass"  # and its digests still re-compute in the browser
    assert w.page.evaluate("typeof window.__pwned") == "undefined"


# -- the browser's canonical encoding against orjson's -----------------------------------------------------
ENCODE = """async (texts) => {
  const out = [];
  for (const text of texts) {
    const canonical = LedgerCheck.canonical(LedgerCheck.parse(text));
    const bytes = Array.from(LedgerCheck.utf8(canonical), b => b.toString(16).padStart(2, "0")).join("");
    out.push([bytes, await LedgerCheck.sha256(canonical)]);
  }
  return out;
}"""


@pytest.fixture(scope="module")
def encoder(browser, server):
    context = browser.new_context()
    page = context.new_page()
    page.goto(server + "/")
    page.add_script_tag(url="/assets/check.js")
    yield page
    context.close()


def agree(encoder, values: list, texts: list[str]) -> None:
    for value, text, (hexed, digest) in zip(values, texts, encoder.evaluate(ENCODE, texts)):
        expected = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        assert bytes.fromhex(hexed) == expected, (text, expected)
        assert digest == "sha256:" + hashlib.sha256(expected).hexdigest()


def test_the_cases_where_a_naive_encoder_goes_wrong(encoder):
    values = [
        {"\U0001f600": 1, "\ue000": 2, "\uffff": 3, "\U00010000": 4, "z": 5, "": 6},  # code points, not UTF-16 units
        ["\x00\x01\x1f\x7f", '"\\/', "\b\f\n\r\t", "\u2028\u2029", "é\U0001d11e"],  # escapes, and what is not escaped
        [2**64 - 1, -(2**63), 2**53 + 1, 0, -1],  # beyond what a JS number holds exactly
        {"b": {"d": [], "c": {}}, "a": [None, True, False]},
    ]
    texts = [json.dumps(values[0]), json.dumps(values[1], ensure_ascii=False), json.dumps(values[2]),
             json.dumps(values[3], indent=2)]
    agree(encoder, values, texts)


CHARACTERS = st.characters(exclude_categories=("Cs",))  # lone surrogates have no UTF-8 form (orjson refuses them)
STRINGS = st.text(CHARACTERS, max_size=12) | st.sampled_from(["\x00", "\x1f", "\x7f", '"', "\\", "/", "\u2028",
                                                              "\ue000", "\uffff", "\U0001f600", "\U00010000"])
SCALARS = st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | STRINGS
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(STRINGS, inner, max_size=5),
                      max_leaves=25)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(VALUES, min_size=1, max_size=40), ascii_only=st.booleans(), indent=st.sampled_from([None, 1]))
def test_the_browser_encodes_exactly_as_orjson(encoder, values, ascii_only, indent):
    agree(encoder, values, [json.dumps(v, ensure_ascii=ascii_only, indent=indent) for v in values])


# -- reader pages: every kind, at a desk and on a phone ------------------------------------------------
ARTIFACTS = Path(os.environ.get("LEDGER_ARTIFACTS", "test-artifacts")) / "screenshots"  # kept after the run
AXE = Path(os.environ.get("LEDGER_AXE", Path(__file__).parents[2] / ".ci/node_modules/axe-core/axe.min.js"))
PHONE, DESK = {"width": 390, "height": 844}, {"width": 1280, "height": 900}


def page_kinds(server: str) -> dict[str, str]:
    """A path of every kind of page, and the record of every paper the home page lists."""
    kinds = {"home": "/", "month": f"/papers/{PAPER_004[:4]}", "record": RECORD, "day record": f"/paper/{PAPER_004}/as-of/2026-08-09/citation-record",
             "paper": f"/paper/{PAPER_004}?as_of={AS_OF_004}", "integrity": f"/paper/{PAPER_004}/integrity?as_of={AS_OF_004}",
             "evidence": "/evidence", "404 file": "/404.html", "error": "/paper/2401.99999/citation-record",
             "hostile record": f"/paper/{BIDI_PAPER}/citation-record",
             "record with a notice": f"/paper/{PAPER_004}/citation-record?as_of=2026-08-24",
             "changes": f"/paper/{PAPER_004}/as-of/2026-08-20/changes",
             "diff": f"/paper/{PAPER_004}/diff?from=2026-08-09&to=2026-08-24"}
    home = urllib.request.urlopen(server + "/").read().decode()
    for link in sorted(set(re.findall(r'href="(/paper/[^"?]+/citation-record)"', home))):
        kinds[f"record {link.split('/')[2]}"] = link
    return kinds


def test_the_home_page_lists_the_papers_and_finds_one_by_any_id_form(watched, server):
    w = watched()
    w.page.goto(server + "/")
    listed = w.page.locator("table.papers tbody tr").all_inner_texts()
    assert any(PAPER_004 in row for row in listed) and any(BIDI_PAPER in row for row in listed)
    assert w.page.get_attribute("header.site .brand a", "href") == "/"
    for typed in (f"arXiv:{PAPER_004}v2", f"https://arxiv.org/abs/{PAPER_004}v1", PAPER_004):
        w.page.goto(server + "/")
        w.page.fill("#find-id", typed)
        w.page.click("form.find button")
        w.page.wait_for_url(f"**/paper/{PAPER_004}/citation-record")
    w.page.goto(server + "/")
    w.page.fill("#find-id", "2407.2001")
    w.page.click("form.find button")
    assert w.page.text_content("#find-result").startswith("Not an arXiv id: “2407.2001”")
    assert w.errors == []


def test_the_find_box_reads_ids_as_the_command_line_does(watched, server):
    from ledger.core.errors import InputError
    from ledger.model.arxiv import parse_arxiv_id

    w = watched()
    w.page.goto(server + "/")
    typed = ["2407.20018", "arXiv:2407.20018", "ARXIV:2407.20018v12", "2407.20018v0", "1412.1234", "1412.12345",
             "1501.1234", "1501.12345", "hep-th/9901001", "hep-th/9901001v3", "math.AG/0601001", "math.ag/0601001",
             "hep-th/990100", "2407.20018 ", "", "arXiv:", "v2", "2407.20018v", "a-b-c/1234567"]
    found = w.page.evaluate("texts => texts.map(t => LedgerFind.paperOf(t))", typed)
    for text, paper in zip(typed, found):
        try:
            expected = parse_arxiv_id(text).paper
        except InputError:
            expected = None
        assert paper == expected, text


def test_hostile_text_is_isolated_and_its_controls_shown(watched, server):
    w = watched()
    w.page.goto(server + f"/paper/{BIDI_PAPER}/citation-record")
    assert w.verdict() == "pass"  # the check shows the controls as the page does
    assert w.page.text_content("h1") == SHOWN_TITLE and "\u202e" not in w.page.title()
    assert SHOWN_TITLE in w.page.title()
    assert w.page.evaluate("getComputedStyle(document.querySelector('h1 bdi')).unicodeBidi") == "isolate"
    card = w.page.locator("li.observation").first
    assert card.locator("h3").text_content() == SHOWN_TITLE  # the cited work heads an outbound card
    assert card.locator('a[href^="https://doi.org/"]').get_attribute("href") == "https://doi.org/10.1000/xyz(1)"
    # The record's own paper is linked to arXiv once, at the top, not again on each of its cards.
    assert w.page.locator(f'dl.identity a[href="https://arxiv.org/abs/{BIDI_PAPER}"]').count() == 1
    assert card.locator(f'a[href="https://arxiv.org/abs/{BIDI_PAPER}"]').count() == 0


def test_hostile_text_shows_as_code_points_on_every_page_kind_and_never_runs(watched, server):
    from ledger.web.views import HIDDEN

    pages = {"home": ("/", True), "month": ("/papers/2601", True), "paper": (f"/paper/{BIDI_PAPER}", True),
             "record": (f"/paper/{BIDI_PAPER}/citation-record", True),
             "day record": (f"/paper/{BIDI_PAPER}/as-of/2026-09-01/citation-record", True),
             "changes": (f"/paper/{BIDI_PAPER}/as-of/2026-09-01/changes", False),
             "diff": (f"/paper/{BIDI_PAPER}/diff?from=2026-08-01&to=2026-09-02", False),
             "integrity": (f"/paper/{BIDI_PAPER}/integrity", False), "evidence": ("/evidence", False),
             "error": ("/nothing%E2%80%AE%07here", False)}
    w = watched()
    for kind, (path, titled) in pages.items():
        w.page.goto(server + path)
        text, title = w.page.evaluate("[document.body.innerText, document.title]")
        assert HIDDEN.findall(text + title) == [], kind
        if titled:
            assert SHOWN_TITLE in text, kind
        assert w.page.evaluate("window.__pwned") is None, kind
    assert "⟨U+202E⟩⟨U+0007⟩" in text  # the error page's path
    assert [e for e in w.errors if "404" not in e] == []  # the error page's own status is logged, nothing else


def test_no_page_scrolls_sideways_on_a_phone_and_each_is_kept_as_a_picture(watched, server):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    wide = {}
    for size, viewport in (("390", PHONE), ("1280", DESK)):
        w = watched(viewport=viewport)
        for kind, path in page_kinds(server).items():
            w.page.goto(server + path)
            if w.page.locator("#check-summary").count():
                assert w.verdict() == "pass", (kind, w.page.text_content("#check-summary"))
            width = w.page.evaluate("document.documentElement.scrollWidth")
            if width > viewport["width"]:
                wide[(kind, size)] = width
            shot = ARTIFACTS / f"{kind.replace(' ', '-').replace('/', '_')}-{size}.png"
            w.page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 5_000
        assert w.errors == [] or all("404" in e for e in w.errors), w.errors  # the error pages' own status only
    assert wide == {}


@pytest.mark.skipif(not AXE.is_file() and not os.environ.get("CI"), reason="needs axe-core from npm (.ci/run installs it)")
def test_axe_finds_no_serious_or_critical_violation_on_any_page(watched, server):
    found = {}
    for size, viewport in (("390", PHONE), ("1280", DESK)):
        w = watched(viewport=viewport, bypass_csp=True)  # only so that the test can load axe into the page
        for kind, path in page_kinds(server).items():
            w.page.goto(server + path)
            if w.page.locator("#check-summary").count():
                w.verdict()
            w.page.add_script_tag(path=str(AXE))
            violations = w.page.evaluate("""async () => (await axe.run(document, {resultTypes: ["violations"]}))
                .violations.map(v => [v.id, v.impact, v.nodes.length, v.nodes[0].target.join(" ")])""")
            bad = [v for v in violations if v[1] in ("serious", "critical")]
            if bad:
                found[(kind, size)] = bad
    assert found == {}


def test_a_page_opened_as_a_file_says_why_nothing_was_checked(watched, server, tmp_path):
    page = tmp_path / "record.html"
    page.write_bytes(urllib.request.urlopen(server + RECORD).read())
    w = watched()
    w.page.goto(page.as_uri())
    summary = w.page.locator("#check-summary")
    assert summary.get_attribute("data-check") is None
    assert "served over HTTP" in summary.text_content() and "nothing on this page has been checked" in summary.text_content()


# -- the integrity page's verdict ----------------------------------------------------------------------
INTEGRITY = f"/paper/{PAPER_004}/integrity?as_of={AS_OF_004}"


def integrity_verdict(w, server, change=None, fragment: str = "") -> tuple[str, str]:
    """Open the integrity page (its address ending in `fragment`), its JSON changed by `change(found)` on the
    way; (data-check, text)."""
    if change is not None:
        def edit(route):
            response = route.fetch()
            found = orjson.loads(response.body())
            change(found)
            route.fulfill(response=response, body=orjson.dumps(found))
        w.page.route("**/integrity.json*", edit)
    w.page.goto(server + INTEGRITY + fragment)
    w.page.wait_for_selector("#verdict[data-check]", timeout=30_000)
    return w.page.get_attribute("#verdict", "data-check"), w.page.text_content("#verdict")


def flip(text: str, at: int = -1) -> str:
    """`text` (hex or base64) with one character changed."""
    at %= len(text)
    return text[:at] + ("0" if text[at] != "0" else "1") + text[at + 1:]


def test_the_integrity_page_verifies_signature_index_and_inclusion_in_the_browser(watched, server):
    w = watched()
    state, text = integrity_verdict(w, server)
    found = orjson.loads(urllib.request.urlopen(f"{server}/paper/{PAPER_004}/integrity.json?as_of={AS_OF_004}").read())
    size, count = found["index"]["tree_size"], found["index"]["count"]
    assert state == "pass", text
    assert f"at tree size {size} is signed by the key example.org/ledger" in text
    assert f"counts {count} events of arXiv:{PAPER_004}, and all {count} are in the log" in text
    command = w.page.text_content("pre code")
    assert command.startswith(f"curl -s '{server}/paper/{PAPER_004}/integrity.json?as_of=")  # pastes as it is
    assert w.errors == []


def test_the_integrity_page_counts_the_witnesses_its_address_names(watched, server):
    from ledger.log.cosignature import generate_cosigner

    w = watched()
    state, text = integrity_verdict(w, server, fragment=f"#witness={WITNESS.key}")
    assert state == "pass" and "cosigned by witness.example/w1 (1 of the 1 witnesses asked for, quorum 1)" in text, text
    absent = generate_cosigner("witness.example/w2").key
    state, text = integrity_verdict(watched(), server, fragment=f"#witness={WITNESS.key}&witness={absent}&quorum=2")
    assert state == "fail" and text.startswith("Verification failed (witnesses): cosigned by witness.example/w1 "
                                               "(1 of the 2 witnesses asked for), the quorum is 2"), text

    def forge(found):
        note = found["evidence"]["cosigned"]
        body, line = note.rstrip("\n").rsplit(" ", 1)
        raw = bytearray(base64.b64decode(line))
        raw[-1] ^= 1
        found["evidence"]["cosigned"] = f"{body} {base64.b64encode(bytes(raw)).decode()}\n"

    state, text = integrity_verdict(watched(), server, forge, fragment=f"#witness={WITNESS.key}")
    assert state == "fail" and "the cosignature of witness.example/w1 does not verify" in text, text
    assert w.errors == []


def test_the_integrity_page_says_the_index_was_checked_when_auditing_witnesses_cosigned_its_note(watched, server):
    from ledger.log.signed_notes import split_note

    def audit(found):  # the bundle's index note cosigned by the witness, as an auditing one does
        note = found["evidence"]["checkpoint"]
        found["evidence"]["checkpoint"] = note + WITNESS.cosign(split_note(note)[0], 1_780_000_000)
        found["evidence"].pop("cosigned", None)  # counted on the index note alone

    w = watched()
    state, text = integrity_verdict(w, server, audit, fragment=f"#witness={WITNESS.key}")
    assert state == "pass" and "Audited: the index was checked by 1 auditing witness, witness.example/w1" in text, text
    assert "(1 of the 1 witnesses asked for, quorum 1)" in text
    assert w.errors == []


def _forge_signature(found):
    note = found["evidence"]["checkpoint"]
    body, signature = note.rsplit(" ", 1)
    raw = bytearray(base64.b64decode(signature))
    raw[-1] ^= 1
    found["evidence"]["checkpoint"] = body + " " + base64.b64encode(bytes(raw)).decode() + "\n"


def _forge_size(found):
    lines = found["evidence"]["checkpoint"].split("\n")
    lines[1] = str(int(lines[1]) + 1)
    found["evidence"]["checkpoint"] = "\n".join(lines)


@pytest.mark.parametrize("forgery, step", [
    (_forge_signature, "signature"),
    (_forge_size, "signature"),  # the signed text changed: the signature no longer holds
    (lambda f: f["evidence"]["inclusion"].__setitem__(0, flip(f["evidence"]["inclusion"][0])), "inclusion"),
    (lambda f: f["evidence"]["index"]["siblings"].__setitem__(
        next(i for i, s in enumerate(f["evidence"]["index"]["siblings"]) if s), flip("0" * 64)), "index"),
    (lambda f: f["evidence"]["index"].__setitem__("count", f["evidence"]["index"]["count"] - 1), "index"),
    (lambda f: f["evidence"]["events"].pop(), "inclusion"),
    (lambda f: f["evidence"].__setitem__("context_digest", "sha256:" + "0" * 64), "record"),
])
def test_a_forged_checkpoint_or_a_flipped_proof_byte_fails_the_verdict(watched, server, forgery, step):
    w = watched()
    state, text = integrity_verdict(w, server, forgery)
    assert state == "fail" and text.startswith(f"Verification failed ({step}): "), text
