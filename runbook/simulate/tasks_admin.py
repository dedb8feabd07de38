"""Customer and settings tasks, and the infeasible export request.

Settings edits and new customers change values over time (the dynamic questions); the Export menu only offers
CSV and Excel XML, which is what a false-premise 'export as PDF' question must be answered with.
"""

from __future__ import annotations

from . import pages as P
from . import vocab
from .blocks import Notice
from .recorder import Episode, Sim, click_timeout
from .tasks_common import via_menu
from .world import Customer


def _open_customers(ep: Episode, why: str) -> None:
    via_menu(ep, "customers", "menu_customers", P.customers_grid(ep.sim.world), why)


def customer_lookup(sim: Sim) -> None:
    w = sim.world
    c = sim.rng.choice(w.customers)
    ask = sim.rng.choice(["count", "email", "group"])
    goal = sim.rng.choice(
        {
            "count": ["How many customer accounts does the store have?", "Count the registered customers."],
            "email": [f"What is the email address of {c.name}?", f"Find {c.name}'s email."],
            "group": [f"Which customer group is {c.name} in?", f"Is {c.name} a wholesale customer?"],
        }[ask]
    )
    ep = Episode(sim, "customer_lookup", goal, P.dashboard(w))
    _open_customers(ep, "I need the customer list.")
    if ask == "count":
        n = len(w.customers)
        ep.finish(f"The unfiltered customers grid says {n} records found.", f"There are {n} customer accounts.", True)
        return
    ep.fill("search", c.name, f"Searching for {c.name}.", P.customers_grid(w, typed=c.name))
    ep.click("search_go", "Submitting the search.", P.customers_grid(w, keyword=c.name))
    ans = f"{c.name}'s email is {c.email}." if ask == "email" else f"{c.name} is in the {c.group} group."
    ep.finish(f"The row for {c.name} shows {c.email}, group {c.group}.", ans, True)


def add_customer(sim: Sim) -> None:
    w = sim.world
    taken = {c.name for c in w.customers}
    first, last = next(
        (f, l)
        for f, l in ((sim.rng.choice(vocab.FIRST_NAMES), sim.rng.choice(vocab.LAST_NAMES)) for _ in range(1000))
        if f"{f} {l}" not in taken
    )
    email = f"{first[0].lower()}{last.lower()}@{sim.rng.choice(vocab.EMAIL_DOMAINS)}"
    group = sim.rng.choice(vocab.GROUPS)
    goal = sim.rng.choice(
        [
            f"Create a customer account for {first} {last} ({email}) in the {group} group.",
            f"Add {first} {last}, email {email}, as a new {group} customer.",
        ]
    )
    ep = Episode(sim, "add_customer", goal, P.dashboard(w))
    ep.info.update(name=f"{first} {last}", old=str(len(w.customers)), new=str(len(w.customers) + 1))
    _open_customers(ep, "I need to add a customer.")
    ep.click(
        "add_customer",
        f"The grid lists {len(w.customers)} customers. Clicking 'Add New Customer'.",
        P.customer_new(w),
        mark="add",
    )
    draft = {}
    for key, label, value in (("first", "First Name", first), ("last", "Last Name", last), ("email", "Email", email)):
        draft[key] = value
        ep.fill(key, value, f"Filling '{label}' with {value}.", P.customer_new(w, dict(draft)), mark="fill")
    if group != "General":
        draft["group"] = group
        ep.select("group", group, f"Setting Group to {group}.", P.customer_new(w, dict(draft)), mark="fill")
    ep.click("save_customer", "All required fields are filled; clicking 'Save Customer'.", None, mark="save")
    w.customers.append(Customer(len(w.customers) + 1, first, last, email, group, "United States", "Jan 12, 2026"))
    ep.page = P.customers_grid(w, notice=Notice("You saved the customer."))
    ep.finish(
        f"'You saved the customer.' The grid now has {len(w.customers)} records.",
        f"Created the customer account for {first} {last}.",
        True,
        mark="saved",
    )


def _new_setting_value(sim: Sim, s) -> str:
    for _ in range(100):
        if s.kind == "checkbox":
            v = "No" if s.value == "Yes" else "Yes"
        elif s.kind == "select":
            v = sim.rng.choice([o for o in s.options if o != s.value])
        elif s.label == "Store Phone":
            v = f"(412) 555-{sim.rng.randint(1000, 9999)}"
        elif s.label == "Low Stock Threshold":
            v = str(sim.rng.randint(1, 25))
        elif s.label == "Store Name":
            v = sim.rng.choice(
                [
                    "Acme Outfitters",
                    "Acme Trail Supply",
                    "Acme Outdoor Co.",
                    "Acme Basecamp",
                    "Acme Northwind",
                    "Acme Ridge & River",
                ]
            )
        else:
            v = sim.rng.choice(["support", "help", "orders", "care", "hello"]) + "@acme.example"
        if v != s.value and (s.kind == "checkbox" or sim.fresh(("setting", s.label), v)):
            return v
    return v


def edit_setting(sim: Sim) -> None:
    w = sim.world
    s = sim.rng.choice([s for s in w.settings if s.label != "Order Confirmation Email"])
    i = w.settings.index(s)
    new = _new_setting_value(sim, s)
    if s.kind == "checkbox":
        goal = f"{'Turn on' if new == 'Yes' else 'Turn off'} '{s.label}' in the store configuration."
    else:
        goal = sim.rng.choice([f"Change the {s.label} setting to {new}.", f"Set '{s.label}' to {new} in Settings."])
    ep = Episode(sim, "edit_setting", goal, P.dashboard(w))
    ep.info.update(setting=s.label, old=s.value, new=new)
    sim.remember(("setting", s.label), s.value)
    via_menu(ep, "settings", "menu_config", P.settings(w), "Store settings are under Settings > Configuration.")
    key = f"setting_{i}"
    nxt = P.settings(w, {s.label: new})
    if s.kind == "checkbox":
        if sim.rng.random() < 0.5:
            bid = ep.page.bid(key)
            err = click_timeout(
                bid,
                f'<input type="checkbox" bid="{bid}" class="admin__actions-switch-checkbox" …/>',
                f'<label class="admin__actions-switch-label" for="{key}">…</label>',
            )
            ep.info["gotcha"] = "label_intercept"
            ep.click(
                key, f"'{s.label}' is a switch showing {s.value}. Clicking the checkbox.", None, mark="error", error=err
            )
            ep.click(
                f"{key}_label",
                "The checkbox click timed out: its label intercepts pointer events. Clicking the label instead.",
                nxt,
                mark="fix",
            )
        else:
            ep.click(f"{key}_label", f"Clicking the '{s.label}' switch label to flip it to {new}.", nxt, mark="fill")
    elif s.kind == "select":
        ep.select(key, new, f"'{s.label}' is {s.value}; selecting {new}.", nxt, mark="fill")
    else:
        ep.fill(key, new, f"'{s.label}' currently reads {s.value}; replacing it with {new}.", nxt, mark="fill")
    ep.click("save_config", "Clicking 'Save Config' to store the change.", None, mark="save")
    s.value = new
    sim.remember(("setting", s.label), new)
    ep.page = P.settings(w, notice=Notice("You saved the configuration."))
    ep.finish(
        f"'You saved the configuration.' and {s.label} shows {new}.", f"{s.label} is now {new}.", True, mark="saved"
    )


def export_pdf(sim: Sim) -> None:
    """Infeasible: the grid exports CSV or Excel XML only."""
    w = sim.world
    fmt = sim.rng.choice(vocab.FAKE_EXPORT_FORMATS[:2])
    goal = sim.rng.choice([f"Export the customer list as a {fmt} file.", f"Download all customers as {fmt}."])
    ep = Episode(sim, "export_infeasible", goal, P.dashboard(w))
    ep.info["format"] = fmt
    _open_customers(ep, f"I need to export the customers as {fmt}.")
    ep.click(
        "export",
        "The grid has an 'Export' button; opening it to see the formats.",
        P.customers_grid(w, export_open=True),
        mark="export",
    )
    ep.finish(
        f"The Export menu offers only 'CSV' and 'Excel XML'; there is no {fmt} option.",
        f"The customers grid cannot export {fmt}: the only formats are CSV and Excel XML.",
        True,
        mark="result",
    )
