"""Golden files of corrected records, JSON and text: seed 004 with its first inbound observation withdrawn (as of
21 August), and seed 004's paper over the page cap (as of 24 August). Each is the ledger's replay and also equals
the record built by hand (`tests.helpers`), so a change to either side shows here. Regenerate with
LEDGER_REGENERATE_GOLDEN=1, then review the diff like code.
"""

from __future__ import annotations

import os

import pytest

from ledger.core.canonical import canonical
from ledger.model.events import OBSERVATION_WITHDRAWN
from tests.conftest import FIXTURES, PAPER_004, SEED_004
from tests.helpers import event_line, published, write_record
from tests.projections.test_capped import CAPPED_AT, everything
from tests.projections.test_withdrawn import withdrawal, without_first_inbound, write_lines

GOLDEN = FIXTURES / "golden"
WITHDRAWN_AS_OF = "2026-08-21T00:00:00Z"


def _withdrawn(cli, tmp_path) -> tuple[str, bytes]:
    line = event_line(OBSERVATION_WITHDRAWN, withdrawal())
    assert cli("import", str(SEED_004), write_lines(tmp_path / "w.jsonl", line)).exit_code == 0
    return WITHDRAWN_AS_OF, canonical(without_first_inbound(WITHDRAWN_AS_OF))


def _capped(cli, tmp_path) -> tuple[str, bytes]:
    record = published(CAPPED_AT, everything())
    assert cli("import", str(SEED_004), write_record(tmp_path / "capped.json", record)).exit_code == 0
    return CAPPED_AT, canonical(record)


CASES = {"withdrawn": _withdrawn, "capped": _capped}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("form", ["json", "text"])
def test_golden_corrected_records(cli, tmp_path, case, form):
    assert cli("init").exit_code == 0
    as_of, by_hand = CASES[case](cli, tmp_path)
    result = cli("replay", "--paper", PAPER_004, "--as-of", as_of, "--format", form)
    assert (result.exit_code, result.stderr) == (0, "")
    path = GOLDEN / f"{PAPER_004}@{as_of[:10]}-{case}.{'json' if form == 'json' else 'txt'}"
    if os.environ.get("LEDGER_REGENERATE_GOLDEN"):
        path.write_bytes(result.stdout_bytes)
    assert result.stdout_bytes == path.read_bytes()
    if form == "json":
        assert result.stdout_bytes == by_hand
