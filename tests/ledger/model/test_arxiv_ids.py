"""The one parser of arXiv ids (`ledger.model.arxiv`): what a person may type, and the one spelling a path holds."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.core.errors import InputError
from ledger.model.arxiv import ArxivId, looks_like_paper_id, paper_id, parse_arxiv_id

EXPECTED = "(expected e.g. 2407.20018 or hep-th/9901001)"


@pytest.mark.parametrize("text, paper, version", [
    ("2407.20018", "2407.20018", None),
    ("arXiv:2407.20018", "2407.20018", None),
    ("arxiv:2407.20018", "2407.20018", None),
    ("ARXIV:2407.20018", "2407.20018", None),
    ("2407.20018v2", "2407.20018", 2),
    ("arXiv:2407.20018v12", "2407.20018", 12),
    ("0704.0001", "0704.0001", None),
    ("1412.9999v1", "1412.9999", 1),
    ("1501.00001", "1501.00001", None),
    ("hep-th/9901001", "hep-th/9901001", None),
    ("hep-th/9901001v1", "hep-th/9901001", 1),
    ("arXiv:math.GT/0309136v3", "math.GT/0309136", 3),
])
def test_a_typed_id_names_its_paper_and_version(text, paper, version):
    assert parse_arxiv_id(text) == ArxivId(paper, version)


@pytest.mark.parametrize("text", [
    "bogus", "", " 2407.20018", "2407.20018\n", "2407.2001", "2407.200188", "1412.00001", "1501.0001",
    "2407.20018v0", "2407.20018v01", "2407.20018V2", "2407.20018v", "v2", "arXiv:", "arXiv:arXiv:2407.20018",
    "arXiv 2407.20018", "hep-th/991301", "HEP-TH/9901001", "hep-th/9901001/", "../../etc/passwd", "２４０７.２００１８",
])
def test_anything_else_is_refused_naming_the_text_with_an_example(text):
    with pytest.raises(InputError) as refused:
        parse_arxiv_id(text)
    assert str(refused.value) == f"not an arXiv id: {text!r} {EXPECTED}"


def test_a_refusal_names_the_option_it_was_read_from():
    with pytest.raises(InputError, match=r"^--paper bogus: not an arXiv id \(expected e.g. 2407.20018 or "):
        parse_arxiv_id("bogus", "--paper")
    for text in ("", "a b", "2407.20018\n"):  # quoted when it could not be seen as typed
        with pytest.raises(InputError) as refused:
            parse_arxiv_id(text, "ID")
        assert str(refused.value) == f"ID {text!r}: not an arXiv id {EXPECTED}"
    with pytest.raises(InputError) as refused:
        parse_arxiv_id("x" * 200, "--paper")
    assert str(refused.value) == f"--paper {'x' * 77}...: not an arXiv id {EXPECTED}"


@pytest.mark.parametrize("text", ["2407.20018", "0704.0001", "1501.00001", "hep-th/9901001", "math.GT/0309136"])
def test_a_path_holds_the_bare_id(text):
    assert paper_id(text) == text


@pytest.mark.parametrize("text", ["arXiv:2407.20018", "2407.20018v2", "hep-th/9901001v1", "2407.2001", "..", ""])
def test_a_path_refuses_a_prefix_a_version_and_anything_malformed(text):
    # A URL has one spelling per paper: `/paper/arXiv:2407.20018` is not another name of `/paper/2407.20018`.
    with pytest.raises(InputError, match="^not an arXiv id: "):
        paper_id(text)


@pytest.mark.parametrize("text, shaped", [
    ("2407.20018", True), ("2407.2001", True), ("2407.20018v2", True), ("1.2", True), ("arXiv:anything", True),
    ("ARXIV:", True), ("hep-th/9901001", True), ("hep-th/99", True), ("math.GT/0309136v1", True),
    ("b7d1cb3d-82fc-453c-be89-0574bc0e903d", False), ("bogus", False), ("", False), ("2407", False),
    ("2407.20018x", False), ("../../etc/passwd", False),
])
def test_the_shape_of_a_paper_id_is_told_from_an_observation_id(text, shaped):
    assert looks_like_paper_id(text) is shaped


new_ids = st.one_of(
    st.tuples(st.integers(0, 1412), st.integers(0, 9999)).map(lambda p: f"{p[0]:04d}.{p[1]:04d}"),
    st.tuples(st.integers(1501, 9999), st.integers(0, 99999)).map(lambda p: f"{p[0]:04d}.{p[1]:05d}"),
)
old_ids = st.tuples(st.sampled_from(["hep-th", "math", "math.GT", "cond-mat", "q-bio.NC"]), st.integers(0, 9999999)
                    ).map(lambda p: f"{p[0]}/{p[1]:07d}")


@given(st.one_of(new_ids, old_ids), st.sampled_from(["", "arXiv:", "arxiv:", "ArXiv:"]), st.none() | st.integers(1, 999))
def test_every_spelling_of_a_well_formed_id_names_it(paper, prefix, version):
    typed = f"{prefix}{paper}{'' if version is None else f'v{version}'}"
    assert parse_arxiv_id(typed) == ArxivId(paper, version)
    assert paper_id(paper) == paper and looks_like_paper_id(typed)
