"""The paper index against an oracle written here from the README's byte description alone ("Completeness:
the paper index, byte for byte"): the store's root at every size, kept as the ledger grows one append at a
time and in batches, and at sizes asked for in any order, on every backend; proofs of every paper at every
size; mutation vectors for the proof verifier; checkpoints with and without the index line."""

from __future__ import annotations

import base64
import hashlib
import random
import time

import orjson
import pytest

from benchmarks.generate import generate
from ledger.core.errors import InputError, IntegrityError
from ledger.log.export import export_line
from ledger.log.paper_index import IndexProof, Neighbour, index_of_log, parse_proof, verify_index_proof
from ledger.log.signed_notes import Checkpoint, generate_signer, parse_checkpoint, verify_checkpoint
from ledger.model.events import make_event
from ledger.storage.index_nodes import Node, child, decode, encode, make_leaf
from ledger.storage.index_reads import prove, root_at


# -- the oracle: README, "Completeness: the paper index, byte for byte" ----------------------------------
def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def mth(leaves: list[bytes]) -> bytes:
    """RFC 9162 2.1.1 over leaf hashes already computed."""
    if len(leaves) == 1:
        return leaves[0]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return sha256(b"\x01" + mth(leaves[:k]) + mth(leaves[k:]))


def oracle(lines: list[dict], n: int) -> dict[str, tuple[int, bytes]]:
    """paper -> (count, root) at size n, from exported log lines."""
    links, own, of_observation = {}, {}, {}
    for e in lines:
        if e["seq"] > n:
            break
        body = {k: e[k] for k in ("effective_at", "kind", "payload", "recorded_at", "seq")}
        leaf = sha256(b"\x00" + orjson.dumps(body, option=orjson.OPT_SORT_KEYS))
        kind, payload = e["kind"], e["payload"]
        if kind == "paper.snapshot":
            own.setdefault(payload["arxiv_id"], []).append((e["seq"], leaf))
        elif kind in ("source.checked", "measurements.checked"):
            own.setdefault(payload["paper"], []).append((e["seq"], leaf))
        else:
            of_observation.setdefault(payload["observation_id"], []).append((e["seq"], leaf))
            if kind == "citation.observed":
                citation = payload["citation"]
                named = [citation["citing_paper"]["arxiv_id"]]
                if citation.get("cited_paper") is not None:
                    named.append(citation["cited_paper"]["arxiv_id"])
                for paper in named:
                    links.setdefault(paper, set()).add(payload["observation_id"])
    result = {}
    for paper in set(own) | set(links):
        events = sorted(own.get(paper, []) + [x for o in links.get(paper, ()) for x in of_observation[o]])
        result[paper] = (len(events), mth([leaf for _, leaf in events]))
    return result


def oracle_root(papers: dict[str, tuple[int, bytes]]) -> bytes:
    leaves = {}
    for paper, (count, root) in papers.items():
        key = sha256(paper.encode())
        leaves[key] = sha256(b"\x02" + key + count.to_bytes(8, "big") + root)

    def bit(key: bytes, d: int) -> int:
        return key[d // 8] >> (7 - d % 8) & 1

    def h(keys: list[bytes], d: int) -> bytes:
        if not keys:
            return bytes(32)
        if len(keys) == 1:
            return leaves[keys[0]]
        return sha256(b"\x03" + h([k for k in keys if not bit(k, d)], d + 1) + h([k for k in keys if bit(k, d)], d + 1))

    return h(list(leaves), 0)


def exported(store) -> list[dict]:
    return [orjson.loads(export_line(e)) for e in store.entries()]


# -- ledgers ----------------------------------------------------------------------------------------------
def late_links(events):
    """Resolutions appended before their citations, and a citation corrected to name another paper: links
    that reach back to events appended earlier."""
    resolutions = [e for e in events if e.kind == "resolution.recorded"]
    rest = [e for e in events if e.kind != "resolution.recorded"]
    cited = next(e for e in rest if e.kind == "citation.observed")
    payload = orjson.loads(cited.payload)
    payload["citation"]["cited_paper"] = {"arxiv_id": "2999.55555", "snapshot_observed_at": "2026-09-01T00:00:00Z",
                                          "title": "A later reading", "version": 1}
    payload["citation"]["source_observed_at"] = "2026-09-02T00:00:00Z"
    lonely = make_event("resolution.recorded", {"observation_id": "never-cited", "resolution": {
        "observed_at": "2026-01-02T00:00:00Z", "resolver_source": None, "status": "unresolved"}})
    return resolutions[:25] + [lonely] + rest[:60] + resolutions[25:] + rest[60:] + [
        make_event("citation.observed", payload)]


def grow(store, events, sizes, keep: bool = True) -> list[int]:
    """Append `events` in transactions of `sizes`; with `keep`, the index is kept at each head as it is
    reached (as a server signing a checkpoint after every append would), so each catch-up adds one
    transaction's events to the index of the head before."""
    heads, i = [], 0
    for n in sizes:
        if i >= len(events):
            break
        with store.writing() as writer:
            writer.append(events[i:i + n])
        i += n
        heads.append(writer.seq)
        if keep:
            store.keep_index(writer.seq)
    return heads


def check_every_head(store, heads):
    lines = exported(store)
    for size in heads:
        store.keep_index(size)
    with store.reading() as cursor:
        for size in heads:
            papers = oracle(lines, size)
            expected = oracle_root(papers)
            assert root_at(cursor, size) == (root_at(cursor, size)[0], expected), f"index root at size {size}"
            for paper, (count, root) in papers.items():
                proof = prove(cursor, store.index_nodes, paper, size)
                verify_index_proof(proof, expected)
                assert (proof.count, proof.root) == (count, root), f"{paper} at size {size}"


def test_one_append_at_a_time_every_head_is_the_readme_index(store):
    events = late_links(generate(160, seed=21))
    heads = grow(store, events, [1] * len(events))
    assert len(heads) == len(events)
    check_every_head(store, heads)


def test_batches_every_head_is_the_readme_index(store):
    rng = random.Random(4)
    events = late_links(generate(700, seed=22))
    heads = grow(store, events, [rng.choice([2, 7, 40, 150]) for _ in events])
    check_every_head(store, heads)


def test_a_link_reaches_back_within_one_transaction_and_across_them(store):
    events = generate(60, seed=5)
    citation = next(e for e in events if e.kind == "citation.observed" and b"cited_paper\":{" in e.payload)
    observation = citation.subject
    resolution = make_event("resolution.recorded", {"observation_id": observation, "resolution": {
        "observed_at": "2025-12-31T00:00:00Z", "resolver_source": None, "status": "unresolved"}})
    citing = orjson.loads(citation.payload)["citation"]["citing_paper"]["arxiv_id"]  # an inbound citation's
    with store.writing() as writer:  # alone: its observation is linked to no paper yet
        writer.append([resolution])
    lines = exported(store)
    assert oracle(lines, 1) == {}
    store.keep_index(1)
    with store.reading() as cursor:
        assert root_at(cursor, 1)[1] == bytes(32)
    with store.writing() as writer:
        writer.append([e for e in events if e.subject != observation][:5] + [citation])
    check_every_head(store, [1, 7])
    with store.reading() as cursor:
        proof = prove(cursor, store.index_nodes, citing, 7)
    assert proof.count == 2  # the citation, and the resolution appended before it


def test_proofs_of_absent_papers_end_at_an_empty_subtree_or_a_neighbour(store):
    grow(store, generate(400, seed=8), [400])
    lines = exported(store)
    expected = oracle_root(oracle(lines, 400))
    kinds = set()
    with store.reading() as cursor:
        for n in range(300):
            proof = prove(cursor, store.index_nodes, f"9{n:03d}.00000", 400)
            verify_index_proof(proof, expected)
            assert proof.count == 0 and proof.root is None
            kinds.add(proof.neighbour is not None)
    assert kinds == {True, False}


def test_appends_leave_the_index_alone_and_it_is_kept_at_any_size_asked_for_in_any_order(store):
    events = late_links(generate(400, seed=23))
    heads = grow(store, events, [150, 250], keep=False)
    with store.reading() as cursor:
        assert cursor.execute("SELECT COUNT(*) FROM index_roots").fetchone()[0] == 0  # appends wrote none
        assert root_at(cursor, 0) == (None, bytes(32))
        assert root_at(cursor, 35) is None
        with pytest.raises(InputError, match="no paper index at that size"):
            prove(cursor, store.index_nodes, "2000.00001", 35)
    sizes = [35, 400, 1, 150, 36, 399, 200]  # the head, sizes within transactions, below and above kept ones
    check_every_head(store, sizes)
    assert heads == [150, 400]
    with store.reading() as cursor:
        kept = [r[0] for r in cursor.execute("SELECT size FROM index_roots ORDER BY size").fetchall()]
    assert kept == sorted(sizes)


@pytest.mark.parametrize("reader", ["the process that appended", "another process"])
def test_catching_up_a_chunk_at_a_time_is_the_same_index(ledger_location, reader):
    from ledger.storage.store import Store

    appender = Store.create(ledger_location)
    grow(appender, late_links(generate(300, seed=24)), [120, 180], keep=False)
    # The appender remembers its events for the next catch-up; another store reads them back from the log.
    keeper = appender if reader == "the process that appended" else Store.open(ledger_location)
    keeper.index_chunk = 7
    assert (keeper.remembered > 0) == (keeper is appender)
    try:
        check_every_head(keeper, [300, 100])
        with keeper.reading() as cursor:  # 7, 14, ..., 294 and 300 on the way to 300; 100 from 98
            assert cursor.execute("SELECT COUNT(*) FROM index_roots").fetchone()[0] == 43 + 1
        assert keeper.remembered == 0  # kept: nothing left to remember
    finally:
        appender.close()
        keeper.close()


def test_a_ledger_with_events_missing_cannot_be_caught_up(ledger_location):
    from ledger.core.errors import IntegrityError as Integrity
    from ledger.storage.store import Store
    from tests.ledger.log.test_merkle import _delete_behind_the_guard

    appender = Store.create(ledger_location)
    grow(appender, generate(40, seed=25), [40], keep=False)
    _delete_behind_the_guard(appender, "events", "seq = 17")
    appender.close()
    keeper = Store.open(ledger_location)  # reads the log back (the appender would use what it appended)
    try:
        with pytest.raises(Integrity, match="events missing among seq 1..40"):
            keeper.keep_index(40)
    finally:
        keeper.close()


def test_the_pure_recomputation_is_the_oracle():
    from ledger.log.chain import GENESIS, Entry, seal

    events = late_links(generate(300, seed=9))
    entries, chain = [], GENESIS
    for seq, ev in enumerate(events, start=1):
        _, digest, chain = seal(chain, seq, ev.kind, ev.effective_at, "2026-11-30T00:00:00.000000Z", ev.payload)
        entries.append(Entry(seq, ev.kind, ev.effective_at, "2026-11-30T00:00:00.000000Z", ev.payload, digest, chain))
    lines = [orjson.loads(export_line(e)) for e in entries]
    for size in (1, 37, 150, len(entries)):
        assert index_of_log(entries, size).root == oracle_root(oracle(lines, size))
    with pytest.raises(InputError, match=f"holds {len(entries)} events"):
        index_of_log(entries, len(entries) + 1)


# -- nodes ------------------------------------------------------------------------------------------------
def test_a_node_round_trips_and_a_damaged_one_is_refused():
    frontier = {1: b"\x11" * 32, 0: b"\x22" * 32}
    node = Node().changed({3: make_leaf(b"\x33" * 32, 3, frontier), 9: child(b"\x44" * 32, 77)})
    again = decode(encode(node))
    assert again.slots == node.slots and again.hash() == node.hash()
    for damaged in (encode(node)[:-1], encode(node) + b"\x00", b"\x00", b"\x00\x01\x00\x02"):
        with pytest.raises(IntegrityError, match="not one"):
            decode(damaged)


# -- proof mutation vectors -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def proven(tmp_path_factory):
    from ledger.storage.store import Store

    store = Store.create(str(tmp_path_factory.mktemp("index") / "ledger.db"))
    heads = grow(store, generate(500, seed=12), [250, 250])
    store.keep_index(500)
    with store.reading() as cursor:
        papers = sorted(oracle(exported(store), 500))
        member = prove(cursor, store.index_nodes, papers[0], 500)
        absent = next(p for p in (prove(cursor, store.index_nodes, f"8{n:03d}.0", 500) for n in range(100))
                      if p.neighbour is not None)
        older = prove(cursor, store.index_nodes, papers[0], 250)
    store.close()
    return heads, member, absent, older


def flip(data: bytes, bit: int = 0) -> bytes:
    return bytes([data[0] ^ (1 << bit)]) + data[1:]


def mutations(proof: IndexProof):
    first = next(i for i, s in enumerate(proof.siblings) if s is not None)
    siblings = list(proof.siblings)
    siblings[first] = flip(siblings[first])
    yield "a flipped bit in a sibling", IndexProof(**{**vars(proof), "siblings": tuple(siblings)})
    yield "a sibling dropped", IndexProof(**{**vars(proof), "siblings": proof.siblings[:-1]})
    yield "a sibling added", IndexProof(**{**vars(proof), "siblings": proof.siblings + (b"\x01" * 32,)})
    if None in proof.siblings:
        yield "an empty sibling made a hash", IndexProof(**{**vars(proof), "siblings": tuple(
            s or b"\x00" * 31 + b"\x01" for s in proof.siblings)})
    yield "another paper's id", IndexProof(**{**vars(proof), "paper": proof.paper + "0"})
    if proof.count:
        yield "a flipped bit in the count", IndexProof(**{**vars(proof), "count": proof.count ^ 1})
        yield "a flipped bit in the events root", IndexProof(**{**vars(proof), "root": flip(proof.root)})
        yield "the count said zero", IndexProof(**{**vars(proof), "count": 0, "root": None})
    if proof.neighbour is not None:
        other = proof.neighbour
        yield "a flipped bit in the neighbour's count", IndexProof(**{**vars(proof), "neighbour": Neighbour(
            other.key, other.count ^ 1, other.root)})
        yield "the neighbour's key made the paper's", IndexProof(**{**vars(proof), "neighbour": Neighbour(
            hashlib.sha256(proof.paper.encode()).digest(), other.count, other.root)})
        yield "the neighbour dropped", IndexProof(**{**vars(proof), "neighbour": None})


@pytest.mark.parametrize("which", ["membership", "non-membership"])
def test_every_mutation_of_a_proof_is_refused(proven, which):
    _, member, absent, _ = proven
    proof = member if which == "membership" else absent
    verify_index_proof(proof, proof.index_root)
    for name, mutated in mutations(proof):
        with pytest.raises(IntegrityError):
            verify_index_proof(mutated, proof.index_root)
            pytest.fail(f"accepted: {name}")


def test_a_proof_from_an_older_size_does_not_verify_against_todays_root(proven):
    _, member, _, older = proven
    assert older.tree_size == 250 and older.index_root != member.index_root
    verify_index_proof(older, older.index_root)
    with pytest.raises(IntegrityError, match="not the one the checkpoint signs"):
        verify_index_proof(older, member.index_root)


def test_the_json_form_round_trips_and_malformed_fields_are_named(proven):
    _, member, absent, _ = proven
    for proof in (member, absent):
        data = proof.to_json()
        assert parse_proof(orjson.loads(orjson.dumps(data))) == IndexProof(**{**vars(proof), "key": bytes.fromhex(data["key"])})
    data = member.to_json()
    for field, value, named in (("siblings", ["zz"], r"siblings\[0\]"), ("count", "3", "count"),
                                ("events_root", "ab" * 31, "events_root"), ("tree_size", -1, "tree_size"),
                                ("neighbour", 3, "neighbour"), ("paper", None, "paper")):
        with pytest.raises(InputError, match=f"field {named}"):
            parse_proof({**data, field: value})
    with pytest.raises(InputError, match="field index.key: missing"):
        parse_proof({k: v for k, v in data.items() if k != "key"}, "index")
    with pytest.raises(InputError, match="field index.extra: not a field of a paper index proof"):
        parse_proof({**data, "extra": 1}, "index")
    with pytest.raises(IntegrityError, match="has an events root"):  # well-formed, but does not verify
        verify_index_proof(parse_proof({**data, "events_root": None}), member.index_root)
    key = bytearray(bytes.fromhex(data["key"]))
    key[0] ^= 1
    with pytest.raises(IntegrityError, match="key is not SHA-256"):
        verify_index_proof(parse_proof({**data, "key": key.hex()}), member.index_root)


def test_the_index_root_of_1000_papers_is_the_oracles():
    leaves = {}
    for n in range(1000):
        key = sha256(f"5{n:04d}.00000".encode())
        leaves[key] = (1, sha256(key))
    from ledger.log.paper_index import index_root, leaf_hash

    root = index_root({k: leaf_hash(k, c, r) for k, (c, r) in leaves.items()})
    assert root == oracle_root({f"5{n:04d}.00000": (1, sha256(sha256(f"5{n:04d}.00000".encode()))) for n in range(1000)})


# -- checkpoints ------------------------------------------------------------------------------------------
def test_the_checkpoint_carries_the_index_line_and_old_ones_still_parse():
    signer = generate_signer("example.org/ledger")
    index = b"\x07" * 32
    body = Checkpoint(signer.name, 12, b"\x01" * 32, index).text()
    assert body.splitlines()[3] == f"paper-index/v1 {base64.b64encode(index).decode()}"
    signed = verify_checkpoint(signer.sign(body), signer.verifier)
    assert (signed.size, signed.index_root) == (12, index)
    old = verify_checkpoint(signer.sign(Checkpoint(signer.name, 12, b"\x01" * 32).text()), signer.verifier)
    assert old.index_root is None and old.extensions == ()
    other = parse_checkpoint(body + "timestamp 1700000000\n")
    assert other.index_root == index and other.extensions == ("timestamp 1700000000",)
    with pytest.raises(InputError, match="given twice"):
        parse_checkpoint(body + body.splitlines()[3] + "\n")
    with pytest.raises(InputError, match="not 32 bytes"):
        parse_checkpoint(body.replace(base64.b64encode(index).decode(), base64.b64encode(b"\x07" * 31).decode()))
    # A client that knows nothing of the index reads the first three lines and checks the same signature.
    assert signed.text() == body


# -- a ledger from before the index -----------------------------------------------------------------------
def test_upgrade_brings_a_version_1_ledger_to_an_index_at_every_size(ledger_location, backend):
    from ledger.importing.importer import import_files
    from ledger.storage.store import Store
    from tests.conftest import SEED_004

    store = Store.create(ledger_location)
    import_files(store, [str(SEED_004)])
    with store.writing() as writer:
        writer.append(late_links(generate(300, seed=31)))
    lines = exported(store)
    with store._connection("downgrade", store.backend.begin_write) as cursor:  # what version 1 had
        for table in ("index_nodes", "index_roots", "observation_papers"):
            cursor.execute(f"DROP TABLE {table}")
        cursor.execute("CREATE TABLE observation_papers (paper VARCHAR NOT NULL, observation VARCHAR NOT NULL, "
                       "PRIMARY KEY (paper, observation))")
        cursor.execute("UPDATE ledger_meta SET value = '1' WHERE key = 'schema_version'")
    store.close()
    with pytest.raises(InputError, match="schema version 1, this ledger reads version 3"):
        Store.open(ledger_location)
    size = len(lines)
    links = {(paper["arxiv_id"], line["payload"]["observation_id"]) for line in lines
             if line["kind"] == "citation.observed"
             for paper in (line["payload"]["citation"]["citing_paper"], line["payload"]["citation"]["cited_paper"])
             if paper is not None}
    links = len(links)
    assert f"upgraded to schema version 3; {links} paper links re-derived" in Store.upgrade(ledger_location)
    assert Store.upgrade(ledger_location).endswith("already at schema version 3")
    store = Store.open(ledger_location)
    try:
        with store.writing() as writer:
            writer.append(generate(320, seed=32)[300:])
        check_every_head(store, [size, size - 1, size + 20])  # sizes from before the upgrade too
        with store.reading() as cursor:  # the links got the seq of the citation that made them
            assert cursor.paper_facts("2407.20018", size=size) == store.paper_facts("2407.20018")
            assert cursor.execute("SELECT COUNT(*) FROM observation_papers WHERE seq IS NULL").fetchone()[0] == 0
    finally:
        store.close()


def test_a_checkpoint_binds_the_index_of_its_size_whatever_the_size(store):
    from ledger.services.proofs import checkpoint

    signer = generate_signer("example.org/ledger")
    grow(store, generate(60, seed=3), [20, 40], keep=False)
    lines = exported(store)
    for size in (20, 60, None, 30):  # 30 was never a head
        note, signed_size = checkpoint(store, signer, size, paper_index=True)
        assert signed_size == (size or 60)
        assert verify_checkpoint(note, signer.verifier).index_root == oracle_root(oracle(lines, signed_size))


def test_on_postgresql_a_catch_up_does_not_wait_for_an_append_in_progress(ledger_location, backend):
    from ledger.storage.store import Store

    if backend != "postgresql":
        pytest.skip("SQLite has one write lock: a catch-up waits for the append (README, 'How it is kept')")
    appender, checker = Store.create(ledger_location), Store.open(ledger_location)
    try:
        grow(appender, generate(120, seed=26), [100], keep=False)
        with appender.writing() as writer:  # holds the writers' lock until the block ends
            writer.append(generate(120, seed=26)[100:])
            started = time.monotonic()
            checker.keep_index(100)  # would wait out the lock timeout (and fail) behind the append
            assert time.monotonic() - started < 10
        check_every_head(checker, [100, 120])
    finally:
        appender.close()
        checker.close()


def test_a_catch_up_commits_without_waiting_for_the_disk_then_appends_wait_again(store, backend, monkeypatch):
    # The index is re-computed from the log should a power cut lose it: its commits skip the flush.
    from ledger.storage.cursor import Cursor

    grow(store, generate(30, seed=27), [30], keep=False)
    sent, execute = [], Cursor.execute
    monkeypatch.setattr(Cursor, "execute", lambda cursor, sql, params=(): sent.append(sql) or execute(cursor, sql, params))
    store.keep_index(30)
    monkeypatch.undo()
    if backend == "sqlite":
        assert sent[1] == "PRAGMA synchronous=OFF" and sent[-1] == "PRAGMA synchronous=FULL"
        with store.reading() as cursor:  # appends are durable again
            assert cursor.execute("PRAGMA synchronous").fetchone()[0] == 2
    else:
        assert "SET LOCAL synchronous_commit = off" in next(sql for sql in sent if sql.startswith("BEGIN"))
    check_every_head(store, [30])


def test_a_citation_whose_papers_cannot_be_read_is_named(ledger_location, backend):
    from sqlalchemy import text

    from ledger.storage.store import Store

    appender = Store.create(ledger_location)
    events = generate(40, seed=28)
    grow(appender, events, [40], keep=False)
    seq = next(n for n, e in enumerate(events, start=1) if e.kind == "citation.observed")
    with appender.engine.connect() as conn, conn.begin():  # a hand edit past the guard
        conn.execute(text("DROP TRIGGER events_append_only_update" if backend == "sqlite"
                          else "ALTER TABLE events DISABLE TRIGGER events_append_only"))
        conn.execute(text("UPDATE events SET payload = :p WHERE seq = :s"), {"p": b'{"observation_id":"x"}', "s": seq})
    appender.close()
    keeper = Store.open(ledger_location)  # reads the log back
    try:
        with pytest.raises(IntegrityError, match=f"event seq {seq}: a citation whose papers cannot be read"):
            keeper.keep_index(40)
    finally:
        keeper.close()
