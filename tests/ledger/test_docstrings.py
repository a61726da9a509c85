"""Docstrings of the library say what a caller must know: a public function that raises names each exception
type in a `Raises:` section, and every name there is a real exception class (docs/modules.md).

A section is written `Raises: InputError, StoreError.` on one line, or Google style, one `Name: when` per
indented line. A function with no `raise` of its own needs no section; the words "Raises nothing" are gone.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import re
from pathlib import Path

import pytest

from ledger.core import errors
from tests.test_layers import CORE, LOG, MODEL, MODULES, SERVICES, STORAGE, layer_of

CHECKED = sorted(name for name in MODULES if name.startswith("ledger.")
                 and layer_of(name) in (CORE, MODEL, LOG, STORAGE, SERVICES) or name == "ledger.api")  # the public face
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_ALTERNATIVES = re.compile(r",\s*(?:or\s+|and\s+)?|\s+or\s+|\s+and\s+")


def _public_functions(tree: ast.Module):
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            yield node.name, node
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                        (not item.name.startswith("_") or item.name == "__init__"):
                    yield f"{node.name}.{item.name}", item


def raises_section(doc: str) -> list[str] | None:
    """The exception names a docstring's `Raises:` section lists; None when it has none."""
    lines = doc.splitlines()
    for number, line in enumerate(lines):
        head, found, rest = line.strip().partition("Raises:")
        if not found or head:
            continue
        if rest.strip():  # one line: `Raises: A when ..., or B.` (words after a name are its condition)
            parts = _ALTERNATIVES.split(rest.strip())
            return [m.group(0) for m in map(_NAME.match, parts) if m and m.group(0)[:1].isupper()]
        names = []
        for item in lines[number + 1:]:
            if not item.strip():
                break
            match = _NAME.match(item.strip())
            if match and item.strip()[match.end():match.end() + 1] in (":", ""):
                names.append(match.group(0))
        return names
    return None


def _own_raises(function: ast.AST) -> set[str]:
    """Class names the function's own body raises (`raise Name(...)` or `raise Name`), nested defs excluded."""
    found, todo = set(), list(ast.iter_child_nodes(function))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Raise) and node.exc is not None:
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(target, ast.Name) and target.id[:1].isupper():
                found.add(target.id)
        todo.extend(ast.iter_child_nodes(node))
    return found


def _resolve(namespace: dict, name: str):
    # A name is the module's own, a builtin, or one of the error families (ledger.core.errors), which a
    # docstring may name where an error only passes through, without an import kept for the docstring alone.
    head, *rest = name.split(".")
    value = namespace.get(head, getattr(builtins, head, getattr(errors, head, None)))
    for part in rest:
        value = getattr(value, part, None)
    return value


def problems(path: Path, namespace: dict) -> list[str]:
    """What is wrong with the docstrings of a module's public functions, one line each."""
    found = []
    tree = ast.parse(path.read_text())
    for name, node in _public_functions(tree):
        doc = ast.get_docstring(node) or ""
        if "raises nothing" in doc.lower():
            found.append(f"{name}: says 'Raises nothing' (leave the section out)")
        listed = raises_section(doc)
        classes = {}
        for entry in listed or ():
            value = _resolve(namespace, entry)
            if not (isinstance(value, type) and issubclass(value, BaseException)):
                found.append(f"{name}: Raises: {entry} is not an exception type")
            else:
                classes[entry] = value
        for raised in sorted(_own_raises(node)):
            value = _resolve(namespace, raised)
            if not (isinstance(value, type) and issubclass(value, BaseException)):
                continue
            if not any(issubclass(value, c) for c in classes.values()):
                found.append(f"{name}: raises {raised}, not named in a Raises: section")
    return found


@pytest.mark.parametrize("module", CHECKED)
def test_public_functions_name_what_they_raise(module):
    assert problems(MODULES[module], vars(importlib.import_module(module))) == []


def test_the_check_can_fail(tmp_path):
    source = tmp_path / "m.py"
    source.write_text(
        'def quiet():\n    """Does things."""\n    raise ValueError("x")\n\n'
        'def loud():\n    """Does things.\n\n    Raises:\n        ValueError: when it must.\n    """\n    raise ValueError("x")\n\n'
        'def bogus():\n    """Raises: Nonsense."""\n\n'
        'def old():\n    """Does things. Raises nothing."""\n\n'
        'def broad():\n    """Raises: LookupError."""\n    raise KeyError("x")\n\n'
        'def passing():\n    """Raises: StoreError from the store."""\n')
    assert problems(source, {}) == [
        "quiet: raises ValueError, not named in a Raises: section",
        "bogus: Raises: Nonsense is not an exception type",
        "old: says 'Raises nothing' (leave the section out)",
    ]


def test_sections_are_read_in_both_forms():
    assert raises_section("Does.\n\nRaises: InputError, StoreError when locked.") == ["InputError", "StoreError"]
    assert raises_section("Raises: InputError naming the field, or StoreError (a lost connection).") == \
        ["InputError", "StoreError"]
    assert raises_section("Does.\n\nRaises:\n    InputError: bad file.\n    StoreError: locked.\n") == \
        ["InputError", "StoreError"]
    assert raises_section("Does.") is None
