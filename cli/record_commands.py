"""Commands about records: import, replay and verify (the audit views are `history_commands`)."""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path
from typing import Annotated

import typer

from ledger.audit.auditor import load_json, verify_index
from ledger.audit.evidence import verify_bundle
from ledger.cli.common import (
    Cosigned,
    Jobs,
    Json,
    Meter,
    PolicyFile,
    Quorum,
    ShardOption,
    WitnessKeys,
    db_location,
    open_store,
    paper_option,
    progress,
    read_text,
    say,
    witness_check,
    witness_policy,
    write_json,
    write_stdout,
)
from ledger.cli.wording import (
    bundle_account,
    chain_account,
    index_account,
    manifest_account,
    record_lines,
    store_account,
)
from ledger.core.canonical import canonical
from ledger.core.errors import InputError, IntegrityError, NotFoundError
from ledger.core.files import Folder, write_file
from ledger.core.inputs import input_files, read_input
from ledger.core.limits import BUNDLE, RECORD
from ledger.core.times import when
from ledger.core.workers import Workers
from ledger.importing.importer import import_files
from ledger.importing.logfile import is_exported_log, log_entries
from ledger.log.chain import hex_hash
from ledger.model.arxiv import is_paper_id, skipped_paper
from ledger.model.parts import counted
from ledger.model.shards import EVERY
from ledger.projections.text import render_text
from ledger.services.backup import backup_manifest, verify_manifest
from ledger.services.keys import load_signer, load_verifier
from ledger.services.proofs import evidence_bundle, latest_witnessed
from ledger.services.replay import record_as_of, render_records, shared
from ledger.services.verify import compare_record, verify_chain
from ledger.services.verify_store import verify_paper_ids, verify_store
from ledger.storage.backends import sqlite_path
from ledger.storage.store import Store

app = typer.Typer()

AsOf = Annotated[str, typer.Option("--as-of", help="Effective time: a date (end of that day, UTC) or a timestamp.")]
KnownAt = Annotated[str | None, typer.Option("--known-at", help="Only events the ledger had recorded by then "
                                                                   "(default: all it holds now).")]


@app.command("import")
def import_(
    ctx: typer.Context,
    files: Annotated[list[str], typer.Argument(help="Published records (JSON) or event lines (JSONL); - for stdin; a "
                                                   "directory: the .json and .jsonl files below it.")],
    json: Json = False,
    jobs: Jobs = 1,
    withdraw_missing: Annotated[bool, typer.Option("--withdraw-missing", help="A record that no longer lists "
                                                   "observations the ledger lists at its as_of: append one "
                                                   "observation.withdrawn each, at that as_of, instead of "
                                                   "refusing it. Default: off.")] = False,
) -> None:
    """Append the facts of published records or event lines, all or nothing."""
    with Workers(jobs) as workers:  # before the store connects: a forked worker must share no connection
        store = open_store(ctx)
        meter = Meter("import", "events")
        result = import_files(store, files, (lambda p: meter.update(*p)) if meter.live else None, workers,
                              withdraw_missing=withdraw_missing)
        meter.close()
    seq, chain = result.head
    if json:
        write_json({"appended": result.appended, "present": result.present,
                    "head": {"seq": seq, "chain_hash": hex_hash(chain)}})
    else:
        typer.echo(f"appended {counted(result.appended, 'event')} ({result.present} already present); head {seq} "
                   f"{hex_hash(chain)}")


def _render(record: dict, fmt: str) -> bytes:
    return canonical(record) if fmt == "json" else render_text(record).encode()


# Long: ten options' lines, then three modes (a bundle, one paper, every paper) that share them.
@app.command()
def replay(
    ctx: typer.Context,
    as_of: AsOf,
    paper: Annotated[str | None, typer.Option("--paper", callback=paper_option, help="arXiv id; default: every "
                                                                                        "paper.")] = None,
    known_at: KnownAt = None,
    fmt: Annotated[str, typer.Option("--format", help="json or text.")] = "json",
    out: Annotated[Path | None, typer.Option("--out", help="File (one paper) or folder (every paper); default: "
                                                              "stdout.")] = None,
    stats: Annotated[bool, typer.Option("--stats", help="SQL statements, events read and time on stderr.")] = False,
    evidence: Annotated[Path | None, typer.Option("--evidence", help="Write an evidence bundle to this file (needs "
                                                                        "--paper, --key); default: none.")] = None,
    key: Annotated[str | None, typer.Option("--key", help="Signing key file for the bundle's checkpoint (with "
                                                             "--evidence; default: none).")] = None,
    jobs: Jobs = 1,
    shard: ShardOption = EVERY,
) -> None:
    """Rebuild records as of a date, byte for byte as published."""
    if fmt not in ("json", "text"):
        raise InputError(f"--format: expected json or text, found {fmt!r}")
    at, known = when("--as-of", as_of), when("--known-at", known_at)
    known_key = known.key if known else None
    if not shard.whole and (paper is not None or evidence is not None):
        raise InputError("--shard: splits every paper's records, not with --paper or --evidence")
    if evidence is not None:
        if paper is None or key is None:
            raise InputError("--evidence: needs --paper and --key")
        if stats or jobs > 1:
            raise InputError("--evidence: --stats and --jobs do not apply to a bundle")
        signer = load_signer(key)
        store = open_store(ctx)
        bundle = evidence_bundle(store, paper, at, signer, known_key, witnessed=latest_witnessed(store, signer.verifier))
        write_file(evidence, canonical(bundle))
        typer.echo(f"wrote {evidence}: every event of arXiv:{paper} in the log of size {bundle['index']['tree_size']} "
                   f"({len(bundle['events'])}), each with its inclusion proofs, the paper index proof and a signed "
                   "checkpoint")
        if out is not None:  # the record the bundle rebuilds, as --out writes it without --evidence
            write_file(out, _render(bundle["record"], fmt))
            typer.echo(f"wrote {out}: the record of arXiv:{paper} as of {bundle['record']['as_of']}")
        return
    if key is not None:
        raise InputError("--key: only with --evidence (it signs the bundle's checkpoint)")
    store = open_store(ctx)
    started, store.statements = time.perf_counter(), 0
    known_note = f" known at {known.text}" if known else ""  # why nothing may be found
    if paper is not None:
        facts = store.paper_facts(paper, known_key)
        record = record_as_of(store, paper, at, known, facts)
        data = _render(record, fmt)
        if out is not None:
            write_file(out, data)
        else:
            write_stdout(data)
        if stats:
            elapsed = (time.perf_counter() - started) * 1000
            typer.echo(f"statements: {store.statements}, events read: {len(facts)}, time: {elapsed:.1f} ms", err=True)
        return
    if out is not None:
        _folder(out)
    if jobs > 1 and not shared(store):
        jobs = 1  # an exported log, loaded into this process's memory: no worker could open it
    if jobs > 1:  # workers fork before their parent's connection exists; each opens its own
        store.close()
    emit = partial(_emit, out, fmt)
    count = 0
    with Workers(jobs) as workers:
        meter = Meter("replay", "records")
        total = store.paper_count(at.key, known_key) if meter.live and shard.whole else None
        for count, (arxiv_id, data) in enumerate(render_records(store, at, known_key, emit, workers, shard), start=1):
            if data == SKIPPED:
                say(f"warning: {skipped_paper(arxiv_id)}")
            elif data is not None:
                write_stdout(data)
            meter.update("", count, total, count)
        meter.close()
    if count == 0 and not shard.whole and store.paper_count(at.key, known_key):
        say(f"note: no paper of shard {shard} as of {at.text}{known_note}; the other shards hold them")
    elif count == 0:
        raise NotFoundError(f"no record of any paper as of {at.text}{known_note}")
    if stats:
        elapsed = time.perf_counter() - started
        workers_note = " in this process (the workers' not counted)" if jobs > 1 else ""
        typer.echo(f"statements: {store.statements}{workers_note}, papers: {count}, time: {elapsed * 1000:.1f} ms, "
                   f"{count / elapsed:,.0f} records/s", err=True)


SKIPPED = "skipped"  # what `_emit` gives for a paper it wrote no file for (a str: it crosses from a worker)


def _emit(out: Path | None, fmt: str, arxiv_id: str, record: dict) -> bytes | str | None:
    """One record: written to `out/<arxiv_id>.json` (or `.txt`), or returned for stdout; SKIPPED for a paper
    whose id cannot be a file name (appended before import checked ids). Runs in a worker process under --jobs."""
    if out is not None and not is_paper_id(arxiv_id):
        return SKIPPED
    data = _render(record, fmt)
    if out is None:
        return data + b"\n"
    with Folder(out, create=False) as folder:
        folder.put(f"{arxiv_id}{'.json' if fmt == 'json' else '.txt'}", data)
    return None


def _folder(path: Path) -> None:
    """`--out` of every paper: a folder, made if missing."""
    if path.exists() and not path.is_dir():
        raise InputError(f"--out {path}: exists and is not a folder (without --paper, --out is a folder: one file "
                         "per paper)")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"--out {path}: cannot make the folder: {exc.strerror}") from None


@app.command()
def verify(
    ctx: typer.Context,
    records: Annotated[list[str] | None, typer.Argument(help="Published records, or folders of them; none: check "
                                                                "the whole chain.")] = None,
    evidence: Annotated[str | None, typer.Option("--evidence", help="An evidence bundle: checked offline, alone; "
                                                                       "default: none.")] = None,
    index: Annotated[str | None, typer.Option("--index", help="An exported log: re-compute its paper index "
                                                 "and check it against --checkpoint (default: none).")] = None,
    checkpoint: Annotated[str | None, typer.Option("--checkpoint", help="A signed checkpoint (with --index; "
                                                                           "default: none).")] = None,
    verifier_key: Annotated[str | None, typer.Option("--verifier-key", help="The log's verifier key: a .vkey file "
                                                                               "or its text (with --evidence or "
                                                                               "--index; default: none).")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="A record must be today's rebuild, not only what the "
                                         "ledger knew when it was published.")] = False,
    full: Annotated[bool, typer.Option("--full", help="With no file: also re-derive every stored row from the "
                                       "entries (each event's subject, paper and effective key, the paper links, the "
                                       "Merkle nodes, the paper index) and name the first that differs. Default: off "
                                       "(the chain only).")] = False,
    witness_key: WitnessKeys = None,
    quorum: Quorum = None,
    policy: PolicyFile = None,
    cosigned: Cosigned = None,
    manifest: Annotated[str | None, typer.Option("--manifest", help="With no file: a backup's manifest the ledger "
                                                 "must match (default: DB.manifest.json beside a SQLite --db, if "
                                                 "there).")] = None,
    json: Json = False,
) -> None:  # long: one branch per kind of check, each a few lines
    """Re-check published records (digests and history), or with no file the whole chain (--full: and every row
    derived from it; with a backup's manifest: its head and checkpoints)."""
    witness_options = (witness_key, quorum, policy, cosigned)
    if (witness_key or any(option is not None for option in witness_options[1:])) and index is None and evidence is None:
        raise InputError("--witness-key, --quorum, --policy and --cosigned: only with --evidence or --index")
    if full and (index is not None or evidence is not None):
        raise InputError("--full: checks the ledger itself, not with --evidence or --index")
    if index is not None:
        if checkpoint is None or verifier_key is None or evidence is not None or records:
            raise InputError("--index: needs --checkpoint and --verifier-key, and nothing else to verify")
        note, verifier = read_text(checkpoint, "a signed checkpoint"), load_verifier(verifier_key)
        witnessing = witness_policy(str(verifier), *witness_options)
        matched = verify_index(log_entries(index), note, verifier, checkpoint)
        words, found = witness_check(witnessing, verifier, note)
        account = index_account(matched, checkpoint) + words
        _say(json, {"ok": True, "checked": "index", "file": index, "account": account, "witnessed_by": found},
             f"{index}: {account}")
        return
    if checkpoint is not None:
        raise InputError("--checkpoint: only with --index")
    if evidence is not None:
        if verifier_key is None:
            raise InputError("--evidence: needs --verifier-key")
        if records or strict:
            raise InputError("--evidence: checks one bundle, nothing else: verify RECORD files (or --strict) in "
                             "another run")
        bundle, verifier = load_json(evidence, read_input(evidence, BUNDLE)), load_verifier(verifier_key)
        witnessing = witness_policy(str(verifier), *witness_options)
        proved = verify_bundle(bundle, verifier, evidence)
        note = bundle["checkpoint"]  # verify_bundle has checked it is a note the log signed
        words, found = witness_check(witnessing, verifier, note, bundle.get("cosigned"))
        account = bundle_account(proved) + words
        complete = True if proved.indexed is not None else None  # None: a bundle from before the index proves none
        _say(json, {"ok": True, "checked": "evidence", "file": evidence, "complete": complete, "account": account,
                    "witnessed_by": found}, f"{evidence}: {account}")
        return
    location = db_location(ctx)
    manifest = manifest if manifest is not None or records else backup_manifest(location)
    if verifier_key is not None and manifest is None:
        raise InputError("--verifier-key: only with --evidence, --index or a backup's manifest")
    if not records:
        if is_exported_log(location):  # entries only: nothing derived is stored in it
            account = chain_account(verify_chain(log_entries(location), progress))
        elif full:
            account = store_account(verify_store(open_store(ctx), progress))
        else:
            store = open_store(ctx)
            account = chain_account(verify_chain(store.entries(), progress))
            verify_paper_ids(store)  # a paper id appended before import checked ids, named as --full names it
        if manifest is not None:
            verifier = load_verifier(verifier_key) if verifier_key is not None else None
            account += "; " + manifest_account(verify_manifest(open_store(ctx), manifest, verifier))
        _say(json, {"ok": True, "checked": "store" if full and not is_exported_log(location) else "chain",
                    "account": account}, account)
        return
    if full or manifest is not None:
        raise InputError(f"{'--full' if full else '--manifest'}: checks the ledger itself, with no RECORD file")
    _verify_records(input_files(records, (".json",)), _store_if_any(ctx), strict, json)


def _verify_records(names: list[str], store: Store | None, strict: bool, json: bool) -> None:
    """Every record that can be read is checked and reported, in order; then the problems, and the worst
    exit code: 2 when a file could not be read as a record, else 1 when a check failed."""
    checks, unread = [], []
    for name in names:
        try:
            checks.append(compare_record(name, read_input(name, RECORD), store, strict))
        except InputError as exc:
            unread.append((name, str(exc)))
    lines = [record_lines(check) for check in checks]
    if json:  # one object: the files' reports in order, then those that could not be read
        files = [{"file": c.name, "ok": not c.problems, "history": c.history,
                  **({"problems": c.problems} if c.problems else {"account": said[0]})} for c, said in zip(checks, lines)]
        files += [{"file": name, "ok": False, "history": None, "problems": [problem]} for name, problem in unread]
        write_json({"ok": all(f["ok"] for f in files), "checked": "records", "files": files})
    else:
        for said in lines:
            for line in said:
                typer.echo(line)
    failures = [problem for check in checks for problem in check.problems]
    if unread:
        raise InputError(f"{counted(len(unread), 'file')} not read", failures + [problem for _, problem in unread])
    if failures:
        raise IntegrityError(counted(len(failures), "problem"), failures)


def _store_if_any(ctx: typer.Context) -> Store | None:
    """Records re-check without a ledger; with one, they are also compared with its history."""
    location = db_location(ctx)
    path = sqlite_path(location)
    if path is not None and not Path(path).exists():
        progress(f"no ledger at {location}: checking published digests only")
        return None
    return open_store(ctx)


def _say(json: bool, result: dict, text: str) -> None:
    if json:
        write_json(result)
    else:
        typer.echo(text)
