"""The store's one DBAPI cursor and the ledger's reads: the head, entries, Merkle nodes, a paper's and an
observation's facts, the papers with a snapshot.

Every statement goes through `Cursor.execute`, which counts it (`replay --stats`, the statement budget) and
turns the `?` placeholders into the driver's. Kind names come from `ledger.model.events`, bound as parameters,
never written into the SQL. This module never opens or commits a transaction (`ledger.storage.store` does),
never writes a row (`ledger.storage.writer` does), and never decides what a fact means.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

import orjson

from ledger.core.errors import IntegrityError
from ledger.log.chain import GENESIS, Entry, entry_bytes
from ledger.log.merkle import leaf_hash, perfect_subtrees
from ledger.model.arxiv import month_bounds, month_of
from ledger.model.events import CITATION_OBSERVED, OBSERVATION_KINDS, PAPER_SNAPSHOT, Event, Fact, citation_papers
from ledger.storage.backends.base import Backend
from ledger.storage.payloads import unpack

_COLUMNS = "seq, kind, subject, effective_at, effective_key, recorded_at, payload"
_OBSERVATION_KIND_IN = f"({', '.join(['?'] * len(OBSERVATION_KINDS))})"  # bound to OBSERVATION_KINDS
# Merkle subtrees of 16 leaves and more are stored as appended; smaller ones are re-computed from their
# block's event rows when a proof needs them. Storing every level cost an append about one more row.
STORED_FROM_LEVEL = 4
_STAND_IN = bytes(32)  # a node's value while a proof's nodes are being listed (Cursor.node_source)


class Owner(Protocol):
    """What a cursor needs of its store (`ledger.storage.store.Store`): its URL, the backend, and the statement
    count."""

    url: str
    backend: Backend
    statements: int


class Cursor:
    """The store's one DBAPI cursor, with the ledger's queries: every statement goes through `execute`,
    which counts it (`replay --stats`, the statement budget) and translates `?` placeholders."""

    def __init__(self, store: Owner, connection):
        self.store = store
        self.raw = connection.cursor()

    def execute(self, sql: str, params: tuple | list = ()):
        """Run one statement; returns the DBAPI cursor. Raises the driver's errors."""
        self.store.statements += 1
        self.raw.execute(self.store.backend.sql(sql), params)
        return self.raw

    def executemany(self, sql: str, rows: list) -> None:
        """Run one statement over many rows. Raises the driver's errors."""
        self.store.statements += 1
        self.raw.executemany(self.store.backend.sql(sql), rows)

    def copy(self, sql: str):
        """A COPY statement (PostgreSQL), counted; use it as a context manager. Raises the driver's errors."""
        self.store.statements += 1
        return self.raw.copy(sql)

    def head(self) -> tuple[int, bytes, str | None]:
        """(seq, chain hash, recorded time) of the last event. Raises the driver's errors."""
        row = self.execute("SELECT seq, chain_hash, recorded_at FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        return (0, GENESIS, None) if row is None else (row[0], _blob(row[1]), row[2])

    def entry(self, seq: int) -> Entry:
        """The stored entry `seq`. Raises the driver's errors."""
        return stored_entry(self.execute(f"SELECT {self.store.backend.entry_columns} FROM events WHERE seq = ?",
                                         (seq,)).fetchone())

    def entries_after(self, after: int, limit: int) -> list[Entry]:
        """Up to `limit` entries from seq `after` + 1, in ledger order. Raises the driver's errors."""
        return list(map(stored_entry, self.execute(f"SELECT {self.store.backend.entry_columns} FROM events WHERE "
                                                   "seq > ? ORDER BY seq LIMIT ?", (after, limit)).fetchall()))

    def tree_nodes(self, wanted: list[tuple[int, int]], size: int | None = None) -> dict[tuple[int, int], bytes]:
        """Merkle nodes by (level, index), in one statement: stored ones for level >= 4, and the smaller
        ones re-computed from the (at most 16) event rows of their block, reading no row past `size` when
        given. May return more nodes than asked for: the block's other small subtrees.
        Raises: IntegrityError when event rows of a block are missing, and the driver's errors."""
        stored = [pair for pair in wanted if pair[0] >= STORED_FROM_LEVEL]
        blocks = sorted({index >> (STORED_FROM_LEVEL - level) for level, index in wanted if level < STORED_FROM_LEVEL})
        width = 1 << STORED_FROM_LEVEL
        seqs = [seq for block in blocks for seq in range(block * width + 1, (block + 1) * width + 1)
                if size is None or seq <= size]
        parts, params = [], []
        if stored:  # level, index, hash
            parts.append("SELECT level, idx, hash, NULL, NULL, NULL, NULL FROM merkle_nodes WHERE "
                         + " OR ".join(["(level = ? AND idx = ?)"] * len(stored)))
            params.extend(v for pair in stored for v in pair)
        if seqs:  # -1, seq, and what the leaf is made of
            parts.append("SELECT -1, seq, NULL, kind, effective_at, recorded_at, payload FROM events WHERE seq IN "
                         f"({', '.join(['?'] * len(seqs))})")
            params.extend(seqs)
        found: dict[tuple[int, int], bytes] = {}
        leaves: dict[int, list[tuple[int, bytes]]] = {block: [] for block in blocks}
        for r in self.execute(" UNION ALL ".join(parts), params).fetchall() if parts else ():
            if r[0] >= 0:
                found[(r[0], r[1])] = _blob(r[2])
            else:
                leaf = leaf_hash(entry_bytes(r[1], r[3], r[4], r[5], stored_payload(r[6])))
                leaves[(r[1] - 1) // width].append((r[1], leaf))
        for block, digests in leaves.items():
            digests.sort()
            first = block * width + 1
            if [seq for seq, _ in digests] != list(range(first, first + len(digests))):
                raise IntegrityError(f"events missing among seq {first}..{first + width - 1}: the Merkle tree "
                                     "cannot be re-computed there")
            found.update(perfect_subtrees(block * width, [leaf for _, leaf in digests], STORED_FROM_LEVEL))
        return found

    def node_source(self, size: int, prefetch: Callable[[Callable[[int, int], bytes]], object] | None = None):
        """A Merkle node source for proofs in the tree of `size` leaves: each node read once, then remembered;
        nothing past `size` is read, so an append landing meanwhile cannot reach a proof. `prefetch`, a
        function of a node source (building a proof), is first run on a stand-in that only notes which nodes
        it asks for (which nodes a proof needs depends on its sizes, never on hashes): all of them are then
        read in one statement, not one each. Its nodes raise IntegrityError for a node outside that tree or
        one the ledger cannot give."""
        cache: dict[tuple[int, int], bytes] = {}
        if prefetch is not None:
            wanted: set[tuple[int, int]] = set()
            prefetch(lambda level, index: wanted.add((level, index)) or _STAND_IN)
            if wanted:
                cache.update(self.tree_nodes(sorted(pair for pair in wanted if (pair[1] + 1) << pair[0] <= size), size))

        def node(level: int, index: int) -> bytes:
            if (index + 1) << level > size:
                raise IntegrityError(f"Merkle node ({level}, {index}) is not in the tree of size {size}")
            if (level, index) not in cache:
                cache.update(self.tree_nodes([(level, index)], size))
                if (level, index) not in cache:
                    raise IntegrityError(f"the ledger has no Merkle node ({level}, {index})")
            return cache[(level, index)]

        return node

    def paper_facts(self, paper: str, known_at: str | None = None, size: int | None = None) -> list[Fact]:
        """Every event of one paper, in ledger order, in one indexed statement: its paper-level events and
        every event of the observations a citation links to it (the paper index's "events of P"). With
        `size`, the log of that many events: links made later do not count. Raises the driver's errors."""
        where, params = _paper_events(paper, known_at, size, self.store.backend.in_rows)
        return [_fact(r) for r in self.execute(f"SELECT {_COLUMNS} FROM events WHERE {where} ORDER BY seq",
                                               params).fetchall()]

    def paper_seqs(self, paper: str) -> list[int]:
        """The sequence numbers of `paper_facts(paper)`, without reading the events. Raises the driver's errors."""
        where, params = _paper_events(paper, None, None, self.store.backend.in_rows)
        return [r[0] for r in self.execute(f"SELECT seq FROM events WHERE {where} ORDER BY seq", params).fetchall()]

    def papers_since(self, after: int, size: int) -> set[str]:
        """The papers with an event (of `paper_facts`) among seqs `after` + 1 .. `size`: paper-level events'
        papers, and for an observation's events the papers its citations link it to. Reads those events and
        those citations only, so it costs what changed.
        Raises: IntegrityError for a citation whose papers cannot be read, or the driver's errors."""
        papers, observations = set(), set()
        for paper, subject in self.execute("SELECT paper, subject FROM events WHERE seq > ? AND seq <= ?", (after, size)):
            (papers.add(paper) if paper is not None else observations.add(subject))
        for linked in self.citation_papers(observations).values():
            papers.update(linked)
        return papers

    def citation_papers(self, observations: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """observation -> the papers its citation links it to, for those with a citation stored, read through
        the fact key 500 at a time. Raises: IntegrityError for a citation whose papers cannot be read, or the
        driver's errors."""
        wanted, linked = sorted(observations), {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            for subject, payload in self.execute(f"SELECT subject, payload FROM events WHERE kind = ? AND subject IN "
                                                 f"({', '.join(['?'] * len(chunk))})", [CITATION_OBSERVED, *chunk]):
                linked[subject] = stored_citation_papers(payload, f"observation {subject}")
        return linked

    def linked_papers(self, paper: str) -> set[str]:
        """The other papers the citations of `paper`'s observations link it to (those it cites, those citing
        it): the papers its record's cards name. Raises: IntegrityError for a citation whose papers cannot be
        read, or the driver's errors."""
        observations = [r[0] for r in self.execute("SELECT observation FROM observation_papers WHERE paper = ?", (paper,))]
        found = set().union(*self.citation_papers(observations).values())
        found.discard(paper)
        return found

    def paper_version(self, paper: str) -> tuple[int, int]:
        """(how many, the largest seq) of `paper_facts(paper)`: it changes exactly when a fact of the paper is
        appended (the log only grows), so it tells a copy of the paper's pages is current. Raises the driver's
        errors."""
        where, params = _paper_events(paper, None, None, self.store.backend.in_rows)
        count, last = self.execute(f"SELECT count(*), max(seq) FROM events WHERE {where}", params).fetchone()
        return count, last or 0

    def observation_facts(self, observation: str) -> list[Fact]:
        """Every event of one observation, in ledger order. Raises the driver's errors."""
        return [_fact(r) for r in self.execute(f"SELECT {_COLUMNS} FROM events WHERE subject = ? AND kind IN "
                                               f"{_OBSERVATION_KIND_IN} ORDER BY seq",
                                               (observation, *OBSERVATION_KINDS)).fetchall()]

    def papers_after(self, after: str, limit: int, as_of_key: str, known_at: str | None) -> list[tuple[str, bool]]:
        """The next `limit` papers with an event, sorted, from the first one after `after`: each with whether
        it has a snapshot effective by `as_of_key` (and recorded by `known_at`). Raises the driver's errors."""
        shown, params = _snapshot_by(as_of_key, known_at)
        # Each page walks the paper index alone (every paper with an event, in order), then looks up one
        # paper's snapshot: filtering the events themselves read every paper-level event of every paper.
        sql = (f"SELECT p.paper, {shown} FROM (SELECT DISTINCT paper FROM events WHERE paper > ? ORDER BY paper "
               "LIMIT ?) AS p ORDER BY p.paper")
        return [(paper, bool(snapshot)) for paper, snapshot in self.execute(sql, params + [after, limit]).fetchall()]

    def first_seqs(self, after: str | None, limit: int) -> list[tuple[str, int]]:
        """The next `limit` papers with a paper-level event, sorted, after `after` (None: from the first, even
        an empty id), each with its first seq: read from the paper index (paper, seq) alone, not the events.
        Raises the driver's errors."""
        where, params = ("paper IS NOT NULL", []) if after is None else ("paper > ?", [after])
        return [(paper, seq) for paper, seq in self.execute(
            f"SELECT paper, MIN(seq) FROM events WHERE {where} GROUP BY paper ORDER BY paper LIMIT ?",
            params + [limit]).fetchall()]

    def paper_months(self) -> list[str]:
        """The months (`ledger.model.arxiv.month_of`) of every paper with a paper-level event, sorted: one seek
        of the paper index per month, past the month's last id, so its cost grows with the months, not the
        papers. Raises the driver's errors."""
        months, after = [], ""
        while (row := self.execute("SELECT paper FROM events WHERE paper > ? ORDER BY paper LIMIT 1",
                                   [after]).fetchone()) is not None:
            month = month_of(row[0])
            if month not in months[-1:]:
                months.append(month)
            after = max(month_bounds(month)[1], row[0])  # a malformed id could sort past its month's bound
        return months

    def shown_papers(self, papers: Iterable[str], as_of_key: str) -> set[str]:
        """Those of `papers` with a snapshot effective by `as_of_key`: 500 papers a query, each looked up in the
        paper-level index, for some papers (all of them: `papers_after`). Raises the driver's errors."""
        wanted, shown = sorted(set(papers)), set()
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            shown.update(r[0] for r in self.execute(
                f"SELECT DISTINCT paper FROM events WHERE paper IN ({', '.join(['?'] * len(chunk))}) AND kind = ? "
                "AND effective_key <= ?", [*chunk, PAPER_SNAPSHOT, as_of_key]))
        return shown

    def recent_papers(self, limit: int, window: int) -> list[str]:
        """Up to `limit` papers with an event among the log's last `window`, the latest first: read from the
        log's end (an observation's papers from its citation, as `papers_since` reads them), so the cost is
        the window's, not the log's. Raises IntegrityError for a citation whose papers cannot be read, or
        the driver's errors."""
        rows = self.execute("SELECT paper, subject FROM events WHERE seq > ? ORDER BY seq DESC",
                            (max(self.head()[0] - window, 0),)).fetchall()
        linked = self.citation_papers({subject for paper, subject in rows if paper is None})
        found: dict[str, None] = {}
        for paper, subject in rows:
            for each in (paper,) if paper is not None else sorted(linked.get(subject, ())):
                found.setdefault(each)
            if len(found) >= limit:
                break
        return list(found)[:limit]

    def paper_summary(self, paper: str, as_of_key: str) -> tuple[bytes | None, int, str | None]:
        """(its latest snapshot's payload, how many of its events, the latest effective key), of the events
        effective by `as_of_key`. Raises the driver's errors."""
        where, params = _paper_events(paper, None, None, self.store.backend.in_rows)
        count, last = self.execute(f"SELECT count(*), max(effective_key) FROM events WHERE {where} AND "
                                   "effective_key <= ?", params + [as_of_key]).fetchone()
        row = self.execute("SELECT payload FROM events WHERE paper = ? AND kind = ? AND effective_key <= ? "
                           "ORDER BY effective_key DESC, seq DESC LIMIT 1", (paper, PAPER_SNAPSHOT, as_of_key)).fetchone()
        return (stored_payload(row[0]) if row else None), count, last

    def paper_count(self, as_of_key: str, known_at: str | None = None) -> int:
        """How many papers have a snapshot effective by `as_of_key` (and recorded by `known_at`). Raises the
        driver's errors."""
        shown, params = _snapshot_by(as_of_key, known_at)
        sql = f"SELECT COUNT(*) FROM (SELECT DISTINCT paper FROM events WHERE paper IS NOT NULL) AS p WHERE {shown}"
        return self.execute(sql, params).fetchone()[0]

    def stored_facts(self, events: Iterable[Event]) -> dict[tuple[str, str, str], tuple[int, bytes]]:
        """For each (kind, subject, effective key) of `events` already stored: (seq, payload), through the
        unique fact key. Raises the driver's errors."""
        keys = sorted({(e.subject, e.kind, e.effective_key) for e in events})
        rows = self.store.backend.stored_facts(self, keys) if keys else []
        return {(r[0], r[1], r[2]): (r[3], stored_payload(r[4])) for r in rows}

    # -- what `verify --full` compares with the entries (ledger.services.verify_store) ----------------------
    def event_rows_after(self, after: int, limit: int) -> list[tuple]:
        """Up to `limit` events from seq `after` + 1, in ledger order: each an Entry's seven fields, then the
        columns derived when it was appended (subject, paper, effective_key), as stored. Raises the driver's
        errors."""
        return [(*r[:4], stored_payload(r[4]), *r[5:]) for r in self.execute(
            f"SELECT {self.store.backend.entry_columns}, subject, paper, effective_key FROM events WHERE seq > ? "
            "ORDER BY seq LIMIT ?", (after, limit)).fetchall()]

    def links_between(self, after: int, last: int) -> list[tuple]:
        """The stored paper links (seq, paper, observation) with `after` < seq <= `last`, sorted. Raises the
        driver's errors."""
        return self.execute("SELECT seq, paper, observation FROM observation_papers WHERE seq > ? AND seq <= ? "
                            "ORDER BY seq, paper, observation", (after, last)).fetchall()

    def link_seq(self, paper: str, observation: str) -> object:
        """The seq stored with one paper link, or None when there is no such link. Raises the driver's errors."""
        row = self.execute("SELECT seq FROM observation_papers WHERE paper = ? AND observation = ?",
                           (paper, observation)).fetchone()
        return None if row is None else row[0]

    def stray_link(self, size: int) -> tuple | None:
        """A stored paper link whose seq is not one of 1..`size` (none, NULL, or past it), or None. Raises the
        driver's errors."""
        return self.execute("SELECT seq, paper, observation FROM observation_papers WHERE seq IS NULL OR seq < 1 "
                            "OR seq > ? LIMIT 1", (size,)).fetchone()

    def nodes_completed(self, after: int, last: int) -> list[tuple[int, int, bytes]]:
        """The stored Merkle nodes (level, index, hash) whose last leaf is one of seqs `after` + 1 .. `last`
        (of the levels stored), read by key. Raises the driver's errors."""
        ranges = [(level, after >> level, (last >> level) - 1) for level in range(STORED_FROM_LEVEL, last.bit_length())
                  if after >> level <= (last >> level) - 1]
        if not ranges:
            return []
        rows = self.execute("SELECT level, idx, hash FROM merkle_nodes WHERE "
                            + " OR ".join(["(level = ? AND idx >= ? AND idx <= ?)"] * len(ranges)),
                            [v for r in ranges for v in r]).fetchall()
        return [(level, index, _blob(digest)) for level, index, digest in rows]

    def stray_node(self, size: int) -> tuple | None:
        """A stored Merkle node (level, index) that is no perfect subtree of the first `size` leaves at a
        stored level, or None. Raises the driver's errors."""
        levels = range(STORED_FROM_LEVEL, 63)
        row = self.execute(f"SELECT level, idx FROM merkle_nodes WHERE level IS NULL OR level < {STORED_FROM_LEVEL} "
                           "OR level > 62 OR idx IS NULL OR idx < 0 OR "
                           + " OR ".join(["(level = ? AND idx >= ?)"] * len(levels)) + " LIMIT 1",
                           [v for level in levels for v in (level, size >> level)]).fetchone()
        return None if row is None else tuple(row)

    def index_node_rows_after(self, after: int, limit: int) -> list[tuple[int, bytes]]:
        """Up to `limit` stored paper index nodes (id, bytes) with id > `after`, by id. Raises the driver's
        errors."""
        return [(node_id, _blob(data)) for node_id, data in self.execute(
            "SELECT id, node FROM index_nodes WHERE id > ? ORDER BY id LIMIT ?", (after, limit)).fetchall()]

    def index_root_rows(self) -> list[tuple[int, int | None, bytes]]:
        """Every stored paper index root (size, root node id, hash), by size. Raises the driver's errors."""
        return [(size, node, _blob(digest)) for size, node, digest in
                self.execute("SELECT size, node, hash FROM index_roots ORDER BY size").fetchall()]


def _snapshot_by(as_of_key: str, known_at: str | None) -> tuple[str, list]:
    """Whether paper `p.paper` has a snapshot effective by `as_of_key` (and recorded by `known_at`): an SQL
    condition and its parameters, for `Cursor.papers_after`, `shown_papers` and `paper_count`."""
    sql = "EXISTS (SELECT 1 FROM events AS s WHERE s.paper = p.paper AND s.kind = ? AND s.effective_key <= ?"
    if known_at is None:
        return sql + ")", [PAPER_SNAPSHOT, as_of_key]
    return sql + " AND s.recorded_at <= ?)", [PAPER_SNAPSHOT, as_of_key, known_at]


def _paper_events(paper: str, known_at: str | None, size: int | None, in_rows: str) -> tuple[str, list]:
    """The condition (and its parameters) selecting a paper's events, as `Cursor.paper_facts` says; `in_rows`
    the backend's form of membership in a subquery (`Backend.in_rows`)."""
    links, params = "SELECT observation FROM observation_papers WHERE paper = ?", [paper, paper]
    if size is not None:
        links += " AND seq <= ?"
        params.append(size)
    where = f"(paper = ? OR (paper IS NULL AND subject {in_rows.format(links)}))"
    if size is not None:
        where += " AND seq <= ?"
        params.append(size)
    if known_at is not None:
        where += " AND recorded_at <= ?"
        params.append(known_at)
    return where, params


def _fact(r) -> Fact:
    return Fact(r[0], r[1], r[2], r[3], r[4], r[5], stored_payload(r[6]))


def stored_entry(row) -> Entry:
    """The Entry of a row selected by `Backend.entry_columns`, its payload unpacked (`ledger.storage.payloads`)."""
    return Entry(row[0], row[1], row[2], row[3], unpack(row[4]), row[5], row[6])


def stored_payload(value: object) -> bytes:
    """A payload as the events table holds it, as its canonical bytes (`ledger.storage.payloads.unpack`)."""
    return unpack(_blob(value))


def stored_citation_papers(payload: object, where: str) -> tuple[str, ...]:
    """The papers a stored citation event's payload links its observation to (`citation_papers`).
    Raises: IntegrityError naming `where` for a payload whose papers cannot be read."""
    try:
        return citation_papers(orjson.loads(stored_payload(payload))["citation"])
    except (orjson.JSONDecodeError, KeyError, TypeError):
        raise IntegrityError(f"{where}: a citation whose papers cannot be read") from None


def _blob(value: object) -> bytes:
    # A row edited by hand in SQLite can come back as TEXT, a number or NULL; verification must see it (as
    # bytes that will not re-compute), not crash on it, nor take an integer n for n zero bytes.
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return (value if isinstance(value, str) else repr(value)).encode("utf-8", "surrogateescape")
