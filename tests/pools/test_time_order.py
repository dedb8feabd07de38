"""Time awareness: the latest view of a page comes first, older views are labelled as older."""

from runbook.ingest import insert_paths
from runbook.memory import get_memory
from runbook.pools import insert_listener
from runbook.trajectory import State, Trajectory
from tests.conftest import write_jsonl

GRID = (
    "RootWebArea 'Products / Catalog / Admin'\n\t[5] heading 'Products'\n\t[9] row ''\n"
    "\t\t[10] gridcell 'Desiree Fitness Tee-XS-Black'\n\t\t[11] gridcell 'WS05-XS-Black'\n"
    "\t\t[12] gridcell '{price}'\n\t\t[13] gridcell 'Enabled'"
)


def _visit(tid: str, day: int, price: str) -> Trajectory:
    states = [
        State(
            index=0,
            url="http://localhost:7780/admin/catalog/product/",
            title="Products / Catalog / Admin",
            text=GRID.format(price=price),
            action="send_msg_to_user('seen')",
            timestamp=f"2025-12-{day:02d}T10:00:00.000Z",
        )
    ]
    return Trajectory(
        id=tid,
        states=states,
        goal=f"check the tee price ({tid})",
        site="shopping_admin",
        outcome="success (reward 1.0)",
    )


def _store_with_three_prices(store, tmp_path):
    # inserted out of time order on purpose: recency comes from the timestamps, not the insert order
    visits = [_visit("v-mid", 17, "$29.00"), _visit("v-new", 20, "$32.88"), _visit("v-old", 16, "$24.00")]
    insert_paths(store, [write_jsonl(tmp_path / "v.jsonl", visits)], listeners=[insert_listener(store)], workers=1)


def test_latest_value_first_and_older_labelled(store, tmp_path):
    _store_with_three_prices(store, tmp_path)
    context = get_memory("r", store).query(
        "What price does the admin currently list for SKU WS05-XS-Black?", budget=4000
    )
    states = [item for item in context.items if item.kind == "state"]
    assert [s.trajectory_id for s in states] == ["v-new", "v-mid", "v-old"]
    assert "$32.88" in states[0].text and states[0].label.startswith("latest of 3 views")
    assert all(s.label.startswith("older view") and "v-new" in s.label for s in states[1:])


def test_relevance_order_kept_for_static_questions_but_labels_stay(store, tmp_path):
    _store_with_three_prices(store, tmp_path)
    context = get_memory("r", store).query(
        "Which status does the WS05-XS-Black row show in the Products grid?", budget=4000
    )
    states = [item for item in context.items if item.kind == "state"]
    labels = {s.trajectory_id: s.label for s in states}
    assert labels["v-new"].startswith("latest") and labels["v-old"].startswith("older view")


def test_identical_pages_are_collapsed(store, tmp_path):
    visits = [_visit("v-a", 16, "$24.00"), _visit("v-b", 17, "$24.00")]
    insert_paths(store, [write_jsonl(tmp_path / "v.jsonl", visits)], listeners=[insert_listener(store)], workers=1)
    context = get_memory("r", store).query("What price does the grid list for WS05-XS-Black?", budget=4000)
    states = [item for item in context.items if item.kind == "state"]
    assert len(states) == 2  # both cited ...
    assert states[1].text.startswith("(the same page as trajectory")  # ... but the second costs only a pointer
    assert states[1].tokens < states[0].tokens


def test_views_at_the_same_time_are_not_labelled_older_than_each_other():
    """A run's last transition (states 0-1) and its final action (state 1) are events at state 1's time: the one
    ranked second was labelled 'older view; newer: <run> state 0' (a span names its first state), though neither is
    older. Seen by hand after a streamed run changed the Store Email."""
    from runbook.core.fusion import latest_first
    from runbook.core.hits import Hit

    def event(n: int, first: int, last: int | None, time: str, tid: str = "run-new") -> Hit:
        return Hit(f"e{n}", "events", tid, tid, first, last, url="http://admin/config", timestamp=time)

    hits = [
        event(1, 0, 1, "2026-11-25T13:00:29Z"),  # the transition that set the new value
        event(2, 1, None, "2026-11-25T13:00:29Z"),  # the final action, on the same page at the same time
        event(3, 4, None, "2026-01-12T20:40:01Z", tid="run-old"),
    ]
    labels = {hit.id: hit.label for hit in latest_first(hits, lambda h: h.url)}
    assert labels["e1"].startswith("latest of 3 views") and labels["e2"].startswith("latest of 3 views")
    assert labels["e3"].startswith("older view") and "run-new state 1 " in labels["e3"]
