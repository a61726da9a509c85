"""The storage contract: every backend passes every test here (SQLite always, PostgreSQL when configured)."""

import re

import pytest
from sqlalchemy import text

from ledger.core.errors import InputError, IntegrityError, StoreError
from ledger.importing.importer import import_files
from ledger.log.chain import GENESIS, entry_bytes, verify_entries
from ledger.log.merkle import root
from ledger.model.events import make_event
from ledger.storage.payloads import PACKED, pack, unpack
from ledger.storage.store import Store
from ledger.storage.writer import DuplicateFactError
from tests.conftest import PAPER_004, SEED_004
from tests.ledger.log.test_merkle import rfc_mth


def snapshot(arxiv_id: str, when: str, title: str = "T") -> object:
    return make_event("paper.snapshot", {"arxiv_id": arxiv_id, "snapshot_observed_at": when, "title": title})


def test_an_empty_ledger_has_the_genesis_head(store):
    assert store.head() == (0, GENESIS, None)
    assert list(store.entries()) == []


def test_appends_continue_one_chain(store):
    with store.writing() as w:
        first = w.append([snapshot("2401.00001", "2026-01-01T00:00:00Z")])
    with store.writing() as w:
        second = w.append([snapshot("2401.00002", "2026-01-02T00:00:00Z"), snapshot("2401.00003", "2026-01-03T00:00:00Z")])
    assert [e.seq for e in first + second] == [1, 2, 3]
    entries = list(store.entries(batch=2))
    assert entries == first + second
    assert verify_entries(entries) == (3, second[-1].chain_hash)
    assert store.head()[:2] == (3, second[-1].chain_hash)


def test_every_byte_comes_back_as_appended(store):
    # Tabs, newlines, backslashes, quotes, NUL (escaped by the canonical encoder), non-BMP characters and a
    # COPY null marker in payloads; a timestamp kept as written. PostgreSQL receives them by binary COPY.
    odd = "tab\there\nnewline \\ back\\slash \"quote\" nul\x00 \u00e9 \U0001F600 \\N"
    events = [snapshot(f"2401.0000{n}", "2026-01-01T00:00:00+02:00", title=odd * n) for n in range(1, 4)]
    with store.writing() as w:
        appended = w.append(events)
    assert list(store.entries()) == appended
    assert [f.payload for f in store.paper_facts("2401.00002")] == [events[1].payload]
    assert b"\\u0000" in events[1].payload and "\U0001F600".encode() in events[1].payload


def test_a_failed_transaction_appends_nothing(store):
    with pytest.raises(RuntimeError):
        with store.writing() as w:
            w.append([snapshot("2401.00001", "2026-01-01T00:00:00Z")])
            raise RuntimeError("refused half-way")
    assert store.head()[0] == 0


def test_recorded_time_never_goes_backwards(store):
    with store.writing() as w:
        w.recorded_at = "2099-01-01T00:00:00.000000Z"  # a writer whose clock ran ahead
        w.append([snapshot("2401.00001", "2026-01-01T00:00:00Z")])
    with store.writing() as w:
        assert w.recorded_at == "2099-01-01T00:00:00.000000Z"


def raw(store, sql: str, **params):
    with store.engine.connect() as conn, conn.begin():
        return conn.execute(text(sql), params)


@pytest.mark.parametrize("sql", [
    "UPDATE events SET payload = :b WHERE seq = 1",
    "DELETE FROM events WHERE seq = 1",
    "DELETE FROM events",
])
def test_the_database_refuses_rewrites(seeded, sql):
    with pytest.raises(Exception, match="append-only"):
        raw(seeded, sql, b=b"{}")
    assert seeded.head()[0] == 40


def test_the_database_refuses_truncate_on_postgresql(seeded):
    if seeded.dialect != "postgresql":
        pytest.skip("TRUNCATE is PostgreSQL's; SQLite has none")
    with pytest.raises(Exception, match="append-only"):
        raw(seeded, "TRUNCATE events")


@pytest.mark.parametrize("seqs", [[42], [0], [-1], [41, 43], [42, 43], [43, 42]])
def test_the_database_refuses_a_gap_in_the_sequence(seeded, seqs):
    # The head is 40: any insert that would not leave the log exactly 1..n is refused, in one statement
    # or row by row (PostgreSQL checks per statement, SQLite per row).
    values = ", ".join(f"(:seq{i}, 'paper.snapshot', :subject{i}, 'x', 'e', 'e', 'r', :b, :b, :b)"
                       for i in range(len(seqs)))
    params = {f"seq{i}": seq for i, seq in enumerate(seqs)} | {f"subject{i}": f"x{seq}" for i, seq in enumerate(seqs)}
    with pytest.raises(Exception, match="in sequence"):
        raw(seeded, "INSERT INTO events (seq, kind, subject, paper, effective_at, effective_key, recorded_at, "
                    f"payload, entry_hash, chain_hash) VALUES {values}", b=b"{}", **params)
    assert seeded.head()[0] == 40


@pytest.mark.parametrize("seq", [40, 1, None])
def test_the_database_refuses_a_taken_or_missing_seq(seeded, seq):
    # The guard and the primary key together: a seq already taken, or none at all, never enters the log.
    before = seeded.head()
    with pytest.raises(Exception):  # noqa: B017 (each driver raises its own error)
        raw(seeded, "INSERT INTO events (seq, kind, subject, paper, effective_at, effective_key, recorded_at, "
                    "payload, entry_hash, chain_hash) VALUES (:seq, 'paper.snapshot', 'x', 'x', 'e', 'e', 'r', :b, :b, :b)",
            seq=seq, b=b"{}")
    assert seeded.head() == before


OLD_GAP_GUARD = """CREATE TRIGGER events_gap_free BEFORE INSERT ON events
           WHEN NEW.seq IS NOT (SELECT COALESCE(MAX(seq), 0) + 1 FROM events)
           BEGIN SELECT RAISE(ABORT, 'events must be appended in sequence'); END"""


def test_upgrade_renews_a_guard_stored_in_an_older_form(ledger_location, backend):
    # A ledger made before the gap-free guard probed the row before (SQLite): `ledger upgrade` re-creates it,
    # once, and it refuses a gap as before. PostgreSQL's guards have one form: nothing to renew.
    store = Store.create(ledger_location)
    import_files(store, [str(SEED_004)])
    if backend == "sqlite":
        raw(store, "DROP TRIGGER events_gap_free")
        raw(store, OLD_GAP_GUARD)
    store.close()
    renewed = "; guards renewed: events_gap_free" if backend == "sqlite" else ""
    assert Store.upgrade(ledger_location).endswith(f"already at schema version 3{renewed}")
    assert Store.upgrade(ledger_location).endswith("already at schema version 3")
    store = Store.open(ledger_location)
    try:
        if backend == "sqlite":
            stored = raw(store, "SELECT sql FROM sqlite_master WHERE name = 'events_gap_free'").scalar()
            assert stored == next(ddl for ddl in store.backend.guards if "events_gap_free" in ddl)
        with pytest.raises(Exception, match="in sequence"):
            raw(store, "INSERT INTO events (seq, kind, subject, paper, effective_at, effective_key, recorded_at, "
                       "payload, entry_hash, chain_hash) VALUES (42, 'paper.snapshot', 'x', 'x', 'e', 'e', 'r', :b, :b, :b)",
                b=b"{}")
        assert store.head()[0] == 40
    finally:
        store.close()


def test_the_guard_lets_the_next_events_in(seeded):
    values = ", ".join(f"({seq}, 'paper.snapshot', 'x{seq}', 'x', 'e', 'e', 'r', :b, :b, :b)" for seq in (41, 42))
    raw(seeded, "INSERT INTO events (seq, kind, subject, paper, effective_at, effective_key, recorded_at, payload, "
                f"entry_hash, chain_hash) VALUES {values}", b=b"{}")
    assert seeded.head()[0] == 42


def test_one_fact_per_kind_subject_and_effective_time(seeded):
    # The database refuses a second fact under one key (the importer relies on it instead of a look-up).
    with pytest.raises(DuplicateFactError):
        with seeded.writing() as w:
            w.append([snapshot(PAPER_004, "2026-07-06T18:53:22.585501Z", title="another title")])
    assert seeded.head()[0] == 40


def next_append_continues_chain_and_tree(store, new) -> None:
    """Append `new` to a store whose last transaction was not kept: seqs follow the head, the chain and the
    Merkle tree re-compute over every entry."""
    head = store.head()[0]
    with store.writing() as w:
        appended = w.append(new)
    size = head + len(new)
    assert [e.seq for e in appended] == list(range(head + 1, size + 1))
    assert verify_entries(store.entries()) == (size, appended[-1].chain_hash)
    leaves = [entry_bytes(e.seq, e.kind, e.effective_at, e.recorded_at, e.payload) for e in store.entries()]
    with store.reading() as cursor:
        assert root(cursor.node_source(size), size) == rfc_mth(leaves)


def test_a_refused_append_rolls_back_and_the_next_continues_chain_and_tree(seeded):
    # A stored fact in the middle of a batch: the transaction is refused whole (the rows before it too), and
    # the next one continues the chain and the Merkle tree from the head, not from the refused batch's edge.
    new = [snapshot(f"2501.{n:05d}", "2026-01-01T00:00:00Z") for n in range(20)]
    stored = snapshot(PAPER_004, "2026-07-06T18:53:22.585501Z", title="another title")
    with pytest.raises(DuplicateFactError):
        with seeded.writing() as w:
            w.append(new[:10] + [stored] + new[10:])
    assert seeded.head()[0] == 40
    next_append_continues_chain_and_tree(seeded, new)


def test_an_abandoned_transaction_keeps_nothing_and_the_next_continues_chain_and_tree(seeded):
    # What an import's attempt does when it gives up: no error, nothing kept, the edge not handed on.
    new = [snapshot(f"2502.{n:05d}", "2026-01-01T00:00:00Z") for n in range(5)]
    with seeded.writing() as w:
        w.append(new)
        w.abandon()
    assert seeded.head()[0] == 40 and len(list(seeded.entries())) == 40
    next_append_continues_chain_and_tree(seeded, new)


def test_a_row_changed_behind_the_guard_is_caught_by_verify(seeded):
    # Someone with database access disables the guard and changes one byte of one payload.
    if seeded.dialect == "sqlite":
        raw(seeded, "DROP TRIGGER events_append_only_update")
    else:
        raw(seeded, "ALTER TABLE events DISABLE TRIGGER events_append_only")
    payload = unpack(bytes(raw(seeded, "SELECT payload FROM events WHERE seq = 17").scalar_one()))
    changed = payload.replace(b"2026", b"2027", 1)
    assert changed != payload
    raw(seeded, "UPDATE events SET payload = :p WHERE seq = 17", p=pack(changed))
    with pytest.raises(IntegrityError, match=r"seq 17: entry hash does not re-compute.*seq 17\.\.40"):
        verify_entries(seeded.entries())


@pytest.mark.parametrize("cut", ["a byte flipped", "cut short", "bytes added"])
def test_a_packed_payload_changed_behind_the_guard_is_caught_by_verify(seeded, cut):
    # The deflated bytes themselves edited: they unpack to other bytes, or to nothing (then read as stored).
    if seeded.dialect == "sqlite":
        raw(seeded, "DROP TRIGGER events_append_only_update")
    else:
        raw(seeded, "ALTER TABLE events DISABLE TRIGGER events_append_only")
    stored = bytes(raw(seeded, "SELECT payload FROM events WHERE seq = 17").scalar_one())
    assert stored[:1] == PACKED and len(stored) < len(unpack(stored))
    changed = {"a byte flipped": stored[:20] + bytes([stored[20] ^ 0x10]) + stored[21:], "cut short": stored[:-3],
               "bytes added": stored + b"\x00"}[cut]
    raw(seeded, "UPDATE events SET payload = :p WHERE seq = 17", p=changed)
    with pytest.raises(IntegrityError, match=r"seq 17: entry hash does not re-compute.*seq 17\.\.40"):
        verify_entries(seeded.entries())


def test_paper_facts_reads_one_paper_in_one_statement(seeded):
    with seeded.writing() as w:
        w.append([snapshot("2501.99999", "2026-01-01T00:00:00Z")])
    seeded.statements = 0
    facts = seeded.paper_facts(PAPER_004)
    assert seeded.statements <= 2  # the SELECT (+ BEGIN where the driver sends one)
    assert len(facts) == 40
    assert all(b"2501.99999" not in f.payload for f in facts)
    assert [f.seq for f in facts] == sorted(f.seq for f in facts)


def test_known_at_is_a_prefix_of_the_log(seeded):
    recorded = seeded.head()[2]
    with seeded.writing() as w:
        w.recorded_at = "2099-01-01T00:00:00.000000Z"
        w.append([snapshot(PAPER_004, "2026-08-01T00:00:00Z", title="later")])
    assert len(seeded.paper_facts(PAPER_004)) == 41
    assert len(seeded.paper_facts(PAPER_004, known_at=recorded)) == 40


def test_papers_lists_those_with_a_snapshot_by_then(seeded):
    assert list(seeded.papers("2026-07-06T18:53:22.585501Z")) == [PAPER_004]
    assert list(seeded.papers("2026-07-06T18:53:22.585500Z")) == []


def test_papers_pages_through_many_ids_in_order(store):
    ids = [f"2601.{n:05d}" for n in range(7)]
    with store.writing() as w:
        w.append([snapshot(i, "2026-01-01T00:00:00Z") for i in reversed(ids)])
    assert list(store.papers("2026-02-01T00:00:00.000000Z", batch=3)) == ids


def test_open_never_creates_a_ledger(tmp_path):
    missing = tmp_path / "typo.db"
    with pytest.raises(InputError, match="no ledger here"):
        Store.open(str(missing))
    assert not missing.exists()


def test_create_refuses_an_existing_ledger(store):
    with pytest.raises(InputError, match="already"):
        Store.create(store.url.replace("sqlite:///", ""))


def test_a_ledger_of_another_schema_version_is_refused(seeded):
    raw(seeded, "UPDATE ledger_meta SET value = '999' WHERE key = 'schema_version'")
    with pytest.raises(InputError, match="schema version 999"):
        Store.open(seeded.url)


def test_a_file_that_is_not_a_ledger_is_refused(tmp_path):
    path = tmp_path / "notes.db"
    path.write_bytes(b"these are my notes, not a database" * 100)
    with pytest.raises(InputError, match="not a ledger"):
        Store.open(str(path))


def test_an_unreachable_store_is_a_store_error():
    with pytest.raises(StoreError):
        Store.open("postgresql+psycopg://nobody@127.0.0.1:1/none?connect_timeout=2")


def test_import_twice_appends_nothing(store):
    first = import_files(store, [str(SEED_004)])
    second = import_files(store, [str(SEED_004)])
    assert (first.appended, second.appended, second.present) == (40, 0, 40)
    assert second.head == first.head


def test_a_citation_appended_alone_is_read_with_both_papers(store):
    # Links to both papers without a Merkle node completing in the same append, then with one completing.
    def citation(n: int):
        paper = {"arxiv_id": f"2601.{n:05d}", "snapshot_observed_at": "2026-01-01T00:00:00Z", "title": "T", "version": 1}
        cited = {**paper, "arxiv_id": "2601.99999"}
        return make_event("citation.observed", {"observation_id": f"obs-{n}", "citation": {
            "cited_paper": cited, "cited_work": {"title": None}, "citing_paper": paper, "reference_index": 1,
            "source": "pdf_text", "source_observed_at": "2026-01-02T00:00:00Z"}})

    for n in range(1, 17):  # the 16th completes a stored subtree
        with store.writing() as w:
            w.append([citation(n)])
        assert [f.subject for f in store.paper_facts(f"2601.{n:05d}")] == [f"obs-{n}"]
        assert len(store.paper_facts("2601.99999")) == n
    with store.reading() as cursor:  # the papers a record's cards name: each citing one, for the cited paper
        assert cursor.linked_papers("2601.99999") == {f"2601.{n:05d}" for n in range(1, 17)}
        assert cursor.linked_papers("2601.00003") == {"2601.99999"}
        assert cursor.linked_papers("2601.55555") == set()


def test_appends_refuse_a_database_that_lost_its_unique_fact_key(seeded):
    # Appends look nothing up first; the unique key is what refuses a repeated fact, so a writer checks it.
    if seeded.dialect == "sqlite":  # SQLite cannot drop a table constraint: the table is rebuilt without it
        ddl = raw(seeded, "SELECT sql FROM sqlite_master WHERE name = 'events'").scalar_one()
        loose = re.sub(r",\s*CONSTRAINT events_one_fact UNIQUE \([^)]*\)", "", ddl)
        assert loose != ddl
        for sql in (loose.replace("CREATE TABLE events", "CREATE TABLE events_loose"),
                    "INSERT INTO events_loose SELECT * FROM events", "DROP TABLE events",
                    "ALTER TABLE events_loose RENAME TO events"):
            raw(seeded, sql)
    else:
        raw(seeded, "ALTER TABLE events DROP CONSTRAINT events_one_fact")
    writer = Store.open(seeded.url)  # another process
    with pytest.raises(StoreError, match="lost its unique fact key"):
        with writer.writing() as w:
            w.append([snapshot(PAPER_004, "2026-07-06T18:53:22.585501Z", title="another title")])
    assert writer.head()[0] == 40
    writer.close()


def test_a_writer_accepts_the_unique_fact_key_under_another_name(seeded):
    if seeded.dialect == "sqlite":
        pytest.skip("SQLite cannot drop a table constraint to replace it")
    raw(seeded, "ALTER TABLE events DROP CONSTRAINT events_one_fact")
    raw(seeded, "CREATE UNIQUE INDEX events_fact_again ON events (kind, effective_key, subject)")
    writer = Store.open(seeded.url)
    with writer.writing() as w:
        w.append([snapshot("2501.00001", "2026-01-01T00:00:00Z")])
    again = import_files(writer, [str(SEED_004)])  # refused by the renamed key, then looked up
    assert (again.appended, again.present, writer.head()[0]) == (0, 40, 41)
    writer.close()


def test_a_taken_seq_is_a_store_error_not_a_repeated_fact(seeded):
    with pytest.raises(StoreError) as caught:
        with seeded.writing() as w:
            w.seq -= 1  # a writer bug: it would take seq 40 again
            w.append([snapshot("2501.00001", "2026-01-01T00:00:00Z")])
    assert not isinstance(caught.value, DuplicateFactError)
    assert seeded.head()[0] == 40


def driver_error(store, *statements: str) -> Exception:
    """The driver's own exception for the last of `statements`, run on a raw connection and rolled back."""
    connection = store.engine.raw_connection()
    try:
        cursor = connection.cursor()
        for statement in statements[:-1]:
            cursor.execute(statement)
        with pytest.raises(store.engine.dialect.dbapi.Error) as caught:
            cursor.execute(statements[-1])
        return caught.value
    finally:
        connection.rollback()
        connection.close()


COPY_OF_SEQ_1 = ("INSERT INTO events (seq, kind, subject, paper, effective_at, effective_key, recorded_at, payload, "
                 "entry_hash, chain_hash) SELECT 41, kind, subject, paper, effective_at, effective_key, recorded_at, "
                 "payload, entry_hash, chain_hash FROM events WHERE seq = 1")
# The words each driver uses, raised with another code: text alone must never be taken for the error.
MIMICS = {
    "repeats_a_fact": {"sqlite": "UNIQUE constraint failed: events.subject, events.kind, events.effective_key",
                       "postgresql": 'duplicate key value violates unique constraint "events_one_fact"'},
    "is_locked": {"sqlite": "database is locked", "postgresql": "canceling statement due to lock timeout"},
    "is_not_a_database": {"sqlite": "file is not a database", "postgresql": "file is not a database"},
}


def mimic(store, text: str) -> Exception:
    if store.dialect == "sqlite":  # RAISE exists only in a trigger; the connection is pooled, so drop it first
        return driver_error(store, "DROP TABLE IF EXISTS temp.mimic", "CREATE TEMP TABLE mimic (x)",
                            f"CREATE TEMP TRIGGER mimic_raise BEFORE INSERT ON mimic BEGIN SELECT RAISE(ABORT, '{text}'); END",
                            "INSERT INTO mimic VALUES (1)")
    return driver_error(store, f"DO $$ BEGIN RAISE EXCEPTION '{text}'; END $$")


def test_driver_errors_are_recognised_by_their_code_not_their_words(seeded):
    backend = seeded.backend
    repeated = driver_error(seeded, COPY_OF_SEQ_1)  # a real violation of the unique fact key
    assert backend.repeats_a_fact(repeated) and not backend.is_locked(repeated)
    assert not backend.is_not_a_database(repeated)
    for predicate, texts in MIMICS.items():
        error = mimic(seeded, texts[seeded.dialect])
        assert texts[seeded.dialect] in str(error)  # the same words...
        assert not getattr(backend, predicate)(error), predicate  # ...under another code are not that error
    assert seeded.head()[0] == 40


def test_postgresql_copy_types_are_the_tables_types():
    # The bulk copy's column types are written out (loading the tables inside a writer's lock serialized
    # writers); they must stay what the SQLModel tables declare.
    from sqlalchemy.dialects import postgresql

    from ledger.storage.backends.postgres import COPY_TYPES
    from ledger.storage.tables import TABLES

    dialect = postgresql.dialect()
    declared = {t.name: {c.name: c.type.compile(dialect=dialect).lower() for c in t.columns}
                for t in TABLES if t.name in COPY_TYPES}
    assert declared == COPY_TYPES


def test_the_months_of_papers_are_each_listed_once_in_id_order(store):
    # One seek per month: an old-style archive sorting between another's months ("math-ph" before "math/")
    # and several papers of a month must neither hide a month nor list one twice.
    papers = ["2401.00001", "2312.00001", "2401.09999", "hep-th/9902001", "hep-th/9901001", "hep-th/9901002",
              "math/0101001", "math-ph/0101001", "2401.10000"]
    assert store.head()[0] == 0
    with store.reading() as cursor:
        assert cursor.paper_months() == []
    with store.writing() as w:
        w.append([snapshot(p, "2026-01-01T00:00:00Z") for p in papers])
    with store.reading() as cursor:
        assert cursor.paper_months() == ["2312", "2401", "hep-th/9901", "hep-th/9902", "math-ph/0101", "math/0101"]


def test_papers_and_their_count_skip_papers_without_a_snapshot_by_then_across_pages(store):
    # Pages are taken over every paper with an event; a page whose papers are all left out must not end the
    # listing, and a paper is counted once however many snapshots it has.
    ids = [f"2601.{n:05d}" for n in range(8)]
    late = {ids[1], ids[3], ids[4], ids[5]}  # snapshots only after the as-of
    with store.writing() as w:
        w.append([snapshot(i, "2026-03-01T00:00:00Z" if i in late else "2026-01-01T00:00:00Z") for i in ids])
        w.append([snapshot(ids[0], "2026-01-02T00:00:00Z", title="again")])
    recorded = store.head()[2]
    with store.writing() as w:
        w.append([snapshot(ids[6], "2026-03-02T00:00:00Z", title="later still")])
        w.append([snapshot(ids[7], "2026-01-03T00:00:00Z", title="recorded later")])  # 7 already shown
        w.append([snapshot("2601.00008", "2026-01-04T00:00:00Z")])  # known only after `recorded`
    as_of = "2026-02-01T00:00:00.000000Z"
    shown = [ids[0], ids[2], ids[6], ids[7], "2601.00008"]
    for batch in (1, 2, 3, 500):
        assert list(store.papers(as_of, batch=batch)) == shown
    assert store.paper_count(as_of) == len(shown)
    assert store.paper_count("2025-12-31T00:00:00.000000Z") == 0
    assert list(store.papers("2025-12-31T00:00:00.000000Z", batch=2)) == []
    assert list(store.papers("2026-12-31T00:00:00.000000Z", batch=3)) == ids + ["2601.00008"]
    assert list(store.papers(as_of, known_at=recorded, batch=2)) == shown[:-1]
    assert store.paper_count(as_of, known_at=recorded) == len(shown) - 1
    with store.reading() as cursor:  # a few papers asked by name: the same answer as the listing's
        assert cursor.shown_papers([*ids, "2601.00008", "2601.99999"], as_of) == set(shown)
        assert cursor.shown_papers([], as_of) == set()


def test_listing_and_counting_papers_read_the_paper_index_not_every_event(tmp_path):
    # SQLite's plan for both statements: a walk of the papers' index and one indexed look-up per paper; never
    # a scan of the events table, nor a row read for every paper-level event (as filtering them did).
    from ledger.storage.cursor import Cursor

    store = Store.create(str(tmp_path / "plans.db"))
    with store.writing() as w:
        w.append([snapshot(f"2601.{n:05d}", "2026-01-01T00:00:00Z") for n in range(3)])
    seen = []
    execute = Cursor.execute

    def record(self, sql, params=()):
        seen.append((sql, list(params)))
        return execute(self, sql, params)

    Cursor.execute = record
    try:
        assert len(list(store.papers("2026-02-01T00:00:00.000000Z", known_at="2027-01-01T00:00:00.000000Z"))) == 3
        assert store.paper_count("2026-02-01T00:00:00.000000Z") == 3
    finally:
        Cursor.execute = execute
    with store.reading() as cursor:
        for sql, params in seen:
            plan = [row[-1] for row in cursor.execute("EXPLAIN QUERY PLAN " + sql, params).fetchall()]
            assert not any(step.startswith("SCAN events") for step in plan), plan
            assert any("COVERING INDEX events_paper" in step for step in plan), plan
    store.close()
