"""One id rule at the door (issue 42): the id of every paper the ledger keeps records for is checked by
`ledger.model.arxiv` at import, in event lines, records and exported logs. A bad id is exit 2, one line naming
the input, the line and the field; nothing is appended. A citation's citing and cited ids are data: a reference
may carry a malformed identifier, kept byte for byte."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.core.canonical import canonical
from ledger.core.errors import InputError
from ledger.core.times import When
from ledger.importing import decode
from ledger.importing.importer import import_files
from ledger.importing.logfile import open_log
from ledger.model.arxiv import is_paper_id
from ledger.projections.record import build_record
from tests.conftest import SEED_004, Cli
from tests.helpers import event_line, redigest, seed_record, write_record

SNAPSHOT = {"snapshot_observed_at": "2026-01-01T00:00:00Z"}
GOOD = event_line("paper.snapshot", {"arxiv_id": "2407.20018", **SNAPSHOT})
EXAMPLE = "(expected e.g. 2407.20018 or hep-th/9901001)"
# What an attacker would write, and what a careless export would: a prefix or a version is not the one spelling.
BAD = ["/tmp/x/OUTSIDE", "../../etc/passwd", "..", "2407.20018/../../x", "a\\b", "", "2407.20018 ", "2407.20018\n",
       "arXiv:2407.20018", "2407.20018v2", "hep-th/9901001/", "2407.2001\x00"]


def facts_of(kind: str, paper: str) -> dict:
    """A payload of `kind` about `paper`, well formed but for the id."""
    at = "2026-01-02T00:00:00Z"
    return {"paper.snapshot": {"arxiv_id": paper, **SNAPSHOT},
            "source.checked": {"observed_at": at, "paper": paper, "source": "crossref"},
            "measurements.checked": {"measurements": [], "observed_at": at, "paper": paper, "source": "arxiv_reference"},
            "coverage.counted": {"observed_at": at, "paper": paper,
                                 "lanes": {lane: {"denominator": 1, "records_observed": 1} for lane in
                                           ("inbound_itemization", "reference_resolution", "standing_notices")}}}[kind]


def legacy_ledger(location: str, tmp_path, bad: str, monkeypatch) -> Cli:
    """A ledger holding seed 004 and a snapshot of the paper `bad`, appended as before this change (the door's
    check bypassed): what a ledger written by an older version may hold."""
    cli = Cli(location)
    assert cli("init").exit_code == 0
    lines = tmp_path / "legacy.jsonl"
    lines.write_bytes(event_line("paper.snapshot", {"arxiv_id": bad, "title": "Escape", **SNAPSHOT}))
    with monkeypatch.context() as patched:
        patched.setattr(decode, "checked_paper", lambda event: event)
        result = cli("import", str(SEED_004), str(lines))
    assert result.exit_code == 0, result.stderr
    return cli


def test_is_paper_id_is_the_one_spelling():
    assert is_paper_id("2407.20018") and is_paper_id("hep-th/9901001") and is_paper_id("math.AG/0601001")
    assert not any(is_paper_id(bad) for bad in BAD) and not is_paper_id(None) and not is_paper_id(2407.20018)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), st.from_regex(r"[a-z.\-]{1,12}/[0-9./]{1,9}", fullmatch=True),
                 st.from_regex(r"[0-9.]{4,11}(/[.]{1,2})?", fullmatch=True)))
@pytest.mark.slow
def test_an_id_the_door_accepts_is_a_path_of_plain_names(text):
    # What import lets in is what replay --out and publish join to a folder: it must stay a relative path of
    # plain names (the file helper's own rule), whatever the text.
    if is_paper_id(text):
        parts = text.split("/")
        assert len(parts) <= 2 and all(p not in ("", ".", "..") and p.isascii() and p.isprintable() for p in parts)
        assert not any(c in text for c in "\\\x00 :")


@pytest.mark.parametrize("bad", BAD)
def test_a_snapshot_line_with_a_bad_id_is_refused_naming_line_and_field(cli, tmp_path, bad):
    assert cli("init").exit_code == 0
    lines = tmp_path / "bad.jsonl"
    lines.write_bytes(GOOD + event_line("paper.snapshot", {"arxiv_id": bad, **SNAPSHOT}))
    result = cli("import", str(lines))
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (f"ledger: {lines}: line 2: field payload.arxiv_id: not an arXiv id: {bad!r} {EXAMPLE}\n")
    assert cli("head").stdout.startswith("0 ")  # nothing appended, not even the good line before it


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["source.checked", "measurements.checked", "coverage.counted"])
@pytest.mark.parametrize("bad", ["/tmp/x/OUTSIDE", "../../etc/passwd"])
def test_every_paper_level_fact_is_checked(cli, tmp_path, kind, bad):
    assert cli("init").exit_code == 0
    result = cli("import", "-", input=GOOD + event_line(kind, facts_of(kind, bad)))
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == f"ledger: -: line 2: field payload.paper: not an arXiv id: {bad!r} {EXAMPLE}\n"
    assert cli("head").stdout.startswith("0 ")
    assert cli("import", "-", input=GOOD + event_line(kind, facts_of(kind, "2407.20018"))).exit_code == 0


@pytest.mark.parametrize("bad", ["/tmp/x/OUTSIDE", "../../etc/passwd", "arXiv:2407.20018"])
def test_a_record_with_a_bad_id_is_refused(cli, tmp_path, bad):
    assert cli("init").exit_code == 0
    record = seed_record()
    record["paper"]["arxiv_id"] = bad
    path = write_record(tmp_path / "bad.json", redigest(record))
    result = cli("import", path)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == f"ledger: {path}: field paper.arxiv_id: not an arXiv id: {bad!r} {EXAMPLE}\n"
    assert cli("head").stdout.startswith("0 ")


def test_an_exported_log_with_a_bad_id_is_refused_by_import_and_as_a_db(tmp_path, new_location, monkeypatch):
    legacy = legacy_ledger(new_location(), tmp_path, "../../etc/passwd", monkeypatch)
    exported = tmp_path / "exported.jsonl"
    exported.write_text(legacy("export").stdout)
    seq = len(exported.read_text().splitlines())
    fresh = Cli(new_location())
    assert fresh("init").exit_code == 0
    result = fresh("import", str(exported))
    expected = f"{exported}: line {seq}: field payload.arxiv_id: not an arXiv id: '../../etc/passwd' {EXAMPLE}"
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", f"ledger: {expected}\n")
    assert fresh("head").stdout.startswith("0 ")
    # An exported log read as a ledger (`--db x.jsonl`, and the monitor's import) goes through the same door.
    with pytest.raises(InputError, match=r"field payload\.arxiv_id: not an arXiv id"):
        open_log(str(exported))
    named = Cli(str(exported))("head")
    assert (named.exit_code, named.stderr) == (2, f"ledger: {expected}\n")


def test_the_jobs_path_is_the_same_door(cli, tmp_path):
    assert cli("init").exit_code == 0
    files = []
    for n in range(3):
        path = tmp_path / f"f{n}.jsonl"
        path.write_bytes(GOOD + event_line("paper.snapshot", {"arxiv_id": "2407.2001" if n == 2 else f"2407.2001{n}",
                                                              **SNAPSHOT}))
        files.append(str(path))
    result = cli("import", "--jobs", "2", *files)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == f"ledger: {files[2]}: line 2: field payload.arxiv_id: not an arXiv id: '2407.2001' {EXAMPLE}\n"
    assert cli("head").stdout.startswith("0 ")


# Each sorts before the first citing paper's id (2502.08182): inbound observations are listed in that order.
@pytest.mark.parametrize("malformed", ["../../etc/passwd", "/tmp/x/OUTSIDE", "0 not an id", "2407.2001", ""])
def test_a_citations_ids_are_data_kept_byte_for_byte(store, tmp_path, malformed):
    """A reference with a malformed identifier (the format's `malformed_identifier` state) is published as is:
    the citing paper's id and the cited paper's id inside a citation are kept, not checked."""
    record = seed_record()
    obs = record["inbound"][0]
    obs["citation"]["citing_paper"]["arxiv_id"] = malformed
    obs["links"]["citing_paper"] = f"/paper/{malformed}"
    path = write_record(tmp_path / "record.json", redigest(record))
    import_files(store, [path])
    rebuilt = build_record(record["paper"]["arxiv_id"], store.paper_facts(record["paper"]["arxiv_id"]),
                           When.at(record["as_of"]))
    assert canonical(rebuilt) == canonical(redigest(record))
    assert json.loads(canonical(rebuilt))["inbound"][0]["citation"]["citing_paper"]["arxiv_id"] == malformed
