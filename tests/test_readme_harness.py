"""What the README tells a researcher about LongMemEval-V2's harness is what the harness does (issue #23, defect 7
and the set-up it found missing)."""

from __future__ import annotations

from pathlib import Path

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
SECTION = README[README.index("**Inside LongMemEval-V2's own harness.**") : README.index("## Micro-benchmarks")]


def test_compute_lafs_is_not_said_to_read_runbooks_files():
    # leaderboard/compute_lafs.py takes accuracy and latency points as arguments; it opens no file
    assert "`leaderboard/compute_lafs.py` does" not in SECTION
    assert "`leaderboard/compute_lafs.py` reads no files" in SECTION
    assert "combine_aggregated_metrics.py" in SECTION


def test_the_harness_set_up_names_what_it_needs_and_the_offline_processor():
    assert "httpx" in SECTION and "HF_HUB_OFFLINE=1" in SECTION
    assert 'AutoProcessor.from_pretrained("Qwen/Qwen3.5-9B")' in SECTION
    assert "runbook export lme-v2" in SECTION and '"tokenizer"' in SECTION
