"""Every public function of the core says in its docstring what it raises ("Raises nothing" included), so a
caller knows which error family to expect without reading the body (README, "Layers")."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.test_layers import CORE, LAYERS, MODULES, SERVICES, STORAGE

CHECKED = sorted(name for name, layer in LAYERS.items() if name.startswith("ledger") and layer in (CORE, STORAGE, SERVICES))


def _public_functions(path: Path):
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            yield node.name, node
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and not item.name.startswith("_") \
                        and not any(isinstance(d, ast.Name) and d.id == "property" for d in item.decorator_list) \
                        and not any(isinstance(d, ast.Attribute) and d.attr == "setter" for d in item.decorator_list):
                    yield f"{node.name}.{item.name}", item


def _inherited() -> set[str]:
    """Methods a backend overrides: their contract, raises included, is documented once, on Backend."""
    base = MODULES["ledger.backends.base"]
    return {name.split(".")[1] for name, node in _public_functions(base) if name.startswith("Backend.")}


def undocumented(path: Path) -> list[str]:
    missing = []
    overridden = _inherited() if path.parent.name == "backends" and path.name != "base.py" else set()
    for name, node in _public_functions(path):
        if name.split(".")[-1] in overridden:
            continue
        doc = ast.get_docstring(node) or ""
        if "raise" not in doc.lower():
            missing.append(name)
    return missing


@pytest.mark.parametrize("module", CHECKED)
def test_public_functions_say_what_they_raise(module):
    assert undocumented(MODULES[module]) == []


def test_the_check_can_fail(tmp_path):
    source = tmp_path / "m.py"
    source.write_text('def quiet():\n    """Does things."""\n\ndef loud():\n    """Raises InputError."""\n')
    assert undocumented(source) == ["quiet"]
