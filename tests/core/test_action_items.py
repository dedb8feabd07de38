"""A control whose name repeats on its page ('Remove' on every cart line, 'View' on every order row) is named with
the item it belongs to, on real pages of the shared data; a control named once on its page is left as it is."""

from __future__ import annotations

import pytest

from runbook.core.actions import describe
from tests.conftest import shared_runs

CASES = [
    # the storefront's mini-cart: each line has its 'Remove'; the agent removed the leftover items one by one
    ("wa-shopping-792", 4, "click('2240')", "click link 'Remove' (of 'Kosher MRE Meat Meals Ready to Eat, Beef"),
    # the admin's orders grid: a 'View' link on every row, named by the row's order number
    ("wa-shopping_admin-129", 16, 'click("1535")', "click link 'View' (of '000000136')"),
    # the storefront's My Orders table
    ("wa-shopping-588", 1, "click('1496')", "click link 'View Order' (of '000000194')"),
]


@pytest.fixture(scope="module")
def runs() -> dict[str, dict]:
    return shared_runs(*{tid for tid, *_ in CASES})


def page(runs: dict, tid: str, index: int) -> str:
    return runs[tid]["states"][index]["accessibility_tree"]


@pytest.mark.parametrize(("tid", "index", "action", "named"), CASES)
def test_a_repeated_control_is_named_with_its_item(runs, tid, index, action, named):
    assert describe(action, page(runs, tid, index)).startswith(named)


def test_a_control_named_once_is_left_alone(runs):
    assert describe("click('360')", page(runs, "wa-shopping-792", 4)) == "click link 'View and Edit Cart'"


def test_two_lines_of_one_list_name_different_items(runs):
    cart = page(runs, "wa-shopping-792", 4)
    first, second = describe("click('2203')", cart), describe("click('2240')", cart)
    assert first.startswith("click link 'Remove' (of 'Petansy") and "Kosher MRE" in second


@pytest.mark.parametrize("br", ["\n", "\r\n"])
def test_the_control_is_found_on_its_own_line_past_other_mentions_of_its_id(br):
    # the id's first mention is in a line of text; the control's line comes after, its children under it (a page
    # with other line breaks is split whole, one with "\n" alone is read from mention to mention: the same label)
    page = br.join(
        [
            "RootWebArea 'Cart'",
            "\t[3] StaticText 'press [12] to pay'",
            "\t[5] listitem ''",
            "\t\t[6] StaticText 'Petansy shoes'",
            "\t\t[7] link 'Remove'",
            "\t[10] listitem ''",
            "\t\t[11] StaticText 'Kosher meals'",
            "\t\t[9] link 'Remove'",
            "\t[12] button ''",
            "\t\tStaticText 'Pay now'",
        ]
    )
    assert describe("click('12')", page) == "click button 'Pay now'"
    assert describe("click('9')", page) == "click link 'Remove' (of 'Kosher meals')"
    assert describe("click('44')", page) == "click element 44"


def test_an_answer_that_is_a_number_is_no_element(runs):
    # the agent answered "0" (wa-reddit-28's last state): a message to the user, not a click on element 0
    cart = page(runs, "wa-shopping-792", 4)
    assert describe('send_msg_to_user("0")', cart) == 'send_msg_to_user("0")'
    assert describe("report_infeasible('12 is not a valid order')", cart).startswith("report_infeasible(")
