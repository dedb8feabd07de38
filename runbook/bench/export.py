"""A store (and optionally question sets) written in LongMemEval-V2's data layout, so that the benchmark's own
harness runs on a user's trajectories:

    OUT/questions.jsonl              the questions in the harness's schema (id, domain, question_type, question,
                                     image, answer, eval_function, and the rest of each row as it was)
    OUT/trajectories.jsonl           every stored trajectory in the `states` form, in insertion order
    OUT/haystacks/lme_v2_<tier>.json question id -> the trajectory ids of its haystack (the whole store)
    OUT/screenshots/<id>/<file>      the screenshots, named from the states as the harness's loader reads them
    OUT/screenshots/no-screenshot.png  what a state without a screenshot names (an image that says so)

What is written is what the harness's own memories load (memory_modules/trajectory_store.py,
`prepare_trajectory_insert`): every state names an existing image and a non-empty url, every trajectory a
non-empty start url. A state without a screenshot (WebArena's) names the one placeholder image, which runbook reads
back as no screenshot; a trajectory with a state without a url is left out. The report says what was filled in
and what was left out.

Store files are read through the store's layout, which follows no link inside the store (a screenshot planted as
a link to a host file is left out with a warning, as every reader does), and each screenshot is written with the
store file's own permission bits. OUT may not lie inside the store (the next insert would remove it). The folder
is written beside OUT and renamed into place at the end: a failed export leaves nothing behind.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError, UnsafeStoreFile
from ..store import Store
from ..store.layout import trajectory_dirname
from ..trajectory.model import Trajectory
from ..trajectory.screenshots import NO_SCREENSHOT, placeholder_png

log = logging.getLogger(__name__)

QUESTION_FIELDS = ("id", "question_type", "question", "answer", "eval_function")
"""What the harness requires of every question (domain and image are filled when missing)."""


@dataclass
class ExportReport:
    out: Path
    trajectories: int = 0
    states: int = 0
    screenshots: int = 0
    questions: int = 0
    placeholders: int = 0
    """States without a screenshot (or whose screenshot was left out), naming the placeholder image."""
    left_out: list[str] = field(default_factory=list)
    """Why each trajectory the harness's memories could not load was left out."""
    unsafe: list[str] = field(default_factory=list)
    """Store files left out because they are links or not regular files."""

    def summary(self) -> str:
        lines = [
            f"{self.trajectories} trajectories ({self.states:,} states, {self.screenshots:,} screenshots) and "
            f"{self.questions} questions written to {self.out}"
        ]
        if self.placeholders:
            lines.append(
                f"{self.placeholders:,} states had no screenshot: they name {NO_SCREENSHOT}, an image that says so "
                "(the harness's memories need an image for every state; runbook reads it back as none)"
            )
        if self.left_out:
            lines.append(f"{len(self.left_out)} trajectories left out (the harness's memories would refuse them):")
            lines += [f"  {why}" for why in self.left_out]
        if self.unsafe:
            lines.append(
                f"{len(self.unsafe)} store files left out (links, or not regular files: `runbook store check`):"
            )
            lines += [f"  {what}" for what in self.unsafe]
        return "\n".join(lines)


def export_lme_v2(
    store: Store, out: str | os.PathLike, *, questions: list[Path] | None = None, tier: str = "small"
) -> ExportReport:
    """Write `store` (and the questions of `questions`, JSONL files) in LongMemEval-V2's layout at `out`."""
    out = Path(out)
    _refuse_inside(store, out)
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


def _refuse_inside(store: Store, out: Path) -> None:
    real_out, real_store = os.path.realpath(out), os.path.realpath(store.root)
    if os.path.commonpath([real_out, real_store]) == real_store:
        raise InputError(
            f"{out} lies inside the store at {store.root}: export into a folder outside it (a writer removes "
            "folders it does not know inside the store)"
        )


def _write(store: Store, work: Path, question_files: list[Path], tier: str) -> ExportReport:
    report = ExportReport(work)
    ids: list[str] = []
    domains: set[str] = set()
    with open(work / "trajectories.jsonl", "w", encoding="utf-8") as fh:
        for stored in store.rows():
            trajectory = store.load(stored.id)
            obj = _harness_record(store, trajectory, work, report)
            if obj is None:
                continue
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


def _harness_record(store: Store, trajectory: Trajectory, work: Path, report: ExportReport) -> dict | None:
    """The trajectory as the harness's memories load it (its screenshots copied), or None, with the reason in the
    report, when they would refuse it."""
    missing = [s.index for s in trajectory.states if not s.url.strip()]
    if missing or not (trajectory.start_url or "").strip():
        where = f"state {missing[0]} has no url" if missing else "it has no start url"
        report.left_out.append(f"{trajectory.id}: {where}")
        return None
    obj = trajectory.to_dict()
    folder = trajectory_dirname(trajectory.id)
    for raw, state in zip(obj["states"], trajectory.states):
        rel = f"screenshots/{folder}/{os.path.basename(state.screenshot)}" if state.screenshot else None
        if rel is not None and state.screenshot is not None and _copy_from_store(store, state.screenshot, work / rel):
            raw["screenshot"] = rel
            report.screenshots += 1
            continue
        if rel is not None:
            report.unsafe.append(store.layout.relative(Path(state.screenshot or "")))
        if not (work / NO_SCREENSHOT).exists():
            (work / NO_SCREENSHOT).parent.mkdir(parents=True, exist_ok=True)
            (work / NO_SCREENSHOT).write_bytes(placeholder_png())
        raw["screenshot"] = NO_SCREENSHOT
        report.placeholders += 1
    return obj


def _copy_from_store(store: Store, source: str, target: Path) -> bool:
    """Copy a store file through the store's layout (no link followed) with its permission bits; False, with a
    warning, when it is a link or not a regular file."""
    try:
        src = store.layout.open(source)
    except UnsafeStoreFile as exc:
        log.warning("left out of the export: %s", exc)
        return False
    with src:
        mode = stat.S_IMODE(os.fstat(src.fileno()).st_mode)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        with os.fdopen(fd, "wb") as dst:
            os.fchmod(fd, mode)  # not narrowed by the umask: the store's own modes
            shutil.copyfileobj(src, dst)
    return True


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
