"""The page form of a record (`--format text`), as the service shows it: blocks separated by one blank
line, no trailing newline. A pure function of the record; it adds no fact the record does not carry.
"""

from __future__ import annotations

from ledger.standing_notices import CHECK_FAILED, describe_event
from ledger.published import RESOLUTION_STATES


def _words(name: str) -> str:
    return name.replace("_", " ")


UNTITLED = "unresolved cited work"  # seed 003: a cited work with no title


def cited_label(citation: dict) -> str | None:
    """The cited work as a reader knows it: the Pith paper's title, else the reference's title, else None."""
    for block in (citation.get("cited_paper"), citation.get("cited_work")):
        if block and block.get("title"):
            return block["title"]
    return None


def _notice_lines(notice: dict) -> list[str]:
    blocks = []
    if notice.get("events"):
        blocks.append("\n".join(describe_event(e) for e in notice["events"]))
    if notice.get("observation"):
        blocks.append(notice["observation"])
    elif notice.get("state") == CHECK_FAILED:
        blocks.append(f"Check failed: {_words(notice.get('reason') or 'unknown')}.")
    elif notice.get("state") != "measured":
        blocks.append(f"Unavailable: {_words(notice.get('reason') or 'unknown')}.")
    return blocks


def _observation(obs: dict, direction: str) -> list[str]:
    citation, resolution = obs["citation"], obs["resolution"]
    citing = citation["citing_paper"].get("title") or f"arXiv:{citation['citing_paper']['arxiv_id']}"
    cited = cited_label(citation)
    if direction == "outbound":
        sentence = f"This paper cites {cited or 'an ' + UNTITLED}."
    else:
        sentence = f"{citing} cites this paper."
    cited = cited or UNTITLED[:1].upper() + UNTITLED[1:]
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
