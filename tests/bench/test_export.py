"""`runbook export lme-v2`: a store and question sets in LongMemEval-V2's data layout, read back the way the
harness's data/public_data.py validates and loads it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from runbook.bench.export import export_lme_v2
from runbook.errors import InputError
from runbook.store import Store
from runbook.trajectory.model import trajectory_from_dict
from tests.bench.conftest import PNG_BYTES, questions, trajectories

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def store(tmp_path) -> Store:
    store = Store(tmp_path / "store", create=True)
    (tmp_path / "shots").mkdir()
    (tmp_path / "shots" / "1.png").write_bytes(PNG_BYTES)
    with store.writer() as writer:
        for obj in trajectories():
            if obj["id"] == "t-cancel":
                obj["states"][1]["screenshot"] = "shots/1.png"
            writer.insert(trajectory_from_dict(obj, base_dir=str(tmp_path)))
    return store


@pytest.fixture
def question_file(tmp_path) -> Path:
    path = tmp_path / "qs" / "questions_dev_shop.jsonl"
    (path.parent / "shop" / "screenshots").mkdir(parents=True)
    (path.parent / "shop" / "screenshots" / "q.png").write_bytes(PNG_BYTES)
    rows = [q | {"set": "shop"} for q in questions()]
    rows[0]["image"] = "screenshots/q.png"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def validate_as_the_harness_does(root: Path) -> None:
    """data/public_data.validate_public_data's checks."""
    qs = [json.loads(line) for line in (root / "questions.jsonl").read_text().splitlines()]
    trajs = {}
    for line in (root / "trajectories.jsonl").read_text().splitlines():
        obj = json.loads(line)
        assert obj["id"] not in trajs
        trajs[obj["id"]] = obj
    haystack = json.loads((root / "haystacks" / "lme_v2_small.json").read_text())
    assert set(haystack) == {q["id"] for q in qs}
    for q in qs:
        assert q["domain"] in ("web", "enterprise") and q["question"].strip()
        assert q["image"] is None or (root / q["image"]).is_file()
        assert all(trajs[t]["domain"] == q["domain"] for t in haystack[q["id"]])
        assert len(set(haystack[q["id"]])) == len(haystack[q["id"]])
    for obj in trajs.values():
        for state in obj["states"]:
            assert state["screenshot"] is None or (root / state["screenshot"]).is_file()


def test_a_store_and_its_questions_in_the_harness_layout(store, question_file, tmp_path):
    report = export_lme_v2(store, tmp_path / "out", questions=[question_file])
    assert (report.trajectories, report.questions, report.screenshots) == (4, 4, 1)
    validate_as_the_harness_does(tmp_path / "out")
    rows = [json.loads(line) for line in (tmp_path / "out" / "trajectories.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["t-cancel", "t-old-price", "t-new-price", "t-filters"]
    assert rows[0]["states"][1]["screenshot"] == "screenshots/t-cancel/0001.png"
    assert (tmp_path / "out" / "screenshots" / "t-cancel" / "0001.png").read_bytes() == PNG_BYTES
    # and runbook reads its own export back as LongMemEval-V2 data, states and screenshots included
    again = trajectory_from_dict(rows[0], base_dir=str(tmp_path / "out"))
    assert Path(again.states[1].screenshot).read_bytes() == PNG_BYTES


def test_the_command_writes_the_same(store, question_file, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "runbook.cli", "--store", str(store.root), "export", "lme-v2"]
    done = subprocess.run(
        [*command, str(tmp_path / "out"), "--questions", str(question_file)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "4 trajectories" in done.stdout and "4 questions" in done.stdout
    validate_as_the_harness_does(tmp_path / "out")


def test_a_bad_question_is_named_and_nothing_is_written(store, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(questions()[0]) + "\n" + json.dumps({"id": "q-2", "question": "?"}) + "\n")
    with pytest.raises(InputError, match=r"bad\.jsonl:2: question 'q-2' has no string field 'question_type'"):
        export_lme_v2(store, tmp_path / "out", questions=[bad])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl", "shots", "store"]


def test_an_export_never_writes_into_a_folder_with_files(store, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    with pytest.raises(InputError, match="not an empty folder"):
        export_lme_v2(store, tmp_path / "out")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["keep.txt"]


def load_as_the_harness_memories_do(root: Path) -> int:
    """memory_modules/trajectory_store.prepare_trajectory_insert's checks (LongMemEval-V2 at be15ea6), which its
    built-in memories (AgentRunbook-R, RAG, Codex) run on every trajectory they insert; the trajectories loaded."""
    loaded = 0
    for line in (root / "trajectories.jsonl").read_text().splitlines():
        trajectory = json.loads(line)
        assert isinstance(trajectory["id"], str) and trajectory["id"]
        assert isinstance(trajectory["goal"], str)
        assert isinstance(trajectory["start_url"], str) and trajectory["start_url"].strip()
        assert trajectory["outcome"] is None or isinstance(trajectory["outcome"], str)
        for state in trajectory["states"]:
            assert isinstance(state["url"], str) and state["url"].strip()
            assert state["action"] is None or isinstance(state["action"], str)
            assert state.get("thought") is None or isinstance(state.get("thought"), str)
            assert isinstance(state.get("accessibility_tree", state.get("text")), str)
            shot = state["screenshot"]
            assert isinstance(shot, str) and shot.strip(), "screenshot must be a non-empty string"
            assert (root / shot).exists() or (root / "screenshots" / shot).exists()
        loaded += 1
    return loaded


def test_states_without_a_screenshot_name_an_image_the_harness_memories_load(store, tmp_path):
    report = export_lme_v2(store, tmp_path / "out")
    assert load_as_the_harness_memories_do(tmp_path / "out") == 4
    rows = [json.loads(line) for line in (tmp_path / "out" / "trajectories.jsonl").read_text().splitlines()]
    placeholders = [s for r in rows for s in r["states"] if s["screenshot"] == "screenshots/no-screenshot.png"]
    assert len(placeholders) == report.placeholders == report.states - 1
    assert f"{report.placeholders} states had no screenshot" in report.summary()
    with Image.open(tmp_path / "out" / "screenshots" / "no-screenshot.png") as image:
        assert image.size == (640, 48)
    again = trajectory_from_dict(rows[1], base_dir=str(tmp_path / "out"))  # runbook reads it back as none
    assert [s.screenshot for s in again.states] == [None] * len(again.states)


def test_a_trajectory_the_harness_memories_refuse_is_left_out_and_named(store, tmp_path):
    obj = trajectories()[0] | {"id": "no-url"}
    obj["states"][1]["url"] = ""
    with store.writer() as writer:
        writer.insert(trajectory_from_dict(obj, base_dir=str(tmp_path)))
    report = export_lme_v2(store, tmp_path / "out")
    assert load_as_the_harness_memories_do(tmp_path / "out") == 4
    assert report.left_out == ["no-url: state 1 has no url"] and "no-url: state 1 has no url" in report.summary()


def test_a_screenshot_planted_as_a_link_is_not_exported(store, tmp_path):
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$secret")
    secret.chmod(0o640)
    shot = store.trajectory_dir("t-cancel") / "screenshots" / "0001.png"
    shot.unlink()
    os.symlink(secret, shot)
    report = export_lme_v2(store, tmp_path / "out")
    copied = [p for p in (tmp_path / "out").rglob("*") if p.is_file() and b"secret" in p.read_bytes()]
    assert copied == []
    assert report.unsafe == ["trajectories/t-cancel/screenshots/0001.png"] and report.screenshots == 0
    assert "1 store files left out" in report.summary()
    assert load_as_the_harness_memories_do(tmp_path / "out") == 4


def test_screenshots_keep_the_store_files_modes(store, tmp_path):
    shot = store.trajectory_dir("t-cancel") / "screenshots" / "0001.png"
    shot.chmod(0o600)
    export_lme_v2(store, tmp_path / "out")
    exported = tmp_path / "out" / "screenshots" / "t-cancel" / "0001.png"
    assert exported.read_bytes() == PNG_BYTES and (exported.stat().st_mode & 0o777) == 0o600


@pytest.mark.parametrize("inside", ["trajectories/x", "", "pools/out"])
def test_an_export_inside_the_store_is_refused(store, tmp_path, inside):
    before = sorted(p.name for p in (store.root / "trajectories").iterdir())
    with pytest.raises(InputError, match="lies inside the store"):
        export_lme_v2(store, store.root / inside)
    assert sorted(p.name for p in (store.root / "trajectories").iterdir()) == before
    assert not (store.root / "pools" / "out").exists()
