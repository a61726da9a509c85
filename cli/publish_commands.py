"""Commands that publish the ledger: `serve` (the site over HTTP, read-only) and `publish` (the same paths
as static files). Both render through `web/`; neither writes to the ledger."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Annotated

import typer

from ledger.cli.common import Json, Meter, ShardOption, db_location, open_store, say, write_json
from ledger.core.errors import InputError, LedgerError
from ledger.core.redact import redact, redact_url
from ledger.model.parts import counted
from ledger.model.shards import EVERY
from ledger.services.keys import load_signer

# A server's default limits (`ledger.web.server`, docs/running.md), with why: this site's and a witness's request
# heads are well under 2 KiB (web.guard refuses a path or a query over 1 KiB), and 16 KiB is nginx's 2 x 8 KiB
# large_client_header_buffers; 10 s to send a request is Go's customary ReadHeaderTimeout; 5 s of keep-alive is
# uvicorn's own default; 256 connections stays well under the 1,024 file descriptors a process commonly has.
HEADER_BYTES, HEADER_TIMEOUT, IDLE_TIMEOUT, CONNECTIONS = 16 * 1024, 10.0, 5.0, 256

app = typer.Typer()


def _can_listen(host: str, port: int) -> None:
    """Fail in one line (exit 3) before uvicorn would, when the address cannot be bound."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise InputError(f"--host {host}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            raise LedgerError(f"cannot listen on {host}:{port}: {exc.strerror}") from None


# A server's limits (`ledger.web.server`), the same options for `serve` and `witness serve`.
HeaderBytes = Annotated[int, typer.Option("--max-header-bytes", min=1024, max=1024 * 1024, help=(
    "A request's head (request line and headers) over this many bytes is answered 431 and closed."))]
HeaderTimeout = Annotated[float, typer.Option("--header-timeout", min=0.1, max=3600, help=(
    "Seconds a client has to send a whole request, from its first byte (then 408 and closed), or may leave its "
    "answers unread."))]
IdleTimeout = Annotated[float, typer.Option("--idle-timeout", min=0.1, max=3600, help=(
    "Seconds a keep-alive connection may wait for its next request."))]
MaxConnections = Annotated[int, typer.Option("--max-connections", min=1, max=65536, help=(
    "Connections open at once (per worker); one more is answered 503 and closed."))]


def limits(header_bytes: int, header_timeout: float, idle_timeout: float, connections: int):
    """The `ledger.web.server.Limits` of a server's command-line options."""
    from ledger.web.server import Limits

    return Limits(header_bytes, header_timeout, idle_timeout, connections)


@app.command()
def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.", min=0, max=65535)] = 8080,
    key: Annotated[str | None, typer.Option("--key", help="Signing key file: serve /checkpoint and evidence "
                                                             "bundles (default: none, neither is served).")] = None,
    workers: Annotated[int, typer.Option("--workers", help="Worker processes.", min=1, max=64)] = 1,
    max_header_bytes: HeaderBytes = HEADER_BYTES,
    header_timeout: HeaderTimeout = HEADER_TIMEOUT,
    idle_timeout: IdleTimeout = IDLE_TIMEOUT,
    max_connections: MaxConnections = CONNECTIONS,
) -> None:
    """Serve the records' links, the evidence and the log's tiles over HTTP, read-only."""
    from ledger.web.app import create_app
    from ledger.web.server import run

    signer = load_signer(key) if key else None
    location = db_location(ctx)
    _can_listen(host, port)
    app = create_app(location, signer)  # a --db that is not a ledger fails here, in one line
    typer.echo(f"serving {redact_url(location)} at http://{host}:{port}/ ({workers} worker{'s' * (workers > 1)}; Ctrl-C stops)",
               err=True)
    bounds = limits(max_header_bytes, header_timeout, idle_timeout, max_connections)
    if workers == 1:
        run(app, host, port, bounds)
        return
    app.state.ledger.close()  # each worker opens its own
    os.environ["LEDGER_SERVE_DB"] = location
    if key:
        os.environ["LEDGER_SERVE_KEY"] = os.path.abspath(key)
    else:
        os.environ.pop("LEDGER_SERVE_KEY", None)
    run("ledger.web.app:from_environment", host, port, bounds, workers)


@app.command()
def publish(
    ctx: typer.Context,
    out: Annotated[Path, typer.Argument(metavar="OUT/", help="Folder to write the site into.")],
    as_of: Annotated[str, typer.Option("--as-of", help="Effective time: a date (end of that day, UTC) or a timestamp.")],
    key: Annotated[str | None, typer.Option("--key", help="Signing key file: write /checkpoint and evidence "
                                                             "bundles (default: none, neither is written).")] = None,
    trust_folder: Annotated[bool, typer.Option(
        "--trust-folder", help="Do not re-check the files of papers with no new event (their size and time, one "
                               "look a file): a quick daily run; a run without it finds files edited by hand.")] = False,
    shard: ShardOption = EVERY,
    json: Json = False,
) -> None:
    """Write every path `serve` answers, as of a date, as static files; only files whose bytes changed."""
    from ledger.core.times import when
    from ledger.model.arxiv import skipped_paper
    from ledger.web.publish import publish as write_site

    at = when("--as-of", as_of)
    signer = load_signer(key) if key else None
    meter = Meter("publish", "papers")  # on a terminal only: papers done, their rate, the time left
    result = write_site(open_store(ctx), out, at, signer, lambda done, total: meter.update("", done, total, done),
                        trust_folder, shard)
    meter.close()
    for paper in result.skipped:
        say(f"warning: {skipped_paper(paper)}")
    if json:
        write_json(result.as_json())
    else:
        typer.echo(f"published {counted(result.papers, 'paper')} as of {result.as_of} and the log of "
                   f"{counted(result.tree_size, 'event')} to {redact(str(out))}: rendered {counted(result.rebuilt, 'paper')}"
                   f"{f' ({result.whole})' if result.whole else ''}, wrote {counted(result.written, 'file')}, left "
                   f"{result.unchanged} unchanged")
