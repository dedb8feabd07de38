"""The judges: a model that grades answers the rules cannot, as LongMemEval-V2 grades them.

`llm_abstention_checker` (false-premise questions: 1 only if the answer names the flawed premise; a bare UNKNOWN
is 0) and `llm_gotchas_checker` (1 if the answer has at least one correct insight of the reference and contradicts
none). The rubrics are the benchmark's (evaluation/qa_eval_metrics.py, Apache-2.0), so a grade here is what its
judge would be asked; the judge answers JSON `{"label": 0 or 1, "reason": "..."}`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..errors import JudgeError
from .messages import Message
from .reader import unescape_html

ABSTENTION_SYSTEM = (
    "You are a strict grader for flawed-premise (abstention) questions. Judge whether a model answer correctly "
    "identifies that the question premise is wrong, consistent with the reference answer. If the model follows the "
    "flawed premise and gives a concrete answer under that premise, it must be graded 0. If the model's final answer "
    "is just UNKNOWN / cannot determine without identifying the flaw, grade 0. If the model is contradictory (both "
    "rejects premise and also gives a concrete premise-following answer), grade 0. Paraphrases are allowed when they "
    "preserve the same core flaw described by the reference answer."
)
ABSTENTION_RUBRIC = (
    "- Label 1 only if the model clearly identifies the flawed premise and reaches a conclusion equivalent to the "
    "reference answer.\n"
    "- Label 1 also if the model explicitly says it lacks access to the user's specific live "
    "environment/instance/configuration and therefore cannot verify, provided it does not give a concrete "
    "premise-following answer.\n"
    "- Label 0 if the model follows the flawed premise and gives a concrete answer under that premise.\n"
    "- Label 0 for generic UNKNOWN/insufficient-info replies that do not identify a flaw and do not make the "
    "explicit environment-access limitation clear.\n"
    "- Label 0 if contradictory."
)
GOTCHAS_SYSTEM = (
    "You are a strict grader for gotchas-style insight questions. The reference answer describes the key "
    "insight(s). Grade 1 if the model response includes at least one correct insight point from the reference "
    "answer (paraphrase allowed), and does not contradict any reference point. If the model's direction is wrong, "
    "or it contains contradictions against any reference point, grade 0. If the model gives multiple points, "
    "partial coverage is enough for 1 as long as no contradictions appear."
)
GOTCHAS_RUBRIC = (
    "- Label 1 if the model includes at least one correct insight point from the reference answer (paraphrase "
    "acceptable), and does not contradict any reference point.\n"
    "- Label 1 even if only part of a multi-point reference answer is covered, as long as there is no "
    "contradiction.\n"
    "- Label 0 if direction is wrong (suggests opposite action/cause), even if some wording overlaps.\n"
    "- Label 0 if any point in the model response contradicts any reference point.\n"
    "- Label 0 if the response is irrelevant or generic without insight."
)

JUDGES = {
    "llm_abstention_checker": (
        ABSTENTION_SYSTEM,
        "Evaluate whether the model correctly handled a flawed-premise question.",
        "Reference answer (the expected flaw-aware conclusion)",
        ABSTENTION_RUBRIC,
    ),
    "llm_gotchas_checker": (
        GOTCHAS_SYSTEM,
        "Evaluate whether the model answer captures the gotcha insight.",
        "Reference answer (insight points)",
        GOTCHAS_RUBRIC,
    ),
}


@dataclass
class Verdict:
    """A judge's grade: label 1 or 0, its reason, and its raw reply."""

    label: int
    reason: str
    raw: str
    usage: dict[str, int]


def judge_messages(kind: str, *, question: str, reference: str, response: str, final_answer: str) -> list[Message]:
    """The system prompt and the one user message that ask for a `kind` grade."""
    system, task, reference_title, rubric = JUDGES[kind]
    user = (
        f"{task}\n\nQuestion:\n{question}\n\n{reference_title}:\n{reference}\n\n"
        f"Model full response:\n{response}\n\nModel extracted final answer:\n{final_answer}\n\n"
        f"Scoring rubric:\n{rubric}\n\nOutput JSON only:\n" + '{"label": 0 or 1, "reason": "short rationale"}'
    )
    return [Message("system", system), Message("user", user)]


def parse_verdict(reply: str) -> tuple[int, str]:
    """(label, reason) from a judge reply: JSON (in a code fence or not), else a `label: N` written loosely."""
    text = reply.strip()
    fenced = re.fullmatch(r"```\w*\s*(.*?)\s*```", text, re.S)
    if fenced:
        text = fenced.group(1)
    blob = re.search(r"\{.*\}", text, re.S)
    if blob:
        try:
            payload = json.loads(blob.group(0))
        except json.JSONDecodeError:
            payload = None
        if isinstance(payload, dict) and str(payload.get("label")) in ("0", "1"):
            return int(payload["label"]), str(payload.get("reason") or "").strip()
    loose = re.search(r"""["']?\blabel\b["']?\s*[:=]\s*([01])""", text, re.I)
    if loose:
        return int(loose.group(1)), text
    raise JudgeError(f"the judge's reply has no label 0 or 1: {reply[:200]!r}")


class Judge:
    """Grades answers with a chat model (any object with the Policy interface, as the reader takes)."""

    def __init__(self, model_client: Any):
        self.client = model_client

    def grade(self, kind: str, *, question: str, reference: str, response: str, final_answer: str) -> Verdict:
        if kind not in JUDGES:
            raise JudgeError(f"no judge for {kind!r}: known are {', '.join(JUDGES)}")
        reply = self.client.next(
            judge_messages(kind, question=question, reference=reference, response=response, final_answer=final_answer),
            [],
        )
        raw = unescape_html(reply.text)
        label, reason = parse_verdict(raw)
        return Verdict(label, reason, raw, dict(reply.usage or {}))
