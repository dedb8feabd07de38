"""A state's time is ISO-8601 or nothing and never goes backwards: refused on insert, naming the field."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from runbook.cli import main
from runbook.errors import InputError
from runbook.store import Store
from runbook.trajectory.model import trajectory_from_dict
from runbook.trajectory.readers.content_form import from_content_form
from runbook.trajectory.times import check_timestamp


def trajectory(*times):
    return {"id": "t-1", "states": [{"url": f"http://shop/{n}", "timestamp": t} for n, t in enumerate(times)]}


@pytest.mark.parametrize(
    "times,field",
    [
        (["yesterday"], "states[0].timestamp"),
        (["2025-12-16T06:00:00Z", "2025-13-01T00:00:00Z"], "states[1].timestamp"),
        (["2025-12-16T06:00:00Z", "2025-12-16T05:59:59Z"], "states[1].timestamp"),
        (["2025-12-16T06:00:00+00:00", None, "2025-12-16T07:00:00+02:00"], "states[2].timestamp"),
        ([True], "states[0].timestamp"),
    ],
)
def test_a_bad_or_backwards_time_is_an_error_naming_the_field(times, field):
    with pytest.raises(InputError) as refused:
        trajectory_from_dict(trajectory(*times))
    assert refused.value.field == field
    assert "ISO-8601" in str(refused.value) or "earlier than" in str(refused.value) or "string" in str(refused.value)


def test_well_formed_times_are_kept_as_written_and_unix_seconds_are_converted():
    kept = trajectory_from_dict(trajectory("2025-12-16T06:00:00.000Z", None, "2025-12-16 06:01", 1765865000.5))
    assert [s.timestamp for s in kept.states] == [
        "2025-12-16T06:00:00.000Z",
        None,
        "2025-12-16 06:01",
        "2025-12-16T06:03:20.500Z",
    ]
    assert check_timestamp("", field="timestamp", where={}) is None


def test_the_content_form_checks_times_too():
    obj = {
        "id": "c-1",
        "metadata": {"original_goal": "x"},
        "content": [{"url": "http://a", "observation": {"text": "t"}, "timestamp": "last week"}],
    }
    with pytest.raises(InputError) as refused:
        from_content_form(obj)
    assert refused.value.field == "content[0].timestamp"


def test_runbook_insert_refuses_a_time_that_is_not_iso_and_writes_nothing(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(trajectory("2025-12-16T06:00:00Z", "yesterday")) + "\n")
    result = CliRunner().invoke(main, ["--store", str(tmp_path / "s"), "insert", str(src)])
    assert result.exit_code == 1
    assert "states[1].timestamp" in result.output and "'yesterday' is not an ISO-8601 time" in result.output
    assert not (tmp_path / "s" / "trajectories" / "t-1").exists()


def test_a_store_written_before_times_were_checked_still_loads(store):
    with store.writer() as writer:
        writer.insert(trajectory_from_dict(trajectory("2025-12-16T06:00:00Z")))
    folder = store.trajectory_dir("t-1") / "trajectory.json"
    obj = json.loads(folder.read_text())
    obj["states"][0]["timestamp"] = "yesterday"
    folder.write_text(json.dumps(obj))
    assert Store(store.root).load("t-1").states[0].timestamp == "yesterday"
