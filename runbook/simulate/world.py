"""The simulated app's ground truth: products, orders, customers, settings, and the UI state that persists.

Everything is built from one random.Random so a seed fixes the world. Money is kept in integer cents so a price
edit never drifts by float rounding; `money()` gives the exact string the pages show (and questions quote).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from . import vocab

SITE = "acme_admin"
BASE = "http://localhost:7790/admin"
APP = "Acme Admin"
LOW_STOCK = 5  # below this the grid screenshot tints the row red (a visual-only fact)


def money(cents: int) -> str:
    return f"${cents // 100:,}.{cents % 100:02d}"


@dataclass
class Product:
    id: int
    name: str
    sku: str
    category: str
    price: int  # cents
    qty: int
    enabled: bool = True

    @property
    def status(self) -> str:
        return "Enabled" if self.enabled else "Disabled"


@dataclass
class Order:
    id: int
    customer: str
    date: str  # display form, e.g. 'Mar 4, 2025 10:12:31 AM'
    month: int  # 1-12, 2025; the bestsellers report aggregates on it
    status: str
    items: list[tuple[int, int]]  # (product id, qty)
    total: int  # cents

    @property
    def number(self) -> str:
        return f"{self.id:09d}"


@dataclass
class Customer:
    id: int
    first: str
    last: str
    email: str
    group: str
    country: str
    since: str

    @property
    def name(self) -> str:
        return f"{self.first} {self.last}"


@dataclass
class Setting:
    section: str
    label: str
    value: str
    kind: str = "text"  # text | select | checkbox
    options: tuple[str, ...] = ()


@dataclass
class World:
    products: list[Product]
    orders: list[Order]
    customers: list[Customer]
    settings: list[Setting]
    # Filters on Sales > Orders survive between sessions, as Magento's bookmarks do: the 'Clear all' gotcha.
    order_filters: list[tuple[str, str]] = field(default_factory=list)

    def product(self, pid: int) -> Product:
        return self.products[pid - 1]

    def order(self, number: str) -> Order | None:
        return next((o for o in self.orders if o.number == number), None)

    def setting(self, label: str) -> Setting:
        return next(s for s in self.settings if s.label == label)

    def lifetime_sales(self) -> int:
        return sum(o.total for o in self.orders if o.status != "Canceled")

    def bestsellers(self, month: int) -> list[tuple[Product, int]]:
        """Qty ordered per product in one month of 2025, all statuses (ordered quantity never changes later)."""
        qty: dict[int, int] = {}
        for o in self.orders:
            if o.month == month:
                for pid, q in o.items:
                    qty[pid] = qty.get(pid, 0) + q
        rows = sorted(qty.items(), key=lambda kv: (-kv[1], self.product(kv[0]).name))
        return [(self.product(pid), q) for pid, q in rows]


def _products(rng: random.Random, n: int) -> list[Product]:
    out: list[Product] = []
    seen: set[str] = set()
    cats = list(vocab.CATEGORIES)
    while len(out) < n:
        cat = cats[len(out) % len(cats)]
        name = f"{rng.choice(vocab.ADJECTIVES)} {rng.choice(vocab.MATERIALS)} {rng.choice(vocab.CATEGORIES[cat])}"
        if name in seen:
            continue
        seen.add(name)
        pid = len(out) + 1
        sku = f"{name[:2].upper()}-{vocab.CODES[cat]}-{100 + pid * 7 % 900}"
        price = rng.choice([1900, 2400, 2900, 3400, 3900, 4500, 5200, 5900, 6900, 7900, 8900, 12900])
        qty = rng.choice([0, 2, 3, 4] + [rng.randint(6, 140) for _ in range(8)])
        out.append(Product(pid, name, sku, cat, price, qty, enabled=rng.random() > 0.1))
    return out


def _customers(rng: random.Random, n: int) -> list[Customer]:
    out: list[Customer] = []
    seen: set[tuple[str, str]] = set()
    while len(out) < n:
        first, last = rng.choice(vocab.FIRST_NAMES), rng.choice(vocab.LAST_NAMES)
        if (first, last) in seen:
            continue
        seen.add((first, last))
        cid = len(out) + 1
        email = f"{first.lower()}.{last.lower()}@{rng.choice(vocab.EMAIL_DOMAINS)}"
        since = f"{rng.choice(vocab.MONTHS)} {rng.randint(1, 28)}, {rng.choice([2023, 2024])}"
        out.append(Customer(cid, first, last, email, rng.choice(vocab.GROUPS), rng.choice(vocab.COUNTRIES), since))
    return out


def _orders(rng: random.Random, n: int, products: list[Product], customers: list[Customer]) -> list[Order]:
    out = []
    for i in range(n):
        month = 1 + i * 12 // n  # spread over 2025 in id order, so newer orders have later dates
        items = []
        for _ in range(rng.choice([1, 1, 2, 3])):
            p = rng.choice(products[: max(8, len(products) * 2 // 3)])  # a head of popular products
            items.append((p.id, rng.choice([1, 1, 1, 2, 3])))
        total = sum(products[pid - 1].price * q for pid, q in items) + rng.choice([0, 500, 799])
        day, hour, minute = rng.randint(1, 28), rng.randint(1, 12), rng.randint(0, 59)
        date = (
            f"{vocab.MONTHS[month - 1]} {day}, 2025 {hour}:{minute:02d}:{rng.randint(0, 59):02d} "
            f"{rng.choice(['AM', 'PM'])}"
        )
        status = rng.choices(["Complete", "Processing", "Pending", "Canceled"], [6, 2, 2, 1])[0]
        out.append(Order(101 + i, rng.choice(customers).name, date, month, status, items, total))
    return out


def _settings(rng: random.Random) -> list[Setting]:
    return [
        Setting("General", "Store Name", rng.choice(["Acme Outfitters", "Acme Trail Supply", "Acme Outdoor Co."])),
        Setting("General", "Store Phone", f"(412) 555-{rng.randint(1000, 9999)}"),
        Setting("General", "Store Email", rng.choice(["support@acme-outfitters.example", "help@acme.example"])),
        Setting(
            "General",
            "Timezone",
            rng.choice(["America/New_York", "America/Chicago"]),
            "select",
            ("America/New_York", "America/Chicago", "America/Denver", "America/Los_Angeles", "UTC"),
        ),
        Setting("Inventory", "Low Stock Threshold", str(rng.choice([3, 5, 10]))),
        Setting("Inventory", "Backorders", "No Backorders", "select", ("No Backorders", "Allow Qty Below 0")),
        Setting("Checkout", "Allow Guest Checkout", rng.choice(["Yes", "No"]), "checkbox"),
        Setting("Checkout", "Order Confirmation Email", "Enabled", "select", ("Enabled", "Disabled")),
    ]


def build_world(rng: random.Random, n_products: int = 60, n_customers: int = 48, n_orders: int = 140) -> World:
    products = _products(rng, n_products)
    customers = _customers(rng, n_customers)
    orders = _orders(rng, n_orders, products, customers)
    return World(products, orders, customers, _settings(rng))
