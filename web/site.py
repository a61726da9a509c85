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
import shlex
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from functools import cache
from importlib.resources import files
from itertools import takewhile

import orjson
from jinja2 import Environment, PackageLoader, StrictUndefined

from ledger.core.canonical import canonical
from ledger.core.errors import InputError, NotFoundError
from ledger.core.times import When, when
from ledger.log.signed_notes import Signer
from ledger.log.tiles import Tile
from ledger.model.arxiv import is_paper_id, month_bounds, month_id
from ledger.model.events import PAPER_SNAPSHOT, Fact
from ledger.model.parts import counted, lane_counts
from ledger.projections import history as views
from ledger.projections.text import counted_lines
from ledger.services.proofs import checkpoint as signed_checkpoint
from ledger.services.proofs import evidence_bundle, witnessed_by
from ledger.services.replay import known_then, record_as_of
from ledger.services.tilestore import read_tile
from ledger.storage.cosigned_checkpoint import latest_cosigned
from ledger.storage.store import Store
from ledger.web import urls
from ledger.web.views import BEGINNING, effective_days, finalize, first_record, record_view, snapshot_rows, time_nav

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




@cache
def _templates() -> Environment:
    # finalize: every printed expression shows its hidden characters as code points (`views.shown`).
    env = Environment(loader=PackageLoader("ledger.web", "templates"), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True, finalize=finalize)
    env.globals.update(csp=CSP, urls=urls)
    env.filters["counted"] = counted  # `{{ n|counted("paper") }}`: the one singular/plural rule, as in the CLI
    env.filters["lane_counts"] = lane_counts  # a coverage lane's counts, as `ledger diff` words them
    return env


def render(template: str, **context) -> bytes:
    return _templates().get_template(template).render(**context).encode()


@cache
def asset_bytes(name: str) -> bytes:
    return files("ledger.web").joinpath("assets", name).read_bytes()


# -- the site ------------------------------------------------------------------------------------------
class Site:
    """The pages of one ledger. Not thread-safe (a Store is not): `web.store_thread` calls it from one thread."""

    def __init__(self, store: Store, signer: Signer | None = None):
        self.store = store
        self.signer = signer
        self._checkpoints: dict[int, str] = {}  # by tree size: a note is signed once per size
        self._cosigned: tuple[str | None, tuple[str, int] | None] = (None, None)  # the note last read, checked

    # records ------------------------------------------------------------------------------------------
    def facts(self, paper: str, known_at: When | None) -> list[Fact]:
        return self.store.paper_facts(paper, _known(known_at))

    def record(self, paper: str, as_of: When, known_at: When | None, facts: list[Fact] | None = None) -> dict:
        return record_as_of(self.store, paper, as_of, known_at, facts)

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
        view = record_view(record, self.linked(paper, as_of))
        page = render("record.html", record=record, view=view, json_url=json_url,
                      time=time_nav(paper, facts, as_of, day, known),
                      # a change day's page is one of many copies of the record: its cards in brief
                      brief=day is not None, current_url=urls.record_url(paper, None, known),
                      integrity_url=urls.integrity_url(paper, as_of.text, known),
                      page_url=urls.page_url(paper, as_of.text, known))
        return Body(page, HTML, SHORT, f'W/"{record["context_digest"]}"')

    def linked(self, paper: str, as_of: When) -> frozenset[str]:
        """The other papers the paper's citations name that have a record here as of `as_of`: those its cards
        link to locally. It changes when a fact of the paper, or a snapshot of one of them, is
        appended."""
        with self.store.reading() as cursor:
            return frozenset(cursor.shown_papers(cursor.linked_papers(paper), as_of.key))

    # integrity ------------------------------------------------------------------------------------------
    def integrity(self, paper: str, as_of: When, known_at: When | None = None, record: dict | None = None) -> dict:
        """The record's digests, a signed checkpoint, the paper index proof (how many events of the paper the
        signed index counts) and the compact evidence bundle holding every one of them (with a key; the bundle
        carries its own rebuild of the record and the same index proof). All at the paper's own tree size, the
        log up to its last event, so appends to other papers leave these bytes as they are; or, when the paper
        has no event past it, at the latest cosigned tree, whose cosigned checkpoint the bundle then carries."""
        known = known_at.text if known_at else None
        if self.signer is not None:
            own = self.store.paper_version(paper)[1] or None  # none: no events, and the bundle says not found
            bundle = evidence_bundle(self.store, paper, as_of, self.signer, _known(known_at), own, compact=True,
                                     witnessed=self.cosigned())
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
        # The recipe names the key by its text, quoted for a shell: a reader of the page has no .vkey file.
        page = render("integrity.html", found=found, tree_size=size, verifier_arg=shlex.quote(found["verifier_key"] or ""),
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
        return Body(canonical(views.history(facts, paper)) + b"\n", JSON, SHORT)

    def diff_json(self, paper: str, start: When, end: When, known_at: When | None = None) -> Body:
        """What `ledger diff <id> --from --to [--known-at] --json` prints."""
        try:
            found = views.paper_diff(paper, self.facts(paper, known_at), start, end)
        except NotFoundError as exc:
            raise known_then(exc, known_at) from None
        return Body(canonical(found) + b"\n", JSON, SHORT)

    def diff_html(self, paper: str, start: When, end: When, known_at: When | None = None,
                  facts: list[Fact] | None = None, day: str | None = None) -> Body:
        """What changed in the record from `start` to `end`, as `ledger diff` says it; for a change day, from
        the end of the change day before it (the record's beginning for the first)."""
        facts = self.facts(paper, known_at) if facts is None else facts
        if day is not None:
            earlier = [d for d in effective_days(facts) if d < day]
            start = when("from", earlier[-1]) if earlier else when("from", BEGINNING)
        try:
            found = views.paper_diff(paper, facts, start, end)
        except NotFoundError as exc:
            raise known_then(exc, known_at) from None
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
        first = first_record(paper, facts)
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
        kinds: dict[str, Counter] = {}
        for fact in seen:
            kinds.setdefault(fact.effective_key[:10], Counter())[fact.kind] += 1
        since = first_record(paper, seen)
        days = []
        for d, own in self.change_days(paper, seen, as_of):
            summary = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds[d].items()))
            if since is None or When.parse(d).key < since:  # before the first snapshot: no record (as `replay` says)
                days.append((d, None, None, summary, None))
            elif own:
                days.append((d, urls.day_record_url(paper, d, known), urls.day_record_url(paper, d, known, html=False),
                             summary, urls.day_changes_url(paper, d, known)))
            else:  # the last change day, not over by `as_of`: the record as of then
                days.append((d, urls.record_url(paper, as_of.text, known),
                             urls.record_url(paper, as_of.text, known, html=False), summary, None))
        ordinals = {d: date.fromisoformat(d).toordinal() for d, *_ in days}  # a dot a change day, placed in time
        first, last = min(ordinals.values(), default=0), max(ordinals.values(), default=0)
        timeline = [(d, round(20 + 560 * ((n - first) / (last - first) if last > first else 0.5), 1))
                    for d, n in ordinals.items()]
        # The latest events only: every one is in history.json, and a page of thousands of rows is read by no one
        # (it was most of the site's HTML bytes).
        history = views.history(seen, paper)
        page = render("paper.html", record=record, snapshot=snapshot_rows(record["paper"]), versions=list(versions.values()),
                      latest=history[::-1][:LATEST], events=len(history), days=days, paper=paper, timeline=timeline,
                      first_day=since[:10] if since else None,
                      record_url=urls.record_url(paper, as_of.text, known),
                      json_url=urls.record_url(paper, as_of.text, known, html=False),
                      integrity_url=urls.integrity_url(paper, as_of.text, known),
                      history_url=urls.history_url(paper, as_of.text, known))
        return Body(page, HTML, SHORT)

    # the log ----------------------------------------------------------------------------------------------
    def checkpoint(self, size: int | None = None) -> Body:
        """The latest cosigned checkpoint the ledger holds (`ledger checkpoint --witness`), asked with no size
        or with its own; else a checkpoint signed now, of the size asked (default: the log's size now)."""
        if self.signer is None:
            raise NotFoundError("this ledger is served without a signing key: no checkpoint (start it with --key)")
        held = self.cosigned()
        if held is not None and size in (None, held[1]):
            return Body(held[0].encode(), TEXT, CHECKPOINT)
        if size is None:
            size = self.store.head()[0]
        if size not in self._checkpoints:
            note, size = signed_checkpoint(self.store, self.signer, size)
            self._checkpoints = {size: note}  # the latest only
        return Body(self._checkpoints[size].encode(), TEXT, CHECKPOINT)

    def paper_index_note(self, size: int | None) -> Body:
        """The paper index note of tree `size` (`ledger checkpoint --paper-index` at that size), which an
        auditing witness compares with the index it re-computes before it cosigns that tree."""
        if self.signer is None:
            raise NotFoundError("this ledger is served without a signing key: no paper index note (start it with --key)")
        if size is None or not 0 <= size <= self.store.head()[0]:
            raise NotFoundError(f"no tree of size {size} in this log: no paper index note for it")
        return Body(signed_checkpoint(self.store, self.signer, size, paper_index=True)[0].encode(), TEXT, CHECKPOINT)

    def cosigned(self) -> tuple[str, int] | None:
        """The cosigned checkpoint the ledger holds and its size, when this site's key signed it. Asked for
        every integrity answer: its signature is checked once per note the ledger holds, not once a paper."""
        if self.signer is None:
            return None
        note = latest_cosigned(self.store)
        if note is not None and note != self._cosigned[0]:
            self._cosigned = (note, witnessed_by(note, self.signer.verifier))
        return None if note is None else self._cosigned[1]

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
        """The home page: the papers with the latest events (read from the log's end), each with its title,
        events and last change as of `as_of`, a box to find any, and every month's list of papers."""
        given = as_of.text if as_of.given else None
        with self.store.reading() as cursor:
            recent = cursor.recent_papers(LISTED, RECENT_EVENTS)
            listed = _listed(cursor, sorted(cursor.shown_papers(recent, as_of.key), key=recent.index), as_of)
            months = [(m, urls.month_url(m, given)) for m in cursor.paper_months() if _is_month(m)]
        return Body(render("index.html", signed=self.signer is not None, papers=listed, listed=LISTED,
                           as_of=as_of.text, months=months), HTML, SHORT)

    def month_html(self, month: str, as_of: When) -> Body:
        """Every paper of one month (`2407`, `hep-th/9901`) with a record as of `as_of`, in id order, as the
        home page lists its papers. Raises NotFoundError for a month with none."""
        low, high = month_bounds(month)
        papers = list(takewhile(lambda paper: paper < high, self.store.papers(as_of.key, after=low)))
        if not papers:
            raise NotFoundError(f"no paper of {month} has a record as of {as_of.text}")
        with self.store.reading() as cursor:
            listed = _listed(cursor, papers, as_of)
        return Body(render("month.html", month=month, papers=listed, as_of=as_of.text), HTML, SHORT)

    @staticmethod
    def not_found_html() -> Body:
        """What a static host serves for a path it does not have (`404.html`)."""
        return Body(error_html(404, "there is no page at this address on this site"), HTML, ASSET)

    @staticmethod
    def asset(name: str) -> Body:
        if name not in ASSETS:
            raise NotFoundError(f"no asset {name[:40]!r}")
        return Body(asset_bytes(name), ASSETS[name], ASSET)


def _listed(cursor, papers: list[str], as_of: When) -> list[dict]:
    """A row of a list of papers for each of `papers`: its title, id, events and last change as of `as_of`."""
    given, rows = (as_of.text if as_of.given else None), []
    for paper in filter(is_paper_id, papers):  # an id appended before import checked ids is never a link
        snapshot, events, last = cursor.paper_summary(paper, as_of.key)
        try:
            title = orjson.loads(snapshot).get("title") if snapshot else None
        except (orjson.JSONDecodeError, AttributeError):
            title = None
        rows.append({"paper": paper, "title": title if isinstance(title, str) and title else None,
                     "events": events, "last": (last or "")[:10],
                     "record": urls.record_url(paper, given), "page": urls.page_url(paper, given)})
    return rows


def _is_month(text: str) -> bool:
    try:
        return month_id(text) == text
    except InputError:
        return False


def error_html(status: int, reason: str) -> bytes:
    return render("error.html", status=status, reason=reason)


def error_json(status: int, reason: str) -> bytes:
    return canonical({"error": reason, "status": status}) + b"\n"

