"""Composing records: `record_as_of`, the one place one paper's record is built from the store (the API, the
CLI, the web and the monitor call it; many papers are rebuilt below, a paper at a time), a subject's history (`subject_history`), and rebuilding many records: one paper at a time, so memory follows the largest record, not the ledger.

With several jobs (`replay --jobs`), each worker process opens the ledger itself and rebuilds the papers sent
to it (BATCH at a time), handing each record to a `render` function (rendering and writing files happen in
the workers too); the parent lists the papers, a page at a time, and gets the results back in arXiv id order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeVar

from ledger.core.errors import NotFoundError
from ledger.core.times import When
from ledger.core.workers import Workers
from ledger.model.events import Fact
from ledger.model.shards import EVERY, Shard
from ledger.projections.history import history
from ledger.projections.record import build_record
from ledger.storage.backends import sqlite_path
from ledger.storage.store import Store

R = TypeVar("R")
BATCH = 16  # papers sent to a worker at once: a round trip costs little beside 16 rebuilds


def record_as_of(store: Store, paper: str, as_of: When, known_at: When | None = None,
                 facts: list[Fact] | None = None) -> dict:
    """The record of arXiv `paper` as of `as_of`, from the facts recorded by `known_at` (None: all of them);
    `facts`: the paper's facts read already for that `known_at`.
    Raises: NotFoundError when the paper has no record then (saying known at when), or StoreError."""
    facts = store.paper_facts(paper, known_at.key if known_at else None) if facts is None else facts
    try:
        return build_record(paper, facts, as_of)
    except NotFoundError as exc:
        raise known_then(exc, known_at) from None


def known_then(exc: NotFoundError, known_at: When | None) -> NotFoundError:
    """What was not found, saying "known at" when the search was limited to what was known then."""
    return NotFoundError(f"{exc} known at {known_at.text}" if known_at else str(exc))


def subject_history(store: Store, subject: str) -> list[dict]:
    """The history rows of an observation (by its id) or else of a paper (by its arXiv id), as `ledger history`
    gives them: an observation's rows name both papers, a paper's are seen from it.
    Raises: NotFoundError when the ledger holds no event of it, or StoreError."""
    observed = store.observation_facts(subject)
    facts = observed or store.paper_facts(subject)
    if not facts:
        raise NotFoundError(f"no events of {subject} in this ledger")
    return history(facts, None if observed else subject)


def records_as_of(store: Store, as_of: When, known_at: str | None = None,
                  shard: Shard = EVERY) -> Iterator[tuple[str, dict]]:
    """(arxiv id, record) for every paper of `shard` with a snapshot by `as_of` (and a fact recorded by the key
    `known_at`), in arXiv id order, lazily.
    Raises: StoreError."""
    for paper in shard.papers(store.papers(as_of.key, known_at)):
        yield paper, build_record(paper, store.paper_facts(paper, known_at), as_of)  # known_at: a key, listed by it


def render_records(store: Store, as_of: When, known_at: str | None, render: Callable[[str, dict], R],
                   workers: Workers, shard: Shard = EVERY) -> Iterator[tuple[str, R]]:
    """(arxiv id, render(arxiv id, record)) for every paper of `shard` as in `records_as_of`, in arXiv id order, with the
    rebuilds and `render` (which must pickle: a module-level function) in `workers`; a store they cannot
    open (see `shared`) is replayed here.
    Raises: StoreError, and whatever `render` raises, in arXiv id order."""
    if workers.jobs == 1 or not shared(store):
        for paper, record in records_as_of(store, as_of, known_at, shard):
            yield paper, render(paper, record)
        return
    tasks = ((store.url, paper, as_of, known_at, render) for paper in shard.papers(store.papers(as_of.key, known_at)))
    yield from workers.map(_render_one, tasks, lambda task: 1, BATCH)


def shared(store: Store) -> bool:
    """Whether other processes can open this store: a file or a server, not a database held in this
    process's memory (an exported log)."""
    return not (store.dialect == "sqlite" and sqlite_path(store.url) is None)


_opened: dict[str, Store] = {}  # in a worker process: its own connection, opened by its first task


def _render_one(task: tuple) -> tuple[str, object]:
    url, paper, as_of, known_at, render = task
    store = _opened.get(url)
    if store is None:
        store = _opened[url] = Store.open(url)
    return paper, render(paper, build_record(paper, store.paper_facts(paper, known_at), as_of))
