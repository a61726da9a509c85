"""The package's face: `import ledger` is cheap, every public name resolves, and the wheel installs one
top-level name, `ledger`, holding the cli, web and projections folders."""

from __future__ import annotations

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
                                                      "verify_record", "history", "evidence_bundle"))
    with pytest.raises(AttributeError, match="no attribute 'Store'"):
        ledger.Store  # noqa: B018 (the access is the test)
    from ledger import core  # a sub-package still imports past __getattr__

    assert core.__name__ == "ledger.core"


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
    assert "ledger/api.py" in names and "ledger/cli/main.py" in names and "ledger/projections/record.py" in names
    templates = sorted(n for n in names if n.startswith("ledger/web/templates/"))
    assert templates == sorted(f"ledger/web/templates/{p.name}" for p in (ROOT / "web/templates").glob("*.html"))
    assert templates and all(n.endswith(".html") for n in templates)


def test_the_api_raises_the_error_families_naming_what_is_wrong(tmp_path):
    from tests.conftest import SEED_004

    with pytest.raises(ledger.InputError, match="no ledger here"):
        ledger.open_ledger(tmp_path / "typo.db")
    store = ledger.create_ledger(tmp_path / "ledger.db")
    try:
        assert ledger.import_files(store, SEED_004).appended == 40  # one path, or a list of them
        assert ledger.import_files(store, [SEED_004]).present == 40
        with pytest.raises(ledger.InputError, match=r"^as_of: not a valid date: '2026-13-01'$"):
            ledger.replay(store, "2407.20018", "2026-13-01")
        with pytest.raises(ledger.NotFoundError, match=r"^no record of arXiv:2407.20018 as of 2026-08-09T23"):
            ledger.replay(store, "2407.20018", "2026-08-09", known_at="2020-01-01")
        with pytest.raises(ledger.NotFoundError, match=r"^no events of 2407.99999 in this ledger$"):
            ledger.history(store, "2407.99999")
        tampered = tmp_path / "tampered.json"
        digest = b"88bbcfe1847497cac1a7e1c3f5aa9530cb1662bfd44d13f772daaeb592ad2687"  # the seed's context digest
        tampered.write_bytes(SEED_004.read_bytes().replace(digest, digest[:-1] + b"8", 1))
        assert tampered.read_bytes() != SEED_004.read_bytes()
        with pytest.raises(ledger.IntegrityError) as found:
            ledger.verify_record(tampered, store)
        assert found.value.problems and all(p.startswith(f"{tampered}: ") for p in found.value.problems)
        assert ledger.verify_record(SEED_004) is None  # no ledger: the digests alone
        key = tmp_path / "ledger.key"
        key.write_text("not a key\n")
        with pytest.raises(ledger.InputError, match=f"^{key}: "):
            ledger.evidence_bundle(store, "2407.20018", "2026-08-09", key)
    finally:
        store.close()
