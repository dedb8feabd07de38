"""Screenshots are confined to their source's folder (or an explicit screenshot root) and must be real images,
in every reader: a trajectory file must not be able to copy a host file into the store."""

from __future__ import annotations

import json
import os
from pathlib import Path

from PIL import Image

from runbook.errors import InputError
from runbook.trajectory.model import Trajectory
from runbook.trajectory.readers import browser_use, browsergym, jsonl


def _png(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (4, 3), (10, 120, 30)).save(path)
    return path


def _outside_image(tmp_path: Path) -> Path:
    """A real image the source must not reach: beside, not inside, the source's folder."""
    return _png(tmp_path / "private" / "secret.png")


def _jsonl(folder: Path, shot: str, tid: str = "t-1") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    doc = {
        "id": tid,
        "states": [{"state_index": 0, "url": "http://a/"}, {"state_index": 1, "url": "http://a/b", "screenshot": shot}],
    }
    path = folder / "in.jsonl"
    path.write_text(json.dumps(doc) + "\n")
    return path


def _lme(folder: Path, shot: str, tid: str = "lme-1") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    doc = {
        "id": tid,
        "metadata": {"original_goal": "g"},
        "content": [{"url": "http://a/", "observation": {"text": "x", "screenshot": shot}}],
    }
    path = folder / "trajectories.jsonl"
    path.write_text(json.dumps(doc) + "\n")
    return path


def _read_one(path: Path, **options):
    items = list(jsonl.read(path, **options))
    assert len(items) == 1, items
    return items[0]


def _refused(item, *, field: str, says: str, tid: str = "t-1") -> InputError:
    assert isinstance(item, InputError), f"expected a refusal, got {item!r}"
    assert (item.trajectory_id, item.field) == (tid, field)
    assert says in str(item), str(item)
    return item


# --- JSONL: every way out of the folder is refused -------------------------------------------------------------


def test_dot_dot_segments_out_of_the_folder_are_refused(tmp_path):
    _outside_image(tmp_path)
    item = _read_one(_jsonl(tmp_path / "src", "../private/secret.png"))
    err = _refused(item, field="states[1].screenshot", says="outside")
    assert str(tmp_path / "src") in str(err) and "--screenshot-root" in str(err)


def test_etc_passwd_is_refused_before_anything_is_read(tmp_path):
    item = _read_one(_jsonl(tmp_path / "src", "../../../../../../../../etc/passwd"))
    _refused(item, field="states[1].screenshot", says="outside")


def test_an_absolute_path_outside_the_folder_is_refused(tmp_path):
    secret = _outside_image(tmp_path)
    _refused(_read_one(_jsonl(tmp_path / "src", str(secret))), field="states[1].screenshot", says="outside")


def test_an_absolute_path_inside_the_folder_is_accepted(tmp_path):
    shot = _png(tmp_path / "src" / "shots" / "1.png")
    traj = _read_one(_jsonl(tmp_path / "src", str(shot)))
    assert isinstance(traj, Trajectory) and traj.states[1].screenshot == str(shot.resolve())


def test_a_symlink_inside_the_folder_pointing_out_is_refused(tmp_path):
    secret = _outside_image(tmp_path)
    (tmp_path / "src" / "shots").mkdir(parents=True)
    os.symlink(secret, tmp_path / "src" / "shots" / "1.png")
    _refused(_read_one(_jsonl(tmp_path / "src", "shots/1.png")), field="states[1].screenshot", says="outside")


def test_a_symlinked_folder_inside_the_source_pointing_out_is_refused(tmp_path):
    _outside_image(tmp_path)
    (tmp_path / "src").mkdir()
    os.symlink(tmp_path / "private", tmp_path / "src" / "shots")
    _refused(_read_one(_jsonl(tmp_path / "src", "shots/secret.png")), field="states[1].screenshot", says="outside")


def test_a_symlink_that_stays_inside_the_folder_is_followed(tmp_path):
    real = _png(tmp_path / "src" / "all" / "a.png")
    os.symlink(real, tmp_path / "src" / "link.png")
    traj = _read_one(_jsonl(tmp_path / "src", "link.png"))
    assert traj.states[1].screenshot == str(real.resolve())


def test_a_file_that_is_not_an_image_is_refused(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "notes.png").write_text("root:x:0:0:root:/root:/bin/bash\n")
    _refused(_read_one(_jsonl(tmp_path / "src", "notes.png")), field="states[1].screenshot", says="not an image")


def test_a_truncated_image_is_refused(tmp_path):
    shot = _png(tmp_path / "src" / "cut.png")
    shot.write_bytes(shot.read_bytes()[:30])
    _refused(_read_one(_jsonl(tmp_path / "src", "cut.png")), field="states[1].screenshot", says="not an image")


def test_a_fifo_is_refused_without_blocking(tmp_path):
    (tmp_path / "src").mkdir()
    os.mkfifo(tmp_path / "src" / "pipe.png")
    _refused(_read_one(_jsonl(tmp_path / "src", "pipe.png")), field="states[1].screenshot", says="not a regular file")


def test_a_folder_is_refused(tmp_path):
    (tmp_path / "src" / "dir.png").mkdir(parents=True)
    _refused(_read_one(_jsonl(tmp_path / "src", "dir.png")), field="states[1].screenshot", says="not a regular file")


def test_a_huge_file_is_refused_before_it_is_read(tmp_path, monkeypatch):
    shot = _png(tmp_path / "src" / "big.png")
    monkeypatch.setattr("runbook.trajectory.screenshots.MAX_SCREENSHOT_BYTES", shot.stat().st_size - 1)
    _refused(_read_one(_jsonl(tmp_path / "src", "big.png")), field="states[1].screenshot", says="larger than")


def test_a_nul_byte_in_the_path_is_refused(tmp_path):
    _png(tmp_path / "src" / "a.png")
    _refused(_read_one(_jsonl(tmp_path / "src", "a.png\u0000../../x")), field="states[1].screenshot", says="NUL")


def test_a_missing_file_is_still_reported_as_missing(tmp_path):
    _refused(_read_one(_jsonl(tmp_path / "src", "nope.png")), field="states[1].screenshot", says="file not found")


# --- an explicit screenshot root replaces the source's folder --------------------------------------------------


def test_a_screenshot_root_admits_paths_inside_it(tmp_path):
    secret = _outside_image(tmp_path)
    root = str(tmp_path / "private")
    for shot in (str(secret), "../private/secret.png"):
        traj = _read_one(_jsonl(tmp_path / "src", shot), screenshot_root=root)
        assert isinstance(traj, Trajectory) and traj.states[1].screenshot == str(secret.resolve())


def test_a_screenshot_root_refuses_paths_outside_it_even_in_the_source_folder(tmp_path):
    _png(tmp_path / "src" / "a.png")
    (tmp_path / "shots").mkdir()
    item = _read_one(_jsonl(tmp_path / "src", "a.png"), screenshot_root=str(tmp_path / "shots"))
    assert str(tmp_path / "shots") in str(_refused(item, field="states[1].screenshot", says="outside"))


# --- the other readers ------------------------------------------------------------------------------------------


def test_lme_content_form_is_confined(tmp_path):
    _outside_image(tmp_path)
    item = _read_one(_lme(tmp_path / "src", "../private/secret.png"))
    _refused(item, field="content[0].observation.screenshot", says="outside", tid="lme-1")
    (tmp_path / "src" / "screenshots").mkdir()
    (tmp_path / "src" / "screenshots" / "x.png").write_bytes(b"\x89PNG not really")
    item = _read_one(_lme(tmp_path / "src", "x.png"))
    _refused(item, field="content[0].observation.screenshot", says="not an image", tid="lme-1")


def _gym_folder(folder: Path) -> Path:
    folder.mkdir(parents=True)
    step = {
        "obs": {
            "goal": "g",
            "open_pages_urls": ["http://a/"],
            "open_pages_titles": ["A"],
            "active_page_index": [0],
            "axtree_txt": "x",
        },
        "action": "noop()",
    }
    (folder / "steps_info_0.json").write_text(json.dumps(step))
    (folder / "summary_info.json").write_text(json.dumps({"cum_reward": 1.0}))
    return folder


def test_browsergym_screenshot_symlinked_out_is_refused(tmp_path):
    secret = _outside_image(tmp_path)
    folder = _gym_folder(tmp_path / "runs" / "task_1")
    os.symlink(secret, folder / "screenshot_step_0.png")
    (item,) = list(browsergym.read(folder))
    _refused(item, field="states[0].screenshot", says="outside", tid="task_1")
    assert isinstance(list(browsergym.read(folder, screenshot_root=str(tmp_path / "private")))[0], Trajectory)


def test_browsergym_screenshot_that_is_no_image_is_refused(tmp_path):
    folder = _gym_folder(tmp_path / "runs" / "task_1")
    (folder / "screenshot_step_0.png").write_text("not an image")
    (item,) = list(browsergym.read(folder))
    _refused(item, field="states[0].screenshot", says="not an image", tid="task_1")


def _bu_folder(folder: Path, shot) -> Path:
    folder.mkdir(parents=True)
    entry = {
        "model_output": {"thinking": "t", "action": [{"done": {"text": "ok"}}]},
        "result": [],
        "state": {"url": "http://a/", "title": "A", "screenshot_path": shot},
        "metadata": {"step_start_time": 1765867656.1},
    }
    (folder / "history.json").write_text(json.dumps({"history": [entry]}))
    return folder


def test_browser_use_recorded_absolute_path_outside_the_folder_is_refused(tmp_path):
    secret = _outside_image(tmp_path)
    (item,) = list(browser_use.read(_bu_folder(tmp_path / "run", str(secret))))
    _refused(item, field="history[0].state.screenshot_path", says="outside", tid="run")


def test_browser_use_saved_screenshot_symlinked_out_is_refused(tmp_path):
    secret = _outside_image(tmp_path)
    folder = _bu_folder(tmp_path / "run", None)
    (folder / "screenshots").mkdir()
    os.symlink(secret, folder / "screenshots" / "step_0.png")
    (item,) = list(browser_use.read(folder))
    _refused(item, field="states[0].screenshot", says="outside", tid="run")
