"""Reader-free scores of a context and the failure diagnosis."""

from __future__ import annotations

import importlib.util

from runbook.bench.evidence import context_text, diagnose, phrase_in, score_context
from runbook.bench.questions import Haystack, Question, StateRef
from runbook.context import Context, EvidenceItem
from tests.conftest import SHARED_DATA, SHARED_TOOLS, require_shared

HAYSTACK = Haystack(SHARED_DATA / "none.jsonl")


def question(kind="dynamic-environment", **fields) -> Question:
    base = dict(
        id="q",
        question_type=kind,
        question="What is the price now?",
        answer="$32.88",
        eval_function="norm_phrase_set_match",
        haystack=HAYSTACK,
        answer_phrases=["$32.88"],
        evidence=[StateRef("new", 2)],
        stale_evidence=[StateRef("old", 1)],
    )
    return Question(**(base | fields))


def item(tid, i, text="", end=None, kind="state") -> EvidenceItem:
    return EvidenceItem(tid, text, state_index=i, end_state_index=end, kind=kind)


def test_phrases_and_evidence_found():
    context = Context("q", 1000, items=[item("new", 0, "Price $32.88", end=3)])
    scores = score_context(question(), context)
    assert scores.answer_phrases and scores.evidence and scores.evidence_share == 1.0
    assert not scores.stale_led and scores.premise_flagged is None


def test_the_phrase_check_is_the_project_scorers():
    text = context_text(Context("q", 10, analysis="Latest price: $32.88 (was $24.00); sku WS05-XS-Black"))
    assert phrase_in(text, "$32.88") and phrase_in(text, "ws05 xs black") and not phrase_in(text, "2.88")
    path = require_shared(SHARED_TOOLS / "score_contexts.py")
    spec = importlib.util.spec_from_file_location("score_contexts", path)
    scorer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scorer)
    for phrase in ("$32.88", "ws05 xs black", "2.88", "Latest", "was $24"):
        assert phrase_in(text, phrase) == scorer.contains(text, phrase)


def test_a_context_that_leads_with_the_older_value_is_stale():
    older_first = Context("q", 1000, items=[item("old", 1, "$24.00"), item("new", 2, "$32.88")])
    latest_first = Context("q", 1000, items=[item("new", 2, "$32.88"), item("old", 1, "$24.00")])
    only_older = Context("q", 1000, items=[item("old", 0, "$24.00", end=4)])
    note_first = Context("q", 1000, items=[item("old", 0, "note", end=4, kind="note"), item("new", 2, "$32.88")])
    assert score_context(question(), older_first).stale_led
    assert not score_context(question(), latest_first).stale_led
    assert score_context(question(), only_older).stale_led
    assert not score_context(question(), note_first).stale_led  # a note shows no page value
    assert score_context(question("static-environment"), older_first).stale_led is None


def test_visual_and_false_premise_questions_have_no_phrase_score():
    context = Context(
        "q", 100, analysis="Found in no stored state: 'Shipping Policy' - the question's premise may be false."
    )
    abstention = question("static-environment-abs", answer_phrases=["Shipping Policy"], evidence=[])
    scores = score_context(abstention, context)
    assert scores.answer_phrases is None and scores.evidence is None and scores.premise_flagged
    assert not score_context(abstention, Context("q", 100, analysis="The page is under Content.")).premise_flagged
    assert score_context(question(visual_only=True), context).answer_phrases is None


def test_diagnosis():
    found = score_context(question(), Context("q", 1000, items=[item("new", 2, "$32.88")]))
    missed = score_context(question(), Context("q", 1000, items=[item("other", 0, "nothing")]))
    assert diagnose(missed, missing_states=0, reader_score=None).read_failure
    reached = diagnose(found, missing_states=0, reader_score=0.0)
    assert not reached.read_failure and reached.utilization_failure and not reached.write_failure
    assert diagnose(found, missing_states=0, reader_score=1.0).utilization_failure is False
    assert diagnose(found, missing_states=0, reader_score=None).utilization_failure is None
    assert diagnose(found, missing_states=1, reader_score=None).write_failure


def test_answer_depth_is_the_tokens_read_before_every_phrase_has_appeared():
    from runbook.budget import count_tokens

    filler = "the grid lists other products and their prices " * 20
    context = Context(
        "q", 8000, analysis="Question kind: dynamic.", items=[item("a", 0, filler), item("new", 2, "Now $32.88 each")]
    )
    scores = score_context(question(), context)
    read = context.to_text()
    head = read[: read.index("32.88") + len("32.88")]
    assert scores.answer_depth == count_tokens(head)
    assert count_tokens(filler) < scores.answer_depth < count_tokens(read)
    assert score_context(question(), Context("q", 100, items=[item("a", 0, filler)])).answer_depth is None


def test_probe_questions_are_scored_per_kind():
    from runbook.bench.metrics import reader_free_scores

    records = [
        {"question_type": "static-environment", "probe_kind": kind, "reader_free": {"answer_phrases": ok,
         "excerpt_recall": ok, "answer_depth": 100 if ok else None}, "memory_query_duration_seconds": 0.1}
        for kind, ok in (("table", True), ("table", False), ("switch", True))
    ]  # fmt: skip
    by = reader_free_scores(records)["by_probe_kind"]
    assert by["table"]["excerpt_recall"] == 0.5 and by["table"]["excerpt_recall_count"] == 2
    assert by["switch"]["answer_depth_median"] == 100
