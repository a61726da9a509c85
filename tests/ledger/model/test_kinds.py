"""The table of event kinds (ledger/model/kinds.py) is complete, and it is the only place a kind is spelled out.

Every kind defines every entry; a kind that leaves one out is refused when the table is built; each kind's
name is written in one module; the record fold, the history and the text page reach every kind through the
table and name none themselves.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest

from ledger.core.canonical import canonical
from ledger.core.times import When
from ledger.model import events
from ledger.model.events import Fact, make_event, record_events
from ledger.model.kinds import COUNTED_LANES, ENTRIES, KIND, Kind, table
from ledger.projections.history import history
from ledger.projections.record import build_record
from ledger.projections.text import render_text
from tests.conftest import AS_OF_004, PAPER_004
from tests.helpers import seed_record

ROOT = Path(__file__).resolve().parents[3]
CONSTANTS = ("PAPER_SNAPSHOT", "CITATION_OBSERVED", "RESOLUTION_RECORDED", "NOTICE_CHECKED", "SOURCE_CHECKED",
             "MEASUREMENTS_CHECKED", "OBSERVATION_WITHDRAWN", "COVERAGE_COUNTED")


def seed_facts() -> list[Fact]:
    """Seed 004 taken apart into facts, as the store would hand them to a fold: every kind occurs. Its first
    inbound observation was withdrawn in January and observed again since, so the record still lists it; a
    count of January counted nothing beyond what the ledger itemized then, so it changes no number."""
    oid = seed_record()["inbound"][0]["observation_id"]
    withdrawn = make_event(events.OBSERVATION_WITHDRAWN, {"observation_id": oid, "observed_at": "2026-01-05T00:00:00Z",
                                                          "reason": "reference extracted in error"})
    nothing = {"denominator": 0, "records_observed": 0}
    counted = make_event(events.COVERAGE_COUNTED, {"lanes": dict.fromkeys(COUNTED_LANES, nothing), "paper": PAPER_004,
                                                   "observed_at": "2026-01-06T00:00:00Z"})
    return [Fact(seq, e.kind, e.subject, e.effective_at, e.effective_key, "2026-09-01T00:00:00.000000Z", e.payload)
            for seq, e in enumerate([*record_events(seed_record()), withdrawn, counted], start=1)]


def test_every_kind_defines_every_entry_in_its_own_class():
    for name, kind in KIND.items():
        assert kind.name == name
        assert [entry for entry in ENTRIES if entry not in vars(type(kind))] == [], name
        assert all(callable(getattr(kind, entry)) for entry in ("derive", "slot", "place", "account"))
        assert isinstance(kind.observation, bool)


def test_the_vocabulary_is_the_table():
    assert events.KINDS == tuple(KIND) == ("paper.snapshot", "citation.observed", "resolution.recorded",
                                           "notice.checked", "source.checked", "measurements.checked",
                                           "observation.withdrawn", "coverage.counted")
    assert events.OBSERVATION_KINDS == ("citation.observed", "resolution.recorded", "notice.checked",
                                        "observation.withdrawn")
    assert [getattr(events, constant) for constant in CONSTANTS] == list(KIND)
    assert {e.kind for e in seed_facts()} == set(KIND)  # the facts below exercise every kind


def test_a_kind_missing_an_entry_is_refused_when_the_table_is_built():
    class Merged(Kind):  # no account: its history line was forgotten
        name = "observation.merged"
        observation = True
        page = None

        def derive(self, payload, checked, stated):
            return stated, payload["observation_id"], None, ()

        def slot(self, paper_id, subject, payload):
            return subject

        def place(self, draft, subject, payload):
            draft.citations.pop(subject, None)

    with pytest.raises(TypeError, match=r"^event kind Merged: no account$"):
        table(*KIND.values(), Merged())

    class Bare(Kind):
        name = "bare.kind"

    with pytest.raises(TypeError, match=r"^event kind Bare: no observation, derive, slot, place, account, page$"):
        table(Bare())
    with pytest.raises(ValueError, match=r"^event kind paper.snapshot: given twice$"):
        table(*KIND.values(), type(KIND["paper.snapshot"])())

    Merged.account = lambda self, old, new: "observation merged"
    assert list(table(*KIND.values(), Merged())) == [*KIND, "observation.merged"]


def _python_files() -> list[Path]:
    found = []
    for folder, dirs, files in os.walk(ROOT):
        here = Path(folder).relative_to(ROOT)
        dirs[:] = [d for d in dirs if not d.startswith((".", "__")) and not d.endswith(".egg-info")
                   and not (here == Path(".") and d in ("tests", "build", "dist"))]
        found += [Path(folder, f) for f in files if f.endswith(".py")]
    return found


@pytest.mark.parametrize("name", list(KIND))
def test_each_kind_name_is_written_in_one_module(name):
    literal = re.compile(r"""(["'])""" + re.escape(name) + r"\1")
    holders = {p.relative_to(ROOT).as_posix() for p in _python_files() if literal.search(p.read_text())}
    assert holders == {"ledger/model/kinds.py"}


@pytest.mark.parametrize("module", ["projections/record.py", "projections/history.py"])
def test_the_folds_name_no_kind(module):
    tree = ast.parse((ROOT / module).read_text())
    named = sorted({node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id in CONSTANTS}
                   | {a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for a in node.names
                      if a.name in CONSTANTS}
                   | {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and node.value in KIND})
    assert named == []


def _spy(monkeypatch, entry: str) -> set[str]:
    """Wrap `entry` of every kind in the table; the set returned fills with the kinds whose entry ran."""
    called: set[str] = set()
    for name, kind in KIND.items():
        original = getattr(kind, entry)
        if original is None:  # a kind with no such part (a page entry of None)
            continue

        def spy(*args, _name=name, _original=original):
            called.add(_name)
            return _original(*args)

        monkeypatch.setattr(kind, entry, spy)
    return called


def test_the_record_fold_reaches_every_kind_through_the_table(monkeypatch):
    slots, places = _spy(monkeypatch, "slot"), _spy(monkeypatch, "place")
    rebuilt = build_record(PAPER_004, seed_facts(), When.at(AS_OF_004))
    assert canonical(rebuilt) == canonical(seed_record())  # the seed's own bytes, rebuilt from its facts
    assert places == set(KIND)
    # A kind whose slot is its subject whatever the payload (`subject_slot`, read from the table) is not asked.
    assert slots == {name for name, kind in KIND.items() if not kind.subject_slot} != set()


def test_history_reaches_every_kind_through_the_table(monkeypatch):
    accounts = _spy(monkeypatch, "account")
    rows = history(seed_facts())
    assert accounts == set(KIND) and len(rows) == len(seed_facts())


def test_the_text_page_words_every_kind_the_page_shows(monkeypatch):
    pages = _spy(monkeypatch, "page")
    record = seed_record()
    record["external_citation_measurements"] = [{"citation_count": 3, "source": "openalex"}]
    listed = len(record["inbound"])
    record["caps"]["inbound"] = listed  # as if the cap were the listing: the lane counts two past it
    next(lane for lane in record["coverage"] if lane["lane"] == "inbound_itemization")["denominator"] = listed + 2
    page = render_text(record)
    assert "openalex: 3 citations" in page
    assert (f"Past the page cap of {listed}: inbound {listed + 2} counted, {listed} itemized; the rest are known "
            "only by count.") in page
    assert pages == {name for name, kind in KIND.items() if vars(type(kind))["page"] is not None}

