"""LongMemEval-V2's answer scoring: the rule-based eval functions, their spec strings, and the answer's extraction.

The rules follow the benchmark's `evaluation/qa_eval_metrics.py` (read, not copied):
- normalising: lower-case, `-` and `_` to spaces, `,` and `;` to spaces, every other non-word character removed,
  runs of whitespace collapsed;
- `norm_phrase_set_match`: the gold answer split on the separators (default `,` and `;`), each part normalised;
  every part must occur in the normalised prediction on word boundaries; `_ordered` also needs them in order;
- `mc_choice_match` / `mc_choice_set_match`: one letter, or the set of letters, of a multiple-choice answer;
- a spec string names the function and its options: `norm_phrase_set_match|separators=,;`;
- the prediction is the last `\\boxed{...}` of the reader's reply; UNKNOWN scores 0 whatever the function says.
The LLM-judged functions (`llm_abstention_checker`, `llm_gotchas_checker`) live in runbook.models.judge.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from ..models.reader import UNKNOWN, extract_boxed

DEFAULT_SEPARATORS = (",", ";")
JUDGED = ("llm_abstention_checker", "llm_gotchas_checker")
"""Eval functions that need a judge model."""
_FILLER_WORDS = {"AND", "ANSWER", "ANSWERS", "CHOICE", "CHOICES", "FINAL", "LETTER", "LETTERS", "OPTION", "OPTIONS"}


def normalize(text: Any) -> str:
    """The benchmark's normal form of an answer or a phrase (see the module docstring)."""
    if text is None:
        return ""
    text = str(text).lower().replace("-", " ").replace("_", " ")
    text = re.sub(r"[,;]", " ", text)
    text = re.sub(r"[^\w\s]", "", text)
    return re.sub(r"\s+", " ", text).strip()


def split_phrases(answer: Any, separators: Iterable[str] = DEFAULT_SEPARATORS) -> list[str]:
    """The gold answer's phrases, normalised, empty ones dropped."""
    if answer is None:
        return []
    separators = list(separators)
    parts = re.split("|".join(re.escape(s) for s in separators), str(answer)) if separators else [str(answer)]
    return [p for p in (normalize(part) for part in parts) if p]


def _find(phrase: str, text: str, start: int = 0) -> re.Match | None:
    return re.compile(rf"\b{re.escape(phrase)}\b").search(text, start)


def norm_phrase_set_match(
    prediction: Any,
    answer: Any,
    *,
    separators: Iterable[str] = DEFAULT_SEPARATORS,
    require_non_empty: bool = True,
    in_order: bool = False,
    **_: Any,
) -> bool:
    """Every gold phrase occurs, word-bounded, in the normalised prediction (any order; `in_order`: each after the
    previous one)."""
    text, phrases = normalize(prediction), split_phrases(answer, separators)
    if require_non_empty and (not text or not phrases):
        return False
    position = 0
    for phrase in phrases if in_order else set(phrases):
        found = _find(phrase, text, position)
        if found is None:
            return False
        position = found.end() if in_order else 0
    return True


def norm_phrase_set_match_ordered(prediction: Any, answer: Any, **options: Any) -> bool:
    """As norm_phrase_set_match, and each phrase is found after the previous one."""
    return norm_phrase_set_match(prediction, answer, **{**options, "in_order": True})


def mc_choice_match(
    prediction: Any, answer: Any, *, strip_chars: str = ".", require_non_empty: bool = True, **_: Any
) -> bool:
    """One multiple-choice letter: the prediction's (first) boxed content, minus 'choice'/'option', equals it."""
    if prediction is None or answer is None:
        return False
    boxed = re.search(r"\\boxed\{([^}]*)\}", str(prediction).lower())
    candidate = boxed.group(1) if boxed else str(prediction)
    candidate = re.sub(r"\b(choice|option)\b", "", candidate, flags=re.IGNORECASE)
    for ch in strip_chars:
        candidate = candidate.replace(ch, "")
    candidate, expected = candidate.strip().upper(), str(answer).strip().upper()
    if require_non_empty and (not candidate or not expected):
        return False
    return candidate == expected


def choice_letters(text: Any) -> list[str]:
    """The letters of a multi-select answer: capital runs split into letters, filler words skipped."""
    if text is None:
        return []
    letters: list[str] = []
    for run in re.findall(r"[A-Z]+", str(text).upper()):
        if run not in _FILLER_WORDS:
            letters.extend(run)
    return letters


def mc_choice_set_match(prediction: Any, answer: Any, *, require_non_empty: bool = True, **_: Any) -> bool:
    """The same set of choice letters in the prediction and the answer."""
    predicted, expected = choice_letters(prediction), choice_letters(answer)
    if require_non_empty and (not predicted or not expected):
        return False
    return set(predicted) == set(expected)


RULES: dict[str, Callable[..., bool]] = {
    "norm_phrase_set_match": norm_phrase_set_match,
    "norm_phrase_set_match_ordered": norm_phrase_set_match_ordered,
    "mc_choice_match": mc_choice_match,
    "mc_choice_set_match": mc_choice_set_match,
}


@dataclass(frozen=True)
class EvalSpec:
    """A parsed `eval_function` string: the function's name and its options."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def judged(self) -> bool:
        return self.name in JUDGED


def parse_eval_spec(spec: str) -> EvalSpec:
    """`name|key=value|...` -> EvalSpec; separators are the value's characters (or a JSON list)."""
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError("an eval_function must be a non-empty string such as 'norm_phrase_set_match'")
    name, *parts = [p.strip() for p in spec.split("|")]
    if name not in RULES and name not in JUDGED:
        raise ConfigError(f"unknown eval_function {name!r}: known are {', '.join([*RULES, *JUDGED])}")
    options: dict[str, Any] = {}
    for part in filter(None, parts):
        key, sep, value = (s.strip() for s in part.partition("="))
        if not sep or not key:
            raise ConfigError(f"eval_function {spec!r}: option {part!r} is not key=value")
        if key in options:
            raise ConfigError(f"eval_function {spec!r}: option {key!r} given twice")
        options[key] = _option_value(key, value)
    return EvalSpec(name, options)


def _option_value(key: str, value: str) -> Any:
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    if value.lower() in ("none", "null"):
        return None
    if key in ("separators", "separator"):
        if value.startswith("[") and value.endswith("]"):
            return json.loads(value)
        return [ch for ch in value if not ch.isspace()]
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def is_unknown(answer: str) -> bool:
    return answer.strip().lower() == UNKNOWN.lower()


PHRASE_SEPARATOR = "\x1f"
"""Joins given gold phrases into one gold string that splits back into exactly those phrases."""


def score_rule(spec: EvalSpec | str, response: str, gold: str, phrases: list[str] | None = None) -> bool:
    """A rule-scored answer: the reader's full `response`, its last \\boxed{} compared with `gold`.

    `phrases`, when a question set lists its gold phrases apart from a descriptive answer (this project's dev sets:
    `answer` "70 records", `answer_phrases` ["70"]), are the phrases the norm_phrase rules look for, each whole.
    UNKNOWN scores 0; a judged spec is refused here (runbook.models.judge scores those).
    """
    spec = parse_eval_spec(spec) if isinstance(spec, str) else spec
    if spec.judged:
        raise ConfigError(f"{spec.name} needs a judge model, not a rule")
    answer = extract_boxed(response)
    if is_unknown(answer):
        return False
    options = dict(spec.options)
    if phrases and spec.name.startswith("norm_phrase_set_match"):
        gold, options["separators"] = PHRASE_SEPARATOR.join(phrases), [PHRASE_SEPARATOR]
    return bool(RULES[spec.name](answer, gold, **options))
