"""Answers kept: a page already rendered for the same question is sent again without rebuilding it, for as long
as what its bytes depend on has not changed. A route names what that is (`Route.depends`): the paper's facts
(their count and largest seq, which change exactly when a fact of the paper is appended, by this process or
another), which of the papers its cards name have a record (HTML only: a card links those), the log's size (a checkpoint, the proofs of an integrity page), or nothing (a tile by its path). The
check is one small read of the store per request; the cache holds at most `BUDGET` bytes, least recently
checked first out. Where the store has a commit counter (`Backend.watch`: SQLite's data version), a body
checked at one value of it is sent again while the value is the same, without reading the store at all: no
commit since means nothing it depends on changed. Changed in the store's thread only (`web.store_thread.StoreThread`), so
it needs no lock; `knows` and `ready`, dict lookups that change nothing, are asked from the event loop.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace

from ledger.web.routes import Question, Render, Route
from ledger.web.site import Body, Site

BUDGET = 64 * 1024 * 1024  # bytes of bodies kept per process: memory stays flat however many papers are asked
URLS = 65_536  # URLs remembered for `fresh`, the oldest forgotten first


class Kept:
    """A body, the state of what it depends on when it was rendered, the commit counter's value when that
    state was last found current (None: not yet; set in the store's thread), and what the server sends with it
    (made once, by `web.sending` in the event loop)."""

    __slots__ = ("state", "body", "stamp", "sent")

    def __init__(self, state: tuple, body: Body):
        self.state, self.body, self.stamp, self.sent = state, body, None, None


class Answers:
    """Rendered bodies by question, each with the state of what it depends on when it was rendered."""

    def __init__(self, budget: int = BUDGET):
        self.budget, self.held = budget, 0
        self.kept: OrderedDict[tuple, Kept] = OrderedDict()
        self.renders = 0  # bodies rendered here (not answered from the cache): for tests, benchmarks, /metrics
        self.hits = 0  # bodies sent again from here after routing (`fast` counts those sent before)
        self.misses = 0  # bodies of a route that keeps them rendered because none was kept, or it was stale
        self.fast = 0  # answers sent before any routing (counted by `web.sending`, in the event loop)
        # (path, raw query) -> what the full route answered for it: `web.sending.answer_kept` answers it again
        # from here, before routing, while the body kept is still fresh.
        self.urls: OrderedDict[tuple[str, bytes], tuple[Route, tuple]] = OrderedDict()

    def answer(self, site: Site, route: Route, form: str, render: Render, question: Question,
               url: tuple[str, bytes] | None = None) -> Body:
        """The body `render` gives for `question`, from the cache when nothing it depends on changed since;
        `url` (path, raw query) of a GET is remembered for `fresh`."""
        key = _key(route, form, question)
        if key is None:
            return self._render(site, render, question)
        if url is not None:
            self.remember(url, route, form, question)
        state = _state(site, route, question, form)
        found = self.kept.get(key)
        if found is not None and found.state == state:
            self.kept.move_to_end(key)
            self.hits += 1
            return found.body
        self.misses += 1
        body = self._render(site, render, question)
        if found is not None:
            self.held -= len(found.body.content)
        self.kept[key] = Kept(state, body)
        self.held += len(body.content)
        while self.held > self.budget and self.kept:
            _, dropped = self.kept.popitem(last=False)
            self.held -= len(dropped.body.content)
        return body

    def remember(self, url: tuple[str, bytes], route: Route, form: str, question: Question) -> None:
        """That the request for `url` was the question `question` of `route` (its form), already answered."""
        key = _key(route, form, question)
        if key is None or route.encode is not None:
            return
        # Only what names the answer: not the facts and record the render read.
        self.urls[url] = (route, (key, replace(question, facts=None, record=None, found=None)))
        self.urls.move_to_end(url)
        while len(self.urls) > URLS:
            self.urls.popitem(last=False)

    def knows(self, url: tuple[str, bytes]) -> bool:
        return url in self.urls

    def ready(self, url: tuple[str, bytes], stamp: int | None) -> Kept | None:
        """What is kept for `url` when it was found current at commit counter `stamp` (read now, so no commit
        came since); None otherwise (ask `fresh`). Reads only: asked from the event loop."""
        found = self.urls.get(url) if stamp is not None else None
        kept = self.kept.get(found[1][0]) if found is not None else None
        return kept if kept is not None and kept.stamp == stamp else None

    def fresh(self, site: Site, url: tuple[str, bytes], stamp: int | None = None) -> Kept | None:
        """What is kept for `url` when nothing it depends on changed since; None otherwise (the full route
        answers then, and renders). `stamp` is the commit counter read before this check began: while it
        reads the same, `ready` answers without a check."""
        found = self.urls.get(url)
        if found is None:
            return None
        route, (key, question) = found
        kept = self.kept.get(key)
        if kept is None or kept.state != _state(site, route, question, key[1]):
            return None
        self.kept.move_to_end(key)
        kept.stamp = stamp
        return kept

    def unstamp(self) -> None:
        """Forget every stamp: the commit counter they were read from is gone (another counts anew)."""
        for kept in self.kept.values():
            kept.stamp = None

    def _render(self, site: Site, render: Render, question: Question) -> Body:
        self.renders += 1
        return render(site, question)


def _key(route: Route, form: str, q: Question) -> tuple | None:
    """What names an answer; None for one that is not kept (no `depends`, or as of the request instant)."""
    if route.depends is None or (q.as_of is not None and not q.as_of.given):
        return None
    times = tuple(t.key if t is not None else None for t in (q.as_of, q.known_at, q.start, q.end))
    return (route.name, form, q.paper, q.day, q.name, q.month, q.tile.path() if q.tile else None, q.size, *times)


def _state(site: Site, route: Route, q: Question, form: str) -> tuple:
    """The state of what the route's bytes in `form` depend on, read now (a few small queries each)."""
    return tuple(site.store.paper_version(q.paper) if part == "paper" else
                 (site.linked(q.paper, q.as_of) if form == "html" else None) if part == "links" else
                 site.store.head()[0] for part in route.depends)
