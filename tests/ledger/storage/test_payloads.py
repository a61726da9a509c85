"""Payloads kept packed (schema version 3): the bytes read back are the canonical bytes appended, on every
backend; a version 2 ledger is upgraded in place, every hash, export line and rebuilt record as before."""

import zlib

import orjson
import pytest
from blake3 import blake3
from sqlalchemy import text

from benchmarks.generate import generate
from ledger.core.errors import InputError, StoreError
from ledger.core.limits import RECORD
from ledger.importing.importer import import_files
from ledger.log.chain import entry_bytes, verify_entries
from ledger.log.export import export_line
from ledger.log.merkle import leaf_hash
from ledger.model.events import record_events
from ledger.storage.backends import database_url, shown_location
from ledger.storage.payloads import DICTIONARY, PACKED, pack, unpack
from ledger.storage.store import Store
from tests.conftest import PAPER_004, SEED_004, run_ledger
from tests.ledger.storage.test_store import raw


def seed_payloads() -> list[bytes]:
    return [e.payload for e in record_events(orjson.loads(SEED_004.read_bytes()))]


def test_the_dictionary_never_changes():
    # Every packed payload of every ledger is read with it: a new one needs a new first byte, not an edit.
    assert blake3(DICTIONARY).hexdigest() == "8084fe4638363671b78394c7fa81c33ed06cd467703a0a9e98f83260f24c4ea9"
    assert len(DICTIONARY) == 2054


def test_every_payload_unpacks_to_its_canonical_bytes_and_realistic_ones_pack_smaller():
    payloads = seed_payloads() + [e.payload for e in generate(400, seed=5)]
    for payload in payloads:
        assert unpack(pack(payload)) == payload
    seed = seed_payloads()
    assert all(pack(p)[:1] == PACKED for p in seed)
    assert sum(map(len, map(pack, seed))) < 0.5 * sum(map(len, seed))


def test_a_payload_packing_would_not_shorten_is_kept_as_it_is():
    assert pack(b"{}") == b"{}"
    assert pack(b'{"a":1}') == b'{"a":1}'


@pytest.mark.parametrize("stored", [b"", b"{}", b"\x00", b"\x00not deflate", pack(seed_payloads()[3])[:-2],
                                    pack(seed_payloads()[3]) + b"more"])
def test_a_stored_value_that_is_no_whole_packed_payload_is_given_back_as_stored(stored):
    assert unpack(stored) == stored


def make_version_2(store: Store) -> int:
    """Rewrite a new ledger's rows as version 2 kept them: every payload its canonical bytes."""
    rows = raw(store, "SELECT seq, payload FROM events ORDER BY seq").fetchall()
    lift, restore = store.backend.rewrite_guard
    with store.engine.connect() as conn, conn.begin():
        conn.exec_driver_sql(lift)
        for seq, stored in rows:
            conn.execute(text("UPDATE events SET payload = :p WHERE seq = :s"), {"p": unpack(bytes(stored)), "s": seq})
        conn.exec_driver_sql(restore)
        conn.execute(text("UPDATE ledger_meta SET value = '2' WHERE key = 'schema_version'"))
    return sum(bytes(stored)[:1] == PACKED for _, stored in rows)


def test_upgrade_packs_a_version_2_ledgers_payloads_in_place(ledger_location, backend):
    store = Store.create(ledger_location)
    import_files(store, [str(SEED_004)])
    with store.writing() as writer:
        writer.append(generate(100, seed=31))
    lines = [export_line(e) for e in store.entries()]
    facts = store.paper_facts(PAPER_004)
    packed = make_version_2(store)
    assert all(bytes(p)[:1] == b"{" for (p,) in raw(store, "SELECT payload FROM events").fetchall())
    store.close()
    with pytest.raises(InputError, match=r"schema version 2, this ledger reads version 3; bring it to this version "
                                         r"with `ledger upgrade`"):
        Store.open(ledger_location)
    assert f"upgraded to schema version 3; {packed} payloads stored packed" in Store.upgrade(ledger_location)
    assert Store.upgrade(ledger_location).endswith("already at schema version 3")
    store = Store.open(ledger_location)
    try:
        stored = [bytes(p) for (p,) in raw(store, "SELECT payload FROM events ORDER BY seq").fetchall()]
        assert sum(p[:1] == PACKED for p in stored) == packed > 0
        assert [export_line(e) for e in store.entries()] == lines  # every hash and export line as before
        assert store.paper_facts(PAPER_004) == facts
        assert verify_entries(store.entries())[0] == len(lines)
        with pytest.raises(Exception, match="append-only"):  # the guard is back
            raw(store, "UPDATE events SET payload = :p WHERE seq = 1", p=b"{}")
        with store.writing() as writer:  # and the chain goes on
            writer.append(generate(120, seed=31)[100:])
        assert verify_entries(store.entries())[0] == len(lines) + 20
    finally:
        store.close()


def test_an_upgrade_that_fails_keeps_the_version_2_ledger_as_it_was(ledger_location, backend):
    # A version 2 ledger whose events lost their UPDATE guard (by hand): the upgrade cannot lift it and stops,
    # its one transaction rolled back, every row as it was.
    store = Store.create(ledger_location)
    import_files(store, [str(SEED_004)])
    make_version_2(store)
    raw(store, "DROP TRIGGER events_append_only_update" if backend == "sqlite" else
        "DROP TRIGGER events_append_only ON events")
    before = raw(store, "SELECT seq, payload FROM events ORDER BY seq").fetchall()
    with pytest.raises(StoreError, match="cannot upgrade"):
        Store.upgrade(ledger_location)
    assert raw(store, "SELECT seq, payload FROM events ORDER BY seq").fetchall() == before
    assert raw(store, "SELECT value FROM ledger_meta WHERE key = 'schema_version'").scalar_one() == "2"
    store.close()


@pytest.mark.slow  # 64 MiB deflated and inflated
def test_a_packed_value_that_would_inflate_past_the_record_limit_is_given_back_as_stored():
    deflate = zlib.compressobj(9, zlib.DEFLATED, -12, 8, zlib.Z_DEFAULT_STRATEGY, DICTIONARY)
    bomb = PACKED + deflate.compress(b'{"a":"' + b"x" * RECORD.size + b'"}') + deflate.flush()
    assert len(bomb) < RECORD.size // 100
    assert unpack(bomb) == bomb


@pytest.mark.slow  # three commands in processes of their own
def test_the_commands_name_a_version_2_ledger_and_upgrade_brings_it_to_version_3(ledger_location, backend):
    store = Store.create(ledger_location)
    import_files(store, [str(SEED_004)])
    packed = make_version_2(store)
    store.close()
    refused = run_ledger("--db", ledger_location, "verify")
    assert refused.returncode == 2 and refused.stdout == b""
    assert refused.stderr.decode().splitlines() == [
        f"ledger: {shown_location(database_url(ledger_location))}: ledger schema version 2, this ledger reads version 3; "
        "bring it to this version with `ledger upgrade`"]
    upgraded = run_ledger("--db", ledger_location, "upgrade")
    assert upgraded.returncode == 0 and upgraded.stderr == b""
    assert f"upgraded to schema version 3; {packed} payloads stored packed".encode() in upgraded.stdout
    verified = run_ledger("--db", ledger_location, "verify")
    assert verified.returncode == 0 and verified.stdout.startswith(b"ok: 40 events")


def test_every_read_of_a_packed_store_gives_the_canonical_payloads(seeded):
    # Each read method that returns a payload, on a store whose payloads are all packed: a new one belongs here.
    canonical = {(e.kind, e.subject, e.effective_key): e.payload for e in record_events(orjson.loads(SEED_004.read_bytes()))}
    stored = [bytes(p) for (p,) in raw(seeded, "SELECT payload FROM events ORDER BY seq").fetchall()]
    assert all(p[:1] == PACKED for p in stored)
    entries = list(seeded.entries())
    by_seq = {f.seq: canonical[(f.kind, f.subject, f.effective_key)] for f in seeded.paper_facts(PAPER_004)}
    assert [e.payload for e in entries] == [by_seq[e.seq] for e in entries]
    assert len(by_seq) == len(entries) == len(canonical)
    observation = next(e.subject for e in record_events(orjson.loads(SEED_004.read_bytes())) if e.paper is None)
    assert all(f.payload == canonical[(f.kind, f.subject, f.effective_key)] for f in seeded.observation_facts(observation))
    with seeded.reading() as cursor:
        assert cursor.entry(7).payload == by_seq[7]
        rows = cursor.event_rows_after(0, 100)
        assert [r[4] for r in rows] == [by_seq[r[0]] for r in rows]
        snapshot, _, _ = cursor.paper_summary(PAPER_004, "9999")
        assert snapshot == canonical[next(k for k in canonical if k[0] == "paper.snapshot")]
        found = cursor.stored_facts(record_events(orjson.loads(SEED_004.read_bytes())))
        assert {key: payload for key, (_, payload) in found.items()} == canonical
        assert cursor.citation_papers([observation])[observation]  # read from the packed citation
        leaves = cursor.tree_nodes([(0, i) for i in range(16)])
    assert all(leaves[(0, i)] == leaf_hash(entry_bytes(*entries[i][:5])) for i in range(16))
