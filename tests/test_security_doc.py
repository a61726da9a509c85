"""docs/security.md names, for every defence and limit, the test that attacks it: each named test must exist, so
the threat model cannot point at a test that was renamed or never written."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "security.md"
# `tests/x.py::name`, or `::name` standing for the last file named before it in the same cell.
REFERENCE = re.compile(r"`(tests/[\w/]+\.py)?(?:::(\w+))?[^`]*`")


def _references() -> list[tuple[str, str | None]]:
    found = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        for cell in line.split("|"):
            last = None
            for path, name in REFERENCE.findall(cell):
                last = path or last
                if last and (path or name):
                    found.append((last, name or None))
    return found


def _functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


@pytest.mark.slow
def test_every_test_the_threat_model_names_exists():
    references = _references()
    assert len(references) > 30  # the doc names a test for each defence and limit
    missing = [f"{path}::{name}" if name else path for path, name in references
               if not (ROOT / path).is_file() or (name and name not in _functions(ROOT / path))]
    assert missing == []


def test_the_threat_model_covers_what_the_issue_asks():
    text = DOC.read_text(encoding="utf-8")
    for heading in ("## The assets", "## Who can send what", "## Defences, and the test that attacks each",
                    "## Limits", "## Out of scope"):
        assert heading in text
