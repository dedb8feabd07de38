"""The one excerpt function: what a page is first (heading, counts, messages), then the blocks that match with what
makes them readable (a row under its table's header, a field beside its form's others, an opened dialog whole);
the site's furniture only when nothing else matches."""

from __future__ import annotations

from runbook.core.excerpt import Excerpter
from runbook.core.page import parse_page

GRID = "\n".join(
    [
        "RootWebArea 'Orders / Operations / Sales / Magento Admin', focused",
        "\t[1] navigation ''",
        "\t\t[2] menubar ''",
        "\t\t\t[3] link 'SALES'",
        "\t\t\t[4] link 'CATALOG'",
        "\t[5] main ''",
        "\t\t[6] heading 'Orders'",
        "\t\t[7] textbox 'Search by keyword' value='Lopez'",
        "\t\tStaticText '3'",
        "\t\tStaticText 'records found'",
        "\t\t[8] table ''",
        "\t\t\t[9] row ''",
        "\t\t\t\t[10] columnheader 'ID'",
        "\t\t\t\t[11] columnheader 'Bill-to Name'",
        "\t\t\t\t[12] columnheader 'Grand Total'",
        "\t\t\t\t[13] columnheader 'Status'",
    ]
    + [
        f"\t\t\t[{20 + n}] row ''\n\t\t\t\t[{40 + n}] gridcell '00000{n}'\n\t\t\t\t[{60 + n}] gridcell '{name}'"
        f"\n\t\t\t\t[{80 + n}] gridcell '${n}0.00'\n\t\t\t\t[{90 + n}] gridcell '{status}'"
        for n, name, status in [(1, "Ann Lee", "Pending"), (2, "Emma Lopez", "Canceled"), (3, "Bo Lopez", "Complete")]
    ]
    + ["\t\t[99] alert ''", "\t\t\tStaticText 'You saved the order.'"]
)


def excerpter(*terms: str, phrases: tuple[str, ...] = ()) -> Excerpter:
    return Excerpter({t: 1.0 for t in terms}, list(phrases), {t: 3.0 for t in terms}, None)


def test_a_matching_row_comes_under_its_tables_header_after_what_the_page_is():
    text, score = excerpter("canceled", phrases=("Emma Lopez",)).excerpt(GRID, 300)
    lines = text.splitlines()
    assert score > 0
    assert "## Orders" in lines and "- 3 records found" in lines and "- You saved the order." in lines
    header = lines.index("table: ID | Bill-to Name | Grand Total | Status")
    row = lines.index("  000002 | Emma Lopez | $20.00 | Canceled")
    assert row > header and set(lines[header + 1 : row]) <= {"…"}  # only the rows left out stand between
    assert "link 'SALES'" not in text  # the menu says nothing about the question
    assert "000001" not in text  # other rows stay out


def test_the_site_furniture_shows_only_when_nothing_else_matches():
    assert "link 'CATALOG'" in excerpter("catalog").excerpt(GRID, 300)[0]
    assert "link 'SALES'" not in excerpter("sales", "lopez").excerpt(GRID, 300)[0]


def test_a_field_comes_with_the_form_and_the_excerpt_stays_within_its_budget():
    text, _ = excerpter("keyword").excerpt(GRID, 300)
    assert "- textbox 'Search by keyword' = Lopez" in text
    small, _ = excerpter("canceled").excerpt(GRID, 12)
    assert len(small) // 3 + 1 <= 40  # a small budget keeps the page's lead, little else


def test_an_opened_dialog_is_shown_whole():
    dom = "\n".join(
        ["[Start of page]", "Dawn", "Sections", "[1]<button />", "\tTheme settings"]
        + [
            f"*[{10 + n}]<button />\n\t{label}"
            for n, label in enumerate(["Slideshow", "Newsletter", "Custom Liquid", "Map"])
        ]  # fmt: skip
    )
    page = parse_page(dom)
    text, _ = excerpter("liquid").excerpt(page, 200)
    assert all(f"button '{label}'" in text for label in ("Slideshow", "Newsletter", "Custom Liquid", "Map"))
    assert excerpter("liquid").excerpt(page, 200)[0] == text  # the same cut every time


def test_a_question_of_thousands_of_words_searches_each_page_for_its_heaviest_ones():
    """Issue 33, item 8: a 9,987-character question of three-letter words took 6.5 s with R (each page was searched
    once per word). The excerpter keeps the heaviest MAX_TERMS words and the first MAX_PHRASES phrases."""
    from runbook.core.excerpt import MAX_PHRASES, MAX_TERMS, Excerpter

    query = {f"w{n:04d}": 1.0 + n / 10_000 for n in range(3000)}
    excerpter = Excerpter(query, [f"Name {n}" for n in range(100)], {}, None)
    assert len(excerpter.weights) == MAX_TERMS and "w2999" in excerpter.weights and "w0000" not in excerpter.weights
    assert len(excerpter.phrases) == MAX_PHRASES
