"""Sightings: other states showing the best page's line, each run's view before one run's repeats."""

from runbook.core.recall import runs_first
from runbook.ingest import insert_paths
from runbook.pools import Retriever, insert_listener
from runbook.pools.search import RetrievalSettings
from runbook.trajectory import State, Trajectory
from tests.conftest import write_jsonl

FORUM = "RootWebArea 'books'\n\t[5] heading '/f/books'\n\t[9] button 'Sort by: Hot'\n\t[11] heading '{top}'"
OTHER = "RootWebArea 'thread'\n\t[5] heading 'Comment thread {n}'\n\t[7] StaticText 'Reply to {n}'"
TOP = "The letters of a poet, kept sealed for decades, are now online"


def test_runs_first_puts_each_run_ahead_of_one_runs_repeats():
    views = [("a", 2, "p"), ("a", 4, "p"), ("a", 6, "p"), ("b", 1, "p"), ("c", 3, "p")]
    assert runs_first(views, lambda v: v, taken=[("a", 0, "p")]) == [
        ("b", 1, "p"),
        ("c", 3, "p"),
        ("a", 2, "p"),
        ("a", 4, "p"),
        ("a", 6, "p"),
    ]


def test_runs_first_keeps_a_view_continued_on_the_same_page_in_either_direction():
    # newest first: state 5 comes before state 4, and joins once 4 (next to the taken 3) has
    views = [("a", 5, "p"), ("a", 4, "p"), ("a", 9, "p"), ("a", 2, "other page"), ("b", 1, "p")]
    order = runs_first(views, lambda v: v, taken=[("a", 3, "p")])
    assert order[:3] == [("a", 5, "p"), ("a", 4, "p"), ("b", 1, "p")]
    assert set(order[3:]) == {("a", 9, "p"), ("a", 2, "other page")}


def _run(tid: str, day: int, pages: list[str]) -> Trajectory:
    states = [
        State(
            index=n,
            url="http://localhost:9999/f/books"
            if text.startswith("RootWebArea 'books'")
            else f"http://localhost:9999/c/{n}",
            title="books",
            text=text,
            action="click('9')",
            timestamp=f"2025-12-{day:02d}T10:{n:02d}:00.000Z",
        )
        for n, text in enumerate(pages)
    ]
    return Trajectory(
        id=tid, states=states, goal=f"browse the books forum ({tid})", site="reddit", outcome="success (reward 1.0)"
    )


def test_every_run_that_saw_the_page_is_cited_before_one_runs_repeats(store, tmp_path):
    page = FORUM.format(top=TOP)
    # one run goes back to the forum page again and again; six others see it once each, later
    # (the page is on under 30% of the states: a line on more is the site's furniture, not a fact)
    busy = _run("r-busy", 10, [text for n in range(16) for text in (page, OTHER.format(n=f"b{n}"))])
    others = [_run(f"r-{n}", 11 + n, [OTHER.format(n=f"{n}-{k}") for k in range(8)] + [page]) for n in range(6)]
    insert_paths(
        store, [write_jsonl(tmp_path / "f.jsonl", [busy, *others])], listeners=[insert_listener(store)], workers=1
    )
    # two pages re-read: the rest of the views come as sightings of their line, within MAX_SIGHTINGS
    retriever = Retriever(store, RetrievalSettings(reread=2))
    items, _ = retriever.search("Which post sits at the top of /f/books when sorted by Hot?", budget=8000)
    cited = {item.trajectory_id for item in items if item.kind == "state"}
    assert {f"r-{n}" for n in range(6)} <= cited
