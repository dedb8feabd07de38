"""Page builders: the app's screens as blocks + the facts each one shows, rendered to axtree text.

Each builder reads the world and the transient UI state it is given (keyword, draft form values, open dialog)
and never mutates anything; tasks.py decides what changes between two pages.
"""

from __future__ import annotations

from . import blocks as B
from .axtree import render
from .vocab import MONTH_NAMES
from .world import APP, BASE, LOW_STOCK, World, money

PER_PAGE = 20


def _page(kind, path, title, heading, nav, blocks, facts=(), menu=None) -> B.Page:
    return render(B.Page(kind, BASE + path, f"{title} / {APP}", heading, nav, list(blocks), menu, list(facts)))


def nav_menu(name: str) -> B.Menu:
    """The flyouts the agent opens on its way to a screen (they show on top of the current page)."""
    menus = {
        "sales": B.Menu("Sales", [("Operations", [("menu_orders", "Orders")])]),
        "catalog": B.Menu("Catalog", [("Inventory", [("menu_products", "Products")])]),
        "customers": B.Menu("Customers", [("Customers", [("menu_customers", "All Customers")])]),
        "reports": B.Menu(
            "Reports",
            [
                ("Sales", [("menu_report_orders", "Orders Report")]),
                ("Products", [("menu_bestsellers", "Bestsellers"), ("menu_low_stock", "Low Stock")]),
            ],
        ),
        "settings": B.Menu("Settings", [("Configuration", [("menu_config", "Configuration")])]),
    }
    return menus[name]


def with_menu(page: B.Page, name: str) -> B.Page:
    """The same page with a nav flyout open (re-rendered so bids shift the way real trees do)."""
    return render(
        B.Page(page.kind, page.url, page.title, page.heading, page.nav, page.blocks, nav_menu(name), page.facts)
    )


def dashboard(w: World) -> B.Page:
    last = sorted(w.orders, key=lambda o: -o.id)[:5]
    # The widget shows no order numbers, so its totals are not facts about a particular order.
    facts = [(("dashboard.lifetime_sales",), money(w.lifetime_sales()))]
    return _page(
        "dashboard",
        "/dashboard/",
        "Dashboard",
        "Dashboard",
        "DASHBOARD",
        [
            B.Stats(
                [
                    ("Lifetime Sales", money(w.lifetime_sales())),
                    (
                        "Average Order",
                        money(w.lifetime_sales() // max(1, sum(o.status != "Canceled" for o in w.orders))),
                    ),
                ]
            ),
            B.Heading("Last Orders"),
            B.Grid(
                ["Customer", "Items", "Total"],
                [[o.customer, str(sum(q for _, q in o.items)), money(o.total)] for o in last],
            ),
        ],
        facts,
    )


def _match(keyword: str, *fields: str) -> bool:
    k = keyword.lower().strip()
    return not k or any(k in f.lower() for f in fields)


def products_grid(
    w: World, keyword: str = "", page: int = 1, notice: B.Notice | None = None, typed: str | None = None
) -> B.Page:
    """`typed` is text in the search box not yet submitted: the grid still shows `keyword`'s rows."""
    rows = [p for p in w.products if _match(keyword, p.name, p.sku)]
    pages = max(1, -(-len(rows) // PER_PAGE))
    shown = rows[(page - 1) * PER_PAGE : page * PER_PAGE]
    facts: list[B.Fact] = []
    for p in shown:
        facts += [
            (("product.sku", p.name), p.sku),
            (("product.price", p.sku), money(p.price)),
            (("product.qty", p.sku), str(p.qty)),
            (("product.status", p.sku), p.status),
            (("product.category", p.name), p.category),
        ]
    if not keyword:
        facts.append((("catalog.count",), str(len(rows))))
    blocks: list[B.Block] = [notice] if notice else []
    blocks += [
        B.Button("add_product", "Add Product"),
        B.Button("filters", "Filters"),
        B.Search(keyword if typed is None else typed),
        B.Grid(
            ["ID", "Name", "SKU", "Category", "Price", "Quantity", "Status"],
            [[str(p.id), p.name, p.sku, p.category, money(p.price), str(p.qty), p.status] for p in shown],
            len(rows),
            [(f"edit_{p.id}", "Edit") for p in shown],
            page,
            pages,
            [p.qty < LOW_STOCK for p in shown],
        ),
    ]
    return _page(
        "products", "/catalog/product/", "Products / Inventory / Catalog", "Products", "CATALOG", blocks, facts
    )


def product_edit(w: World, pid: int, draft: dict | None = None, notice: B.Notice | None = None) -> B.Page:
    p = w.product(pid)
    draft = draft or {}
    price = draft.get("price", f"{p.price / 100:.2f}")
    qty = draft.get("qty", str(p.qty))
    status = draft.get("status", p.status)
    # Only values the draft did not touch are persisted truth.
    facts = [(("product.sku", p.name), p.sku)]
    if "price" not in draft:
        facts.append((("product.price", p.sku), money(p.price)))
    if "qty" not in draft:
        facts.append((("product.qty", p.sku), str(p.qty)))
    if "status" not in draft:
        facts.append((("product.status", p.sku), p.status))
    blocks: list[B.Block] = [notice] if notice else []
    blocks += [
        B.Button("back", "Back"),
        B.Button("save", "Save"),
        B.Field("status", "Enable Product", status, "checkbox"),
        B.Field("name", "Product Name", p.name, required=True),
        B.Field("sku", "SKU", p.sku, required=True),
        B.Field("price", "Price", price, required=True),
        B.Text("$"),
        B.Field("qty", "Quantity", qty),
        B.Field("category", "Categories", p.category, "select", ("Jackets", "Tops", "Bottoms", "Bags", "Gear")),
        B.Link("advanced_pricing", "Advanced Pricing"),
    ]
    return _page(
        "product_edit",
        f"/catalog/product/edit/id/{pid}/",
        f"{p.name} / Products / Inventory / Catalog",
        p.name,
        "CATALOG",
        blocks,
        facts,
    )


def _order_rows(w: World) -> list:
    rows = sorted(w.orders, key=lambda o: -o.id)
    for field, value in w.order_filters:
        if field == "Status":
            rows = [o for o in rows if o.status == value]
        elif field == "Keyword":
            rows = [o for o in rows if _match(value, o.number, o.customer)]
    return rows


def orders_grid(
    w: World, typed: str = "", filters_open: bool = False, draft_status: str = "", notice: B.Notice | None = None
) -> B.Page:
    """Rows come from the world's persisted filters only: a submitted keyword is itself a sticky filter."""
    rows = _order_rows(w)
    shown = rows[:PER_PAGE]
    facts: list[B.Fact] = []
    for o in shown:
        facts += [
            (("order.status", o.number), o.status),
            (("order.total", o.number), money(o.total)),
            (("order.customer", o.number), o.customer),
            (("order.date", o.number), o.date),
        ]
    if not w.order_filters:
        facts.append((("orders.count",), str(len(rows))))
    if len(w.order_filters) == 1 and w.order_filters[0][0] == "Status":
        facts.append((("orders.count_status", w.order_filters[0][1]), str(len(rows))))
    blocks: list[B.Block] = [notice] if notice else []
    blocks += [B.Button("create_order", "Create New Order"), B.Button("filters", "Filters")]
    if filters_open:
        blocks += [
            B.Field(
                "filter_status",
                "Status",
                draft_status or " ",
                "select",
                (" ", "Pending", "Processing", "Complete", "Canceled"),
            ),
            B.Field("filter_id", "ID", ""),
            B.Button("filters_cancel", "Cancel"),
            B.Button("filters_apply", "Apply Filters"),
        ]
    if w.order_filters:
        blocks.append(B.Filters([f"{f}: {v}" for f, v in w.order_filters]))
    blocks += [
        B.Search(typed),
        B.Grid(
            ["ID", "Purchase Date", "Bill-to Name", "Grand Total", "Status"],
            [[o.number, o.date, o.customer, money(o.total), o.status] for o in shown],
            len(rows),
            [(f"view_{o.number}", "View") for o in shown],
            1,
            max(1, -(-len(rows) // PER_PAGE)),
        ),
    ]
    return _page("orders", "/sales/order/", "Orders / Operations / Sales", "Orders", "SALES", blocks, facts)


def order_view(w: World, number: str, dialog: bool = False, notice: B.Notice | None = None) -> B.Page:
    o = w.order(number)
    assert o is not None  # the order the agent clicked through to is in the world
    facts: list[B.Fact] = [
        (("order.status", number), o.status),
        (("order.total", number), money(o.total)),
        (("order.customer", number), o.customer),
        (("order.date", number), o.date),
    ]
    blocks: list[B.Block] = [notice] if notice else []
    blocks.append(B.Button("back", "Back"))
    if o.status in ("Pending", "Processing"):
        blocks += [B.Button("cancel", "Cancel"), B.Button("hold", "Hold"), B.Button("invoice", "Invoice")]
    blocks += [
        B.Button("reorder", "Reorder"),
        B.Section("Order & Account Information"),
        B.Stats([("Order Date", o.date), ("Order Status", o.status), ("Customer Name", o.customer)]),
        B.Section("Items Ordered"),
        # No unit price column: it would show the order-time price, not a catalog fact.
        B.Grid(
            ["Product", "SKU", "Qty Ordered"], [[w.product(pid).name, w.product(pid).sku, str(q)] for pid, q in o.items]
        ),
        B.Stats([("Grand Total", money(o.total))]),
    ]
    if dialog:
        blocks.append(
            B.Dialog(
                "Cancel the Order",
                "Are you sure you want to cancel this order?",
                [("dialog_cancel", "Cancel"), ("dialog_ok", "OK")],
            )
        )
    return _page(
        "order_view",
        f"/sales/order/view/order_id/{o.id}/",
        f"#{number} / Orders / Operations / Sales",
        f"#{number}",
        "SALES",
        blocks,
        facts,
    )


def customers_grid(
    w: World, keyword: str = "", export_open: bool = False, notice: B.Notice | None = None, typed: str | None = None
) -> B.Page:
    rows = [c for c in w.customers if _match(keyword, c.name, c.email)]
    shown = rows[:PER_PAGE]
    facts: list[B.Fact] = []
    for c in shown:
        facts += [
            (("customer.email", c.name), c.email),
            (("customer.group", c.name), c.group),
            (("customer.country", c.name), c.country),
            (("customer.since", c.name), c.since),
        ]
    if not keyword:
        facts.append((("customers.count",), str(len(rows))))
    blocks: list[B.Block] = [notice] if notice else []
    blocks += [B.Button("add_customer", "Add New Customer"), B.Button("export", "Export")]
    if export_open:
        blocks += [B.Options([("export_csv", "CSV"), ("export_xml", "Excel XML")])]
    blocks += [
        B.Search(keyword if typed is None else typed),
        B.Grid(
            ["ID", "Name", "Email", "Group", "Country", "Customer Since"],
            [[str(c.id), c.name, c.email, c.group, c.country, c.since] for c in shown],
            len(rows),
            [(f"edit_c{c.id}", "Edit") for c in shown],
            1,
            max(1, -(-len(rows) // PER_PAGE)),
        ),
    ]
    return _page("customers", "/customer/index/", "Customers / Customers", "Customers", "CUSTOMERS", blocks, facts)


def customer_new(w: World, draft: dict | None = None, notice: B.Notice | None = None) -> B.Page:
    d = draft or {}
    blocks: list[B.Block] = [notice] if notice else []
    blocks += [
        B.Button("back", "Back"),
        B.Button("save_customer", "Save Customer"),
        B.Section("Account Information"),
        B.Field("group", "Group", d.get("group", "General"), "select", ("General", "Wholesale", "Retailer")),
        B.Field("first", "First Name", d.get("first", ""), required=True),
        B.Field("last", "Last Name", d.get("last", ""), required=True),
        B.Field("email", "Email", d.get("email", ""), required=True),
    ]
    return _page(
        "customer_new", "/customer/index/new/", "New Customer / Customers", "New Customer", "CUSTOMERS", blocks
    )


def settings(w: World, draft: dict | None = None, notice: B.Notice | None = None) -> B.Page:
    d = draft or {}
    blocks: list[B.Block] = [notice] if notice else []
    blocks.append(B.Button("save_config", "Save Config"))
    section, facts = None, []
    for i, s in enumerate(w.settings):
        if s.section != section:
            section = s.section
            blocks.append(B.Section(section))
        blocks.append(B.Field(f"setting_{i}", s.label, d.get(s.label, s.value), s.kind, s.options))
        if s.label not in d:
            facts.append((("setting", s.label), s.value))
    return _page("settings", "/system/config/", "Configuration / Settings", "Configuration", "SETTINGS", blocks, facts)


def bestsellers(
    w: World, date_from: str = "", date_to: str = "", month: int | None = None, shown: bool = False
) -> B.Page:
    """`shown` without a month is the empty report the gotcha is about; with a month, the real table."""
    blocks = [
        B.Text("Filter"),
        B.Field("period", "Period", "Month", "select", ("Day", "Month", "Year")),
        B.Field("from", "From", date_from, "date", required=True),
        B.Field("to", "To", date_to, "date", required=True),
        B.Button("show_report", "Show Report"),
    ]
    facts, url = [], "/reports/report_sales/bestsellers/"
    if shown and month:
        rows = w.bestsellers(month)[:5]
        label = f"{MONTH_NAMES[month - 1]} 2025"
        blocks.append(
            B.Grid(
                ["Interval", "Product", "Price", "Order Quantity"],
                [[label, p.name, money(p.price), str(q)] for p, q in rows],
                len(rows),
            )
        )
        if rows and (len(rows) < 2 or rows[0][1] > rows[1][1]):  # a tied top would make the fact ambiguous
            facts.append((("bestseller.top", month), rows[0][0].name))
        url += f"filter/from/{date_from.replace('/', '-')}/to/{date_to.replace('/', '-')}/"
    elif shown:
        blocks.append(
            B.Grid(
                ["Interval", "Product", "Price", "Order Quantity"],
                [],
                0,
                empty="We can't find records for this period.",
            )
        )
    return _page(
        "bestsellers", url, "Bestsellers Report / Products / Reports", "Bestsellers Report", "REPORTS", blocks, facts
    )
