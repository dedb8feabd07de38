"""Assemble the question set: facts, procedures, gotchas, false premises and screenshots, in the dev schema."""

from __future__ import annotations

import random

from .questions_abs import dynamic_abs, procedure_abs, static_abs, visual
from .questions_facts import fact_questions
from .questions_tasks import gotcha_questions, procedure_questions
from .recorder import Sim
from .world import SITE

FIELDS = [
    "id",
    "set",
    "site",
    "question_type",
    "question",
    "image",
    "answer",
    "answer_phrases",
    "eval_function",
    "evidence",
    "stale_evidence",
    "visual_only",
    "verification",
]


def state_text(state: dict) -> str:
    """What a memory can show of a state: phrases are checked against this (url, title, tree, thought, action,
    error)."""
    return "\n".join(
        str(state.get(k) or "") for k in ("url", "title", "accessibility_tree", "thought", "action", "action_error")
    )


def build_questions(sim: Sim, seed: int) -> list[dict]:
    # A separate stream, so changing the question mix never changes the trajectories.
    rng = random.Random(f"questions/{seed}")
    scale = max(0.2, min(3.0, len(sim.trajectories) / 200))
    k = max(1, round(6 * scale))
    qs = (
        fact_questions(sim, rng, scale)
        + procedure_questions(sim, rng, scale)
        + gotcha_questions(sim, rng, scale)
        + static_abs(sim, rng, k)
        + dynamic_abs(sim, rng, k)
        + procedure_abs(sim, rng, max(1, k // 2))
        + visual(sim, rng)
    )
    seen, out = set(), []
    for q in qs:
        if q["question"] in seen:
            continue
        seen.add(q["question"])
        for field in ("evidence", "stale_evidence"):  # one state can be cited for two reasons: list it once
            q[field] = list({(e["trajectory_id"], e["state_index"]): e for e in q.get(field, [])}.values())
        if q["eval_function"].startswith("norm_phrase_set_match"):
            # LongMemEval-V2 splits `answer` on , and ; into the phrases it requires: keep it exactly the phrases.
            q["answer_detail"] = q["answer"]
            q["answer"] = "; ".join(q["answer_phrases"])
        out.append(q)
    rng.shuffle(out)
    result = []
    for i, q in enumerate(out, 1):
        q.update(id=f"gen-q-{i:04d}", set="generated", site=SITE)
        q.setdefault("visual_only", False)
        q.setdefault("stale_evidence", [])
        result.append(
            {f: q[f] for f in FIELDS} | ({"answer_detail": q["answer_detail"]} if "answer_detail" in q else {})
        )
    return result
