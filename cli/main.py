"""The typer application: its global options, the command modules joined into one app, and the one place
where errors become exit codes. It only assembles: shared helpers live in `cli.common`.

Exit codes: 0 success; 1 a verification failed or nothing exists as of that date; 2 bad input or usage;
3 the check could not run (store unreachable, locked past its timeout, or an internal error).
stdout carries results only; errors are one line each on stderr, with no traceback unless --verbose.
"""

from __future__ import annotations

import sys
import traceback
from typing import Annotated

import typer
from typer.core import TyperGroup

from ledger import __version__
from ledger.cli import log_commands, proof_commands, publish_commands, record_commands
from ledger.cli.common import DEFAULT_DB
from ledger.core.errors import LedgerError


class LedgerGroup(TyperGroup):
    """Maps every LedgerError to its exit code; nothing else in the CLI decides an exit code."""

    def invoke(self, ctx: typer.Context):
        try:
            return super().invoke(ctx)
        except LedgerError as exc:
            for problem in exc.problems:
                typer.echo(f"ledger: {problem}", err=True)
            if ctx.obj and ctx.obj.get("verbose"):
                traceback.print_exc()
            ctx.exit(exc.exit_code)
        except (typer.Exit, typer.Abort, typer.TyperException):
            raise
        except BrokenPipeError:
            # A reader that stopped early (`| head`) is not an error of ours.
            sys.stderr.close()
            ctx.exit(0)
        except Exception as exc:  # a bug: say so in one line, keep the traceback for --verbose
            typer.echo(f"ledger: internal error: {type(exc).__name__}: {exc} (run with --verbose for details)",
                       err=True)
            if ctx.obj and ctx.obj.get("verbose"):
                traceback.print_exc()
            ctx.exit(3)


app = typer.Typer(
    cls=LedgerGroup,
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help="An event-sourced, hash-chained ledger behind Paper Citation Records.",
)


def _version(shown: bool) -> None:
    if shown:
        typer.echo(f"ledger {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    ctx: typer.Context,
    db: Annotated[str, typer.Option("--db", envvar="LEDGER_DB", help="SQLite path, SQLAlchemy URL, or an "
                                    "exported .jsonl log (read-only).")] = DEFAULT_DB,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show tracebacks.")] = False,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    ctx.obj = {"db": db, "verbose": verbose}


app.add_typer(record_commands.app)
app.add_typer(log_commands.app)
app.add_typer(proof_commands.app)
app.add_typer(publish_commands.app)


def main() -> None:
    app()
