"""The hash chain: its exact layout, and mutation vectors that every verification must refuse."""

import pytest
from blake3 import blake3

from ledger.core.errors import IntegrityError
from ledger.log.chain import GENESIS, Entry, entry_bytes, entry_hash, link, verify_entries


def build(n: int) -> list[Entry]:
    entries, chain = [], GENESIS
    for seq in range(1, n + 1):
        payload = b'{"observation_id":"o%d","n":%d}' % (seq, seq)
        digest = entry_hash(seq, "citation.observed", f"2026-08-0{seq % 9 + 1}T00:00:00Z",
                            "2026-11-29T00:00:00.000000Z", payload)
        chain = link(chain, digest)
        entries.append(Entry(seq, "citation.observed", f"2026-08-0{seq % 9 + 1}T00:00:00Z",
                             "2026-11-29T00:00:00.000000Z", payload, digest, chain))
    return entries


def test_entry_layout_is_the_documented_canonical_object():
    data = entry_bytes(7, "paper.snapshot", "2026-07-06T18:53:22.585501Z", "2026-11-29T12:00:00.000000Z",
                       b'{"arxiv_id":"2407.20018"}')
    assert data == (b'{"effective_at":"2026-07-06T18:53:22.585501Z","kind":"paper.snapshot",'
                    b'"payload":{"arxiv_id":"2407.20018"},"recorded_at":"2026-11-29T12:00:00.000000Z","seq":7}')


def test_chain_is_blake3_of_previous_and_entry_hash():
    entries = build(3)
    chain = GENESIS
    for e in entries:
        assert e.entry_hash == blake3(entry_bytes(e.seq, e.kind, e.effective_at, e.recorded_at, e.payload)).digest()
        chain = blake3(chain + e.entry_hash).digest()
        assert e.chain_hash == chain


def test_intact_chain_verifies_and_returns_the_head():
    entries = build(20)
    assert verify_entries(entries) == (20, entries[-1].chain_hash)
    assert verify_entries([]) == (0, GENESIS)


def flip(data: bytes, index: int) -> bytes:
    return data[:index] + bytes([data[index] ^ 0x01]) + data[index + 1:]


VECTORS = {
    "flipped_payload_byte": lambda es: es[:6] + [es[6]._replace(payload=flip(es[6].payload, 3))] + es[7:],
    "flipped_entry_hash_bit": lambda es: es[:6] + [es[6]._replace(entry_hash=flip(es[6].entry_hash, 0))] + es[7:],
    "flipped_chain_hash_bit": lambda es: es[:6] + [es[6]._replace(chain_hash=flip(es[6].chain_hash, 31))] + es[7:],
    "changed_kind": lambda es: es[:6] + [es[6]._replace(kind="resolution.recorded")] + es[7:],
    "changed_recorded_time": lambda es: es[:6] + [es[6]._replace(recorded_at="2026-11-29T00:00:00.000001Z")] + es[7:],
    "changed_effective_time": lambda es: es[:6] + [es[6]._replace(effective_at="2026-08-01T00:00:00Z")] + es[7:],
    "dropped_event": lambda es: es[:6] + es[7:],
    "swapped_seq": lambda es: es[:6] + [es[7]._replace(seq=7), es[6]._replace(seq=8)] + es[8:],
    "duplicated_event": lambda es: es[:7] + [es[6]] + es[7:],
}


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_every_mutation_is_refused_and_the_first_bad_seq_is_named(name):
    entries = build(12)
    with pytest.raises(IntegrityError) as caught:
        verify_entries(VECTORS[name](entries))
    message = str(caught.value)
    assert "seq 7" in message, message
    assert "..12" in message or "..11" in message or "..13" in message, message


def test_a_rehashed_forgery_still_changes_the_head():
    # Someone who rewrites a payload and re-computes every hash after it passes verify_entries,
    # but cannot keep the published head: that is why the head is published.
    entries = build(5)
    forged, chain = [], GENESIS
    for e in entries:
        payload = e.payload.replace(b'"n":3', b'"n":4')
        digest = entry_hash(e.seq, e.kind, e.effective_at, e.recorded_at, payload)
        chain = link(chain, digest)
        forged.append(Entry(e.seq, e.kind, e.effective_at, e.recorded_at, payload, digest, chain))
    assert verify_entries(forged)[1] != verify_entries(entries)[1]
