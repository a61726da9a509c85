"""The route table against what is served and what is published: every file `ledger publish` writes is a path
of the table that `serve` answers with the same bytes, and every GET route of the app is a row of the table
that publish writes files for, or a row that says why it is live only."""

import os
import re
import sqlite3
from collections import Counter

import orjson
import pytest
from fastapi.responses import Response

from ledger.core.times import when
from ledger.model import paths
from ledger.web.publish import STATE_FILE, publish
from ledger.web.routes import ROUTES, Route
from tests.conftest import PAPER_004

AS_OF = "2026-09-02"  # every paper of the ledger has a record by then
# Served by the app, not a page of the site: listed here with the reason it has no file.
NOT_IN_THE_TABLE = {"/openapi.json": "FastAPI's schema of the live API (what tests/web/test_fuzz.py fuzzes)"}


def _regex(pattern: str) -> str:
    """A pattern's paths as the router matches them (a SLASHED parameter spans segments)."""
    parts = re.split(r"\{(\w+)\}", pattern)
    return "".join(re.escape(part) if i % 2 == 0 else f"(?P<{part}>{'.+' if part in paths.SLASHED else '[^/]+'})"
                   for i, part in enumerate(parts))


def path_pattern(route: Route, form: str) -> re.Pattern:
    return re.compile(_regex(route.pattern + (paths.JSON if form == "json" else "")))


def file_pattern(route: Route, form: str) -> re.Pattern:
    """The files `publish` writes for one form of a row."""
    regex = _regex(route.pattern.strip("/") + (paths.JSON if form == "json" else ""))
    if form == "html":
        regex = f"{regex}/index\\.html" if regex else "index\\.html"
    return re.compile(regex)


def row_of(relative: str) -> tuple[Route, str] | None:
    """The row and form whose path a published file is: the first that matches, as the router picks."""
    return next(((route, form) for route in ROUTES for form, _ in route.forms()
                 if file_pattern(route, form).fullmatch(relative)), None)


def disagreements(client, files: dict[str, bytes]) -> list[str]:
    """Every way the published files, the route table and the app's routes differ; none when they agree."""
    problems, published = [], Counter()
    for relative, data in sorted(files.items()):
        found = row_of(relative)
        if found is None:
            problems.append(f"{relative}: published, but no row of the route table serves it")
            continue
        route, form = found
        published[route.served(form)] += 1
        url = "/" + (relative.removesuffix("index.html").rstrip("/") if form == "html" else relative)
        url += f"?as_of={AS_OF}" if "as_of" in route.query else ""  # the time publish wrote the page as of
        response = client.get(url)
        if (response.status_code, response.content) != (200, data):
            problems.append(f"{relative}: {url} answers {response.status_code}, not the published bytes")
    rows = {route.served(form): route for route in ROUTES for form, _ in route.forms()}
    served = {r.path for r in client.app.routes if "GET" in getattr(r, "methods", ())}
    for path in sorted(served - set(NOT_IN_THE_TABLE)):
        route = rows.get(path)
        if route is None:
            problems.append(f"{path}: served, but not a row of the route table")
        elif route.published is None and (not route.live or published[path]):
            problems.append(f"{path}: live only, but " + ("published" if published[path] else "without a reason"))
        elif route.published is not None and not published[path]:
            problems.append(f"{path}: served, but publish wrote no file for it")
    problems += [f"{path}: a row of the route table the app does not serve" for path in sorted(set(rows) - served)]
    return problems


@pytest.fixture
def site(rich, signer, tmp_path) -> dict[str, bytes]:
    """relative path -> bytes of every file `publish` writes, with a key, as of AS_OF."""
    store, _ = rich
    out = tmp_path / "site"
    publish(store, out, when("as_of", AS_OF), signer)
    found = {}
    for folder, _, names in os.walk(out):
        for name in names:
            path = os.path.join(folder, name)
            found[os.path.relpath(path, out)] = open(path, "rb").read()
    # publish's own record of what it wrote, not a page
    with sqlite3.connect(out / STATE_FILE) as db:
        assert orjson.loads(db.execute("SELECT body FROM settings").fetchone()[0])["tree_size"] == store.head()[0]
        assert db.execute("SELECT count(*) FROM papers").fetchone()[0] == len(list(store.papers(when("as_of", AS_OF).key)))
    assert found.pop(STATE_FILE)
    return found


@pytest.mark.slow
def test_every_served_path_is_published_and_every_published_file_served(client, site):
    assert disagreements(client, site) == []
    # Every kind of row was checked: a file of each published form, the live-only ones named with a reason.
    assert {row_of(relative) for relative in site} == {(route, form) for route in ROUTES if route.published
                                                         for form, _ in route.forms()}
    assert [route.served("json") for route in ROUTES if route.published is None] == [
        "/paper/{paper:path}/diff.json", "/healthz.json", "/readyz.json"]  # the probes: `serve` only


@pytest.mark.slow
def test_a_route_the_app_serves_but_the_table_lacks_fails_it(client, site):
    @client.app.get("/paper/{paper:path}/extra.json", response_class=Response)
    async def extra(paper: str):
        return Response(b"{}", media_type="application/json")

    assert disagreements(client, site) == ["/paper/{paper:path}/extra.json: served, but not a row of the route table"]


@pytest.mark.slow
def test_a_row_publish_writes_no_file_for_or_a_file_no_row_serves_fails_it(client, site):
    history = {name for name in site if name.endswith("/history.json")}
    bare = {name: data for name, data in site.items() if name not in history}
    assert disagreements(client, bare) == ["/paper/{paper:path}/history.json: served, but publish wrote no file for it"]
    stray = {**site, "paper/feed.xml": b"<feed/>", f"paper/{PAPER_004}/history.json": b"[]\n"}
    assert disagreements(client, stray) == [
        f"paper/{PAPER_004}/history.json: /paper/{PAPER_004}/history.json?as_of={AS_OF} answers 200, "
        "not the published bytes",
        "paper/feed.xml: published, but no row of the route table serves it"]


def test_every_link_of_a_page_or_record_is_a_path_of_the_table(client, site):
    # The record's links (projections/record.py) and the pages' hrefs (web/urls.py, the templates) are
    # formatted apart from the table; each must name a path some row serves.
    patterns = [path_pattern(route, form) for route in ROUTES for form, _ in route.forms()]
    links = set()
    for relative, data in site.items():
        if relative.endswith("index.html"):
            links.update(re.findall(r'(?:href|src|data-record-json)="(/[^"?#]*)', data.decode()))
        elif relative.endswith("citation-record.json"):
            record = orjson.loads(data)
            links.update(record["links"].values())
            links.update(link for obs in record["inbound"] + record["outbound"] for link in obs["links"].values())
    assert {"/evidence", f"/paper/{PAPER_004}", f"/paper/{PAPER_004}/history.json", "/assets/check.js"} <= links
    assert [link for link in sorted(links) if not any(p.fullmatch(link) for p in patterns)] == []


def test_a_month_lists_its_papers_in_id_order_and_the_home_page_links_every_month(client, rich):
    store, dates = rich
    home = client.get(f"/?as_of={AS_OF}").text
    months = sorted({paper[:4] for paper in dates})
    assert re.findall(r'<a href="/papers/([^"?]+)\?as_of=', home) == months
    for month in months:
        page = client.get(f"/papers/{month}?as_of={AS_OF}")
        assert page.status_code == 200
        listed = re.findall(r'<td><a href="/paper/([^"?]+)\?as_of=[^"]+">\1</a>', page.text)  # its id column
        assert listed == sorted(p for p in dates if p.startswith(month + "."))
    # Before any of its papers had a record, a month has no page; nor has a month with none, or no month.
    assert client.get("/papers/2601?as_of=2026-08-01").status_code == 404
    assert client.get("/papers/2001").status_code == 404
    bad = client.get("/papers/24x7")
    assert bad.status_code == 400 and "not a month of arXiv papers: '24x7'" in bad.text
