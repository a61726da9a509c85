"""Every path of the site as bytes, with its media type and caching: one function per page, shared by
`ledger serve` (web.app) and `ledger publish` (web.publish), so both give exactly the same bytes.

A page is a pure rendering of what `ledger/` and `projections/` return: the record JSON is
`ledger.canonical.canonical` of the record (the bytes of `ledger replay`), the history and diff JSON are what
`ledger history --json` and `ledger diff --json` print, the tiles are `ledger.tiles`. HTML goes through
Jinja2 with autoescaping, so no string from a record (a title, a venue, an id) is ever read as markup.
This module never writes to the ledger and never decides a status code.
"""

from __future__ import annotations

import base64
import re
from collections import Counter
from dataclasses import dataclass
from datetime import date
from functools import cache
from importlib.resources import files
from typing import Iterable
from urllib.parse import quote

import orjson
from jinja2 import Environment, PackageLoader, StrictUndefined

from ledger.core.canonical import canonical
from ledger.core.errors import InputError, NotFoundError
from ledger.model.arxiv import paper_id
from ledger.model.events import PAPER_SNAPSHOT, Fact
from ledger.model.parts import cited_label
from ledger.model.published import RESOLUTION_STATES
from ledger.model.standing_notices import describe_event, notice_label
from ledger.log.signed_notes import Signer
from ledger.services.proofs import evidence_bundle
from ledger.storage.store import Store
from ledger.log.tiles import Tile
from ledger.services.proofs import checkpoint as signed_checkpoint
from ledger.services.tilestore import read_tile
from ledger.core.times import When, when
from ledger.projections import history as views
from ledger.projections.record import build_record
from ledger.projections.text import capped_words, counted_lines, lane_words, measurement_line, observation_words
from ledger.projections.text import state_words

from ledger.web import urls

JSON = "application/json"
HTML = "text/html; charset=utf-8"
TEXT = "text/plain; charset=utf-8"
OCTETS = "application/octet-stream"
# Caching (README "Caching"): pages and records revalidate by ETag after a minute; the checkpoint is
# fresh for seconds (C2SP: "SHOULD prevent caching beyond a few seconds"); a full tile never changes.
SHORT = "public, max-age=60"
CHECKPOINT = "public, max-age=5"
IMMUTABLE = "public, max-age=31536000, immutable"
ASSET = "public, max-age=3600"
LATEST = 20  # events in full on a paper's page, newest first
LISTED, RECENT_EVENTS = 100, 20_000  # the home page: up to 100 papers, those with events among the log's last 20,000
# No script, style, font or image from anywhere but this origin, no inline script or style at all.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "base-uri 'none'; form-action 'none'")
ASSETS = {"check.js": "text/javascript; charset=utf-8", "find.js": "text/javascript; charset=utf-8",
          "integrity.js": "text/javascript; charset=utf-8",
          "style.css": "text/css; charset=utf-8",
          "icon.svg": "image/svg+xml"}


@dataclass(frozen=True)
class Body:
    """A page: its bytes, media type, Cache-Control and (for records) ETag."""

    content: bytes
    media_type: str
    cache: str
    etag: str | None = None


def _known(known_at: When | None) -> str | None:
    return known_at.key if known_at else None


def _as_known(exc: NotFoundError, known_at: When | None) -> NotFoundError:
    return NotFoundError(f"{exc} known at {known_at.text}" if known_at else str(exc))


BEGINNING = "1970-01-01T00:00:00Z"  # before any record: a first change day's changes are from nothing


def _days(facts: Iterable[Fact]) -> list[str]:
    """The UTC days on which a fact of the paper is effective, oldest first."""
    return sorted({f.effective_key[:10] for f in facts})


def _time_nav(paper: str, facts: list[Fact], as_of: When, day: str | None, known: str | None) -> dict:
    """A record page's place in time: the change days before and after it (a day with a record), what changed
    on its day, and when the data it shows was last observed (the latest effective time by its as-of)."""
    first = min((f.effective_key for f in facts if f.kind == PAPER_SNAPSHOT and f.subject == paper), default=None)
    days = [d for d in _days(facts) if first is not None and first <= When.parse(d).key]
    here = When.parse(day).key if day else as_of.key
    earlier, later = [d for d in days if When.parse(d).key < here], [d for d in days if When.parse(d).key > here]
    shown = [f.effective_at for f in facts if f.effective_key <= as_of.key]
    nav = {"observed": max(shown, key=lambda t: When.parse(t).key) if shown else None, "previous": None, "next": None,
           "changes": None}
    if earlier:
        nav["previous"] = (earlier[-1], urls.day_record_url(paper, earlier[-1], known))
    if later:  # the last change day: the latest record, which a static site always has
        nav["next"] = (later[0], urls.day_record_url(paper, later[0], known) if later[1:] else urls.record_url(paper, None, known))
    on = day or (earlier[-1] if earlier else None)
    if on is not None:
        nav["changes"] = (on, urls.day_changes_url(paper, on, known))
    return nav


# -- the page form, as HTML ----------------------------------------------------------------------------
def _paper_link(arxiv_id: object) -> str | None:
    """A link to another paper's page, only for a well-formed id: an id is untrusted text."""
    try:
        return urls.paper_url(paper_id(arxiv_id))
    except InputError:
        return None


def _arxiv_link(arxiv_id: object) -> str | None:
    try:
        return f"https://arxiv.org/abs/{paper_id(arxiv_id)}"
    except InputError:
        return None


def _doi_link(doi: object) -> str | None:
    """doi.org's link for a DOI as the record states it (`10.<registrant>/<suffix>`), else None."""
    if not isinstance(doi, str) or not re.fullmatch(r"10\.[0-9.]+/\S+", doi):
        return None
    return "https://doi.org/" + quote(doi, safe="/:;()._-")


def _paper_row(label: str, block: dict | None, path: str) -> dict | None:
    """A paper of a card, as the facts list shows it: its id (the JSON's, at `path`), arXiv, the local page."""
    if not block or block.get("arxiv_id") is None:
        return None
    arxiv_id = block["arxiv_id"]
    return {"label": label, "id": arxiv_id, "field": f"{path}.arxiv_id", "arxiv": _arxiv_link(arxiv_id),
            "local": _paper_link(arxiv_id)}


def _title(block: dict | None, path: str) -> tuple[str, str] | None:
    """(title, its field) when the block has one."""
    if block and isinstance(block.get("title"), str) and block["title"]:
        return block["title"], f"{path}.title"
    return None


def _observation(obs: dict, direction: str, index: int) -> dict:
    citation = obs["citation"]
    words = observation_words(obs, direction)
    citing = _title(citation["citing_paper"], "citation.citing_paper")
    cited = _title(citation.get("cited_paper"), "citation.cited_paper") or \
        _title(citation.get("cited_work"), "citation.cited_work")  # as `cited_label` chooses
    # A card is headed by the other paper of the citation (inbound: who cites this one; outbound: what it cites).
    heading = citing if direction == "inbound" else cited
    if heading is None:
        heading = (words["citing"] if direction == "inbound" else words["cited"], None)
    papers = [_paper_row("Citing paper", citation["citing_paper"], "citation.citing_paper"),
              _paper_row("Cited paper", citation.get("cited_paper"), "citation.cited_paper")]
    work = citation.get("cited_work") or {}
    if papers[1] is None and work.get("arxiv_id") is not None:
        papers[1] = _paper_row("Cited paper", work, "citation.cited_work")
    return {
        "anchor": f"{direction}-{index + 1}", "id": obs["observation_id"], "direction": direction,
        "heading": heading[0], "heading_field": heading[1],
        "sentence": words["sentence"],
        "citing": citing or (words["citing"], None), "cited": cited or (words["cited"], None),
        "reference_index": citation["reference_index"],
        "resolution": words["resolution"], "status": obs["resolution"]["status"],
        "notice": words["notice_events"] + ([words["notice_closing"]] if words["notice_closing"] else []),
        "notice_state": obs["standing_notice"].get("state"),
        "badges": sorted({(str(e.get("type")), notice_label(str(e.get("type")))) for e in obs["standing_notice"].get("events") or []
                          if isinstance(e, dict)}),
        "digest": obs["observation_digest"],
        "source": citation.get("source"), "source_observed_at": citation.get("source_observed_at"),
        "papers": [p for p in papers if p is not None],
        "doi": _doi_link(work.get("doi")), "doi_text": work.get("doi"),
    }


BANNER = ("retraction", "partial_retraction", "withdrawal", "removal", "expression_of_concern", "correction")


def _resolution_bar(record: dict) -> list[dict]:
    """The stacked bar of the displayed references' resolution states: each state's share of 600 units."""
    counts = record["reference_resolution"]["state_counts"]
    total, x, bar = sum(counts.get(state, 0) for state in RESOLUTION_STATES), 0.0, []
    for state in RESOLUTION_STATES:
        n = counts.get(state, 0)
        if total and n:
            bar.append({"state": state, "count": n, "x": round(x, 2), "width": round(600 * n / total, 2)})
            x += 600 * n / total
    return bar


def _notices(record: dict) -> list[dict]:
    """Each source-reported notice on a cited work once (the same one reported on several observations
    too), with the works it is on: for the banner, the worst kinds first."""
    found: dict[tuple, dict] = {}
    for direction in ("outbound", "inbound"):
        for obs in record[direction]:
            for event in obs["standing_notice"].get("events") or []:
                if not isinstance(event, dict):
                    continue
                key = (str(event.get("type")), str(event.get("source")), str(event.get("date")))
                entry = found.setdefault(key, {"type": key[0], "label": notice_label(key[0]), "line": describe_event(event),
                                               "works": [], "banner": key[0] in BANNER})
                work = cited_label(obs["citation"]) or f"arXiv:{obs['citation']['citing_paper']['arxiv_id']}"
                if work not in entry["works"]:
                    entry["works"].append(work)
    return sorted(found.values(), key=lambda n: (BANNER.index(n["type"]) if n["banner"] else len(BANNER), n["line"]))


def _record_view(record: dict) -> dict:
    paper = record["paper"]
    lanes = [dict(zip(("heading", "note", "source"), lane_words(lane))) for lane in record["coverage"]]
    resolution = record["reference_resolution"]
    measurement_source = next((lane["source"] for lane in record["coverage"]
                               if lane["lane"] == "external_citation_measurements"), "")
    return {
        "title": paper.get("title") or f"arXiv:{paper['arxiv_id']}",
        "arxiv_id": paper["arxiv_id"], "version": f"v{paper.get('latest_version')}",
        "arxiv_link": _arxiv_link(paper["arxiv_id"]),
        "lanes": lanes, "meters": [(lane["records_observed"], lane["denominator"]) for lane in record["coverage"]],
        "bar": _resolution_bar(record), "notices": _notices(record),
        "displayed": f"{resolution['displayed']} of {resolution['total_outbound_references']} outbound references displayed",
        "states": state_words(record),
        "measurements": [measurement_line(m, measurement_source) for m in record["external_citation_measurements"]],
        "sections": [  # the page form's order: outbound, then inbound
            ("outbound", "Outbound references", "No outbound references are displayed.",
             [_observation(o, "outbound", i) for i, o in enumerate(record["outbound"])], capped_words(record, "outbound")),
            ("inbound", "Pith citing papers", "No inbound Pith citation observations are available.",
             [_observation(o, "inbound", i) for i, o in enumerate(record["inbound"])], capped_words(record, "inbound")),
        ],
    }


# What would reorder the text after it (bidi controls) or print nothing (C0 and C1 controls but tab and line
# ends): shown as its code point, here and in check.js's `shown`, so no title reverses a line or hides a part.
HIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def shown(text: object) -> str:
    return HIDDEN.sub(lambda m: f"\u27e8U+{ord(m[0]):04X}\u27e9", str(text))


@cache
def _templates() -> Environment:
    env = Environment(loader=PackageLoader("ledger.web", "templates"), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True)
    env.globals.update(csp=CSP, urls=urls)
    env.filters["shown"] = shown
    return env


def render(template: str, **context) -> bytes:
    return _templates().get_template(template).render(**context).encode()


@cache
def asset_bytes(name: str) -> bytes:
    return files("ledger.web").joinpath("assets", name).read_bytes()


# -- the site ------------------------------------------------------------------------------------------
class Site:
    """The pages of one ledger. Not thread-safe (a Store is not): `web.app` calls it from one thread."""

    def __init__(self, store: Store, signer: Signer | None = None):
        self.store = store
        self.signer = signer
        self._checkpoints: dict[int, str] = {}  # by tree size: a note is signed once per size

    # records ------------------------------------------------------------------------------------------
    def facts(self, paper: str, known_at: When | None) -> list[Fact]:
        return self.store.paper_facts(paper, _known(known_at))

    def record(self, paper: str, as_of: When, known_at: When | None, facts: list[Fact] | None = None) -> dict:
        facts = self.facts(paper, known_at) if facts is None else facts
        try:
            return build_record(paper, facts, as_of)
        except NotFoundError as exc:
            raise _as_known(exc, known_at) from None

    def record_json(self, paper: str, as_of: When, known_at: When | None = None, record: dict | None = None) -> Body:
        """Exactly `ledger replay --paper <id> --as-of <as_of> [--known-at]`. The ETag is the context digest:
        strong when the as-of time is in the URL (the bytes follow from it), weak when it is the request
        instant (the content is the same, the as_of field is not)."""
        record = record or self.record(paper, as_of, known_at)
        tag = f'"{record["context_digest"]}"'
        return Body(canonical(record), JSON, SHORT, tag if as_of.given else f"W/{tag}")

    def record_html(self, paper: str, as_of: When, known_at: When | None = None, record: dict | None = None,
                    day: str | None = None, facts: list[Fact] | None = None) -> Body:
        """The page form as HTML. Its check fetches the JSON of the same as-of time."""
        facts = self.facts(paper, known_at) if facts is None else facts
        record = record or self.record(paper, as_of, known_at, facts)
        known = known_at.text if known_at else None
        if day is None:
            json_url = urls.record_url(paper, as_of.text, known, html=False)
        else:
            json_url = urls.day_record_url(paper, day, known, html=False)
        page = render("record.html", record=record, view=_record_view(record), json_url=json_url,
                      time=_time_nav(paper, facts, as_of, day, known),
                      integrity_url=urls.integrity_url(paper, as_of.text, known),
                      page_url=urls.page_url(paper, as_of.text, known))
        return Body(page, HTML, SHORT, f'W/"{record["context_digest"]}"')

    # integrity ------------------------------------------------------------------------------------------
    def integrity(self, paper: str, as_of: When, known_at: When | None = None, record: dict | None = None) -> dict:
        """The record's digests, a signed checkpoint, the paper index proof (how many events of the paper the
        signed index counts) and the compact evidence bundle holding every one of them (with a key; the bundle
        carries its own rebuild of the record and the same index proof). All at the paper's own tree size, the
        log up to its last event: appends to other papers leave these bytes as they are."""
        known = known_at.text if known_at else None
        if self.signer is not None:
            own = self.store.paper_version(paper)[1] or None  # none: no events, and the bundle says not found
            bundle = evidence_bundle(self.store, paper, as_of, self.signer, _known(known_at), own, compact=True)
            checkpoint, verifier, index = bundle["checkpoint"], str(self.signer.verifier), bundle["index"]
        else:
            bundle, checkpoint, verifier, index = None, None, None, None
        record = record or self.record(paper, as_of, known_at)
        return {
            "paper": paper, "as_of": record["as_of"], "known_at": known,
            "record": urls.record_url(paper, as_of.text, known, html=False),
            "context_digest": record["context_digest"],
            "observations": [{"direction": d, "observation_digest": o["observation_digest"],
                              "observation_id": o["observation_id"]} for d in ("inbound", "outbound") for o in record[d]],
            # Over the page cap, what the record counts but does not list is in no digest: the ledger says so.
            "counted": counted_lines(record),
            "checkpoint": checkpoint, "verifier_key": verifier, "index": index, "evidence": bundle,
        }

    def integrity_json(self, paper: str, as_of: When, known_at: When | None = None, found: dict | None = None) -> Body:
        found = found or self.integrity(paper, as_of, known_at)
        return Body(canonical(found) + b"\n", JSON, SHORT)

    def integrity_html(self, paper: str, as_of: When, known_at: When | None = None, found: dict | None = None) -> Body:
        found = found or self.integrity(paper, as_of, known_at)
        known = known_at.text if known_at else None
        size = found["index"]["tree_size"] if found["index"] else None
        page = render("integrity.html", found=found, tree_size=size,
                      record_url=urls.record_url(paper, as_of.text, known),
                      json_url=urls.integrity_url(paper, as_of.text, known, html=False))
        return Body(page, HTML, SHORT)

    # the paper and its history ----------------------------------------------------------------------------
    def history_json(self, paper: str, as_of: When | None = None, known_at: When | None = None,
                     facts: list[Fact] | None = None) -> Body:
        """What `ledger history <id> --json` prints; with `as_of`, only events effective by then."""
        facts = self.facts(paper, known_at) if facts is None else facts
        facts = [f for f in facts if as_of is None or f.effective_key <= as_of.key]
        if not facts:
            raise NotFoundError(f"no events of {paper} in this ledger" + (f" as of {as_of.text}" if as_of else ""))
        return Body(canonical(views.history(facts)) + b"\n", JSON, SHORT)

    def diff_json(self, paper: str, start: When, end: When, known_at: When | None = None) -> Body:
        """What `ledger diff <id> --from --to [--known-at] --json` prints."""
        try:
            found = views.paper_diff(paper, self.facts(paper, known_at), start, end)
        except NotFoundError as exc:
            raise _as_known(exc, known_at) from None
        return Body(canonical(found) + b"\n", JSON, SHORT)

    def diff_html(self, paper: str, start: When, end: When, known_at: When | None = None,
                  facts: list[Fact] | None = None, day: str | None = None) -> Body:
        """What changed in the record from `start` to `end`, as `ledger diff` says it; for a change day, from
        the end of the change day before it (the record's beginning for the first)."""
        facts = self.facts(paper, known_at) if facts is None else facts
        if day is not None:
            earlier = [d for d in _days(facts) if d < day]
            start = when("from", earlier[-1]) if earlier else when("from", BEGINNING)
        try:
            found = views.paper_diff(paper, facts, start, end)
        except NotFoundError as exc:
            raise _as_known(exc, known_at) from None
        known = known_at.text if known_at else None
        page = render("diff.html", found=found, paper=paper, day=day, start=start.text, end=end.text,
                      json_url=urls.diff_url(paper, start.text, end.text, known, html=False),
                      record_url=urls.day_record_url(paper, day, known) if day else urls.record_url(paper, end.text, known),
                      page_url=urls.page_url(paper, None, known))
        return Body(page, HTML, SHORT)

    def change_days(self, paper: str, facts: Iterable[Fact], as_of: When) -> list[tuple[str, bool]]:
        """(day, has its own page) for each UTC day on which an event of the paper is effective, up to
        `as_of`, newest first. A day has a page of its own when its end is before `as_of` and a snapshot of
        the paper is effective by then (before it there is no record)."""
        facts = [f for f in facts if f.effective_key <= as_of.key]
        snapshots = [f.effective_key for f in facts if f.kind == PAPER_SNAPSHOT and f.subject == paper]
        first = min(snapshots, default=None)
        days = sorted({f.effective_key[:10] for f in facts}, reverse=True)
        return [(d, first is not None and first <= When.parse(d).key < as_of.key) for d in days]

    def paper_html(self, paper: str, as_of: When, known_at: When | None = None, facts: list[Fact] | None = None) -> Body:
        """The paper: its snapshot and versions, its history, and the record as of each day something changed."""
        facts = self.facts(paper, known_at) if facts is None else facts
        record = self.record(paper, as_of, known_at, facts)
        seen = [f for f in facts if f.effective_key <= as_of.key]
        versions: dict[object, dict] = {}
        for fact in sorted(seen, key=lambda f: (f.effective_key, f.seq)):
            if fact.kind == PAPER_SNAPSHOT and fact.subject == paper:
                snapshot = orjson.loads(fact.payload)
                versions.setdefault(snapshot.get("latest_version"), {
                    "version": f"v{snapshot.get('latest_version')}", "observed": fact.effective_at,
                    "title": snapshot.get("title") or ""})
        known = known_at.text if known_at else None
        snapshot = [(key, value if isinstance(value, str) else orjson.dumps(value).decode())
                    for key, value in sorted(record["paper"].items())]
        kinds: dict[str, Counter] = {}
        for fact in seen:
            kinds.setdefault(fact.effective_key[:10], Counter())[fact.kind] += 1
        days = [(d, urls.day_record_url(paper, d, known) if own else urls.record_url(paper, as_of.text, known),
                 urls.day_record_url(paper, d, known, html=False) if own else urls.record_url(paper, as_of.text, known, html=False),
                 ", ".join(f"{n} {kind}" for kind, n in sorted(kinds[d].items())),
                 urls.day_changes_url(paper, d, known) if own else None)
                for d, own in self.change_days(paper, seen, as_of)]
        ordinals = {d: date.fromisoformat(d).toordinal() for d, *_ in days}  # a dot a change day, placed in time
        first, last = min(ordinals.values(), default=0), max(ordinals.values(), default=0)
        timeline = [(d, round(20 + 560 * ((n - first) / (last - first) if last > first else 0.5), 1))
                    for d, n in ordinals.items()]
        # The latest events only: every one is in history.json, and a page of thousands of rows is read by no one
        # (it was most of the site's HTML bytes).
        history = views.history(seen)
        page = render("paper.html", record=record, snapshot=snapshot, versions=list(versions.values()),
                      latest=history[::-1][:LATEST], events=len(history), days=days, paper=paper, timeline=timeline,
                      record_url=urls.record_url(paper, as_of.text, known),
                      json_url=urls.record_url(paper, as_of.text, known, html=False),
                      integrity_url=urls.integrity_url(paper, as_of.text, known),
                      history_url=urls.history_url(paper, as_of.text, known))
        return Body(page, HTML, SHORT)

    # the log ----------------------------------------------------------------------------------------------
    def checkpoint(self, size: int | None = None) -> Body:
        if self.signer is None:
            raise NotFoundError("this ledger is served without a signing key: no checkpoint (start it with --key)")
        if size is None:
            size = self.store.head()[0]
        if size not in self._checkpoints:
            note, size = signed_checkpoint(self.store, self.signer, size)
            self._checkpoints = {size: note}  # the latest only
        return Body(self._checkpoints[size].encode(), TEXT, CHECKPOINT)

    def tile(self, tile: Tile) -> Body:
        data, _ = read_tile(self.store, tile)
        return Body(data, OCTETS, IMMUTABLE if tile.full else SHORT)

    # the rest ---------------------------------------------------------------------------------------------
    def evidence_html(self) -> Body:
        verifier = self.signer.verifier if self.signer else None
        return Body(render("evidence.html", verifier=str(verifier) if verifier else None,
                           origin=verifier.name if verifier else None,
                           key_id=verifier.id.hex() if verifier else None,
                           public_key=base64.b64encode(verifier.public).decode() if verifier else None),
                    HTML, ASSET)

    def index_html(self, as_of: When) -> Body:
        """The home page: the papers with the latest events (read from the log's end: its cost does not grow
        with the ledger), each with its title, events and last change as of `as_of`, and a box to find any."""
        with self.store.reading() as cursor:
            recent = cursor.recent_papers(LISTED, RECENT_EVENTS)
            listed = []
            for paper in sorted(cursor.shown_papers(recent, as_of.key), key=recent.index):
                snapshot, events, last = cursor.paper_summary(paper, as_of.key)
                try:
                    title = orjson.loads(snapshot).get("title") if snapshot else None
                except (orjson.JSONDecodeError, AttributeError):
                    title = None
                listed.append({"paper": paper, "title": title if isinstance(title, str) and title else None,
                               "events": events, "last": (last or "")[:10],
                               "record": urls.record_url(paper, as_of.text if as_of.given else None),
                               "page": urls.page_url(paper, as_of.text if as_of.given else None)})
        return Body(render("index.html", signed=self.signer is not None, papers=listed, listed=LISTED,
                           as_of=as_of.text), HTML, SHORT)

    @staticmethod
    def not_found_html() -> Body:
        """What a static host serves for a path it does not have (`404.html`)."""
        return Body(error_html(404, "there is no page at this address on this site"), HTML, ASSET)

    @staticmethod
    def asset(name: str) -> Body:
        if name not in ASSETS:
            raise NotFoundError(f"no asset {name[:40]!r}")
        return Body(asset_bytes(name), ASSETS[name], ASSET)


def error_html(status: int, reason: str) -> bytes:
    return render("error.html", status=status, reason=reason)


def error_json(status: int, reason: str) -> bytes:
    return canonical({"error": reason, "status": status}) + b"\n"

