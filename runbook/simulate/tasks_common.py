"""Moves every task shares: opening a screen through the nav flyout and searching a grid."""

from __future__ import annotations

from . import pages as P
from .blocks import Page
from .recorder import Episode

_LABEL = {
    "menu_products": "Products",
    "menu_orders": "Orders",
    "menu_customers": "All Customers",
    "menu_bestsellers": "Bestsellers",
    "menu_config": "Configuration",
}


def via_menu(ep: Episode, menu: str, item: str, target: Page, why: str) -> None:
    label = _LABEL[item]
    ep.click(
        f"nav_{menu}",
        ep.say(
            f"{why} The left navigation has a '{menu.upper()}' item; I'll open it to find '{label}'.",
            f"{why} First I open the {menu.upper()} menu.",
            f"{why} To get there I need the {menu.title()} section, so I click '{menu.upper()}' in the menu bar.",
        ),
        P.with_menu(ep.page, menu),
    )
    ep.click(
        item,
        ep.say(
            f"The {menu.title()} flyout is open and lists '{label}'. Clicking it.",
            f"I can see the '{label}' link in the {menu.title()} menu; opening it.",
            f"The menu shows '{label}'. That is the page I need.",
        ),
        target,
    )


def search_products(ep: Episode, keyword: str, why: str) -> None:
    w = ep.sim.world
    ep.fill(
        "search",
        keyword,
        " ".join(
            ep.say(
                f"The products grid has {len(w.products)} records over several pages. {why} I'll type '{keyword}' into "
                "'Search by keyword'.",
                f"Rather than paging through the grid, I'll search for '{keyword}'. {why}",
            ).split()
        ),
        P.products_grid(w, typed=keyword),
    )
    ep.click(
        "search_go",
        ep.say("Now I submit the search.", "Clicking the Search button to filter the grid."),
        P.products_grid(w, keyword=keyword),
    )


def open_products(ep: Episode, why: str) -> None:
    via_menu(ep, "catalog", "menu_products", P.products_grid(ep.sim.world), why)
