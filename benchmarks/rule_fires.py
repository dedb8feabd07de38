"""How many questions each of the contexts' rules fires on, per question file: what a commit that adds a rule says.

A rule that fires on a handful of dev questions and on no probe question is shaped around those questions; one that
fires across the probe sets is general. Method R is asked every question in-process (about 0.1 s each); a rule fires
on a question when its mark is in the context R returns (a folded view's own lines, the reply beside an action, a
page's message in a note, ...) or when the code path it guards changed something (counted by wrapping it here).

usage: python benchmarks/rule_fires.py STORE QUESTIONS.jsonl [QUESTIONS.jsonl ...] [--budget 8k]
       e.g. python benchmarks/rule_fires.py eval/stores/all-928 ../shared/data/questions_dev*_*.jsonl \\
                eval/generated/probes-s1.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TEXT_MARKS: dict[str, Callable[[str], bool]] = {
    "folded view shows its own lines": lambda t: "above, and here also:)" in t,
    "reply beside an action": lambda t: "the page then said: " in t,
    "event shows the page's message": lambda t: "\npage said: " in t,
    "folded view says what its action led to": lambda t: (
        re.search(r"\(the same page as [^\n]*(?:\n(?!\[)[^\n]*){0,12}?\nthe page then said: ", t) is not None
    ),
    "procedure step shows the page's answer": lambda t: "  → page: " in t,
    "hints note shows what the page said": lambda t: ", the page said: " in t,
    "dialog left unanswered": lambda t: "the dialog was left unanswered" in t,
    "control named by its neighbours": lambda t: (
        re.search(r"\b(?:combobox|textbox|spinbutton) '[^'\n]* … ", t) is not None
    ),
    "row of switches under its column names": lambda t: re.search(r"\bswitches(?: '[^'\n]*')?: \w", t) is not None,
    "value changed, field by field": lambda t: "Changed on " in t,
    "view of the moment asked": lambda t: "At the time asked: " in t,
}
"""A rule and the mark it leaves in a context."""


def instrument(fired: set[str]) -> None:
    """Wrap the code paths a rule guards so that each adds the rule's name to `fired` when it changes something."""
    from runbook.core import excerpt, recall
    from runbook.pools import search

    def counting(name: str, changed: Callable[..., bool]) -> Callable:
        def wrap(original: Callable) -> Callable:
            def wrapped(*a, **k):  # type: ignore[no-untyped-def]
                out = original(*a, **k)
                if changed(out, *a, **k):
                    fired.add(name)
                return out

            return wrapped

        return wrap

    recall.at_named_minute_first = counting(
        "the named minute's views first", lambda out, h, m: bool(h) and out[0] is not h[0]
    )(recall.at_named_minute_first)

    def unfolded(out: list, self: object, folded: list, *a: object, **k: object) -> bool:
        was = {h.id for h in folded if h.same_as}
        return any(h.id in was and not h.same_as for h, _ in out)

    search.Retriever.fill_slices = counting("a fold whose view is not shown unfolded", unfolded)(
        search.Retriever.fill_slices
    )
    excerpted = []
    excerpt_of, whole_of = excerpt.Excerpter.excerpt, excerpt.Excerpter.whole

    def excerpt_counted(*a, **k):  # type: ignore[no-untyped-def]
        excerpted.append(True)
        return excerpt_of(*a, **k)

    def whole(*a, **k):  # type: ignore[no-untyped-def]
        excerpted.clear()
        out = whole_of(*a, **k)
        if not excerpted:  # the page fitted: it was not cut to an excerpt
            fired.add("the best page read whole")
        return out

    excerpt.Excerpter.excerpt, excerpt.Excerpter.whole = excerpt_counted, whole


def question_marks(text: str) -> set[str]:
    """The rules of the question's analysis that fire on `text`."""
    from runbook.core import question

    analysis = question.analyze(text)
    marks = set()
    if analysis.moments:
        marks.add("question names a day or minute")
    if any(h.startswith("assumes that the agent ") for h in analysis.possible_false_premise):
        marks.add("a step the question takes for granted")
    if analysis.kind in ("static", "dynamic"):
        marks.add("fact question: best pages lead")
    if analysis.moments and not analysis.wants_newest and analysis.kind == "dynamic":
        marks.add("a named moment instead of the newest view")
    if any(len(label) > 80 for label in question.quoted_labels(text)):
        marks.add("a quoted name over 80 characters")
    return marks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store")
    parser.add_argument("questions", nargs="+", type=Path)
    parser.add_argument("--budget", default="8k")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from runbook.budget import parse_budget
    from runbook.memory import get_memory
    from runbook.store import Store

    fired: set[str] = set()
    instrument(fired)
    memory = get_memory("r", Store(args.store))
    budget = parse_budget(args.budget)
    for path in args.questions:
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        counts: Counter[str] = Counter()
        for row in rows:
            fired.clear()
            text = memory.query(row["question"], budget=budget).to_text()
            counts.update({name for name, mark in TEXT_MARKS.items() if mark(text)} | fired)
            counts.update(question_marks(row["question"]))
        print(f"\n{path.name}: {len(rows)} questions")
        for name, n in sorted(counts.items(), key=lambda kv: -kv[1]):
            print(f"  {n:5d}  {name}")


if __name__ == "__main__":
    main()
