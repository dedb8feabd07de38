"""A store (and optionally question sets) written in LongMemEval-V2's data layout, so that the benchmark's own
harness runs on a user's trajectories:

    OUT/questions.jsonl              the questions in the harness's schema (id, domain, question_type, question,
                                     image, answer, eval_function, and the rest of each row as it was)
    OUT/trajectories.jsonl           every stored trajectory in the `states` form, in insertion order
    OUT/haystacks/lme_v2_<tier>.json question id -> the trajectory ids of its haystack (the whole store)
    OUT/screenshots/<id>/<file>      the screenshots, named from the states as the harness's loader reads them

The folder is written beside OUT and renamed into place at the end: a failed export leaves nothing behind.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..store import Store
from ..store.layout import trajectory_dirname

QUESTION_FIELDS = ("id", "question_type", "question", "answer", "eval_function")
"""What the harness requires of every question (domain and image are filled when missing)."""


@dataclass
class ExportReport:
    out: Path
    trajectories: int = 0
    states: int = 0
    screenshots: int = 0
    questions: int = 0

    def summary(self) -> str:
        return (
            f"{self.trajectories} trajectories ({self.states:,} states, {self.screenshots:,} screenshots) and "
            f"{self.questions} questions written to {self.out}"
        )


def export_lme_v2(
    store: Store, out: str | os.PathLike, *, questions: list[Path] | None = None, tier: str = "small"
) -> ExportReport:
    """Write `store` (and the questions of `questions`, JSONL files) in LongMemEval-V2's layout at `out`."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(f"{out} exists and is not an empty folder: export into a new folder")
    if tier not in ("small", "medium"):
        raise InputError(f"tier must be small or medium, got {tier!r}")
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        report = _write(store, work, questions or [], tier)
        if out.exists():
            out.rmdir()
        os.replace(work, out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    report.out = out
    return report


def _write(store: Store, work: Path, question_files: list[Path], tier: str) -> ExportReport:
    report = ExportReport(work)
    ids: list[str] = []
    domains: set[str] = set()
    with open(work / "trajectories.jsonl", "w", encoding="utf-8") as fh:
        for trajectory in store.iter_trajectories():
            folder = trajectory_dirname(trajectory.id)
            obj = trajectory.to_dict()
            for raw, state in zip(obj["states"], trajectory.states):
                if state.screenshot:
                    rel = f"screenshots/{folder}/{os.path.basename(state.screenshot)}"
                    (work / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(state.screenshot, work / rel)
                    raw["screenshot"] = rel
                    report.screenshots += 1
            fh.write(json.dumps(obj, ensure_ascii=False) + "\n")
            ids.append(trajectory.id)
            domains.add(trajectory.domain)
            report.states += len(trajectory.states)
    report.trajectories = len(ids)
    rows = [row for path in question_files for row in _questions(path, work, domains)]
    seen: set[str] = set()
    for row in rows:
        if row["id"] in seen:
            raise InputError(f"question id {row['id']!r} appears twice in {', '.join(map(str, question_files))}")
        seen.add(row["id"])
    with open(work / "questions.jsonl", "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    report.questions = len(rows)
    (work / "haystacks").mkdir()
    haystacks = {row["id"]: ids for row in rows}
    (work / "haystacks" / f"lme_v2_{tier}.json").write_text(json.dumps(haystacks, indent=1) + "\n")
    return report


def _questions(path: Path, work: Path, domains: set[str]) -> list[dict]:
    """The rows of one question file in the harness's schema; a question image is copied beside the export's
    screenshots (it must resolve inside the folder of its question set)."""
    path = Path(path)
    out = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from exc
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{number}: not JSON ({exc.msg})") from exc
        if not isinstance(row, dict):
            raise InputError(f"{path}:{number}: a question must be a JSON object")
        for name in QUESTION_FIELDS:
            if not isinstance(row.get(name), str) or not row[name].strip():
                raise InputError(f"{path}:{number}: question {row.get('id')!r} has no string field {name!r}")
        row.setdefault("domain", next(iter(domains)) if len(domains) == 1 else "web")
        if row["domain"] not in domains:
            raise InputError(
                f"{path}:{number}: question {row['id']!r} is in domain {row['domain']!r}, "
                f"but the store holds {', '.join(sorted(domains)) or 'no trajectories'}"
            )
        row["image"] = _question_image(row.get("image"), path, number, work)
        out.append(row)
    return out


def _question_image(value: object, path: Path, number: int, work: Path) -> str | None:
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise InputError(f"{path}:{number}: image must be a path or null")
    row_dir = path.parent
    candidates = [row_dir / value] + [p / value for p in sorted(row_dir.iterdir()) if p.is_dir()]
    for candidate in candidates:
        real = candidate.resolve()
        if real.is_file() and row_dir.resolve() in real.parents:
            rel = f"question_images/{path.stem}/{number:04d}{real.suffix}"
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(real, work / rel)
            return rel
    raise InputError(f"{path}:{number}: question image {value!r} not found under {row_dir}")
