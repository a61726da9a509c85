"""The paper index on a database that cannot be written (a hot standby; here the backend is told so): kept in
memory, never written, the same roots and proofs as the index the store keeps, bounded, and dropped once the
database can be written again. The real standby: tests/web/test_replica.py."""

from __future__ import annotations

import pytest

from ledger.core.times import when
from ledger.log.signed_notes import generate_signer
from ledger.services import proofs
from ledger.storage import store as store_module
from ledger.storage.index_reads import HELD
from tests.conftest import PAPER_004

SIGNER = generate_signer("example.org/ledger")


def _asked(store, sizes: list[int]) -> dict[int, tuple]:
    return {size: (proofs.checkpoint(store, SIGNER, size, paper_index=True), proofs.prove_paper(store, PAPER_004, size))
            for size in sizes}


def _stored(store) -> list[int]:
    with store.reading() as cursor:
        return [row[0] for row in cursor.execute("SELECT size FROM index_roots ORDER BY size").fetchall()]


@pytest.fixture
def read_only(seeded, monkeypatch):
    seeded.keep_index(9)  # a size kept before the database turned read-only: what memory builds on
    monkeypatch.setattr(seeded.backend, "read_only", lambda cursor: True)
    seeded.index_chunk = 4  # several held roots per catch-up
    return seeded


def test_a_read_only_store_holds_the_index_in_memory_with_the_bytes_a_kept_one_gives(read_only, monkeypatch):
    head = read_only.head()[0]
    sizes = [head, 12, 3, 9, 10, head - 1]
    held = _asked(read_only, sizes)
    bundle = proofs.evidence_bundle(read_only, PAPER_004, when("as_of", "2026-09-02"), SIGNER)
    assert _stored(read_only) == [9]
    assert set(sizes) - {9} <= set(read_only.index_nodes.roots)
    assert all(node_id & HELD for node_id in read_only.index_nodes.held)
    monkeypatch.undo()  # writable again: at the first size memory does not hold, it is dropped; the index written
    _asked(read_only, [11])
    assert read_only.index_nodes.roots == {} and read_only.index_nodes.held == {}
    assert _asked(read_only, sizes) == held
    assert set(sizes) <= set(_stored(read_only))
    assert proofs.evidence_bundle(read_only, PAPER_004, when("as_of", "2026-09-02"), SIGNER) == bundle


def test_what_memory_holds_is_bounded_and_computed_again_when_dropped(read_only, monkeypatch):
    head = read_only.head()[0]
    monkeypatch.setattr(store_module, "CACHE_LIMIT", 1)
    first = _asked(read_only, [head - 5])
    again = _asked(read_only, [head])  # past the bound: memory starts again, from the kept size 9
    assert sorted(read_only.index_nodes.roots) == list(range(13, head, 4)) + [head]
    monkeypatch.undo()
    assert _asked(read_only, [head - 5, head]) == {**first, **again}


def test_a_sqlite_file_this_process_may_not_write_is_served_from_memory(store, backend, monkeypatch):
    if backend != "sqlite":
        pytest.skip("a file's permissions")
    from ledger.importing.importer import import_files
    from ledger.storage.backends import sqlite
    from tests.conftest import SEED_004

    import_files(store, [str(SEED_004)])
    monkeypatch.setattr(sqlite.os, "access", lambda path, mode: False)  # as for a file of mode 0444, not as root
    held = _asked(store, [store.head()[0]])
    assert _stored(store) == [] and store.index_nodes.roots
    monkeypatch.undo()
    assert _asked(store, [store.head()[0] - 1, store.head()[0]])[store.head()[0]] == held[store.head()[0]]
