"""docs/operations.md's watching sections against the code: every metric it names is one the servers or the
jobs write, every metric they write is named there, and its alert rules are valid Prometheus rules (Debian's
promtool checks them when installed)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "operations.md").read_text()
# The watching sections, between their markers: the rest of the page names tables (`ledger_meta`), not metrics.
WATCHING = DOC[DOC.index("<!-- watching: metrics"):DOC.index("<!-- watching: end -->")]
SOURCES = "".join((ROOT / path).read_text() for path in ("web/metrics.py", "web/health.py", "cli/job_metrics.py"))


def test_every_metric_named_is_written_and_every_one_written_is_named():
    written = set(re.findall(r'"(ledger_[a-z_]+)"', SOURCES))
    # A histogram's series are its name with _count, _sum, _bucket.
    named = {re.sub(r"_(count|sum|bucket)$", "", name) if re.sub(r"_(count|sum|bucket)$", "", name) in written
             else name for name in re.findall(r"\bledger_[a-z_]+\b", WATCHING)}
    assert named - written == set() and written - named == set()


def test_the_alert_rules_are_valid(tmp_path):
    rules = DOC.split("```yaml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "rules.yml").write_text(rules)
    assert "ledger_checkpoint_signed_timestamp_seconds" in rules and "ledger_witness_checkpoints_total" in rules
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("Debian's prometheus (promtool) is not installed")
    checked = subprocess.run([promtool, "check", "rules", str(tmp_path / "rules.yml")], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
