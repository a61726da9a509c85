"""The house's import rules (README, "Layers"): imports run one way, every module imports alone, and the
offline verifier never reaches the store.

Layers, bottom up: the pure core, storage, the folds, the services that combine store and fold, and the
interfaces; benchmarks/ above them all (it may import any layer; nothing in ledger imports it). A module may
import its own layer or any layer below, never one above; the module graph has no cycle at all. A module
missing from LAYERS fails the test, so a new module must be placed.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The layers, bottom up, as the packages that hold them: a module's layer is the folder it lives in, so a new
# module is placed by where it is put. `ledger/__init__.py`, the public face, stands with the interfaces.
LAYERS = (
    ("ledger.core",),  # bytes in, values or exceptions out: errors, canonical encoding, time, reading inputs
    ("ledger.model",),  # the published format and the events a record is taken apart into
    ("ledger.log",),  # the log's structures: entry bytes and the chain, the tree, signed notes, tiles, the paper index
    ("ledger.projections",),  # pure folds: events in, a record and its views out; never the store
    ("ledger.storage",),  # the store, its tables and its backends
    ("ledger.audit", "ledger.importing", "ledger.services"),  # services that combine store and fold
    ("ledger.cli", "ledger.web", "ledger"),  # the interfaces and the public Python API
    ("benchmarks",),  # measures the whole house: may import any layer, as an interface does; none imports it
)
CORE, MODEL, LOG, FOLDS, STORAGE, SERVICES, INTERFACES, BENCHMARKS = range(len(LAYERS))
# The installed package `ledger` holds the repo's top-level interface and fold folders as sub-packages.
FOLDERS = {"ledger": "ledger", "ledger.projections": "projections", "ledger.cli": "cli", "ledger.web": "web",
           "benchmarks": "benchmarks"}
OFFLINE = "ledger.audit"  # what an auditor vendors: it must not reach the store, even indirectly


def _modules() -> dict[str, Path]:
    found = {}
    for package, folder in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            name = ".".join((package, *parts))
            if package == "ledger" and len(parts) > 0 and parts[0] in ("projections", "cli", "web"):
                raise AssertionError(f"{path}: ledger/{parts[0]} would hide the top-level {parts[0]}/ folder")
            found[name] = path
    return found


ALL_MODULES = _modules()
# The installed package's modules (the README maps them); benchmarks/ stands beside them in the graph.
MODULES = {name: path for name, path in ALL_MODULES.items() if name.partition(".")[0] != "benchmarks"}


def layer_of(name: str) -> int:
    """The layer of the deepest layer package holding `name`."""
    best = max((pkg for layer in LAYERS for pkg in layer if name == pkg or name.startswith(pkg + ".")), key=len)
    return next(i for i, layer in enumerate(LAYERS) if best in layer)


def _imports(name: str, path: Path) -> set[str]:
    """Every project module `name` imports, at any depth of its code (function-level imports included)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    wanted = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from package import module` imports the module; `from module import name` the module itself.
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in ALL_MODULES else base for alias in node.names]
        else:
            continue
        wanted.update(t for t in targets if t in ALL_MODULES)
    wanted.discard(name)
    return wanted


GRAPH = {name: _imports(name, path) for name, path in ALL_MODULES.items()}


def test_every_folder_of_the_package_is_a_layer():
    # A module directly in ledger/ is the public face (ledger/api.py alone); a new folder must be given its layer here.
    named = {pkg for layer in LAYERS for pkg in layer}
    assert sorted(n for n, p in MODULES.items() if p.name == "__init__.py" and n.count(".") == 1 and n not in named) == []
    assert sorted(n for n, p in MODULES.items() if n.count(".") == 1 and p.name != "__init__.py") == ["ledger.api"]


def test_layers_follow_the_folders():
    assert (layer_of("ledger.core.canonical"), layer_of("ledger.storage.backends.sqlite")) == (CORE, STORAGE)
    assert (layer_of("ledger.projections.record"), layer_of("ledger.cli.main"), layer_of("ledger")) == (FOLDS, INTERFACES, INTERFACES)
    assert (layer_of("benchmarks.run"), layer_of("benchmarks.common")) == (BENCHMARKS, BENCHMARKS)


def test_the_benchmarks_are_in_the_graph_and_run_imports_them_one_way():
    # run.py only dispatches: it imports the sections' modules, and common.py, which they all share, imports none.
    assert {"benchmarks.run", "benchmarks.common", "benchmarks.whole", "benchmarks.serve"} <= set(GRAPH)
    assert {"benchmarks.appends", "benchmarks.whole", "benchmarks.common"} <= GRAPH["benchmarks.run"]
    assert sorted(t for t in GRAPH["benchmarks.common"] if t.startswith("benchmarks")) == []
    assert sorted(n for n in GRAPH if layer_of(n) < BENCHMARKS and any(layer_of(t) == BENCHMARKS for t in GRAPH[n])) == []


@pytest.mark.parametrize("name", sorted(ALL_MODULES))
def test_imports_run_one_way(name):
    upward = sorted(t for t in GRAPH[name] if layer_of(t) > layer_of(name))
    assert upward == [], f"{name} (layer {layer_of(name)}) imports from a higher layer: {upward}"


def test_the_module_graph_has_no_cycle():
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(name: str) -> None:
        state[name] = 1
        path.append(name)
        for target in sorted(GRAPH[name]):
            if state.get(target) == 1:
                raise AssertionError("import cycle: " + " -> ".join(path[path.index(target):] + [target]))
            if target not in state:
                visit(target)
        path.pop()
        state[name] = 2

    for name in sorted(GRAPH):
        if name not in state:
            visit(name)


def test_the_offline_verifier_never_reaches_the_store():
    todo = [name for name in MODULES if name == OFFLINE or name.startswith(OFFLINE + ".")]
    seen = set(todo)
    while todo:
        for target in GRAPH[todo.pop()]:
            if target not in seen:
                seen.add(target)
                todo.append(target)
    assert sorted(t for t in seen if layer_of(t) == STORAGE) == []


def test_the_rule_catches_a_wrong_way_import(tmp_path):
    # The checker itself must be able to fail: a core module importing the store is reported.
    fake = tmp_path / "canonical.py"
    fake.write_text("from ..storage.store import Store\nimport ledger.projections.record\n")
    assert _imports("ledger.core.canonical", fake) == {"ledger.storage.store", "ledger.projections.record"}
    assert max(layer_of(t) for t in _imports("ledger.core.canonical", fake)) > layer_of("ledger.core.canonical")


def test_a_fold_that_imports_the_store_is_caught(tmp_path):
    # "A fold never touches the database": the folds stand below storage, so this import goes upward.
    fake = tmp_path / "record.py"
    fake.write_text("from ledger.storage.store import Store\n")
    assert [layer_of(t) > layer_of("ledger.projections.record") for t in _imports("ledger.projections.record", fake)] \
        == [True]


SQL = re.compile(r"\b(SELECT\s.+\sFROM|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+(TABLE|INDEX))\b", re.I | re.S)


def test_only_storage_holds_sql():
    # Docstrings may describe SQL; a statement outside ledger/storage would be a second place that knows the tables.
    found = {}
    for name, path in MODULES.items():
        if layer_of(name) == STORAGE:
            continue
        tree = ast.parse(path.read_text(), str(path))
        docs = {id(n.body[0].value) for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.FunctionDef,
                ast.ClassDef, ast.AsyncFunctionDef)) and n.body and isinstance(n.body[0], ast.Expr)}
        hits = [n.value[:60] for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                and id(n) not in docs and SQL.search(n.value)]
        if hits:
            found[name] = hits
    assert found == {}


def test_the_sql_rule_catches_a_statement():
    assert SQL.search("SELECT seq FROM events WHERE seq > ?") and not SQL.search("select the newest record")


@pytest.mark.slow
def test_every_module_imports_alone_in_a_fresh_interpreter():
    # One interpreter per module: a cycle shows only when its module is imported first.
    failures = []
    for name in sorted(ALL_MODULES):
        if name == "ledger.cli.__main__":  # runs the app when imported
            continue
        done = subprocess.run([sys.executable, "-c", f"import {name}"], cwd=ROOT, capture_output=True, text=True)
        if done.returncode:
            failures.append(f"{name}: {done.stderr.strip().splitlines()[-1]}")
    assert failures == []


@pytest.mark.slow
def test_commands_start_without_loading_the_sqlmodel_tables():
    # Loading SQLModel (and pydantic, SQLAlchemy's ORM) took longer than the rest of a command's start-up:
    # only `init` needs the tables (ledger/schema.py holds what every other command needs).
    script = "import sys, ledger.cli.main; print(sorted(m for m in ('sqlmodel', 'pydantic', 'ledger.storage.tables') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True)
    assert (done.returncode, done.stdout.strip()) == (0, "[]"), done.stderr


@pytest.mark.slow
def test_commands_on_a_sqlite_file_run_without_loading_sqlalchemy_or_pydantic(tmp_path):
    # SQLAlchemy took about 0.3 s of a command's 0.5 s start-up: a SQLite file is opened with sqlite3 alone;
    # only `init` (the tables), `upgrade`, PostgreSQL and an exported log (SQLite in memory) make an engine.
    # typer 0.29 coerces every option through pydantic, loaded as the command line is parsed: about 0.1 s
    # of each command's start-up (pyproject.toml keeps typer below it).
    from ledger.storage.store import Store

    db = str(tmp_path / "ledger.db")
    Store.create(db).close()
    script = ("import sys, runpy; sys.argv = ['ledger', '--db', sys.argv[1], 'head']\n"
              "try: runpy.run_module('ledger.cli', run_name='__main__')\nexcept SystemExit: pass\n"
              "print(sorted(m for m in ('sqlalchemy', 'sqlmodel', 'pydantic') if m in sys.modules), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", script, db], cwd=ROOT, capture_output=True, text=True)
    assert done.stderr == "[]\n", done.stderr
    assert done.stdout.startswith("0 "), done.stdout  # the head of an empty ledger: the command ran


def test_the_schema_names_the_tables_columns():
    from ledger.storage.schema import EVENT_COLUMNS
    from ledger.storage.tables import EventRow

    assert set(EVENT_COLUMNS) == set(EventRow.__table__.columns.keys())


LONGEST_FUNCTION, LONGEST_FILE = 60, 400
# Modules over LONGEST_FILE lines when the rule came (issue 44); none may join them.
OVER_LONGEST_FILE: set[str] = set()  # the hubs were split (issue 44)


def long_functions(path: Path, most: int = LONGEST_FUNCTION) -> list[str]:
    """`name:line (N lines)` of each function in `path` over `most` lines without a `# long: why` comment on the
    line above it (or its first decorator) or on its `def` line."""
    lines = path.read_text().splitlines()
    found = []
    for node in ast.walk(ast.parse("\n".join(lines), str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            length = node.end_lineno - node.lineno + 1
            said = any("# long:" in lines[n - 1] for n in (first - 1, node.lineno) if n >= 1)
            if length > most and not said:
                found.append(f"{node.name}:{node.lineno} ({length} lines)")
    return found


def test_no_benchmark_function_runs_past_60_lines_without_a_reason():
    found = {name: long_functions(path) for name, path in ALL_MODULES.items() if layer_of(name) == BENCHMARKS}
    assert {name: hits for name, hits in found.items() if hits} == {}


def test_the_function_length_rule_catches_a_long_function_and_heeds_a_reason(tmp_path):
    body = "".join(f"    x{n} = {n}\n" for n in range(LONGEST_FUNCTION))
    fake = tmp_path / "fake.py"
    fake.write_text(f"def short():\n    return 1\n\n\ndef long():\n{body}")
    assert long_functions(fake) == [f"long:5 ({LONGEST_FUNCTION + 1} lines)"]
    fake.write_text(f"def short():\n    return 1\n\n\n# long: one table, read top to bottom\ndef long():\n{body}")
    assert long_functions(fake) == []


@pytest.mark.parametrize("name", sorted(ALL_MODULES))
def test_no_module_is_over_400_lines(name):
    lines = len(ALL_MODULES[name].read_text().splitlines())
    if name in OVER_LONGEST_FILE:
        pytest.skip(f"{name}: {lines} lines, over {LONGEST_FILE} before the rule")
    assert lines <= LONGEST_FILE, f"{ALL_MODULES[name]}: {lines} lines"


def test_no_test_imports_a_private_name():
    # A test that reaches past a module's public names pins its insides; test what the module offers.
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(("ledger", "benchmarks")):
                found += [f"{path.relative_to(ROOT)}: {node.module}.{alias.name}" for alias in node.names
                          if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert found == []
