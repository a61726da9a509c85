"""The README's promises, run: the third-party chain check works on a real export with no ledger code."""

import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import SEED_004

README = Path(__file__).parent.parent / "README.md"


def snippet() -> str:
    text = README.read_text()
    return re.search(r"Re-check an exported log.*?```python\n(.*?)```", text, re.S).group(1)


def test_the_readme_snippet_rechecks_an_export_and_prints_the_head(cli, tmp_path):
    assert cli("init").exit_code == 0
    assert cli("import", str(SEED_004)).exit_code == 0
    log = tmp_path / "log.jsonl"
    log.write_bytes(cli("export").stdout_bytes)
    script = tmp_path / "check.py"
    script.write_text(snippet())
    assert len(snippet().strip().splitlines()) <= 16
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


def test_the_readme_map_names_every_module():
    # The map at the README's top must match the tree: a module added or renamed without it fails here.
    from tests.test_layers import MODULES

    text = README.read_text()
    map_text = text[text.index("## Map of the modules"):text.index("## Commands")]
    missing = []
    for name, path in MODULES.items():
        relative = path.relative_to(README.parent).as_posix()
        if path.name in ("__init__.py", "__main__.py"):
            continue
        folder = relative.rsplit("/", 1)[0] + "/"
        if f"`{relative}`" not in map_text and not (folder.count("/") > 1 and f"`{folder}`" in map_text):
            missing.append(relative)
    assert missing == []
