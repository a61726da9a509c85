"""The package's face: `import ledger` is cheap, every public name resolves, and the wheel installs one
top-level name, `ledger`, holding the cli, web and projections folders."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import ledger

ROOT = Path(__file__).resolve().parent.parent


def test_importing_the_package_loads_none_of_its_modules_nor_a_heavy_dependency():
    # Every module of the project imports `ledger` first: it must cost nothing beyond itself.
    script = ("import sys, ledger; print(sorted(m for m in sys.modules if m.split('.')[0] in "
              "('ledger', 'typer', 'click', 'sqlalchemy', 'sqlmodel', 'orjson', 'blake3', 'fastapi')))")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True)
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "['ledger']", "")


def test_every_public_name_resolves_and_nothing_else_does():
    from ledger.core import errors

    assert ledger.__all__[0] == "__version__" and len(set(ledger.__all__)) == len(ledger.__all__)
    for name in ledger.__all__:
        assert getattr(ledger, name) is not None, name
    assert set(ledger.__all__) <= set(dir(ledger))
    assert [getattr(ledger, n) for n in ("LedgerError", "InputError", "IntegrityError", "StoreError",
                                         "NotFoundError")] == [errors.LedgerError, errors.InputError,
                                                               errors.IntegrityError, errors.StoreError,
                                                               errors.NotFoundError]
    assert all(callable(getattr(ledger, n)) for n in ("open_ledger", "create_ledger", "import_files", "replay",
                                                      "verify_record", "history", "evidence_bundle", "Ledger"))
    assert all(isinstance(getattr(ledger, n), type) for n in ("ImportResult", "Head", "HistoryRow", "EvidenceBundle"))
    with pytest.raises(AttributeError, match="no attribute 'Store'"):
        ledger.Store  # noqa: B018 (the access is the test)
    from ledger import core  # a sub-package still imports past __getattr__

    assert core.__name__ == "ledger.core"


def test_type_checkers_see_every_public_name_and_nothing_else():
    # ledger/__init__.py re-exports each name for type checkers (under TYPE_CHECKING) apart from its lazy table.
    from importlib import import_module

    tree = ast.parse(Path(ledger.__file__).read_text())
    [block] = [node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"]
    seen = {alias.asname: getattr(import_module(node.module), alias.name) for node in block.body
            for alias in node.names}
    assert sorted(seen) == sorted(ledger.__all__[1:])
    assert [name for name, value in seen.items() if getattr(ledger, name) is not value] == []
    assert "ledger/py.typed" in {p.relative_to(ROOT).as_posix() for p in (ROOT / "ledger").glob("py.typed")}


@pytest.mark.slow
def test_the_wheel_installs_one_top_level_package_holding_cli_web_and_projections(tmp_path):
    # Built from a copy of the sources: setuptools' build/ in the work tree would carry files since deleted.
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info", "__pycache__",
                                                                ".pytest_cache", ".hypothesis", "*.db*"))
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                           "--disable-pip-version-check", "-q", "-w", str(tmp_path / "dist"), "."],
                          cwd=source, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    [wheel] = (tmp_path / "dist").glob("ledger-*.whl")
    assert wheel.name.startswith(f"ledger-{ledger.__version__}-")
    names = zipfile.ZipFile(wheel).namelist()
    assert sorted({n.split("/")[0] for n in names}) == ["ledger", f"ledger-{ledger.__version__}.dist-info"]
    assert "ledger/api.py" in names and "ledger/py.typed" in names and "ledger/cli/main.py" in names and "ledger/projections/record.py" in names
    templates = sorted(n for n in names if n.startswith("ledger/web/templates/"))
    assert templates == sorted(f"ledger/web/templates/{p.name}" for p in (ROOT / "web/templates").glob("*.html"))
    assert templates and all(n.endswith(".html") for n in templates)


def test_the_api_raises_the_error_families_naming_what_is_wrong(tmp_path):
    from tests.conftest import SEED_004

    with pytest.raises(ledger.InputError, match="no ledger here"):
        ledger.open_ledger(tmp_path / "typo.db")
    book = ledger.create_ledger(tmp_path / "ledger.db")
    try:
        assert ledger.import_files(book, SEED_004).appended == 40  # one path, or a list of them
        assert ledger.import_files(book, [SEED_004]).present == 40
        with pytest.raises(ledger.InputError, match=f"^{tmp_path / 'ledger.db'}: already exists; a ledger is created only once$"):
            ledger.create_ledger(tmp_path / "ledger.db")
        with pytest.raises(ledger.InputError, match=r"^as_of: not a valid date: '2026-13-01'$"):
            ledger.replay(book, "2407.20018", "2026-13-01")
        with pytest.raises(ledger.NotFoundError, match=r"^no record of arXiv:2407.20018 as of 2026-08-09T23"):
            ledger.replay(book, "2407.20018", "2026-08-09", known_at="2020-01-01")
        with pytest.raises(ledger.NotFoundError, match=r"^no events of 2407.99999 in this ledger$"):
            ledger.history(book, "2407.99999")
        tampered = tmp_path / "tampered.json"
        digest = b"88bbcfe1847497cac1a7e1c3f5aa9530cb1662bfd44d13f772daaeb592ad2687"  # the seed's context digest
        tampered.write_bytes(SEED_004.read_bytes().replace(digest, digest[:-1] + b"8", 1))
        assert tampered.read_bytes() != SEED_004.read_bytes()
        with pytest.raises(ledger.IntegrityError) as found:
            ledger.verify_record(tampered, book)
        assert found.value.problems and all(p.startswith(f"{tampered}: ") for p in found.value.problems)
        assert ledger.verify_record(SEED_004) is None  # no ledger: the digests alone
        key = tmp_path / "ledger.key"
        key.write_text("not a key\n")
        with pytest.raises(ledger.InputError, match=f"^{key}: "):
            ledger.evidence_bundle(book, "2407.20018", "2026-08-09", key)
    finally:
        book.close()


def test_the_api_gives_a_closeable_handle_and_typed_results_as_the_commands_give_them(tmp_path, monkeypatch,
                                                                                      ledger_location, cli):
    from tests.conftest import AS_OF_004, PAPER_004, SEED_004

    monkeypatch.chdir(tmp_path)
    assert cli("keygen", "example.org/ledger").exit_code == 0
    with ledger.create_ledger(ledger_location) as book:
        assert type(book) is ledger.Ledger and [n for n in dir(book) if not n.startswith("_")] == ["close", "location"]
        result = ledger.import_files(book, SEED_004)
        again = cli("import", "--json", str(SEED_004))
        assert (again.exit_code, again.stderr) == (0, "")
        head = json.loads(again.stdout)["head"]
        assert result == ledger.ImportResult(40, 0, ledger.Head(head["seq"], head["chain_hash"]))
        seq, chain_hash = result.head  # still unpacks as a pair
        assert (seq, chain_hash[:7]) == (40, "blake3:")

        rows = ledger.history(book, PAPER_004)
        shown = cli("history", PAPER_004, "--json")
        assert rows == json.loads(shown.stdout) and len(rows) == 40
        assert {frozenset(row) for row in rows} == {ledger.HistoryRow.__required_keys__}

        bundle = ledger.evidence_bundle(book, PAPER_004, AS_OF_004, "ledger.key")
        made = cli("replay", "--paper", PAPER_004, "--as-of", AS_OF_004, "--evidence", "b.json", "--key", "ledger.key")
        assert made.exit_code == 0, made.stderr
        assert ledger.canonical(bundle) == (tmp_path / "b.json").read_bytes()
        assert set(bundle) == ledger.EvidenceBundle.__required_keys__
        known = ledger.evidence_bundle(book, PAPER_004, AS_OF_004, "ledger.key",
                                       known_at=max(row["recorded_at"] for row in rows))
        assert set(known) == ledger.EvidenceBundle.__required_keys__ | ledger.EvidenceBundle.__optional_keys__
        assert ledger.replay(book, PAPER_004, AS_OF_004) == bundle["record"]  # a plain dict: its bytes are the contract
        assert type(bundle["record"]) is dict and ledger.canonical(bundle["record"]) == SEED_004.read_bytes()
        location = book.location
    assert repr(book) == f"<ledger.Ledger {location!r} closed>"
    book.close()  # twice: nothing
    for call in (lambda: ledger.replay(book, PAPER_004, AS_OF_004), lambda: ledger.history(book, PAPER_004),
                 lambda: ledger.import_files(book, []), lambda: ledger.verify_record(SEED_004, book)):
        with pytest.raises(ledger.InputError, match=f"^{re.escape(location)}: this ledger is closed$"):
            call()
    with ledger.open_ledger(ledger_location) as reopened:
        assert ledger.import_files(reopened, [SEED_004]).present == 40
