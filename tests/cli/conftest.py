"""Ledgers the CLI tests start from, in the test's own working directory (so relative paths are the user's)."""

from __future__ import annotations

import pytest

from tests.conftest import SEED_004


@pytest.fixture
def seeded(cli, tmp_path, monkeypatch):
    """Seed 004 imported into a new ledger, the working directory the test's own."""
    monkeypatch.chdir(tmp_path)
    assert cli("init").exit_code == 0
    assert cli("import", str(SEED_004)).exit_code == 0
    return cli


@pytest.fixture
def keyed(seeded):
    """`seeded`, and `ledger.key` / `ledger.vkey` written by keygen there."""
    made = seeded("keygen", "example.org/ledger")
    assert made.exit_code == 0, made.stderr
    return seeded
