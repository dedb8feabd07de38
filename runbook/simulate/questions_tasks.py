"""Procedure and errors-gotchas questions from what the simulated tasks did (their Records and marked steps).

Evidence is the states where each control was used, and the phrases are the control names / messages those
states show, so a context that cites the right states contains the answer.
"""

from __future__ import annotations

import random

from .recorder import Record, Sim

# kind -> (generic templates, specific template, marks in order, phrases, answer)
PROCEDURES = {
    "edit_price": (
        [
            "How do you change a product's price in the Acme admin?",
            "What are the steps to update the price of a catalog item?",
            "Walk me through editing a product price in this admin.",
        ],
        "How did the agent change the price of {product}?",
        ["open_edit", "fill", "save", "saved"],
        ["Edit", "Price", "Save", "You saved the product"],
        (
            "Catalog > Products, search the product, click its row's 'Edit', replace the 'Price' field, click "
            "'Save'; the form then says 'You saved the product.'"
        ),
    ),
    "update_stock": (
        [
            "How do you update a product's stock quantity?",
            "What is the procedure for changing how many units of a product are in stock?",
        ],
        "How was the stock quantity of {product} updated?",
        ["open_edit", "fill", "save", "saved"],
        ["Edit", "Quantity", "Save", "You saved the product"],
        (
            "Open the product with 'Edit' from Catalog > Products, change 'Quantity', click 'Save' "
            "('You saved the product.')"
        ),
    ),
    "toggle_product": (
        ["How do you disable or enable a product?", "How is a product switched off in the catalog?"],
        "How did the agent change whether {product} is enabled?",
        ["open_edit", "fix", "save", "saved"],
        ["Enable Product", "Save", "You saved the product"],
        ("Open the product's edit form, flip the 'Enable Product' switch by clicking its label, then 'Save'"),
    ),
    "cancel_order": (
        ["How is a pending order canceled in this admin?", "What are the steps to cancel an order?"],
        "How did the agent cancel order #{order}?",
        ["view", "cancel", "ok", "done"],
        ["View", "Cancel", "OK", "You canceled the order"],
        (
            "Sales > Orders, find the order and click 'View', click 'Cancel' in the action bar, confirm "
            "'OK' in the dialog; the page says 'You canceled the order.'"
        ),
    ),
    "filter_orders": (
        ["How do you count the orders with a given status?", "How do you filter the Sales > Orders grid by status?"],
        "How did the agent find the number of {status} orders?",
        ["filters", "select", "apply", "result"],
        ["Filters", "Status", "Apply Filters", "records found"],
        ("Sales > Orders, click 'Filters', choose the Status, click 'Apply Filters' and read 'N records found'"),
    ),
    "add_customer": (
        ["How do you create a new customer account?", "What steps add a customer in the admin?"],
        "How was the customer account for {name} created?",
        ["add", "fill", "save", "saved"],
        ["Add New Customer", "First Name", "Email", "Save Customer", "You saved the customer"],
        (
            "Customers > All Customers, 'Add New Customer', fill First Name, Last Name and Email (and "
            "Group), click 'Save Customer' ('You saved the customer.')"
        ),
    ),
    "edit_setting": (
        [
            "How do you change a store setting such as the phone number or timezone?",
            "Where and how are store configuration values edited?",
        ],
        "How did the agent change the {setting} setting?",
        ["fill", "save", "saved"],
        ["Configuration", "Save Config", "You saved the configuration"],
        "Settings > Configuration, edit the field, click 'Save Config' ('You saved the configuration.')",
    ),
    "bestsellers": (
        [
            "How do you find the best-selling product for a given month?",
            "How do you run the Bestsellers report for a date range?",
        ],
        "How did the agent find the best seller for {month}?",
        ["from", "to", "show", "result"],
        ["Bestsellers", "From", "Show Report"],
        "Reports > Products > Bestsellers, fill From and To (MM/DD/YYYY), click 'Show Report'",
    ),
}
PROC_QUOTA = {"generic": 1, "specific": 2}


def _states(rec: Record, marks: list[str]) -> list[dict]:
    idx = sorted({i for m in marks for i in rec.marks.get(m, [])})
    return [{"trajectory_id": rec.tid, "state_index": i} for i in idx]


def _fmt(sim: Sim, rec: Record) -> dict:
    from .vocab import MONTH_NAMES

    info = rec.info
    return {
        "product": sim.world.product(info["product"]).name if "product" in info else "",
        "order": info.get("order", ""),
        "status": info.get("status", ""),
        "name": info.get("name", ""),
        "setting": info.get("setting", ""),
        "month": f"{MONTH_NAMES[info['month'] - 1]} 2025" if "month" in info else "",
    }


def procedure_questions(sim: Sim, rng: random.Random, scale: float) -> list[dict]:
    out = []
    for kind, (generic, specific, marks, phrases, answer) in PROCEDURES.items():
        recs = [r for r in sim.records if r.kind == kind and r.success and all(r.marks.get(m) for m in marks)]
        if not recs:
            continue
        picks = rng.sample(recs, min(len(recs), 1 + max(1, round(PROC_QUOTA["specific"] * scale))))
        for i, rec in enumerate(picks):
            text = rng.choice(generic) if i == 0 else specific.format(**_fmt(sim, rec))
            out.append(
                {
                    "question_type": "procedure",
                    "question": text,
                    "image": None,
                    "answer": answer,
                    "answer_phrases": phrases,
                    "eval_function": "norm_phrase_set_match|separators=,;",
                    "evidence": _states(rec, marks),
                    "stale_evidence": [],
                    "verification": f"{rec.tid} ({rec.goal}): marked steps {rec.marks}",
                }
            )
    return out


def _task(goal: str) -> str:
    """'Disable the product X.' -> 'disable the product X', to embed a goal in a question."""
    g = goal.rstrip(".?!")
    g = g.removeprefix("Please ")
    return g[:1].lower() + g[1:]


def _after(rec: Record, mark: str) -> list[dict]:
    return [{"trajectory_id": rec.tid, "state_index": i + 1} for i in rec.marks.get(mark, [])]


def gotcha_questions(sim: Sim, rng: random.Random, scale: float) -> list[dict]:
    cap = max(1, round(4 * scale))
    by: dict[str, list[Record]] = {}
    for r in sim.records:
        if r.info.get("gotcha"):
            by.setdefault(r.info["gotcha"], []).append(r)
    # in this order: each draws from the one rng, so the same seed keeps giving the same questions
    return [
        *_sticky_filter(rng, by.get("sticky_filter", []), cap),
        *_sticky_filter_missed(rng, by.get("sticky_filter_missed", []), cap),
        *_label_intercept(rng, by.get("label_intercept", []), cap),
        *_report_dates(sim, rng, by.get("report_dates", []), cap),
        *_unsaved(sim, rng, by.get("unsaved", []), cap),
    ]


def _gotcha(question: str, answer: str, phrases: list, evidence: list, rec: Record, why: str) -> dict:
    return {
        "question_type": "errors-gotchas",
        "question": question,
        "image": None,
        "answer": answer,
        "answer_phrases": phrases,
        "eval_function": "llm_gotchas_checker",
        "evidence": evidence,
        "stale_evidence": [],
        "verification": f"{rec.tid} ({'success' if rec.success else 'failure'}): {why}",
    }


def _sticky_filter(rng: random.Random, recs: list[Record], cap: int) -> list[dict]:
    out = []
    for i, r in enumerate(rng.sample(recs, min(cap, len(recs)))):
        q = (
            rng.choice(
                [
                    "What should you check first when you open Sales > Orders to look up a specific order?",
                    "Why can the orders grid hide an order that really exists, and what fixes it?",
                    "Before searching the Sales > Orders grid, what do you need to clear?",
                ]
            )
            if i == 0
            else f"When the agent looked up order #{r.info['order']}, what was in the way and how was it handled?"
        )
        out.append(
            _gotcha(
                q,
                f"The grid keeps filters from an earlier session (here '{r.info['stale_filters']}'), which hide other "
                "orders; click 'Clear all' before searching.",
                ["Clear all", r.info["stale_filters"].split(", ")[0]],
                _states(r, ["filtered", "clear"]) + _after(r, "clear"),
                r,
                "stale Active filters, then Clear all",
            )
        )
    return out


def _sticky_filter_missed(rng: random.Random, recs: list[Record], cap: int) -> list[dict]:
    out = []
    for r in recs[:cap]:
        out.append(
            _gotcha(
                rng.choice(
                    [
                        f"Why did the agent report that order #{r.info['order']} does not exist?",
                        f"What went wrong in the failed look-up of order {r.info['order']}?",
                    ]
                ),
                f"The order exists, but the orders grid still had stale filters ('{r.info['stale_filters']}') from "
                "an earlier session, so the search returned 'We couldn't find any records.'; 'Clear all' would have "
                "fixed it.",
                ["We couldn't find any records", r.info["stale_filters"].split(", ")[0]],
                _states(r, ["filtered", "error"]),
                r,
                "search under stale filters returned no records",
            )
        )
    return out


def _label_intercept(rng: random.Random, recs: list[Record], cap: int) -> list[dict]:
    out = []
    for i, r in enumerate(rng.sample(recs, min(cap, len(recs)))):
        what = "'Enable Product' switch" if r.kind == "toggle_product" else f"'{r.info.get('setting')}' switch"
        q = (
            rng.choice(
                [
                    f"Why does clicking the {what} checkbox time out, and what works instead?",
                    "In the admin's on/off switches, why do clicks on the checkbox fail?",
                ]
            )
            if i == 0
            else f"What went wrong when the agent first tried to {_task(r.goal)}, and how was it resolved?"
        )
        fixed = bool(r.marks.get("fix"))
        out.append(
            _gotcha(
                q,
                "The styled switch <label> covers the checkbox and intercepts pointer events, so the click times out "
                "(TimeoutError: Locator.click: Timeout 500ms exceeded); clicking the label instead works"
                + ("" if fixed else "; the agent gave up instead and failed"),
                ["intercepts pointer events", "label"],
                _states(r, ["error", "fix"]),
                r,
                "click error, then label click",
            )
        )
    return out


def _report_dates(sim: Sim, rng: random.Random, recs: list[Record], cap: int) -> list[dict]:
    out = []
    for i, r in enumerate(rng.sample(recs, min(cap, len(recs)))):
        q = (
            rng.choice(
                [
                    "Why does the Bestsellers report show no rows when you first run it?",
                    "What do you have to do before 'Show Report' gives results in the Bestsellers report?",
                ]
            )
            if i == 0
            else f"When the agent looked up the best seller for {_fmt(sim, r)['month']}, why did its first "
            "report come back empty?"
        )
        out.append(
            _gotcha(
                q,
                'Without a From/To date range the report says "We can\'t find records for this period."; fill From '
                "and To (MM/DD/YYYY) and click 'Show Report' again.",
                ["We can't find records for this period", "From"],
                _after(r, "empty") + _states(r, ["from"]),
                r,
                "Show Report without dates gave an empty report",
            )
        )
    return out


def _unsaved(sim: Sim, rng: random.Random, recs: list[Record], cap: int) -> list[dict]:
    out = []
    for r in recs[:cap]:
        p = sim.world.product(r.info["product"])
        out.append(
            _gotcha(
                rng.choice(
                    [
                        f"Why did the attempt to change the price of {p.name} fail?",
                        f"The agent said it changed {p.name}'s price. Why did the catalog not change?",
                    ]
                ),
                f"The agent typed the new price ({r.info['new']}) but clicked 'Back' instead of 'Save', so nothing "
                f"was stored; the grid still showed {r.info['old']}.",
                ["Save", r.info["old"]],
                _states(r, ["fill", "error"]) + _after(r, "error"),
                r,
                "Back without Save; grid shows old price",
            )
        )
    return out
