"""What a program can work out from the pages before a reader sees them, each finding citing where it stands:

    counts    'How many ...': the count lines of the pages asked about ('308 records found'), each with the
              filters and search its page had set, so that the unfiltered figure is told from the filtered ones
    latest    a value that changes ('currently', 'now', a dynamic question): the block that matches the question
              on the newest view, then how it read before, with times
    extreme   'largest / most / cheapest ...': the table row whose number, in the column the question names, is
              the largest (or smallest) of the rows shown
    recovery  what goes wrong ('why does X time out', a gotcha): the failed steps that match the question, each
              with its error's gist and the steps the run took next, whether they worked (the catalog holds every
              step's action and error, so the sandbox can follow a run past its error; a note lists errors only)

Pure functions over `View`s (a state's page structure with its provenance) and `Attempt`s (a step's action and
error): method R runs the page findings over its best slices on the host, the offline planner's `rbplan` all of
them over the states it chose, in the sandbox.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from .actions import error_gist
from .blocks import Page
from .question import QuestionAnalysis, quoted_labels
from .scoring import page_words, title_words

MAX_FINDINGS = 4
"""Lines of one kind of finding at most."""
COUNT_QUESTION = re.compile(r"(?i)\bhow many\b|\bnumber of\b|\bcount(?:s|ed)?\b|\btotal (?:number|count)\b")
_EXTREME = re.compile(
    r"(?i)\b(?:(largest|highest|biggest|most expensive|maximum|greatest|longest|most(?! recent))|"
    r"(smallest|lowest|cheapest|least expensive|minimum|fewest|shortest|least(?! recent)))\b"
)
_NUMBER = re.compile(r"[-+]?\$?\d[\d,]*(?:\.\d+)?")
_UNFILTERED = re.compile(
    r"(?i)\b(?:no|without|none of the|any) (?:filters?|keywords?|search(?:es)?)\b|\bunfiltered\b|\bin total\b"
)
_LABELLED = re.compile(  # 'LCP: +320ms' as one of a block's ' · ' parts
    r"(?:^|(?<= · ))([A-Za-z][\w ()%/-]{0,28}):\s*([-+]?\$?\d[\d,]*(?:\.\d+)?\s?[A-Za-z%]{0,3})(?= · |$)"
)
_FIELD_LABEL = re.compile(r"^\w+ '(.*)'$")
_GENERATED_ID = re.compile(r"^[A-Za-z]+[-_][\w-]*\d[\w-]*$|^$")
_FILTER_TEXT = re.compile(r"(?i)^active filters\b|^keyword:|^filters?:|^search(?:ing)? for\b")


@dataclass(slots=True)
class View:
    """One state's page as the findings read it."""

    trajectory_id: str
    state_index: int
    timestamp: str
    title: str
    page: Page
    best: list[str] = field(default_factory=list)
    """The page's blocks that match the question best (the excerpter's best lines), when known."""

    def cite(self) -> str:
        when = (self.timestamp or "?")[:16].replace("T", " ")
        return f"{self.trajectory_id} state {self.state_index}, {when}"


@dataclass(slots=True)
class Attempt:
    """One step of a run: its action (described with the controls it used) and the error it raised, if any."""

    trajectory_id: str
    state_index: int
    timestamp: str
    action: str
    error: str = ""


RECOVERY_AHEAD = 2
"""Steps shown after a failed one: the next often only reopens a control, the one after it is the way that worked."""
_DIGITS = re.compile(r"\d+")


def recovery_findings(failures: list[list[Attempt]]) -> list[str]:
    """'wa-x state 3 (time): click('744') [744 = option 'Year'] failed: TimeoutError ... | element is not
    visible; next: s4 press('741', 'ArrowDown') [...] ran without error' per failed step (the step, then up to
    RECOVERY_AHEAD steps of its run), best first; a failure shown already (the same action and error, numbers
    aside) is left out."""
    out: list[str] = []
    seen: set[tuple[str, str]] = set()
    for failed, *after in failures:
        key = (_DIGITS.sub("#", failed.action), _DIGITS.sub("#", error_gist(failed.error, 80)))
        if not failed.error or key in seen:
            continue
        seen.add(key)
        when = (failed.timestamp or "?")[:16].replace("T", " ")
        line = (f"{failed.trajectory_id} state {failed.state_index} ({when}): {failed.action[:200]} failed: "
                f"{error_gist(failed.error, 160)}")  # fmt: skip
        steps = [
            f"s{step.state_index} {step.action[:160]} "
            + (f"failed too ({error_gist(step.error, 60)})" if step.error else "ran without error")  # fmt: skip
            for step in after[:RECOVERY_AHEAD]
            if step.action
        ]
        out.append("Failed step: " + line + ("; next: " + "; ".join(steps) if steps else "; the run ended there"))
        if len(out) == MAX_FINDINGS:
            break
    return out


COMPARED_STEPS = 4
"""Steps shown of each side when two runs of one task are compared."""
_ENDING = re.compile(r"^(?:send_msg_to_user|done|report_infeasible|stop|answer|scroll|noop|wait)\b")


def run_comparison(failed: list[Attempt], succeeded: list[Attempt], goal: str) -> list[str]:
    """What a failed run and a successful run of the same task did differently: the steps only one of them took
    (a value typed, a button clicked, a dialog confirmed), in each run's order; none when they took the same steps."""

    def steps(run: list[Attempt]) -> list[Attempt]:
        return [a for a in run if a.action and not _ENDING.match(a.action)]

    mine, theirs = steps(failed), steps(succeeded)
    done_ok = Counter(a.action for a in theirs)
    done_failed = Counter(a.action for a in mine)
    only_ok = [a for a in theirs if done_failed[a.action] == 0][:COMPARED_STEPS]
    only_failed = [a for a in mine if done_ok[a.action] == 0][:COMPARED_STEPS]
    if not only_ok and not only_failed:
        return []

    def shown(run: list[Attempt]) -> str:
        return "; ".join(f"s{a.state_index} {a.action[:140]}" + (" (error)" if a.error else "") for a in run) or "-"

    head = failed[0] if failed else succeeded[0]
    other = succeeded[0] if succeeded else failed[0]
    return [
        f"Compared, same task ('{goal[:120]}'): failed run {head.trajectory_id} and successful run "
        f"{other.trajectory_id}. Only the successful run: {shown(only_ok)}. Only the failed run: {shown(only_failed)}"
    ]


def findings(analysis: QuestionAnalysis, views: list[View]) -> list[str]:
    """The findings this question's kind calls for, best first (none when nothing can be worked out: a finding
    leads the context, so one that is not grounded in the question's own words is worse than none)."""
    out: list[str] = []
    names = named_words(analysis)
    if COUNT_QUESTION.search(analysis.question):
        out += count_findings(
            [v for v in views if about(v, names)],
            unfiltered=bool(_UNFILTERED.search(analysis.question)),
            named=page_words([list(path) for path in analysis.menu_paths]),
            moments=analysis.moments,
        )
    extreme = _EXTREME.search(analysis.question)
    if extreme and analysis.kind != "procedure":
        out += extreme_findings(analysis, views, largest=bool(extreme.group(1)))
    strong = strong_phrases(analysis)
    if (analysis.wants_latest or analysis.kind == "dynamic") and not out and strong:
        changed = change_findings(views, strong)
        # what changed on the named page, with both values and times, says what its newest view would (a field's
        # new value) unless the question names a moment: the newest view of the name alone is no answer
        out += (
            changed if changed and not analysis.moments else changed + latest_findings(views, strong, analysis.moments)
        )
    return out


def strong_phrases(analysis: QuestionAnalysis) -> tuple[str, ...]:
    """The phrases that pick out one thing: quoted labels, ids and numbers, names of two words or more (a single
    Capitalised word, 'GitLab', is on every page of its site)."""
    quoted = set(quoted_labels(analysis.question))
    return tuple(p for p in analysis.phrases if p in quoted or re.search(r"\d", p) or len(p.split()) >= 2)


def named_words(analysis: QuestionAnalysis) -> set[str]:
    """The words of what the question names: its menu path's steps and its phrases (quoted labels, names)."""
    words = {w for path in analysis.menu_paths for step in path for w in _words(step)}
    return words | {w for phrase in analysis.phrases for w in _words(phrase)}


def about(view: View, names: set[str]) -> bool:
    """Whether the view's page is one the question names (its title shares a named word)."""
    return not names or bool(names & _words(view.title))


def _words(text: str) -> set[str]:
    return {w.lower().rstrip("s") for w in re.findall(r"[A-Za-z]{3,}", text)}


def count_findings(
    views: list[View],
    *,
    unfiltered: bool = False,
    named: list | None = None,
    moments: tuple[tuple[str, str], ...] = (),
) -> list[str]:
    """The count lines of the best pages, each with the filters or search its page had set. The views of the moment
    the question names come first; then those of the page the question's menu path names (`named`, as
    scoring.page_words: 'Sales > Orders' is the page titled 'Orders / …', not an order's own page or the Orders
    Report); with `unfiltered` (the question asks for the count with nothing set), then the views with nothing set."""
    settings_of = {id(v): page_settings(v.page) for v in views}
    views = sorted(
        views,
        key=lambda v: (
            bool(moments) and not any(at_moment(v.timestamp, day, minute) for day, minute in moments),
            not is_named_page(v.title, named or []),
            unfiltered and bool(settings_of[id(v)]),
        ),
    )
    seen: set[tuple[str, str, str]] = set()
    out = []
    for view in views:
        counts = [b.text for b in view.page.blocks if b.kind == "count" and not b.furniture]
        if not counts:
            continue
        settings = settings_of[id(view)]
        key = (view.title, counts[0], settings)
        if key in seen:
            continue
        seen.add(key)
        out.append(f"'{counts[0]}' on {short_title(view.title)} ({view.cite()}; "
                   f"{settings or 'no filter or search set'})")  # fmt: skip
        if len(out) == MAX_FINDINGS:
            break
    return [f"Counts shown: {line}" for line in out]


def is_named_page(title: str, named: list) -> bool:
    """Whether the page's own name (its title's first part) is the last step of a menu path the question gives."""
    own = title_words(title.split(" / ")[0])
    return any(path and own == path[-1] for path in named)


def page_settings(page: Page) -> str:
    """What the page had set that narrows what it counts: search boxes with values, active filters."""
    parts = []
    for n, block in enumerate(page.blocks):
        if block.furniture:
            continue
        if block.kind == "field" and " = " in block.text and _is_search(block.text):
            parts.append(block.text)
        elif _FILTER_TEXT.search(block.text) and n + 1 < len(page.blocks):
            nxt = page.blocks[n + 1].text
            parts.append(f"{block.text.rstrip(':')}: {nxt}" if block.text.rstrip().endswith(":") else block.text)
    return "; ".join(dict.fromkeys(parts))[:200]


def _is_search(field_text: str) -> bool:
    low = field_text.lower()
    return any(word in low for word in ("search", "keyword", "filter", "query")) and not low.endswith("= ")


def latest_findings(
    views: list[View], phrases: tuple[str, ...], moments: tuple[tuple[str, str], ...] = ()
) -> list[str]:
    """The best-matching line that shows one of the question's phrases on the newest views, newest first, each with
    its time: the current value, then what it was before (one line per distinct value). With `moments` (the question
    names when), the views of that moment lead."""
    # case kept: a quoted label or a name is written as the page writes it ('Yours', not 'apply to yours')
    patterns = [re.compile(rf"(?<!\w){re.escape(p)}(?!\w)") for p in phrases if len(p) >= 2]
    timed = sorted((v for v in views if v.best and v.timestamp), key=lambda v: v.timestamp, reverse=True)
    at = [v for v in timed if any(at_moment(v.timestamp, day, minute) for day, minute in moments)]
    timed = at + [v for v in timed if v not in at]
    seen: set[str] = set()
    out = []
    for view in timed:
        named = [b for b in view.best if any(p.search(b) for p in patterns)]
        # a line that carries a value ("textbox 'Store Email' = x@y") before one that only names it ('Store Email')
        line = next((b for b in named if _carries_value(b, phrases)), named[0] if named else None)
        if line is None or line in seen:
            continue
        seen.add(line)
        out.append(f"'{line[:160]}' ({view.cite()})")
        if len(out) == MAX_FINDINGS:
            break
    if not out:
        return []
    lines = [f"{'At the time asked' if at else 'Newest view'}: {out[0]}"]
    if len(out) > 1:
        lines.append(("Other views: " if at else "Earlier: ") + "; ".join(out[1:]))
    return lines


def at_moment(timestamp: str, day: str, minute: str = "") -> bool:
    """Whether an ISO timestamp falls on `day` ('2025-12-16', or '--12-16' for any year) and, given, at `minute`."""
    on_day = timestamp[4:10] == day[1:] if day.startswith("--") else timestamp[:10] == day
    return on_day and (not minute or timestamp[11:16] == minute)


def _carries_value(line: str, phrases: tuple[str, ...]) -> bool:
    """Whether the line says more than the phrase it shows: a field's value, a label's value, a row's cells."""
    bare = line.strip().lower()
    return not any(bare == p.lower() for p in phrases) and (" = " in line or ": " in line or " | " in line)


def change_findings(views: list[View], phrases: tuple[str, ...]) -> list[str]:
    """For a value that changes: the fields of the newest view of the page a phrase names that read otherwise on the
    view of that page just before ('Price' 19.00 -> 16.15), with both times: what was changed, and when."""
    low = [p.lower() for p in phrases]
    named = [v for v in views if v.timestamp and any(p in v.title.lower() for p in low)]
    if not named:
        return []
    newest = max(named, key=lambda v: v.timestamp)
    before = sorted((v for v in views if v.title == newest.title and v.timestamp and v.timestamp < newest.timestamp),
                    key=lambda v: v.timestamp, reverse=True)  # fmt: skip
    now = field_values(newest.page)
    for earlier in before:
        then = field_values(earlier.page)
        changed = [
            (label, then[label], value) for label, value in now.items() if label in then and then[label] != value
        ]
        if changed:
            parts = "; ".join(f"'{label}' {old[:60]} -> {new[:60]}" for label, old, new in changed[:MAX_FINDINGS])
            return [f"Changed on {short_title(newest.title)}: {parts} (between {earlier.cite()} and {newest.cite()})"]
    return []


def field_values(page: Page) -> dict[str, str]:
    """{label: value} of the page's form fields ("textbox 'Price' = 16.15", "switch 'Spell check' = on")."""
    out: dict[str, str] = {}
    for block in page.blocks:
        if block.kind == "field" and " = " in block.text and not block.furniture:
            head, value = block.text.split(" = ", 1)
            named = _FIELD_LABEL.match(head.rsplit(" › ", 1)[-1])
            label = named.group(1) if named else head
            if _GENERATED_ID.match(label):
                continue  # 'notice-CL2HLXU': an id the page generates per visit, no label a reader knows
            out.setdefault(label, value.split(" (options:")[0].split(" (")[0].strip())
    return out


def extreme_findings(analysis: QuestionAnalysis, views: list[View], *, largest: bool) -> list[str]:
    """The row with the largest (or smallest) number in the column the question names, per table shown."""
    words = {t.lower() for t in analysis.terms} | {w.lower() for p in analysis.phrases for w in p.split()}
    out = []
    seen: set[str] = set()
    for view in views:
        for table in tables(view.page) + card_tables(view.page):
            numeric = [n for n in range(len(table[0])) if _mostly_numbers(table[1:], n)]
            column = best_column(table[0], words, numeric)
            if column is None:
                continue
            rows = [(number(cells[column]), cells) for cells in table[1:] if column < len(cells)]
            rows = [(value, cells) for value, cells in rows if value is not None]
            if len(rows) < 2:
                continue
            numbers = [(value, cells) for value, cells in rows if value is not None]
            value, cells = (max if largest else min)(numbers, key=lambda r: float(r[0] or 0.0))
            line = " | ".join(cells)
            if line in seen:
                continue
            seen.add(line)
            word = "largest" if largest else "smallest"
            compared = f"{value:g}" if value is not None else "?"  # the number the rows were compared on
            out.append(f"{word} '{table[0][column]}' of {len(rows)} rows ({compared}): {line[:200]} ({view.cite()})")
            if len(out) == MAX_FINDINGS:
                return [f"Worked out: {line}" for line in out]
    return [f"Worked out: {line}" for line in out]


def tables(page: Page) -> list[list[list[str]]]:
    """Each table of the page: its header's cells, then each row's cells."""
    out: list[list[list[str]]] = []
    by_header: dict[int, list[list[str]]] = {}
    for n, block in enumerate(page.blocks):
        if block.kind == "header":
            by_header[n] = [_cells(block.text)]
            out.append(by_header[n])
        elif block.kind == "row" and block.header in by_header:
            by_header[block.header].append(_cells(block.text))
    return out


def card_tables(page: Page) -> list[list[list[str]]]:
    """A list of cards that label their numbers ('Instafeed · … · LCP: +320ms', 'INP: +25ms') read as a table: one
    row per card (its name, then each label's value), one column per label that at least two cards show."""
    cards: list[dict[str, str]] = []
    for block in page.blocks:
        if block.kind not in ("text", "count") or block.furniture:
            continue
        pairs = _LABELLED.findall(block.text)
        if not pairs:
            continue
        name = _LABELLED.split(block.text, maxsplit=1)[0].strip(" ·")
        if name or not cards:
            cards.append({"": name})
        for label, value in pairs:
            cards[-1].setdefault(label.strip(), value)
    labels = [label for label in dict.fromkeys(k for card in cards for k in card if k)
              if sum(1 for card in cards if label in card) >= 2]  # fmt: skip
    rows = [[card[""]] + [card.get(label, "") for label in labels] for card in cards if any(k in card for k in labels)]
    return [[["item", *labels], *rows]] if labels and len(rows) >= 2 else []


def _cells(text: str) -> list[str]:
    return [cell.strip() for cell in text.split("|")]


def _mostly_numbers(rows: list[list[str]], column: int) -> bool:
    cells = [row[column] for row in rows if column < len(row) and row[column].strip()]
    return bool(cells) and sum(1 for cell in cells if number(cell) is not None) >= 0.8 * len(cells)


def best_column(header: list[str], words: set[str], columns: list[int]) -> int | None:
    """Of `columns` (the numeric ones), the header cell that shares the most words with the question (None when
    none does)."""
    best, best_n = None, 0
    for n, cell in enumerate(header):
        if n not in columns:
            continue
        cell_words = {w.lower().rstrip("s") for w in re.findall(r"[A-Za-z]+", cell)}
        shared = sum(1 for w in words if w.rstrip("s") in cell_words)
        if shared > best_n:
            best, best_n = n, shared
    return best


def number(cell: str) -> float | None:
    m = _NUMBER.search(cell)
    if not m:
        return None
    try:
        return float(m.group(0).replace("$", "").replace(",", ""))
    except ValueError:
        return None


def short_title(title: str) -> str:
    """'Orders / Operations / Sales / Magento Admin' -> 'Orders / Operations / Sales'."""
    parts = [p.strip() for p in title.split(" / ")]
    return " / ".join(parts[:-1]) if len(parts) > 2 else title
