"""What every command module shares: the global options' values, opening the store, reading key files, the
witness options (parsed once, by `witness_policy`, into the policy a command hands on), and writing results
(a date option is read by `ledger.core.times.when`, as the web's query is; a paper id by `ledger.model.arxiv`,
as the web's path is, once, at the option: `paper_option`; `--shard K/N` by `ledger.model.shards`, at the option:
`ShardOption`). Command modules import this, never `cli.main`
(which imports them).

stdout carries results only (`write_stdout`, `write_json`); progress goes to stderr, and only on a terminal.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated

import typer

from ledger.core.canonical import canonical
from ledger.core.errors import InputError, IntegrityError
from ledger.core.inputs import decode_input, read_input
from ledger.core.limits import NOTE, Limit
from ledger.core.redact import redact
from ledger.importing.logfile import open_ledger
from ledger.model.arxiv import PREFIX, looks_like_paper_id, parse_arxiv_id
from ledger.model.shards import Shard, parse_shard
from ledger.storage.store import Store

if TYPE_CHECKING:
    from ledger.log.cosignature import CosignerKey, WitnessPolicy
    from ledger.log.signed_notes import Checkpoint, Verifier

DEFAULT_DB = "ledger.db"
Json = Annotated[bool, typer.Option("--json", help="Machine-readable output (default: text).")]  # every command's --json
Jobs = Annotated[int, typer.Option("--jobs", min=1, help="Worker processes (default 1: this one alone).")]
# The verifiers' witness options (verify-proof, verify --evidence, verify --index, monitor): see `witness_policy`.
WitnessKeys = Annotated[list[str] | None, typer.Option(
    "--witness-key", metavar="VKEY", help="A witness's cosigner key (repeat): the checkpoint must carry its "
                                          "cosignature, as many as --quorum (default: none, no cosignature is asked for).")]
Quorum = Annotated[int | None, typer.Option("--quorum", min=0, help="How many --witness-key must have cosigned "
                                                                       "(default: all).")]
PolicyFile = Annotated[str | None, typer.Option("--policy", help="A C2SP tlog-policy file instead of "
                                                                    "--witness-key and --quorum (default: none).")]
# replay, publish and monitor: this process's part of the papers (`ledger.model.shards`; docs/scale.md).
ShardOption = Annotated[Shard, typer.Option(
    "--shard", metavar="K/N", show_default=False, parser=lambda text: text if isinstance(text, Shard) else parse_shard(text),
    help="Only the papers of shard K of N (by a stable hash of the id, docs/scale.md): N processes, one per shard, "
         "together do what one does (default: 1/1, every paper).")]
Cosigned = Annotated[str | None, typer.Option(
    "--cosigned", help="The cosigned checkpoint of the same tree, when the proof's is the paper index note "
                       "(default: the cosignatures are looked for on the proof's own checkpoint).")]


def say(message: str) -> None:
    """One line on stderr, `ledger: ` first: every error, warning and note a command prints goes through here,
    and so through `redact`, whatever it quotes: a key handed to the wrong option, a database URL or a peer's
    words are never printed as given (a usage error quotes the value it refused)."""
    typer.echo(f"ledger: {redact(message)}", err=True)


def db_location(ctx: typer.Context) -> str:
    return ctx.obj["db"]


def open_store(ctx: typer.Context) -> Store:
    """The ledger named by --db (an exported .jsonl log is loaded read-only); never creates one."""
    return open_ledger(db_location(ctx))


def paper_option(param: typer.CallbackParam, value: str | None) -> str | None:
    """Typer callback of an option or argument that takes a paper id: the bare id (`arXiv:` dropped), before
    the command runs, so a bad one opens nothing. A version is noted on stderr: records are per paper."""
    if value is None:
        return None
    name = param.opts[0] if param.param_type_name == "option" else param.human_readable_name
    typed = parse_arxiv_id(value, name)
    if typed.version is not None:
        say(f"note: {value} names version {typed.version}; records are per paper: answering for {PREFIX}{typed.paper}")
    return typed.paper


def paper_or_other_id(param: typer.CallbackParam, value: str) -> str:
    """Typer callback of an argument that is a paper id or another id (an observation's): only what has a
    paper id's shape (a prefix, digits-dot-digits, archive/digits) is read as one, by `paper_option`."""
    return paper_option(param, value) if looks_like_paper_id(value) else value


def read_text(name: str, expected: str, limit: Limit = NOTE) -> str:
    """The text of a file a user names (a signed checkpoint, unless `limit` says otherwise), read up to `limit`.
    Raises: InputError naming the file when it cannot be read, is over `limit`, empty or not text."""
    return decode_input(name, read_input(name, limit), expected)


def progress(message: str) -> None:
    """Progress goes to stderr, and only when a person is watching."""
    if sys.stderr.isatty():
        typer.echo(message, err=True)


class Meter:
    """Progress of long work on stderr, only when a person is watching (stderr is a terminal): one line,
    redrawn in place at most every `every` seconds, saying how much is done, the rate and the time left.

    `update(stage, done, total, count)`: `done` of `total` (None: unknown, no time left shown) in the unit
    the time left is judged by (bytes of input, papers), and `count` things (`noun`) so far; the rate is of
    `count` since the stage began. `close()` ends the line.
    """

    def __init__(self, label: str, noun: str, every: float = 0.25, clock: Callable[[], float] = time.monotonic):
        self.label, self.noun, self.every, self.clock = label, noun, every, clock
        self.live = sys.stderr.isatty()
        self.stage: str | None = None
        self.started = self.drawn = 0.0
        self.line = ""

    def update(self, stage: str, done: int, total: int | None, count: int) -> None:
        if not self.live:
            return
        now = self.clock()
        if stage != self.stage:
            self.stage, self.started, self.drawn = stage, now, 0.0
        elif now - self.drawn < self.every and (total is None or done < total):
            return
        self.drawn = now
        elapsed = now - self.started
        parts = [f"{self.label}: {stage}" if stage else f"{self.label}:"]
        if total:
            parts.append(f"{done * 100 // total}%,")
        parts.append(f"{count:,} {self.noun[:-1] if count == 1 else self.noun}")  # nouns are given plural
        if elapsed > 0 and count:
            parts[-1] += ","
            parts.append(f"{count / elapsed:,.0f} {self.noun}/s")
            if total and 0 < done < total:
                parts[-1] += ","
                parts.append(f"about {elapsed * (total - done) / done:,.0f} s left")
        self.line = " ".join(parts)
        sys.stderr.write(f"\r{self.line}\x1b[K")
        sys.stderr.flush()

    def close(self) -> None:
        if self.line:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self.line = ""


def write_stdout(data: bytes) -> None:
    """A result on stdout, exactly its bytes; on a terminal it ends in a newline (one is added if it lacks
    one), so the prompt does not follow a record. Piped or redirected, nothing is added: a record stays
    its published bytes."""
    sys.stdout.buffer.write(data)
    if data and not data.endswith(b"\n") and sys.stdout.isatty():
        sys.stdout.buffer.write(b"\n")
    sys.stdout.buffer.flush()


def write_json(value: object) -> None:
    """`--json` output: one canonical line (stable, sorted keys) on stdout."""
    write_stdout(canonical(value) + b"\n")


def witness_policy(log: str, keys: Sequence[str | CosignerKey] | None, quorum: int | None, policy: str | None,
                   cosigned: str | None = None, key_option: str = "--witness-key") -> WitnessPolicy | None:
    """A command's witness options, parsed once at its start into the policy it hands on (verify-proof, verify,
    monitor, checkpoint alike): the keys of `key_option` (repeated: a vkey file or its text, or a key read with
    its URL, as checkpoint's --witness) with --quorum (default: all), or the C2SP tlog-policy file --policy, whose
    log lines must list `log` (the log's verifier key); with --cosigned, the checkpoint to count them on. None
    when no witness is asked for.
    Raises: InputError for options that do not go together, or a key, policy or file that cannot be read."""
    from ledger.log.cosignature import CosignerKey, WitnessPolicy, policy_of
    from ledger.services.keys import load_cosigner_key, load_policy

    loaded = [key if isinstance(key, CosignerKey) else load_cosigner_key(key) for key in keys or []]
    rule = policy_of(loaded, quorum, load_policy(policy) if policy else None, log, key_option, policy or "--policy")
    if rule is None:
        if cosigned is not None:
            raise InputError("--cosigned gives a checkpoint to count witnesses on: give --witness-key or --policy")
        return None
    if cosigned is None:
        return WitnessPolicy(rule)
    return WitnessPolicy(rule, read_text(cosigned, "a cosigned checkpoint"), cosigned)


def witness_check(policy: WitnessPolicy | None, verifier: Verifier, note: str,
                  carried: str | None = None) -> tuple[str, list[str] | None]:
    """What `policy` adds to a verifier's account, and who cosigned (sorted; None: no witness asked for): ""
    without a policy; else the witnesses, once its quorum is met on its cosigned checkpoint (else the one a
    bundle `carried`, else `note`), which must be of the tree of `note`, the log-signed note the proof or bundle
    was checked against.
    Raises: IntegrityError when the policy is not met, or the checkpoint counted on is of another tree."""
    from ledger.audit.quorum import witnessed
    from ledger.log.signed_notes import verify_checkpoint

    if policy is None:
        return "", None
    if policy.cosigned is not None:
        text, name = policy.cosigned, policy.cosigned_name
    else:
        text, name = (note, "checkpoint") if carried is None else (carried, "the bundle's cosigned checkpoint")
    of = verify_checkpoint(note, verifier)
    audited = _audited(policy, verifier, note, of)
    if audited is not None:
        return audited
    try:
        found = sorted(witnessed(text, verifier, policy.rule, of, name))
    except IntegrityError as exc:
        if policy.cosigned is None and carried is None and of.index_root is not None:
            raise IntegrityError(f"{exc} (this is the paper index note, which only auditing witnesses cosign: give "
                                 f"--cosigned with the checkpoint they cosigned)") from None
        raise
    return f"; witnessed by {', '.join(found) or 'none needed'} ({len(found)} of {len(policy.rule.witnesses)})", found


def _audited(policy: WitnessPolicy, verifier: Verifier, note: str, of: Checkpoint) -> tuple[str, list[str]] | None:
    """With no --cosigned, the policy met on the paper index note itself (auditing witnesses cosign it, once
    they re-computed the index: docs/witnesses.md): the account saying so, and who; else None (counted then
    on the checkpoint, as by plain witnesses)."""
    from ledger.audit.quorum import witnessed
    from ledger.model.parts import counted

    if policy.cosigned is not None or of.index_root is None or not policy.rule.cosigned(note):
        return None
    try:
        found = sorted(witnessed(note, verifier, policy.rule, of, "the paper index note"))
    except IntegrityError:
        return None
    by = counted(len(found), "auditing witness", "auditing witnesses")
    return (f"; the index checked by {by}: {', '.join(found) or 'none needed'} ({len(found)} of "
            f"{len(policy.rule.witnesses)})", found)
