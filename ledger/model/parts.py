"""What a payload's parts say, as plain values: the times a fact was observed at, the papers a citation
reaches, and the labels the history and the pages give a cited work, a resolution or a change. Pure
functions of dicts and strings, shared by the kinds table and the projections.
"""

from __future__ import annotations

from typing import Any, Iterable

from ledger.core.times import instant_key

UNTITLED = "unresolved cited work"  # seed 003: a cited work with no title


def latest(times: Iterable[str]) -> str | None:
    """The latest of several timestamp strings, returned as written; None when there are none.
    Raises TimeError for a string that is not a timestamp."""
    return max(times, key=instant_key, default=None)


def observed_times(value: Any) -> list[str]:
    """Every `*_observed_at` / `observed_at` string inside a value, in document order (paper dates are not
    observations)."""
    found: list[str] = []
    _collect_observed(value, found)
    return found


def _collect_observed(value: Any, found: list[str]) -> None:
    # Appends to one list instead of nesting generators: a citation's walk was a fifth of importing it.
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, str):
                if key == "observed_at" or key.endswith("_observed_at"):
                    found.append(item)
            elif isinstance(item, (dict, list)):
                _collect_observed(item, found)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)):
                _collect_observed(item, found)


def citation_papers(citation: dict) -> tuple[str, ...]:
    """The papers whose records a citation appears in: the citing paper, then the cited one if any.
    Raises KeyError only for a citation `published.check_citation` would refuse."""
    papers = [citation["citing_paper"]["arxiv_id"]]
    cited = citation.get("cited_paper")
    if cited is not None and cited["arxiv_id"] not in papers:
        papers.append(cited["arxiv_id"])
    return tuple(papers)


def spaced(name: str) -> str:
    """A vocabulary name as the pages write it: 'verified_fuzzy' -> 'verified fuzzy'."""
    return name.replace("_", " ")


def cited_label(citation: dict) -> str | None:
    """The cited work as a reader knows it: the Pith paper's title, else the reference's title, else None."""
    for block in (citation.get("cited_paper"), citation.get("cited_work")):
        if block and block.get("title"):
            return block["title"]
    return None


def resolution_label(resolution: dict) -> str:
    """A resolution in a history or diff line: its status, and its resolver source if any."""
    return resolution["status"] + (f" ({resolution['resolver_source']})" if resolution.get("resolver_source") else "")


def changed_keys(old: dict, new: dict) -> str:
    """The keys whose values differ between two objects, sorted and comma-separated ('nothing' if none)."""
    return ", ".join(sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))) or "nothing"


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """'1 event', '2 events': a count and its noun, plural when it is not one (an "s", or `plural` if given).

    Raises: nothing.
    """
    return f"{count} {noun}" if count == 1 else f"{count} {plural or noun + 's'}"
