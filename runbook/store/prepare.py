"""Everything about a trajectory's files that can be computed before touching the store (and in a worker process)."""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import orjson

from ..budget import count_tokens_batch
from ..trajectory.model import Trajectory
from .layout import SCREENSHOTS_DIR, screenshot_filename, trajectory_dirname
from .statefile import render_state


@dataclass(slots=True)
class PreparedTrajectory:
    """A trajectory rendered into the exact bytes the store will hold, with its fingerprint and token counts."""

    trajectory: Trajectory
    dirname: str
    fingerprint: str
    canonical_json: bytes
    state_files: list[bytes]
    state_tokens: list[int]
    screenshots: list[tuple[int, str, str]]
    """(state index, source path, store-relative destination)."""

    @property
    def tokens(self) -> int:
        return sum(self.state_tokens)

    @property
    def n_errors(self) -> int:
        return sum(1 for s in self.trajectory.states if s.action_error)


def _file_digest(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def prepare(trajectory: Trajectory, token_threads: int = 1) -> PreparedTrajectory:
    """Render state files, canonical JSON and the content fingerprint (screenshots hashed by content)."""
    screenshots = []
    shot_rel: dict[int, str] = {}
    shot_digest: dict[int, str] = {}
    for state in trajectory.states:
        if state.screenshot:
            rel = f"{SCREENSHOTS_DIR}/{screenshot_filename(state.index, os.path.splitext(state.screenshot)[1])}"
            screenshots.append((state.index, state.screenshot, rel))
            shot_rel[state.index] = rel
            shot_digest[state.index] = _file_digest(state.screenshot)
    canonical = trajectory.to_dict()
    for raw in canonical["states"]:
        raw["screenshot"] = shot_rel.get(raw["state_index"])
    canonical_json = orjson.dumps(canonical, option=orjson.OPT_INDENT_2)
    # the fingerprint ignores where the screenshots came from and looks at what they contain
    for raw in canonical["states"]:
        if raw["state_index"] in shot_digest:
            raw["screenshot"] = "sha256:" + shot_digest[raw["state_index"]]
    fingerprint = hashlib.sha256(orjson.dumps(canonical, option=orjson.OPT_SORT_KEYS)).hexdigest()
    texts = [render_state(trajectory, s, shot_rel.get(s.index)) for s in trajectory.states]
    return PreparedTrajectory(
        trajectory=trajectory,
        dirname=trajectory_dirname(trajectory.id),
        fingerprint=fingerprint,
        canonical_json=canonical_json,
        state_files=[t.encode("utf-8") for t in texts],
        state_tokens=count_tokens_batch(texts, threads=token_threads),
        screenshots=screenshots,
    )


def write_files(prepared: PreparedTrajectory, folder: Path) -> int:
    """Write the prepared trajectory into an empty folder; returns bytes written."""
    from .layout import FINGERPRINT_FILE, STATES_DIR, TRAJECTORY_FILE, state_filename
    import shutil

    (folder / STATES_DIR).mkdir(parents=True)
    total = 0
    (folder / TRAJECTORY_FILE).write_bytes(prepared.canonical_json)
    total += len(prepared.canonical_json)
    (folder / FINGERPRINT_FILE).write_text(prepared.fingerprint + "\n")
    for state, data in zip(prepared.trajectory.states, prepared.state_files):
        (folder / STATES_DIR / state_filename(state.index)).write_bytes(data)
        total += len(data)
    if prepared.screenshots:
        (folder / SCREENSHOTS_DIR).mkdir()
        for _, src, rel in prepared.screenshots:
            shutil.copyfile(src, folder / rel)
            total += os.path.getsize(folder / rel)
    return total
