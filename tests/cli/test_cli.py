"""The command line: exit codes, stdout and stderr checked separately, for every command and bad input."""

import json
import sqlite3

import pytest

from ledger.storage.payloads import unpack
from tests.conftest import AS_OF_004, PAPER_004, SEED_004, Cli, run_ledger
from tests.helpers import redigest, seed_record, write_record
from tests.ledger.storage.test_concurrency import stream

DIGEST_0809 = "sha256:88bbcfe1847497cac1a7e1c3f5aa9530cb1662bfd44d13f772daaeb592ad2687"


@pytest.fixture
def ready(cli):
    assert cli("init").exit_code == 0
    return cli


@pytest.fixture
def imported(ready):
    result = ready("import", str(SEED_004))
    assert result.exit_code == 0, result.stderr
    return ready


def head(cli) -> str:
    result = cli("head")
    assert result.exit_code == 0
    return result.stdout


def test_init_creates_once(cli):
    first = cli("init")
    assert (first.exit_code, first.stderr) == (0, "")
    assert "created an empty ledger" in first.stdout
    second = cli("init")
    assert second.exit_code == 2 and second.stdout == ""
    assert "already" in second.stderr and second.stderr.count("\n") == 1


def test_version_prints_the_package_version_and_exits_0(cli, tmp_path):
    import ledger

    result = cli("--version")
    assert (result.exit_code, result.stdout, result.stderr) == (0, f"ledger {ledger.__version__}\n", "")
    real = run_ledger("--db", str(tmp_path / "none.db"), "--version")
    assert (real.returncode, real.stdout, real.stderr) == (0, b"ledger 0.1.0\n", b"")
    assert not (tmp_path / "none.db").exists()


def test_commands_never_create_a_ledger(tmp_path):
    from tests.conftest import Cli

    missing = tmp_path / "typo.db"
    for args in (["head"], ["import", str(SEED_004)], ["replay", "--as-of", "2026-08-09"], ["export"]):
        result = Cli(str(missing))(*args)
        assert result.exit_code == 2, args
        assert result.stderr == f"ledger: {missing}: no ledger here; create one with `ledger init`\n"
    assert not missing.exists()


def test_import_replay_round_trip_is_byte_identical(imported, seed_bytes, tmp_path):
    out = tmp_path / "rebuilt.json"
    result = imported("replay", "--as-of", AS_OF_004, "--paper", PAPER_004, "--out", str(out))
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    assert out.read_bytes() == seed_bytes
    to_stdout = imported("replay", "--as-of", AS_OF_004, "--paper", PAPER_004)
    assert to_stdout.stdout_bytes == seed_bytes


def test_import_again_appends_nothing_and_the_head_stays(imported):
    before = head(imported)
    again = imported("import", str(SEED_004))
    assert again.exit_code == 0
    assert again.stdout.startswith("appended 0 events (40 already present)")
    assert head(imported) == before


def test_replay_bare_date_is_the_end_of_that_day(imported):
    result = imported("replay", "--as-of", "2026-08-09", "--paper", PAPER_004)
    record = json.loads(result.stdout)
    assert record["as_of"] == "2026-08-09T23:59:59.999999Z"
    assert record["context_digest"] == DIGEST_0809


def test_replay_before_the_first_snapshot_exits_1(imported):
    result = imported("replay", "--as-of", "2026-07-01", "--paper", PAPER_004)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == "ledger: no record of arXiv:2407.20018 as of 2026-07-01T23:59:59.999999Z\n"


def test_replay_stats_reports_the_statement_budget(imported):
    result = imported("replay", "--as-of", AS_OF_004, "--paper", PAPER_004, "--stats")
    assert result.exit_code == 0
    statements = int(result.stderr.split("statements: ")[1].split(",")[0])
    assert 1 <= statements <= 6
    assert "events read: 40" in result.stderr


@pytest.mark.parametrize("args, problem", [
    (["replay", "--as-of", "yesterday", "--paper", PAPER_004], "--as-of: expected a date YYYY-MM-DD or an RFC 3339 timestamp"),
    (["replay", "--as-of", "2026-02-30", "--paper", PAPER_004], "--as-of: not a valid date"),
    (["replay", "--as-of", "2026-08-09T10:00:00", "--paper", PAPER_004], "--as-of: expected a date YYYY-MM-DD or an RFC 3339"),
    (["replay", "--as-of", "2026-08-09", "--format", "pdf"], "--format: expected json or text"),
])
def test_bad_arguments_exit_2(imported, args, problem):
    result = imported(*args)
    assert result.exit_code == 2 and result.stdout == ""
    assert problem in result.stderr and result.stderr.count("\n") == 1


def test_verify_a_published_record(imported):
    result = imported("verify", str(SEED_004))
    assert (result.exit_code, result.stderr) == (0, "")
    assert "12 observation digests and the context digest re-check; agrees with the ledger's history" in result.stdout


def test_verify_without_a_ledger_checks_digests_only(tmp_path):
    from tests.conftest import Cli

    result = Cli(str(tmp_path / "none.db"))("verify", str(SEED_004))
    assert result.exit_code == 0 and "history not compared" in result.stdout


def test_verify_names_each_observation_whose_digest_fails(imported, tmp_path):
    record = seed_record()
    record["inbound"][0]["citation"]["source"] = "arxiv_source"
    record["inbound"][5]["resolution"]["status"] = "verified_fuzzy"
    path = write_record(tmp_path / "tampered.json", record)
    result = imported("verify", path)
    assert result.exit_code == 1 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert any(record["inbound"][0]["observation_id"] in line for line in lines)
    assert any(record["inbound"][5]["observation_id"] in line for line in lines)
    assert any("context_digest" in line for line in lines)


def test_verify_catches_a_self_consistent_record_that_history_contradicts(imported, tmp_path):
    record = seed_record()
    target = record["inbound"][9]
    target["resolution"]["status"] = "verified_fuzzy"
    path = write_record(tmp_path / "rewritten.json", redigest(record))
    assert run_digests_only(path)
    result = imported("verify", path)
    assert result.exit_code == 1
    assert f"history: observation {target['observation_id']} (inbound): differs from the ledger's history at " \
           "resolution.status" in result.stderr


def run_digests_only(path: str) -> bool:
    from ledger.model.published import digest_mismatches

    return digest_mismatches(json.loads(open(path, "rb").read())) == []


def test_verify_the_chain_and_catch_a_changed_row(imported, backend):
    ok = imported("verify")
    assert ok.exit_code == 0 and ok.stdout.startswith("ok: 40 events")
    if backend != "sqlite":
        pytest.skip("the tamper path for PostgreSQL is in the store contract suite")
    conn = sqlite3.connect(imported.location)
    conn.execute("DROP TRIGGER events_append_only_update")
    stored = conn.execute("SELECT payload FROM events WHERE seq = 2").fetchone()[0]  # kept packed: edited as text
    conn.execute("UPDATE events SET payload = ? WHERE seq = 2", (unpack(stored).replace(b"crossref", b"crossrex"),))
    conn.commit()
    conn.close()
    bad = imported("verify")
    assert bad.exit_code == 1 and bad.stdout == ""
    assert "chain broken at seq 2: entry hash does not re-compute" in bad.stderr
    assert "seq 2..40 (39 entries) depend on it" in bad.stderr


@pytest.mark.parametrize("change", ["payload = 7", "payload = 10000000000000",
                                    "entry_hash = 'text'", "chain_hash = 1.5"])
def test_verify_names_a_row_whose_types_were_changed_by_hand(imported, backend, change):
    if backend != "sqlite":
        pytest.skip("SQLite keeps whatever type it is given; PostgreSQL refuses it")
    conn = sqlite3.connect(imported.location)
    conn.execute("DROP TRIGGER events_append_only_update")
    conn.execute(f"UPDATE events SET {change} WHERE seq = 5")
    conn.commit()
    conn.close()
    bad = imported("verify")
    assert bad.exit_code == 1 and bad.stdout == "", bad.stderr
    assert "chain broken at seq 5: " in bad.stderr and "Traceback" not in bad.stderr


def test_head_and_json_output(imported):
    text = imported("head").stdout.split()
    data = json.loads(imported("head", "--json").stdout)
    assert text == [str(data["seq"]), data["chain_hash"]] and data["seq"] == 40


def test_import_json_output(ready):
    data = json.loads(ready("import", "--json", str(SEED_004)).stdout)
    assert data["appended"] == 40 and data["head"]["seq"] == 40


BAD_INPUTS = {
    "empty": (b"", "empty file"),
    "blank": (b"\n\n  \n", "empty file"),
    "truncated": (SEED_004.read_bytes()[:5000], "invalid JSON"),
    "binary": (bytes(range(256)) * 4, "not UTF-8 text"),
    "nul": (b'{"schema":\x00}', "NUL"),
    "array": (b"[" + SEED_004.read_bytes() + b"]", "found an array"),
    "nan": (SEED_004.read_bytes().replace(b'"reference_index":21', b'"reference_index":NaN'), "NaN is not a JSON value"),
    "huge_integer": (SEED_004.read_bytes().replace(b'"reference_index":21', b'"reference_index":123456789012345678901234567890'), "64-bit"),
    "duplicate_keys": (b'{"schema":"pith.paper-citation-record.v1","schema":"x"}', "duplicate key 'schema'"),
    "wrong_schema": (SEED_004.read_bytes().replace(b"citation-record.v1", b"citation-record.v9"), "field schema: expected"),
    "missing_field": (SEED_004.read_bytes().replace(b'"refusal":', b'"refusals":'), "field refusal: missing"),
    "bad_timestamp": (SEED_004.read_bytes().replace(b'"as_of":"2026-08-09T16:41:00Z"', b'"as_of":"2026-08-09 16:41"'), "field as_of: expected an RFC 3339"),
    "bad_month": (SEED_004.read_bytes().replace(b"2026-08-08T10:10:22.827490Z", b"2026-18-08T10:10:22.827490Z", 1), "not a valid timestamp"),
    "scalar": (b"42", "found a JSON int"),
    "event_line_unknown_kind": (b'{"kind":"citation.deleted","payload":{}}\n{"kind":"x","payload":{}}', "line 1: field kind: expected one of"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_exits_2_with_one_line_naming_the_file_and_nothing_appended(ready, tmp_path, case):
    data, problem = BAD_INPUTS[case]
    path = tmp_path / f"{case}.json"
    path.write_bytes(data)
    result = ready("import", str(SEED_004), str(path))
    assert result.exit_code == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith(f"ledger: {path}: ") and result.stderr.count("\n") == 1, result.stderr
    assert problem in result.stderr
    assert "Traceback" not in result.stderr
    assert head(ready).startswith("0 ")


def test_a_digest_mismatch_on_import_exits_1(ready, tmp_path):
    path = tmp_path / "digest.json"
    path.write_bytes(SEED_004.read_bytes().replace(b'"reference_index":21', b'"reference_index":22'))
    result = ready("import", str(path))
    assert result.exit_code == 1
    assert "b7d1cb3d-82fc-453c-be89-0574bc0e903d" in result.stderr and head(ready).startswith("0 ")


def test_import_from_stdin(ready, seed_bytes):
    result = ready("import", "-", input=seed_bytes)
    assert result.exit_code == 0 and "appended 40 events" in result.stdout


def test_a_missing_file_is_bad_input(ready, tmp_path):
    result = ready("import", str(tmp_path / "nope.json"))
    assert result.exit_code == 2 and result.stderr == f"ledger: {tmp_path / 'nope.json'}: no such file\n"


def test_a_folder_that_replay_wrote_is_imported_as_its_records(imported, new_location, tmp_path):
    # A corpus of records names more files than a command line holds: the folder stands for them. Imported
    # into a new ledger, it is the files named one by one in the order of their paths, and the new ledger
    # replays the same bytes.
    events = tmp_path / "events.jsonl"
    events.write_bytes(stream("2916", papers=5))
    assert imported("import", str(events)).exit_code == 0
    records = tmp_path / "records"
    assert imported("replay", "--as-of", AS_OF_004, "--out", str(records)).exit_code == 0
    files = sorted(str(path) for path in records.iterdir())
    assert len(files) == 6
    (records / "README.txt").write_text("not a record")  # passed over: only .json and .jsonl files are read
    replayed = {}
    for way, args in (("named", files), ("folder", [str(records)])):
        again = Cli(new_location())
        assert again("init").exit_code == 0
        done = again("import", *args)
        assert (done.exit_code, done.stderr) == (0, ""), done.stderr
        assert done.stdout.startswith(f"appended {40 + 5 * 6} events")
        log = [json.loads(line) for line in again("export").stdout.splitlines()]
        replayed[way] = ([(e["seq"], e["kind"], e["effective_at"], e["payload"]) for e in log],
                         again("replay", "--as-of", AS_OF_004).stdout)
    assert replayed["named"] == replayed["folder"]
    assert replayed["folder"][1] == imported("replay", "--as-of", AS_OF_004).stdout


def test_a_folder_with_no_record_in_it_is_bad_input(ready, tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    result = ready("import", str(SEED_004), str(tmp_path))
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == f"ledger: {tmp_path}: a directory with no .json or .jsonl file in it\n"
    assert head(ready).startswith("0 ")


@pytest.mark.slow
def test_the_console_script_in_a_real_process(tmp_path):
    db = str(tmp_path / "real.db")
    assert run_ledger("--db", db, "init").returncode == 0
    imported = run_ledger("--db", db, "import", str(SEED_004))
    assert imported.returncode == 0 and imported.stdout.startswith(b"appended 40 events")
    replayed = run_ledger("--db", db, "replay", "--as-of", AS_OF_004, "--paper", PAPER_004)
    assert replayed.stdout == SEED_004.read_bytes()
    broken = run_ledger("--db", db, "import", str(tmp_path))
    assert broken.returncode == 2 and b"Traceback" not in broken.stderr and broken.stderr.count(b"\n") == 1


def _on_a_terminal(*args: str) -> tuple[int, bytes, bytes]:
    """A real process whose stdout is a pseudo-terminal (stderr a pipe): exit code, what the terminal
    showed (its line discipline's \\r\\n read back as \\n) and stderr."""
    import os
    import pty
    import subprocess
    import sys

    terminal, child_end = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "ledger.cli", *args], stdout=child_end, stderr=subprocess.PIPE)
    os.close(child_end)
    shown = b""
    while True:  # read as it comes, so a large output cannot fill the terminal and stall the child
        try:
            chunk = os.read(terminal, 4096)
        except OSError:  # EIO: the child's end is closed and everything was read
            break
        if not chunk:
            break
        shown += chunk
    os.close(terminal)
    _, stderr = proc.communicate(timeout=120)
    return proc.returncode, shown.replace(b"\r\n", b"\n"), stderr


@pytest.mark.slow
def test_on_a_terminal_output_ends_in_a_newline_and_piped_a_record_is_its_bytes(tmp_path):
    db = str(tmp_path / "tty.db")
    assert run_ledger("--db", db, "init").returncode == 0
    assert run_ledger("--db", db, "import", str(SEED_004)).returncode == 0
    record = SEED_004.read_bytes()
    assert not record.endswith(b"\n")  # else this test could not fail
    replay = ("--db", db, "replay", "--as-of", AS_OF_004, "--paper", PAPER_004)
    assert _on_a_terminal(*replay) == (0, record + b"\n", b"")
    piped = run_ledger(*replay)
    assert (piped.returncode, piped.stdout, piped.stderr) == (0, record, b"")
    out = tmp_path / "out.json"
    assert _on_a_terminal(*replay, "--out", str(out)) == (0, b"", b"")
    assert out.read_bytes() == record
    code, shown, stderr = _on_a_terminal("--db", db, "head", "--json")
    assert (code, stderr, shown) == (0, b"", run_ledger("--db", db, "head", "--json").stdout)
    assert shown.startswith(b'{"chain_hash":"blake3:') and shown.endswith(b"}\n") and shown.count(b"\n") == 1
    code, shown, stderr = _on_a_terminal("--db", db, "prove", "17", "--json")
    assert (code, stderr) == (0, b"") and shown.startswith(b'{"leaf":') and shown.endswith(b',"tree_size":40}\n')


def test_a_ledger_of_another_schema_version_exits_2(imported, backend):
    from sqlalchemy import create_engine, text

    from ledger.storage.store import database_url

    engine = create_engine(database_url(imported.location))
    with engine.begin() as conn:
        conn.execute(text("UPDATE ledger_meta SET value = '0' WHERE key = 'schema_version'"))
    engine.dispose()
    result = imported("replay", "--as-of", "2026-08-09", "--paper", PAPER_004)
    assert result.exit_code == 2 and result.stdout == ""
    assert "ledger schema version 0, this ledger reads version 3" in result.stderr


def test_an_unreachable_store_exits_3():
    from tests.conftest import Cli

    result = Cli("postgresql+psycopg://nobody@127.0.0.1:1/none?connect_timeout=2")("head")
    assert result.exit_code == 3 and result.stdout == ""
    assert result.stderr.startswith("ledger: postgresql+psycopg://nobody@127.0.0.1:1/none") and result.stderr.count("\n") == 1


@pytest.mark.slow
def test_progress_goes_to_a_terminal_only(ready, tmp_path):
    # Not a terminal (the test runner): results only, nothing on stderr.
    result = ready("import", str(SEED_004))
    assert result.exit_code == 0 and result.stderr == ""
    # A terminal: a real process whose stderr is a pseudo-terminal reports its work there; stdout (a pipe)
    # still carries the result only.
    import os
    import pty
    import subprocess
    import sys

    db = str(tmp_path / "tty.db")
    assert run_ledger("--db", db, "init").returncode == 0
    terminal, child_end = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "ledger.cli", "--db", db, "import", str(SEED_004)],
                            stdout=subprocess.PIPE, stderr=child_end)
    os.close(child_end)
    stdout, _ = proc.communicate(timeout=120)
    shown = b""
    while True:
        try:
            chunk = os.read(terminal, 4096)
        except OSError:  # EIO: the terminal's other end is closed and everything was read
            break
        if not chunk:
            break
        shown += chunk
    os.close(terminal)
    assert proc.returncode == 0
    shown = shown.replace(b"\r\n", b"\n")  # the terminal's line discipline
    assert shown.startswith(b"\rimport: ") and b", 40 events" in shown and shown.endswith(b"\x1b[K\n"), shown
    assert stdout.startswith(b"appended 40 events (0 already present); head 40 blake3:")


def test_import_and_verify_report_progress_to_a_callback(store):
    from ledger.core.errors import IntegrityError
    from ledger.importing.importer import Progress, import_files
    from ledger.services.verify import verify_chain

    lines = []
    import_files(store, [str(SEED_004)], lines.append)
    size = SEED_004.stat().st_size
    assert lines == [Progress("decoding", size, size, 40), Progress("appending", size, size, 40)]
    lines = []
    entries = list(store.entries()) * 2500  # 100,000 entries through the progress wrapper (a broken chain)
    with pytest.raises(IntegrityError, match="sequence gap: expected seq 41, found seq 1"):
        verify_chain(entries, lines.append)
    assert lines[-1] == "verified 100,000 entries"


def seeded_file(tmp_path) -> str:
    db = str(tmp_path / "ledger.db")
    assert run_ledger("--db", db, "init").returncode == 0
    assert run_ledger("--db", db, "import", str(SEED_004)).returncode == 0
    return db


@pytest.mark.slow
def test_a_sqlite_file_another_process_holds_locked_exits_3_for_readers_and_writers(tmp_path):
    import time

    db = seeded_file(tmp_path)
    holder = sqlite3.connect(db, isolation_level=None)  # WAL lets readers past a writer; exclusive mode does not
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("SELECT COUNT(*) FROM events").fetchone()
    try:
        for args in (["head"], ["import", str(SEED_004)]):
            started = time.monotonic()
            done = run_ledger("--db", db, *args, env={"LEDGER_LOCK_TIMEOUT": "1"})
            assert time.monotonic() - started >= 1  # it waited for the lock, then gave up
            assert (done.returncode, done.stdout) == (3, b""), done.stderr
            assert done.stderr == f"ledger: {db}: locked by another writer for more than 1s (read)\n".encode()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert run_ledger("--db", db, "head").stdout.startswith(b"40 ")


@pytest.mark.slow
def test_a_file_of_junk_bytes_is_not_a_ledger_exit_2_and_is_left_alone(tmp_path):
    junk = tmp_path / "notes.db"
    junk.write_bytes(bytes(range(256)) * 64)
    for args in (["head"], ["import", str(SEED_004)], ["verify"]):
        done = run_ledger("--db", str(junk), *args)
        assert (done.returncode, done.stdout) == (2, b""), done.stderr
        assert done.stderr == f"ledger: {junk}: not a ledger (file is not a database)\n".encode()
    assert junk.read_bytes() == bytes(range(256)) * 64


@pytest.mark.slow
def test_sqlite_synchronous_accepts_only_sqlites_values(tmp_path):
    db = seeded_file(tmp_path)
    facts = tmp_path / "facts.jsonl"
    facts.write_bytes(NEW_PAPER)
    for value in ("bogus", "FULL; DROP TABLE events", "2", ""):
        done = run_ledger("--db", db, "import", str(facts), env={"LEDGER_SQLITE_SYNCHRONOUS": value})
        assert (done.returncode, done.stdout) == (2, b"")
        assert done.stderr == ("ledger: LEDGER_SQLITE_SYNCHRONOUS: expected one of OFF, NORMAL, FULL, EXTRA, found "
                               f"{value!r}\n").encode()
    assert run_ledger("--db", db, "head").stdout.startswith(b"40 ")  # nothing appended


NEW_PAPER = b'{"kind":"paper.snapshot","payload":{"arxiv_id":"2601.00001","snapshot_observed_at":"2026-01-01T00:00:00Z"}}\n'


@pytest.mark.slow
def test_sqlite_synchronous_takes_sqlites_values_in_any_case(tmp_path, monkeypatch):
    from ledger.storage.store import Store

    db = seeded_file(tmp_path)
    for value, level in (("normal", 1), ("Off", 0), ("EXTRA", 3)):
        monkeypatch.setenv("LEDGER_SQLITE_SYNCHRONOUS", value)
        store = Store.open(db)
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == level, value
        store.close()
    facts = tmp_path / "facts.jsonl"
    facts.write_bytes(NEW_PAPER)
    done = run_ledger("--db", db, "import", str(facts), env={"LEDGER_SQLITE_SYNCHRONOUS": "normal"})
    assert (done.returncode, done.stderr) == (0, b"") and done.stdout.startswith(b"appended 1 event")


def test_the_meter_shows_counts_rate_and_time_left_on_a_terminal_only(monkeypatch, capsys):
    from ledger.cli import common

    now = [0.0]
    monkeypatch.setattr(common.sys.stderr, "isatty", lambda: True, raising=False)
    meter = common.Meter("import", "events", clock=lambda: now[0])
    meter.update("decoding", 0, 1000, 0)
    now[0] = 2.0
    meter.update("decoding", 250, 1000, 5000)
    now[0] = 2.1
    meter.update("decoding", 260, 1000, 5200)  # too soon to redraw
    now[0] = 3.0
    meter.update("appending", 100, 1000, 1000)  # a new stage: its own clock
    meter.close()
    assert capsys.readouterr().err == (
        "\rimport: decoding 0%, 0 events\x1b[K"
        "\rimport: decoding 25%, 5,000 events, 2,500 events/s, about 6 s left\x1b[K"
        "\rimport: appending 10%, 1,000 events\x1b[K\n")
    monkeypatch.setattr(common.sys.stderr, "isatty", lambda: False, raising=False)
    quiet = common.Meter("replay", "records", clock=lambda: now[0])
    quiet.update("", 1, 10, 1)
    quiet.close()
    assert capsys.readouterr().err == ""


def test_long_commands_say_nothing_on_stderr_when_it_is_not_a_terminal(imported, tmp_path):
    out = tmp_path / "records"
    result = imported("replay", "--as-of", "2026-08-09", "--out", str(out), "--stats")
    assert result.exit_code == 0 and result.stdout == ""
    assert result.stderr.startswith("statements: ") and "records/s" in result.stderr  # --stats only
    assert (out / f"{PAPER_004}.json").exists()
