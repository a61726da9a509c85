"""The typer application: its global options, the command modules joined into one app, and the one place
where errors become exit codes. It only assembles: shared helpers live in `cli.common`.

Exit codes: 0 success; 1 a verification failed or nothing exists as of that date; 2 bad input or usage;
3 the check could not run (store unreachable, locked past its timeout, or an internal error).
stdout carries results only; errors are one line each on stderr, with no traceback unless --verbose.
"""

from __future__ import annotations

import inspect
import sys
import traceback
import warnings
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from ledger import __version__
from ledger.cli import (
    history_commands,
    log_commands,
    monitor_commands,
    ops_commands,
    proof_commands,
    publish_commands,
    record_commands,
    witness_commands,
)
from ledger.cli.common import DEFAULT_DB, say
from ledger.core.errors import LedgerError
from ledger.core.redact import redact
from ledger.services.keys import ExposedKeyWarning

GLOBAL_FLAGS, GLOBAL_VALUED = ("-v", "--verbose"), ("--db",)
# Click's error types as this typer has them (typer 0.28 carries its own copy of click): found from typer's own.
_CLICK = {cls.__name__: cls for cls in typer.BadParameter.__mro__}
UsageError, ClickException = _CLICK["UsageError"], _CLICK["ClickException"]
NoArgsIsHelp = getattr(sys.modules[UsageError.__module__], "NoArgsIsHelpError", ())


def hoisted(args: list[str]) -> list[str]:
    """`args` with the global options given after the command (`ledger head --db x -v`) moved before it, where
    the group reads them; nothing after `--` moves."""
    index = 0
    while index < len(args) and args[index].startswith("-") and args[index] != "--":  # options before the command
        index += 2 if args[index] in GLOBAL_VALUED else 1
    head, rest, moved = args[: index + 1], args[index + 1:], []
    kept: list[str] = []
    position = 0
    while position < len(rest):
        token = rest[position]
        if token == "--":
            kept += rest[position:]
            break
        if token in GLOBAL_FLAGS or token.startswith(tuple(f"{name}=" for name in GLOBAL_VALUED)):
            moved.append(token)
        elif token in GLOBAL_VALUED and position + 1 < len(rest):
            moved += rest[position: position + 2]
            position += 1
        else:
            kept.append(token)
        position += 1
    return moved + head + kept if moved else args


def _warned(message, category, filename, lineno, file=None, line=None) -> None:
    """`warnings.showwarning` for the command line: one line on stderr, as errors are (ssh's words for an
    exposed key: "WARNING: ledger.key is readable by others ...")."""
    say(f"WARNING: {message}")


class LedgerGroup(TyperGroup):
    """Maps every LedgerError to its exit code, and every usage error to one line and exit 2; nothing else in
    the CLI decides an exit code."""

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        argv = hoisted(list(sys.argv[1:] if args is None else args))
        warnings.showwarning = _warned
        warnings.simplefilter("always", ExposedKeyWarning)  # every run that loads the key says so, not the first only
        try:
            code = super().main(args=argv, prog_name="ledger", complete_var=complete_var,  # also under python -m
                                standalone_mode=False, **extra)
        except NoArgsIsHelp:  # typer has printed the help already
            code = 2
        except UsageError as exc:  # an unknown option, a missing argument, a bad value
            where = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
            say(f"{exc.format_message()}{where}")
            code = exc.exit_code
        except ClickException as exc:
            say(exc.format_message())
            code = exc.exit_code
        except typer.Abort:
            say("aborted")
            code = 1
        code = code if isinstance(code, int) else 0
        if standalone_mode:
            sys.exit(code)
        return code

    def invoke(self, ctx: typer.Context):
        try:
            return super().invoke(ctx)
        except LedgerError as exc:
            for problem in exc.problems:
                say(problem)
            if ctx.obj and ctx.obj.get("verbose"):
                sys.stderr.write(redact(traceback.format_exc()))  # --verbose too: never a key or password
            ctx.exit(exc.exit_code)
        except (typer.Exit, typer.Abort, typer.TyperException):
            raise
        except BrokenPipeError:
            # A reader that stopped early (`| head`) is not an error of ours.
            sys.stderr.close()
            ctx.exit(0)
        except Exception as exc:  # a bug: say so in one line, keep the traceback for --verbose
            say(f"internal error: {type(exc).__name__}: {exc} (run with --verbose for details)")
            if ctx.obj and ctx.obj.get("verbose"):
                sys.stderr.write(redact(traceback.format_exc()))  # --verbose too: never a key or password
            ctx.exit(3)


app = typer.Typer(
    cls=LedgerGroup,
    add_completion=True,
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
app.add_typer(history_commands.app)
app.add_typer(log_commands.app)
app.add_typer(proof_commands.app)
app.add_typer(publish_commands.app)
app.add_typer(witness_commands.app, name="witness")
app.add_typer(monitor_commands.app)
app.add_typer(ops_commands.app)


def _reflowed(commands: typer.Typer) -> None:
    """Each command's docstring as help with one line per paragraph: rich keeps a docstring's line breaks in the
    command list, where the source's wrapping showed as gaps mid-sentence; the terminal's width wraps it now."""
    for command in commands.registered_commands:
        text = command.help or inspect.getdoc(command.callback) or ""
        command.help = "\n\n".join(" ".join(paragraph.split()) for paragraph in text.split("\n\n"))
    for group in commands.registered_groups:
        _reflowed(group.typer_instance)


_reflowed(app)


def main() -> None:
    app()
