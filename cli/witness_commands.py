"""`ledger witness serve`: a C2SP tlog-witness for the logs named, its state in the SQLite file of --db."""

from __future__ import annotations

from typing import Annotated

import typer

from ledger.cli.common import db_location
from ledger.cli.publish_commands import (
    CONNECTIONS,
    GRACE,
    HEADER_BYTES,
    HEADER_TIMEOUT,
    IDLE_TIMEOUT,
    GracePeriod,
    HeaderBytes,
    HeaderTimeout,
    IdleTimeout,
    LogFormat,
    MaxConnections,
    MetricsPort,
    NoMetrics,
    Quiet,
    _can_listen,
    limits,
    log_level,
)
from ledger.core.errors import InputError
from ledger.core.redact import redact_url
from ledger.log.signed_notes import Verifier
from ledger.services.cosigning_witness import RATE
from ledger.services.keys import load_cosigner, load_verifier

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
    max_header_bytes: HeaderBytes = HEADER_BYTES,
    header_timeout: HeaderTimeout = HEADER_TIMEOUT,
    idle_timeout: IdleTimeout = IDLE_TIMEOUT,
    max_connections: MaxConnections = CONNECTIONS,
    metrics_port: MetricsPort = None,
    no_metrics: NoMetrics = False,
    log_format: LogFormat = "plain",
    quiet: Quiet = False,
    grace_period: GracePeriod = GRACE,
) -> None:
    """Answer POST /add-checkpoint: cosign a log's checkpoint when its key signed it and it is consistent
    with the last one cosigned (the state: --db, a SQLite file)."""
    from ledger.services.cosigning_witness import Witness
    from ledger.web.health import observed_witness
    from ledger.web.logs import configure
    from ledger.web.server import run
    from ledger.web.witness_app import create_witness_app

    level = log_level(ctx, log_format, quiet)
    cosigner, logs = load_cosigner(key), parse_logs(log)
    _can_listen(host, port)
    if metrics_port is not None:
        _can_listen(host, metrics_port)
    witness = Witness(cosigner, logs, db_location(ctx), new=new)
    typer.echo(f"witness {cosigner.key} of {', '.join(logs)} at http://{host}:{port}/add-checkpoint "
               f"(state {redact_url(db_location(ctx))}; Ctrl-C stops)", err=True)
    bounds = limits(max_header_bytes, header_timeout, idle_timeout, max_connections)
    app = observed_witness(create_witness_app(witness, rate), witness, configure(log_format, level), not no_metrics,
                           metrics_port)
    run(app, host, port, bounds, grace=grace_period, metrics_port=metrics_port)
