"""The site's URLs: the URL of every page a page links to, formatted from the patterns of `ledger.model.paths`
(the ones the route table `web.routes` serves), and the bare date a path may hold.

A paper id reaches a path only through `ledger.model.arxiv.paper_id`, which accepts one spelling per paper
(no prefix, no version): nothing else, in particular no `..`, no empty segment, no other character. Every
function here that takes a paper checks it so (cheap, and a last line: callers pass only checked ids), raising
InputError rather than building a link from any other text.
"""

from __future__ import annotations

import re
from urllib.parse import quote

from ledger.core.errors import InputError
from ledger.model.arxiv import paper_id
from ledger.model.paths import DAY_CHANGES, DAY_RECORD, DIFF, HISTORY, INTEGRITY, MONTH, PAPER, RECORD, fill

_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", re.ASCII)


def day(text: str) -> str:
    """A bare date `YYYY-MM-DD` as it may appear in a path (its validity as a date is `parse_when`'s)."""
    if not _DAY.fullmatch(text):
        raise InputError(f"not a date: {text[:40]!r} (expected YYYY-MM-DD)")
    return text


def _query(**params: str | None) -> str:
    given = [f"{name}={quote(value, safe=':')}" for name, value in params.items() if value is not None]
    return "?" + "&".join(given) if given else ""


def month_url(month: str, as_of: str | None = None) -> str:
    return fill(MONTH, month=month) + _query(as_of=as_of)


def paper_url(paper: str) -> str:
    return fill(PAPER, paper=paper_id(paper))


def record_url(paper: str, as_of: str | None = None, known_at: str | None = None, html: bool = True) -> str:
    return fill(RECORD, json=not html, paper=paper_id(paper)) + _query(as_of=as_of, known_at=known_at)


def day_record_url(paper: str, on: str, known_at: str | None = None, html: bool = True) -> str:
    return fill(DAY_RECORD, json=not html, paper=paper_id(paper), day=on) + _query(known_at=known_at)


def day_changes_url(paper: str, on: str, known_at: str | None = None) -> str:
    return fill(DAY_CHANGES, paper=paper_id(paper), day=on) + _query(known_at=known_at)


def diff_url(paper: str, start: str, end: str, known_at: str | None = None, html: bool = True) -> str:
    return fill(DIFF, json=not html, paper=paper_id(paper)) + _query(**{"from": start, "to": end, "known_at": known_at})


def integrity_url(paper: str, as_of: str | None = None, known_at: str | None = None, html: bool = True) -> str:
    return fill(INTEGRITY, json=not html, paper=paper_id(paper)) + _query(as_of=as_of, known_at=known_at)


def history_url(paper: str, as_of: str | None = None, known_at: str | None = None) -> str:
    return fill(HISTORY, json=True, paper=paper_id(paper)) + _query(as_of=as_of, known_at=known_at)


def page_url(paper: str, as_of: str | None = None, known_at: str | None = None) -> str:
    return paper_url(paper) + _query(as_of=as_of, known_at=known_at)
