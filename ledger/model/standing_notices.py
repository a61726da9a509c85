"""The standing-notice vocabulary: what a source can report about a cited work, and the states of a check.

Types users know are named here so pages and accounts can speak of them; a type a source reports that is
not in this list is kept exactly as given, never dropped or mapped. A check that failed at the source is a
state of its own, distinct from "checked, nothing found" (measured, no events) and from "not checked".
"""

from __future__ import annotations

from typing import Any

NOTICE_TYPES = {
    "retraction": "Retraction",
    "partial_retraction": "Partial retraction",
    "withdrawal": "Withdrawal",
    "removal": "Removal",
    "expression_of_concern": "Expression of concern",
    "correction": "Correction",
    "addendum": "Addendum",
    "new_version": "New version",
    "reinstatement": "Reinstatement",
}

MEASURED = "measured"  # the sources were queried; `events` lists what they reported (maybe nothing)
UNAVAILABLE = "unavailable"  # no check was possible (reason: not_checked, canonical_work_link_unavailable, ...)
CHECK_FAILED = "check_failed"  # a source was queried and failed; reason says how
NOTICE_STATES = (MEASURED, UNAVAILABLE, CHECK_FAILED)


def notice_label(kind: str) -> str:
    """'expression_of_concern' -> 'Expression of concern'; an unknown type is shown as given."""
    return NOTICE_TYPES.get(kind, kind)


def describe_event(event: object) -> str:
    """One line for one source-reported event: its type, source and date."""
    if not isinstance(event, dict):
        return str(event)
    parts = [notice_label(str(event.get("type", "notice")))]
    if event.get("source"):
        parts.append(f"reported by {event['source']}")
    if event.get("date"):
        parts.append(f"dated {event['date']}")
    return ", ".join(parts) + "."


def describe_notice(notice: dict[str, Any]) -> str:
    """A short account of a notice check, for history lines."""
    state = notice.get("state")
    if state == MEASURED:
        events = notice.get("events") or []
        sources = ", ".join(r.get("source", "?") for r in notice.get("source_receipts", []))
        found = "; ".join(describe_event(e).rstrip(".") for e in events) if events else "no event"
        return f"measured: {found} ({sources})" if sources else f"measured: {found}"
    return f"{state} ({notice.get('reason')})"
