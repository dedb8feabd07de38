"""Each unit a reader follows is kept whole, on real pages of every site in ../shared/data: a table row inside a tab
panel, a date with its moment, a value in a cell whose name is a template, a control named by the words beside it,
and on browser-use DOM text a setting with its name and description, a row of switches under its column names, a
label with the value that follows it; and what a page said back to an action, marked as a message."""

from __future__ import annotations

import pytest

from runbook.core.messages import messages, with_replies
from runbook.core.page import parse_page
from tests.conftest import shared_runs

RUNS = {
    "product": ("wa-shopping-588", 12),  # a storefront product page: its details sit in a tab panel
    "commits": ("wa-gitlab-791", 23),  # GitLab: 'authored 4 hours ago' with the moment in the time element's name
    "directions": ("wa-map-10", 5),  # OSM directions: 'Distance: . Time: .' with the values in live regions
    "orders": ("wa-shopping-191", 10),  # the storefront's orders table: 'View OrderReorder' as one cell name
    "preferences": ("inf-linear-account-settings-20260219_022152-e4", 2),  # Linear: settings, switches, selects
    "notifications": ("inf-linear-account-settings-20260219_022152-e10", 1),  # Linear: a grid of switches
    "targets": ("inf-shopify-web-performance-20260219_023258-h7", 8),  # Shopify: number inputs under their metric
    "product_edit": ("wa-shopping_admin-503", 3),  # Magento's product form: selects named 'notice-TB7E7IL'
}


@pytest.fixture(scope="module")
def runs() -> dict[str, dict]:
    return shared_runs(*{tid for tid, _ in RUNS.values()}, "inf-linear-account-settings-20260219_022152-e3")


def texts(runs: dict, name: str) -> list[str]:
    tid, index = RUNS[name]
    return [b.text for b in parse_page(runs[tid]["states"][index]["accessibility_tree"]).blocks]


def test_a_control_named_by_a_code_the_page_generated_takes_its_label_beside_it(runs):
    from runbook.core.actions import describe

    shown = texts(runs, "product_edit")
    assert "combobox '[global] Stock Status' = In Stock (options: In Stock, Out of Stock)" in shown
    assert not any("notice-TB7E7IL" in t for t in shown)
    tid, index = RUNS["product_edit"]
    state = runs[tid]["states"][index]  # the agent opened that select: its note says which one
    assert describe(state["action"], state["accessibility_tree"]) == "click combobox '[global] Stock Status'"


def test_a_tab_panels_details_table_is_read_row_by_row(runs):
    shown = texts(runs, "product")
    assert "Country of Origin | USA" in shown and "Item Weight | 1 pounds" in shown
    assert "tablist: Details · Reviews" in shown  # the tabs stay one line


def test_a_time_shows_what_the_page_says_and_the_moment_it_stands_for(runs):
    assert any("4 hours ago (Dec 19, 2025 9:45am GMT)" in t for t in texts(runs, "commits"))


def test_a_cell_whose_name_leaves_its_values_out_reads_from_its_words(runs):
    assert any(t.startswith("Distance: 11km . Time: 0:18") for t in texts(runs, "directions"))
    assert any(t.endswith("| View Order Reorder") for t in texts(runs, "orders"))


def test_a_dom_setting_is_its_name_value_and_description_under_its_group(runs):
    shown = texts(runs, "preferences")
    assert (
        "Interface and theme › switch 'Pointer cursor on interactive elements' = off "
        "(Show a pointer cursor when hovering over clickable elements)" in shown
    )
    assert "Default home view: Active issues" in shown and "Theme: System preference" in shown


def test_a_row_of_switches_is_one_line_under_its_column_names(runs):
    shown = texts(runs, "notifications")
    assert (
        "switches 'Cycle updates': Desktop = off · Mobile = off · Email = on · Slack = off "
        "(Cycle starts, ends, and progress summaries)" in shown
    )
    assert "switch 'Mobile' = off (Receive push notifications on your mobile device)" in shown


def test_number_inputs_carry_the_metric_they_sit_under(runs):
    shown = texts(runs, "targets")
    assert any(t.startswith("LCP (Largest Contentful Paint) › textbox 'Target (ms)' = ") for t in shown), shown


def test_what_a_page_said_back_in_place_is_a_message(runs):
    run = runs["inf-linear-account-settings-20260219_022152-e3"]
    states = run["states"]
    pages = [parse_page(s["accessibility_tree"]) for s in states]
    marked = with_replies(pages, [s["url"] for s in states], [bool(s["action"]) for s in states])
    assert messages(marked[1]) == ["Pronouns updated"]
    assert messages(pages[1]) == []  # the parsed page itself (shared, cached) is not changed


def test_a_banner_on_every_page_is_no_reply_to_an_action():
    from runbook.core.messages import replies

    banner = "\t\t[2] alert ''\n\t\t\tStaticText 'Failed to synchronize data to the service.'"
    before = parse_page("RootWebArea 'Products'\n\t[1] main ''\n" + banner)
    after = parse_page("RootWebArea 'Products'\n\t[1] main ''\n" + banner + "\n\t\tStaticText 'You saved the product.'")
    assert replies([before, after]) == [["Failed to synchronize data to the service."], ["You saved the product."]]


def test_a_confirmation_left_unanswered_is_found_and_an_answered_one_is_not():
    from runbook.core.messages import unanswered_dialogs

    left, answered = "inf-linear-account-settings-20260219_022152-h4", "inf-linear-account-settings-20260219_022152-m5"
    found = {}
    for tid, run in shared_runs(left, answered).items():
        states = run["states"]
        pages = [parse_page(s["accessibility_tree"]) for s in states]
        found[tid] = unanswered_dialogs(pages, [s["accessibility_tree"] for s in states], [s["action"] for s in states])
    assert [(d.index, d.buttons) for d in found[left]] == [(1, ["Cancel", "Disconnect"])]
    assert found[answered] == []  # the agent clicked the dialog's own 'Disconnect'


def test_the_answer_to_a_confirmed_dialog_is_a_message_though_the_page_came_back_around_it():
    from runbook.core.messages import replies

    tid = "inf-linear-account-settings-20260219_022152-e8"  # Revoke, then the dialog's own Revoke: a toast
    states = shared_runs(tid)[tid]["states"]
    pages = [parse_page(s["accessibility_tree"]) for s in states]
    said = replies(with_replies(pages, [s["url"] for s in states], [bool(s["action"]) for s in states]))
    assert said[2][0].startswith("Are you sure you want to revoke the API key") and said[3] == ["API key revoked"]


@pytest.mark.parametrize(
    ("tid", "index", "reply"),
    [
        ("inf-shopify-web-performance-20260219_023258-e4", 3, "Alert rule removed"),  # Remove, then the modal's
        ("inf-shopify-web-performance-20260219_023258-h2", 3, 'Theme "Craft" activated'),
    ],
)
def test_the_answer_after_a_modal_the_page_text_does_not_mark_is_a_message(tid, index, reply):
    # browser-use DOM text shows the confirmation modal as plain lines, no dialog: the page compared with itself
    # two steps before (the modal gone) has the answer as its only new line
    from runbook.core.messages import replies

    states = shared_runs(tid)[tid]["states"]
    pages = [parse_page(s["accessibility_tree"]) for s in states]
    said = replies(with_replies(pages, [s["url"] for s in states], [bool(s["action"]) for s in states]))
    assert reply in said[index]


def test_a_grid_that_says_why_it_is_empty_says_it_as_a_message():
    # the admin's grid: a row of one cell, 'We couldn't find any records.', under the column names
    tid = "wa-shopping_admin-0"
    page = parse_page(shared_runs(tid)[tid]["states"][2]["accessibility_tree"])
    assert "We couldn't find any records." in messages(page)
    assert not any(b.kind == "row" and "couldn't find" in b.text for b in page.blocks)


def test_a_row_the_page_announces_is_a_message(runs):
    # OSM's route summary: the distance and time sit in status regions inside the row's cell
    tid, index = RUNS["directions"]
    page = parse_page(runs[tid]["states"][index]["accessibility_tree"])
    said = [m for m in messages(page) if m.startswith("Distance:")]
    assert len(said) == 1 and "Time:" in said[0] and any(ch.isdigit() for ch in said[0])


def test_what_repeats_the_typed_text_is_no_answer_from_the_page():
    from runbook.core.messages import without_echoes

    said = [[], ["egpast egpast"], ["Member added"], ["You saved the product."]]
    actions = ["fill('12', 'egpast')", "click('13')", "fill('14', 'Rocco')", ""]
    # the suggestions after typing 'egpast' go; what the page said after a click stays, whatever it repeats
    assert without_echoes(said, actions) == [[], [], ["Member added"], ["You saved the product."]]


def test_a_row_read_before_makes_the_block_a_first_reading_makes():
    # each distinct row's block is kept (core.page._rows_read): met again at other lines, under another header or
    # none, the row keeps its own lines, the header it now sits under and its kind
    from runbook.core import page

    row = "\t\trow ''\n\t\t\tgridcell 'Blue shirt'\n\t\t\tgridcell '$12'"
    first = f"RootWebArea 'Shop'\n\ttable ''\n\t\trow ''\n\t\t\tcolumnheader 'Item'\n\t\t\tcolumnheader 'Price'\n{row}"
    again = f"RootWebArea 'Shop'\n\theading 'Cart'\n\ttable ''\n{row}\n\t\trow ''\n\t\t\tgridcell ''"
    fresh = []
    for text in (first, again):
        page._rows_read.clear()
        fresh.append(page._axtree_blocks(text.split("\n")))
    read_again = [page._axtree_blocks(text.split("\n")) for text in (first, again, again)]  # the row kept
    assert read_again == [*fresh, fresh[1]]
    assert [(b.kind, b.start, b.end, b.header) for b in fresh[1] if b.kind == "row"] == [("row", 3, 5, -1)]
    assert [(b.kind, b.header) for b in fresh[0] if b.kind == "row"] == [("row", 0)]


def test_a_line_read_under_another_element_id_reads_as_it_would_alone():
    # a line's reading is kept without its element id (core.page._read_without_id): the same line under another id
    # reads the same, and a line whose id is followed by no role is text, id and all, as _ax_line reads it
    from runbook.core import page

    lines = ["\t[12] link 'Orders', focused", "\t[340] link 'Orders', focused", "\t[7] 'quoted text'", "\t[8] [9] x"]
    page._read.clear()
    page._read_without_id.clear()
    read = page._read_lines(lines)
    assert read == [page._ax_line(line) for line in lines]
    assert read[0] is read[1] and read[1] == ("link", "Orders", {"focused": "True"}, 1)
    assert read[2][:2] == ("StaticText", "[7] 'quoted text'") and read[3][1] == "[8] [9] x"
