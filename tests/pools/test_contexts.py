"""Method R's contexts over pages parsed at insert: a grid's count and rows reach the reader, another view of the same
page costs a line instead of a page, and what can be worked out from the pages leads the analysis."""

from __future__ import annotations

from runbook.ingest import insert_paths
from runbook.memory import get_memory
from runbook.pools import insert_listener
from runbook.trajectory import Trajectory
from tests.conftest import make_trajectory, write_jsonl

GRID = "\n".join(
    [
        "RootWebArea 'Reviews / Customer Reviews / Marketing / Magento Admin', focused",
        "\t[1] navigation ''",
        "\t\t[2] link 'MARKETING'",
        "\t[5] main ''",
        "\t\t[6] heading 'Reviews'",
        "\t\tStaticText '345'",
        "\t\tStaticText 'records found'",
        "\t\t[8] table ''",
        "\t\t\t[9] row ''",
        "\t\t\t\t[10] columnheader 'Nickname'",
        "\t\t\t\t[11] columnheader 'Review'",
        "\t\t\t[20] row ''",
        "\t\t\t\t[21] gridcell 'Lumaflex fan'",
        "\t\t\t\t[22] gridcell 'Great band for stretching'",
    ]
    + [f"\t\t[{100 + n}] link 'Filler link {n}'" for n in range(40)]
)
QUESTION = "How many reviews does the Marketing > Reviews grid list?"


def test_a_pages_count_and_rows_reach_the_reader_and_its_repeats_cost_a_line(store, tmp_path):
    runs = [
        make_trajectory(f"run-{n}", 2, texts=[GRID, GRID], goal="Look at the reviews", start=10 * n) for n in range(3)
    ]
    for run in runs:
        for state in run.states:
            state.title = "Reviews / Customer Reviews / Marketing / Magento Admin"
    insert_paths(store, [write_jsonl(tmp_path / "in.jsonl", runs)], listeners=[insert_listener(store)], workers=1)
    context = get_memory("r", store).query(QUESTION, budget=3000)
    assert context.analysis.startswith("Counts shown: '345 records found' on Reviews / Customer Reviews / Marketing")
    states = [item for item in context.items if item.kind == "state"]
    full = [item for item in states if "345 records found" in item.text]
    assert full and "table: Nickname | Review" in full[0].text
    row_question = "What did the reviewer 'Lumaflex fan' write on the Marketing > Reviews grid?"
    first = next(i for i in get_memory("r", store).query(row_question, budget=3000).items if i.kind == "state")
    assert "table: Nickname | Review\n  Lumaflex fan | Great band for stretching" in first.text
    repeats = [item for item in states if item.text.startswith("(the same page as trajectory")]
    assert repeats, [item.text[:80] for item in states]
    assert all(not item.url and not item.goal and item.measure() < 0.6 * full[0].measure() for item in repeats)
    assert len({(item.trajectory_id, item.state_index) for item in states}) == len(states)  # each view cited once


def test_the_sandbox_reader_gives_a_pages_blocks_and_tables(store, tmp_path):
    from runbook.core.reader import StoreReader

    run = make_trajectory("run-0", 2, texts=[GRID, GRID])
    insert_paths(store, [write_jsonl(tmp_path / "in.jsonl", [run])], listeners=[insert_listener(store)], workers=1)
    page = StoreReader(str(store.root)).page("run-0", -1)
    assert page.index == 1 and page.form == "axtree"
    assert any(b.kind == "count" and b.text == "345 records found" for b in page.blocks)
    assert page.tables == [[["Nickname", "Review"], ["Lumaflex fan", "Great band for stretching"]]]


def _grid_run(tid: str, day: int, count: int, note: str = "") -> Trajectory:
    text = GRID.replace("345", str(count)) + (f"\n\t\t[99] paragraph ''\n\t\t\tStaticText '{note}'" if note else "")
    run = make_trajectory(tid, 2, texts=[text, text], goal="Look at the reviews")
    for state in run.states:
        state.title = "Reviews / Customer Reviews / Marketing / Magento Admin"
        state.timestamp = f"2025-12-{day:02d}T0{state.index}:00:00.000Z"
    return run


def test_a_question_that_names_a_day_gets_that_days_view_first(store, tmp_path):
    runs = [_grid_run(f"run-{day}", day, 300 + day) for day in (16, 17, 18, 19, 20)]
    insert_paths(store, [write_jsonl(tmp_path / "in.jsonl", runs)], listeners=[insert_listener(store)], workers=1)
    question = "How many records did the Marketing > Reviews grid list when the agent viewed it on 2025-12-17?"
    states = [i for i in get_memory("r", store).query(question, budget=3000).items if i.kind == "state"]
    assert states[0].trajectory_id == "run-17" and "317 records found" in states[0].text


def test_a_view_folded_into_another_shows_the_lines_only_it_has(store, tmp_path):
    runs = [_grid_run("run-a", 16, 345), _grid_run("run-b", 17, 345, note="Synced with the warehouse at noon")]
    insert_paths(store, [write_jsonl(tmp_path / "in.jsonl", runs)], listeners=[insert_listener(store)], workers=1)
    items = get_memory("r", store).query("What did the reviewer 'Lumaflex fan' write?", budget=3000).items
    folded = [i for i in items if i.kind == "state" and i.trajectory_id == "run-b"]
    assert folded and all(i.text.startswith("(the same page as trajectory run-a state") for i in folded)
    assert any("Synced with the warehouse at noon" in i.text for i in folded)


def test_a_fact_questions_best_page_leads_whole_before_the_notes(store, tmp_path):
    runs = [_grid_run("run-a", 16, 345), _grid_run("run-b", 17, 345)]
    insert_paths(store, [write_jsonl(tmp_path / "in.jsonl", runs)], listeners=[insert_listener(store)], workers=1)
    question = "When the agent looked at the reviews, what did the reviewer 'Lumaflex fan' write?"
    context = get_memory("r", store).query(question, budget=3000)
    first = context.items[0]
    assert first.kind == "state" and any(item.kind == "note" for item in context.items[1:])
    # read whole (its own lines, the site's menus aside), not cut to the lines that match the question
    assert "Lumaflex fan | Great band for stretching" in first.text and "Filler link 39" in first.text
    assert "MARKETING" not in first.text


def test_an_event_shows_the_lines_that_appeared_which_the_question_asks_about(store, tmp_path):
    before = "RootWebArea 'Orders'\n\t[5] main ''\n\t\t[6] button 'Load orders'"
    rows = "\n".join(
        f"\t\t[{100 + n}] paragraph ''\n\t\t\tStaticText 'Order {1000 + n} shipped to city {n}'" for n in range(40)
    )
    run = make_trajectory("run-load", 2, texts=[before, before + "\n" + rows], goal="Load the orders")
    insert_paths(store, [write_jsonl(tmp_path / "in.jsonl", [run])], listeners=[insert_listener(store)], workers=1)
    found = get_memory("r", store).retriever.find("Where was order 1033 shipped after the agent loaded orders?", 3000)
    event = next(hit for hit in found.events if hit.trajectory_id == "run-load")
    assert "Order 1033 shipped to city 33" in event.text and "(+28 more)" in event.text


def _saved_run(tid: str) -> Trajectory:
    """A product form saved with Enter: the page after it says 'You saved the product.' above the same form."""
    form = "\n".join(
        ["RootWebArea 'Bella Tank / Products / Magento Admin'", "\t[5] main ''", "\t\t[6] heading 'Bella Tank'"]
        + [f"\t\t[{10 + n}] textbox 'Field {n}' value='v{n}'" for n in range(30)]
        + ["\t\t[90] button 'Save'"]
    )
    saved = form.replace("\t[5] main ''", "\t[5] main ''\n\t\t[7] alert ''\n\t\t\tStaticText 'You saved the product.'")
    run = make_trajectory(tid, 3, texts=[form, form, saved], goal="Edit the Bella Tank description")
    run.states[1].action = "press('90', 'Enter')"
    for state in run.states:
        state.title = "Bella Tank / Products / Magento Admin"
        state.url = "http://localhost:7780/admin/catalog/product/edit/id/1684/"
    return run


def test_a_states_action_shows_what_the_page_said_back(store, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [_saved_run("run-s")])
    insert_paths(store, [source], listeners=[insert_listener(store)], workers=1)
    found = get_memory("r", store).retriever.find("What did the page say after the agent pressed Enter on Save?", 3000)
    before = next(hit for hit in found.slices if hit.state_index == 1)
    assert before.reply == ["You saved the product."]
    item = get_memory("r", store).retriever.slice_item(before)
    assert "next action: press('90', 'Enter')\nthe page then said: You saved the product." in item.text


def test_a_view_folded_into_one_the_budget_leaves_out_is_shown_as_its_own_page(store, tmp_path):
    runs = [_grid_run("run-a", 16, 345), _grid_run("run-b", 17, 345)]
    insert_paths(store, [write_jsonl(tmp_path / "in.jsonl", runs)], listeners=[insert_listener(store)], workers=1)
    retriever = get_memory("r", store).retriever
    found = retriever.find("What did the reviewer 'Lumaflex fan' write?", 3000)
    folded = next(hit for hit in found.slices if hit.same_as)
    target = next(hit for hit in found.slices if hit.id == folded.same_as)
    # the view it repeats is not packed (the budget had no room for it): the fold must not point at it
    packed = retriever.fill_slices([h for h in found.slices if h is not target], 3000, retriever._load())
    shown = next(item for hit, item in packed if hit.id == folded.id)
    assert not shown.text.startswith("(the same page as") and "Lumaflex fan" in shown.text
    with_target = retriever.fill_slices(found.slices, 3000, retriever._load())
    assert next(item for hit, item in with_target if hit.id == folded.id).text.startswith("(the same page as")


def test_a_question_that_names_a_minute_gets_that_visit_first_and_not_the_newest(store, tmp_path):
    runs = [_grid_run(f"run-{day}", day, 300 + day) for day in (16, 17, 18)]
    # other days' pages that match the question's words better than the grid does
    wordy = "\n".join(f"\t\t[{200 + n}] StaticText 'The Reviews grid count shown by the agent {n}'" for n in range(12))
    runs += [_grid_run(f"run-w{day}", day, 400 + day, note="count") for day in (19, 20, 21, 22)]
    for run in runs[3:]:
        for state in run.states:
            state.text += "\n" + wordy
    insert_paths(store, [write_jsonl(tmp_path / "in.jsonl", runs)], listeners=[insert_listener(store)], workers=1)
    for minute in (0, 1):  # two visits of one day: the minute tells them apart
        question = f"What count did the Reviews grid show when the agent viewed it on 2025-12-17 at 0{minute}:00 UTC?"
        states = [i for i in get_memory("r", store).query(question, budget=3000).items if i.kind == "state"]
        assert (states[0].trajectory_id, states[0].state_index) == ("run-17", minute), minute
        assert "317 records found" in states[0].text


def test_a_folded_view_still_says_what_its_action_led_to(store, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [_saved_run("run-s")])
    insert_paths(store, [source], listeners=[insert_listener(store)], workers=1)
    context = get_memory("r", store).query("What is Field 3 of the Bella Tank product?", budget=3000)
    acted = next(item for item in context.items if item.kind == "state" and item.state_index == 1)
    assert acted.text.startswith("(the same page as trajectory run-s state 0 above")
    assert "next action: press('90', 'Enter')\nthe page then said: You saved the product." in acted.text
