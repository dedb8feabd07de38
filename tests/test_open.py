"""runbook.open, the README's library example, from a relative path as a new user writes it."""

from __future__ import annotations

import runbook
from tests.conftest import make_trajectory

PRICE_PAGE = "RootWebArea 'Edit Product'\n\t[900] textbox 'Price' value='$24.00'\n\tStaticText 'Quest Lumaflex Band'"


def test_the_readme_library_example_runs_from_a_relative_path(tmp_path, clean_env, monkeypatch):
    """Item 2 of issue 24: runbook.open(".runbook").query(...) raised FileNotFoundError for any relative path."""
    monkeypatch.chdir(tmp_path)
    memory = runbook.open(".runbook")
    memory.insert(make_trajectory("lib-2", 3, texts=["'Dashboard'", "'Catalog'", PRICE_PAGE]))
    context = runbook.open(".runbook").query("What price does the admin list for Quest Lumaflex Band?", budget=2000)
    assert any(item.trajectory_id == "lib-2" and "$24.00" in item.text for item in context.items)
    assert runbook.Store(".runbook").root == tmp_path / ".runbook"
