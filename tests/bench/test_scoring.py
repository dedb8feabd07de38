"""LongMemEval-V2's scoring rules: normal form, separators, word boundaries, order, choices, spec strings,
\\boxed{} extraction and UNKNOWN."""

from __future__ import annotations

import pytest

from runbook.bench.scoring import (
    EvalSpec,
    mc_choice_match,
    mc_choice_set_match,
    norm_phrase_set_match,
    norm_phrase_set_match_ordered,
    normalize,
    parse_eval_spec,
    score_rule,
    split_phrases,
)
from runbook.errors import ConfigError


@pytest.mark.parametrize(
    "text, normal",
    [
        ("Sales > Orders", "sales orders"),
        ("Check-Out_Page", "check out page"),
        ("$32.88", "3288"),
        ("a,b;c", "a b c"),
        ("  Many   spaces\n\there ", "many spaces here"),
        ("Don't", "dont"),
        (None, ""),
    ],
)
def test_normal_form(text, normal):
    assert normalize(text) == normal


def test_gold_is_split_on_commas_and_semicolons_and_each_part_normalised():
    assert split_phrases("Sales > Orders, Cancel; Hold-On ,") == ["sales orders", "cancel", "hold on"]
    assert split_phrases("a, b", separators=[]) == ["a b"]
    assert split_phrases("a|b", separators=["|"]) == ["a", "b"]


def test_every_phrase_must_occur_in_any_order():
    assert norm_phrase_set_match("Click Cancel in Sales > Orders", "Sales > Orders, cancel")
    assert not norm_phrase_set_match("Click Cancel", "Sales > Orders, cancel")


def test_phrases_match_on_word_boundaries_only():
    assert not norm_phrase_set_match("There are 700 records", "70")
    assert not norm_phrase_set_match("the subcategory", "category")
    assert norm_phrase_set_match("70 records found", "70")


def test_empty_prediction_or_gold_never_matches():
    assert not norm_phrase_set_match("", "70")
    assert not norm_phrase_set_match("70", " , ;")


def test_ordered_variant_needs_the_gold_order():
    assert norm_phrase_set_match_ordered("first Catalog, then Products, then Add", "catalog, products, add")
    assert not norm_phrase_set_match_ordered("Products first, then Catalog", "catalog, products")
    assert norm_phrase_set_match("Products first, then Catalog", "catalog, products")


def test_choice_letters():
    assert mc_choice_match("I pick \\boxed{Option B.}", "B")
    assert not mc_choice_match("\\boxed{C}", "B")
    assert mc_choice_set_match("Final answer: A and C", "C, A")
    assert not mc_choice_set_match("A", "A, C")


def test_spec_strings_name_the_function_and_its_options():
    assert parse_eval_spec("norm_phrase_set_match|separators=,;") == EvalSpec(
        "norm_phrase_set_match", {"separators": [",", ";"]}
    )
    spec = parse_eval_spec('norm_phrase_set_match_ordered | separators=["/"] | require_non_empty=false')
    assert spec.options == {"separators": ["/"], "require_non_empty": False}
    assert parse_eval_spec("llm_gotchas_checker").judged
    for bad in ("", "no_such_function", "norm_phrase_set_match|separators", "mc_choice_match|a=1|a=2"):
        with pytest.raises(ConfigError):
            parse_eval_spec(bad)


def test_separators_from_the_spec_change_the_split():
    reply = "Go to \\boxed{Sales then Orders}"
    assert not score_rule("norm_phrase_set_match", reply, "Sales / Orders")
    assert score_rule("norm_phrase_set_match|separators=/", reply, "Sales / Orders")


def test_the_last_boxed_answer_is_scored_with_nested_braces_kept():
    reply = "Maybe \\boxed{$24.00}? No: the latest is \\boxed{{price: $32.88} after the increase}"
    assert score_rule("norm_phrase_set_match|separators=,;", reply, "$32.88")
    assert not score_rule("norm_phrase_set_match", reply, "$24.00")


def test_unknown_scores_zero_whatever_the_rule_says():
    # the gold phrase is in the reasoning, but the boxed answer is UNKNOWN
    assert not score_rule("norm_phrase_set_match", "It might be 70 but \\boxed{UNKNOWN}", "70")
    assert not score_rule("norm_phrase_set_match", "\\boxed{ unknown }", "unknown")


def test_judged_functions_are_not_rules():
    with pytest.raises(ConfigError):
        score_rule("llm_abstention_checker", "\\boxed{no}", "x")


def test_listed_gold_phrases_replace_a_descriptive_answer():
    # the dev sets describe the answer ("70 records ...") and list the phrases a right answer contains
    reply = "The grid says \\boxed{70 records found}"
    described = "70 records (as 'records found' shows), checked twice"
    assert not score_rule("norm_phrase_set_match|separators=,;", reply, described)
    assert score_rule("norm_phrase_set_match|separators=,;", reply, described, ["70"])
    # each listed phrase is kept whole, even with a separator inside it
    assert not score_rule("norm_phrase_set_match|separators=,;", "\\boxed{$440.64}", "x", ["$440.64, Complete"])
    assert score_rule("norm_phrase_set_match_ordered", "\\boxed{Catalog then Products}", "x", ["catalog", "products"])
    assert not score_rule(
        "norm_phrase_set_match_ordered", "\\boxed{Products then Catalog}", "x", ["catalog", "products"]
    )
