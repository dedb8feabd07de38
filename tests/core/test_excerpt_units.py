"""A page's excerpt keeps each unit a reader follows whole, on a real page of every site in ../shared/data: a table row
under its header, a count line, a field with its label and value, a setting with its state, a message after an
action; and a page's message is shown whatever the question asks. Each case is a mechanical probe question
(../shared/tools/probe_questions.py) cut at the share one state gets in an 8k context."""

from __future__ import annotations

import pytest

from runbook.core.bm25 import query_terms
from runbook.core.excerpt import Excerpter
from runbook.core.page import parse_page
from runbook.core.question import analyze
from runbook.core.text import tokenize
from tests.conftest import shared_runs

SLICE_TOKENS = 500
"""A state's share of an 8k context (pools.search: budget // 16)."""

CASES = [  # (trajectory, state, question, a line the excerpt must hold whole)
    ("wa-shopping-588", 12, "On the One Stop Market storefront page 'Greaton Fully Assembled Split Wood Traditional "
     "Box Spring/Foundation For Mattress With...', what is the Country of Origin?", "Country of Origin | USA"),
    ("wa-shopping-147", 11, "How many items did the One Stop Market storefront page 'My Orders' list when the agent "
     "viewed it on 2025-12-18 at 04:31 UTC?", "Items 1 to 10 of 45 total"),
    ("wa-shopping_admin-498", 11, "On the Magento admin page '#000000306 / Orders / Operations / Sales / Magento "
     "Admin', what is the Order Date?", "Order Date | Apr 19, 2023, 7:42:16 PM"),
    ("wa-shopping_admin-495", 9, "On the Magento admin page '#000000303 / Orders / Operations / Sales / Magento "
     "Admin', which of these settings were unchecked: 'Notify Customer by Email', 'Visible on Storefront'?",
     "checkbox 'Visible on Storefront' = not checked"),
    ("wa-gitlab-665", 2, "What count did the 'Open' tab show on the GitLab page 'Issues · Byte Blaze / "
     "a11y-syntax-highlighting · GitLab'?", "tablist: Open 1 (selected) · Closed 1 · All 2"),
    ("wa-gitlab-522", 24, "What was 'Project description (optional)' set to on the GitLab page 'Fork project · Meta "
     "/ buck · GitLab'?", "textbox 'Project description (optional)' = A fast build system"),
    ("wa-reddit-729", 4, "How many results did the Postmill forum page 'Search' list?", "8 results for UpliftingNews"),
    ("wa-reddit-735", 7, "What message did the Postmill forum show on '‘The Lord Of The Rings: The Rings Of Power’ "
     "Adds 8 To Season 2 Cast' after the agent clicked the 'Edit submission' button?", "The submission was edited."),
    ("wa-map-425", 4, "On the OpenStreetMap page 'Relation: Lake Pontchartrain Causeway (5475586) | OpenStreetMap', "
     "what is the wikidata?", "wikidata | Wikidata item preview Q1132510"),
    ("inf-linear-account-settings-20260219_022152-h2", 4, "On the Notifications page of the Linear account settings "
     "app, which of these settings were switched off: 'Send immediately for urgent issues', 'Send immediately on SLA "
     "breach'?", "switch 'Send immediately on SLA breach' = off"),
    ("inf-linear-account-settings-20260219_023910-m4", 3, "What message did the Linear account settings app show on "
     "the Security page after the agent clicked 'Remove'?", "Passkey removed"),
    ("inf-shopify-web-performance-20260219_023258-m10", 1, "What was 'Date' set to on the Shopify web performance "
     "dashboard?", "Interaction to Next Paint › textbox 'Date' = 2026-02-14"),
    ("inf-shopify-theme-editor-20260223_193246-e5", 1, "What was 'Heading' set to on the Shopify theme editor?",
     "Slide › textbox 'Heading' = Eco-Friendly Products"),
    ("inf-shopify-theme-editor-20260223_193246-m8", 5, "What message did the Shopify theme editor show on its main "
     "page after the agent clicked 'Save'?", "Theme saved successfully"),
]  # fmt: skip


@pytest.fixture(scope="module")
def runs() -> dict[str, dict]:
    return shared_runs(*{tid for tid, *_ in CASES})


def excerpt_of(state: dict, question: str, site: str = "") -> str:
    analysis = analyze(question)
    query = query_terms(tokenize(" ".join(analysis.terms)), tokenize(" ".join(analysis.phrases)))
    excerpter = Excerpter(query, list(analysis.phrases), {}, None)
    return excerpter.excerpt(parse_page(state["accessibility_tree"]), SLICE_TOKENS, site, state["title"])[0]


@pytest.mark.parametrize(("tid", "index", "question", "line"), CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_the_unit_a_question_asks_about_is_kept_whole(runs, tid, index, question, line):
    run = runs[tid]
    shown = excerpt_of(run["states"][index], question, run["site"])
    assert any(line in shown_line for shown_line in shown.splitlines()), shown


def test_every_site_has_a_case():
    sites = {tid.split("-")[1] if tid.startswith("wa-") else tid.rsplit("-", 2)[0][4:] for tid, *_ in CASES}
    assert sites == {
        "shopping",
        "shopping_admin",
        "gitlab",
        "reddit",
        "map",
        "linear-account-settings",
        "shopify-web-performance",
        "shopify-theme-editor",
    }


def test_a_pages_message_is_shown_whatever_the_question_asks(runs):
    run = runs["wa-shopping_admin-498"]
    shown = excerpt_of(run["states"][11], "What is the Order Date of order #000000306?", run["site"])
    assert "The shipment has been created." in shown and "Order Date | Apr 19, 2023" in shown


def test_a_table_a_match_was_read_in_is_shown_whole_when_it_fits():
    # 'who operates' matches no row: the answer is the 'operator' row of the tags table the other words led to
    run = shared_runs("wa-map-254")["wa-map-254"]
    question = "Who operates Western Pennsylvania Hospital according to its OSM tags, and what phone number is listed?"
    shown = excerpt_of(run["states"][3], question, run["site"])
    assert "operator | Allegheny Health Network" in shown and "phone | +1 412 578 5000" in shown


def test_a_grid_under_a_header_shows_the_rows_that_match_not_the_whole_grid():
    # the storefront's order grid: its rows are ten orders, and the question asks about one of them
    run = shared_runs("wa-shopping-147")["wa-shopping-147"]
    page = parse_page(run["states"][11]["accessibility_tree"])
    rows = [b for b in page.blocks if b.kind == "row" and b.header >= 0]
    analysis = analyze(f"What did {rows[-1].text.split()[0]} cost?")
    query = query_terms(tokenize(" ".join(analysis.terms)), tokenize(" ".join(analysis.phrases)))
    shown = Excerpter(query, list(analysis.phrases), {}, None).excerpt(page, SLICE_TOKENS, run["site"])[0]
    shown_rows = [row.text for row in rows if row.text in shown]
    assert len(rows) == 10 and shown_rows == [rows[-1].text]


def test_a_line_is_shown_with_the_title_of_its_section():
    # Linear's Notifications page lists the issues one is subscribed to under 'Issue subscriptions · You are
    # automatically subscribed to ...', four blocks above the issue the question names: without that title the
    # line 'NEX-1105 · Add dark mode support for mobile app' does not say the agent was subscribed to it
    tid = "inf-linear-account-settings-20260219_022152-e10"
    run = shared_runs(tid)[tid]
    question = (
        "Was the agent subscribed to the issue 'Add dark mode support for mobile app' in the Linear account settings?"
    )
    shown = excerpt_of(run["states"][1], question, run["site"])
    assert "NEX-1105 · Add dark mode support for mobile app" in shown
    assert "- Issue subscriptions · You are automatically subscribed to issues you create" in shown


def test_a_section_the_best_match_titles_is_shown_whole_when_it_fits():
    # 'Issue subscriptions · You are automatically subscribed ...' titles a list of seven issues, each an id and a
    # title ('NEX-856 · Refactor notification service architecture · Backend · created · 29d ago', not a section
    # title of its own); the page's switch rows match the question's words too and took the budget before
    tid = "inf-linear-account-settings-20260219_022152-e10"
    run = shared_runs(tid)[tid]
    shown = excerpt_of(run["states"][2], "Which issue subscriptions are listed in the account settings?", run["site"])
    listed = [line for line in shown.splitlines() if line.startswith("- NEX-")]
    assert len(listed) == 6 and "- NEX-856 · Refactor notification service architecture · Backend" in shown
