"""A change day's full record is a file for a paper's newest `--day-records` change days only (issue 45): an older
day keeps its change page, its record's path is answered by `serve` with replay's bytes, and the same bytes are
rebuilt offline from the evidence bundle the site publishes. A re-run that moves the window removes the record
files that fell out of it; the pages never link a file publish did not write, but for the paths documented live."""

import inspect
import os
import re

import orjson
import pytest

from ledger.core.files import Folder
from ledger.web.publish import DAY_RECORDS
from ledger.web.routes import ROUTES, file_for
from tests.conftest import PAPER_004, Cli
from tests.helpers import event_line
from tests.web.test_publish import AS_OF, files_of, publish
from tests.web.test_routes import path_pattern

OLD_DAY, KEPT = "2026-08-08", ("2026-08-22", "2026-08-21", "2026-08-20", "2026-08-09")  # seed 004's paper, as of AS_OF
BASE = f"paper/{PAPER_004}"


def day_files(day: str) -> list[str]:
    return [f"{BASE}/as-of/{day}/citation-record.json", f"{BASE}/as-of/{day}/citation-record/index.html"]


@pytest.mark.slow
def test_an_old_change_day_keeps_its_change_page_and_serve_answers_its_record_with_replays_bytes(client, rich,
                                                                                                    key_file, tmp_path):
    store, _ = rich
    cli, out = Cli.of(store), tmp_path / "site"
    assert DAY_RECORDS == len(KEPT)
    publish(cli, out, "--key", str(key_file))
    files = files_of(out)
    for day in KEPT:
        assert set(day_files(day)) <= set(files), day
    assert not set(day_files(OLD_DAY)) & set(files) and not (out / f"{BASE}/as-of/{OLD_DAY}/citation-record").exists()
    changes = files[f"{BASE}/as-of/{OLD_DAY}/changes/index.html"][0].decode()
    link = f"/{BASE}/as-of/{OLD_DAY}/citation-record"
    assert f'href="{link}"' in changes and f'href="{link}"' in files[f"{BASE}/index.html"][0].decode()
    replayed = cli("replay", "--paper", PAPER_004, "--as-of", OLD_DAY)
    assert replayed.exit_code == 0 and replayed.stdout_bytes
    answer = client.get(f"{link}.json")
    assert (answer.status_code, answer.content) == (200, replayed.stdout_bytes)
    assert client.get(link).status_code == 200
    # Offline, with no ledger: the paper's events from its integrity.json, imported into a new one, replayed.
    bundle = orjson.loads(files[f"{BASE}/integrity.json"][0])["evidence"]
    lines = tmp_path / "events.jsonl"
    lines.write_bytes(b"".join(event_line(e["entry"]["kind"], e["entry"]["payload"], e["entry"]["effective_at"])
                               for e in bundle["events"]))
    rebuilt = Cli(str(tmp_path / "rebuilt.db"))
    assert rebuilt("init").exit_code == 0 and rebuilt("import", str(lines)).exit_code == 0
    assert rebuilt("replay", "--paper", PAPER_004, "--as-of", OLD_DAY).stdout_bytes == replayed.stdout_bytes


@pytest.mark.slow
def test_a_new_change_day_moves_the_window_and_removes_the_record_that_fell_out(client, rich, tmp_path):
    store, _ = rich
    cli, out = Cli.of(store), tmp_path / "site"
    publish(cli, out)
    record = orjson.loads((out / f"{BASE}/citation-record.json").read_bytes())
    later = tmp_path / "more.jsonl"
    later.write_bytes(event_line("resolution.recorded", {"observation_id": record["inbound"][5]["observation_id"],
        "resolution": {"observed_at": "2026-08-23T10:00:00Z", "resolver_source": "arxiv_id", "status": "metadata_mismatch"}}))
    assert cli("import", str(later)).exit_code == 0
    moved = publish(cli, out, "--trust-folder")
    assert (moved["rebuilt"], moved["removed"]) == (1, 2)
    now = files_of(out)
    assert set(day_files("2026-08-23")) <= set(now) and not set(day_files("2026-08-09")) & set(now)
    assert not (out / f"{BASE}/as-of/2026-08-09/citation-record").exists()  # no empty folder for a host to refuse
    assert f"{BASE}/as-of/2026-08-09/changes/index.html" in now
    # What is left is what a publish from nothing writes, and a re-run, checked or trusted, has nothing to do.
    fresh = tmp_path / "fresh"
    publish(cli, fresh)
    stale = {name for name in now if name.startswith("tile/") and name.endswith(f".p/{moved['tree_size'] - 1}")}
    assert {n: v[0] for n, v in now.items() if n not in stale} == {n: v[0] for n, v in files_of(fresh).items()}
    for options in ((), ("--trust-folder",)):
        again = publish(cli, out, *options)
        assert (again["rebuilt"], again["written"], again["removed"]) == (0, 0, 0)


@pytest.mark.slow
def test_another_window_renders_every_paper_and_zero_writes_no_day_record(rich, tmp_path):
    store, dates = rich
    cli, out = Cli.of(store), tmp_path / "site"
    publish(cli, out)
    none = publish(cli, out, "--day-records", "0")
    assert (none["rebuilt"], none["whole"]) == (len(dates), "another --day-records")
    assert none["removed"] > 0 and not [n for n in files_of(out) if re.search(r"/as-of/[^/]+/citation-record", n)]
    assert publish(cli, out, "--day-records", "0")["rebuilt"] == 0
    refused = cli("publish", "--as-of", AS_OF, str(out), "--day-records", "-1")
    assert refused.exit_code == 2 and "--day-records" in refused.stderr and not refused.stdout


def test_the_commands_default_window_is_publishs():
    from ledger.cli.publish_commands import publish as command

    assert inspect.signature(command).parameters["day_records"].default == DAY_RECORDS == 4


def test_no_page_links_a_file_publish_did_not_write_but_the_paths_documented_live(rich, key_file, tmp_path):
    store, _ = rich
    out = tmp_path / "site"
    publish(Cli.of(store), out, "--key", str(key_file))  # with a key: the evidence page links the checkpoint
    files = set(files_of(out))
    live = {route.name: route for route in ROUTES if route.live}
    assert set(live) == {"day_record", "diff"}
    missing = set()
    for name in files:
        if name.endswith(".html"):
            for link in re.findall(r'(?:href|src|data-record-json)="(/[^"?#]*)', (out / name).read_text()):
                forms = [(route, form) for route in ROUTES for form, _ in route.forms()
                         if path_pattern(route, form).fullmatch(link)]
                route, form = forms[0]  # the router's pick: the first row that matches
                if file_for(link, form == "html") not in files:
                    missing.add((route.name, link))
    assert {name for name, _ in missing} <= set(live)
    assert ("day_record", f"/{BASE}/as-of/{OLD_DAY}/citation-record") in missing  # the case this test is for


def test_removing_a_file_never_follows_a_link_and_leaves_a_folder_that_is_not_empty(tmp_path):
    out, outside = tmp_path / "out", tmp_path / "outside"
    outside.mkdir()
    (outside / "kept").write_bytes(b"x")
    with Folder(out) as folder:
        folder.put("a/b/page.html", b"<p>")
        os.symlink(outside, out / "link")
        assert folder.remove("a/b/page.html") and not (out / "a/b/page.html").exists()
        assert folder.remove("a/b") and not (out / "a/b").exists()
        assert not folder.remove("a/b/page.html") and not folder.remove("missing/x")  # nothing made either
        assert not (out / "missing").exists()
        folder.put("a/c/file", b"y")
        assert not folder.remove("a/c") and (out / "a/c/file").read_bytes() == b"y"
        with pytest.raises(Exception, match="symbolic link"):
            folder.remove("link/kept")
        assert folder.remove("link") and (outside / "kept").read_bytes() == b"x"  # the link itself, not its target
