"""Appends: the Writer one write transaction hands out, which continues the chain and the Merkle tree's right
edge from the head read under the write lock, and DuplicateFactError, what an append of a stored fact meets.

The unique fact key refuses an append that repeats a stored fact (DuplicateFactError), so appends need no look-up
first. This module never begins, commits or rolls back a transaction (`Store.writing` does), never keeps the
paper index (appends cost it nothing; `Store.keep_index` keeps it), and never decides what a fact means.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from ledger.core.errors import StoreError
from ledger.core.times import format_utc
from ledger.log.chain import Entry, seal
from ledger.log.merkle import frontier_nodes, grow, leaf_hash
from ledger.model.events import Event, Fact
from ledger.storage.cursor import STORED_FROM_LEVEL, Cursor
from ledger.storage.payloads import pack
from ledger.storage.schema import EVENT_COLUMNS

RECENT = 10_000  # events a store remembers for the paper index's next catch-up (their payloads held too)
Recent = tuple[int, list[tuple[int, Event, bytes]]]  # the size they follow, and each one's seq, event, leaf hash


def now_utc() -> str:
    """The current instant in the ledger's recorded-time form."""
    return format_utc(datetime.now(UTC))


class DuplicateFactError(StoreError):
    """An append met a fact the ledger holds already (same subject, kind and effective time; the unique key
    events_one_fact). The transaction cannot go on (rows before the refused one may be in it): let it roll
    back; the importer then runs again, looking facts up first. Exit 3 should one reach the command line."""


class Writer:
    """Appends inside one transaction. The chain continues from the head read under the lock."""

    def __init__(self, cursor: Cursor, edge: tuple[int, bytes, dict[int, bytes]] | None = None):
        self.cursor = cursor
        self.seq, self.chain, self.last_recorded = cursor.head()
        self.start = self.seq
        self.abandoned = False
        self.recent: list[tuple[int, Event, bytes]] | None = []  # for the paper index's next catch-up
        # One recorded time per import, never earlier than the head's: recorded time follows ledger order,
        # so "known at K" is always a prefix of the log.
        now = now_utc()
        self.recorded_at = now if self.last_recorded is None or now > self.last_recorded else self.last_recorded
        # The right edge of the Merkle tree: the perfect subtrees that new leaves combine with.
        if edge is not None and edge[0] == self.seq and edge[1] == self.chain:
            self.frontier = edge[2]  # handed over: the store forgets it until this transaction commits
        else:
            wanted = frontier_nodes(self.seq)
            stored = cursor.tree_nodes(wanted)
            self.frontier = {level: stored[(level, index)] for level, index in wanted}

    def abandon(self) -> None:
        """Roll this transaction back when its `Store.writing` block ends: nothing it appended is kept."""
        self.abandoned = True

    def paper_facts(self, paper: str) -> list[Fact]:
        """Every event of a paper's record, this transaction's appends included. Raises the driver's errors."""
        return self.cursor.paper_facts(paper)

    def paper_seqs(self, paper: str) -> list[int]:
        """The sequence numbers of `paper_facts(paper)`. Raises the driver's errors."""
        return self.cursor.paper_seqs(paper)

    def observation_facts(self, observation: str) -> list[Fact]:
        """Every event of one observation, this transaction's appends included. Raises the driver's errors."""
        return self.cursor.observation_facts(observation)

    def entry(self, seq: int) -> Entry:
        """The stored entry `seq`. Raises the driver's errors."""
        return self.cursor.entry(seq)

    def existing(self, events: Iterable[Event]) -> dict[tuple[str, str, str], tuple[int, bytes]]:
        """For each (kind, subject, effective key) already stored: (seq, payload). Looked up by exact key
        through the unique index, one indexed probe each; the importer asks only after a DuplicateFactError.
        Raises the driver's errors."""
        return self.cursor.stored_facts(events)

    def append(self, events: list[Event]) -> list[Entry]:
        """Append events, each a distinct fact, with the chain continued; returns their entries.
        Raises: DuplicateFactError when one of them is stored already."""
        seq, chain, recorded_at = self.seq, self.chain, self.recorded_at
        entries = []
        for ev in events:
            seq += 1
            data, digest, chain = seal(chain, seq, ev.kind, ev.effective_at, recorded_at, ev.payload)
            entries.append((Entry(seq, ev.kind, ev.effective_at, recorded_at, ev.payload, digest, chain), ev, data))
        self.append_entries(entries)
        return [entry for entry, _, _ in entries]

    def append_entries(self, entries: list[tuple[Entry, Event, bytes]]) -> None:
        """Append entries whose hashes are already computed: new ones (`append`), or lines of an exported log
        the importer has re-checked. Each comes with its entry bytes, which are its Merkle leaf.
        Raises: DuplicateFactError when a fact is already stored."""
        rows, nodes, links, recent = [], [], [], self.recent
        if recent is not None and len(recent) + len(entries) > RECENT:
            recent = self.recent = None  # a large import: its catch-up reads the log
        for entry, ev, data in entries:
            rows.append((entry.seq, ev.kind, ev.subject, ev.paper, ev.effective_at, ev.effective_key,
                         entry.recorded_at, pack(ev.payload), entry.entry_hash, entry.chain_hash))
            digest = leaf_hash(data)
            grow(self.frontier, entry.seq - 1, digest, nodes, STORED_FROM_LEVEL)
            for paper in ev.papers:  # only citations name papers
                links.append((paper, ev.subject, entry.seq))
            if recent is not None:
                recent.append((entry.seq, ev, digest))
        self._insert(rows, links, nodes)
        if entries:
            last = entries[-1][0]
            self.seq, self.chain, self.last_recorded = last.seq, last.chain_hash, last.recorded_at
            # New facts later in this transaction are never recorded before copied ones.
            self.recorded_at = max(self.recorded_at, last.recorded_at)

    def remembered(self, before: Recent | None) -> Recent | None:
        """What the store remembers for the paper index's next catch-up once this transaction has committed,
        from what it remembered `before`: this transaction's events added when they follow those (at most
        RECENT in all), or in their place."""
        if self.recent is None:
            return None
        if before is not None and before[0] + len(before[1]) == self.start:
            before[1].extend(self.recent)
            return None if len(before[1]) > RECENT else before
        return (self.start, self.recent) if self.recent else before

    def _insert(self, rows: list[tuple], links: list[tuple[str, str, int]], nodes: list[tuple[int, int, bytes]]) -> None:
        backend = self.cursor.store.backend
        if rows:
            try:  # the unique fact key decides, not a look-up first: new facts, the common case, cost no probe
                backend.insert(self.cursor, "events", EVENT_COLUMNS, rows)
            except backend.dbapi.IntegrityError as exc:
                if backend.repeats_a_fact(exc):
                    raise DuplicateFactError("a fact of this append is already stored (same subject, kind and effective "
                                     "time)") from None
                raise
        backend.insert_nodes_and_links(self.cursor, nodes, links)
