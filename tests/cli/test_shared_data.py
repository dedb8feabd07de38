"""Acceptance on the real shared data: 928 trajectories, 8,537 states, 734 screenshots; a re-run is a no-op."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from tests.conftest import require_shared


@pytest.mark.slow
def test_insert_shared_data_then_rerun_then_grep(tmp_path):
    data = require_shared()
    store = tmp_path / "store"
    cli = [sys.executable, "-m", "runbook.cli", "--store", str(store)]
    sources = [str(data / "webarena/trajectories.jsonl.gz"), str(data / "infinity/trajectories.jsonl.gz")]
    first = subprocess.run(cli + ["insert", *sources], capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("928 inserted, 0 unchanged, 0 refused, 8,537 states")
    stats = json.loads(subprocess.run(cli + ["stats", "--json"], capture_output=True, text=True).stdout)
    assert (stats["trajectories"], stats["states"], stats["screenshots"]) == (928, 8537, 734)
    second = subprocess.run(cli + ["insert", *sources], capture_output=True, text=True, timeout=600)
    assert second.returncode == 0 and second.stdout.startswith("0 inserted, 928 unchanged, 0 refused")
    rg = shutil.which("rg")
    assert rg, "ripgrep must be installed"
    hits = subprocess.run(
        [rg, "-l", "-g", "*.md", "WS05-XS-Black", str(store / "trajectories")], capture_output=True, text=True
    )
    paths = hits.stdout.split()
    assert paths and all("/trajectories/wa-shopping_admin-" in p and "/states/" in p for p in paths)
    assert any(p.endswith("wa-shopping_admin-782/states/0009.md") for p in paths)
