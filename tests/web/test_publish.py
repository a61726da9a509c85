"""`ledger publish`: the same bytes as `serve` for every path, only changed files rewritten on a re-run, and
nothing ever written outside OUT/."""

import os
import sqlite3

import orjson
import pytest

from ledger.core.errors import InputError
from ledger.log.signed_notes import generate_signer, parse_signer, verify_checkpoint
from ledger.storage.publish_state import PublishState
from ledger.web.publish import STATE, STATE_FILE, Folder
from ledger.web.routes import file_for
from tests.conftest import PAPER_004, Cli
from tests.helpers import event_line

AS_OF = "2026-09-02"  # every paper of the ledger has a record by then


def files_of(out) -> dict[str, tuple[bytes, int, int]]:
    """relative path -> (bytes, inode, mtime_ns) of every file under `out` but the publish state."""
    found = {}
    for folder, _, names in os.walk(out):
        for name in names:
            if os.path.relpath(folder, out).split(os.sep)[0] == STATE:
                continue
            path = os.path.join(folder, name)
            stat = os.stat(path)
            found[os.path.relpath(path, out)] = (open(path, "rb").read(), stat.st_ino, stat.st_mtime_ns)
    return found


def state_sql(out, sql: str, *params):
    """Run one statement on the publish state of `out` (to read it, or damage it), committed."""
    with sqlite3.connect(out / STATE_FILE) as db:
        return db.execute(sql, params).fetchall()


def saved_settings(out) -> dict:
    return orjson.loads(state_sql(out, "SELECT body FROM settings")[0][0])


def url_of(relative: str, as_of: str) -> str:
    """The URL a published file answers, with the as-of time `serve` needs for the same bytes."""
    path = "/" + relative.removesuffix("index.html").rstrip("/")
    if (path.startswith("/paper/") and "/as-of/" not in path) or path == "/" or path.startswith("/papers/"):
        # a paper's pages, and the lists of papers (the home page, a month's), as of then
        path += f"?as_of={as_of}"
    return path


def publish(cli, out, *extra):
    result = cli("publish", "--as-of", AS_OF, str(out), "--json", *extra)
    assert result.exit_code == 0, result.stderr
    # The totals the rows' triggers keep are the rows' own, whatever the run rendered, replaced or forgot.
    assert state_sql(out, "SELECT papers, files FROM totals") == state_sql(
        out, "SELECT count(*), coalesce(sum(count), 0) FROM papers")
    return orjson.loads(result.stdout)


@pytest.mark.slow
def test_every_published_file_is_what_serve_answers_for_its_path(client, rich, key_file, tmp_path):
    store, dates = rich
    out = tmp_path / "site"
    result = publish(Cli.of(store), out, "--key", str(key_file))
    files = files_of(out)
    assert result["written"] == len(files) and result["unchanged"] == 0 and result["papers"] == len(dates)
    assert {"index.html", "evidence/index.html", "assets/check.js", "assets/style.css", "checkpoint",
            f"paper/{PAPER_004}/index.html", f"paper/{PAPER_004}/citation-record/index.html",
            f"paper/{PAPER_004}/citation-record.json", f"paper/{PAPER_004}/integrity/index.html",
            f"paper/{PAPER_004}/integrity.json", f"paper/{PAPER_004}/history.json",
            f"paper/{PAPER_004}/as-of/2026-08-09/citation-record.json",
            f"paper/{PAPER_004}/as-of/2026-08-09/citation-record/index.html",
            f"tile/0/000.p/{result['tree_size']}", f"tile/entries/000.p/{result['tree_size']}"} <= set(files)
    for relative, (data, _, _) in files.items():
        response = client.get(url_of(relative, AS_OF))
        assert response.status_code == 200, (relative, response.text)
        assert response.content == data, relative
    # And the record is the CLI's replay.
    replay = Cli.of(store)("replay", "--paper", PAPER_004, "--as-of", AS_OF)
    assert files[f"paper/{PAPER_004}/citation-record.json"][0] == replay.stdout_bytes


@pytest.mark.slow
def test_a_rerun_rewrites_only_what_changed(rich, tmp_path):
    store, dates = rich
    cli = Cli.of(store)
    out = tmp_path / "site"
    first = publish(cli, out)
    before = files_of(out)
    again = publish(cli, out)
    assert (again["written"], again["unchanged"]) == (0, first["written"])
    assert (first["rebuilt"], first["whole"]) == (len(dates), "no earlier publish in this folder")
    assert (again["rebuilt"], again["whole"]) == (0, None)  # nothing since: no paper rendered at all
    assert files_of(out) == before  # not even touched: same inode, same mtime
    # One more fact about seed 004's paper, effective before the as-of date on a day of its own.
    record = orjson.loads(before[f"paper/{PAPER_004}/citation-record.json"][0])
    oid = record["inbound"][5]["observation_id"]
    later = tmp_path / "more.jsonl"
    later.write_bytes(event_line("resolution.recorded", {"observation_id": oid, "resolution": {
        "observed_at": "2026-08-23T10:00:00Z", "resolver_source": "arxiv_id", "status": "metadata_mismatch"}}))
    assert cli("import", str(later)).exit_code == 0
    third = publish(cli, out)
    assert third["rebuilt"] == 1  # the paper of that observation's record only
    after = files_of(out)
    size = third["tree_size"]
    changed = {name for name in after if name not in before or after[name][0] != before[name][0]}
    base = f"paper/{PAPER_004}"
    assert changed == {f"{base}/citation-record.json", f"{base}/citation-record/index.html", f"{base}/integrity.json",
                       f"{base}/integrity/index.html", f"{base}/index.html", f"{base}/history.json",
                       f"{base}/as-of/2026-08-23/citation-record.json", f"{base}/as-of/2026-08-23/citation-record/index.html",
                       f"{base}/as-of/2026-08-23/changes/index.html",
                       # the days either side of the new change day: their links to the next and previous
                       f"{base}/as-of/2026-08-21/citation-record/index.html",
                       f"{base}/as-of/2026-08-22/citation-record/index.html",
                       f"tile/0/000.p/{size}", f"tile/entries/000.p/{size}",
                       "index.html",  # the home page: this paper's events counted, and it first in the list
                       "papers/2407/index.html"}  # its month's list: its events counted
    # The partial tiles of the earlier size stay (a checkpoint of that size may be out there); they are not
    # part of this publication, so neither written nor counted.
    earlier = {f"tile/0/000.p/{size - 1}", f"tile/entries/000.p/{size - 1}"}
    assert earlier <= set(after) - changed
    assert (third["written"], third["unchanged"]) == (len(changed), len(after) - len(changed) - len(earlier))
    for name in set(after) - changed:
        assert after[name] == before[name], name  # left alone
    text = cli("publish", "--as-of", AS_OF, str(out))
    assert text.stdout == (f"published {len(dates)} papers as of {AS_OF}T23:59:59.999999Z and the log of {size} events "
                           f"to {out}: rendered 0 papers, wrote 0 files, left {len(after) - len(earlier)} unchanged\n")


# A paper whose id is not an arXiv id is refused at import, and skipped with a warning when a ledger appended
# to before holds one: tests/cli/test_paper_id_outputs.py.


def test_no_file_resolves_outside_out_even_through_a_symlink(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = Folder(tmp_path / "site")
    for bad in ("../x", "a/../../x", "/etc/x", "", "a//b", "./a"):
        with pytest.raises(InputError, match="not a path inside"):
            folder.put(bad, b"x")
    os.symlink(outside, tmp_path / "site" / "paper")
    with pytest.raises(InputError, match="outside"):
        folder.put("paper/2407.20018/citation-record.json", b"x")
    assert list(outside.iterdir()) == [] and folder.written == 0
    folder.put("paper.json", b"inside")
    assert (tmp_path / "site" / "paper.json").read_bytes() == b"inside" and folder.written == 1


@pytest.mark.parametrize("suffix", ["-journal", "-wal", "-shm"])
def test_a_symlink_planted_as_the_states_journal_is_refused_and_its_target_left_alone(rich, tmp_path, suffix):
    """SQLite opens the state's journal (and WAL files) by name: a link planted there is refused before it opens
    it, where an SQLite that follows links would write the journal through it (3.40 fails and drops the state)."""
    store, _ = rich
    cli, out = Cli.of(store), tmp_path / "site"
    publish(cli, out)
    state = (out / STATE_FILE).read_bytes()
    outside = tmp_path / "outside"
    outside.write_bytes(b"precious")
    os.symlink(outside, out / f"{STATE_FILE}{suffix}")
    refused = cli("publish", "--as-of", AS_OF, str(out), "--json")
    assert (refused.exit_code, refused.stdout, refused.stderr) == (2, "", (
        f"ledger: {out / STATE_FILE}: {out / STATE_FILE}{suffix} a symbolic link in {out}, which could lead "
        "outside it; refusing to write through it\n"))
    assert outside.read_bytes() == b"precious" and (out / STATE_FILE).read_bytes() == state
    os.remove(out / f"{STATE_FILE}{suffix}")
    assert publish(cli, out)["rebuilt"] == 0  # the state kept: the refusal touched nothing


def test_the_static_layout():
    assert file_for("/", True) == "index.html"
    assert file_for("/paper/2407.20018/citation-record", True) == "paper/2407.20018/citation-record/index.html"
    assert file_for("/paper/2407.20018/citation-record.json", False) == "paper/2407.20018/citation-record.json"
    assert file_for("/tile/0/x001/000.p/5", False) == "tile/0/x001/000.p/5"


@pytest.mark.slow
def test_a_file_deleted_or_edited_by_hand_is_restored_to_the_bytes_serve_gives(client, rich, key_file, tmp_path):
    store, dates = rich
    cli, out = Cli.of(store), tmp_path / "site"
    publish(cli, out, "--key", str(key_file))
    first = files_of(out)
    other = next(p for p in dates if p != PAPER_004)
    tile = next(name for name in first if name.startswith("tile/entries/"))
    month = next(p[:4] for p in dates if p[:4] not in (PAPER_004[:4], other[:4]))  # no paper of it rendered
    gone = [f"paper/{PAPER_004}/integrity.json", tile, f"papers/{month}/index.html"]
    edited = f"paper/{other}/citation-record/index.html"
    for name in gone:
        os.remove(out / name)
    with open(out / edited, "ab") as page:  # in place: same inode, one byte longer
        page.write(b" ")
    again = publish(cli, out, "--key", str(key_file))
    assert (again["rebuilt"], again["written"], again["whole"]) == (2, 4, None)
    assert files_of(out).keys() == first.keys()
    for name in gone + [edited]:
        assert (out / name).read_bytes() == first[name][0] == client.get(url_of(name, AS_OF)).content, name
    # Restored and recorded again: the next run has nothing to do.
    assert publish(cli, out, "--key", str(key_file))["rebuilt"] == 0


@pytest.mark.slow
def test_trust_folder_looks_only_at_papers_with_new_events(client, rich, key_file, tmp_path):
    store, dates = rich
    cli, out, fresh = Cli.of(store), tmp_path / "site", tmp_path / "fresh"
    first = publish(cli, out, "--key", str(key_file))
    other = next(p for p in dates if p != PAPER_004)
    name = f"paper/{other}/citation-record/index.html"
    edited = out / name
    with open(edited, "ab") as page:  # by hand, in place: what --trust-folder does not look for
        page.write(b" ")
    trusted = publish(cli, out, "--key", str(key_file), "--trust-folder")
    assert (trusted["rebuilt"], trusted["written"], trusted["unchanged"]) == (0, 0, first["written"])
    assert edited.read_bytes().endswith(b" ")
    # A new fact of one paper: that paper is rendered, and the site is what a publish from nothing writes.
    record = orjson.loads((out / f"paper/{PAPER_004}/citation-record.json").read_bytes())
    later = tmp_path / "more.jsonl"
    later.write_bytes(event_line("resolution.recorded", {"observation_id": record["inbound"][5]["observation_id"],
        "resolution": {"observed_at": "2026-08-23T10:00:00Z", "resolver_source": "arxiv_id", "status": "metadata_mismatch"}}))
    assert cli("import", str(later)).exit_code == 0
    assert publish(cli, out, "--key", str(key_file), "--trust-folder")["rebuilt"] == 1
    publish(cli, fresh, "--key", str(key_file))
    now, whole = files_of(out), files_of(fresh)
    size = trusted["tree_size"]
    stale = {name for name in now if name.startswith("tile/") and name.endswith(f".p/{size}")  # kept, as C2SP asks
             or name == f"paper-index/{size}"}  # and the index note of that size, as its checkpoint was signed
    assert stale and {n: v[0] for n, v in now.items() if n not in stale and n != name} \
        == {n: v[0] for n, v in whole.items() if n != name}
    # A run without it finds the edit and restores the bytes serve gives.
    checked = publish(cli, out, "--key", str(key_file))
    assert (checked["rebuilt"], checked["written"]) == (1, 1)
    assert edited.read_bytes() == whole[name][0] == client.get(url_of(name, AS_OF)).content
    # Another as-of is every paper again, trusted or not.
    assert cli("publish", "--as-of", "2026-09-03", str(out), "--json", "--key", str(key_file),
               "--trust-folder").exit_code == 0
    assert saved_settings(out)["as_of"].startswith("2026-09-03")


@pytest.mark.parametrize("change, why", [("as_of", "another --as-of"), ("key", "another key"),
                                         ("version", "another version")])
@pytest.mark.slow
def test_another_as_of_key_or_version_renders_every_paper(client, rich, key_file, tmp_path, change, why):
    store, dates = rich
    cli, out = Cli.of(store), tmp_path / "site"
    publish(cli, out, "--key", str(key_file))
    as_of, key = AS_OF, key_file
    if change == "as_of":
        as_of = "2026-09-03"
    elif change == "key":
        key = tmp_path / "other.key"
        key.write_text(f"{generate_signer('example.org/ledger')}\n")
    else:
        state_sql(out, "UPDATE settings SET body = ?", orjson.dumps({**saved_settings(out), "renderer": "0" * 64}).decode())
    result = cli("publish", "--as-of", as_of, str(out), "--json", "--key", str(key))
    assert result.exit_code == 0, result.stderr
    again = orjson.loads(result.stdout)
    assert (again["rebuilt"], again["whole"]) == (len(dates), why)
    if change == "as_of":
        record = client.get(f"/paper/{PAPER_004}/citation-record.json", params={"as_of": as_of}).content
        assert (out / f"paper/{PAPER_004}/citation-record.json").read_bytes() == record
    if change == "key":
        page = orjson.loads((out / f"paper/{PAPER_004}/integrity.json").read_bytes())
        assert page["verifier_key"] == str(parse_signer(key.read_text()).verifier) != (tmp_path / "ledger.vkey").read_text().strip()
        assert verify_checkpoint((out / "checkpoint").read_text(), parse_signer(key.read_text()).verifier).size == again["tree_size"]


@pytest.mark.slow
def test_another_ledger_published_into_the_same_folder_renders_every_paper(rich, tmp_path):
    store, dates = rich
    out = tmp_path / "site"
    publish(Cli.of(store), out)
    cli = Cli(str(tmp_path / "other.db"))
    assert cli("init").exit_code == 0
    lines = tmp_path / "one.jsonl"
    lines.write_bytes(event_line("paper.snapshot", {"arxiv_id": "2407.20018", "snapshot_observed_at": "2026-01-01T00:00:00Z"}))
    assert cli("import", str(lines)).exit_code == 0
    again = publish(cli, out)
    assert (again["rebuilt"], again["whole"]) == (1, "the state names a log larger than this ledger's")


@pytest.mark.slow
def test_a_run_that_stops_before_saving_its_state_is_made_whole_by_the_next(rich, tmp_path, monkeypatch):
    store, dates = rich
    cli, out = Cli.of(store), tmp_path / "site"
    publish(cli, out)
    record = orjson.loads((out / f"paper/{PAPER_004}/citation-record.json").read_bytes())
    later = tmp_path / "more.jsonl"
    later.write_bytes(event_line("resolution.recorded", {"observation_id": record["inbound"][2]["observation_id"],
                      "resolution": {"observed_at": "2026-08-23T10:00:00Z", "resolver_source": "arxiv_id",
                                     "status": "metadata_mismatch"}}))
    assert cli("import", str(later)).exit_code == 0
    saved = saved_settings(out), state_sql(out, "SELECT * FROM papers ORDER BY paper")

    def stop(*args):
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(PublishState, "save", stop)
        with pytest.raises(KeyboardInterrupt):
            from ledger.core.times import when
            from ledger.web.publish import publish as write_site
            write_site(store, out, when("as_of", AS_OF))
    # The state is the last run's (its transaction rolled back): the new files are not in it.
    assert (saved_settings(out), state_sql(out, "SELECT * FROM papers ORDER BY paper")) == saved
    again = publish(cli, out)
    assert again["rebuilt"] == 1 and again["whole"] is None
    fresh = tmp_path / "fresh"
    publish(cli, fresh)
    assert {k: v[0] for k, v in files_of(out).items() if "000.p/" not in k or k.endswith(f"/{again['tree_size']}")} \
        == {k: v[0] for k, v in files_of(fresh).items()}


@pytest.mark.parametrize("damage", ["file", "state", "row", "stat"])
def test_a_damaged_state_renders_again_what_it_cannot_vouch_for(rich, tmp_path, damage):
    store, dates = rich
    cli, out = Cli.of(store), tmp_path / "site"
    first = publish(cli, out)
    if damage == "file":
        (out / STATE_FILE).write_bytes(b"not an SQLite file, " * 100)
    elif damage == "state":
        state_sql(out, "UPDATE settings SET body = ?", "{not json")
    elif damage == "row":
        state_sql(out, "UPDATE papers SET files = ? WHERE paper = (SELECT min(paper) FROM papers)", b"[1, 2, 3]")
    else:
        state_sql(out, "UPDATE site SET size = 'garbage' WHERE path = (SELECT min(path) FROM site)")
        state_sql(out, "INSERT INTO site VALUES ('tile/../../x', 1, 2)")
    again = publish(cli, out)
    expected = {"file": len(dates), "state": len(dates), "row": 1, "stat": 0}[damage]  # a bad row: that paper only
    assert again["rebuilt"] == expected and again["written"] == 0 and again["unchanged"] == first["written"]
    assert publish(cli, out)["rebuilt"] == 0  # and the state is whole again


@pytest.mark.slow
def test_a_card_links_a_paper_here_once_the_site_has_its_record(client, rich, key_file, tmp_path):
    """Seed 004's citing papers have no record here: their cards link arXiv only. A snapshot of one of them
    gives it a record, and the next publish (trusted or not) and the next request give 004's cards a link."""
    store, dates = rich
    cli, out = Cli.of(store), tmp_path / "site"
    publish(cli, out, "--key", str(key_file))
    page = f"paper/{PAPER_004}/citation-record/index.html"
    record = orjson.loads((out / f"paper/{PAPER_004}/citation-record.json").read_bytes())
    citing = sorted({o["citation"]["citing_paper"]["arxiv_id"] for o in record["inbound"]} - set(dates))
    assert citing and not any(f'href="/paper/{c}"' in (out / page).read_text() for c in citing)
    served = client.get(url_of(page, AS_OF))
    assert served.content == (out / page).read_bytes()  # and kept by serve now
    new = citing[0]
    snapshot = tmp_path / "snapshot.jsonl"
    snapshot.write_bytes(event_line("paper.snapshot", {"arxiv_id": new, "latest_version": 1, "title": "Now here",
                                                       "snapshot_observed_at": "2026-08-01T00:00:00Z"}))
    assert cli("import", str(snapshot)).exit_code == 0
    linked = client.get(url_of(page, AS_OF)).text
    assert linked.count(f'href="/paper/{new}"') == 1 and not any(f'href="/paper/{c}"' in linked for c in citing[1:])
    trusted = publish(cli, out, "--key", str(key_file), "--trust-folder")
    assert trusted["rebuilt"] == 2 and (out / page).read_text() == linked  # the new paper and 004
    assert (out / f"paper/{new}/citation-record/index.html").exists()
