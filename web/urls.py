"""The site's URLs: which arXiv ids may appear in a path, and the URL of every page a page links to,
formatted from the patterns of `ledger.model.paths` (the ones the route table `web.routes` serves).

An id becomes part of a URL and, under `ledger publish`, of a file path, so only well-formed arXiv ids are
accepted (new style `2407.20018`, old style `hep-th/9901001`): nothing else, in particular no `..`, no
empty segment, no other character, ever reaches a path.
"""

from __future__ import annotations

import re
from urllib.parse import quote

from ledger.core.errors import InputError
from ledger.model.paths import DAY_RECORD, HISTORY, INTEGRITY, PAPER, RECORD, fill

# New-style ids: YYMM.NNNN up to 1412, YYMM.NNNNN from 1501 (the month is not checked: synthetic ledgers use
# any four digits); old-style ones (until 0703): archive[.SC]/YYMMNNN.
_NEW_STYLE = re.compile(r"([0-9]{4})\.([0-9]{4,5})", re.ASCII)
_OLD_STYLE = re.compile(r"[a-z]+(?:-[a-z]+)*(?:\.[A-Z]{2})?/[0-9]{7}", re.ASCII)
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", re.ASCII)


def paper_id(text: str) -> str:
    """`text` when it is a well-formed arXiv id (without version); InputError otherwise."""
    new = _NEW_STYLE.fullmatch(text) if isinstance(text, str) else None
    if new is not None:
        well_formed = len(new.group(2)) == (5 if new.group(1) >= "1501" else 4)
    else:
        well_formed = isinstance(text, str) and _OLD_STYLE.fullmatch(text) is not None
    if not well_formed:
        shown = text if isinstance(text, str) and len(text) <= 80 else f"{str(text)[:77]}..."
        raise InputError(f"not an arXiv id: {shown!r} (expected e.g. 2407.20018 or hep-th/9901001)")
    return text


def day(text: str) -> str:
    """A bare date `YYYY-MM-DD` as it may appear in a path (its validity as a date is `parse_when`'s)."""
    if not _DAY.fullmatch(text):
        raise InputError(f"not a date: {text[:40]!r} (expected YYYY-MM-DD)")
    return text


def _query(**params: str | None) -> str:
    given = [f"{name}={quote(value, safe=':')}" for name, value in params.items() if value is not None]
    return "?" + "&".join(given) if given else ""


def paper_url(paper: str) -> str:
    return fill(PAPER, paper=paper)


def record_url(paper: str, as_of: str | None = None, known_at: str | None = None, html: bool = True) -> str:
    return fill(RECORD, json=not html, paper=paper) + _query(as_of=as_of, known_at=known_at)


def day_record_url(paper: str, on: str, known_at: str | None = None, html: bool = True) -> str:
    return fill(DAY_RECORD, json=not html, paper=paper, day=on) + _query(known_at=known_at)


def integrity_url(paper: str, as_of: str | None = None, known_at: str | None = None, html: bool = True) -> str:
    return fill(INTEGRITY, json=not html, paper=paper) + _query(as_of=as_of, known_at=known_at)


def history_url(paper: str, as_of: str | None = None, known_at: str | None = None) -> str:
    return fill(HISTORY, json=True, paper=paper) + _query(as_of=as_of, known_at=known_at)


def page_url(paper: str, as_of: str | None = None, known_at: str | None = None) -> str:
    return paper_url(paper) + _query(as_of=as_of, known_at=known_at)
