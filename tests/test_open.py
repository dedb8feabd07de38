"""runbook.open, the README's library example, from a relative path as a new user writes it."""

from __future__ import annotations

import inspect

import pytest

import runbook
from runbook.budget import DEFAULT_BUDGET, MAX_BUDGET, parse_budget
from runbook.errors import BudgetError, StoreError
from runbook.memory import DEFAULT_METHOD, METHODS, memory_class
from tests.conftest import make_trajectory

PRICE_PAGE = "RootWebArea 'Edit Product'\n\t[900] textbox 'Price' value='$24.00'\n\tStaticText 'Quest Lumaflex Band'"


def test_the_readme_library_example_runs_from_a_relative_path(tmp_path, clean_env, monkeypatch):
    """Item 2 of issue 24: runbook.open(".runbook").query(...) raised FileNotFoundError for any relative path."""
    monkeypatch.chdir(tmp_path)
    memory = runbook.open(".runbook", create=True)
    memory.insert(make_trajectory("lib-2", 3, texts=["'Dashboard'", "'Catalog'", PRICE_PAGE]))
    context = runbook.open(".runbook").query("What price does the admin list for Quest Lumaflex Band?", budget=2000)
    assert any(item.trajectory_id == "lib-2" and "$24.00" in item.text for item in context.items)
    assert runbook.Store(".runbook").root == tmp_path / ".runbook"


def test_open_refuses_a_missing_store_as_the_cli_and_the_servers_do(tmp_path, clean_env):
    """Item 7 of issue 34: runbook.open("/tmp/nope") silently created a store there."""
    with pytest.raises(StoreError, match="create=True"):
        runbook.open(tmp_path / "nope")
    assert not (tmp_path / "nope").exists()
    assert runbook.open(tmp_path / "new", create=True).store.root == tmp_path / "new"


def test_the_library_takes_the_same_defaults_and_ceiling_as_the_cli_and_the_servers(tmp_path, clean_env):
    """Item 7 of issue 34: the library defaulted to method r and had no default budget (the CLI and the servers:
    auto, 8k); item 5 of issue 33: a budget had no ceiling."""
    memory = runbook.open(tmp_path / "store", create=True)
    assert memory.name == DEFAULT_METHOD == "auto"
    for name in METHODS:  # every method's query takes the default budget, as a number or as text
        budget = inspect.signature(memory_class(name).query).parameters["budget"]
        assert budget.default == DEFAULT_BUDGET, name
    memory.insert(make_trajectory("lib-3", 3, texts=["'Dashboard'", "'Catalog'", PRICE_PAGE]))
    r = runbook.open(tmp_path / "store", method="r")
    assert r.query("What price does the admin list for Quest Lumaflex Band?").budget == parse_budget(DEFAULT_BUDGET)
    assert r.query("What price does the admin list for Quest Lumaflex Band?", budget="1.5k").budget == 1500
    for too_much in (MAX_BUDGET + 1, "999999999999999999999k", "2m"):
        with pytest.raises(BudgetError, match="maximum of 1,000,000"):
            r.query("What price does the admin list for Quest Lumaflex Band?", budget=too_much)
