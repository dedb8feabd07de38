"""A run's aggregated metrics from its per-question records, under the LongMemEval-V2 harness's field names.

Harness fields (`overall.overall_full_set`, `overall.overall_non_abstention_only`, the per-category breakdowns,
`memory_query.{avg,p50,p95,max,total}_seconds`, `memory_context`, `tokens`) mean what they mean there; the
accuracy fields are null when the run had no reader. runbook's own: `reader_free` (context scores), `diagnostics`
(READ / UTILIZATION / STALENESS / write failures) and `memory_cost` (tool calls, model tokens, cost).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

NON_ABSTENTION = ["static", "dynamic", "procedure", "gotchas"]
ABSTENTION = ["static-abs", "dynamic-abs", "procedure-abs"]
COMBINED = {
    "static": ("static", "static-abs"),
    "dynamic": ("dynamic", "dynamic-abs"),
    "procedure": ("procedure", "procedure-abs"),
}
READER_FREE = ["answer_phrases", "evidence", "evidence_share", "stale_led", "premise_flagged", "excerpt_recall"]
DEPTH = "answer_depth"
"""Tokens read before every answer phrase has appeared: given as the median over the questions whose context
shows them all (a share would mean nothing)."""
CONTEXT_SPEND = ["items", "furniture_tokens", "repeat_tokens"]
"""What a context spends its budget on (means per question)."""
DIAGNOSES = ["write_failure", "read_failure", "utilization_failure", "staleness_failure"]


def mean(values: Iterable[float | bool | None]) -> float | None:
    """The mean of the values that are not None (None when there are none)."""
    present = [float(v) for v in values if v is not None]
    return sum(present) / len(present) if present else None


def latency_summary(seconds: list[float]) -> dict[str, float | None]:
    """avg/p50/p95/max/total as the harness computes them (p50 = sorted[n // 2], p95 = sorted[int(0.95 n)])."""
    ordered = sorted(seconds)
    n = len(ordered)
    if not n:
        return {k: None for k in ("avg_seconds", "p50_seconds", "p95_seconds", "max_seconds")} | {"total_seconds": 0}
    return {
        "avg_seconds": sum(ordered) / n,
        "p50_seconds": ordered[n // 2],
        "p95_seconds": ordered[min(n - 1, int(0.95 * n))],
        "max_seconds": ordered[-1],
        "total_seconds": sum(ordered),
    }


def _breakdown(rows: list[dict]) -> dict[str, Any]:
    if not rows:
        return {"count": 0, "pct_correct": None, "pct_answered_wrong": None, "pct_unknown": None}
    unknown = sum(1 for r in rows if r.get("is_unknown"))
    correct = sum(1 for r in rows if r.get("score_bool") and not r.get("is_unknown"))
    n = len(rows)
    return {
        "count": n,
        "pct_correct": correct / n,
        "pct_answered_wrong": (n - correct - unknown) / n,
        "pct_unknown": unknown / n,
    }


def _accuracy(records: list[dict]) -> dict[str, Any]:
    graded = [r for r in records if r.get("score") is not None]
    non_abst = [r for r in graded if not r["is_abstention_problem"]]
    abst = [r for r in graded if r["is_abstention_problem"]]
    by = lambda rows, cat: [r for r in rows if r["category"] == cat]  # noqa: E731
    return {
        "overall": {
            "overall_full_set": mean(r["score"] for r in graded),
            "overall_non_abstention_only": mean(r["score"] for r in non_abst),
            "overall_abstention_only": mean(r["score"] for r in abst),
            "count_all_questions": len(records),
            "count_non_abstention": sum(1 for r in records if not r["is_abstention_problem"]),
            "count_abstention": sum(1 for r in records if r["is_abstention_problem"]),
            "count_graded": len(graded),
        },
        "non_abstention_by_category": {c: _breakdown(by(non_abst, c)) for c in NON_ABSTENTION},
        "abstention_by_category": {c: _breakdown(by(abst, c)) for c in ABSTENTION},
        "combined_abstention_by_category": {
            c: _breakdown([r for r in graded if r["category"] in pair]) for c, pair in COMBINED.items()
        },
        "abstention_overall": _breakdown(abst),
    }


def reader_free_scores(records: list[dict]) -> dict[str, Any]:
    def block(rows: list[dict]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in READER_FREE:
            values = [r["reader_free"].get(key) for r in rows if r.get("reader_free")]
            out[key] = mean(values)
            out[f"{key}_count"] = sum(v is not None for v in values)
        depths = sorted(d for r in rows if (d := (r.get("reader_free") or {}).get(DEPTH)) is not None)
        out[f"{DEPTH}_median"] = statistics.median(depths) if depths else None
        out[f"{DEPTH}_count"] = len(depths)
        return out

    types = sorted({r["question_type"] for r in records})
    kinds = sorted({r["probe_kind"] for r in records if r.get("probe_kind")})
    out = {
        **block(records),
        "by_question_type": {t: block([r for r in records if r["question_type"] == t]) for t in types},
    }
    if kinds:  # mechanical probe questions (../shared/tools/probe_questions.py): per kind of page unit
        out["by_probe_kind"] = {k: block([r for r in records if r.get("probe_kind") == k]) for k in kinds}
    return out


def _diagnostics(records: list[dict], store_write_failures: int) -> dict[str, Any]:
    out: dict[str, Any] = {"store_write_failures": store_write_failures}
    for key in DIAGNOSES:
        values = [r["diagnosis"].get(key) for r in records if r.get("diagnosis")]
        out[f"{key}s"] = sum(1 for v in values if v)
        out[f"{key}_checked"] = sum(v is not None for v in values)
    return out


def _memory_cost(records: list[dict]) -> dict[str, Any]:
    costs = [r.get("memory") or {} for r in records]
    calls = [c.get("tool_calls") for c in costs if c.get("tool_calls") is not None]
    # input + output only: cached-token counts are part of the input already
    tokens = [
        sum((c.get("model_tokens") or {}).get(k, 0) for k in ("input_tokens", "output_tokens"))
        for c in costs
        if c.get("model_tokens")
    ]
    dollars = [c.get("cost") for c in costs if c.get("cost") is not None]
    return {
        "tool_calls_total": sum(calls) if calls else None,
        "tool_calls_avg": mean(calls),
        "model_tokens_total": sum(tokens) if tokens else None,
        "cost_usd_total": sum(dollars) if dollars else None,
    }


def aggregate(records: list[dict], *, store_write_failures: int = 0) -> dict[str, Any]:
    """aggregated_metrics.json for one run."""
    usage = [r.get("usage") or {} for r in records]
    prompt = sum(u.get("prompt_tokens", u.get("input_tokens", 0)) for u in usage)
    completion = sum(u.get("completion_tokens", u.get("output_tokens", 0)) for u in usage)
    n = len(records)
    original = [r.get("memory_context_original_token_count", 0) for r in records]
    final = [r.get("memory_context_token_count", 0) for r in records]
    return {
        **_accuracy(records),
        "tokens": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "avg_prompt_tokens": prompt / n if n else None,
            "avg_completion_tokens": completion / n if n else None,
        },
        "memory_context": {
            "avg_original_tokens": mean(original),
            "avg_final_tokens": mean(final),
            "num_truncated_sequences": sum(1 for r in records if r.get("memory_context_was_truncated")),
        },
        "memory_query": latency_summary([r["memory_query_duration_seconds"] for r in records]),
        "reader_free": reader_free_scores(records),
        "context_spend": {
            f"{key}_avg": mean((r.get("reader_free") or {}).get(key) for r in records) for key in CONTEXT_SPEND
        },
        "diagnostics": _diagnostics(records, store_write_failures),
        "memory_cost": _memory_cost(records),
        "errors": sum(1 for r in records if r.get("error")),
        "grade_errors": sum(1 for r in records if r.get("grade_error")),
        "completed_at_utc": datetime.now(UTC).isoformat(),
    }


Z95 = 1.959964


def wilson(share: float, n: int) -> tuple[float, float]:
    """The 95% Wilson score interval of a share observed over n questions (0..1; (0, 1) when n is 0)."""
    if n <= 0:
        return 0.0, 1.0
    centre = (share + Z95**2 / (2 * n)) / (1 + Z95**2 / n)
    half = Z95 * math.sqrt(share * (1 - share) / n + Z95**2 / (4 * n * n)) / (1 + Z95**2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)
