"""Every path of the site through the ASGI test client: the bytes the CLI gives for the same question, the
headers a cache and a browser rely on, and one-line errors for everything a client can get wrong."""

import base64
import hashlib
import re
import subprocess
import sys
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import orjson
import pytest

from ledger.core.times import parse_when
from ledger.model.published import RESOLUTION_STATES
from ledger.projections.text import render_text
from ledger.services.proofs import checkpoint
from tests.conftest import AS_OF_004, PAPER_004, SEED_000, SEED_003, Cli
from tests.web.conftest import LATER, SCRIPT_PAPER, SCRIPT_TITLE

DIGEST_0809 = "sha256:88bbcfe1847497cac1a7e1c3f5aa9530cb1662bfd44d13f772daaeb592ad2687"


def ok(response, media: str) -> bytes:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith(media)
    return response.content


class Text(HTMLParser):
    """The text a reader sees (no script, no style, no attribute)."""

    def __init__(self):
        super().__init__()
        self.parts, self.skip = [], 0

    def handle_starttag(self, tag, attrs):
        self.skip += tag in ("script", "style")

    def handle_endtag(self, tag):
        self.skip -= tag in ("script", "style")

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def visible(html: bytes) -> str:
    parser = Text()
    parser.feed(html.decode())
    return "".join(parser.parts)


# -- bytes equal to the CLI's -----------------------------------------------------------------------------
@pytest.mark.slow
def test_record_json_is_the_replay_bytes_for_every_paper_and_date(client, rich):
    store, dates = rich
    cli = Cli.of(store)
    for paper, whens in dates.items():
        for when in whens:
            response = client.get(f"/paper/{paper}/citation-record.json", params={"as_of": when})
            expected = cli("replay", "--paper", paper, "--as-of", when)
            assert expected.exit_code == 0, expected.stderr
            assert ok(response, "application/json") == expected.stdout_bytes, (paper, when)
            record = orjson.loads(response.content)
            assert response.headers["etag"] == f'"{record["context_digest"]}"'
    seed = client.get(f"/paper/{PAPER_004}/citation-record.json", params={"as_of": AS_OF_004})
    assert seed.headers["etag"] == f'"{DIGEST_0809}"'


def test_record_json_with_known_at_is_the_replay_bytes(client, rich):
    store, _ = rich
    cli = Cli.of(store)
    head = cli("head", "--json")
    recorded = orjson.loads(head.stdout)["recorded_at"]
    for known in ("2026-01-01", recorded):
        response = client.get(f"/paper/{PAPER_004}/citation-record.json", params={"as_of": LATER, "known_at": known})
        expected = cli("replay", "--paper", PAPER_004, "--as-of", LATER, "--known-at", known)
        assert response.status_code == (200 if expected.exit_code == 0 else 404)
        if expected.exit_code == 0:
            assert response.content == expected.stdout_bytes
        else:
            assert response.json()["error"] == expected.stderr.strip().removeprefix("ledger: ")


def test_without_as_of_the_record_is_as_of_the_request_instant(client, rich):
    store, _ = rich
    response = client.get(f"/paper/{PAPER_004}/citation-record.json")
    record = orjson.loads(ok(response, "application/json"))
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", record["as_of"])
    again = Cli.of(store)("replay", "--paper", PAPER_004, "--as-of", record["as_of"])
    assert response.content == again.stdout_bytes
    # The content, not the instant, is what the ETag names: weak, and the same a moment later.
    assert response.headers["etag"] == f'W/"{record["context_digest"]}"'
    assert client.get(f"/paper/{PAPER_004}/citation-record.json").headers["etag"] == response.headers["etag"]


def test_an_etag_that_matches_gets_304_without_a_body(client):
    path = f"/paper/{PAPER_004}/citation-record.json?as_of={AS_OF_004}"
    first = client.get(path)
    again = client.get(path, headers={"if-none-match": first.headers["etag"]})
    assert (again.status_code, again.content, again.headers["etag"]) == (304, b"", first.headers["etag"])
    weak = client.get(path, headers={"if-none-match": f'"x", W/{first.headers["etag"]}'})
    assert weak.status_code == 304
    other = client.get(path, headers={"if-none-match": '"sha256:00"'})
    assert other.status_code == 200 and other.content == first.content


def test_history_and_diff_json_are_what_the_cli_prints(client, rich):
    store, _ = rich
    cli = Cli.of(store)
    history = client.get(f"/paper/{PAPER_004}/history.json")
    assert ok(history, "application/json") == cli("history", PAPER_004, "--json").stdout_bytes
    rows = orjson.loads(history.content)
    as_of = client.get(f"/paper/{PAPER_004}/history.json", params={"as_of": "2026-08-09"})
    key = parse_when("2026-08-09")[1]
    assert orjson.loads(as_of.content) == [r for r in rows if parse_when(r["effective_at"])[1] <= key]
    assert len(orjson.loads(as_of.content)) < len(rows)
    for start, end in (("2026-08-06", "2026-08-09"), ("2026-08-09", LATER), ("2020-01-01", "2026-08-09")):
        diff = client.get(f"/paper/{PAPER_004}/diff.json", params={"from": start, "to": end})
        assert ok(diff, "application/json") == cli("diff", PAPER_004, "--from", start, "--to", end, "--json").stdout_bytes
    changed = orjson.loads(client.get(f"/paper/{PAPER_004}/diff.json", params={"from": "2026-08-09", "to": LATER}).content)
    assert [c["details"][0] for c in changed["changed"]] == ["resolution: unresolved → verified_fuzzy (local_arxiv)"]


def test_checkpoint_is_the_cli_checkpoint(client, rich, key_file):
    store, _ = rich
    response = client.get("/checkpoint")
    assert ok(response, "text/plain; charset=utf-8") == Cli.of(store)("checkpoint", "--key", str(key_file)).stdout_bytes
    assert response.headers["cache-control"] == "public, max-age=5"


@pytest.mark.slow
def test_integrity_carries_the_digests_a_checkpoint_and_an_evidence_bundle(client, rich, signer, tmp_path):
    store, _ = rich
    response = client.get(f"/paper/{PAPER_004}/integrity.json", params={"as_of": AS_OF_004})
    found = orjson.loads(ok(response, "application/json"))
    assert found["context_digest"] == DIGEST_0809 and len(found["observations"]) == 12
    bundle = tmp_path / "bundle.json"
    bundle.write_bytes(orjson.dumps(found["evidence"]))
    own = store.paper_version(PAPER_004)[1]  # the evidence is of the log up to the paper's last event
    assert found["checkpoint"] == found["evidence"]["checkpoint"] == checkpoint(store, signer, own, paper_index=True)[0]
    assert found["verifier_key"] == (tmp_path / "ledger.vkey").read_text().strip()
    # The bundle taken from the page verifies offline with the CLI.
    check = Cli(str(tmp_path / "absent.db"))("verify", "--evidence", str(bundle), "--verifier-key",
                                             str(tmp_path / "ledger.vkey"))
    assert check.exit_code == 0 and "exactly their rebuild" in check.stdout
    page = client.get(f"/paper/{PAPER_004}/integrity", params={"as_of": AS_OF_004})
    text = visible(ok(page, "text/html"))
    assert DIGEST_0809 in text and "Back to the record" in text and found["checkpoint"].split("\n")[2] in text
    assert f'href="/paper/{PAPER_004}/citation-record?as_of={AS_OF_004}"' in page.text


def test_without_a_key_there_is_no_checkpoint_and_no_bundle(rich):
    from fastapi.testclient import TestClient

    from ledger.web.app import create_app

    store, _ = rich
    bare = TestClient(create_app(store))
    missing = bare.get("/checkpoint")
    assert missing.status_code == 404 and "without a signing key" in missing.json()["error"]
    found = bare.get(f"/paper/{PAPER_004}/integrity.json").json()
    assert (found["checkpoint"], found["evidence"], found["verifier_key"]) == (None, None, None)
    assert "served without a signing key" in bare.get("/evidence").text


# -- the page form ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [SEED_000, SEED_003], ids=["seed_000", "seed_003"])
def test_the_html_page_carries_every_line_of_the_text_page(client, rich, seed):
    # The records built from these pages' facts render to exactly these pages (tests/projections/test_text).
    store, dates = rich
    page = seed.read_text(encoding="utf-8")
    arxiv_id = re.search(r"for arXiv:(\S+)\.", page).group(1)
    html = client.get(f"/paper/{arxiv_id}/citation-record", params={"as_of": dates[arxiv_id][0]})
    text = "".join(visible(ok(html, "text/html; charset=utf-8")).split())
    blocks = page.split("\n\n")
    # A card says in its heading and section what the page form's block says in a sentence and a pair of titles:
    # those two lines and the fixed heading are the page form's wording; every fact of every block is on the card.
    worded = set()
    for i, block in enumerate(blocks):
        if block.startswith("Observation "):
            oid, direction = block[len("Observation "):].split(" · ")
            assert oid in text and direction in ("inbound", "outbound")
            other = blocks[i + 1][len("This paper cites "):-1] if direction == "outbound" else \
                blocks[i + 1][:-len(" cites this paper.")]
            other = "Unresolved cited work" if other == "an unresolved cited work" else other  # its card's heading
            assert "".join(other.split()) in text, other
            worded |= {i, i + 1, i + 2}
    assert worded
    for i, block in enumerate(blocks):
        if i in worded or block == "Source-reported events for the cited work":
            continue
        for line in block.splitlines():
            assert "".join(line.split()) in text, line


def test_the_html_page_shows_every_digest_and_links_its_json(client):
    response = client.get(f"/paper/{PAPER_004}/citation-record", params={"as_of": AS_OF_004})
    html = ok(response, "text/html; charset=utf-8").decode()
    record = orjson.loads(client.get(f"/paper/{PAPER_004}/citation-record.json", params={"as_of": AS_OF_004}).content)
    assert render_text(record).split("\n\n")[2] in html  # the thesis
    for obs in record["inbound"] + record["outbound"]:
        assert f'<code class="digest" data-field="observation_digest">{obs["observation_digest"]}</code>' in html
        assert obs["observation_digest"] in visible(response.content)
    assert f'data-context-digest="{DIGEST_0809}"' in html
    assert f'data-record-json="/paper/{PAPER_004}/citation-record.json?as_of={AS_OF_004}"' in html
    assert '<script src="/assets/check.js" defer></script>' in html
    assert html.count("<script") == 1 and "<style" not in html and not re.search(r"<[^>]*\s(style|on\w+)=", html)
    assert response.headers["content-security-policy"].startswith("default-src 'none'; script-src 'self'; style-src 'self'")
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    assert response.headers["x-content-type-options"] == "nosniff"
    assert '<meta http-equiv="Content-Security-Policy"' in html  # the same policy on a static host


def test_a_title_holding_script_renders_as_text(client):
    response = client.get(f"/paper/{SCRIPT_PAPER}/citation-record")
    html = ok(response, "text/html").decode()
    assert "<script>window" not in html and "<img" not in html and "</li><script>" not in html
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;&lt;img src=x onerror=&#34;window.__pwned = 2&#34;&gt;" in html
    assert SCRIPT_TITLE in visible(response.content)
    assert "</li><script>window.__pwned = 3</script>" in visible(response.content)
    for path in (f"/paper/{SCRIPT_PAPER}", f"/paper/{SCRIPT_PAPER}/integrity"):
        page = ok(client.get(path), "text/html").decode()
        assert "<script>window" not in page and "<img" not in page


def test_the_paper_page_shows_snapshot_versions_history_and_a_record_per_day(client, rich):
    store, _ = rich
    response = client.get(f"/paper/{PAPER_004}", params={"as_of": LATER})
    html = ok(response, "text/html").decode()
    text = visible(response.content)
    rows = orjson.loads(Cli.of(store)("history", PAPER_004, "--json").stdout)
    latest = re.findall(r"<tr><td data-label=\"Seq\">(\d+)</td>", html)
    assert latest == [str(r["seq"]) for r in rows[::-1][:20]]  # the 20 latest, newest first
    assert f"The 20 latest of this paper's {len(rows)} events" in text and len(rows) > 20
    for row in rows[::-1][:20]:
        assert row["account"] in text
    assert "v1" in text and "v2" in text
    counts = Counter(r["kind"] for r in rows if r["effective_at"].startswith("2026-08-09"))
    assert "2026-08-09 (JSON, what changed): " + ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())) in text
    days = re.findall(rf'href="/paper/{PAPER_004}/as-of/(\d{{4}}-\d\d-\d\d)/citation-record"', html)
    assert "2026-08-09" in days and "2026-08-20" in days and days == sorted(days, reverse=True)
    for day in days:
        record = client.get(f"/paper/{PAPER_004}/as-of/{day}/citation-record.json")
        assert record.content == client.get(f"/paper/{PAPER_004}/citation-record.json", params={"as_of": day}).content
        assert orjson.loads(record.content)["as_of"] == f"{day}T23:59:59.999999Z"
        page = client.get(f"/paper/{PAPER_004}/as-of/{day}/citation-record")
        assert f'data-record-json="/paper/{PAPER_004}/as-of/{day}/citation-record.json"' in page.text


def test_evidence_explains_the_formats_and_its_snippet_checks_a_served_record(client, tmp_path):
    page = ok(client.get("/evidence"), "text/html").decode()
    vkey = (tmp_path / "ledger.vkey").read_text().strip()
    assert vkey in page and "tlog-tiles" in page and "ledger verify --evidence" in page
    snippet = re.search(r'<code class="snippet" id="digest-snippet">(.*?)</code>', page, re.S).group(1)
    import html as html_module

    script = tmp_path / "check.py"
    script.write_text(html_module.unescape(snippet))
    record = tmp_path / "record.json"
    record.write_bytes(client.get(f"/paper/{PAPER_004}/citation-record.json").content)
    good = subprocess.run([sys.executable, "-I", str(script), str(record)], capture_output=True, text=True)
    assert good.returncode == 0 and good.stdout.startswith("ok: 12 observation digests"), good.stderr
    record.write_bytes(record.read_bytes().replace(b"Efficient", b"Efficiend", 1))
    bad = subprocess.run([sys.executable, "-I", str(script), str(record)], capture_output=True, text=True)
    assert bad.returncode != 0 and "AssertionError" in bad.stderr


def test_assets_and_head_requests(client):
    script = client.get("/assets/check.js")
    assert ok(script, "text/javascript").startswith(b"// Checks a Paper Citation Record page")
    assert client.get("/assets/style.css").headers["content-type"].startswith("text/css")
    assert client.get("/assets/nothing.js").status_code == 404
    head = client.head(f"/paper/{PAPER_004}/citation-record.json", params={"as_of": AS_OF_004})
    assert head.status_code == 200 and head.content == b"" and head.headers["etag"] == f'"{DIGEST_0809}"'


# -- tiles through the client: the oracle is `ledger export` ----------------------------------------------
def test_tiles_hold_the_export_entries_and_their_leaf_hashes(client, rich):
    store, _ = rich
    export = Cli.of(store)("export").stdout_bytes.splitlines()
    entries = []
    for line in export:
        entry = orjson.loads(line)
        del entry["entry_hash"], entry["chain_hash"]
        entries.append(orjson.dumps(entry, option=orjson.OPT_SORT_KEYS))
    size = len(entries)
    assert 0 < size < 256
    bundle = client.get(f"/tile/entries/000.p/{size}")
    assert ok(bundle, "application/octet-stream") == b"".join(len(e).to_bytes(2, "big") + e for e in entries)
    hashes = client.get(f"/tile/0/000.p/{size}").content
    assert hashes == b"".join(hashlib.sha256(b"\x00" + e).digest() for e in entries)
    assert client.get("/tile/0/000.p/3").content == hashes[:96]  # a partial tile of an earlier size
    assert client.get(f"/tile/0/000.p/{size}").headers["cache-control"] == "public, max-age=60"
    gzipped = client.get(f"/tile/entries/000.p/{size}", headers={"accept-encoding": "gzip"})
    assert gzipped.headers["content-encoding"] == "gzip" and gzipped.content == bundle.content
    for beyond in (f"/tile/0/000.p/{size + 1}", "/tile/0/000", "/tile/1/000.p/1", "/tile/entries/001"):
        missing = client.get(beyond)
        assert missing.status_code == 404 and "not in the log yet" in missing.json()["error"], beyond


# -- bad requests and faults -------------------------------------------------------------------------------
def one_line_error(response, status: int) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.headers["cache-control"] == "no-store"
    body = response.content
    assert body.endswith(b"\n") and body.count(b"\n") == 1 and b"Traceback" not in body
    found = orjson.loads(body)
    assert set(found) == {"error", "status"} and found["status"] == status
    return found["error"]


@pytest.mark.parametrize("path, params, fragment", [
    (f"/paper/{PAPER_004}/citation-record.json", {"as_of": "yesterday"}, "as_of: expected a date YYYY-MM-DD or an RFC 3339 timestamp"),
    (f"/paper/{PAPER_004}/citation-record.json", {"as_of": "2026-02-30"}, "as_of: not a valid date"),
    (f"/paper/{PAPER_004}/citation-record.json", {"known_at": "2026-08-09T10:00:00"}, "known_at: expected a date YYYY-MM-DD or an RFC 3339"),
    (f"/paper/{PAPER_004}/citation-record.json", {"asof": "2026-08-09"}, "unknown query parameter 'asof'"),
    (f"/paper/{PAPER_004}/citation-record.json", {"as_of": "x" * 201}, "as_of: String should have at most 200"),
    (f"/paper/{PAPER_004}/diff.json", {"from": "2026-08-01"}, "to: Field required"),
    ("/paper/2407.2001/citation-record.json", {}, "not an arXiv id: '2407.2001'"),
    ("/paper/0704.00001", {}, "not an arXiv id: '0704.00001'"),
    ("/paper/hep-th/991301", {}, "not an arXiv id: 'hep-th/991301'"),
    ("/paper/..%2F..%2Fetc%2Fpasswd/citation-record.json", {}, "not an arXiv id: '../../etc/passwd'"),
    (f"/paper/{PAPER_004}/as-of/2026-8-9/citation-record", {}, "not a date: '2026-8-9'"),
    (f"/paper/{PAPER_004}/as-of/2026-13-01/citation-record", {}, "not a valid date"),
    ("/tile/0/0001", {}, "not a tile path: 'tile/0/0001'"),
    ("/tile/0/x000/001", {}, "not a tile path"),
    ("/tile/0/000.p/256", {}, "not a tile path"),
    ("/tile/64/000", {}, "not a tile path"),
    ("/tile/entries/000.p/0", {}, "not a tile path"),
    ("/checkpoint", {"size": "1"}, "unknown query parameter 'size'"),
])
def test_a_bad_request_is_400_with_one_line(client, path, params, fragment):
    error = one_line_error(client.get(path, params=params), 400)
    assert fragment in error, error


def test_a_path_with_a_line_break_matches_nothing(client):
    assert one_line_error(client.get("/paper/2407.20018%0A%0Devil"), 404).startswith("no such path: /paper/2407.20018")


def test_old_and_new_style_ids_are_accepted(client):
    for paper in ("hep-th/9901001", "math.GT/0309136", "0704.0001", "1412.9999", "1501.00001"):
        assert "no record of arXiv:" + paper in one_line_error(client.get(f"/paper/{paper}/citation-record.json"), 404)


def test_a_query_too_long_or_given_twice_is_400(client):
    long = client.get(f"/paper/{PAPER_004}/citation-record.json?as_of=2026-08-09&" + "x=1&" * 300)
    assert "query too long" in one_line_error(long, 400)
    twice = client.get(f"/paper/{PAPER_004}/citation-record.json?as_of=2026-08-09&as_of=2026-08-10")
    assert "given more than once" in one_line_error(twice, 400)
    assert "path too long" in one_line_error(client.get("/paper/" + "1" * 1100), 400)


def test_an_unknown_paper_or_date_is_404(client):
    assert one_line_error(client.get("/paper/2407.99999/citation-record.json"), 404).startswith(
        "no record of arXiv:2407.99999 as of")
    early = client.get(f"/paper/{PAPER_004}/citation-record", params={"as_of": "2020-01-01"})
    assert one_line_error(early, 404) == f"no record of arXiv:{PAPER_004} as of 2020-01-01T23:59:59.999999Z"
    assert "no events of 2407.99999" in one_line_error(client.get("/paper/2407.99999/history.json"), 404)
    assert one_line_error(client.get("/no/such/path"), 404) == "no such path: /no/such/path"


def test_errors_are_html_when_the_browser_asks_for_html(client):
    browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    response = client.get("/paper/2407.2001/citation-record", headers={"accept": browser})
    assert response.status_code == 400 and response.headers["content-type"].startswith("text/html")
    assert "<p class=\"reason\">not an arXiv id: &#39;2407.2001&#39;" in response.text
    assert client.get("/paper/2407.2001", headers={"accept": "application/json, text/html;q=0.5"}).headers[
        "content-type"] == "application/json"
    escaped = client.get("/paper/%3Cscript%3Ealert(1)%3C%2Fscript%3E", headers={"accept": "text/html"})
    assert escaped.status_code == 400 and "<script>alert" not in escaped.text and "&lt;script&gt;" in escaped.text


def test_a_trailing_slash_redirects_as_a_static_host_does(client):
    response = client.get(f"/paper/{PAPER_004}/citation-record/?as_of=2026-08-09", follow_redirects=False)
    assert response.status_code == 308
    assert response.headers["location"] == f"/paper/{PAPER_004}/citation-record?as_of=2026-08-09"
    elsewhere = client.get("http://testserver//evil.example/", follow_redirects=False)
    assert elsewhere.status_code == 308 and elsewhere.headers["location"] == "/evil.example"  # never another host


def test_an_unreachable_database_is_503_and_the_server_keeps_running(unused_port):
    from fastapi.testclient import TestClient

    from ledger.web.app import create_app

    # A real PostgreSQL URL on a loopback port where nothing listens: the driver's connection is refused.
    app = create_app(f"postgresql+psycopg://ledger@127.0.0.1:{unused_port}/ledger?connect_timeout=2")
    client = TestClient(app)
    for path in (f"/paper/{PAPER_004}/citation-record.json", "/tile/0/000.p/1", "/evidence"):
        error = one_line_error(client.get(path), 503)
        assert "cannot read" in error or "cannot" in error, error
    assert client.get("/paper/2407.2001").status_code == 400  # the client's mistake is still named first


def test_a_directory_that_is_not_a_ledger_fails_at_start_not_per_request(tmp_path):
    from ledger.core.errors import InputError
    from ledger.web.app import create_app

    with pytest.raises(InputError, match="no ledger here"):
        create_app(str(tmp_path / "typo.db"))


def test_an_exported_log_is_served_like_its_database(rich, tmp_path, signer):
    from fastapi.testclient import TestClient

    from ledger.web.app import create_app

    store, _ = rich
    log = tmp_path / "log.jsonl"
    log.write_bytes(Cli.of(store)("export").stdout_bytes)
    from_log = TestClient(create_app(str(log), signer))
    from_db = TestClient(create_app(store, signer))
    for path in (f"/paper/{PAPER_004}/citation-record.json?as_of={LATER}", f"/paper/{PAPER_004}/history.json",
                 "/checkpoint", "/tile/entries/000.p/5", f"/paper/{PAPER_004}/citation-record?as_of={LATER}"):
        assert from_log.get(path).content == from_db.get(path).content, path


def test_a_record_page_links_the_change_days_either_side_and_what_changed_that_day(client):
    html = client.get(f"/paper/{PAPER_004}/as-of/2026-08-20/citation-record").text
    assert f'<a href="/paper/{PAPER_004}/as-of/2026-08-09/citation-record" rel="prev">' in html
    assert f'<a href="/paper/{PAPER_004}/as-of/2026-08-21/citation-record" rel="next">' in html
    assert f'<a href="/paper/{PAPER_004}/as-of/2026-08-20/changes">What changed on 2026-08-20</a>' in html
    assert "<dt>Data last observed</dt><dd><time datetime=\"2026-08-20T12:00:00Z\">" in html
    latest = client.get(f"/paper/{PAPER_004}/citation-record", params={"as_of": "2026-08-21"}).text
    assert 'rel="next"' not in client.get(f"/paper/{PAPER_004}/citation-record").text
    assert '/as-of/2026-08-20/citation-record" rel="prev">' in latest  # the change day before the 21st's end
    # The day's changes are `ledger diff` from the change day before it to its end, as HTML.
    changes = client.get(f"/paper/{PAPER_004}/as-of/2026-08-20/changes")
    assert changes.status_code == 200 and "What changed on 2026-08-20" in changes.text
    found = client.get(f"/paper/{PAPER_004}/diff.json", params={"from": "2026-08-09", "to": "2026-08-20"}).json()
    assert len(found["changed"]) == 1 and all(line in changes.text for line in found["changed"][0]["details"])
    live = client.get(f"/paper/{PAPER_004}/diff", params={"from": "2026-08-09", "to": "2026-08-20"})
    assert live.status_code == 200 and found["changed"][0]["observation_id"] in live.text


def test_pictures_a_banner_for_each_notice_once_meters_and_a_stacked_bar(client, rich):
    store, dates = rich
    html = client.get(f"/paper/{PAPER_004}/citation-record", params={"as_of": "2026-08-24"}).text
    banner = html[html.index('<section class="banner"'):html.index("</section>", html.index('<section class="banner"'))]
    assert "1 notice on cited works" in banner and banner.count('class="badge notice-correction">Correction<') == 1
    assert "Correction, reported by crossref, dated 2026-08-19." in banner
    assert '<section class="banner"' not in client.get(f"/paper/{PAPER_004}/citation-record",
                                                      params={"as_of": "2026-08-09"}).text  # before the notice
    assert html.count("<meter ") == 4 and 'aria-labelledby="lane-1"' in html
    # A record with outbound references: one bar segment per state with references, widths summing to 600.
    page = next(p for p in dates if p not in (PAPER_004,) and client.get(f"/paper/{p}/citation-record.json",
                params={"as_of": dates[p][0]}).json()["reference_resolution"]["displayed"])
    record = client.get(f"/paper/{page}/citation-record.json", params={"as_of": dates[page][0]}).json()
    shown = client.get(f"/paper/{page}/citation-record", params={"as_of": dates[page][0]}).text
    counts = {k: v for k, v in record["reference_resolution"]["state_counts"].items() if v}
    widths = re.findall(r'<rect class="state-(\w+)" x="[0-9.]+" y="0" width="([0-9.]+)"', shown)
    assert [w[0] for w in widths] == [s for s in RESOLUTION_STATES if s in counts]
    assert abs(sum(float(w[1]) for w in widths) - 600) < 0.1
    assert "<title id=\"bar-title\">Resolution states of the displayed references: " in shown


def test_the_paper_page_draws_its_change_days_on_a_timeline(client):
    html = client.get(f"/paper/{PAPER_004}", params={"as_of": "2026-08-25"}).text
    days = re.findall(r'<li(?: class="no-record">|><a href="[^"]+">)As of the end of (\d{4}-\d\d-\d\d)', html)
    dots = re.findall(r'<circle cx="([0-9.]+)" cy="20" r="6"><title>(\d{4}-\d\d-\d\d)</title>', html)
    assert [d for _, d in dots] == days and len(days) > 2
    xs = [float(x) for x, _ in dots]  # newest first, so right to left, from 580 to 20
    assert xs == sorted(xs, reverse=True) and (xs[0], xs[-1]) == (580.0, 20.0)
    assert f"from {days[-1]} to {days[0]}; each is listed below." in html


# -- what the docs say /checkpoint looks like -------------------------------------------------------------
def test_every_checkpoint_the_docs_show_has_the_shape_serve_gives(client):
    """Each checkpoint written out in docs/*.md (inline, as `<origin>\\n<size>\\n<base64 root>\\n`) has the
    lines of a real /checkpoint body, and no passage about /checkpoint says it carries the index line."""
    body, signatures = ok(client.get("/checkpoint"), "text/plain").decode().split("\n\n")
    origin, size, root = body.split("\n")  # the split took the body's last newline
    assert (bool(origin), size.isdigit(), len(base64.b64decode(root, validate=True))) == (True, True, 32)
    assert signatures.endswith("\n") and all(line.startswith("— ") for line in signatures[:-1].split("\n"))
    shown, said = [], []
    for doc in sorted(Path(__file__).parents[2].joinpath("docs").glob("*.md")):
        text = doc.read_text()
        shown += [(doc.name, span.split("\\n")) for span in re.findall(r"`(<origin>\\n[^`]*)`", text)]
        said += [(doc.name, part) for part in re.split(r"\n\s*\n|\n(?=\|)", text)
                 if "`/checkpoint`" in part and "paper-index/v1" in part]
    assert len(shown) >= 2  # proofs.md and witnesses.md
    for name, lines in shown:  # the span's last "\n" leaves "" last: nothing after the root, no extension line
        assert (name, len(lines) - 1, lines[0], "size" in lines[1], "root" in lines[2], lines[-1]) == (
            name, len(body.split("\n")), "<origin>", True, True, "")
    assert said == []


@pytest.mark.parametrize("guess, meant", [
    (f"/paper/{PAPER_004}.json", f"/paper/{PAPER_004}/citation-record.json"),
    (f"/paper/{PAPER_004}/json", f"/paper/{PAPER_004}/citation-record.json"),
    (f"/paper/{PAPER_004}.html", f"/paper/{PAPER_004}"),
    ("/paper/hep-th/9901001.json", "/paper/hep-th/9901001/citation-record.json"),
])
@pytest.mark.slow
def test_a_guessed_path_of_a_paper_redirects_to_the_one_that_answers(client, guess, meant):
    response = client.get(guess + "?as_of=2026-08-09", follow_redirects=False)
    assert (response.status_code, response.headers["location"], response.content) == (308, meant + "?as_of=2026-08-09", b"")
    assert client.head(guess, follow_redirects=False).status_code == 308


def test_a_guessed_path_reaches_the_record_and_an_id_that_does_not_parse_stays_a_400(client):
    record = client.get(f"/paper/{PAPER_004}.json", params={"as_of": AS_OF_004})
    assert record.content == client.get(f"/paper/{PAPER_004}/citation-record.json", params={"as_of": AS_OF_004}).content
    assert record.history[0].status_code == 308 and record.status_code == 200
    said = " (expected e.g. 2407.20018 or hep-th/9901001)"
    for path, reason in (("/paper/2407.2001.json", "not an arXiv id: '2407.2001.json'" + said),
                         (f"/paper/{PAPER_004}.txt", f"not an arXiv id: '{PAPER_004}.txt'" + said),
                         (f"/paper/{PAPER_004}/history.json/json", f"not an arXiv id: '{PAPER_004}/history.json/json'" + said)):
        response = client.get(path, follow_redirects=False)
        assert (response.status_code, response.json()["error"], "location" in response.headers) == (400, reason, False)
