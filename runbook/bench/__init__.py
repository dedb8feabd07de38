"""The benchmark: methods run end to end over question sets, scored LongMemEval-V2's way, compared on a chart.

    config = load_config("eval/dev.toml")            runbook.bench.config: question sets, methods x budgets, reader
    results = run_bench(config)                      runbook.bench.runner: one run folder per (method, budget)
    report = build_report(["eval/runs/dev"])         runbook.bench.report: table, Pareto chart + CSV, LAFS

Underneath: questions (the three question-set layouts), stores (one store per haystack, keyed by content),
evidence (reader-free scores and the failure diagnosis), grading + scoring (reader answers, rules and judges),
metrics (aggregated_metrics.json), run_folder (resumable run files), lafs, pareto; integrations.lme_v2 is the
adapter that runs runbook inside LongMemEval-V2's own harness.
"""

from .config import BenchConfig, MethodSpec, ReaderSpec, load_config
from .report import build_report
from .runner import RunOptions, run_bench

__all__ = ["BenchConfig", "MethodSpec", "ReaderSpec", "load_config", "run_bench", "RunOptions", "build_report"]
