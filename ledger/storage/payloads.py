"""How an event's payload is kept in the events table (schema version 3): as its canonical bytes, or as those
bytes deflated (zlib, the standard library) against a preset dictionary fixed here, whichever is shorter.

The first byte says which: a canonical payload is a JSON object, so it begins with `{`; `PACKED` (0x00) begins
a deflated one. `unpack(pack(p)) == p` for every payload, so the entry bytes, every hash, proof, tile, bundle
and export line are those of the canonical payload, whatever is stored (another zlib build may deflate to other
bytes; any inflates them to the same payload). The dictionary is JSON of the
kinds' field names and vocabulary, with no event's own text; it must never change (a test pins its digest),
since every stored payload of every ledger is read with it: another one would be a new first byte. This module
never reads the database and never decides what a payload means; a stored value that unpacks to nothing
(edited by hand, cut short) is given back as stored, so verification names its seq instead of crashing.
"""

from __future__ import annotations

import zlib

from ledger.core.limits import RECORD

PACKED = b"\x00"  # deflated against DICTIONARY; anything else is the canonical bytes as they are
DICTIONARY = (  # the commonest kinds' shapes last: deflate finds the nearest match first
    b'{"notice_types":["retraction","partial_retraction","withdrawal","removal","expression_of_concern",'
    b'"correction","addendum","new_version","reinstatement"],"reasons":["not_checked","canonical_work_link_unavailable",'
    b'"check_failed","unavailable","measured"],"sources":["crossref","retraction_watch","arxiv_reference",'
    b'"cited_works","pdf_text","arxiv_id","doi"],"states":["verified_exact","verified_fuzzy","unresolved",'
    b'"parse_uncertain","malformed_identifier","metadata_mismatch"],"urls":["https://doi.org/10.","https://arxiv.org/abs/",'
    b'"sha256:"]}{"measurements":[],"observed_at":"2026-01-01T00:00:00.000000Z","paper":"2501.00000",'
    b'"source":"arxiv_reference"}{"observed_at":"2026-01-01T00:00:00.000000+00:00","paper":"2501.00000",'
    b'"source":"retraction_watch"}{"observation_id":"","standing_notice":{"events":[],"observation":"",'
    b'"reason":null,"source_receipts":[{"observed_at":"2026-01-01T00:00:00.000000+00:00","source":"crossref"}],'
    b'"state":"measured"}}{"observation_id":"","resolution":{"observed_at":"2026-01-01T00:00:00.000000Z",'
    b'"resolver_source":"arxiv_id","status":"verified_exact"}}{"arxiv_id":"2501.00000","last_updated":"2026-01-01T00:00:00.000000Z",'
    b'"latest_version":1,"primary_category":"","snapshot_observed_at":"2026-01-01T00:00:00.000000Z","submitted_at":"2026-01-01T00:00:00.000000Z",'
    b'"title":""}{"citation":{"cited_paper":{"arxiv_id":"2501.00000","last_updated":"2026-01-01T00:00:00.000000Z",'
    b'"snapshot_observed_at":"2026-01-01T00:00:00.000000Z","submitted_at":"2026-01-01T00:00:00.000000Z",'
    b'"title":"","version":1},"cited_work":{"arxiv_id":"2501.00000","doi":null,"metadata_source":"arxiv_reference",'
    b'"pith_arxiv_id":"2501.00000","snapshot_observed_at":"2026-01-01T00:00:00.000000Z","title":"","venue":null,'
    b'"work_id":"","year":2024},"citing_paper":{"arxiv_id":"2501.00000","last_updated":"2026-01-01T00:00:00.000000Z",'
    b'"snapshot_observed_at":"2026-01-01T00:00:00.000000Z","submitted_at":"2026-01-01T00:00:00.000000Z",'
    b'"title":"","version":2},"reference_index":7,"source":"pdf_text","source_observed_at":"2026-01-01T00:00:00.000000Z"},'
    b'"observation_id":""}'
)
_WINDOW = -12  # raw deflate (no header, no checksum: the entry hash checks the bytes), 4 KiB window
_LEVEL = 9  # the smallest output: appends pay for it once; inflating costs about the same at any level


def pack(payload: bytes) -> bytes:
    """What the events table stores for the canonical `payload`: deflated behind `PACKED` when that is
    shorter, else the payload itself."""
    deflate = zlib.compressobj(_LEVEL, zlib.DEFLATED, _WINDOW, 8, zlib.Z_DEFAULT_STRATEGY, DICTIONARY)
    packed = PACKED + deflate.compress(payload) + deflate.flush()
    return packed if len(packed) < len(payload) else payload


def unpack(stored: bytes) -> bytes:
    """The canonical payload `stored` holds (`pack`'s inverse); `stored` itself when it is not a whole deflated
    value of at most the record limit (it will not re-compute: verification names it)."""
    if not stored or stored[0]:  # not PACKED: the canonical bytes themselves (read on every event: kept short)
        return stored
    inflate = zlib.decompressobj(_WINDOW, DICTIONARY)
    try:
        payload = inflate.decompress(stored[1:], RECORD.size)  # over the limit: stops there, short of its end
    except zlib.error:
        return stored
    return payload if inflate.eof and not inflate.unused_data else stored
