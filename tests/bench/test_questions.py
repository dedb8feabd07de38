"""Question sets in their three layouts, each question tied to its haystack."""

from __future__ import annotations

import json

import pytest

from runbook.bench.questions import StateRef, load_question_set
from runbook.errors import InputError


def test_generated_layout_has_one_whole_file_haystack(generated_set):
    qs = load_question_set(generated_set.parent)
    assert qs.layout == "generated" and len(qs.questions) == 4
    (haystack,) = qs.haystacks
    assert haystack.source == generated_set.parent / "trajectories.jsonl" and haystack.trajectory_ids is None
    dynamic = qs.questions[1]
    assert dynamic.is_dynamic and dynamic.stale_evidence == [StateRef("t-old-price", 0)]
    assert dynamic.category == "dynamic" and not dynamic.is_abstention
    assert qs.questions[2].is_abstention and qs.questions[2].category == "static-abs"


def test_dev_layout_finds_each_set_beside_the_file(dev_set):
    qs = load_question_set(dev_set, limit=2)
    assert qs.layout == "dev" and [q.id for q in qs.questions] == ["q-static", "q-dynamic"]
    assert qs.haystacks[0].source.name == "trajectories.jsonl.gz" and qs.haystacks[0].name == "shop"


def test_dev_layout_names_a_missing_set(tmp_path):
    path = tmp_path / "questions_dev_x.jsonl"
    path.write_text(
        json.dumps(
            {
                "id": "q",
                "set": "nowhere",
                "question": "q?",
                "question_type": "procedure",
                "eval_function": "norm_phrase_set_match",
            }
        )
        + "\n"
    )
    with pytest.raises(InputError, match="'nowhere' names no folder"):
        load_question_set(path)


def test_lme_layout_groups_questions_by_their_haystack(lme_root):
    qs = load_question_set(lme_root, tier="small")
    assert qs.layout == "lme-v2"
    shared, subset = qs.haystacks
    assert [q.haystack for q in qs.questions].count(shared) == 3
    assert subset.trajectory_ids == ("t-filters", "t-cancel") and subset.name.startswith("small-")
    assert qs.questions[0].image == str((lme_root / "screenshots" / "q.png").resolve())
    assert qs.questions[0].domain == "web"
    with pytest.raises(InputError, match="tier 'medium'"):
        load_question_set(lme_root, tier="medium")


def test_the_harness_runtime_question_form_is_read(lme_root):
    path = lme_root / "questions.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[1]["question"] = {"text": "What is the price now?", "image": "screenshots/q.png"}
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    q = load_question_set(lme_root).questions[1]
    assert q.question == "What is the price now?" and q.image.endswith("screenshots/q.png")


def test_a_malformed_line_is_named(tmp_path):
    (tmp_path / "trajectories.jsonl").write_text("{}\n")
    (tmp_path / "questions.jsonl").write_text('{"id": "a"}\n{broken\n')
    with pytest.raises(InputError, match=r"questions.jsonl:2: malformed JSON"):
        load_question_set(tmp_path)


def test_questions_drawn_elsewhere_find_their_sets_under_the_data_folder(tmp_path):
    """Probe questions (../shared/tools/probe_questions.py --out anywhere) name the sets of ../shared/data."""
    from tests.conftest import require_shared

    data = require_shared()
    row = {"id": "probe-1", "set": "webarena", "question_type": "static-environment", "probe_kind": "table",
           "question": "What is the Country of Origin?", "eval_function": "norm_phrase_set_match",
           "answer_phrases": ["USA"]}  # fmt: skip
    path = tmp_path / "probes.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(InputError, match="names no folder"):
        load_question_set(path)
    (question,) = load_question_set(path, data=data).questions
    assert question.haystack.source.parent == data / "webarena" and question.probe_kind == "table"
