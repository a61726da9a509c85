"""`ledger witness serve`: a C2SP tlog-witness for the logs named, its state in the SQLite file of --db."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated

import typer

from ledger.cli.common import db_location
from ledger.cli.publish_commands import (
    CONNECTIONS,
    HEADER_BYTES,
    HEADER_TIMEOUT,
    IDLE_TIMEOUT,
    HeaderBytes,
    HeaderTimeout,
    IdleTimeout,
    MaxConnections,
    _can_listen,
    limits,
)
from ledger.core.errors import InputError
from ledger.core.redact import redact_url
from ledger.log.signed_notes import Verifier
from ledger.services.cosigning_witness import RATE
from ledger.services.keys import load_cosigner, load_verifier

if TYPE_CHECKING:
    from ledger.services.witness_audit import Auditor

AUDIT_TIMEOUT = 600.0  # seconds: witness_audit.TIMEOUT (not imported here: every command would load the monitor)
app = typer.Typer(name="witness", help="Run a witness (C2SP tlog-witness) that cosigns logs' checkpoints.",
                  no_args_is_help=True)


def parse_logs(given: list[str]) -> dict[str, Verifier]:
    """`--log ORIGIN=VKEY` options: origin -> the log's verifier key, whose name must be the origin.
    Raises: InputError naming the option that is wrong."""
    logs: dict[str, Verifier] = {}
    for option in given:
        origin, sep, vkey = option.partition("=")
        if not sep or not origin or not vkey:
            raise InputError(f"--log {option}: expected ORIGIN=VKEY (a .vkey file or its text)")
        verifier = load_verifier(vkey)
        if verifier.name != origin:
            raise InputError(f"--log {origin}: the key is of the log {verifier.name!r} (a log's key is named by "
                             f"its origin)")
        if origin in logs:
            raise InputError(f"--log {origin}: given twice")
        logs[origin] = verifier
    return logs


def parse_audits(given: list[str], logs: dict[str, Verifier], state: str, poll: float,
                 timeout: float) -> dict[str, Auditor]:
    """`--audit ORIGIN=URL|DIR` options: origin -> its Auditor, its copy of the log beside the state file.
    Raises: InputError naming the option that is wrong (a URL that cannot be one, a folder that is not one)."""
    from ledger.services.witness_audit import Auditor, folder_of

    audits: dict[str, Auditor] = {}
    for option in given:
        origin, sep, where = option.partition("=")
        if not sep or not origin or not where:
            raise InputError(f"--audit {option}: expected ORIGIN=URL|DIR (the log's URL or published folder)")
        if origin not in logs:
            raise InputError(f"--audit {origin}: not a --log this witness follows")
        if origin in audits:
            raise InputError(f"--audit {origin}: given twice")
        if not where.startswith(("http://", "https://")) and not os.path.isdir(where):
            raise InputError(f"--audit {origin}: {where}: not a URL (http:// or https://) nor a published folder")
        audits[origin] = Auditor(origin, where, logs[origin], folder_of(state, origin), poll, timeout)
    return audits


@app.command()
def serve(
    ctx: typer.Context,
    key: Annotated[str, typer.Option("--key", help="The witness's cosigner key file (ledger keygen --cosigner).")],
    log: Annotated[list[str], typer.Option("--log", metavar="ORIGIN=VKEY", help="A log to witness (repeat).")],
    new: Annotated[bool, typer.Option("--new", help="Start a new state in --db (default: --db must hold one).")] = False,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.", min=0, max=65535)] = 8090,
    rate: Annotated[float, typer.Option("--rate", min=0, help="Requests a second per client address (bursts of "
                                                              "twice that; over it: 429). 0: no limit.")] = RATE,
    audit: Annotated[list[str] | None, typer.Option(
        "--audit", metavar="ORIGIN=URL|DIR", help="Audit that --log before cosigning (repeat): its entries and paper "
                                                  "index, read from its URL or published folder (default: none).")] = None,
    audit_poll: Annotated[float, typer.Option("--audit-poll", min=0, help="Seconds between looks at each audited "
                                                                        "log's /checkpoint, to audit ahead (0: only "
                                                                        "when asked).")] = 0.0,
    audit_timeout: Annotated[float, typer.Option("--audit-timeout", min=0.1, help="Seconds one audit may read the "
                                                                                  "log for.")] = AUDIT_TIMEOUT,
    max_header_bytes: HeaderBytes = HEADER_BYTES,
    header_timeout: HeaderTimeout = HEADER_TIMEOUT,
    idle_timeout: IdleTimeout = IDLE_TIMEOUT,
    max_connections: MaxConnections = CONNECTIONS,
) -> None:
    """Answer POST /add-checkpoint: cosign a log's checkpoint when its key signed it and it is consistent
    with the last one cosigned (the state: --db, a SQLite file)."""
    from ledger.services.cosigning_witness import Witness
    from ledger.web.server import run
    from ledger.web.witness_app import create_witness_app

    cosigner, logs = load_cosigner(key), parse_logs(log)
    audits = parse_audits(audit or [], logs, db_location(ctx), audit_poll, audit_timeout)
    _can_listen(host, port)
    witness = Witness(cosigner, logs, db_location(ctx), new=new, audits=audits)
    for auditor in audits.values():
        auditor.start()
    audited = f"; auditing {', '.join(audits)}" if audits else ""
    typer.echo(f"witness {cosigner.key} of {', '.join(logs)} at http://{host}:{port}/add-checkpoint "
               f"(state {redact_url(db_location(ctx))}{audited}; Ctrl-C stops)", err=True)
    bounds = limits(max_header_bytes, header_timeout, idle_timeout, max_connections)
    run(create_witness_app(witness, rate), host, port, bounds)
