"""The page form of a record (`--format text`), as the service shows it: blocks separated by one blank
line, no trailing newline. A pure function of the record; it adds no fact the record does not carry.
"""

from __future__ import annotations

from ledger.record import RESOLUTION_STATES


def _words(name: str) -> str:
    return name.replace("_", " ")


def _cited_label(citation: dict) -> str:
    """The cited work as a reader knows it: the Pith paper's title, else the reference as parsed."""
    for block in (citation.get("cited_paper"), citation.get("cited_work")):
        if block and block.get("title"):
            return block["title"]
    work = citation.get("cited_work") or {}
    if work.get("doi"):
        return f"DOI {work['doi']}"
    if work.get("arxiv_id"):
        return f"arXiv:{work['arxiv_id']}"
    return "an untitled work"


def _notice_lines(notice: dict) -> list[str]:
    blocks = []
    events = notice.get("events") or []
    if events:
        blocks.append("\n".join(_notice_event(e) for e in events))
    if notice.get("observation"):
        blocks.append(notice["observation"])
    elif notice.get("state") != "measured":
        blocks.append(f"Unavailable: {_words(notice.get('reason') or 'unknown')}.")
    return blocks


def _notice_event(event: object) -> str:
    if not isinstance(event, dict):
        return str(event)
    kind = _words(str(event.get("type") or "notice"))
    parts = [kind[:1].upper() + kind[1:]]
    if event.get("source"):
        parts.append(f"reported by {event['source']}")
    if event.get("date"):
        parts.append(f"dated {event['date']}")
    return ", ".join(parts) + "."


def _observation(obs: dict, direction: str) -> list[str]:
    citation, resolution = obs["citation"], obs["resolution"]
    citing = citation["citing_paper"].get("title") or f"arXiv:{citation['citing_paper']['arxiv_id']}"
    cited = _cited_label(citation)
    sentence = f"This paper cites {cited}." if direction == "outbound" else f"{citing} cites this paper."
    resolver = resolution["resolver_source"] or "no resolver link"
    line = f"Resolution: {_words(resolution['status'])}; {resolver}"
    if resolution["observed_at"]:
        line += f", observed {resolution['observed_at']}"
    return [
        f"Observation {obs['observation_id']} · {direction}",
        sentence,
        f"{citing} {cited}",
        f"Reference {citation['reference_index']}",
        line,
        "Source-reported events for the cited work",
        *_notice_lines(obs["standing_notice"]),
    ]


def _measurement(entry: object, source: str) -> str:
    if isinstance(entry, dict) and "citation_count" in entry:
        line = f"{entry.get('source', source)}: {entry['citation_count']} citations"
        return line + (f", observed {entry['observed_at']}" if entry.get("observed_at") else "")
    return f"{source}: {entry}"


def render_text(record: dict) -> str:
    paper = record["paper"]
    blocks = [
        "Paper Citation Record · LEDGER",
        paper.get("title") or f"arXiv:{paper['arxiv_id']}",
        record["thesis"],
        record["refusal"],
        f"{record['schema']}\n{paper['arxiv_id']} v{paper.get('latest_version')}",
        "Coverage vector",
    ]
    lanes = {lane["lane"]: lane for lane in record["coverage"]}
    for lane in record["coverage"]:
        blocks.append(f"{lane['state']} {lane['records_observed']} of {lane['denominator']} {_words(lane['lane'])}")
        blocks.append(lane["note"])
        source = f"Source: {lane['source']}"
        blocks.append(source + (f", observed {lane['source_observed_at']}" if lane["source_observed_at"] else ""))
    resolution = record["reference_resolution"]
    blocks += [
        "Reference resolution",
        f"{resolution['displayed']} of {resolution['total_outbound_references']} outbound references displayed",
        "\n".join(f"{_words(state)}{resolution['state_counts'].get(state, 0)}" for state in RESOLUTION_STATES),
        "External citation measurements",
    ]
    measurements = record["external_citation_measurements"]
    if measurements:
        source = lanes.get("external_citation_measurements", {}).get("source", "")
        blocks.append("\n".join(_measurement(m, source) for m in measurements))
    else:
        blocks.append("No source-named external measurement is stored.")
    blocks.append("Outbound references")
    if record["outbound"]:
        for obs in record["outbound"]:
            blocks += _observation(obs, "outbound")
    else:
        blocks.append("No outbound references are displayed.")
    blocks.append("Pith citing papers")
    if record["inbound"]:
        for obs in record["inbound"]:
            blocks += _observation(obs, "inbound")
    else:
        blocks.append("No inbound Pith citation observations are available.")
    return "\n\n".join(blocks)
