"""Rebuilding many records: one paper at a time, so memory follows the largest record, not the ledger."""

from __future__ import annotations

from typing import Iterator

from projections.record import build_record

from .store import Store


def records_as_of(store: Store, as_of: str, as_of_key: str, known_at: str | None = None) -> Iterator[tuple[str, dict]]:
    """(arxiv id, record) for every paper with a snapshot by `as_of`, in arXiv id order, lazily. Raises StoreError."""
    for paper in store.papers(as_of_key, known_at):
        yield paper, build_record(paper, store.paper_facts(paper, known_at), as_of, as_of_key)
