"""Question sets read as they are, in three layouts, each question tied to its haystack.

- LongMemEval-V2: `questions.jsonl`, `trajectories.jsonl` and `haystacks/lme_v2_<tier>.json` (question id ->
  trajectory ids, in insertion order) in one data root; images and screenshots are relative to that root;
  a question's `question` may also be the harness's runtime form `{"text", "image"}`.
- this project's dev sets (`questions_dev_*.jsonl`): each question's `set` names the folder beside the file that
  holds `trajectories.jsonl(.gz)`; the haystack is that whole set; images are relative to that folder.
- `runbook generate` output: `questions.jsonl` beside `trajectories.jsonl`; the haystack is the whole file.
Extra fields (`answer_phrases`, `evidence`, `stale_evidence`, `visual_only`) feed the reader-free scores.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError

TRAJECTORY_FILES = ("trajectories.jsonl", "trajectories.jsonl.gz", "trajectories.json")
CATEGORIES = {
    "static-environment": "static",
    "static-environment-abs": "static-abs",
    "dynamic-environment": "dynamic",
    "dynamic-environment-abs": "dynamic-abs",
    "procedure": "procedure",
    "procedure-abs": "procedure-abs",
    "errors-gotchas": "gotchas",
}
"""The harness's category of each question type (its per-type metrics use these names)."""
ABSTENTION_EVAL = "llm_abstention_checker"


@dataclass(frozen=True)
class StateRef:
    """One state of one trajectory: a gold evidence state."""

    trajectory_id: str
    state_index: int


@dataclass(frozen=True)
class Haystack:
    """The trajectories one question is asked over: a file, and which of its trajectories in what order."""

    source: Path
    trajectory_ids: tuple[str, ...] | None = None
    """None: every trajectory of the file, in file order."""
    name: str = ""

    @property
    def base_dir(self) -> Path:
        """Where relative screenshot paths of the file start."""
        return self.source.parent


@dataclass
class Question:
    """One benchmark question with what scoring needs."""

    id: str
    question_type: str
    question: str
    answer: str
    eval_function: str
    haystack: Haystack
    image: str | None = None
    """Absolute path of the question's image."""
    domain: str | None = None
    answer_phrases: list[str] = field(default_factory=list)
    evidence: list[StateRef] = field(default_factory=list)
    stale_evidence: list[StateRef] = field(default_factory=list)
    visual_only: bool = False
    set_name: str = ""
    probe_kind: str = ""
    """For a mechanical probe question (../shared/tools/probe_questions.py): the page unit it asks about (table,
    count, message, field, switch), so that excerpt recall is reported per kind."""

    @property
    def category(self) -> str:
        return CATEGORIES.get(self.question_type, self.question_type)

    @property
    def is_abstention(self) -> bool:
        """As the harness decides it: the question is scored by the abstention judge."""
        return self.eval_function.split("|", 1)[0].strip() == ABSTENTION_EVAL

    @property
    def is_dynamic(self) -> bool:
        return self.question_type == "dynamic-environment"


@dataclass
class QuestionSet:
    """The questions of one file, in file order."""

    path: Path
    layout: str
    """'lme-v2', 'dev' or 'generated'."""
    questions: list[Question]

    @property
    def haystacks(self) -> list[Haystack]:
        """The distinct haystacks, in the order questions first use them."""
        return list(dict.fromkeys(q.haystack for q in self.questions))


def load_question_set(
    path: str | Path, *, tier: str = "small", limit: int | None = None, data: Path | None = None
) -> QuestionSet:
    """Read a question file (or a folder holding questions.jsonl) in whichever of the three layouts it is; `data`:
    where the sets a dev-layout question names are, when they are not beside the file."""
    path = Path(path)
    if path.is_dir():
        path = path / "questions.jsonl"
    if not path.is_file():
        raise InputError("no such question file", path=str(path))
    rows = _read_rows(path)
    if limit is not None:
        rows = rows[:limit]
    root = path.parent
    if (root / "haystacks").is_dir() and _trajectory_file(root):
        return QuestionSet(path, "lme-v2", _lme_questions(rows, root, tier))
    whole_file = _trajectory_file(root)
    if whole_file:
        whole = Haystack(whole_file, name=root.name)
        return QuestionSet(path, "generated", [_question(r, whole, root, path) for r in rows])
    return QuestionSet(path, "dev", _dev_questions(rows, root, path, data))


def _read_rows(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        rows = json.loads(text)
    else:
        rows = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise InputError(f"malformed JSON: {exc}", path=str(path), line=n) from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise InputError("expected one question object per line (or a JSON list of them)", path=str(path))
    return rows


def _trajectory_file(folder: Path) -> Path | None:
    return next((folder / name for name in TRAJECTORY_FILES if (folder / name).is_file()), None)


def _lme_questions(rows: list[dict], root: Path, tier: str) -> list[Question]:
    mapping_file = root / "haystacks" / f"lme_v2_{tier}.json"
    if not mapping_file.is_file():
        raise InputError(f"no haystack file for tier {tier!r}", path=str(mapping_file))
    mapping = json.loads(mapping_file.read_text(encoding="utf-8"))
    source = _trajectory_file(root)
    assert source is not None  # load_question_set found it beside the haystacks
    shared: dict[tuple[str, ...], Haystack] = {}
    questions = []
    for row in rows:
        ids = mapping.get(row.get("id"))
        if not isinstance(ids, list):
            raise InputError(f"question {row.get('id')!r} has no haystack", path=str(mapping_file))
        key = tuple(ids)
        if key not in shared:  # questions with the same list share one haystack (and so one store)
            digest = hashlib.sha256("\n".join(key).encode()).hexdigest()[:8]
            shared[key] = Haystack(source, key, name=f"{tier}-{digest}")
        questions.append(_question(row, shared[key], root, source))
    return questions


def _dev_questions(rows: list[dict], root: Path, path: Path, data: Path | None = None) -> list[Question]:
    haystacks: dict[str, Haystack] = {}
    questions = []
    for n, row in enumerate(rows, 1):
        name: Any = row.get("set")  # as the JSON has it: a folder name
        folder = root / str(name) if name else None
        if folder is not None and not folder.is_dir() and data is not None:
            folder = data / str(name)
        source = _trajectory_file(folder) if folder and folder.is_dir() else None
        if source is None:
            raise InputError(
                f"question {row.get('id')!r}: its set {name!r} names no folder with "
                f"trajectories.jsonl(.gz) beside the question file{' or under ' + str(data) if data else ''}; "
                f"neither is there a trajectories file or a haystacks/ folder beside it",
                path=str(path),
                line=n,
            )
        assert folder is not None  # the source was found in it
        haystack = haystacks.setdefault(name, Haystack(source, name=name))
        questions.append(_question(row, haystack, folder, path))
    return questions


def _question(row: dict, haystack: Haystack, image_root: Path, path: Path) -> Question:
    qid = row.get("id")
    where: dict[str, Any] = {"path": str(path), "field": "id"}
    if not isinstance(qid, str) or not qid:
        raise InputError("a question needs a non-empty string id", **where)
    text: Any = row.get("question")  # checked to be a non-empty string below
    image = row.get("image")
    if isinstance(text, dict):  # the harness's runtime form
        text, image = text.get("text"), text.get("image") or image
    for name, value in (
        ("question", text),
        ("question_type", row.get("question_type")),
        ("eval_function", row.get("eval_function")),
    ):
        if not isinstance(value, str) or not value.strip():
            raise InputError(f"question {qid!r}: {name} must be a non-empty string", path=str(path), field=name)
    return Question(
        id=qid,
        question_type=row["question_type"],
        question=text,
        answer=str(row.get("answer") or ""),
        eval_function=row["eval_function"],
        haystack=haystack,
        image=_resolve(image, image_root),
        domain=row.get("domain"),
        answer_phrases=list(row.get("answer_phrases") or []),
        evidence=_refs(row.get("evidence")),
        stale_evidence=_refs(row.get("stale_evidence")),
        visual_only=bool(row.get("visual_only")),
        set_name=str(row.get("set") or haystack.name),
        probe_kind=str(row.get("probe_kind") or ""),
    )


def _resolve(image: Any, root: Path) -> str | None:
    if not image:
        return None
    found = Path(image) if Path(image).is_absolute() else root / image
    return str(found.resolve())


def _refs(value: Any) -> list[StateRef]:
    return [
        StateRef(str(e["trajectory_id"]), int(e["state_index"]))
        for e in value or []
        if isinstance(e, dict) and "trajectory_id" in e and "state_index" in e
    ]
