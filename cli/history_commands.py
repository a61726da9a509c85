"""The audit views of the command line: `history` (every event of a subject) and `diff` (what changed in a
record between two dates). Thin: parse, call the projections, render."""

from __future__ import annotations

from typing import Annotated

import typer

from ledger.cli.common import Json, open_store, paper_option, paper_or_other_id, write_json
from ledger.cli.record_commands import KnownAt
from ledger.core.times import when
from ledger.model.parts import lane_counts, one_line, other_words
from ledger.projections import history as views
from ledger.services.replay import subject_history

app = typer.Typer()


@app.command()
def diff(
    ctx: typer.Context,
    paper: Annotated[str, typer.Argument(metavar="ID", callback=paper_option, help="arXiv id of the paper.")],
    start: Annotated[str, typer.Option("--from", help="Earlier date or timestamp.")],
    end: Annotated[str, typer.Option("--to", help="Later date or timestamp.")],
    known_at: KnownAt = None,
    json: Json = False,
) -> None:
    """What changed in a paper's record between two dates."""
    begin, finish, known = when("--from", start), when("--to", end), when("--known-at", known_at)
    result = views.paper_diff(paper, open_store(ctx).paper_facts(paper, known.key if known else None), begin, finish)
    if json:
        write_json(result)
        return
    lines = [f"arXiv:{paper} from {begin.text} to {finish.text}",
             f"context_digest {result['from']['context_digest']} → {result['to']['context_digest']}"]
    lines += [f"added: {_named(o)} (observation {o['observation_id']}, {o['digest']})" for o in result["added"]]
    lines += [f"removed: {_named(o)}" + (f": {o['account']}" if o["account"] else "")
              + f" (observation {o['observation_id']}, {o['digest']})" for o in result["removed"]]
    lines += [f"changed: {_named(o)}: {'; '.join(o['details'])} (observation {o['observation_id']}, "
              f"{o['from_digest']} → {o['to_digest']})" for o in result["changed"]]
    lines += [f"coverage {c['lane']}: {lane_counts(c['from'])} → {lane_counts(c['to'])}" for c in result["coverage"]]
    lines += result["field_details"]
    if not result["content_changed"]:
        same = result["from"]["context_digest"] == result["to"]["context_digest"]
        lines.append("no change" if same else "no change in content (the context digest follows the date: it "
                                              "covers the thesis, which names the day)")
    typer.echo("\n".join(lines))


def _named(change: dict) -> str:
    return other_words(change["direction"], change["other_id"], change["title"])


@app.command()
def history(
    ctx: typer.Context,
    subject: Annotated[str, typer.Argument(metavar="ID", callback=paper_or_other_id, help="An observation id or an "
                                                                                          "arXiv id.")],
    json: Json = False,
) -> None:
    """Every event of an observation or a paper, oldest first, with what each changed."""
    rows = subject_history(open_store(ctx), subject)
    if json:
        write_json(rows)
        return
    typer.echo("seq\teffective_at\trecorded_at\tkind\taccount")  # tab-separated, as `cut` and `sort -t` read it
    for row in rows:
        # An account carries outside text (a title, a reason): escaped, it cannot break the row or the columns.
        typer.echo(f"{row['seq']}\t{row['effective_at']}\t{row['recorded_at']}\t{row['kind']}\t{one_line(row['account'])}")
