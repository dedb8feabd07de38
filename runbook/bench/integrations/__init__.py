"""Adapters that run runbook inside other benchmarks' harnesses: `lme_v2` for LongMemEval-V2's."""
