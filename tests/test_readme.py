"""The README's promises, run: the third-party chain check works on a real export with no ledger code, the
Python example runs as printed, every command and module is named, and the links to docs/ lead somewhere."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SEED_004

README = Path(__file__).parent.parent / "README.md"


def snippet() -> str:
    text = README.read_text()
    return re.search(r"Re-check an exported log.*?```python\n(.*?)```", text, re.S).group(1)


def section(heading: str) -> str:
    """The README's text from `## heading` to the next `## ` heading."""
    text = README.read_text()
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


@pytest.mark.slow
def test_the_readme_snippet_rechecks_an_export_and_prints_the_head(cli, tmp_path):
    assert cli("init").exit_code == 0
    assert cli("import", str(SEED_004)).exit_code == 0
    log = tmp_path / "log.jsonl"
    log.write_bytes(cli("export").stdout_bytes)
    script = tmp_path / "check.py"
    script.write_text(snippet())
    claimed = int(re.search(r"re-checks it in (\d+) lines of Python", README.read_text()).group(1))
    assert len(snippet().strip().splitlines()) == claimed
    # -I: isolated, so the ledger package on this checkout cannot be imported by accident.
    ok = subprocess.run([sys.executable, "-I", str(script), str(log)], capture_output=True, text=True, cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip() == cli("head").stdout.strip()
    lines = log.read_bytes().splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines) if b"pdf_text" in line)
    lines[index] = lines[index].replace(b"pdf_text", b"pdf_texT", 1)
    log.write_bytes(b"".join(lines))
    bad = subprocess.run([sys.executable, "-I", str(script), str(log)], capture_output=True, text=True, cwd=tmp_path)
    assert bad.returncode != 0 and f"entry hash of seq {index + 1}" in bad.stderr


def test_the_readme_lists_every_command():
    from ledger.cli.main import app

    text = README.read_text()
    names = {c.name or c.callback.__name__.rstrip("_") for group in app.registered_groups
             for c in group.typer_instance.registered_commands}
    assert names >= {"init", "import", "replay", "verify", "head", "export", "history", "diff"}
    for name in names:
        assert f"`{name}" in text, name


def test_the_module_map_names_every_module():
    # docs/modules.md (the README links it) must match the tree: a module added or renamed without it fails here.
    from tests.test_layers import MODULES

    map_text = (README.parent / "docs" / "modules.md").read_text()
    missing = []
    for path in MODULES.values():
        relative = path.relative_to(README.parent).as_posix()
        if path.name in ("__init__.py", "__main__.py"):
            continue
        folder = relative.rsplit("/", 1)[0] + "/"
        if f"`{relative}`" not in map_text and not (folder.count("/") > 1 and f"`{folder}`" in map_text):
            missing.append(relative)
    assert missing == []


def test_the_python_example_runs_as_printed_on_the_seed_twice_and_leaves_nothing(tmp_path):
    # Run as the README says: from a folder holding the seed where `ledger keygen` wrote its key; a second run in a
    # row gives the same lines, and neither leaves a file behind.
    code = re.search(r"```python\n(.*?)```", section("Use from Python"), re.S).group(1)
    (tmp_path / "tests" / "fixtures").mkdir(parents=True)
    shutil.copy(SEED_004, tmp_path / "tests" / "fixtures" / SEED_004.name)
    keygen = subprocess.run([sys.executable, "-m", "ledger.cli", "keygen", "example.org/ledger"], cwd=tmp_path,
                            capture_output=True, text=True)
    assert keygen.returncode == 0, keygen.stderr
    (tmp_path / "example.py").write_text(code)
    before = sorted(path for path in tmp_path.rglob("*"))
    for _ in range(2):
        done = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True,
                              timeout=120)
        assert (done.returncode, done.stderr) == (0, ""), done.stderr
        assert done.stdout.splitlines() == [
            "appended 40 events",
            "True sha256:88bbcfe1847497cac1a7e1c3f5aa9530cb1662bfd44d13f772daaeb592ad2687",
            "40 events in the paper's history",
            "40 events in the bundle at tree size 40",
            "exit 1 no record of arXiv:2407.20018 as of 2020-01-01T23:59:59.999999Z",
        ]
        assert sorted(path for path in tmp_path.rglob("*")) == before


def test_every_link_of_the_readme_to_a_file_of_the_repository_leads_to_one():
    root = README.parent
    targets = set(re.findall(r"\]\(([^)#:]+)\)", README.read_text()))
    assert {"docs/running.md", "docs/proofs.md", "docs/paper-index.md", "docs/publishing.md"} <= targets
    assert sorted(t for t in targets if not (root / t).exists()) == []


def test_the_readme_stays_under_3500_words():
    # The first hour reads it whole; the module map, the formats' detail and the how-tos live in docs/.
    assert len(README.read_text().split()) <= 3500
