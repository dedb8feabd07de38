"""LongMemEval-V2's `states` form is read as leniently as the harness's own loader reads it
(memory_modules/trajectory_store.py: a state's position is its index, `step` is the recorder's numbering, and a
relative screenshot is looked for under the data root and under its screenshots/ folder)."""

from __future__ import annotations

from pathlib import Path

import pytest

from runbook.errors import InputError
from runbook.trajectory.model import trajectory_from_dict
from tests.bench.conftest import PNG_BYTES


def states_form(states: list[dict]) -> dict:
    return {"id": "wa-1", "domain": "web", "goal": "g", "start_url": "http://a/", "outcome": None, "states": states}


def test_a_step_numbered_from_one_is_not_an_index():
    obj = states_form([{"step": 1, "url": "http://a/"}, {"step": 2, "url": "http://a/b"}])
    trajectory = trajectory_from_dict(obj)
    assert [s.index for s in trajectory.states] == [0, 1]
    assert [s.url for s in trajectory.states] == ["http://a/", "http://a/b"]


def test_state_index_still_says_where_a_state_is_out_of_order():
    obj = states_form([{"state_index": 1, "step": 1, "url": "http://a/"}])
    with pytest.raises(InputError, match="expected 0"):
        trajectory_from_dict(obj)


def test_a_screenshot_is_also_looked_for_under_screenshots(tmp_path: Path):
    (tmp_path / "screenshots" / "wa-1").mkdir(parents=True)
    (tmp_path / "screenshots" / "wa-1" / "1.png").write_bytes(PNG_BYTES)
    obj = states_form([{"state_index": 0, "step": 1, "url": "http://a/", "screenshot": "wa-1/1.png"}])
    trajectory = trajectory_from_dict(obj, base_dir=str(tmp_path))
    assert trajectory.states[0].screenshot == str((tmp_path / "screenshots" / "wa-1" / "1.png").resolve())


def test_a_screenshot_under_screenshots_is_still_confined(tmp_path: Path):
    data = tmp_path / "data"
    (data / "screenshots").mkdir(parents=True)
    (tmp_path / "outside.png").write_bytes(PNG_BYTES)
    (data / "screenshots" / "1.png").symlink_to(tmp_path / "outside.png")
    obj = states_form([{"state_index": 0, "url": "http://a/", "screenshot": "1.png"}])
    with pytest.raises(InputError, match="outside"):
        trajectory_from_dict(obj, base_dir=str(data))
