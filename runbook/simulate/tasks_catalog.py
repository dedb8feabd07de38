"""Catalog tasks: look up a product, edit its price / stock / status, and asking about one that does not exist.

Edits mutate the world between two snapshots, so later states show the new value and earlier ones the stale
one; the `unsaved` and `label_intercept` variants are the failure modes the gotcha questions ask about.
"""

from __future__ import annotations

from . import pages as P
from . import vocab
from .blocks import Notice
from .recorder import Episode, Sim, click_timeout
from .tasks_common import open_products, search_products
from .world import Product, money


def _pick_product(sim: Sim, hot_share: float = 0.7):
    pool = sim.hot if sim.rng.random() < hot_share else range(1, len(sim.world.products) + 1)
    return sim.world.product(sim.rng.choice(list(pool)))


def lookup_product(sim: Sim) -> None:
    p = _pick_product(sim, 0.6)
    sim.looked_up.append(p.id)
    ask = sim.rng.choice(["price", "price", "qty", "sku", "status"])
    goal = sim.rng.choice(
        {
            "price": [f"What is the current price of {p.name}?", f"How much does {p.name} cost in the catalog?"],
            "qty": [f"How many units of {p.name} are in stock?", f"Check the stock quantity of {p.name}."],
            "sku": [f"What is the SKU of {p.name}?", f"Find the SKU for the product '{p.name}'."],
            "status": [f"Is {p.name} enabled or disabled?", f"Tell me whether {p.name} is currently enabled."],
        }[ask]
    )
    ep = Episode(sim, "lookup_product", goal, P.dashboard(sim.world))
    open_products(ep, f"I need to find {p.name} in the catalog.")
    search_products(ep, p.name, "")
    answer = {
        "price": f"{p.name} is priced at {money(p.price)}.",
        "qty": f"{p.name} has {p.qty} units in stock.",
        "sku": f"The SKU of {p.name} is {p.sku}.",
        "status": f"{p.name} is {p.status}.",
    }[ask]
    ep.finish(
        ep.say(
            f"The filtered grid shows one row for {p.name} (SKU {p.sku}). I can answer now.",
            f"Found it: the row for {p.name} lists price {money(p.price)}, quantity {p.qty}, status {p.status}.",
        ),
        answer,
        True,
    )


def _open_edit(ep: Episode, pid: int, why: str) -> None:
    w = ep.sim.world
    p = w.product(pid)
    open_products(ep, why)
    search_products(ep, p.name, "")
    ep.click(
        f"edit_{pid}",
        ep.say(
            f"The row for {p.name} is there; I'll click its 'Edit' link to open the form.",
            "Opening the product edit page through the row's 'Edit' link.",
        ),
        P.product_edit(w, pid),
        mark="open_edit",
    )


def _save(ep: Episode, pid: int, what: str) -> None:
    ep.click(
        "save",
        ep.say(
            f"The {what} field now holds the new value. Clicking 'Save' to persist it.",
            f"Now I click 'Save' so the {what} change is stored.",
        ),
        None,
        mark="save",
    )
    ep.page = P.product_edit(ep.sim.world, pid, notice=Notice("You saved the product."))


def edit_price(sim: Sim) -> None:
    w = sim.world
    # Often a product someone asked about earlier: its old price then sits in another trajectory (stale evidence).
    p = w.product(sim.looked_up[-1]) if sim.looked_up and sim.rng.random() < 0.5 else _pick_product(sim)
    old = p.price
    mode, pct, new = _new_price(sim, p.sku, old)
    goal = {
        "set": f"Change the price of {p.name} to {money(new)}.",
        "up": f"Increase the price of {p.name} by {pct}%.",
        "down": f"Apply a {pct}% price reduction to {p.name}.",
    }[mode]
    ep = Episode(sim, "edit_price", goal, P.dashboard(w))
    ep.info.update(product=p.id, old=money(old), new=money(new))
    _open_edit(ep, p.id, f"I need to change the price of {p.name}.")
    typed = f"{new / 100:.2f}"
    calc = "" if mode == "set" else f" {money(old)} {'+' if mode == 'up' else '-'} {pct}% = {money(new)}."
    ep.fill(
        "price",
        typed,
        ep.say(
            f"The Price field shows {old / 100:.2f}.{calc} I'll replace it with {typed}.",
            f"Current price is {money(old)}.{calc} Entering {typed} in 'Price'.",
        ),
        P.product_edit(w, p.id, {"price": typed}),
        mark="fill",
    )
    sim.remember(("product.price", p.sku), money(old))
    if sim.rng.random() < 0.15:  # the agent leaves without saving: the change silently never happens
        _leave_unsaved(ep, p, new)
        return
    p.price = new
    sim.remember(("product.price", p.sku), money(new))
    _save(ep, p.id, "Price")
    ep.finish(
        ep.say(
            f"The page says 'You saved the product.' and Price now reads {typed}.",
            f"Saved: the confirmation message appeared and the price is {money(new)}.",
        ),
        f"The price of {p.name} is now {money(new)} (was {money(old)}).",
        True,
        mark="saved",
    )


def _new_price(sim: Sim, sku: str, old: int) -> tuple[str, int, int]:
    """(how the goal words it: set, up or down; the percentage; the new price in cents), a price not seen before."""
    for _ in range(20):
        mode = sim.rng.choice(["set", "set", "up", "down"])
        pct = sim.rng.choice([5, 10, 15, 20, 25])
        new = {
            "set": sim.rng.choice(range(1500, 15000, 100)) - sim.rng.choice([1, 0, 0]),
            "up": old * (100 + pct) // 100,
            "down": old * (100 - pct) // 100,
        }[mode]
        if new != old and sim.fresh(("product.price", sku), money(new)):
            break
    return mode, pct, new


def _leave_unsaved(ep: Episode, p: Product, new: int) -> None:
    """The agent goes back to the grid without saving, and believes the price changed."""
    ep.info["gotcha"] = "unsaved"
    ep.click(
        "back",
        ep.say(
            "The price is entered, so the task should be done; going back to the grid.",
            "Price updated in the form. Returning to the product list.",
        ),
        P.products_grid(ep.sim.world, keyword=p.name),
        mark="error",
    )  # the grid keeps its search
    ep.finish(
        "Back on the product grid; I believe the price change is complete.",
        f"I changed the price of {p.name} to {money(new)}.",
        False,
    )


def update_stock(sim: Sim) -> None:
    w = sim.world
    p = _pick_product(sim)
    old = p.qty
    new = next(
        q
        for q in (sim.rng.randint(0, 150) for _ in range(50))
        if q != old and sim.fresh(("product.qty", p.sku), str(q))
    )
    goal = sim.rng.choice(
        [
            f"Set the stock quantity of {p.name} to {new}.",
            f"We counted {new} units of {p.name} in the warehouse; update the quantity.",
        ]
    )
    ep = Episode(sim, "update_stock", goal, P.dashboard(w))
    ep.info.update(product=p.id, old=str(old), new=str(new))
    _open_edit(ep, p.id, f"I need to update the stock of {p.name}.")
    ep.fill(
        "qty",
        str(new),
        f"The Quantity field shows {old}. I'll set it to {new}.",
        P.product_edit(w, p.id, {"qty": str(new)}),
        mark="fill",
    )
    sim.remember(("product.qty", p.sku), str(old))
    p.qty = new
    sim.remember(("product.qty", p.sku), str(new))
    _save(ep, p.id, "Quantity")
    ep.finish(
        f"Saved; Quantity is now {new}.", f"{p.name} now has a stock quantity of {new} (was {old}).", True, mark="saved"
    )


def toggle_product(sim: Sim) -> None:
    w = sim.world
    p = _pick_product(sim, 0.5)
    target = not p.enabled
    verb = "Enable" if target else "Disable"
    goal = sim.rng.choice([f"{verb} the product {p.name}.", f"Please {verb.lower()} {p.name} in the catalog."])
    ep = Episode(sim, "toggle_product", goal, P.dashboard(w))
    ep.info.update(product=p.id, old=p.status, new="Enabled" if target else "Disabled")
    _open_edit(ep, p.id, f"I need to {verb.lower()} {p.name}.")
    new_status = "Enabled" if target else "Disabled"
    if sim.rng.random() < 0.6:  # the styled switch label covers the checkbox input
        bid = ep.page.bid("status")
        err = click_timeout(
            bid,
            f'<input type="checkbox" bid="{bid}" name="product[status]" class="admin__actions-switch-checkbox" …/>',
            '<label class="admin__actions-switch-label" for="toggle-product-status">…</label>',
        )
        ep.info["gotcha"] = "label_intercept"
        ep.click(
            "status",
            f"'Enable Product' is a switch currently showing {p.status}. I'll click the checkbox.",
            None,
            mark="error",
            error=err,
        )
        if sim.rng.random() < 0.15:
            ep.finish(
                "The click on the checkbox timed out again; the switch cannot be toggled.",
                f"I could not change the status of {p.name}: the Enable Product switch does not respond.",
                False,
            )
            return
        ep.click(
            "status_label",
            ep.say(
                "The click timed out because the switch's <label> intercepts pointer events. I'll click the label "
                "next to 'Enable Product' instead.",
                "Clicking the input failed: a label covers it and intercepts pointer events. Clicking the label.",
            ),
            P.product_edit(w, p.id, {"status": new_status}),
            mark="fix",
        )
    else:
        ep.click(
            "status_label",
            f"I'll click the 'Enable Product' switch to turn it to {new_status}.",
            P.product_edit(w, p.id, {"status": new_status}),
            mark="fix",
        )
    p.enabled = target
    _save(ep, p.id, "Enable Product")
    ep.finish(f"Saved; the switch now reads {new_status}.", f"{p.name} is now {new_status}.", True, mark="saved")


def missing_product(sim: Sim) -> None:
    """Infeasible: the product does not exist; the right move is to say so."""
    w = sim.world
    names = {p.name for p in w.products}
    fake = next(
        n
        for n in (
            f"{sim.rng.choice(vocab.ADJECTIVES)} {sim.rng.choice(vocab.MATERIALS)} "
            f"{sim.rng.choice(vocab.CATEGORIES['Jackets'])}"
            for _ in range(500)
        )
        if n not in names
    )
    goal = f"Set the price of {fake} to {money(sim.rng.choice(range(2000, 9000, 500)))}."
    ep = Episode(sim, "missing_product", goal, P.dashboard(w))
    ep.info["fake"] = fake
    sim.remember(("fake_product",), fake)
    open_products(ep, f"I need to find {fake}.")
    search_products(ep, fake, "")
    ep.finish(
        f"The search for '{fake}' returns 0 records: no such product exists.",
        f"There is no product named {fake} in the catalog, so its price cannot be changed.",
        True,
        mark="result",
    )
