"""`--shard K/N` (`ledger.model.shards`): the one spelling, and the split docs/scale.md states byte for byte, pinned by
known answers another implementation can check itself against."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.core.errors import InputError
from ledger.model.shards import EVERY, MAX_SHARDS, Shard, parse_shard, shard_of

# paper id, the first 8 bytes of SHA-256(id) in hex, the shard among N for N = 2, 3, 4, 16, 1000 (docs/scale.md)
VECTORS = [
    ("2407.20018", "97ec46cf87234c1f", [2, 3, 4, 16, 152]),
    ("hep-th/9901001", "e87280ea2780aa64", [1, 3, 1, 5, 181]),
    ("2411.13055", "d81f1585e2b9133a", [1, 2, 3, 11, 75]),
    ("0704.0001", "37b5cce6d3422cc7", [2, 3, 4, 8, 16]),
    ("2501.00001", "964374919dc2d0dc", [1, 1, 1, 13, 653]),
]


@pytest.mark.parametrize("paper, prefix, shards", VECTORS)
def test_a_paper_is_in_the_shard_the_rule_gives(paper, prefix, shards):
    assert [shard_of(paper, n) for n in (2, 3, 4, 16, 1000)] == shards
    assert [1 + int(prefix, 16) % n for n in (2, 3, 4, 16, 1000)] == shards  # the rule as docs/scale.md words it
    assert shard_of(paper, 1) == 1 and EVERY.holds(paper)


@given(st.text(max_size=30), st.integers(min_value=1, max_value=MAX_SHARDS))
def test_every_paper_is_in_exactly_one_shard(paper, n):
    k = shard_of(paper, n)
    assert 1 <= k <= n
    assert Shard(k, n).holds(paper)
    assert not Shard(k % n + 1, n).holds(paper) or n == 1


def test_a_shard_keeps_its_papers_in_their_order():
    papers = [p for p, _, _ in VECTORS]
    parts = [list(Shard(k, 3).papers(papers)) for k in (1, 2, 3)]
    assert parts == [["2501.00001"], ["2411.13055"], ["2407.20018", "hep-th/9901001", "0704.0001"]]
    assert list(EVERY.papers(papers)) == papers


@pytest.mark.parametrize("text, shard", [("1/1", Shard(1, 1)), ("2/4", Shard(2, 4)), ("4/4", Shard(4, 4)),
                                         (f"1/{MAX_SHARDS}", Shard(1, MAX_SHARDS))])
def test_k_of_n_is_read(text, shard):
    assert parse_shard(text) == shard
    assert str(parse_shard(text)) == text


@pytest.mark.parametrize("text", ["", "1", "0/1", "2/1", "1/0", "01/2", "1/02", " 1/2", "1/2 ", "1 / 2", "-1/2",
                                  "1/2/3", "1.0/2", "١/٢", f"1/{MAX_SHARDS + 1}", "9" * 5000 + "/1", "1/3\n"])
def test_anything_else_is_refused_in_one_line_naming_the_option(text):
    with pytest.raises(InputError) as refused:
        parse_shard(text)
    said = str(refused.value)
    assert said.startswith("--shard ") and "expected K/N" in said and "\n" not in said and len(said) < 300
