"""What a page shows, from a record and its facts: the views the templates render (cards, pictures, notices,
a record's place in time) and how untrusted text is shown. Pure: dicts in, dicts and strings out; it never reads
a store (`web.site` does, and renders these)."""

from __future__ import annotations

import re
from collections.abc import Container, Iterable
from urllib.parse import quote

import orjson
from markupsafe import Markup

from ledger.core.errors import InputError
from ledger.core.times import When
from ledger.model.arxiv import paper_id
from ledger.model.events import PAPER_SNAPSHOT, Fact
from ledger.model.parts import cited_label
from ledger.model.published import RESOLUTION_STATES
from ledger.model.standing_notices import describe_event, notice_label
from ledger.projections.text import capped_words, lane_words, measurement_line, observation_words, state_words
from ledger.web import urls

BEGINNING = "1970-01-01T00:00:00Z"  # before any record: a first change day's changes are from nothing


def effective_days(facts: Iterable[Fact]) -> list[str]:
    """The UTC days on which a fact of the paper is effective, oldest first."""
    return sorted({f.effective_key[:10] for f in facts})


def first_record(paper: str, facts: Iterable[Fact]) -> str | None:
    """The effective key of the paper's first snapshot: before it, the paper has no record (None: never)."""
    return min((f.effective_key for f in facts if f.kind == PAPER_SNAPSHOT and f.subject == paper), default=None)


# A snapshot's fields in words, in the order a reader wants them (arXiv's abstract page: title first).
SNAPSHOT_WORDS = {"title": "Title", "arxiv_id": "arXiv id", "latest_version": "Latest version",
                  "primary_category": "Primary category", "submitted_at": "Submitted", "last_updated": "Last updated",
                  "snapshot_observed_at": "Snapshot observed"}


def snapshot_rows(paper: dict) -> list[tuple[str, str]]:
    """(label, value) for each field of the record's paper block: known fields under the words of
    SNAPSHOT_WORDS, in its order, then any other under its name's words; a value that is no string as JSON."""
    order = {key: n for n, key in enumerate(SNAPSHOT_WORDS)}
    keys = sorted(paper, key=lambda key: (order.get(key, len(order)), key))
    return [(SNAPSHOT_WORDS.get(key) or key.replace("_", " ").capitalize(),
             paper[key] if isinstance(paper[key], str) else orjson.dumps(paper[key]).decode()) for key in keys]


def time_nav(paper: str, facts: list[Fact], as_of: When, day: str | None, known: str | None) -> dict:
    """A record page's place in time: the change days before and after it (a day with a record), what changed
    on its day, and when the data it shows was last observed (the latest effective time by its as-of)."""
    first = first_record(paper, facts)
    days = [d for d in effective_days(facts) if first is not None and first <= When.parse(d).key]
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


# -- the record page's cards -----------------------------------------------------------------------------
def _paper(arxiv_id: object) -> str | None:
    """The paper a well-formed id names, else None: an id is untrusted text."""
    try:
        return paper_id(arxiv_id)
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


def _paper_row(label: str, block: dict | None, path: str, linked: Container[str]) -> dict | None:
    """A paper of a card, as the facts list shows it: its id (the JSON's, at `path`), arXiv, and the local page
    when the site has that paper's record (it is in `linked`)."""
    if not block or block.get("arxiv_id") is None:
        return None
    arxiv_id = block["arxiv_id"]
    return {"label": label, "id": arxiv_id, "field": f"{path}.arxiv_id", "arxiv": _arxiv_link(arxiv_id),
            "local": urls.paper_url(paper) if (paper := _paper(arxiv_id)) in linked else None}


def _other_paper(obs: dict, direction: str) -> dict | None:
    """The block of the citation's other paper, the one a card names: who cites (inbound), what is cited."""
    citation = obs["citation"]
    if direction == "inbound":
        return citation["citing_paper"]
    work = citation.get("cited_work") or {}
    return citation.get("cited_paper") or (work if work.get("arxiv_id") is not None else None)


def named_papers(record: dict) -> set[str]:
    """The well-formed arXiv ids of the other papers the record's cards name: those a card may link locally."""
    found = set()
    for direction in ("outbound", "inbound"):
        for obs in record[direction]:
            block = _other_paper(obs, direction)
            if block and (paper := _paper(block.get("arxiv_id"))) is not None:
                found.add(paper)
    return found


def _title(block: dict | None, path: str) -> tuple[str, str] | None:
    """(title, its field) when the block has one."""
    if block and isinstance(block.get("title"), str) and block["title"]:
        return block["title"], f"{path}.title"
    return None


def _observation(obs: dict, direction: str, index: int, linked: Container[str]) -> dict:
    """A card: headed by the other paper of the citation, with the facts and digest of the observation; the
    record's own paper (the citing one outbound, the cited one inbound) is not repeated on every card."""
    citation = obs["citation"]
    words = observation_words(obs, direction)
    citing = _title(citation["citing_paper"], "citation.citing_paper")
    cited = _title(citation.get("cited_paper"), "citation.cited_paper") or \
        _title(citation.get("cited_work"), "citation.cited_work")  # as `cited_label` chooses
    # A card is headed by the other paper of the citation (inbound: who cites this one; outbound: what it cites).
    heading = citing if direction == "inbound" else cited
    if heading is None:
        heading = (words["citing"] if direction == "inbound" else words["cited"], None)
    work = citation.get("cited_work") or {}
    other = _other_paper(obs, direction)
    path = ("citation.citing_paper" if direction == "inbound" else
            "citation.cited_paper" if other is citation.get("cited_paper") else "citation.cited_work")
    papers = [_paper_row("Citing paper" if direction == "inbound" else "Cited paper", other, path, linked)]
    return {
        "anchor": f"{direction}-{index + 1}", "id": obs["observation_id"], "direction": direction,
        "heading": heading[0], "heading_field": heading[1],
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


def record_view(record: dict, linked: Container[str] = ()) -> dict:
    """What the record page shows of `record`; a card links another paper's page here when it is in `linked`."""
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
        "sections": [  # who cites the paper first (a reader's first question), then what it cites
            ("inbound", "Pith citing papers", "No inbound Pith citation observations are available.",
             [_observation(o, "inbound", i, linked) for i, o in enumerate(record["inbound"])], capped_words(record, "inbound")),
            ("outbound", "Outbound references", "No outbound references are displayed.",
             [_observation(o, "outbound", i, linked) for i, o in enumerate(record["outbound"])], capped_words(record, "outbound")),
        ],
    }


# What would reorder the text after it (bidi controls) or print nothing (C0 and C1 controls but tab and line
# ends; zero-width spaces, joiners and the BOM): shown as its code point, here and in check.js's `shown`, so no
# title reverses a line or hides a part. (A joiner inside an emoji or an Indic word shows too: a record is
# evidence, and what it holds is shown, not what it would draw.)
HIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069"
                    "\ufeff]")


def shown(text: object) -> str:
    """The one way a page shows untrusted text: each character of HIDDEN as its code point (`⟨U+202E⟩`)."""
    return HIDDEN.sub(lambda m: f"\u27e8U+{ord(m[0]):04X}\u27e9", str(text))


def finalize(value: object) -> object:
    """Jinja's `finalize`: what every `{{ ... }}` of every template prints passes through `shown`, before it is
    escaped, so that no template can forget it. Markup (a block, an included part) was shown already."""
    if isinstance(value, Markup):
        return Markup(shown(value))  # the code point's brackets and digits are no markup
    return shown(value)
