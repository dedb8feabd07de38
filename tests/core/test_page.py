"""The page structure parser on real pages of every site in ../shared/data: an admin grid, a storefront's order
history, the forum, GitLab's project list, OpenStreetMap directions, Linear's settings and a Shopify dialog."""

from __future__ import annotations

import gzip
import json

import pytest

from runbook.core.blocks import Page, blocks_json, page_record, read_page_record
from runbook.core.page import parse_page
from tests.conftest import require_shared

WANTED = {
    ("webarena", "wa-shopping_admin-128", 2),  # Sales > Orders grid
    ("webarena", "wa-shopping-117", 2),  # My Orders
    ("webarena", "wa-reddit-29", 2),  # All forums
    ("webarena", "wa-gitlab-524", 20),  # the projects dashboard
    ("webarena", "wa-map-10", 5),  # directions
    ("infinity", "inf-linear-account-settings-20260219_022152-e7", 1),  # Security & Access
    ("infinity", "inf-shopify-theme-editor-20260223_193246-h10", 2),  # the 'Add section' dialog
    ("infinity", "inf-shopify-web-performance-20260219_023258-m3", 1),  # installed apps, each with its LCP
}


@pytest.fixture(scope="module")
def pages() -> dict[str, Page]:
    """The wanted states' pages, parsed, read once from the shared data sets."""
    data = require_shared()
    out: dict[str, Page] = {}
    for name in ("webarena", "infinity"):
        wanted = {(tid, i) for set_name, tid, i in WANTED if set_name == name}
        with gzip.open(data / name / "trajectories.jsonl.gz", "rt", encoding="utf-8") as fh:
            for line in fh:
                tid = line[8 : line.index('"', 8)] if line.startswith('{"id": "') else json.loads(line)["id"]
                if not any(t == tid for t, _ in wanted):
                    continue
                traj = json.loads(line)
                for t, i in wanted:
                    if t == tid:
                        out[tid] = parse_page(traj["states"][i]["accessibility_tree"])
                if len(out) == len(WANTED) or all(t in out for t, _ in wanted):
                    break
    assert len(out) == len(WANTED), sorted(out)
    return out


def blocks(page: Page, kind: str) -> list[str]:
    return [b.text for b in page.blocks if b.kind == kind]


def test_an_admin_grid_gives_its_count_its_header_and_rows_apart_from_the_menus(pages):
    page = pages["wa-shopping_admin-128"]
    assert page.form == "axtree"
    assert "308 records found" in blocks(page, "count")
    header = next(b for b in page.blocks if b.kind == "header")
    assert "ID" in header.text and "Purchase Date" in header.text and "Grand Total (Base)" in header.text
    rows = [b for b in page.blocks if b.kind == "row"]
    assert len(rows) >= 20 and all(r.header == page.blocks.index(header) for r in rows)
    assert any("000000299" in r.text and "Sarah Miller" in r.text and "Pending" in r.text for r in rows)
    assert "textbox 'per page' = 200" in blocks(page, "field")
    menus = [b for b in page.blocks if b.text == "link 'SALES'"]
    assert menus and all(b.furniture for b in menus)  # the admin's menu bar is furniture
    assert "## Orders" in blocks(page, "heading")


def test_a_storefront_order_history_is_a_table_with_its_pager_count(pages):
    page = pages["wa-shopping-117"]
    assert "Order # | Date | Order Total | Status | Action" in blocks(page, "header")
    assert any(r.startswith("000000170 | 5/17/23 | $365.42 | Canceled") for r in blocks(page, "row"))
    assert "Items 1 to 10 of 37 total" in blocks(page, "count")
    # the pager's select has no label of its own: the words beside it name it
    assert any(f.startswith("combobox 'Show … per page' = 10 (options: 10, 20, 50") for f in blocks(page, "field"))


def test_a_forum_index_is_lists_of_short_items_under_their_headings(pages):
    page = pages["wa-reddit-29"]
    assert "## All forums" in blocks(page, "heading")
    assert "(6) allentown · arlingtonva · Art · AskReddit · askscience · aww" in blocks(page, "list")
    assert all(b.furniture for b in page.blocks if b.text == "link 'Jump to main content'")


def test_gitlabs_project_list_keeps_the_tab_counts_and_each_projects_name(pages):
    page = pages["wa-gitlab-524"]
    assert any(text.startswith("(4) Yours 63 · Starred 11") for text in blocks(page, "list"))
    assert sum(1 for h in blocks(page, "heading") if " / " in h) >= 10  # 'Meta / create-react-app', ...


def test_map_directions_are_the_fields_set_and_the_steps_of_the_route(pages):
    page = pages["wa-map-10"]
    fields = blocks(page, "field")
    assert any(f.startswith("textbox 'From' = Niagara Falls International Airport") for f in fields)
    assert "combobox 'Directions services' = OSRM (options: GraphHopper, OSRM, Valhalla)" in fields
    steps = blocks(page, "row")
    assert any("1. Start on Tuscarora Road | 500m" in s for s in steps) and any("Reach destination" in s for s in steps)


def test_linear_settings_keep_each_authorized_app_on_one_block(pages):
    page = pages["inf-linear-account-settings-20260219_022152-e7"]
    assert page.form == "dom"
    texts = [b.text for b in page.blocks]
    assert (
        "Zendesk · Customer support ticket integration · read:tickets · write:tickets · Authorized Sep 5, 2024" in texts
    )
    assert not any(t.startswith(("<svg", "Current tab", "<page_stats>")) for t in texts)  # markup and tab lines go


def test_a_shopify_dialog_is_the_new_region_with_its_options(pages):
    page = pages["inf-shopify-theme-editor-20260223_193246-h10"]
    new = [b.text for b in page.blocks if b.region == "new"]
    assert "button 'Custom Liquid'" in new and "button 'Map'" in new and "button 'Newsletter'" in new


def test_a_label_and_its_value_in_an_element_of_its_own_read_as_one_line(pages):
    texts = [b.text for b in pages["inf-shopify-web-performance-20260219_023258-m3"].blocks]
    assert "Installed Apps (8) · Total LCP impact: +1590ms" in texts
    # each app's card is one line: its name, then each metric's label with its value
    assert any(t.startswith("Instafeed Instagram Feed · ") and t.endswith(" · LCP: +320ms · INP: +25ms · CLS: +0.06")
               for t in texts)  # fmt: skip
    assert "+320ms" not in texts and "INP:" not in texts


def test_a_page_record_reads_back_as_the_same_blocks(pages):
    page = pages["wa-shopping-117"]
    header, back = read_page_record(page_record({"title": "My Orders"}, page))
    assert header == {"title": "My Orders"} and back == page


def test_a_page_record_is_the_json_line_of_its_header_form_and_blocks(pages):
    # the record is composed from its parts (a page shown again has its blocks encoded once): byte for byte what
    # json.dumps writes of the whole, non-ASCII text, quotes and backslashes included
    page = parse_page("RootWebArea 'Café'\n\t[1] heading 'Prix: 12 € \"net\" \\\\ ✓'\n\t[2] StaticText 'naïve'")
    header = {"title": 'Café "x"', "action": "click('1')", "error": "", "thought": "à\\b"}
    for shown in (page, pages["wa-shopping-117"]):
        blocks = [[b.kind, b.region, b.start, b.end, b.header, b.text] for b in shown.blocks]
        whole = json.dumps({"h": header, "f": shown.form, "b": blocks}, ensure_ascii=False).encode("utf-8")
        assert page_record(header, shown) == whole == page_record(header, shown, blocks_json(shown))


def test_unknown_text_is_one_block_per_line_that_says_something():
    page = parse_page("Welcome back\n\n   \nYour order 42 has been shipped.\n---")
    assert [(b.kind, b.text) for b in page.blocks] == [("text", "Welcome back"),
                                                       ("message", "Your order 42 has been shipped.")]  # fmt: skip
