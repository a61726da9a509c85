"""What a payload's parts say, as plain values: the times a fact was observed at, the papers a citation
reaches, and the labels the history and the pages give a cited work, an observation's other paper, a
resolution or a change. Pure functions of dicts and strings, shared by the kinds table and the projections.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

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


def citation_papers(citation: dict[str, Any]) -> tuple[str, ...]:
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


def cited_label(citation: dict[str, Any]) -> str | None:
    """The cited work as a reader knows it: the Pith paper's title, else the reference's title, else None."""
    for block in (citation.get("cited_paper"), citation.get("cited_work")):
        if block and block.get("title"):
            return str(block["title"])
    return None


def resolution_label(resolution: dict[str, Any]) -> str:
    """A resolution in a history or diff line: its status, and its resolver source if any."""
    return str(resolution["status"]) + (f" ({resolution['resolver_source']})" if resolution.get("resolver_source") else "")


def in_quotes(text: str) -> str:
    """Text from outside on one line of the CLI: in double quotes, a quote or backslash escaped, and every
    character that is not printable written as its escape (\\t, \\x1b, \\u2028), so a title can break
    neither a line nor a tab-separated column, nor send a terminal a control sequence. Raises: nothing."""
    return '"' + one_line(text.replace("\\", "\\\\").replace('"', '\\"')) + '"'


def one_line(text: str) -> str:
    """`text` with every character that is not printable written as its escape (\\t, \\x1b, \\u2028): one
    line, one tab-separated column, no control sequence. Raises: nothing."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def other_paper(citation: dict[str, Any], direction: str) -> tuple[str | None, str | None]:
    """The other paper of an observation seen from `direction`, as (id, title): inbound, the citing paper
    ('arXiv:<id>'); outbound, the cited work ('arXiv:<id>' of the Pith paper or the reference, else
    'doi:<doi>'). Either is None when the citation does not hold it (seed 003: an untitled cited work)."""
    if direction == "inbound":
        citing = citation["citing_paper"]
        return f"arXiv:{citing['arxiv_id']}", citing.get("title") or None
    cited, work = citation.get("cited_paper") or {}, citation.get("cited_work") or {}
    arxiv, doi = cited.get("arxiv_id") or work.get("arxiv_id"), work.get("doi")
    return (f"arXiv:{arxiv}" if arxiv else f"doi:{doi}" if doi else None), cited_label(citation)


def _named(other: str | None, title: str | None) -> str:
    return " ".join(part for part in (other, title and in_quotes(title)) if part) or "an " + UNTITLED


def other_words(direction: str, other: str | None, title: str | None) -> str:
    """An observation named on one line by its other paper (`other_paper`): 'cited by arXiv:2502.08182
    "Memory Offloading…"' (inbound), 'cites doi:10.1/x "Title"' (outbound); the title `in_quotes`."""
    return ("cited by " if direction == "inbound" else "cites ") + _named(other, title)


def citation_label(citation: dict[str, Any], paper: str | None = None) -> str:
    """The citation an observation records, for a history line: seen from `paper` when given (its other
    paper, `other_words`), else both papers: 'arXiv:A "Citing title" cites arXiv:B "Cited title"'."""
    if paper is None:
        citing, cited = other_paper(citation, "inbound"), other_paper(citation, "outbound")
        return f"{_named(*citing)} {other_words('outbound', *cited)}"
    direction = "outbound" if citation["citing_paper"]["arxiv_id"] == paper else "inbound"
    return other_words(direction, *other_paper(citation, direction))


def lane_counts(lane: dict[str, Any] | None) -> str:
    """A coverage lane's counts on one side of a change, as `diff` and the change pages show them:
    '12 of 12 (source, observed T)', or 'none' when the lane was not there."""
    if lane is None:
        return "none"
    observed = f", observed {lane['source_observed_at']}" if lane["source_observed_at"] else ""
    return f"{lane['records_observed']} of {lane['denominator']} ({lane['source']}{observed})"


def transition(name: str, words: Callable[[dict[str, Any]], str], old: dict[str, Any], new: dict[str, Any], first: bool = False) -> str:
    """A part's new version in a history line: `name old → new` in its state `words`; when both read the
    same, what changed inside it (`inside`), or 're-checked, unchanged' when nothing did. `first`: `old` is
    only the default a part has before its first fact."""
    was, now = words(old), words(new)
    if was != now:
        return f"{name} {was} → {now}"
    if first:
        return f"{name} {now} (first recorded)"
    return f"{name} {now}: " + ("re-checked, unchanged" if old == new else inside(old, new))


def inside(old: dict[str, Any], new: dict[str, Any]) -> str:
    """What differs between two versions of a part: the receipt times that moved, then the other keys."""
    keys, said = differing(old, new), []
    times = times_moved(old.get("source_receipts") or [], new.get("source_receipts") or [])
    if times and "source_receipts" in keys:
        said.append("receipts " + ", ".join(times))
        keys.remove("source_receipts")
    return "; ".join(said + ([f"changed {', '.join(keys)}"] if keys else []))


def differing(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The keys, sorted, that one of two objects lacks or whose values differ."""
    return [k for k in sorted(set(old) | set(new)) if k not in old or k not in new or old[k] != new[k]]


def times_moved(old: list[Any], new: list[Any]) -> list[str]:
    """`source A → B` for each source whose time differs between two lists of {source, observed_at}."""
    was, now = ({r.get("source"): r.get("observed_at") for r in side if isinstance(r, dict)} for side in (old, new))
    return [f"{source} {_when(was, source)} → {_when(now, source)}"
            for source in sorted(set(was) | set(now), key=str) if _when(was, source) != _when(now, source)]


def _when(times: dict[Any, Any], source: object) -> str:
    return "none" if source not in times else str(times[source]) if times[source] is not None else "null"


def changed_keys(old: dict[str, Any], new: dict[str, Any]) -> str:
    """The keys whose values differ between two objects, sorted and comma-separated ('nothing' if none)."""
    return ", ".join(sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))) or "nothing"


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """'1 event', '2 events': a count and its noun, plural when it is not one (an "s", or `plural` if given).

    Raises: nothing.
    """
    return f"{count} {noun}" if count == 1 else f"{count} {plural or noun + 's'}"
