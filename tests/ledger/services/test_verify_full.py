"""`verify --full`: every stored row derived from the entries is re-derived and compared. Each kind of row is
edited by hand past the append-only guards (what someone with the database file can do), and the check must
name it, exit 1, in one line, where the chain check alone still says ok. Every backend."""

import json

import pytest
from sqlalchemy import text

from ledger.core.times import instant_key
from ledger.importing.importer import import_files
from ledger.model.events import PAPER_SNAPSHOT, Event
from ledger.storage.store import Store
from tests.conftest import PAPER_004, SEED_004, Cli

OUTSIDER = "2401.00001"


@pytest.fixture
def indexed(store):
    """Seed 004 imported, and its paper index kept at size 40 (as `checkpoint --paper-index` keeps it)."""
    import_files(store, [str(SEED_004)])
    store.keep_index(40)
    return store


def run(store, *args):
    return Cli.of(store)("verify", *args)


def edit(store, table: str, sql: str, params: dict | None = None) -> None:
    """One statement run past `table`'s append-only guards, as a hand edit would."""
    with store.engine.connect() as conn, conn.begin():
        if store.dialect == "sqlite":
            for (name,) in conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = :t"),
                                        {"t": table}).fetchall():
                conn.execute(text(f"DROP TRIGGER {name}"))
        else:
            conn.execute(text(f"ALTER TABLE {table} DISABLE TRIGGER USER"))
        conn.execute(text(sql), params or {})


def one(store, sql: str, params: dict | None = None):
    with store.engine.connect() as conn:
        return conn.execute(text(sql), params or {}).fetchone()


def flipped(data: bytes, at: int = -1) -> bytes:
    data = bytearray(data)
    data[at] ^= 0x01
    return bytes(data)


def failed(store, *expected: str, plain: bool = True) -> str:
    """verify --full exits 1 with one line naming `expected`; the chain check alone (`plain`) still passes."""
    store.close()
    assert run(store).exit_code == 0 or not plain
    result = run(store, "--full")
    assert (result.exit_code, result.stdout) == (1, ""), result.stderr
    line = result.stderr.strip()
    assert len(line.splitlines()) == 1 and "Traceback" not in line, result.stderr
    for part in expected:
        assert part in line, line
    return line


def test_a_ledger_as_appended_passes_and_says_what_it_covered(indexed):
    result = run(indexed, "--full")
    assert (result.exit_code, result.stderr) == (0, ""), result.stderr
    assert result.stdout.startswith("ok: 40 events, every entry hash and chain link re-computes, and every row "
                                    "derived from them: subject, paper and effective key of each event, 24 paper "
                                    "links, 3 Merkle nodes; ")
    assert "1 root re-hash, the latest (size 40, 13 papers) re-computed from the log; head 40 " in result.stdout
    data = json.loads(run(indexed, "--full", "--json").stdout)
    assert data == {"ok": True, "checked": "store", "account": data["account"]} and data["account"].startswith("ok: ")


def test_a_ledger_with_no_index_and_an_empty_one_pass(store):
    result = run(store, "--full")
    assert (result.exit_code, result.stderr) == (0, "") and result.stdout.startswith("ok: 0 events")
    import_files(store, [str(SEED_004)])
    result = run(store, "--full")
    assert result.exit_code == 0 and "no paper index kept yet" in result.stdout


def test_full_refuses_record_files(indexed):
    result = run(indexed, "--full", str(SEED_004))
    assert result.exit_code == 2 and result.stderr.strip().endswith("--full: checks the ledger itself, with no RECORD file")


def _seq(store, where: str) -> int:
    return one(store, f"SELECT min(seq) FROM events WHERE {where}")[0]


def test_an_events_paper_edited_is_named(indexed):
    seq = _seq(indexed, "paper IS NOT NULL")
    edit(indexed, "events", f"UPDATE events SET paper = '{OUTSIDER}' WHERE seq = {seq}")
    failed(indexed, f"seq {seq}: events.paper is '{OUTSIDER}', its entry derives '{PAPER_004}'")


def test_an_events_subject_edited_is_named(indexed):
    seq = _seq(indexed, "kind = 'resolution.recorded'")
    edit(indexed, "events", f"UPDATE events SET subject = 'someone-else' WHERE seq = {seq}")
    failed(indexed, f"seq {seq}: events.subject is 'someone-else', its entry derives ")


def test_an_events_effective_key_edited_is_named(indexed):
    seq = _seq(indexed, "kind = 'citation.observed'")
    edit(indexed, "events", f"UPDATE events SET effective_key = '2099-01-01T00:00:00.000000Z' WHERE seq = {seq}")
    failed(indexed, f"seq {seq}: events.effective_key is '2099-01-01T00:00:00.000000Z', its entry derives ")


def test_a_paper_link_dropped_is_named(indexed):
    seq, paper, observation = one(indexed, "SELECT seq, paper, observation FROM observation_papers ORDER BY seq DESC, "
                                           "paper LIMIT 1")
    edit(indexed, "observation_papers", "DELETE FROM observation_papers WHERE paper = :p AND observation = :o",
         {"p": paper, "o": observation})
    failed(indexed, f"observation_papers: no link of arXiv:'{paper}' to observation '{observation}'; the citation at "
                    f"seq {seq} makes it")


def test_a_paper_link_added_is_named(indexed):
    seq, observation = one(indexed, "SELECT seq, observation FROM observation_papers ORDER BY seq LIMIT 1")
    edit(indexed, "observation_papers", "INSERT INTO observation_papers (paper, observation, seq) VALUES (:p, :o, :s)",
         {"p": OUTSIDER, "o": observation, "s": seq})
    failed(indexed, f"observation_papers: a link of arXiv:'{OUTSIDER}' to observation '{observation}' at seq {seq} "
                    "that no citation at that seq makes")


@pytest.mark.parametrize("by", [1, -1])
def test_a_paper_links_seq_changed_is_named(indexed, by):
    seq, paper, observation = one(indexed, "SELECT seq, paper, observation FROM observation_papers ORDER BY seq DESC, "
                                           "paper LIMIT 1")
    edit(indexed, "observation_papers", "UPDATE observation_papers SET seq = :s WHERE paper = :p AND observation = :o",
         {"s": seq + by, "p": paper, "o": observation})
    if by > 0:
        failed(indexed, f"observation_papers: the link of arXiv:'{paper}' to observation '{observation}' is stored "
                        f"with seq {seq + 1}; the citation at seq {seq} made it first")
    else:
        failed(indexed, f"a link of arXiv:'{paper}' to observation '{observation}' at seq {seq - 1} that no citation")


def test_a_paper_link_cannot_be_changed_without_dropping_a_guard(indexed):
    """SQLite refused only DELETE on the links; an UPDATE of a link's seq went through unguarded."""
    from sqlalchemy.exc import DBAPIError

    with pytest.raises(DBAPIError, match="append-only"):
        with indexed.engine.connect() as conn, conn.begin():
            conn.execute(text("UPDATE observation_papers SET seq = seq + 1"))


def test_a_merkle_node_with_one_byte_flipped_is_named(indexed):
    digest = bytes(one(indexed, "SELECT hash FROM merkle_nodes WHERE level = 4 AND idx = 1")[0])
    edit(indexed, "merkle_nodes", "UPDATE merkle_nodes SET hash = :h WHERE level = 4 AND idx = 1", {"h": flipped(digest)})
    failed(indexed, "Merkle node (4, 1): its stored hash is not the one its leaves (seq 17..32) re-compute")


@pytest.mark.slow
def test_a_merkle_node_dropped_or_added_is_named(indexed):
    edit(indexed, "merkle_nodes", "DELETE FROM merkle_nodes WHERE level = 5 AND idx = 0")
    failed(indexed, "Merkle node (5, 0) is missing")
    edit(indexed, "merkle_nodes", "INSERT INTO merkle_nodes (level, idx, hash) VALUES (5, 0, :h), (4, 2, :h)",
         {"h": bytes(32)})
    failed(indexed, "Merkle node (5, 0): its stored hash is not the one")
    edit(indexed, "merkle_nodes", "DELETE FROM merkle_nodes WHERE level = 5 AND idx = 0")
    edit(indexed, "merkle_nodes", "INSERT INTO merkle_nodes (level, idx, hash) VALUES (5, 0, :h)",
         {"h": bytes(one(indexed, "SELECT hash FROM merkle_nodes WHERE level = 4 AND idx = 0")[0])})
    failed(indexed, "Merkle node (")


def test_a_merkle_node_past_the_log_is_named(indexed):
    edit(indexed, "merkle_nodes", "INSERT INTO merkle_nodes (level, idx, hash) VALUES (4, 2, :h)", {"h": bytes(32)})
    failed(indexed, "Merkle node (4, 2) is stored, yet no such node is in the tree of 40 leaves")


@pytest.mark.slow
@pytest.mark.parametrize("at", [4, 40, -1])
def test_an_index_node_with_one_byte_flipped_is_named(indexed, at):
    node_id, data = one(indexed, "SELECT id, node FROM index_nodes ORDER BY id DESC LIMIT 1")
    edit(indexed, "index_nodes", "UPDATE index_nodes SET node = :n WHERE id = :i", {"n": flipped(bytes(data), at),
                                                                                  "i": node_id})
    failed(indexed, "paper index: ")


@pytest.mark.slow
def test_an_index_root_edited_is_named(indexed):
    digest = bytes(one(indexed, "SELECT hash FROM index_roots WHERE size = 40")[0])
    edit(indexed, "index_roots", "UPDATE index_roots SET hash = :h WHERE size = 40", {"h": flipped(digest, 0)})
    failed(indexed, "paper index: the root at size 40 is not the hash of its node")


def test_an_index_kept_from_an_edited_row_is_named_by_its_paper(ledger_location):
    """The index is consistent with itself (every node re-hashes) but not with the log: kept while an event's
    paper column was edited, the column then put back. The paper whose leaf differs is named."""
    store = Store.create(ledger_location)
    import_files(store, [str(SEED_004)])
    seq = _seq(store, "kind = 'source.checked'")
    edit(store, "events", f"UPDATE events SET paper = '{OUTSIDER}' WHERE seq = {seq}")
    store.close()
    keeper = Store.open(ledger_location)
    keeper.keep_index(40)
    edit(keeper, "events", f"UPDATE events SET paper = '{PAPER_004}' WHERE seq = {seq}")
    failed(keeper, f"paper index at size 40: the leaf of arXiv:'{PAPER_004}' is not the one the log re-computes")
    keeper.close()


@pytest.mark.slow
def test_a_bad_paper_id_appended_before_ids_were_checked_is_named_by_its_seq(seeded):
    """A paper id the one parser refuses, appended as the import of old did: named with its seq."""
    with seeded.reading() as cursor:
        snapshot = cursor.entry(1)
    assert snapshot.kind == PAPER_SNAPSHOT
    payload = json.loads(snapshot.payload)
    payload["arxiv_id"] = "../../etc/passwd"
    raw = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
    event = Event(PAPER_SNAPSHOT, snapshot.effective_at, instant_key(snapshot.effective_at), raw, "../../etc/passwd",
                  "../../etc/passwd")
    with seeded.writing() as writer:  # past the importer: what a ledger made before the id check may hold
        writer.append([event])
    failed(seeded, "seq 41: arXiv:'../../etc/passwd' is not a paper id the ledger accepts today (1 such event); "
                   "`replay --out` and `publish` skip that paper", plain=False)
    plain = run(seeded)  # plain verify names it too, from the paper index alone
    assert (plain.exit_code, plain.stdout) == (1, ""), plain.stderr
    assert plain.stderr == ("ledger: seq 41: arXiv:'../../etc/passwd' is not a paper id the ledger accepts today "
                            "(1 such paper); `replay --out` and `publish` skip that paper\n")
    raw = raw.replace(b"../../etc/passwd", b"!x")  # sorts first, appended later: the first by seq is named
    with seeded.writing() as writer:
        writer.append([event._replace(payload=raw, subject="!x", paper="!x")])
    seeded.close()
    assert run(seeded).stderr.startswith("ledger: seq 41: arXiv:'../../etc/passwd' is not a paper id the ledger "
                                         "accepts today (2 such papers)")


@pytest.mark.parametrize("chunk", [8, 16, 17])
def test_links_and_nodes_compared_a_chunk_at_a_time_agree_with_one_chunk(indexed, monkeypatch, chunk):
    """The comparison runs a chunk of seqs at a time (65,536 in use): with small chunks, a ledger as appended
    still passes, and an edit in a middle chunk is named the same."""
    from ledger.services import verify_store

    monkeypatch.setattr(verify_store, "CHUNK", chunk)
    whole = run(indexed, "--full")
    assert whole.exit_code == 0 and "24 paper links, 3 Merkle nodes" in whole.stdout, whole.stderr
    seq, paper, observation = one(indexed, "SELECT seq, paper, observation FROM observation_papers WHERE seq > 20 "
                                           "ORDER BY seq LIMIT 1")
    edit(indexed, "observation_papers", "DELETE FROM observation_papers WHERE paper = :p AND observation = :o",
         {"p": paper, "o": observation})
    failed(indexed, f"no link of arXiv:'{paper}' to observation '{observation}'; the citation at seq {seq} makes it")
