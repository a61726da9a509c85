"""The ledger's tables, as SQLModel classes: one schema for every backend.

What differs by database (the guards that make the log append-only, how a write begins, bulk inserts, error
codes) lives in `ledger/storage/backends/`; this module only declares columns, keys and indexes. It never opens a
connection.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Index, Integer, LargeBinary, UniqueConstraint, text
from sqlmodel import Field, SQLModel

from ledger.storage.schema import EVENT_COLUMNS, SCHEMA_VERSION  # noqa: F401 -- the same names, for whoever reads them here

# 64-bit on PostgreSQL; exactly INTEGER on SQLite, where only that type makes the key the rowid.
SEQUENCE = BigInteger().with_variant(Integer(), "sqlite")


class EventRow(SQLModel, table=True):
    __tablename__ = "events"
    # Two indexes besides the sequence, a measured choice (benchmarks/): the unique fact key leads with the
    # subject, so it also finds an observation's events; the paper index holds paper-level rows only.
    __table_args__ = (
        UniqueConstraint("subject", "kind", "effective_key", name="events_one_fact"),
        Index("events_paper", "paper", "seq", sqlite_where=text("paper IS NOT NULL"),
              postgresql_where=text("paper IS NOT NULL")),
    )
    seq: int = Field(primary_key=True, sa_type=SEQUENCE, sa_column_kwargs={"autoincrement": False})
    kind: str
    subject: str  # the observation id for observation kinds; the paper (and source) otherwise
    paper: str | None = None  # set for paper-level kinds only
    effective_at: str
    effective_key: str  # UTC, microseconds: sorts as text
    recorded_at: str  # UTC, microseconds, written by the ledger: sorts as text
    payload: bytes = Field(sa_type=LargeBinary)
    entry_hash: bytes = Field(sa_type=LargeBinary)
    chain_hash: bytes = Field(sa_type=LargeBinary)


class ObservationPaper(SQLModel, table=True):
    """Which papers' records an observation appears in: lets a rebuild read one paper's events only."""

    __tablename__ = "observation_papers"
    __table_args__ = {"sqlite_with_rowid": False}  # the key is the row: one B-tree per insert, not two
    paper: str = Field(primary_key=True)
    observation: str = Field(primary_key=True)
    seq: int = Field(sa_type=SEQUENCE)  # the citation that first linked them: the paper index counts from there



class MerkleNode(SQLModel, table=True):
    """Every perfect subtree of 16 or more leaves of the RFC 9162 tree over the log: (level, index) covers
    2**level leaves. Smaller ones are re-computed from their block's event rows (`Cursor.tree_nodes`), so
    an append writes one node per 8 events, amortized, instead of two per event (benchmarks/RESULTS.md)."""

    __tablename__ = "merkle_nodes"
    __table_args__ = {"sqlite_with_rowid": False}  # the key is the row: one B-tree per insert, not two
    level: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    idx: int = Field(primary_key=True, sa_type=SEQUENCE, sa_column_kwargs={"autoincrement": False})
    hash: bytes = Field(sa_type=LargeBinary)


class IndexNode(SQLModel, table=True):
    """The paper index's nodes (`ledger.storage.index_nodes`), each written once: id = the tree size it was written
    for * 2**24 + its number among that size's nodes, so one catch-up's rows land together at the end (the
    rowid on SQLite)."""

    __tablename__ = "index_nodes"
    id: int = Field(primary_key=True, sa_type=SEQUENCE, sa_column_kwargs={"autoincrement": False})
    node: bytes = Field(sa_type=LargeBinary)


class IndexRoot(SQLModel, table=True):
    """The paper index's root at every tree size it was kept at: its root node (none while the index is empty)
    and its hash, the index root a checkpoint signs."""

    __tablename__ = "index_roots"
    size: int = Field(primary_key=True, sa_type=SEQUENCE, sa_column_kwargs={"autoincrement": False})
    node: int | None = Field(default=None, sa_type=SEQUENCE, nullable=True)
    hash: bytes = Field(sa_type=LargeBinary)


class LedgerMeta(SQLModel, table=True):
    __tablename__ = "ledger_meta"
    key: str = Field(primary_key=True)
    value: str


TABLES = [EventRow.__table__, ObservationPaper.__table__, MerkleNode.__table__, IndexNode.__table__,
          IndexRoot.__table__, LedgerMeta.__table__]
