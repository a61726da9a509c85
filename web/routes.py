"""The route table: every path of the site, once. A row names its pattern (from `ledger.model.paths`, the one
the record's links are formatted from), its forms (HTML at the pattern, JSON at the pattern plus `.json`, or a
file's bytes as they are), the query options it takes, what renders it (`web.site`), and which files
`ledger publish` writes for it. `web.app` registers a route per row and form, `web.publish` writes a file per
row and paper or day, and `tests/web/test_routes.py` checks that what is served and what is published agree.

Order matters: the first route whose pattern matches a path answers it, and `{paper}` spans segments, so the
paths under a paper come before the paper's own page, and a day's record before the record.

A published file is the page as of the publication's time without `known_at`; other query options, and a
row published for no file (`live` says why), are answered by `ledger serve` only. This module parses what a
request asks and renders it; it never decides a status code.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Callable
from dataclasses import dataclass

from ledger.core.errors import InputError
from ledger.core.times import When, now, when
from ledger.log.tiles import Tile, parse_tile_path
from ledger.model import arxiv, paths
from ledger.model.events import Fact
from ledger.web import urls
from ledger.web.site import Body, Site

# What `ledger publish` writes for a row: one file per form; one per asset; per month of papers with one that
# changed; per paper; per paper and day with a record of its own; one per tile of the tree; one with a signing
# key, after the tiles it covers.
ONCE, PER_ASSET, PER_MONTH, PER_PAPER, PER_DAY, PER_TILE, SIGNED = (
    "once", "asset", "month", "paper", "day", "tile", "signed")
FORMS = ("json", "html", "file")


def file_for(path: str, html: bool) -> str:
    """The file (relative to publish's OUT/) that serves a URL path: an HTML page is `<path>/index.html`."""
    if html:
        return "index.html" if path == "/" else f"{path.strip('/')}/index.html"
    return path.strip("/")


@dataclass
class Question:
    """What one request, or one file of `ledger publish`, asks: its parsed path and query. The facts, record
    and integrity of a paper are fetched once and shared by the files that show them."""

    paper: str | None = None
    as_of: When | None = None
    known_at: When | None = None
    day: str | None = None
    start: When | None = None
    end: When | None = None
    name: str | None = None  # an asset's
    month: str | None = None  # a month of papers: 2407, hep-th/9901
    tile: Tile | None = None
    size: int | None = None  # the checkpoint's tree size; None: the log's size now
    facts: list[Fact] | None = None
    record: dict | None = None
    found: dict | None = None

    def params(self) -> dict[str, str | None]:
        """The path parameters, as a pattern names them."""
        rest = self.tile.path().removeprefix("tile/") if self.tile else None
        size = None if self.size is None else str(self.size)
        return {"paper": self.paper, "day": self.day, "name": self.name, "rest": rest, "month": self.month, "size": size}

    def facts_from(self, site: Site) -> list[Fact]:
        if self.facts is None:
            self.facts = site.facts(self.paper, self.known_at)
        return self.facts

    def record_from(self, site: Site) -> dict:
        if self.record is None:
            self.record = site.record(self.paper, self.as_of, self.known_at, self.facts_from(site))
        return self.record

    def integrity_from(self, site: Site) -> dict:
        if self.found is None:  # a record built already is reused; a signed bundle builds its own
            self.found = site.integrity(self.paper, self.as_of, self.known_at, self.record)
        return self.found


Render = Callable[[Site, Question], Body]
Encode = Callable[[str, Body, Question], tuple[Body, dict | None]]


@dataclass(frozen=True)
class Route:
    """One row: a pattern, its forms and what renders each, its query options, what publish writes for it."""

    name: str
    pattern: str
    html: Render | None = None
    json: Render | None = None
    file: Render | None = None  # neither HTML nor JSON: bytes as they are, at the pattern
    query: tuple[str, ...] = ()  # in the order an error about an unknown option lists them
    published: str | None = None  # ONCE, PER_ASSET, ... or SIGNED; None: live only, because `live`
    live: str = ""
    as_of_now: bool = True  # without `as_of`, as of the request instant (False: every event)
    store: bool = True  # rendered in the store's thread (False: from the package alone, even with the store down)
    encode: Encode | None = None  # (Accept-Encoding, body, question) -> the body sent and headers to add
    # What its bytes depend on, for `web.answers` to keep them: "paper" (its facts), "links" (which papers its
    # HTML cards name have a record), "log" (its size); () for nothing (the same bytes forever); None: never kept.
    depends: tuple[str, ...] | None = None
    about: str = ""  # the JSON form's description in the OpenAPI schema

    def forms(self) -> list[tuple[str, Render]]:
        return [(form, getattr(self, form)) for form in FORMS if getattr(self, form) is not None]

    @property
    def parameters(self) -> list[str]:
        return re.findall(r"\{(\w+)\}", self.pattern)

    def served(self, form: str) -> str:
        """The route's path as Starlette matches it (a SLASHED parameter spans segments)."""
        pattern = re.sub(r"\{(\w+)\}", lambda m: f"{{{m[1]}:path}}" if m[1] in paths.SLASHED else m[0], self.pattern)
        return pattern + paths.JSON if form == "json" else pattern

    def path(self, form: str, question: Question) -> str:
        return paths.fill(self.pattern, json=form == "json", **question.params())

    def file_of(self, form: str, question: Question) -> str:
        return file_for(self.path(form, question), form == "html")


# Paths a reader guesses for a paper, by the suffix after its id, and the path that answers each.
GUESSED = ((".json", paths.RECORD, True), (".html", paths.PAPER, False), ("/json", paths.RECORD, True))


def guessed(path: str) -> str | None:
    """The path `ledger serve` answers for a path a reader guesses (`/paper/<id>.json`, `/paper/<id>.html`,
    `/paper/<id>/json`), or None: for any other path, and for one whose id is not an arXiv id (answered, as
    before, with the one-line reason).

    Raises: nothing."""
    prefix = paths.PAPER.split("{")[0]
    if not path.startswith(prefix):
        return None
    for suffix, pattern, json in GUESSED:
        paper = path[len(prefix):-len(suffix)] if path.endswith(suffix) else ""
        if arxiv.is_paper_id(paper):
            return paths.fill(pattern, json, paper=paper)
    return None


def ask(route: Route, values: dict[str, str | None]) -> Question:
    """The question a request puts to `route`, from its path parameters and query options by name; a
    malformed one raises InputError naming it, checked in the order below (the date before the paper)."""
    question = Question(name=values.get("name"))
    if "day" in values:
        question.day = urls.day(values["day"])
        question.as_of = when("as_of", question.day)
    if "as_of" in route.query:
        question.as_of = when("as_of", values.get("as_of")) or (now() if route.as_of_now else None)
    if "from" in route.query:
        question.start, question.end = when("from", values["from"]), when("to", values["to"])
    if "known_at" in route.query:
        question.known_at = when("known_at", values.get("known_at"))
    if "paper" in values:
        question.paper = arxiv.paper_id(values["paper"])
    if "month" in values:
        question.month = arxiv.month_id(values["month"])
    if "rest" in values:
        question.tile = parse_tile_path(f"tile/{values['rest']}")
    if "size" in values:
        question.size = _tree_size(values["size"])
    return question


def _tree_size(text: str | None) -> int:
    """A tree size in a path: digits, no leading zero, under 2^63.
    Raises: InputError naming it."""
    if text is None or not re.fullmatch(r"0|[1-9][0-9]{0,18}", text) or int(text) >= 1 << 63:
        raise InputError("size: expected a tree size (digits, no leading zero)")
    return int(text)


def _tile_encoding(accept_encoding: str, body: Body, question: Question) -> tuple[Body, dict | None]:
    if not question.tile.entries:
        return body, None
    if "gzip" in accept_encoding:  # C2SP: an entry bundle SHOULD be compressed
        return (Body(gzip.compress(body.content, 6, mtime=0), body.media_type, body.cache),
                {"content-encoding": "gzip", "vary": "Accept-Encoding"})
    return body, {"vary": "Accept-Encoding"}


def _record_json(site: Site, q: Question) -> Body:
    return site.record_json(q.paper, q.as_of, q.known_at, q.record_from(site))


def _record_html(site: Site, q: Question) -> Body:
    return site.record_html(q.paper, q.as_of, q.known_at, q.record_from(site), q.day, q.facts_from(site))


AS_OF = ("as_of", "known_at")
ROUTES = (
    Route("index", paths.INDEX, html=lambda site, q: site.index_html(q.as_of), query=("as_of",), published=ONCE,
          depends=("log",)),
    Route("not_found", paths.NOT_FOUND, file=lambda site, q: Site.not_found_html(), published=ONCE, store=False,
          depends=()),
    Route("month", paths.MONTH, html=lambda site, q: site.month_html(q.month, q.as_of), query=("as_of",),
          published=PER_MONTH, depends=("log",)),
    Route("evidence", paths.EVIDENCE, html=lambda site, q: site.evidence_html(), published=ONCE, depends=()),
    Route("asset", paths.ASSET, file=lambda site, q: Site.asset(q.name), published=PER_ASSET, store=False),
    Route("checkpoint", paths.CHECKPOINT, file=lambda site, q: site.checkpoint(q.size), published=SIGNED,
          depends=("log",)),
    Route("paper_index", paths.PAPER_INDEX, file=lambda site, q: site.paper_index_note(q.size), published=SIGNED,
          depends=("log",)),  # each size publish signs, and the log's size then: what auditing witnesses fetch
    Route("tile", paths.TILE, file=lambda site, q: site.tile(q.tile), published=PER_TILE, encode=_tile_encoding,
          depends=()),  # a tile's path names its bytes
    Route("day_changes", paths.DAY_CHANGES, query=("known_at",), published=PER_DAY, depends=("paper",),
          html=lambda site, q: site.diff_html(q.paper, None, q.as_of, q.known_at, q.facts_from(site), q.day)),
    Route("day_record", paths.DAY_RECORD, json=_record_json, html=_record_html, query=("known_at",), published=PER_DAY,
          depends=("paper", "links")),
    Route("record", paths.RECORD, json=_record_json, html=_record_html, query=AS_OF, published=PER_PAPER,
          depends=("paper", "links"),
          about="Exactly the bytes of `ledger replay --paper <id> --as-of <as_of>`; ETag: the context digest."),
    Route("integrity", paths.INTEGRITY, query=AS_OF, published=PER_PAPER, depends=("paper",),
          json=lambda site, q: site.integrity_json(q.paper, q.as_of, q.known_at, q.integrity_from(site)),
          html=lambda site, q: site.integrity_html(q.paper, q.as_of, q.known_at, q.integrity_from(site))),
    Route("history", paths.HISTORY, query=AS_OF, published=PER_PAPER, as_of_now=False, depends=("paper",),
          json=lambda site, q: site.history_json(q.paper, q.as_of, q.known_at, q.facts_from(site)),
          about="What `ledger history <id> --json` prints; with `as_of`, the events effective by then."),
    Route("diff", paths.DIFF, query=("from", "to", "known_at"), live="between any two times a client names",
          depends=("paper",),
          json=lambda site, q: site.diff_json(q.paper, q.start, q.end, q.known_at),
          html=lambda site, q: site.diff_html(q.paper, q.start, q.end, q.known_at),
          about="What `ledger diff <id> --from --to --json` prints."),
    Route("paper", paths.PAPER, query=AS_OF, published=PER_PAPER, depends=("paper",),  # last: its {paper} matches all below
          html=lambda site, q: site.paper_html(q.paper, q.as_of, q.known_at, q.facts_from(site))),
)


def published(kind: str) -> list[Route]:
    """The rows `ledger publish` writes files for, of one `kind` (ONCE, PER_ASSET, PER_PAPER, ...)."""
    return [route for route in ROUTES if route.published == kind]
