"""`checkpoint` and `monitor` with `--metrics-file`: the run's figures in node_exporter's textfile form, written
by a rename, when the run succeeds and when it fails; never a key, a key's path or the database's URL."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from tests.cli.test_witnessing import witnesses  # noqa: F401 (a fixture)
from tests.conftest import _free_port


def figures(path) -> dict[tuple, float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(path.read_text()) for s in family.samples}


def test_checkpoint_writes_who_cosigned_and_who_did_not_also_when_the_quorum_fails(keyed, witnesses, tmp_path):  # noqa: F811
    [up] = witnesses.start(1)
    keyed("keygen", "--cosigner", "down.example")
    down = f"http://127.0.0.1:{_free_port()}"
    asked = ["checkpoint", "--key", "ledger.key", "--witness", f"{up}=w0.vkey", "--witness", f"{down}=witness.vkey",
             "--metrics-file", "ledger.prom"]
    made = keyed(*asked, "--quorum", "1")
    assert made.exit_code == 0, made.stderr
    found = figures(tmp_path / "ledger.prom")
    assert found["ledger_checkpoint_success", ()] == 1 and found["ledger_checkpoint_signed_size", ()] == 40
    assert found["ledger_checkpoint_cosignatures_gathered", (("witness", "w0.example"),)] == 1
    assert found["ledger_checkpoint_cosignatures_refused", (("witness", "down.example"),)] == 1
    assert found["ledger_checkpoint_cosignatures_refused", (("witness", "w0.example"),)] == 0
    assert found["ledger_checkpoint_cosigned_timestamp_seconds", ()] > 1.7e9
    assert found["ledger_checkpoint_signed_timestamp_seconds", ()] <= found["ledger_checkpoint_last_run_timestamp_seconds", ()]
    refused = keyed(*asked)  # both must cosign now
    assert refused.exit_code == 1
    found = figures(tmp_path / "ledger.prom")
    assert found["ledger_checkpoint_success", ()] == 0 and ("ledger_checkpoint_signed_size", ()) not in found
    assert found["ledger_checkpoint_cosignatures_refused", (("witness", "down.example"),)] == 1
    text = (tmp_path / "ledger.prom").read_text()
    for secret in ((tmp_path / "ledger.key").read_text().strip(), "ledger.key", str(tmp_path)):
        assert secret not in text
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".") or "tmp" in p.name] == []  # renamed into place


def test_monitor_writes_its_outcome_consistent_or_unreachable(keyed, tmp_path):
    assert keyed("publish", "--as-of", "2026-09-03", "out", "--key", "ledger.key").exit_code == 0
    watched = keyed("monitor", "out", "--verifier-key", "ledger.vkey", "--state", "state", "--metrics-file", "m.prom")
    assert watched.exit_code == 0, watched.stderr
    found = figures(tmp_path / "m.prom")
    log = ("log", "example.org/ledger")
    assert found["ledger_monitor_status", (log, ("status", "consistent"))] == 1
    assert found["ledger_monitor_success", (log,)] == 1 and found["ledger_monitor_verified_size", (log,)] == 40
    gone = keyed("monitor", f"http://127.0.0.1:{_free_port()}", "--verifier-key", "ledger.vkey", "--state", "state",
                 "--timeout", "2", "--metrics-file", "m.prom")
    assert gone.exit_code == 3
    found = figures(tmp_path / "m.prom")
    assert found["ledger_monitor_status", (log, ("status", "unreachable"))] == 1
    assert found["ledger_monitor_status", (log, ("status", "consistent"))] == 0
    assert found["ledger_monitor_success", (log,)] == 0


def test_a_metrics_file_in_a_missing_folder_is_refused_in_one_line(keyed, tmp_path):
    made = keyed("checkpoint", "--key", "ledger.key", "--metrics-file", "nowhere/ledger.prom")
    assert made.exit_code == 2 and "nowhere/ledger.prom" in made.stderr and "Traceback" not in made.stderr


def test_a_job_writes_one_line_when_it_ends_with_its_outcome(keyed, tmp_path):
    import orjson

    made = keyed("checkpoint", "--key", "ledger.key", "--log-format", "json")
    assert made.exit_code == 0, made.stderr
    [line] = made.stderr.splitlines()
    found = orjson.loads(line)
    assert (found["msg"], found["job"], found["outcome"], found["exit"], found["size"]) == ("job", "checkpoint", "ok", 0, 40)
    assert "ledger.key" not in line
    gone = keyed("monitor", f"http://127.0.0.1:{_free_port()}", "--verifier-key", "ledger.vkey", "--state", "state",
                 "--timeout", "2", "--log-format", "plain")
    assert gone.exit_code == 3
    [line] = [line.split() for line in gone.stderr.splitlines() if " job monitor " in line]  # before the error's line
    assert line[1:5] == ["job", "monitor", "failed", "exit=3"] and line[5].endswith("ms")
    quiet = keyed("checkpoint", "--key", "ledger.key")
    assert quiet.exit_code == 0 and quiet.stderr == ""  # no line unless asked: a cron job's mail stays empty
