"""The web layer: the record's own links (`/paper/<id>/...`, `/evidence`) and the log as C2SP tiles, served
live (`ledger serve`, FastAPI on uvicorn) or written as static files (`ledger publish`), the same bytes both ways.

Like `cli/`, an interface: it parses requests, calls `ledger/` and `projections/`, renders, and maps errors to
status codes in one place (`web.statuses`). It never writes to the ledger, and nothing in `ledger/` imports it.
"""
