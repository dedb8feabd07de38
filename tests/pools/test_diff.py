"""The event diff on real consecutive states, and on pages whose element ids were renumbered."""

import gzip
import json

from runbook.pools.diff import diff_pages
from tests.conftest import require_shared


def _states(trajectory_id: str) -> list[dict]:
    path = require_shared() / "webarena" / "trajectories.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if f'"id": "{trajectory_id}"' in line[:200]:
                return json.loads(line)["states"]
    raise AssertionError(f"{trajectory_id} is not in the shared data at {path}: not the data these tests expect")


def test_cancel_confirmation_appears_and_buttons_disappear():
    states = _states("wa-shopping_admin-474")
    change = diff_pages(states[6]["accessibility_tree"], states[7]["accessibility_tree"])
    assert "'You canceled the order.'" in change.appeared
    assert any("Canceled" in line for line in change.appeared)
    assert "button 'Cancel'" in change.disappeared  # the order can no longer be canceled
    assert not any("[" in line and "]" in line and line.lstrip().startswith("[") for line in change.appeared)


def test_dialog_opens_on_cancel_click():
    states = _states("wa-shopping_admin-474")
    change = diff_pages(states[5]["accessibility_tree"], states[6]["accessibility_tree"])
    assert "'Are you sure you want to cancel this order?'" in change.appeared
    assert "button 'OK', focused" in change.appeared


def test_renumbered_ids_are_no_change():
    before = "RootWebArea 'Orders'\n\t[12] button 'Search'\n\t\tStaticText 'Search'\n\t[13] link 'View'"
    after = "RootWebArea 'Orders'\n\t[92] button 'Search'\n\t\tStaticText 'Search'\n\t[93] link 'View'"
    assert diff_pages(before, after).empty


def test_repeated_lines_count_as_a_multiset():
    change = diff_pages("a 'x'\nrow 'one'", "a 'x'\nrow 'one'\nrow 'one'")
    assert change.appeared == ["row 'one'"] and change.disappeared == []
