"""Sales and report tasks: order grid filters (which persist: the 'Clear all' gotcha), order look-ups,
cancellations, the dashboard's lifetime sales, and the Bestsellers report that needs a date range first."""

from __future__ import annotations

from . import pages as P
from .blocks import Notice
from .recorder import Episode, Sim
from .tasks_common import via_menu
from .vocab import MONTH_NAMES
from .world import money


def _open_orders(ep: Episode, why: str) -> None:
    via_menu(ep, "sales", "menu_orders", P.orders_grid(ep.sim.world), why)


def _clear_filters(ep: Episode) -> None:
    w = ep.sim.world
    shown = ", ".join(f"{f}: {v}" for f, v in w.order_filters)
    ep.info.setdefault("stale_filters", shown)
    ep.click(
        "clear_all",
        ep.say(
            f"The grid still has active filters from an earlier session ({shown}), which would hide other orders. "
            "I'll click 'Clear all' first.",
            f"Active filters: {shown} are left over and restrict the grid. Clearing them with 'Clear all'.",
        ),
        None,
        mark="clear",
    )
    w.order_filters = []
    ep.page = P.orders_grid(w)


def _search_orders(ep: Episode, number: str) -> None:
    w = ep.sim.world
    ep.fill("search", number, f"I'll search the grid for order {number}.", P.orders_grid(w, typed=number))
    ep.click("search_go", "Submitting the keyword search.", None)
    # A submitted keyword becomes an active filter and stays until cleared: it outlives this task.
    w.order_filters = [f for f in w.order_filters if f[0] != "Keyword"] + [("Keyword", number)]
    ep.page = P.orders_grid(w)


def _find_order(ep: Episode, number: str, careless: float) -> bool:
    """Search for an order, clearing stale filters first unless the agent is careless. True if it is listed."""
    w = ep.sim.world
    stale = [f for f in w.order_filters if f != ("Keyword", number)]
    if stale and ep.rng.random() >= careless:
        ep.info["gotcha"] = "sticky_filter"
        ep.marks.setdefault("filtered", []).append(len(ep.states))
        _clear_filters(ep)
    elif stale:
        ep.info["stale_filters"] = ", ".join(f"{f}: {v}" for f, v in w.order_filters)
        ep.marks.setdefault("filtered", []).append(len(ep.states))
    _search_orders(ep, number)
    found = any(o.number == number for o in P._order_rows(w))
    if stale and not found and "gotcha" not in ep.info:
        ep.info["gotcha"] = "sticky_filter_missed"  # only a miss that hid the order counts as the gotcha
    return found


def order_lookup(sim: Sim) -> None:
    w = sim.world
    pool = w.orders[-60:]
    status = next((v for f, v in w.order_filters if f == "Status"), None)
    if status and sim.rng.random() < 0.8:  # mostly an order the sticky filter hides, so the gotcha bites
        pool = [o for o in pool if o.status != status] or pool
    o = sim.rng.choice(pool)
    ask = sim.rng.choice(["status", "total", "customer"])
    goal = sim.rng.choice(
        {
            "status": [f"What is the status of order #{o.number}?", f"Check whether order {o.number} has shipped."],
            "total": [f"What is the grand total of order #{o.number}?", f"How much was order {o.number}?"],
            "customer": [f"Who placed order #{o.number}?", f"Which customer is order {o.number} billed to?"],
        }[ask]
    )
    ep = Episode(sim, "order_lookup", goal, P.dashboard(w))
    ep.info["order"] = o.number
    _open_orders(ep, f"I need to look up order {o.number}.")
    if not _find_order(ep, o.number, careless=0.4):
        ep.finish(
            f'The grid says "We couldn\'t find any records." for {o.number}.',
            f"Order #{o.number} does not exist in the system.",
            False,
            mark="error",
        )
        return
    ep.click(f"view_{o.number}", f"Order {o.number} is listed; opening it with 'View'.", P.order_view(w, o.number))
    answer = {
        "status": f"Order #{o.number} is {o.status}.",
        "total": f"Order #{o.number} totals {money(o.total)}.",
        "customer": f"Order #{o.number} was placed by {o.customer}.",
    }[ask]
    ep.finish(
        f"The order page shows status {o.status}, grand total {money(o.total)}, customer {o.customer}.", answer, True
    )


def filter_orders(sim: Sim) -> None:
    w = sim.world
    status = sim.rng.choice(["Pending", "Processing", "Canceled", "Complete"])
    goal = sim.rng.choice([f"How many orders are currently {status}?", f"Count the {status.lower()} orders."])
    ep = Episode(sim, "filter_orders", goal, P.dashboard(w))
    _open_orders(ep, f"I need the number of {status} orders.")
    if w.order_filters:
        _clear_filters(ep)
    ep.click("filters", "I'll open 'Filters' to filter by status.", P.orders_grid(w, filters_open=True), mark="filters")
    ep.select(
        "filter_status",
        status,
        f"Choosing '{status}' in the Status dropdown.",
        P.orders_grid(w, filters_open=True, draft_status=status),
        mark="select",
    )
    ep.click("filters_apply", "Applying the filter.", None, mark="apply")
    w.order_filters = [("Status", status)]  # stays active for whoever opens the grid next
    ep.page = P.orders_grid(w)
    n = len(P._order_rows(w))
    ep.info.update(status=status, count=n)
    ep.finish(
        f"With 'Status: {status}' active the grid reports {n} records found.",
        f"There are {n} {status.lower()} orders.",
        True,
        mark="result",
    )


def cancel_order(sim: Sim) -> None:
    w = sim.world
    open_ = [o for o in w.orders if o.status in ("Pending", "Processing")]
    done = [o for o in w.orders if o.status == "Complete"]
    infeasible = not open_ or sim.rng.random() < 0.2
    o = sim.rng.choice(done if infeasible else open_)
    goal = sim.rng.choice([f"Cancel order #{o.number}.", f"The customer asked us to cancel order {o.number}."])
    ep = Episode(sim, "cancel_complete" if infeasible else "cancel_order", goal, P.dashboard(w))
    ep.info.update(order=o.number, old=o.status)
    _open_orders(ep, f"I need to cancel order {o.number}.")
    _find_order(ep, o.number, careless=0.0)
    ep.click(f"view_{o.number}", "Opening the order with 'View'.", P.order_view(w, o.number), mark="view")
    if infeasible:
        ep.finish(
            f"Order {o.number} is {o.status}: the action bar only offers Back and Reorder, no Cancel.",
            f"Order #{o.number} cannot be canceled: it is already Complete (there is no Cancel button).",
            True,
            mark="result",
        )
        return
    ep.click(
        "cancel",
        "The action bar has a 'Cancel' button. Clicking it.",
        P.order_view(w, o.number, dialog=True),
        mark="cancel",
    )
    ep.click(
        "dialog_ok",
        "A dialog asks 'Are you sure you want to cancel this order?'. Confirming with 'OK'.",
        None,
        mark="ok",
    )
    o.status = "Canceled"
    ep.page = P.order_view(w, o.number, notice=Notice("You canceled the order."))
    ep.finish(
        "The page says 'You canceled the order.' and the status is Canceled.",
        f"Order #{o.number} has been canceled.",
        True,
        mark="done",
    )


def dashboard_sales(sim: Sim) -> None:
    w = sim.world
    goal = sim.rng.choice(["What are the store's lifetime sales?", "Report the Lifetime Sales figure."])
    ep = Episode(sim, "dashboard_sales", goal, P.customers_grid(w))
    ep.click("nav_dashboard", "The Dashboard shows the lifetime sales; going there.", P.dashboard(w))
    ep.finish(
        f"The dashboard shows Lifetime Sales {money(w.lifetime_sales())}.",
        f"Lifetime sales are {money(w.lifetime_sales())}.",
        True,
        mark="result",
    )


def bestsellers(sim: Sim) -> None:
    w = sim.world
    months = [m for m in range(1, 13) if len(b := w.bestsellers(m)) > 1 and b[0][1] > b[1][1]]
    m = sim.rng.choice(months)
    name = MONTH_NAMES[m - 1]
    last = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1]
    d_from, d_to = f"{m:02d}/01/2025", f"{m:02d}/{last}/2025"
    goal = sim.rng.choice(
        [f"What was the best-selling product in {name} 2025?", f"Which product sold the most units in {name} 2025?"]
    )
    ep = Episode(sim, "bestsellers", goal, P.dashboard(w))
    ep.info["month"] = m
    via_menu(
        ep, "reports", "menu_bestsellers", P.bestsellers(w), "The Bestsellers report lives under Reports > Products."
    )
    if sim.rng.random() < 0.5:  # running it before setting dates returns an empty report: the gotcha
        ep.info["gotcha"] = "report_dates"
        ep.click(
            "show_report",
            "The report form is open. I'll click 'Show Report' to see the bestsellers.",
            P.bestsellers(w, shown=True),
            mark="empty",
        )
        if sim.rng.random() < 0.2:
            ep.finish(
                'The report says "We can\'t find records for this period."',
                f"There were no product sales in {name} 2025.",
                False,
                mark="error",
            )
            return
        why = "The report came back empty because no date range was set. "
    else:
        why = "The report needs a date range before it shows anything. "
    ep.fill("from", d_from, why + f"Entering From {d_from}.", P.bestsellers(w, d_from), mark="from")
    ep.fill("to", d_to, f"Entering To {d_to}.", P.bestsellers(w, d_from, d_to), mark="to")
    ep.click("show_report", "Now 'Show Report'.", P.bestsellers(w, d_from, d_to, m, True), mark="show")
    top, qty = w.bestsellers(m)[0]
    ep.finish(
        f"The report for {name} 2025 lists {top.name} first with {qty} units ordered.",
        f"The best-selling product in {name} 2025 was {top.name} ({qty} units).",
        True,
        mark="result",
    )
