"""Fuzzing arXiv ids, months, dates and instants (ledger/model/arxiv.py, ledger/core/times.py): nothing may
raise but an InputError, whatever the text or the type given, and what is accepted is what it should be."""

from hypothesis import given
from hypothesis import strategies as st

from benchmarks.fuzz import target_ids
from ledger.core.errors import InputError
from ledger.core.times import instant_key, parse_instant
from ledger.model.arxiv import month_id, paper_id, parse_arxiv_id
from tests.fuzz.strategies import FUZZ, outside_bytes

SHAPED = st.from_regex(r"\A(arXiv:|ARXIV:)?([0-9]{1,6}\.[0-9]{1,6}|[a-z-]{1,9}(\.[A-Z]{2})?/[0-9]{1,8})"
                       r"(v[0-9]{0,3})?\Z")
INSTANTS = st.from_regex(r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,7})?(Z|[+-][0-9]{2}:"
                         r"[0-9]{2})?)?\Z")


@FUZZ
@given(st.one_of(outside_bytes("ids"), SHAPED.map(str.encode), INSTANTS.map(str.encode)))
def test_ids_and_dates_raise_only_documented_errors(data):
    target_ids(data)


@FUZZ
@given(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.lists(st.text(max_size=3), max_size=2),
                 st.dictionaries(st.text(max_size=3), st.integers(), max_size=2), st.text()))
def test_a_value_of_any_json_type_is_refused_as_input(value):
    for parse in (parse_arxiv_id, paper_id, month_id, parse_instant, instant_key):
        try:
            parse(value)
        except InputError:
            continue


@FUZZ
@given(SHAPED)
def test_an_accepted_id_names_its_paper_in_the_one_spelling_of_a_path(text):
    try:
        paper, version = parse_arxiv_id(text)
    except InputError:
        return
    assert paper_id(paper) == paper and ".." not in paper and paper.count("/") <= 1 and not paper.startswith("/")
    assert (version is None) == ("v" not in text.rsplit("/", 1)[-1].split(".")[-1])
