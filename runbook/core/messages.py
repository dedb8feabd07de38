"""What a page said back to the agent: the messages among its blocks (an alert, 'You saved the product.', a toast such
as 'Pronouns updated' that appeared where the agent acted), worked out once per run at insert.

A block is a message when its words say so (core.blocks.MESSAGE, an alert region), or when it is one of the few short
lines that appeared on the same page right after the agent's action: a page that answers an action in place
(a toast, a validation line under a field) shows little that is new, so those lines are its answer. A page that
changed much (a menu opened, a new page loaded, results listed) is not read this way.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from .blocks import Block, Page

REPLY_CHARS = 120
"""A line that appeared after an action and is this short can be the page's reply."""
REPLY_LINES = 3
"""At most this many such lines, out of at most CHANGED_BLOCKS blocks new on the page: more is a new view."""
CHANGED_BLOCKS = 6
REPLY_KINDS = frozenset({"text", "count"})


def with_replies(pages: list[Page], urls: list[str], acted: list[bool]) -> list[Page]:
    """The pages with the lines each showed in reply to the action before it marked as messages (a page that
    changes is a copy: parsed pages are shared). `acted[i]`: an action was taken on page i."""
    out = list(pages)
    for i in range(1, len(pages)):
        if not acted[i - 1] or not _same_place(urls[i - 1], urls[i]):
            continue
        before = pages[i - 1].blocks
        if i >= 2 and _same_place(urls[i - 2], urls[i]) and _closed_dialog(pages[i - 1], pages[i]):
            # the action answered a dialog that hid the page: the page is back, and what is new to both is its answer
            before = before + pages[i - 2].blocks
        new = _appeared(before, pages[i].blocks)
        replies = _replies(new)
        if not replies and i >= 2 and acted[i - 2] and _same_place(urls[i - 2], urls[i]):
            # the page between may have been an overlay the page's text does not mark as a dialog (a modal in
            # browser-use DOM text): when the page is back as it was two steps ago, what is new to both is its answer
            new = _appeared(before + pages[i - 2].blocks, pages[i].blocks)
            replies = _replies(new)
        if replies:
            blocks = [replace(b, kind="message") if id(b) in replies else b for b in pages[i].blocks]
            out[i] = Page(blocks, pages[i].form)
    return out


def _replies(new: list[Block]) -> set[int]:
    """The ids of the blocks among `new` (what appeared on a page after an action) that are its reply: a few short
    lines, when little else changed; none otherwise."""
    replies = {id(b) for b in new if b.kind in REPLY_KINDS and not b.furniture and len(b.text) <= REPLY_CHARS}
    return replies if 0 < len(replies) <= REPLY_LINES and len(new) <= CHANGED_BLOCKS else set()


def _closed_dialog(before: Page, after: Page) -> bool:
    """Whether `before` asked a question in a dialog that `after` no longer shows."""
    shown = {b.text for b in after.blocks}
    return any(b.region in ("dialog", "new") and "?" in b.text and b.text not in shown for b in before.blocks)


def messages(page: Page) -> list[str]:
    """The page's messages outside the site's furniture, in page order, each once."""
    return list(dict.fromkeys(b.text for b in page.blocks if b.kind == "message" and not b.furniture))


def replies(pages: list[Page]) -> list[list[str]]:
    """Per page, the messages it shows that the page before did not: what it said back to the action before it
    (a banner every page of the site shows, 'Failed to synchronize data ...', is no reply). The first page's are
    all its messages."""
    out = []
    for i, page in enumerate(pages):
        before = set(messages(pages[i - 1])) if i else set()
        out.append([m for m in messages(page) if m not in before])
    return out


TYPING = frozenset({"fill", "type", "input", "input_text", "send_keys"})
"""Actions that type text: a line that repeats it afterwards is the field or its suggestions echoing it."""


def without_echoes(said: list[list[str]], actions: list[str]) -> list[list[str]]:
    """`said` (per page, as `replies` gives it) without the lines that repeat what the action before typed: after
    typing 'egpast' into a user search, 'egpast egpast' is the list of suggestions, not the page's answer."""
    from .actions import action_name, split_actions, typed_value

    out = [list(said[0])] if said else []
    for i in range(1, len(said)):
        typed = [
            value.lower()
            for one in split_actions(actions[i - 1])
            if action_name(one) in TYPING and (value := typed_value(one)) and len(value) >= 2
        ]
        out.append([m for m in said[i] if not any(value in m.lower() for value in typed)])
    return out


def _appeared(before: list[Block], after: list[Block]) -> list[Block]:
    left = Counter(b.text for b in before)
    out = []
    for block in after:
        if left[block.text] > 0:
            left[block.text] -= 1
        else:
            out.append(block)
    return out


def _same_place(a: str, b: str) -> bool:
    """The same page of a site: scheme, host, path and hash route agree (a query string may differ)."""
    pa, pb = urlsplit(a), urlsplit(b)
    return (pa.netloc, pa.path.rstrip("/"), pa.fragment.split("?")[0]) == (
        pb.netloc,
        pb.path.rstrip("/"),
        pb.fragment.split("?")[0],
    )


@dataclass(slots=True)
class OpenDialog:
    """A dialog that opened on a page and that the run's next action did not answer."""

    index: int
    """The state whose page shows it (it opened after the action of the state before)."""
    text: str
    """What it says (its heading and question), cut short."""
    buttons: list[str]


def unanswered_dialogs(pages: list[Page], texts: list[str], actions: list[str]) -> list[OpenDialog]:
    """The dialogs that appeared after an action (an accessibility tree's dialog, or browser-use's new elements
    that ask a question and offer buttons) whose next action clicked or typed outside them: a confirmation left
    unanswered, a step that never took effect."""
    out = []
    for i in range(1, len(pages)):
        blocks = pages[i].blocks
        appeared = {id(b) for b in _appeared(pages[i - 1].blocks, blocks)}
        asking = next((n for n, b in enumerate(blocks) if id(b) in appeared and _asks(b)), None)
        if asking is None:
            continue
        dialog = _around(blocks, asking)
        if len(dialog) > DIALOG_BLOCKS or not any(b.text.endswith("?") for b in dialog):
            continue  # a form or a panel in a dialog, not a question put to the agent
        buttons = [b.text.split("'")[1] for b in dialog if b.kind == "control" and b.text.count("'") >= 2]
        target = _target_line(texts[i], actions[i])
        first, last = min(b.start for b in dialog), max(b.end for b in dialog)
        if buttons and target is not None and not first <= target <= last:
            asks = [b.text for b in dialog if b.kind != "control"]
            out.append(OpenDialog(i, " · ".join(asks)[:DIALOG_CHARS], buttons[:4]))
    return out


def _asks(block: Block) -> bool:
    """A line of a dialog that asks something: in an accessibility tree's dialog, or a new question (DOM)."""
    return block.kind != "control" and (
        block.region == "dialog" or (block.region == "new" and block.text.endswith("?"))
    )


def _around(blocks: list[Block], n: int) -> list[Block]:
    """The blocks of the region block n is in, next to it (a dialog is a few blocks of its own region)."""
    region, start, end = blocks[n].region, n, n
    while start > 0 and blocks[start - 1].region == region:
        start -= 1
    while end + 1 < len(blocks) and blocks[end + 1].region == region:
        end += 1
    return blocks[start : end + 1]


DIALOG_BLOCKS, DIALOG_CHARS = 12, 200
"""A dialog is a few new blocks (a new page is not); what it says is cut to DIALOG_CHARS."""


def _target_line(text: str, action: str) -> int | None:
    """The page line of the element an action targets (None when it targets none: a goto, a final answer)."""
    from .actions import element_id, split_actions

    for one in split_actions(action):
        bid = element_id(one)
        if bid is None:
            continue
        for n, line in enumerate(text.split("\n")):
            if f"[{bid}]" in line[:40]:
                return n
    return None
