"""Instants as the sources wrote them, and the keys used to order them.

A stored timestamp is kept as the exact string a source gave (re-formatting it would change a digest).
To order instants we derive a key: the same instant in UTC as `YYYY-MM-DDTHH:MM:SS.ffffffZ`, which sorts
as text. A `When` carries both, as one value, from a command's option or a query to the fold.
This module never changes a stored string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from functools import lru_cache

from ledger.core.errors import InputError
from ledger.core.redact import quoted

# RFC 3339 with a mandatory offset; a naive time is ambiguous and refused.
_INSTANT = re.compile(
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:\d{2})", re.ASCII
)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)
# An instant written in the key's own form (UTC, microseconds): valid, it is its own key.
_KEY_FORM = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z", re.ASCII)

MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)


class TimeError(InputError):
    """A string that is not an instant the ledger accepts."""


def parse_instant(text: object) -> datetime:
    """Parse an RFC 3339 timestamp with an offset into an aware UTC datetime.
    Raises: TimeError."""
    if not isinstance(text, str) or not _INSTANT.fullmatch(text):
        raise TimeError(f"expected an RFC 3339 timestamp with offset, found {quoted(text)}")
    try:
        return datetime.fromisoformat(text).astimezone(UTC)
    except (ValueError, OverflowError):  # OverflowError: the offset moves it out of years 1..9999
        raise TimeError(f"not a valid timestamp: {quoted(text)}") from None


def instant_key(text: object) -> str:
    """The sortable UTC key of a timestamp string (microsecond precision).
    Raises: TimeError."""
    if type(text) is str:
        return _key_of(text)
    return format_utc(parse_instant(text))  # raises TimeError: not a string


# A corpus repeats its timestamps (a paper's snapshot time in every one of its citations, a sweep's receipts
# in every notice of the sweep): parsing each distinct string once saved most of the time spent here. A
# refused string raises every time (lru_cache keeps no exception). The bound keeps memory flat as a ledger
# grows; repeats are local (one record, one sweep), so a small cache keeps the hits.
# Most instants are written in the key's form already (the ledger's own times, the generator's, the seeds'):
# checking one against the calendar and returning it is cheaper than parsing and formatting it again.
@lru_cache(maxsize=1 << 12)
def _key_of(text: str) -> str:
    if _KEY_FORM.fullmatch(text):
        try:
            datetime.fromisoformat(text[:-1])  # the calendar's check: February 30 or hour 24 go on below
            return text
        except ValueError:
            pass
    return format_utc(parse_instant(text))  # raises TimeError, naming the problem


def format_utc(moment: datetime) -> str:
    """An aware datetime as an ordering key: UTC, microseconds, `Z`."""
    # isoformat, not strftime: strftime writes the year 5 as "5", which sorts after "2026".
    return moment.astimezone(UTC).isoformat(timespec="microseconds")[:-6] + "Z"


def parse_when(text: str) -> tuple[str, str]:
    """A command-line date: returns (as written in a record, ordering key).

    A bare date means the end of that day in UTC, inclusive (SPEC 4); a full timestamp is used as given.
    Raises: TimeError (an InputError).
    """
    if _DATE.fullmatch(text):
        try:
            day = date.fromisoformat(text)
        except ValueError:
            raise TimeError(f"not a valid date: {quoted(text)}") from None
        end = datetime.combine(day, time(23, 59, 59, 999999), tzinfo=UTC)
        written = format_utc(end)
        return written, written
    if not isinstance(text, str) or not _INSTANT.fullmatch(text):
        raise TimeError(f"expected a date YYYY-MM-DD or an RFC 3339 timestamp with offset (2026-08-09, "
                        f"2026-08-09T16:41:00Z), found {quoted(text)}")
    return text, instant_key(text)


@dataclass(frozen=True)
class When:
    """An instant asked for: `text` as a record shows it, `key` its ordering key, and `given` False when no one
    named it (the instant of asking, see `now`)."""

    text: str
    key: str
    given: bool = True

    @classmethod
    def at(cls, text: str) -> When:
        """An instant as a record writes it (RFC 3339 with an offset), shown as written.
        Raises: TimeError."""
        return cls(text, instant_key(text))

    @classmethod
    def parse(cls, text: str) -> When:
        """A person's date or timestamp, by `parse_when`'s rules.
        Raises: TimeError."""
        return cls(*parse_when(text))


def when(option: str, value: str | None) -> When | None:
    """The one parser of a date option for both interfaces (`--as-of`, `?as_of=`), by `parse_when`'s rules:
    None when not given.
    Raises: InputError naming the option."""
    if value is None:
        return None
    try:
        return When.parse(value)
    except InputError as exc:
        raise InputError(f"{option}: {exc}") from None


def now() -> When:
    """The instant of asking, as a time no one gave (a page without `?as_of=`)."""
    instant = format_utc(datetime.now(UTC))
    return When(instant, instant, given=False)


def long_date(text: str) -> str:
    """'2026-08-09T16:41:00Z' -> '9 August 2026' (the UTC day).
    Raises: TimeError."""
    moment = parse_instant(text)
    return f"{moment.day} {MONTHS[moment.month - 1]} {moment.year}"
