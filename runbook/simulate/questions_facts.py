"""Static and dynamic questions from the fact ledger.

A key whose every observation shows one value is static; a key that showed several values is dynamic, and its
answer is the LATEST observed value. Either way the answer must equal the simulator's final truth, so an
aggregate that changed without being looked at again (e.g. Pending count after an unseen cancellation) is
skipped rather than asked with a wrong gold answer.
"""

from __future__ import annotations

import random
from typing import Any

from .recorder import Obs, Sim
from .vocab import MONTH_NAMES
from .world import World, money


def truth(w: World, key: tuple) -> str | None:
    fam = key[0]
    arg: Any = key[1] if len(key) > 1 else None  # an sku, a name, a month...: the family says which
    by_sku = {p.sku: p for p in w.products}
    by_name = {p.name: p for p in w.products}
    cust = {c.name: c for c in w.customers}
    if fam.startswith("product.") and fam not in ("product.sku", "product.category"):
        p = by_sku[arg]
        return {"product.price": money(p.price), "product.qty": str(p.qty), "product.status": p.status}[fam]
    if fam == "product.sku":
        return by_name[arg].sku
    if fam == "product.category":
        return by_name[arg].category
    if fam.startswith("order."):
        o = w.order(arg)
        assert o is not None  # the ledger only holds orders the world has
        return {
            "order.status": o.status,
            "order.total": money(o.total),
            "order.customer": o.customer,
            "order.date": o.date,
        }[fam]
    if fam.startswith("customer."):
        c = cust[arg]
        return {
            "customer.email": c.email,
            "customer.group": c.group,
            "customer.country": c.country,
            "customer.since": c.since,
        }[fam]
    if fam == "setting":
        return w.setting(arg).value
    if fam == "customers.count":
        return str(len(w.customers))
    if fam == "catalog.count":
        return str(len(w.products))
    if fam == "orders.count":
        return str(len(w.orders))
    if fam == "orders.count_status":
        return str(sum(o.status == arg for o in w.orders))
    if fam == "dashboard.lifetime_sales":
        return money(w.lifetime_sales())
    if fam == "bestseller.top":
        return w.bestsellers(arg)[0][0].name
    return None


def _entity(w: World, key: tuple) -> dict:
    fam = key[0]
    arg: Any = key[1] if len(key) > 1 else None
    if fam in ("product.price", "product.qty", "product.status"):
        p = next(p for p in w.products if p.sku == arg)
        return {"e": p.name, "sku": p.sku}
    if fam == "bestseller.top":
        return {"e": f"{MONTH_NAMES[arg - 1]} 2025"}
    if fam == "orders.count_status":
        return {"e": arg, "el": arg.lower()}
    return {"e": arg}


# family -> (static templates, dynamic templates, answer wording)
TEMPLATES: dict[str, tuple[list[str], list[str], str]] = {
    "product.price": (
        [
            "What is the price of {e}?",
            "How much does {e} sell for in the Acme catalog?",
            "What price does the products grid list for {e} (SKU {sku})?",
        ],
        [
            "What is the current price of {e}?",
            "After the recent edits, what does {e} cost now?",
            "What price does the admin list for {e} (SKU {sku}) at the moment?",
        ],
        "{v}",
    ),
    "product.qty": (
        ["How many units of {e} are in stock?", "What stock quantity does the catalog show for {e}?"],
        ["How many units of {e} are in stock now?", "What is the latest stock quantity of {e}?"],
        "{v} units",
    ),
    "product.status": (
        ["Is {e} enabled or disabled in the catalog?", "What status does {e} have in the grid?"],
        ["Is {e} currently enabled or disabled?", "What is {e}'s status now, after the latest change?"],
        "{v}",
    ),
    "product.sku": (
        [
            "What is the SKU of {e}?",
            "Which SKU does the product {e} use?",
            "If I search the catalog for {e}, what SKU will its row show?",
        ],
        [],
        "{v}",
    ),
    "product.category": (["Which category is {e} in?", "Under what category does the grid list {e}?"], [], "{v}"),
    "order.status": (
        ["What is the status of order #{e}?", "Has order {e} been completed, or what state is it in?"],
        ["What is the current status of order #{e}?", "What state is order {e} in now?"],
        "{v}",
    ),
    "order.total": (["What is the grand total of order #{e}?", "How much was order {e} for in total?"], [], "{v}"),
    "order.customer": (["Who placed order #{e}?", "Which customer is order {e} billed to?"], [], "{v}"),
    "order.date": (["When was order #{e} purchased?", "What purchase date does order {e} show?"], [], "{v}"),
    "customer.email": (["What is {e}'s email address?", "Which email does the customer {e} have on file?"], [], "{v}"),
    "customer.group": (
        ["Which customer group is {e} in?", "Is {e} a General, Wholesale or Retailer customer?"],
        [],
        "{v}",
    ),
    "customer.country": (
        ["Which country is the customer {e} from?", "What country does {e}'s account list?"],
        [],
        "{v}",
    ),
    "setting": (
        ["What is the store's '{e}' setting?", "In Settings > Configuration, what is {e} set to?"],
        [
            "What is '{e}' set to now in the store configuration?",
            "After the latest configuration change, what is the {e}?",
        ],
        "{v}",
    ),
    "customers.count": (
        ["How many customer accounts does the store have?"],
        ["How many customer accounts are there now?", "What is the current number of customers in the Customers grid?"],
        "{v} records",
    ),
    "catalog.count": (
        ["How many products are in the catalog?", ("How many records does the unfiltered products grid report?")],
        [],
        "{v} records",
    ),
    "orders.count": (["How many orders does the unfiltered Sales > Orders grid contain?"], [], "{v} records"),
    "orders.count_status": (
        ["How many orders have the status {e}?"],
        ["How many {el} orders are there now?", "What is the latest count of {e} orders?"],
        "{v} orders",
    ),
    "dashboard.lifetime_sales": (
        ["What lifetime sales figure does the dashboard show?"],
        ["What are the store's lifetime sales now?", "What is the dashboard's current Lifetime Sales value?"],
        "{v}",
    ),
    "bestseller.top": (
        [
            "Which product was the best seller in {e}?",
            "What sold the most units in {e}?",
            "According to the Bestsellers report, which product topped {e}?",
        ],
        [],
        "{v}",
    ),
}

STATIC_QUOTA = {
    "product.price": 10,
    "product.qty": 5,
    "product.status": 3,
    "product.sku": 7,
    "product.category": 3,
    "order.status": 5,
    "order.total": 6,
    "order.customer": 5,
    "order.date": 2,
    "customer.email": 6,
    "customer.group": 4,
    "customer.country": 2,
    "setting": 4,
    "customers.count": 1,
    "catalog.count": 1,
    "orders.count": 1,
    "orders.count_status": 2,
    "dashboard.lifetime_sales": 1,
    "bestseller.top": 4,
}
DYNAMIC_QUOTA = {
    "product.price": 14,
    "product.qty": 4,
    "product.status": 4,
    "order.status": 5,
    "setting": 6,
    "customers.count": 1,
    "orders.count_status": 2,
    "dashboard.lifetime_sales": 1,
}


def _ev(obs: list[Obs], k: int, latest: bool) -> list[dict]:
    seen, out = set(), []
    for o in reversed(obs) if latest else obs:
        if (o.tid, o.idx) not in seen:
            seen.add((o.tid, o.idx))
            out.append({"trajectory_id": o.tid, "state_index": o.idx})
        if len(out) == k:
            break
    return out


def _where(obs: list[Obs]) -> str:
    return ", ".join(f"{o.value} at {o.tid} s{o.idx} ({o.ts[:16]})" for o in obs)


def by_key(sim: Sim) -> dict[tuple, list[Obs]]:
    keyed: dict[tuple, list[Obs]] = {}
    for o in sim.obs:
        keyed.setdefault(o.key, []).append(o)
    return keyed


def fact_questions(sim: Sim, rng: random.Random, scale: float) -> list[dict]:
    w, keyed = sim.world, by_key(sim)
    fams: dict[str, dict[str, list[tuple]]] = {}
    for key, obs in keyed.items():
        values = list(dict.fromkeys(o.value for o in obs))  # first-seen order, deterministic
        if obs[-1].value != truth(w, key):
            continue
        v = obs[-1].value
        if len(values) == 1:
            kind = "static"
        elif min(i for i, o in enumerate(obs) if o.value == v) > max(i for i, o in enumerate(obs) if o.value != v):
            kind = "dynamic"  # the latest value is new: no state before the last change already showed it
        else:
            continue
        fams.setdefault(key[0], {}).setdefault(kind, []).append(key)
    out = []
    for fam, kinds in sorted(fams.items()):
        if fam not in TEMPLATES:
            continue
        static_t, dynamic_t, ans = TEMPLATES[fam]
        for kind, quota, tmpl in (("static", STATIC_QUOTA, static_t), ("dynamic", DYNAMIC_QUOTA, dynamic_t)):
            keys = kinds.get(kind, [])
            if not keys or not tmpl or fam not in quota:
                continue
            n = max(1, round(quota[fam] * scale))
            for key in rng.sample(keys, min(n, len(keys))):
                out.append(_fact_q(w, keyed[key], key, kind, rng.choice(tmpl), ans))
    return out


def _fact_q(w: World, obs: list[Obs], key: tuple, kind: str, tmpl: str, ans: str) -> dict:
    ent = _entity(w, key)
    v = obs[-1].value
    q: dict[str, Any] = {
        "question_type": f"{kind}-environment",
        "question": tmpl.format(**ent),
        "image": None,
        "answer": ans.format(v=v),
        "answer_phrases": [v],
        "eval_function": "norm_phrase_set_match|separators=,;",
    }
    if kind == "static":
        q["evidence"] = _ev(obs, 3, latest=False)
        q["stale_evidence"] = []
        q["verification"] = f"ledger {key!r}: one value seen, {_where(obs[:3])}"
        return q
    last_other = max(i for i, o in enumerate(obs) if o.value != v)
    current, stale = obs[last_other + 1 :], [o for o in obs[: last_other + 1] if o.value != v]
    prev = list(dict.fromkeys(o.value for o in stale))[-3:]
    q["answer"] = f"{ans.format(v=v)} (earlier: {', then '.join(prev)})"
    # Where the value first showed (usually the save confirmation) plus the latest views of it.
    q["evidence"] = (
        _ev(current[:1], 1, latest=False)
        + [
            e
            for e in _ev(current, 3, latest=True)
            if (e["trajectory_id"], e["state_index"]) != (current[0].tid, current[0].idx)
        ][:2]
    )
    q["stale_evidence"] = _ev(stale, 3, latest=True)
    q["verification"] = f"ledger {key!r}: latest {_where(current[-2:])}; older {_where(stale[-3:])}"
    return q
