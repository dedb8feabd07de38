"""The query result: ordered evidence items with provenance, a short analysis, and renderers."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .budget import IMAGE_TOKENS, count_tokens, truncate_to_tokens

MIN_USEFUL_TOKENS = 48
"""An item cut below this many tokens says too little to be worth its header: packing stops instead."""


@dataclass(slots=True)
class EvidenceItem:
    """One piece of evidence: a state, a span of states, or a derived note, with where it came from."""

    trajectory_id: str
    text: str
    state_index: int | None = None
    end_state_index: int | None = None
    """Set for a span: the item covers state_index..end_state_index."""
    url: str = ""
    timestamp: str | None = None
    path: str = ""
    """Store-relative path of the state file (or of the derived record)."""
    kind: str = "state"
    """'state', 'span', 'note', 'event', 'summary'."""
    label: str = ""
    """A qualifier the reader should see, e.g. 'latest value' or 'older value (2025-12-17)'."""
    goal: str = ""
    screenshot: str | None = None
    """Store-relative path of a screenshot that belongs with this evidence."""
    score: float | None = None
    elided_tokens: int = 0
    tokens: int = 0
    furniture_tokens: int = 0
    """Tokens of the text that are the site's furniture (menus, banners: a diagnostic of the excerpt)."""
    repeat: bool = False
    """This item shows again what an earlier item shows (another view of its page, or of its best line)."""

    @property
    def is_span(self) -> bool:
        return self.end_state_index is not None and self.end_state_index != self.state_index

    def citation(self) -> str:
        """`trajectory wa-x-1, state 3 (url, time)`: the provenance line every rendering starts with."""
        where = f"trajectory {self.trajectory_id}"
        if self.state_index is not None:
            where += (
                f", states {self.state_index}-{self.end_state_index}" if self.is_span else f", state {self.state_index}"
            )
        extra = [x for x in (self.url, self.timestamp) if x]
        if extra:
            where += " (" + ", ".join(extra) + ")"
        if self.label:
            where += f" [{self.label}]"
        return where

    def render_text(self) -> str:
        """The text a reader sees for this item: citation, goal, then the body, ending with a line break (items are
        read one after the other)."""
        head = f"[{self.kind}] {self.citation()}"
        if self.goal:
            head += f"\ngoal: {self.goal}"
        return f"{head}\n{self.text}\n"

    def measure(self) -> int:
        self.tokens = count_tokens(self.render_text()) + (IMAGE_TOKENS if self.screenshot else 0)
        return self.tokens

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "trajectory_id": self.trajectory_id}
        if self.is_span:
            out["start_state_index"] = self.state_index
            out["end_state_index"] = self.end_state_index
        elif self.state_index is not None:
            out["state_index"] = self.state_index
        out.update(
            {
                "url": self.url,
                "timestamp": self.timestamp,
                "path": self.path,
                "label": self.label,
                "goal": self.goal,
                "screenshot": self.screenshot,
                "score": self.score,
                "text": self.text,
                "elided_tokens": self.elided_tokens,
                "tokens": self.tokens,
            }
        )
        if self.furniture_tokens:
            out["furniture_tokens"] = self.furniture_tokens
        if self.repeat:
            out["repeat"] = True
        return out


@dataclass
class Context:
    """What a query returns: evidence most important first, within `budget` tokens, and an analysis on top."""

    question: str
    budget: int
    items: list[EvidenceItem] = field(default_factory=list)
    analysis: str = ""
    method: str = ""
    latency_s: float = 0.0
    store_root: str = ""
    """Absolute store path, so that screenshots (store-relative) can be resolved by renderers."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Method-specific extras (policy, steps, transcript path, stop reason)."""

    @property
    def analysis_tokens(self) -> int:
        return count_tokens(self._analysis_block()) if self.analysis else 0

    @property
    def tokens(self) -> int:
        return self.analysis_tokens + sum(item.tokens for item in self.items)

    def _analysis_block(self) -> str:
        # ends with a line break like every item, so that readers that join the items see the next one on its own
        # line (LongMemEval-V2's harness concatenates them as they are)
        return f"Analysis: {self.analysis}\n"

    def _image_path(self, rel: str) -> str:
        import os

        return os.path.join(self.store_root, rel) if self.store_root and not os.path.isabs(rel) else rel

    def to_markdown(self) -> str:
        parts = [f"# Evidence for: {self.question}", ""]
        if self.analysis:
            parts += [f"**Analysis.** {self.analysis}", ""]
        for n, item in enumerate(self.items, 1):
            parts.append(f"## {n}. [{item.kind}] {item.citation()}")
            if item.goal:
                parts.append(f"*goal:* {item.goal}")
            if item.path:
                parts.append(f"*file:* `{item.path}`")
            if item.screenshot:
                parts.append(f"*screenshot:* `{item.screenshot}`")
            parts += ["", "```", item.text.rstrip(), "```", ""]
        footer = f"_{len(self.items)} items, {self.tokens:,} of {self.budget:,} tokens_"
        left = self.meta.get("left_out", 0)
        if left:
            footer += (
                f" _({left} {'more ' if self.items else ''}item{'s' if left != 1 else ''} did not fit in "
                f"{self.budget:,} token{'s' if self.budget != 1 else ''})_"
            )
        parts.append(footer)
        return "\n".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "method": self.method,
            "budget": self.budget,
            "tokens": self.tokens,
            "latency_s": round(self.latency_s, 4),
            "analysis": self.analysis,
            "items": [item.to_json() for item in self.items],
            "meta": self.meta,
        }

    def to_json_text(self) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False)

    def to_text(self) -> str:
        """The context as one text for an agent to read: the analysis and the items exactly as their tokens were
        counted, so it costs the agent what `tokens` says (screenshots, counted as IMAGE_TOKENS, travel apart)."""
        items = "".join(item.render_text() for item in self.items)
        return (self._analysis_block() if self.analysis else "") + items  # the analysis ends with its line break

    def to_lme_items(self) -> list[dict[str, str]]:
        """LongMemEval-V2's memory context: `[{"type": "text"|"image", "value": ...}]`, in order."""
        out = []
        if self.analysis:
            out.append({"type": "text", "value": self._analysis_block()})
        for item in self.items:
            out.append({"type": "text", "value": item.render_text()})
            if item.screenshot:
                out.append({"type": "image", "value": self._image_path(item.screenshot)})
        return out


def pack(
    question: str, budget: int, items: Iterable[EvidenceItem], *, analysis: str = "", left_out: int = 0, **fields: Any
) -> Context:
    """Fill a Context with `items` in order until the budget is spent; the item that does not fit is cut to fit.

    Never exceeds the budget, however small: the analysis gets at most a quarter of it (cut, or dropped when not
    even its cut fits), an item's screenshot is dropped before its text is cut, and items that do not fit are left
    out, down to none. `left_out` counts items the caller already dropped for the budget; with the ones dropped
    here it goes to meta['left_out'], and when no item fits the analysis says so (if that sentence fits).
    """
    context = Context(question=question, budget=budget, **fields)
    context.analysis = _fit_analysis(analysis, budget // 4)
    remaining = budget - context.analysis_tokens
    items = list(items)
    for item in items:
        if item.measure() <= remaining:
            context.items.append(item)
            remaining -= item.tokens
            continue
        if item.screenshot and item.tokens - IMAGE_TOKENS <= remaining:
            item.screenshot = None
            item.measure()
            context.items.append(item)
            remaining -= item.tokens
            continue
        item.screenshot = None
        overhead = count_tokens(item.render_text()) - count_tokens(item.text)
        room = remaining - overhead - 2
        if room >= MIN_USEFUL_TOKENS:
            item.text, item.elided_tokens = truncate_to_tokens(item.text, room)
            if item.measure() <= remaining:
                context.items.append(item)
                remaining -= item.tokens
        break
    left = left_out + len(items) - len(context.items)
    if left:
        context.meta["left_out"] = left
    if left and not context.items:
        note = (
            f"No evidence item fits in a budget of {budget:,} token{'s' if budget != 1 else ''} "
            f"({left} found): raise the budget."
        )
        context.analysis = next(
            (
                text
                for text in (f"{analysis} {note}".strip(), note, analysis)
                if text and _analysis_cost(text) <= budget
            ),
            "",
        )
    return context


def _analysis_cost(analysis: str) -> int:
    return Context(question="", budget=0, analysis=analysis).analysis_tokens


def _fit_analysis(analysis: str, limit: int) -> str:
    """`analysis` whole if its block fits `limit` tokens, else its head cut to fit, else nothing."""
    if not analysis or _analysis_cost(analysis) <= limit:
        return analysis
    room = limit - _analysis_cost("x") + 1
    while room > 0:
        cut, _ = truncate_to_tokens(analysis, room)
        if cut and _analysis_cost(cut) <= limit:
            return cut
        room -= 1
    return ""
