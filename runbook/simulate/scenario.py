"""Which task runs when: a fixed opening that covers every question type, then a seeded weighted mix."""

from __future__ import annotations

import random

from . import tasks_admin as A
from . import tasks_catalog as C
from . import tasks_sales as S
from .recorder import Clock, Sim
from .world import build_world

# The opening makes even a tiny sample show each phenomenon once: a value seen, then changed; a sticky filter
# left behind and then tripped over; a label that intercepts clicks; an empty report; an infeasible request.
OPENING = [
    C.lookup_product,
    S.filter_orders,
    C.edit_price,
    S.order_lookup,
    C.toggle_product,
    S.bestsellers,
    A.edit_setting,
    A.export_pdf,
]

MIX = [
    (C.lookup_product, 12),
    (C.edit_price, 10),
    (C.update_stock, 4),
    (C.toggle_product, 5),
    (S.filter_orders, 5),
    (S.order_lookup, 10),
    (S.cancel_order, 6),
    (S.dashboard_sales, 3),
    (S.bestsellers, 6),
    (A.customer_lookup, 7),
    (A.add_customer, 3),
    (A.edit_setting, 7),
    (A.export_pdf, 2),
    (C.missing_product, 3),
]


def simulate(seed: int, n_trajectories: int, screenshots: bool = True) -> Sim:
    rng = random.Random(seed)
    world = build_world(rng)
    sim = Sim(rng, world, Clock(rng), screenshots=screenshots)
    sim.hot = rng.sample(range(1, len(world.products) + 1), 10)
    tasks, weights = zip(*MIX)
    for i in range(n_trajectories):
        task = OPENING[i] if i < len(OPENING) else rng.choices(tasks, weights)[0]
        task(sim)
    return sim
