"""Paths and links are built only from a checked id, and written through one helper (issue 42): `replay --out`,
`replay --evidence` and `publish` never write outside their folder nor through a symbolic link they did not
create; a ledger appended to before import checked ids is still replayed and published, its bad paper skipped
with one warning line, and the site never links it."""

from __future__ import annotations

import os
import re

import pytest
from fastapi.testclient import TestClient

from ledger.core.errors import InputError
from ledger.core.files import Folder, write_file
from ledger.core.redact import quoted
from ledger.storage.store import Store
from tests.conftest import AS_OF_004, PAPER_004
from tests.ledger.importing.test_paper_ids_at_import import legacy_ledger

BAD = ["/tmp/x/OUTSIDE", "../../etc/passwd", "2407.20018/../../escaped"]
HOSTILE = "\x1b[2J\r2407.20018 PRIVATE+KEY+evil+01234567+AXkH9Gv0fQ"  # clears the screen, overwrites, key text
AS_OF = "2026-08-24"


def warning(bad: str) -> str:
    return (f"ledger: warning: skipped the paper {quoted(bad)}: not an arXiv id, so never a file name or a link (appended "
            "before import checked ids)\n")


def tree(root) -> list[str]:
    return sorted(os.path.relpath(os.path.join(folder, name), root)
                  for folder, folders, names in os.walk(root) for name in names + folders)


# -- the helper ---------------------------------------------------------------------------------------------
def test_the_helper_writes_only_inside_and_never_through_a_link(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.json").write_bytes(b"mine")
    with Folder(tmp_path / "out") as folder:
        for bad in ("../x", "a/../../x", "/etc/x", "", "a//b", "./a", "a\\b", "a\x00b", "a/"):
            with pytest.raises(InputError, match="not a path inside"):
                folder.put(bad, b"x")
        os.symlink(outside, tmp_path / "out" / "hep-th")  # a folder on the way
        os.symlink(outside / "victim.json", tmp_path / "out" / "2407.20018.json")  # the file itself
        os.symlink(outside / "new.json", tmp_path / "out" / "2407.20019.json")  # a dangling one
        for relative in ("hep-th/9901001.json", "2407.20018.json", "2407.20019.json"):
            with pytest.raises(InputError, match="a symbolic link in .*, which could lead outside it; refusing"):
                folder.put(relative, b"x")
        assert folder.put("a/b/c.json", b"inside") == (True, os.stat(tmp_path / "out" / "a" / "b" / "c.json"))
        assert folder.put("a/b/c.json", b"inside", only_changed=True)[0] is False
        assert folder.put("a/b/c.json", b"again")[0] is True
    assert tree(outside) == ["victim.json"] and (outside / "victim.json").read_bytes() == b"mine"
    assert (tmp_path / "out" / "a" / "b" / "c.json").read_bytes() == b"again"
    assert not [name for name in tree(tmp_path / "out") if name.endswith(".tmp")]  # no temporary left behind


def test_a_link_swapped_in_after_the_folder_was_walked_is_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    with Folder(tmp_path / "out") as folder:
        folder.put("paper/x.json", b"1")
        os.rename(tmp_path / "out" / "paper", tmp_path / "moved")  # the folder held open moves away...
        os.symlink(outside, tmp_path / "out" / "paper")  # ...and a link to elsewhere takes its name
        folder.put("paper/y.json", b"2")  # written in the folder opened, wherever it is now: never through the link
    assert tree(outside) == [] and sorted(tree(tmp_path / "moved")) == ["x.json", "y.json"]


def test_the_helper_holds_few_folders_open_and_never_reads_a_fifo(tmp_path):
    from ledger.core.files import HELD

    with Folder(tmp_path / "out") as folder:
        for n in range(3 * HELD):  # an old-style archive's months, say: more folders than are held open
            folder.put(f"papers/a{n}/9901/index.html", b"x")
            assert len(folder._folders) <= HELD + 1
        os.mkfifo(tmp_path / "out" / "pipe.json")
        assert folder.put("pipe.json", b"x", only_changed=True)[0] is True  # replaced, not read (it would block)
    assert (tmp_path / "out" / "pipe.json").read_bytes() == b"x"
    assert len(os.listdir(tmp_path / "out" / "papers")) == 3 * HELD


def test_write_file_refuses_a_link_and_names_the_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "target").write_bytes(b"mine")
    os.symlink("target", "rec.json")
    with pytest.raises(InputError, match=r"^rec\.json: a symbolic link; refusing to write through it$"):
        write_file("rec.json", b"x")
    with pytest.raises(InputError, match=r"^missing/rec\.json: cannot write: No such file or directory$"):
        write_file("missing/rec.json", b"x")
    write_file("plain.json", b"x")
    assert (tmp_path / "target").read_bytes() == b"mine" and (tmp_path / "plain.json").read_bytes() == b"x"


# -- replay --out -------------------------------------------------------------------------------------------
def test_replay_out_does_not_follow_a_symlink_inside_its_folder(seeded, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim").write_bytes(b"mine")
    (tmp_path / "recs").mkdir()
    os.symlink(outside / "victim", tmp_path / "recs" / f"{PAPER_004}.json")
    result = seeded("replay", "--as-of", AS_OF, "--out", "recs")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (f"ledger: recs/{PAPER_004}.json: a symbolic link in recs, which could lead outside it; "
                             "refusing to write through it\n")
    assert (outside / "victim").read_bytes() == b"mine" and tree(outside) == ["victim"]


def test_replay_out_writes_an_old_style_id_under_its_archive_folder(seeded, tmp_path):
    from tests.helpers import event_line

    (tmp_path / "old.jsonl").write_bytes(event_line("paper.snapshot", {
        "arxiv_id": "hep-th/9901001", "snapshot_observed_at": "2026-01-01T00:00:00Z", "title": "Old style"}))
    assert seeded("import", "old.jsonl").exit_code == 0
    result = seeded("replay", "--as-of", AS_OF, "--out", "recs")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    assert tree(tmp_path / "recs") == [f"{PAPER_004}.json", "hep-th", "hep-th/9901001.json"]


@pytest.mark.parametrize("option", ["--out", "--evidence"])
def test_replay_one_file_is_not_written_through_a_symlink(keyed, tmp_path, option):
    (tmp_path / "victim").write_bytes(b"mine")
    os.symlink(tmp_path / "victim", tmp_path / "rec.json")
    extra = ["--evidence", "b.json", "--key", "ledger.key"] if option == "--out" else ["--key", "ledger.key"]
    result = keyed("replay", "--paper", PAPER_004, "--as-of", AS_OF_004, option, "rec.json", *extra)
    assert (result.exit_code, result.stderr) == (2, "ledger: rec.json: a symbolic link; refusing to write through it\n")
    assert (tmp_path / "victim").read_bytes() == b"mine"


@pytest.mark.parametrize("bad", BAD + [HOSTILE])
def test_replay_out_skips_a_bad_id_of_an_old_ledger_with_one_warning(new_location, tmp_path, monkeypatch, bad):
    monkeypatch.chdir(tmp_path)
    legacy = legacy_ledger(new_location(), tmp_path, bad, monkeypatch)
    before = tree("/tmp/x") if os.path.isdir("/tmp/x") else []
    for jobs in ("1", "2"):
        out = tmp_path / f"recs{jobs}"
        result = legacy("replay", "--as-of", AS_OF, "--out", str(out), "--jobs", jobs)
        assert (result.exit_code, result.stdout, result.stderr) == (0, "", warning(bad)), jobs
        assert "\x1b" not in result.stderr and "evil" not in result.stderr
        assert tree(out) == [f"{PAPER_004}.json"]
    assert (tree("/tmp/x") if os.path.isdir("/tmp/x") else []) == before
    assert not (tmp_path / "escaped").exists() and not (tmp_path.parent / "escaped").exists()
    # To stdout, a record is bytes, not a path: an old ledger's paper is still replayed there.
    assert bad.encode() in legacy("replay", "--as-of", AS_OF).stdout_bytes or bad == HOSTILE  # JSON escapes ESC


# -- publish and serve --------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", BAD + ["..", "a\\b", "2407.20018 ", HOSTILE])
def test_publish_skips_a_bad_id_of_an_old_ledger_with_one_warning(new_location, tmp_path, monkeypatch, bad):
    legacy = legacy_ledger(new_location(), tmp_path, bad, monkeypatch)
    out = tmp_path / "deep" / "site"
    result = legacy("publish", "--as-of", AS_OF, str(out))
    assert result.exit_code == 0 and result.stderr == warning(bad)
    assert "\x1b" not in result.stderr and "evil" not in result.stderr
    assert result.stdout.startswith(f"published 1 paper as of {AS_OF}T23:59:59.999999Z")
    assert f"paper/{PAPER_004}/citation-record.json" in tree(out)
    assert not any("escaped" in name or "OUTSIDE" in name or "passwd" in name for name in tree(tmp_path))
    for page in ("index.html", f"papers/{PAPER_004[:4]}/index.html"):
        assert "Escape" not in (out / page).read_text()  # the bad paper's title: never listed, never linked
    again = legacy("publish", "--as-of", AS_OF, str(out), "--trust-folder")  # the incremental path too
    assert (again.exit_code, again.stderr) == (0, "")  # nothing new: the bad paper is not read again


def test_the_home_page_does_not_link_a_bad_id_of_an_old_ledger(new_location, tmp_path, monkeypatch):
    from ledger.web.app import create_app

    location = new_location()
    legacy_ledger(location, tmp_path, "../../etc/passwd", monkeypatch)
    client = TestClient(create_app(Store.open(location), None))
    home = client.get(f"/?as_of={AS_OF}")
    assert home.status_code == 200 and "etc/passwd" not in home.text and "Escape" not in home.text
    assert f'href="/paper/{PAPER_004}' in home.text
    assert client.get("/paper/../../etc/passwd").status_code in (400, 404)


@pytest.mark.parametrize("malformed", ["../../etc/passwd", "javascript:alert(1)", "2407.2001"])
def test_a_citations_malformed_id_is_shown_never_linked(store, tmp_path, malformed):
    """A reference's malformed identifier is data: the record page shows it, and links neither arXiv nor a page
    here from it; the well-formed ids of the other cards still link."""
    from ledger.importing.importer import import_files
    from ledger.web.app import create_app
    from tests.helpers import redigest, seed_record, write_record

    record = seed_record()
    obs = record["inbound"][0]
    obs["citation"]["citing_paper"]["arxiv_id"] = malformed
    obs["links"]["citing_paper"] = f"/paper/{malformed}"
    record["inbound"].sort(key=lambda o: o["citation"]["citing_paper"]["arxiv_id"])  # the record's order
    import_files(store, [write_record(tmp_path / "record.json", redigest(record))])
    page = TestClient(create_app(store, None)).get(f"/paper/{PAPER_004}/citation-record?as_of={record['as_of']}")
    assert page.status_code == 200 and f"arXiv:{malformed}" in page.text.replace("&#34;", '"')
    hrefs = re.findall(r'href="([^"]*)"', page.text)
    named = re.compile(re.escape(malformed) + r"(?![0-9])")  # 2407.2001, not the 2407.20018 it is a prefix of
    assert not [h for h in hrefs if named.search(h) or "passwd" in h or h.startswith("javascript")]
    other = next(o["citation"]["citing_paper"]["arxiv_id"] for o in record["inbound"]
                 if o["citation"]["citing_paper"]["arxiv_id"] != malformed)
    assert f"https://arxiv.org/abs/{other}" in hrefs


# -- the monitor: a log's entries are imported through the same door ---------------------------------------
def test_a_signed_entry_with_a_bad_paper_id_is_refused_by_the_monitor(keyed, tmp_path):
    """A log of one entry, a snapshot of the paper ../../etc/passwd, its tiles and a checkpoint signed over them:
    the monitor's copy is appended through import's parser, which names the field (exit 1, as for any entry
    that is not an event of the vocabulary), and nothing is kept."""
    import json as jsonlib

    from ledger.log.chain import entry_bytes
    from tests.helpers import one_entry_site

    payload = b'{"arxiv_id":"../../etc/passwd","snapshot_observed_at":"2026-01-01T00:00:00Z"}'
    leaf = entry_bytes(1, "paper.snapshot", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00.000000Z", payload)
    one_entry_site(tmp_path / "site", leaf)
    bad = keyed("monitor", "site", "--verifier-key", "ledger.vkey", "--state", "state", "--json")
    assert bad.exit_code == 1, bad.stderr
    assert "field payload.arxiv_id: not an arXiv id: '../../etc/passwd'" in bad.stderr
    assert bad.stderr.count("\n") == 1 and jsonlib.loads(bad.stdout)["entries"] == [1, 1]
    assert not (tmp_path / "state" / "checkpoint").exists()
