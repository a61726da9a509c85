"""arXiv ids: the one parser of a paper id for every interface (the CLI's options, the site's paths).

An id is what a person types: new style `2407.20018`, old style `hep-th/9901001`, each with or without an
`arXiv:` prefix (any case) and a version (`v2`). `parse_arxiv_id` reads all of these into the paper id a
record is kept under and the version (records are per paper, so a version is only reported back). `paper_id`
accepts the one spelling a URL or a file path may hold: no prefix, no version; it is also the rule at the door
for the id of every paper the ledger keeps records for (import checks it), so a stored paper id is a safe file
name and link. Pure: it never reads the store.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ledger.core.errors import InputError
from ledger.core.redact import quoted

# New-style ids: YYMM.NNNN up to 1412, YYMM.NNNNN from 1501 (the month is not checked: synthetic ledgers use
# any four digits); old-style ones (until 0703): archive[.SC]/YYMMNNN. Versions count from 1.
_NEW_STYLE = re.compile(r"([0-9]{4})\.([0-9]{4,5})", re.ASCII)
_OLD_STYLE = re.compile(r"[a-z]+(?:-[a-z]+)*(?:\.[A-Z]{2})?/[0-9]{7}", re.ASCII)
_VERSION = re.compile(r"v([1-9][0-9]*)\Z", re.ASCII)
PREFIX = "arXiv:"
# The shapes a person means as a paper id, well formed or not: a prefix, digits-dot-digits, archive/digits.
_SHAPED = re.compile(r"arxiv:.*|[0-9]+\.[0-9]+(?:v[0-9]*)?|[a-z]+(?:-[a-z]+)*(?:\.[a-z]+)?/[0-9]+(?:v[0-9]*)?",
                     re.ASCII | re.IGNORECASE | re.DOTALL)
EXAMPLE = "expected e.g. 2407.20018 or hep-th/9901001"


class ArxivId(NamedTuple):
    """A paper id as typed: `paper`, the id its record is kept under, and `version` (None when none given)."""

    paper: str
    version: int | None


def parse_arxiv_id(text: str, name: str | None = None) -> ArxivId:
    """The paper and version `text` names: `2407.20018`, `arXiv:2407.20018`, `2407.20018v2`, `hep-th/9901001v1`;
    `name` is the option or argument it was read from, named in a refusal.

    Raises: InputError naming the text (and `name`), with an example of a good id.
    """
    if not isinstance(text, str):
        raise InputError(_refusal(text, name))
    paper = text[len(PREFIX):] if text[:len(PREFIX)].lower() == PREFIX.lower() else text
    version = _VERSION.search(paper)
    if version is not None:
        paper = paper[:version.start()]
    if not _well_formed(paper):
        raise InputError(_refusal(text, name))
    return ArxivId(paper, int(version.group(1)) if version is not None else None)


def paper_id(text: str) -> str:
    """`text` when it is a paper id in the one spelling a URL or a file path may hold (no prefix, no version).

    Raises: InputError naming the text, with an example of a good id.
    """
    if not (isinstance(text, str) and _well_formed(text)):
        raise InputError(_refusal(text))
    return text


def is_paper_id(text: object) -> bool:
    """Whether `text` is a paper id in the one spelling `paper_id` accepts: what may become a link or a path
    (a citation's ids are data, kept as published, and linked only when this holds)."""
    return isinstance(text, str) and _well_formed(text)


def skipped_paper(paper: str) -> str:
    """What a command that writes a file or a link per paper says of a paper whose id it passes over: one
    appended before import checked ids (`is_paper_id`), which no command turns into a path."""
    return (f"skipped the paper {quoted(paper)}: not an arXiv id, so never a file name or a link (appended before import "
            "checked ids)")


# A month of papers, as arXiv lists them: `2407` (new style) or `hep-th/9901` (an old-style archive's month).
_MONTH = re.compile(r"[0-9]{4}|[a-z]+(?:-[a-z]+)*(?:\.[A-Z]{2})?/[0-9]{4}", re.ASCII)


def month_of(paper: str) -> str:
    """The month a well-formed paper id is listed under: its first four digits, after its archive if old style."""
    archive, _, number = paper.rpartition("/")
    return f"{archive}/{number[:4]}" if archive else paper[:4]


def month_id(text: str) -> str:
    """`text` when it is a month of papers (`2407`, `hep-th/9901`).

    Raises: InputError naming the text, with an example of a good month.
    """
    if not (isinstance(text, str) and _MONTH.fullmatch(text)):
        shown = text if isinstance(text, str) and len(text) <= 80 else f"{str(text)[:77]}..."
        raise InputError(f"not a month of arXiv papers: {shown!r} (expected e.g. 2407 or hep-th/9901)")
    return text


def month_bounds(month: str) -> tuple[str, str]:
    """(low, high): the paper ids of `month` are exactly those sorting between them (as text, both excluded).
    "/" sorts just after "." and ":" just after the digits."""
    return (month, month + ("/" if "/" not in month else ":"))


def looks_like_paper_id(text: str) -> bool:
    """Whether `text` has the shape of a paper id (a prefix, digits-dot-digits, archive/digits), well formed or
    not: what an argument that may also be another kind of id (an observation's) is parsed as."""
    return _SHAPED.fullmatch(text) is not None


def _well_formed(paper: str) -> bool:
    new = _NEW_STYLE.fullmatch(paper)
    if new is not None:
        return len(new.group(2)) == (5 if new.group(1) >= "1501" else 4)
    return _OLD_STYLE.fullmatch(paper) is not None


def _refusal(text: object, name: str | None = None) -> str:
    shown = text if isinstance(text, str) and len(text) <= 80 else f"{str(text)[:77]}..."
    if name is None:
        return f"not an arXiv id: {shown!r} ({EXAMPLE})"
    # As typed after the option, unless quotes are needed to see it (nothing, a space, a control character).
    plain = shown and shown.isprintable() and not any(c.isspace() for c in shown)
    return f"{name} {shown if plain else repr(shown)}: not an arXiv id ({EXAMPLE})"
