"""The page form of a record (`--format text`), as the service shows it: blocks separated by one blank
line, no trailing newline. A pure function of the record; it adds no fact the record does not carry.
The words for each kind's part of the record are its kind's `page` (`ledger.model.kinds`); this module lays
out the blocks and words the record's derived parts (lanes, state counts).
"""

from __future__ import annotations

from ledger.model.kinds import (
    CITATION_OBSERVED,
    COVERAGE_COUNTED,
    KIND,
    MEASUREMENTS_CHECKED,
    NOTICE_CHECKED,
    PAPER_SNAPSHOT,
    RESOLUTION_RECORDED,
)
from ledger.model.parts import UNTITLED, cited_label
from ledger.model.parts import spaced as _words
from ledger.model.published import RESOLUTION_STATES
from ledger.projections.record import counted_past_cap

__all__ = ["UNTITLED", "capped_words", "cited_label", "counted_lines", "counted_words", "lane_words",
           "measurement_line", "notice_lines", "observation_words", "render_text", "state_words"]

def notice_lines(notice: dict) -> tuple[list[str], str | None]:
    """The words of a standing notice: one line per source-reported event, then the closing sentence (the
    notice's own observation, or why there is none), if any. The text page and the HTML page both use it."""
    return KIND[NOTICE_CHECKED].page(notice)


def lane_words(lane: dict) -> tuple[str, str, str]:
    """A coverage lane as the pages show it: its heading, its note and its source line."""
    source = f"Source: {lane['source']}"
    return (f"{lane['state']} {lane['records_observed']} of {lane['denominator']} {_words(lane['lane'])}",
            lane["note"], source + (f", observed {lane['source_observed_at']}" if lane["source_observed_at"] else ""))


def state_words(record: dict) -> list[tuple[str, int]]:
    """The six resolution states, spaced as the pages show them, with their counts."""
    counts = record["reference_resolution"]["state_counts"]
    return [(_words(state), counts.get(state, 0)) for state in RESOLUTION_STATES]


def observation_words(obs: dict, direction: str) -> dict:
    """The sentences of one observation block, as the text page and the HTML page show them: each of its
    parts in its kind's words."""
    events, closing = notice_lines(obs["standing_notice"])
    return {**KIND[CITATION_OBSERVED].page(obs["citation"], direction),
            "resolution": KIND[RESOLUTION_RECORDED].page(obs["resolution"]),
            "notice_events": events, "notice_closing": closing}


def _observation(obs: dict, direction: str) -> list[str]:
    words = observation_words(obs, direction)
    blocks = [
        f"Observation {obs['observation_id']} · {direction}",
        words["sentence"],
        f"{words['citing']} {words['cited']}",
        words["reference"],
        words["resolution"],
        "Source-reported events for the cited work",
    ]
    if words["notice_events"]:
        blocks.append("\n".join(words["notice_events"]))
    if words["notice_closing"]:
        blocks.append(words["notice_closing"])
    return blocks


def counted_words(record: dict, direction: str) -> str | None:
    """What a direction's lane counts against what the record itemizes ("inbound 110 counted, 100 itemized"),
    when it counts more than the record lists (over the page cap: the rest are known only by count), else None."""
    lane = counted_past_cap(record, direction)
    return None if lane is None else KIND[COVERAGE_COUNTED].page(lane, lane["lane"])


def counted_lines(record: dict) -> list[str]:
    """`counted_words` of each direction over the page cap, inbound first."""
    return [words for direction in ("inbound", "outbound") if (words := counted_words(record, direction)) is not None]


def capped_words(record: dict, direction: str) -> str | None:
    """The page's sentence for a direction over the page cap (`counted_words`), else None."""
    words = counted_words(record, direction)
    if words is None:
        return None
    return f"Past the page cap of {record['caps'].get(direction)}: {words}; the rest are known only by count."


def measurement_line(entry: object, source: str) -> str:
    """One external citation measurement as the pages show it."""
    return KIND[MEASUREMENTS_CHECKED].page(entry, source)


def render_text(record: dict) -> str:
    paper = record["paper"]
    blocks = [
        "Paper Citation Record · LEDGER",
        KIND[PAPER_SNAPSHOT].page(paper),
        record["thesis"],
        record["refusal"],
        f"{record['schema']}\n{paper['arxiv_id']} v{paper.get('latest_version')}",
        "Coverage vector",
    ]
    lanes = {lane["lane"]: lane for lane in record["coverage"]}
    for lane in record["coverage"]:
        blocks.extend(lane_words(lane))
    resolution = record["reference_resolution"]
    blocks += [
        "Reference resolution",
        f"{resolution['displayed']} of {resolution['total_outbound_references']} outbound references displayed",
        "\n".join(f"{state}{count}" for state, count in state_words(record)),
        "External citation measurements",
    ]
    measurements = record["external_citation_measurements"]
    if measurements:
        source = lanes.get("external_citation_measurements", {}).get("source", "")
        blocks.append("\n".join(measurement_line(m, source) for m in measurements))
    else:
        blocks.append("No source-named external measurement is stored.")
    for direction, heading, none in (("outbound", "Outbound references", "No outbound references are displayed."),
                                     ("inbound", "Pith citing papers",
                                      "No inbound Pith citation observations are available.")):
        blocks.append(heading)
        for obs in record[direction]:
            blocks += _observation(obs, direction)
        if not record[direction]:
            blocks.append(none)
        capped = capped_words(record, direction)
        if capped:
            blocks.append(capped)
    return "\n\n".join(blocks)
