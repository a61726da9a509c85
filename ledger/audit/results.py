"""What the offline verifiers of `ledger.audit.auditor` prove, as facts: each result names the sizes, the
signer, the paper and the counts it was checked against. Wording them is the interfaces' work (`cli.wording`);
this module never words a result and imports nothing of the ledger.
"""

from __future__ import annotations

from typing import NamedTuple


class Included(NamedTuple):
    """An inclusion proof verified: leaf `leaf_index` is in the tree of `tree_size` that `signer` signed."""

    leaf_index: int
    tree_size: int
    signer: str


class Prefix(NamedTuple):
    """A consistency proof verified: the tree of `old_size` is a prefix of the one of `new_size` `signer` signed."""

    old_size: int
    new_size: int
    signer: str


class PaperCount(NamedTuple):
    """A paper index proof verified: the index of the tree of `tree_size` that `signer` signed counts `count`
    events of arXiv `paper`, whose events tree has the root `events_root` (None when it counts none)."""

    paper: str
    count: int  # type: ignore[assignment]  # the index proof's word (shadows tuple.count)
    events_root: bytes | None
    tree_size: int
    signer: str


class Evidence(NamedTuple):
    """An evidence bundle verified: its `events` events are in the log of `tree_size` that `signer` signed, and
    the record of arXiv `paper` as of `as_of` (and `known_at`) is exactly their rebuild. `indexed`: how many
    events of the paper the signed paper index counts, every one of them in the bundle; None for a bundle
    made before the index, whose completeness is not proven."""

    events: int
    tree_size: int
    signer: str
    paper: str
    as_of: str
    known_at: str | None
    indexed: int | None


class IndexMatch(NamedTuple):
    """The monitor's check passed: the paper index signed at `tree_size` is the log's, of `papers` papers."""

    tree_size: int
    papers: int
