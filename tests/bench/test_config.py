"""Bench configs: the committed ones load, relative paths start at the config's folder, mistakes are named."""

from __future__ import annotations

from pathlib import Path

import pytest

from runbook.bench.config import budget_label, config_from_dict, load_config
from runbook.errors import ConfigError

EVAL = Path(__file__).resolve().parents[2] / "eval"


def test_the_dev_config_names_all_four_dev_sets_and_six_methods():
    config = load_config(EVAL / "dev.toml")
    assert [q.path.resolve().name for q in config.questions] == [
        "questions_dev_webarena.jsonl",
        "questions_dev_infinity.jsonl",
        "questions_dev2_webarena.jsonl",
        "questions_dev2_infinity.jsonl",
    ]
    # resolved on both sides: ../shared may be a symlink
    assert config.questions[0].path.resolve().parent == (EVAL.parent.parent / "shared" / "data").resolve()
    assert {m.method for m in config.methods} == {"c", "auto", "r", "bm25", "full", "none"}
    assert config.runs_dir == EVAL / "runs" and config.reader is None
    slugs = [p.slug for p in config.points()]
    assert "c-offline-3k" in slugs and "auto-8k" in slugs and "r-8k" in slugs and len(slugs) == len(set(slugs))
    assert config.points()[0].folder == EVAL / "runs" / "dev" / "c-offline-3k"


def test_the_other_committed_configs_load():
    reader = load_config(EVAL / "dev-reader.toml")
    assert load_config(EVAL / "dev2-reader.toml").reader is not None
    assert reader.reader.images is False and reader.reader.max_output_tokens == 200 and reader.budgets == [3000]
    assert load_config(EVAL / "generated.toml").questions[0].path == EVAL / "generated" / "questions.jsonl"


@pytest.mark.parametrize(
    "data, message",
    [
        ({"questions": ["q"], "methods": [{"method": "r"}], "colour": 1}, "unknown key"),
        ({"questions": ["q"], "methods": []}, "at least one"),
        ({"questions": ["q"], "methods": [{"method": "r"}, {"method": "r"}]}, "labels must differ"),
        ({"questions": ["q"], "methods": [{"method": "r", "budget": "8k"}]}, "unknown key"),
        ({"questions": ["q"], "methods": [{"method": "r"}], "reader": {"modle": "x"}}, "unknown key"),
        ({"questions": [{"tier": "small"}], "methods": [{"method": "r"}]}, "path"),
    ],
)
def test_mistakes_are_named(data, message, tmp_path):
    with pytest.raises(ConfigError, match=message):
        config_from_dict(data, base=tmp_path)


def test_budget_labels():
    assert [budget_label(b) for b in (8000, 1500, 700, 32000)] == ["8k", "1.5k", "700", "32k"]
