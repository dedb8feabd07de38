"""Method R's contexts over pages parsed at insert: a grid's count and rows reach the reader, another view of the same
page costs a line instead of a page, and what can be worked out from the pages leads the analysis."""

from __future__ import annotations

from runbook.ingest import insert_paths
from runbook.memory import get_memory
from runbook.pools import insert_listener
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
