"""aggregated_metrics.json from records: the harness's formulas and field names, runbook's own blocks."""

from __future__ import annotations

import pytest

from runbook.bench.metrics import aggregate, latency_summary


def record(
    qid, category, score, *, abstention=False, unknown=False, seconds=1.0, phrases=None, diagnosis=None, memory=None
):
    return {
        "question_id": qid,
        "question_type": category,
        "category": category,
        "is_abstention_problem": abstention,
        "score": score,
        "score_bool": bool(score),
        "is_unknown": unknown,
        "memory_query_duration_seconds": seconds,
        "reader_free": {"answer_phrases": phrases},
        "diagnosis": diagnosis or {},
        "memory": memory or {},
        "usage": {"input_tokens": 100, "output_tokens": 10},
    }


def test_latency_percentiles_follow_the_harness():
    summary = latency_summary([5.0, 1.0, 3.0, 2.0, 4.0])
    # p50 is sorted[n // 2] and p95 sorted[int(0.95 n)], not interpolated
    assert summary == {
        "avg_seconds": 3.0,
        "p50_seconds": 3.0,
        "p95_seconds": 5.0,
        "max_seconds": 5.0,
        "total_seconds": 15.0,
    }
    assert latency_summary([])["avg_seconds"] is None


def test_accuracy_blocks_use_the_harness_names():
    records = [
        record("a", "static", 1.0),
        record("b", "static", 0.0, unknown=True),
        record("c", "static-abs", 1.0, abstention=True),
        record("d", "dynamic", 0.0),
    ]
    m = aggregate(records)
    assert m["overall"]["overall_full_set"] == 0.5
    assert m["overall"]["overall_non_abstention_only"] == pytest.approx(1 / 3)
    assert m["overall"]["overall_abstention_only"] == 1.0
    assert m["non_abstention_by_category"]["static"] == {
        "count": 2,
        "pct_correct": 0.5,
        "pct_answered_wrong": 0.0,
        "pct_unknown": 0.5,
    }
    assert m["combined_abstention_by_category"]["static"]["count"] == 3
    assert m["tokens"]["prompt_tokens"] == 400 and m["tokens"]["completion_tokens"] == 40


def test_reader_free_runs_have_no_accuracy_but_their_own_scores():
    records = [
        record("a", "static", None, phrases=True, diagnosis={"read_failure": False}),
        record("b", "static", None, phrases=False, diagnosis={"read_failure": True, "write_failure": False}),
        record("c", "static-abs", None, abstention=True),
    ]
    m = aggregate(records, store_write_failures=0)
    assert m["overall"]["overall_full_set"] is None and m["overall"]["count_all_questions"] == 3
    assert m["reader_free"]["answer_phrases"] == 0.5 and m["reader_free"]["answer_phrases_count"] == 2
    assert m["diagnostics"]["read_failures"] == 1 and m["diagnostics"]["read_failure_checked"] == 2


def test_memory_cost_counts_input_and_output_tokens():
    memory = {
        "tool_calls": 3,
        "model_tokens": {"input_tokens": 1000, "output_tokens": 50, "cache_read_tokens": 900},
        "cost": 0.01,
    }
    m = aggregate([record("a", "static", None, memory=memory), record("b", "static", None, memory=memory)])
    assert m["memory_cost"] == {
        "tool_calls_total": 6,
        "tool_calls_avg": 3.0,
        "model_tokens_total": 2100,
        "cost_usd_total": 0.02,
    }
