"""A tiny shop admin written by the tests in each question-set layout: real trajectories, real questions."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

import pytest

from tests.conftest import make_trajectory

PNG_BYTES = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
"""A real 1x1 PNG."""

ORDERS = [
    "RootWebArea 'Orders'\n\t[736] button 'Cancel'\n\t[737] button 'Hold'",
    "RootWebArea 'Orders'\n\tdialog ''\n\t\tStaticText 'Are you sure you want to cancel this order?'\n"
    "\t\t[2741] button 'OK'",
    "RootWebArea 'Orders'\n\tStaticText 'You canceled the order.'\n\tgridcell 'Canceled'",
]


def price_page(price: str) -> str:
    return f"RootWebArea 'Products'\n\tgridcell 'Quest Lumaflex Band'\n\tgridcell 'Price {price}'"


def trajectories() -> list[dict]:
    cancel = make_trajectory("t-cancel", 3, texts=ORDERS, goal="Cancel order 305")
    cancel.states[0].action, cancel.states[1].action = "click('736')", "click('2741')"
    old = make_trajectory("t-old-price", 2, texts=[price_page("$24.00")] * 2, goal="Look up the band's price", start=10)
    new = make_trajectory("t-new-price", 2, texts=[price_page("$32.88")] * 2, goal="Raise the band's price", start=20)
    filters = make_trajectory(
        "t-filters",
        2,
        goal="Find order 305",
        start=30,
        outcome="failure (reward 0.0)",
        texts=[
            "RootWebArea 'Orders'\n\tStaticText 'We couldn't find any records.'\n\t[90] button 'Clear all'",
            "RootWebArea 'Orders'\n\tgridcell '305'",
        ],
    )
    return [t.to_dict() for t in (cancel, old, new, filters)]


def questions() -> list[dict]:
    return [
        {
            "id": "q-static",
            "question_type": "static-environment",
            "eval_function": "norm_phrase_set_match|separators=,;",
            "question": "What does the dialog ask before an order is canceled?",
            "answer": "Are you sure",
            "answer_phrases": ["Are you sure"],
            "evidence": [{"trajectory_id": "t-cancel", "state_index": 1}],
        },
        {
            "id": "q-dynamic",
            "question_type": "dynamic-environment",
            "eval_function": "norm_phrase_set_match",
            "question": "What is the current price of the Quest Lumaflex Band?",
            "answer": "$32.88",
            "answer_phrases": ["$32.88"],
            "evidence": [{"trajectory_id": "t-new-price", "state_index": 0}],
            "stale_evidence": [{"trajectory_id": "t-old-price", "state_index": 0}],
        },
        {
            "id": "q-abs",
            "question_type": "static-environment-abs",
            "eval_function": "llm_abstention_checker",
            "question": "Where is the Shipping Policy page of the admin?",
            "answer": "There is no Shipping Policy page",
            "answer_phrases": [],
            "evidence": [],
        },
        {
            "id": "q-gotcha",
            "question_type": "errors-gotchas",
            "eval_function": "llm_gotchas_checker",
            "question": "Why does the orders grid show no records?",
            "answer": "Old filters are kept: click Clear all",
            "evidence": [{"trajectory_id": "t-filters", "state_index": 0}],
        },
    ]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path


@pytest.fixture
def generated_set(tmp_path) -> Path:
    """`runbook generate`'s layout: questions.jsonl beside trajectories.jsonl."""
    folder = tmp_path / "gen"
    folder.mkdir()
    _jsonl(folder / "trajectories.jsonl", trajectories())
    return _jsonl(folder / "questions.jsonl", [q | {"set": "generated"} for q in questions()])


@pytest.fixture
def dev_set(tmp_path) -> Path:
    """This project's dev layout: each question's `set` is a folder beside the file."""
    root = tmp_path / "data"
    (root / "shop").mkdir(parents=True)
    _jsonl(root / "shop" / "trajectories.jsonl.gz", trajectories())
    return _jsonl(root / "questions_dev_shop.jsonl", [q | {"set": "shop"} for q in questions()])


@pytest.fixture
def lme_root(tmp_path) -> Path:
    """LongMemEval-V2's layout: questions, trajectories and haystacks in one data root."""
    root = tmp_path / "lme"
    (root / "haystacks").mkdir(parents=True)
    (root / "screenshots").mkdir()
    (root / "screenshots" / "q.png").write_bytes(PNG_BYTES)
    _jsonl(root / "trajectories.jsonl", trajectories())
    rows = [
        {k: v for k, v in q.items() if k not in ("answer_phrases", "evidence", "stale_evidence")}
        | {"domain": "web", "image": None}
        for q in questions()
    ]
    rows[0]["image"] = "screenshots/q.png"
    _jsonl(root / "questions.jsonl", rows)
    everything = ["t-cancel", "t-old-price", "t-new-price", "t-filters"]
    mapping = {q["id"]: everything for q in rows}
    mapping["q-gotcha"] = ["t-filters", "t-cancel"]
    (root / "haystacks" / "lme_v2_small.json").write_text(json.dumps(mapping))
    return root
