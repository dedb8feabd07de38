"""Write a generated dataset to disk in the shared data's layout (JSONL + screenshots/<id>/<NNNN>.png)."""

from __future__ import annotations

from pathlib import Path

import orjson

from .questions import build_questions
from .scenario import simulate
from .screenshots import render_png


def generate_world(seed: int = 7, n_trajectories: int = 200, screenshots: bool = True) -> tuple[list[dict], list[dict]]:
    """The trajectories (recording order) and the questions over them, for one seed. Pure: writes nothing.

    With `screenshots`, states carry `screenshots/<id>/<NNNN>.png` paths and a few questions use images; the
    files themselves are only drawn by write_dataset().
    """
    sim = simulate(seed, n_trajectories, screenshots)
    return sim.trajectories, build_questions(sim, seed)


def write_dataset(out_dir: str | Path, seed: int = 7, n: int = 200, screenshots: bool = True) -> dict:
    """Write trajectories.jsonl, questions.jsonl and (optionally) the screenshots; return counts."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    sim = simulate(seed, n, screenshots)
    questions = build_questions(sim, seed)
    if screenshots:
        for (tid, idx), page in sim.pages.items():
            path = out / "screenshots" / tid / f"{idx:04d}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(render_png(page))
    _jsonl(out / "trajectories.jsonl", sim.trajectories)
    _jsonl(out / "questions.jsonl", questions)
    by_type: dict[str, int] = {}
    for q in questions:
        by_type[q["question_type"]] = by_type.get(q["question_type"], 0) + 1
    return {
        "trajectories": len(sim.trajectories),
        "states": len(sim.pages),
        "questions": len(questions),
        "by_type": dict(sorted(by_type.items())),
        "screenshots": len(sim.pages) if screenshots else 0,
    }


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
