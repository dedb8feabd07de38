"""A bench configuration: question sets, a matrix of methods and budgets, and optionally a reader and a judge.

Written in TOML (see eval/dev.toml); relative paths start at the config file's folder:

    name = "dev"
    questions = ["../../shared/data/questions_dev_webarena.jsonl"]   # or [{path = "...", tier = "small", data = "..."}]
    budgets = ["8k"]

    [[methods]]
    label = "C offline"                     # how tables and the chart name it
    method = "c"                            # a name in runbook.memory.METHODS
    options = {policy = "offline"}          # keyword options of that Memory
    budgets = ["3k", "8k"]                  # optional: this method's own budgets

    [reader]                                # optional; unset fields come from RUNBOOK_READER_* settings
    provider = "openai"
    max_output_tokens = 512

    [judge]                                 # optional; by default the reader's model also judges
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ..budget import parse_budget
from ..config import DEFAULT_READER_DOMAIN
from ..errors import ConfigError


@dataclass
class QuestionSource:
    """One question file (or LongMemEval-V2 data root) of the bench."""

    path: Path
    tier: str = "small"
    """LongMemEval-V2's haystack tier: small or medium (other layouts ignore it)."""
    limit: int | None = None
    """Only the first `limit` questions of the file."""
    data: Path | None = None
    """Where the folders a question's `set` names are, when they are not beside the question file (probe questions
    drawn with ../shared/tools/probe_questions.py into a folder of their own name ../shared/data's sets)."""


@dataclass
class MethodSpec:
    """One memory method of the matrix."""

    label: str
    """The name shown in tables and on the chart."""
    method: str
    """The method's name in the registry (runbook.memory.METHODS)."""
    options: dict[str, Any] = field(default_factory=dict)
    """Keyword options for the Memory (e.g. policy, sandbox, max_steps for c)."""
    budgets: list[int] | None = None
    """Budgets for this method alone; None: the config's budgets."""


@dataclass
class ModelSpec:
    """A model the bench talks to (the reader or the judge)."""

    provider: str | None = None
    """anthropic or openai (any OpenAI-compatible server); None: from the reader settings."""
    model: str | None = None
    base_url: str | None = None
    max_output_tokens: int = 1024
    """Caps each reply (keep it low for a slow local model)."""
    timeout: float = 600.0
    """Seconds one request may take."""


@dataclass
class ReaderSpec(ModelSpec):
    """The fixed reader that answers from each context."""

    domain: str = DEFAULT_READER_DOMAIN
    """The reader prompt when a question names no domain: web, enterprise (LongMemEval-V2's) or generic."""
    memory_context_max_tokens: int | None = None
    """Cut contexts as the harness does (whole items from the tail) to this many tokens; None: no cut."""
    images: bool = True
    """Send images (screenshots, the question's image); false for a text-only reader model."""
    tokenizer: str | None = None
    """The reader's tokenizer (tokenizer.json, its folder or a cached Hugging Face name): the cut then counts as
    LongMemEval-V2's harness counts with the reader's processor (runbook.reader_tokens)."""


@dataclass
class BenchConfig:
    """What `runbook bench run` runs."""

    name: str
    questions: list[QuestionSource]
    methods: list[MethodSpec]
    budgets: list[int] = field(default_factory=lambda: [8000])
    reader: ReaderSpec | None = None
    judge: ModelSpec | None = None
    """None with a reader: the reader's model judges too."""
    runs_dir: Path = Path("runs")
    """Where run folders go: <runs_dir>/<name>/<point>/."""
    stores_dir: Path = Path("stores")
    """Where the haystack stores are kept (one folder per haystack content hash)."""
    store: Path | None = None
    """An existing store every question is asked over, instead of one store built per haystack (e.g. all of a
    project's trajectories in one store, as an agent's memory holds them); it is read, never written."""
    jobs: int = 1
    """Questions run at once, for methods that allow it."""
    source: Path | None = None
    """The config file this came from."""

    def points(self) -> list[RunPoint]:
        """Every (method, budget) pair, in config order."""
        return [RunPoint(self, spec, budget) for spec in self.methods for budget in (spec.budgets or self.budgets)]


@dataclass
class RunPoint:
    """One operating point of the matrix: a method at a budget; one run folder."""

    config: BenchConfig
    spec: MethodSpec
    budget: int

    @property
    def label(self) -> str:
        return f"{self.spec.label} {budget_label(self.budget)}"

    @property
    def slug(self) -> str:
        return re.sub(r"[^a-z0-9.]+", "-", self.label.lower()).strip("-")

    @property
    def folder(self) -> Path:
        return self.config.runs_dir / self.config.name / self.slug


def budget_label(tokens: int) -> str:
    """8000 -> '8k', 1500 -> '1.5k', 700 -> '700'."""
    return f"{tokens / 1000:g}k" if tokens >= 1000 else str(tokens)


def load_config(path: str | Path) -> BenchConfig:
    """Read a bench TOML file; ConfigError says which key is wrong."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: not a readable TOML file: {exc}") from exc
    return config_from_dict(data, base=path.resolve().parent, name=path.stem, source=path)


def config_from_dict(
    data: dict[str, Any], *, base: Path, name: str = "bench", source: Path | None = None
) -> BenchConfig:
    where = str(source or "the bench config")
    _known(
        data,
        {"name", "questions", "methods", "budgets", "reader", "judge", "runs_dir", "stores_dir", "store", "jobs"},
        where,
    )
    questions = [_question_source(q, base, where) for q in _list(data, "questions", where)]
    methods = [_method(m, where) for m in _list(data, "methods", where)]
    if not questions or not methods:
        raise ConfigError(f"{where}: needs at least one entry in `questions` and one in `methods`")
    labels = [m.label for m in methods]
    if len(set(labels)) != len(labels):
        raise ConfigError(f"{where}: method labels must differ, got {labels}")
    return BenchConfig(
        name=str(data.get("name") or name),
        questions=questions,
        methods=methods,
        budgets=[parse_budget(b) for b in data.get("budgets", ["8k"])],
        reader=_model(data["reader"], ReaderSpec, where, "reader") if "reader" in data else None,
        judge=_model(data["judge"], ModelSpec, where, "judge") if "judge" in data else None,
        runs_dir=base / data.get("runs_dir", "runs"),
        stores_dir=base / data.get("stores_dir", "stores"),
        store=base / data["store"] if data.get("store") else None,
        jobs=int(data.get("jobs", 1)),
        source=source,
    )


def _known(data: dict, keys: set[str], where: str) -> None:
    unknown = sorted(set(data) - keys)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(keys))}")


def _list(data: dict, key: str, where: str) -> list:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise ConfigError(f"{where}: `{key}` must be a list")
    return value


def _question_source(value: Any, base: Path, where: str) -> QuestionSource:
    if isinstance(value, str):
        value = {"path": value}
    if not isinstance(value, dict) or "path" not in value:
        raise ConfigError(f"{where}: each of `questions` is a path or a table with `path`")
    _known(value, {"path", "tier", "limit", "data"}, f"{where} (questions)")
    data = base / value["data"] if value.get("data") else None
    return QuestionSource(base / value["path"], str(value.get("tier", "small")), value.get("limit"), data)


def _method(value: Any, where: str) -> MethodSpec:
    from ..memory import METHODS

    if not isinstance(value, dict) or "method" not in value:
        raise ConfigError(f"{where}: each [[methods]] entry needs `method` (one of {', '.join(METHODS)})")
    _known(value, {"label", "method", "options", "budgets"}, f"{where} ([[methods]])")
    if value["method"] not in METHODS:
        raise ConfigError(f"{where}: unknown method {value['method']!r}; choose one of {', '.join(METHODS)}")
    budgets = value.get("budgets")
    return MethodSpec(
        label=str(value.get("label") or value["method"]),
        method=value["method"],
        options=dict(value.get("options") or {}),
        budgets=[parse_budget(b) for b in budgets] if budgets else None,
    )


def _model(value: Any, kind: type, where: str, key: str):
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: [{key}] must be a table")
    _known(value, {f.name for f in fields(kind)}, f"{where} ([{key}])")
    return kind(**value)
