"""What a program works out from the pages before a reader sees them: counts with the filters they were taken
under, the newest value of a quoted label, the largest or smallest row of a named column; nothing when the
question's own words do not ground it."""

from __future__ import annotations

from runbook.core.findings import View, findings
from runbook.core.page import parse_page
from runbook.core.question import analyze


def grid(count: int, keyword: str = "", rows: tuple[tuple[str, str, str], ...] = ()) -> str:
    lines = ["RootWebArea 'Orders / Operations / Sales / Magento Admin'", "\t[5] main ''"]
    if keyword:
        lines.append(f"\t\t[7] textbox 'Search by keyword' value='{keyword}'")
    lines += [f"\t\tStaticText '{count}'", "\t\tStaticText 'records found'"]
    if rows:
        lines += ["\t\t[8] table ''", "\t\t\t[9] row ''", "\t\t\t\t[10] columnheader 'Product'",
                  "\t\t\t\t[11] columnheader 'Price'", "\t\t\t\t[12] columnheader 'Quantity'"]  # fmt: skip
        for n, (name, price, qty) in enumerate(rows):
            lines += [f"\t\t\t[{20 + n}] row ''", f"\t\t\t\t[{30 + n}] gridcell '{name}'",
                      f"\t\t\t\t[{40 + n}] gridcell '{price}'", f"\t\t\t\t[{50 + n}] gridcell '{qty}'"]  # fmt: skip
    return "\n".join(lines)


def view(tid: str, index: int, time: str, text: str, best: tuple[str, ...] = (), title: str = "") -> View:
    title = title or "Orders / Operations / Sales / Magento Admin"
    return View(tid, index, time, title, parse_page(text), list(best))


def test_a_count_question_gets_each_count_with_the_filter_it_was_taken_under():
    analysis = analyze("How many orders does the Sales > Orders grid report?")
    views = [
        view("a", 1, "2025-12-17T10:00", grid(1, keyword="000000307")),
        view("b", 2, "2025-12-16T09:00", grid(308)),
    ]
    lines = findings(analysis, views)
    assert lines[0].startswith("Counts shown: '1 records found' on Orders / Operations / Sales (a state 1")
    assert "textbox 'Search by keyword' = 000000307" in lines[0]
    assert lines[1] == (
        "Counts shown: '308 records found' on Orders / Operations / Sales (b state 2, "
        "2025-12-16 09:00; no filter or search set)"
    )
    # asked for the count with nothing set: the views with nothing set come first
    unfiltered = findings(analyze("How many orders does the Sales > Orders grid report with no filters?"), views)
    assert unfiltered[0].startswith("Counts shown: '308 records found'")


def test_the_page_the_menu_path_names_leads_before_pages_that_only_mention_it():
    analysis = analyze("How many orders does the Sales > Orders grid report?")
    views = [
        view("a", 8, "2025-12-18", grid(0), title="#000000301 / Orders / Operations / Sales / Magento Admin"),
        view("b", 10, "2025-12-18", grid(0), title="Orders Report / Sales / Reports / Magento Admin"),
        view("c", 5, "2025-12-22", grid(308)),
    ]
    lines = findings(analysis, views)
    assert lines[0].startswith("Counts shown: '308 records found' on Orders / Operations / Sales (c state 5")
    assert len(lines) == 3


def test_a_count_on_a_page_the_question_does_not_name_is_left_out():
    analysis = analyze("How many reviews does the Marketing > All Reviews grid list?")
    assert findings(analysis, [view("a", 1, "2025-12-17", grid(12))]) == []


def test_the_newest_view_of_a_quoted_label_leads_then_its_earlier_values():
    analysis = analyze("How many projects does the 'Yours' tab currently count?")
    views = [
        view("old", 1, "2025-12-16T08:00", "x", best=("(4) Yours 14 · Starred 3",)),
        view(
            "new",
            9,
            "2025-12-24T12:15",
            "x",
            best=("Every project is different, consider which apply to yours", "(4) Yours 63 · Starred 11"),
        ),  # fmt: skip
    ]
    lines = findings(analysis, views)
    assert lines[0] == "Newest view: '(4) Yours 63 · Starred 11' (new state 9, 2025-12-24 12:15)"
    assert lines[1] == "Earlier: '(4) Yours 14 · Starred 3' (old state 1, 2025-12-16 08:00)"


def test_a_value_question_without_a_quoted_label_or_id_gets_no_guess():
    analysis = analyze("What theme is active now?")
    assert findings(analysis, [view("a", 1, "2025-12-16", "x", best=("Dawn · Active",))]) == []


def test_the_largest_number_of_the_named_column_is_worked_out():
    rows = (("Quest Lumaflex Band", "$19.00", "100"), ("Zing Jump Rope", "$12.00", "5"), ("Sprite Ball", "$23.00", "7"))
    analysis = analyze("Which product in the catalog grid has the highest price?")
    lines = findings(analysis, [view("a", 3, "2025-12-16T10:00", grid(3, rows=rows))])
    assert lines == [
        "Worked out: largest 'Price' of 3 rows (23): Sprite Ball | $23.00 | 7 (a state 3, 2025-12-16 10:00)"
    ]
    cheapest = findings(
        analyze("Which product has the lowest quantity?"), [view("a", 3, "2025-12-16", grid(3, rows=rows))]
    )
    assert cheapest[0].startswith("Worked out: smallest 'Quantity' of 3 rows (5): Zing Jump Rope")


def test_cards_that_label_their_numbers_are_a_table_for_the_largest():
    cards = ["[Start of page]", "Installed Apps (3)"]
    for name, lcp, inp in (
        ("Loox Reviews", "+180ms", "+35ms"),
        ("Instafeed", "+320ms", "+25ms"),
        ("Hotjar", "+90ms", "+110ms"),
    ):
        cards += [
            name,
            "LCP:",
            "*[1]<span />",
            f"\t{lcp}",
            "INP:",
            "*[2]<span />",
            f"\t{inp}",
            "[3]<button />",
            "\tUninstall",
        ]
    apps = view("apps", 1, "2026-02-19T02:33", "\n".join(cards), title="Apps")
    lines = findings(analyze("Which installed app adds the largest LCP impact?"), [apps])
    assert lines == [
        "Worked out: largest 'LCP' of 3 rows (320): Instafeed | +320ms | +25ms (apps state 1, 2026-02-19 02:33)"
    ]
    assert findings(analyze("Which installed app adds the smallest INP?"), [apps])[0].startswith(
        "Worked out: smallest 'INP' of 3 rows (25): Instafeed"
    )


def test_the_most_recent_is_a_time_not_a_largest_value():
    rows = (("A", "$1.00", "1"), ("B", "$2.00", "2"))
    assert findings(analyze("What is the most recent order's price?"), [view("a", 1, "2025", grid(2, rows=rows))]) == []


def test_a_failed_step_comes_with_the_steps_its_run_took_next():
    from runbook.core.findings import Attempt, recovery_findings

    error = (
        "TimeoutError: Locator.scroll_into_view_if_needed: Timeout 494ms exceeded. ⏎ Call log: ⏎ "
        "attempting scroll into view action ⏎   -   waiting for element to be stable ⏎   -   element is not visible"
    )
    first = [
        Attempt("adm-0", 3, "2025-12-16T06:50:16Z", "click('744')  [744 = option 'Year']", error),
        Attempt("adm-0", 4, "2025-12-16T06:51:07Z", "press('741', 'ArrowDown')  [741 = combobox 'Period']"),
    ]
    same_again = [  # the same failure in another run, its timeout a few milliseconds off: shown once
        Attempt("adm-1", 5, "2025-12-17T06:00:00Z", "click('744')  [744 = option 'Year']", error.replace("494", "496")),
        Attempt("adm-1", 6, "2025-12-17T06:01:00Z", "click('745')"),
    ]
    last = [Attempt("adm-2", 9, "2025-12-18T06:00:00Z", "click('12')  [12 = button 'Save']", "TimeoutError: x")]
    lines = recovery_findings([first, same_again, last])
    assert len(lines) == 2
    assert lines[0].startswith("Failed step: adm-0 state 3 (2025-12-16 06:50): click('744')  [744 = option 'Year']")
    assert "element is not visible" in lines[0]
    assert "next: s4 press('741', 'ArrowDown')  [741 = combobox 'Period'] ran without error" in lines[0]
    assert lines[1].endswith("the run ended there")


def product(price: str) -> str:
    return "\n".join(
        [
            "RootWebArea 'Quartz Thermal Pant / Products / Inventory / Catalog / Acme Admin'",
            "\t[5] main ''",
            "\t\t[6] LabelText ''",
            "\t\t\tStaticText 'Product Name'",
            "\t\t[7] textbox 'Product Name' value='Quartz Thermal Pant'",
            "\t\t[8] textbox 'Price' value='" + price + "'",
            "\t\t[9] textbox 'Quantity' value='31'",
        ]
    )


def test_a_changed_value_is_told_with_what_it_was_and_when_it_changed():
    analysis = analyze("What does Quartz Thermal Pant cost now?")
    title = "Quartz Thermal Pant / Products / Inventory / Catalog / Acme Admin"
    name = ("textbox 'Product Name' = Quartz Thermal Pant",)
    views = [
        view("run", 7, "2026-01-12T14:57", product("16.15"), name, title),
        view("run", 5, "2026-01-12T14:56", product("19.00"), name, title),
    ]
    lines = findings(analysis, views)
    assert lines[0] == (
        "Changed on Quartz Thermal Pant / Products / Inventory / Catalog: 'Price' 19.00 -> 16.15 "
        "(between run state 5, 2026-01-12 14:56 and run state 7, 2026-01-12 14:57)"
    )
    # the newest view's best line is the product's name: no answer to what it costs, so it is not told
    assert not any("Product Name" in line for line in lines)


def test_the_newest_view_shows_the_line_with_the_value_not_the_bare_label():
    page = "\n".join(
        [
            "RootWebArea 'Configuration / Settings / Acme Admin'",
            "\t[5] main ''",
            "\t\tStaticText 'Store Email'",
            "\t\t[7] textbox 'Store Email' value='support@acme.example'",
        ]
    )
    best = ("Store Email", "textbox 'Store Email' = support@acme.example")
    lines = findings(
        analyze("What is the Store Email currently set to?"), [view("r", 4, "2026-01-15T17:31", page, best)]
    )
    assert lines == ["Newest view: 'textbox 'Store Email' = support@acme.example' (r state 4, 2026-01-15 17:31)"]


def test_the_view_of_the_moment_asked_about_leads_a_value_question():
    analysis = analyze("What was 'Store Email' set to when the agent was there on 2025-12-16?")
    page = "RootWebArea 'Configuration'\n\t[7] textbox 'Store Email' value='{}'"
    views = [
        view("new", 1, "2025-12-20T10:00", page.format("b@x.example"), ("textbox 'Store Email' = b@x.example",)),
        view("old", 1, "2025-12-16T10:00", page.format("a@x.example"), ("textbox 'Store Email' = a@x.example",)),
    ]
    lines = findings(analysis, views)
    assert lines[0].startswith("At the time asked: 'textbox 'Store Email' = a@x.example' (old state 1")


def test_a_count_asked_at_a_moment_leads_with_that_moments_view():
    analysis = analyze("How many records did the Sales > Orders grid list when the agent viewed it on 2025-12-16?")
    views = [view("a", 1, "2025-12-17T10:00:00Z", grid(310)), view("b", 2, "2025-12-16T09:00:00Z", grid(308))]
    assert findings(analysis, views)[0].startswith(
        "Counts shown: '308 records found' on Orders / Operations / Sales (b"
    )


def test_two_runs_of_one_task_are_compared_by_the_steps_only_one_took():
    from runbook.core.findings import Attempt, run_comparison

    failed = [
        Attempt("f", 0, "", "fill textbox 'Email' with 'emma@example.com'"),
        Attempt("f", 1, "", "click button 'Go'"),
        Attempt("f", 2, "", "send_msg_to_user('done')"),
    ]
    succeeded = [
        Attempt("s", 0, "", "fill textbox 'Email' with 'emma@gmail.com'"),
        Attempt("s", 1, "", "click button 'Go'"),
    ]
    (line,) = run_comparison(failed, succeeded, "Subscribe to the newsletter")
    assert line == (
        "Compared, same task ('Subscribe to the newsletter'): failed run f and successful run s. Only the successful "
        "run: s0 fill textbox 'Email' with 'emma@gmail.com'. Only the failed run: s0 fill textbox 'Email' with "
        "'emma@example.com'"
    )
    assert run_comparison(failed[1:], succeeded[1:], "x") == []  # the same steps: nothing to tell
