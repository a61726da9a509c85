"""Read the facts a published page (text form) shows, and turn them into event lines.

Fields a page does not show take any consistent value: citing papers of inbound observations get arXiv ids
that keep the page's order, outbound citations take the lane's observation time.
"""

from __future__ import annotations

import re

from tests.helpers import event_line

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]


def _lane(blocks: list[str], index: int) -> tuple[str, str | None]:
    source = blocks[index][len("Source: "):]
    if ", observed " in source:
        name, when = source.rsplit(", observed ", 1)
        return name, when
    return source, None


def page_events(page: str) -> tuple[str, str, bytes]:
    """(arxiv id, bare as-of date, event lines) for the facts on a page."""
    blocks = page.split("\n\n")
    title = blocks[1]
    thesis = re.match(r"As of (\d+) (\w+) (\d{4}), .* for arXiv:(\S+)\.$", blocks[2])
    day, month, year, arxiv_id = thesis.groups()
    as_of = f"{year}-{MONTHS.index(month) + 1:02d}-{int(day):02d}"
    version = int(blocks[4].split("\n")[1].split(" v")[1])
    lanes = {}
    for i in range(4):
        head = blocks[6 + 3 * i]
        lanes[i] = (head, *_lane(blocks, 8 + 3 * i))
    ref_time, sweep_time, inbound_time = lanes[0][2], lanes[1][2], lanes[2][2]
    snapshot_time = f"{as_of}T00:00:00Z"
    paper = {"arxiv_id": arxiv_id, "latest_version": version, "snapshot_observed_at": snapshot_time, "title": title}
    lines = [event_line("paper.snapshot", paper)]
    if sweep_time:
        lines.append(event_line("source.checked", {"observed_at": sweep_time, "paper": arxiv_id, "source": "crossref"}))
    measurement_source, measurement_time = lanes[3][1], lanes[3][2]
    if measurement_time:
        lines.append(event_line("measurements.checked", {"measurements": [], "observed_at": measurement_time,
                                                         "paper": arxiv_id, "source": measurement_source}))
    citing_counter = 0
    i = 0
    while i < len(blocks):
        match = re.match(r"Observation (\S+) · (inbound|outbound)$", blocks[i])
        if not match:
            i += 1
            continue
        oid, direction = match.groups()
        sentence, _pair, reference, resolution_line, _heading = blocks[i + 1:i + 6]
        notice_line = blocks[i + 6]
        i += 7
        status, rest = re.match(r"Resolution: ([a-z ]+); (.*)$", resolution_line).groups()
        resolver, observed = rest.rsplit(", observed ", 1)
        resolution = {"observed_at": observed, "resolver_source": None if resolver == "no resolver link" else resolver,
                      "status": status.replace(" ", "_")}
        me = {"arxiv_id": arxiv_id, "snapshot_observed_at": snapshot_time, "title": title, "version": version}
        if direction == "outbound":
            cited = sentence[len("This paper cites "):-1]
            cited = None if cited == "an unresolved cited work" else cited
            citation = {"cited_paper": None, "cited_work": {"title": cited}, "citing_paper": me,
                        "reference_index": int(reference.split()[1]), "source": "pdf_text", "source_observed_at": ref_time}
        else:
            citing_counter += 1
            citing_title = sentence[:-len(" cites this paper.")]
            citing = {"arxiv_id": f"2501.{citing_counter:05d}", "snapshot_observed_at": snapshot_time,
                      "title": citing_title, "version": 1}
            citation = {"cited_paper": me, "cited_work": {"title": None}, "citing_paper": citing,
                        "reference_index": int(reference.split()[1]), "source": "pdf_text",
                        "source_observed_at": observed}
        lines.append(event_line("citation.observed", {"citation": citation, "observation_id": oid}))
        lines.append(event_line("resolution.recorded", {"observation_id": oid, "resolution": resolution}))
        if notice_line.startswith("No event found"):
            receipt_time = notice_line.rsplit(" as of ", 1)[1][:-1]
            notice = {"events": [], "observation": notice_line, "reason": None, "state": "measured",
                      "source_receipts": [{"observed_at": receipt_time, "source": "crossref"}]}
            lines.append(event_line("notice.checked", {"observation_id": oid, "standing_notice": notice}))
        else:
            reason = notice_line[len("Unavailable: "):-1].replace(" ", "_")
            notice = {"events": [], "reason": reason, "source_receipts": [], "state": "unavailable"}
            lines.append(event_line("notice.checked", {"observation_id": oid, "standing_notice": notice}, sweep_time))
    assert inbound_time is None or citing_counter > 0
    return arxiv_id, as_of, b"".join(lines)
