"""False-premise (-abs) questions and the few image-based ones.

An -abs question names something the simulated store never had (a product, setting, customer or order), a
change that never happened, or a control that does not exist; its phrases name what the store really shows, in
the evidence state, so a good answer can both reject the premise and say what is there instead.
"""

from __future__ import annotations

import random
from typing import Any

from . import blocks as B
from . import vocab
from .questions_facts import by_key, truth
from .recorder import Obs, Sim

ABSTAIN = "llm_abstention_checker"


def _ref(o: Obs) -> dict:
    return {"trajectory_id": o.tid, "state_index": o.idx}


def _q(
    qtype: str,
    question: str,
    answer: str,
    phrases: list[str],
    evidence: list[dict],
    why: str,
    image: str | None = None,
    visual_only: bool = False,
) -> dict:
    return {
        "question_type": qtype,
        "question": question,
        "image": image,
        "answer": answer,
        "answer_phrases": phrases,
        "eval_function": ABSTAIN if qtype.endswith("-abs") else "norm_phrase_set_match|separators=,;",
        "evidence": evidence,
        "stale_evidence": [],
        "visual_only": visual_only,
        "verification": why,
    }


def _unchanged(sim: Sim, fam: str) -> list[tuple[tuple, list[Obs]]]:
    """Keys of one family that showed a single value that is still true: nothing ever changed them."""
    return [
        (k, obs)
        for k, obs in by_key(sim).items()
        if k[0] == fam and len({o.value for o in obs}) == 1 and truth(sim.world, k) == obs[-1].value
    ]


def static_abs(sim: Sim, rng: random.Random, n: int) -> list[dict]:
    keyed = by_key(sim)
    # in this order: each draws from the one rng, so the same seed keeps giving the same questions
    return [
        *_fake_products(sim, keyed, rng, n),
        *_fake_settings(sim, keyed, rng, n),
        *_fake_customers(sim, keyed, rng, n),
        *_fake_order(sim, keyed, rng),
    ]


def _fake_products(sim: Sim, keyed: dict, rng: random.Random, n: int) -> list[dict]:
    w, out = sim.world, []
    names = {p.name for p in w.products} | set(sim.used.get(("fake_product",), []))
    seen_products = [k[1] for k in keyed if k[0] == "product.sku"]
    for real in rng.sample(seen_products, min(n, len(seen_products))):
        p = next(x for x in w.products if x.name == real)
        noun = p.name.split()[-1]
        fake = next(
            f
            for f in (f"{rng.choice(vocab.ADJECTIVES)} {rng.choice(vocab.MATERIALS)} {noun}" for _ in range(500))
            if f not in names
        )
        names.add(fake)
        q = rng.choice(
            [
                f"What is the SKU of {fake}?",
                f"How much does the {fake} cost?",
                f"How many units of {fake} are in stock?",
            ]
        )
        out.append(
            _q(
                "static-environment-abs",
                q,
                f"False premise: the catalog has no product named '{fake}'. The closest is {p.name} (SKU {p.sku}).",
                [p.name],
                [_ref(keyed[("product.sku", real)][-1])],
                f"'{fake}' never exists in the world; {p.name} is shown at {keyed[('product.sku', real)][-1].tid}",
            )
        )
    return out


def _fake_settings(sim: Sim, keyed: dict, rng: random.Random, n: int) -> list[dict]:
    w, out = sim.world, []
    settings = keyed.get(("setting", "Store Name"))
    if settings:
        labels = [s.label for s in w.settings]
        for fake in rng.sample(vocab.FAKE_SETTINGS, min(max(1, n // 2), len(vocab.FAKE_SETTINGS))):
            out.append(
                _q(
                    "static-environment-abs",
                    rng.choice(
                        [
                            f"What is the '{fake}' set to in the store configuration?",
                            f"Which value does the {fake} setting have under Settings > Configuration?",
                        ]
                    ),
                    f"False premise: Settings > Configuration has no '{fake}' setting; it has {', '.join(labels)}.",
                    rng.sample(labels, 2),
                    [_ref(settings[-1])],
                    "settings page lists every setting; this one is absent",
                )
            )
    return out


def _fake_customers(sim: Sim, keyed: dict, rng: random.Random, n: int) -> list[dict]:
    w, out = sim.world, []
    cust = [k[1] for k in keyed if k[0] == "customer.email"]
    taken = {c.name for c in w.customers}
    for real in rng.sample(cust, min(max(1, n // 2), len(cust))):
        first = real.split()[0]
        fake = next(
            f"{first} {l}" for l in rng.sample(vocab.LAST_NAMES, len(vocab.LAST_NAMES)) if f"{first} {l}" not in taken
        )
        out.append(
            _q(
                "static-environment-abs",
                rng.choice([f"What is {fake}'s email address?", f"Which customer group is {fake} in?"]),
                f"False premise: there is no customer named {fake}; the store has {real}.",
                [real],
                [_ref(keyed[("customer.email", real)][-1])],
                f"{fake} never exists",
            )
        )
    return out


def _fake_order(sim: Sim, keyed: dict, rng: random.Random) -> list[dict]:
    w, out = sim.world, []
    if ("orders.count",) in keyed:
        newest = max(w.orders, key=lambda o: o.id).number
        fake = f"{int(newest) + rng.randint(20, 400):09d}"
        out.append(
            _q(
                "static-environment-abs",
                f"What is the status of order #{fake}?",
                f"False premise: there is no order #{fake}; the newest order is #{newest}.",
                [newest],
                [_ref(keyed[("orders.count",)][-1])],
                "unfiltered orders grid, newest first",
            )
        )
    return out


def dynamic_abs(sim: Sim, rng: random.Random, n: int) -> list[dict]:
    out = _changes_that_never_were(sim, rng, n)
    cust = by_key(sim)
    names = [k[1] for k in cust if k[0] == "customer.email"]
    for name in rng.sample(names, min(max(1, n // 3), len(names))):
        out.append(
            _q(
                "dynamic-environment-abs",
                f"How many customers were left after {name}'s account was deleted?",
                f"False premise: no customer account was ever deleted; {name} is still listed.",
                [name],
                [_ref(cust[("customer.email", name)][-1])],
                "no delete ever happens in the simulation",
            )
        )
    for r in [r for r in sim.records if r.kind == "missing_product"][: max(1, n // 3)]:
        out.append(
            _q(
                "dynamic-environment-abs",
                f"What price did the agent set for {r.info['fake']}?",
                f"False premise: {r.info['fake']} does not exist; the search returned no records and nothing "
                "was changed.",
                ["We couldn't find any records"],
                [{"trajectory_id": r.tid, "state_index": i} for i in r.marks["result"]],
                r.goal,
            )
        )
    return out


def _changes_that_never_were(sim: Sim, rng: random.Random, n: int) -> list[dict]:
    """A price, a setting or an order's status asked about as changed, that every view shows with one value."""
    w, out = sim.world, []
    prices = _unchanged(sim, "product.price")
    for key, obs in rng.sample(prices, min(n, len(prices))):
        p = next(x for x in w.products if x.sku == key[1])
        out.append(
            _q(
                "dynamic-environment-abs",
                rng.choice(
                    [
                        f"What did the agent change the price of {p.name} to?",
                        f"What was the price of {p.name} before its most recent price change?",
                    ]
                ),
                f"False premise: the price of {p.name} was never changed; it is {obs[-1].value} in every view.",
                [obs[-1].value],
                [_ref(obs[-1])],
                f"{len(obs)} observations, all {obs[-1].value}",
            )
        )
    settings = _unchanged(sim, "setting")
    for key, obs in rng.sample(settings, min(max(1, n // 2), len(settings))):
        out.append(
            _q(
                "dynamic-environment-abs",
                f"What was the '{key[1]}' setting changed to most recently?",
                f"False premise: '{key[1]}' was never changed; it is still {obs[-1].value}.",
                [obs[-1].value],
                [_ref(obs[-1])],
                "single value in every settings view",
            )
        )
    orders = [(k, o) for k, o in _unchanged(sim, "order.status") if o[-1].value != "Canceled"]
    for key, obs in rng.sample(orders, min(max(1, n // 2), len(orders))):
        out.append(
            _q(
                "dynamic-environment-abs",
                rng.choice([f"Why was order #{key[1]} canceled?", f"When was order #{key[1]} canceled?"]),
                f"False premise: order #{key[1]} was never canceled; its status is {obs[-1].value}.",
                [obs[-1].value],
                [_ref(obs[-1])],
                "status never Canceled",
            )
        )
    return out


def procedure_abs(sim: Sim, rng: random.Random, n: int) -> list[dict]:
    out = _infeasible_exports(sim, rng, n)
    for r in [r for r in sim.records if r.kind == "cancel_complete"][: max(1, n // 2)]:
        out.append(
            _q(
                "procedure-abs",
                f"Which button cancels a completed order such as #{r.info['order']}?",
                "False premise: a Complete order cannot be canceled; its page has no Cancel button, only "
                "Back and Reorder.",
                ["Reorder"],
                [{"trajectory_id": r.tid, "state_index": r.marks["result"][0]}],
                "no Cancel on Complete",
            )
        )
    out += _missing_controls(sim)
    report = [k for k, p in sim.pages.items() if p.kind == "bestsellers"]
    if report:
        tid, idx = report[-1]
        out.append(
            _q(
                "procedure-abs",
                rng.choice(
                    [
                        "How do you turn on 'Compare to previous period' in the Bestsellers report?",
                        "How do you add a product-category filter to the Bestsellers report?",
                    ]
                ),
                "False premise: the Bestsellers report's filter has only Period, From and To, then 'Show Report'.",
                ["Period", "Show Report"],
                [{"trajectory_id": tid, "state_index": idx}],
                "report filter fields",
            )
        )
    return out


def _infeasible_exports(sim: Sim, rng: random.Random, n: int) -> list[dict]:
    out = []
    exports = [r for r in sim.records if r.kind == "export_infeasible"]
    for i, r in enumerate(exports[: max(1, n)]):
        fmt = rng.choice(vocab.FAKE_EXPORT_FORMATS)
        ev: dict[str, Any] = {"trajectory_id": r.tid, "state_index": r.marks["result"][0]}
        image = _shot(sim, r.tid, ev["state_index"]) if i == 0 else None
        q = (
            f"On the page in this image, how do I export the list as {fmt}?"
            if image
            else rng.choice(
                [
                    f"How do you export the customers grid to {fmt}?",
                    f"Which menu item downloads the customer list in {fmt} format?",
                ]
            )
        )
        out.append(
            _q(
                "procedure-abs",
                q,
                f"False premise: there is no {fmt} export; the customers grid's Export "
                "menu offers only CSV and Excel XML.",
                ["CSV", "Excel XML"],
                [ev],
                "Export menu opened",
                image=image,
            )
        )
    return out


def _missing_controls(sim: Sim) -> list[dict]:
    """Controls that do not exist: the answer names what the page offers instead."""
    out = []
    for kind, question, answer, phrases in [
        (
            "order_view",
            "How do you delete an order from the admin?",
            (
                "False premise: orders cannot be deleted; an open order's page offers only Cancel, Hold, Invoice and "
                "Reorder."
            ),
            ["Cancel", "Hold", "Invoice"],
        ),
        (
            "customers",
            "How do you merge two duplicate customer accounts in the Customers grid?",
            (
                "False premise: there is no merge action; the Customers grid only has Add New Customer, Export, search "
                "and per-row Edit."
            ),
            ["Add New Customer", "Export"],
        ),
        (
            "products",
            "Where is the 'Import prices from CSV' button on the Products grid?",
            "False premise: the Products grid has no import; it offers Add Product, Filters and keyword search.",
            ["Add Product", "Filters"],
        ),
    ]:
        where = [k for k, p in sim.pages.items() if p.kind == kind and all(ph in p.text for ph in phrases)]
        if where:
            tid, idx = where[-1]
            out.append(
                _q(
                    "procedure-abs",
                    question,
                    answer,
                    phrases,
                    [{"trajectory_id": tid, "state_index": idx}],
                    f"no such control on any {kind} page",
                )
            )
    return out


def _shot(sim: Sim, tid: str, idx: int) -> str | None:
    return f"screenshots/{tid}/{idx:04d}.png" if sim.screenshots else None


def visual(sim: Sim, rng: random.Random) -> list[dict]:
    """Questions about the screenshots (only when they are rendered)."""
    if not sim.screenshots:
        return []
    out = []
    grids = [
        (k, p)
        for k, p in sim.pages.items()
        if p.kind == "products" and any(isinstance(b, B.Grid) and b.alert_rows and any(b.alert_rows) for b in p.blocks)
    ]
    if grids:
        ev = [{"trajectory_id": t, "state_index": i} for (t, i), _ in grids[-2:]]
        out.append(
            _q(
                "static-environment",
                "In the products grid, how are rows with very low stock marked?",
                "They are highlighted in red.",
                ["red"],
                ev,
                "screenshot renderer tints qty < 5 rows red",
                visual_only=True,
            )
        )
    saved = [k for k, p in sim.pages.items() if any(isinstance(b, B.Notice) and b.kind == "success" for b in p.blocks)]
    if saved:
        out.append(
            _q(
                "static-environment",
                "What color is the confirmation banner the admin shows after a save?",
                "Green.",
                ["green"],
                [{"trajectory_id": t, "state_index": i} for t, i in saved[-2:]],
                "success notices are drawn green",
                visual_only=True,
            )
        )
    keyed = by_key(sim)
    prices = [
        (k, o)
        for k, o in keyed.items()
        if k[0] == "product.price"
        and len({x.value for x in o}) == 1
        and truth(sim.world, k) == o[-1].value
        and sim.pages[(o[-1].tid, o[-1].idx)].kind == "products"
    ]
    for key, obs in rng.sample(prices, min(2, len(prices))):
        p = next(x for x in sim.world.products if x.sku == key[1])
        o = obs[-1]
        out.append(
            _q(
                "static-environment",
                f"In the grid shown in this image, what price is listed for {p.name}?",
                o.value,
                [o.value],
                [_ref(o)],
                "price cell in the pictured grid",
                image=_shot(sim, o.tid, o.idx),
            )
        )
    return out
