"""A question that names a page by its menu path ('Sales > Invoices') gets that page first from method R, though the
pages of a neighbouring grid mention the question's words more often."""

from runbook.core.question import analyze
from runbook.ingest import insert_paths
from runbook.memory import get_memory
from runbook.pools import Retriever, insert_listener
from runbook.trajectory import State, Trajectory
from tests.conftest import write_jsonl

INVOICES = (
    "RootWebArea 'Invoices / Operations / Sales / Magento Admin'\n\t[5] heading 'Invoices'\n"
    "\tStaticText '2 records found'\n\t[8] columnheader 'Grand Total (Base)'\n"
    "\t[10] row ''\n\t\t[11] gridcell '000000001'\n"
    "\t\t[12] gridcell 'Ada Park'\n\t\t[13] gridcell '$36.39'\n\t\t[14] gridcell '$36.39'"
)
ORDER = (
    "RootWebArea '#{n} / Orders / Operations / Sales / Magento Admin'\n\t[5] heading '#{n}'\n"
    "\t[6] link 'Invoices'\n\tStaticText 'Invoices for this order: none'\n\tStaticText 'Grand Total $1{n}.00'\n"
    "\tStaticText 'Grand Total (Purchased) $1{n}.00'\n\tStaticText 'Invoices: 0'\n"
    "\tStaticText 'Total Paid $0.00'\n\tStaticText 'Grand Total (Base) $1{n}.00'\n\tStaticText 'Billing Address'\n"
)


def _run(tid: str, title: str, url: str, text: str, day: int) -> Trajectory:
    state = State(
        index=0,
        url=url,
        title=title,
        text=text,
        action="send_msg_to_user('seen')",
        timestamp=f"2025-12-{day:02d}T10:00:00.000Z",
    )
    return Trajectory(id=tid, states=[state], goal=f"look at {tid}", site="shopping_admin", outcome="success")


def test_the_page_a_menu_path_names_leads(store, tmp_path):
    runs = [
        _run(
            f"order-{n}",
            f"#{n} / Orders / Operations / Sales / Magento Admin",
            f"http://h/admin/order/{n}/",
            ORDER.format(n=n),
            16 + n % 5,
        )
        for n in range(30)
    ]
    runs.append(
        _run("invoices", "Invoices / Operations / Sales / Magento Admin", "http://h/admin/sales/invoice/", INVOICES, 15)
    )
    insert_paths(store, [write_jsonl(tmp_path / "r.jsonl", runs)], listeners=[insert_listener(store)], workers=1)
    question = "How many invoices does the Sales > Invoices grid hold, and what are their grand totals?"
    states = [item for item in get_memory("r", store).query(question, budget=4000).items if item.kind == "state"]
    assert states[0].trajectory_id == "invoices" and "Ada Park" in states[0].text
    # BM25 alone ranks an order page first: the menu path put the invoices page there
    recall = Retriever(store)._load().recall
    query = recall.query(analyze(question))
    best = recall.indexes["slices"].top(query, 1)[0][0]
    assert recall._loaded().docs("slices")[best]["t"].startswith("order-")


def test_a_count_question_keeps_the_list_it_names_among_pages_that_count():
    """'How many invoices ...': the real Invoices grid (it counts, and its own name is the question's word) is the
    list asked about; the dashboard of the same run counts nothing, and an Orders grid counts other things."""
    from runbook.core.hits import Hit
    from runbook.core.page import parse_page
    from runbook.core.recall import counts_what_is_named
    from tests.conftest import shared_runs

    run = shared_runs("wa-shopping_admin-94")["wa-shopping_admin-94"]
    terms = set(analyze("How many invoices does the admin list in total?").terms)

    def hit(state: dict, title: str | None = None) -> Hit:
        page = parse_page(state["accessibility_tree"])
        return Hit("s1", "slices", run["id"], run["id"], state["state_index"], title=title or state["title"], page=page)

    invoices, dashboard = run["states"][2], run["states"][0]
    assert "records found" in invoices["accessibility_tree"]
    assert counts_what_is_named(hit(invoices), terms)
    assert not counts_what_is_named(hit(dashboard), terms)
    assert not counts_what_is_named(hit(invoices, "Orders / Operations / Sales / Magento Admin"), terms)
