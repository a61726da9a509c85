"""Shards of the papers (`--shard K/N`): the one stable split of paper ids into N parts, so that N processes on N
machines each take one part and together do what one process does. Pure: an id in, a shard number out; it never
reads the store, and it must never change (another implementation, and every shard of a run, must split alike).

The rule, byte for byte (docs/scale.md): a paper's shard among N is 1 + (the first 8 bytes of the SHA-256 of the
paper id's UTF-8 bytes, read as an unsigned big-endian integer) mod N. The paper id is the one a record is kept
under: the bare id `ledger.model.arxiv` normalises a typed one to (no `arXiv:` prefix, no version), e.g.
`2407.20018` or `hep-th/9901001`. A stored id that is not well formed is hashed as it is stored.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from ledger.core.errors import InputError
from ledger.core.redact import quoted

MAX_SHARDS = 65536  # far past any number of machines; bounds the number a user may type
_SPELLING = re.compile(r"([1-9][0-9]{0,5})/([1-9][0-9]{0,5})", re.ASCII)


class Shard(NamedTuple):
    """Shard `k` of `n` (1 <= k <= n); `Shard(1, 1)` is every paper."""

    k: int
    n: int

    def holds(self, paper: str) -> bool:
        """Whether `paper` (a stored paper id) is in this shard."""
        return self.n == 1 or shard_of(paper, self.n) == self.k

    def papers(self, papers: Iterable[str]) -> Iterator[str]:
        """The papers of `papers` in this shard, in their order."""
        return iter(papers) if self.n == 1 else (paper for paper in papers if shard_of(paper, self.n) == self.k)

    @property
    def whole(self) -> bool:
        """Whether this is every paper (`1/1`)."""
        return self.n == 1

    def __str__(self) -> str:
        return f"{self.k}/{self.n}"


EVERY = Shard(1, 1)


def shard_of(paper: str, n: int) -> int:
    """The shard (1 to `n`) of the stored paper id `paper` among `n`: see the module's rule."""
    return 1 + int.from_bytes(hashlib.sha256(paper.encode("utf-8", "surrogatepass")).digest()[:8], "big") % n


def parse_shard(text: str, name: str = "--shard") -> Shard:
    """`K/N` as typed after `name`: two decimal numbers, 1 <= K <= N <= MAX_SHARDS.
    Raises: InputError naming the option and the text, saying what is expected."""
    found = _SPELLING.fullmatch(text) if isinstance(text, str) else None
    k, n = (int(found.group(1)), int(found.group(2))) if found else (0, 0)
    if not found or k > n or n > MAX_SHARDS:
        raise InputError(f"{name} {quoted(str(text))}: expected K/N, this process's shard K of N, 1 <= K <= N <= "
                         f"{MAX_SHARDS:,} (e.g. 2/4; 1/1 is every paper)")
    return Shard(k, n)
