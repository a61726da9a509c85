"""How many bytes the ledger reads of each kind of input a user hands it, as a file or on stdin: one table.

A limit is checked while reading (`ledger.core.inputs`), never after: over it, the read stops and the input is
refused in one line naming the limit (exit 2), so `/dev/zero`, a FIFO or a hostile stream costs at most the
limit. docs/security.md lists these with why. The answers the one HTTP client reads (`ANSWERS`, by kind) are
here too, so a record the ledger takes is never too large to fetch; the servers' request limits are their own.
This module only states limits: it never reads anything. Standard library only.
"""

from __future__ import annotations

from typing import NamedTuple

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


class Limit(NamedTuple):
    """At most `size` bytes of `what` (as an error names it: "over the 4 KiB limit for a key file")."""

    size: int
    what: str

    def __str__(self) -> str:
        return f"the {size_text(self.size)} limit for {self.what}"


def size_text(size: int) -> str:
    """A size in the largest binary unit that divides it: `4 KiB`, `16 GiB`, `100 bytes`."""
    for unit, name in ((GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB")):
        if size >= unit and size % unit == 0:
            return f"{size // unit} {name}"
    return f"{size:,} bytes"


# A key file is one line: a signing, verifier or cosigner key is under 200 bytes beside its name (an origin).
KEY = Limit(4 * KiB, "a key file")
# A signed note: a checkpoint with its signatures and cosignatures (a witness takes 16 KiB of request).
NOTE = Limit(64 * KiB, "a signed checkpoint")
# A C2SP tlog-policy: one line per log and witness; hundreds of witnesses fit.
POLICY = Limit(64 * KiB, "a witness policy")
# A backup's manifest: its head and a few signed checkpoints (`ledger backup`).
MANIFEST = Limit(1 * MiB, "a backup manifest")
# A proof: at most 63 hashes per path (RFC 9162), a few KiB; generous for a paper index proof.
PROOF = Limit(1 * MiB, "a proof")
# A record, or a line of event lines, is parsed whole: held several times over in memory. The largest
# legitimate record in tests/fixtures (the capped golden record) is 125 KiB: this is 500 times it.
RECORD = Limit(64 * MiB, "a record or an event line")
# An evidence bundle: one record, and each event of its paper with its two proofs.
BUNDLE = Limit(64 * MiB, "an evidence bundle")
# An exported log given as --db is read whole into an in-memory store: a larger log is imported into a database.
EXPORTED_LOG = Limit(1 * GiB, "an exported log read as --db")
# Event lines on stdin (or from a FIFO) beyond what is held in memory are kept in a temporary file for the
# passes an import makes: a backfill is large, but /tmp is not endless. A larger input is given as a file,
# which is read in place, in blocks, with no limit but its lines'.
STREAM = Limit(16 * GiB, "stdin or a pipe (a file has none)")

# HTTP answers (or published files) the monitor and `checkpoint --witness` read, by kind (ledger.services.fetch):
# a checkpoint is a signed note, a record or its evidence is a record. Tiles are C2SP tlog-tiles' (core may not
# import ledger.log: tests/cli/test_http_client.py checks these against tiles.WIDTH and MAX_ENTRY).
_TILE_WIDTH, _MAX_ENTRY = 256, 0xFFFF
ANSWERS = {
    "checkpoint": NOTE,
    "tile": Limit(_TILE_WIDTH * 32, "a hash tile"),  # a full tile: 256 hashes of 32 bytes
    "entry bundle": Limit(_TILE_WIDTH * (2 + _MAX_ENTRY), "an entry bundle"),  # 256 entries, each uint16-long
    "record": RECORD,  # a citation record or its integrity evidence
    "witness answer": Limit(64 * KiB, "a witness's answer"),  # a cosignature line, a size, or a reason
}
