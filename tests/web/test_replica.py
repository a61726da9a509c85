"""Serving from a PostgreSQL hot standby (README "A read replica"): every route answers 200 with the bytes the
primary gives, also where the paper index was never kept at the size asked (it is computed in memory, never
written); `replay`, `verify`, `prove` and `serve` run against the standby; `import` fails in one line, exit 3."""

from __future__ import annotations

import os
import uuid

import pytest
from fastapi.testclient import TestClient

from ledger.core.times import when
from ledger.importing.importer import import_files
from ledger.services import proofs
from ledger.storage.store import Store
from ledger.web.app import create_app
from ledger.web.publish import STATE, publish
from tests.conftest import PAPER_004, POSTGRES, SEED_004, Cli, _admin, postgres_schema_url
from tests.helpers import event_line
from tests.web.conftest import SCRIPT_PAPER, fill
from tests.web.test_routes import AS_OF, row_of

pytestmark = pytest.mark.skipif(not POSTGRES, reason="a hot standby needs PostgreSQL: set LEDGER_TEST_POSTGRES")


@pytest.fixture
def pair(standby, tmp_path):
    """(primary store, standby store, dates by paper) over one new schema, the standby caught up."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    _admin(f"CREATE SCHEMA {schema}")
    primary = Store.create(postgres_schema_url(schema))
    dates = fill(primary, tmp_path)
    standby.wait()
    replica = Store.open(standby.schema_url(schema))
    yield primary, replica, dates
    replica.close()
    primary.close()
    _admin(f"DROP SCHEMA {schema} CASCADE")


def _stored_roots(store: Store) -> list[int]:
    with store.reading() as cursor:
        return [row[0] for row in cursor.execute("SELECT size FROM index_roots ORDER BY size").fetchall()]


def _urls(store: Store, signer, out) -> list[str]:
    """The URL of every file `publish` writes (published from `store`), and live-only ones: diffs, known_at."""
    publish(store, out, when("as_of", AS_OF), signer)
    urls = []
    for folder, _, names in os.walk(out):
        for name in names:
            relative = os.path.relpath(os.path.join(folder, name), out)
            if relative.startswith(f"{STATE}/"):
                continue  # publish's own record of what it wrote, not a page
            route, form = row_of(relative)
            url = "/" + (relative.removesuffix("index.html").rstrip("/") if form == "html" else relative)
            urls.append(url + (f"?as_of={AS_OF}" if "as_of" in route.query else ""))
    for paper in (PAPER_004, SCRIPT_PAPER):
        urls += [f"/paper/{paper}/diff.json?from=2026-07-07&to={AS_OF}",
                 f"/paper/{paper}/integrity.json?as_of={AS_OF}&known_at=2030-01-01",
                 f"/paper/{paper}/citation-record.json?as_of={AS_OF}&known_at=2030-01-01"]
    return sorted(urls)


def _answers(store: Store | str, signer, urls: list[str]) -> dict[str, tuple[int, bytes]]:
    with TestClient(create_app(store, signer)) as client:
        return {url: (response.status_code, response.content) for url in urls for response in [client.get(url)]}


def test_every_route_answers_on_the_standby_with_the_primarys_bytes(pair, signer, tmp_path):
    primary, replica, _ = pair
    urls = _urls(replica, signer, tmp_path / "site")  # publish reads only: it runs on the standby too
    assert {url.split("/")[1].split("?")[0] for url in urls} >= {"", "assets", "checkpoint", "evidence", "paper", "tile"}
    on_standby = _answers(replica, signer, urls)
    assert _stored_roots(replica) == []  # computed in memory: the primary never kept the index
    assert replica.index_nodes.roots
    assert [url for url, (status, _) in on_standby.items() if status != 200] == []
    on_primary = _answers(primary, signer, urls)
    assert [url for url in urls if on_standby[url] != on_primary[url]] == []


def test_an_index_size_never_kept_on_the_primary_is_answered_on_the_standby(pair, signer, standby, tmp_path):
    primary, replica, _ = pair
    kept, _ = proofs.checkpoint(primary, signer, paper_index=True)  # the primary keeps the index at its head, then appends more
    more = tmp_path / "more.jsonl"
    more.write_bytes(b"".join(event_line("paper.snapshot", {"arxiv_id": f"2602.{n:05d}", "latest_version": 1,
                                                            "snapshot_observed_at": "2026-09-01T00:00:00Z",
                                                            "title": f"Paper {n}"}) for n in range(7)))
    import_files(primary, [str(more)])
    standby.wait()
    head, before = replica.head()[0], _stored_roots(replica)
    assert head == primary.head()[0] > before[-1]
    sizes = [head, head - 3, before[-1] + 1, 5, 1]  # past the kept size, and below it (from the empty index)
    asked = {size: (proofs.checkpoint(replica, signer, size, paper_index=True), proofs.prove_paper(replica, PAPER_004, size))
             for size in sizes}
    bundle = proofs.evidence_bundle(replica, PAPER_004, when("as_of", AS_OF), signer)
    urls = ["/checkpoint", f"/paper/{PAPER_004}/integrity.json?as_of={AS_OF}", f"/paper/{PAPER_004}/integrity?as_of={AS_OF}"]
    on_standby = _answers(replica, signer, urls)
    assert _stored_roots(replica) == before  # nothing written: every size was computed in memory
    assert sorted(set(replica.index_nodes.roots) & set(sizes)) == sorted(sizes)
    assert {size: (proofs.checkpoint(primary, signer, size, paper_index=True), proofs.prove_paper(primary, PAPER_004, size))
            for size in sizes} == asked
    assert proofs.evidence_bundle(primary, PAPER_004, when("as_of", AS_OF), signer) == bundle
    assert _answers(primary, signer, urls) == on_standby
    assert all(status == 200 for status, _ in on_standby.values())


def test_replay_verify_prove_and_serve_run_against_the_standby(pair, signer):
    primary, replica, _ = pair
    cli, head = Cli(replica.url), replica.head()[0]
    for args in (["replay", "--paper", PAPER_004, "--as-of", AS_OF], ["replay", "--as-of", AS_OF],
                 ["verify"], ["prove", "3"], ["prove", "--consistency", "2"], ["prove", "--paper", PAPER_004],
                 ["prove", "--paper", PAPER_004, "--tree-size", str(head - 1), "--json"]):
        done = cli(*args)
        assert (done.exit_code, done.stderr) == (0, ""), (args, done.stderr)
        assert done.stdout == Cli(primary.url)(*args).stdout, args
    # `ledger serve --db <standby URL>`: the app opens the ledger its URL names, in the store's thread.
    urls = ["/checkpoint", f"/paper/{PAPER_004}/integrity.json?as_of={AS_OF}"]
    on_standby = _answers(replica.url, signer, urls)
    assert on_standby == _answers(primary, signer, urls) and {status for status, _ in on_standby.values()} == {200}


def test_an_import_into_the_standby_fails_in_one_line_with_exit_3(pair):
    primary, replica, _ = pair
    head = replica.head()
    done = Cli(replica.url)("import", str(SEED_004))
    assert done.exit_code == 3
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
    assert "cannot append" in done.stderr and replica.shown in done.stderr
    assert replica.head() == head == primary.head()
