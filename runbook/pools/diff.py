"""What changed between two consecutive pages: lines that appeared and lines that disappeared (no model)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..core.text import content_lines


@dataclass(slots=True)
class PageDiff:
    """Content lines new on the later page and gone from the earlier one, in page order, unindented."""

    appeared: list[str] = field(default_factory=list)
    disappeared: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.appeared and not self.disappeared


def diff_pages(before: str | list[str], after: str | list[str]) -> PageDiff:
    """Line-level multiset difference of two page texts (element ids ignored, so re-numbered pages compare equal).

    Either side may be given as its `content_lines` already.
    """
    old = [line.strip() for line in (content_lines(before) if isinstance(before, str) else before)]
    new = [line.strip() for line in (content_lines(after) if isinstance(after, str) else after)]
    return PageDiff(appeared=_minus(new, Counter(old)), disappeared=_minus(old, Counter(new)))


def _minus(lines: list[str], other: Counter) -> list[str]:
    left = Counter(other)
    out = []
    for line in lines:
        if left[line] > 0:
            left[line] -= 1
        else:
            out.append(line)
    return out
