"""A route's query parameters as FastAPI reads them: each option's name, type, length limit and description
(what the OpenAPI schema lists), and the check that refuses a parameter the route does not take.
"""

from __future__ import annotations

from inspect import Parameter
from typing import Annotated

from fastapi import Depends, Query, Request

from ledger.core.errors import InputError

MAX_PARAMETER = 200  # characters of one query parameter


def strict(*names: str):
    """A dependency: refuse a query parameter the route does not take, or one given twice (a typo such as
    `?asof=` must not silently give today's record)."""

    def check(request: Request) -> None:
        for name in request.query_params.keys():
            if name not in names:
                allowed = ", ".join(names) or "none"
                raise InputError(f"unknown query parameter {name[:40]!r} (this path takes: {allowed})")
            if len(request.query_params.getlist(name)) > 1:
                raise InputError(f"query parameter {name} given more than once")

    return Depends(check)


AsOf = Annotated[str | None, Query(max_length=MAX_PARAMETER, description="Effective time: a date (the end of that "
                                   "UTC day) or an RFC 3339 timestamp; default: the request instant.")]
KnownAt = Annotated[str | None, Query(max_length=MAX_PARAMETER, description="Only events the ledger had recorded by then.")]
From = Annotated[str, Query(alias="from", max_length=MAX_PARAMETER, description="Earlier date or timestamp.")]
To = Annotated[str, Query(alias="to", max_length=MAX_PARAMETER, description="Later date or timestamp.")]
# A query option of the route table: its Python name, its type and its default (`from` is a keyword).
OPTIONS = {"as_of": ("as_of", AsOf, None), "known_at": ("known_at", KnownAt, None),
           "from": ("start", From, Parameter.empty), "to": ("end", To, Parameter.empty)}
