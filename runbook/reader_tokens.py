"""Counting a memory context as a reader's harness counts it, and fitting a Context to that count.

LongMemEval-V2's harness counts the items it is given with its reader's processor: the items as one user message
through the model's chat template, every image as the number of patch tokens the vision model makes of it. It then
drops whole items from the tail until the count is within `--memory-context-max-tokens`. runbook packs to cl100k
tokens, so a context filled to the token is cut (issue #23: 2 of 20 R contexts, 14 of 20 C contexts at 8k).

`ReaderCounter(tokenizer)` counts the way the harness does when given the reader's own tokenizer (a tokenizer.json
file, a folder holding one, or a Hugging Face name already in the local cache: nothing is downloaded), with the
chat template's overhead (rendered from the folder's template when there is one) and images counted from the
folder's preprocessor config (Qwen-VL's patch and merge sizes). Without a tokenizer it counts cl100k with a stated
safety margin, `CL100K_MARGIN`, reserved. `fit_context` re-packs a Context's own items until the count fits.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .budget import IMAGE_TOKENS, count_tokens
from .context import Context, pack
from .errors import ConfigError

CL100K_MARGIN = 0.2
"""Without the reader's tokenizer, this share of the cap is kept free. Qwen tokenizers count web pages higher than
cl100k (they split numbers into single digits): the issue's Qwen3.5 processor ~5% over on its contexts; a Qwen2
vocabulary up to 21% over on 20 WebArena and Infinity contexts (19 of 20 went over 8,000 with a 6% margin, 4 of 20
with 15%). The reader's tokenizer (`ReaderCounter(tokenizer)`) needs no margin."""

ITEM_JOIN_RESERVE = 1
"""Tokens reserved per item: the text of one item can merge with the next across the join."""


class ReaderCounter:
    """Tokens of LongMemEval-V2 memory items as the reader's harness counts them (see the module's docstring)."""

    def __init__(self, tokenizer: str | None = None):
        self.name = tokenizer
        self._encode: Callable[[str], int] = count_tokens
        self._template: Any = None
        self._image_config: dict[str, Any] | None = None
        if tokenizer:
            path = resolve_tokenizer(tokenizer)
            self._encode = _hf_encoder(path)
            folder = path.parent
            self._template = _chat_template(folder)
            self._image_config = _image_config(folder)

    @property
    def exact(self) -> bool:
        """True when counting with the reader's own tokenizer (no margin needed)."""
        return self.name is not None

    def cap(self, max_tokens: int) -> int:
        """What runbook may fill of the harness's `max_tokens`: all of it with the reader's tokenizer (the fit
        re-counts), less the stated margin without it."""
        return max_tokens if self.exact else int(max_tokens * (1 - CL100K_MARGIN))

    def image_tokens(self, path: str) -> int:
        """The tokens one image's pad expands to: Qwen-VL's merged patches of the resized image (its two markers are
        in the rendered template); IMAGE_TOKENS without the reader's preprocessor config."""
        config = self._image_config
        if config is None:
            return IMAGE_TOKENS
        try:
            from PIL import Image

            with Image.open(path) as image:
                width, height = image.size
        except OSError:
            return IMAGE_TOKENS
        factor = config["patch_size"] * config["merge_size"]
        h, w = smart_resize(height, width, factor, config["min_pixels"], config["max_pixels"])
        return (h // factor) * (w // factor)

    def count_items(self, items: list[dict[str, str]]) -> int:
        """The tokens of `items` as one user message, as the harness counts them (0 for no items)."""
        if not items:
            return 0
        images = sum(self.image_tokens(i["value"]) for i in items if i["type"] == "image")
        if not self.exact:
            return sum(count_tokens(i["value"]) for i in items if i["type"] == "text") + images
        text = self._render(items)
        n_images = sum(1 for i in items if i["type"] == "image")
        # the rendered template holds one pad token per image: the processor expands it to the image's patches
        return self._encode(text) - n_images + images

    def _render(self, items: list[dict[str, str]]) -> str:
        if self._template is not None:
            parts = [{"type": "text", "text": i["value"]} if i["type"] == "text" else {"type": "image"} for i in items]
            return self._template.render(
                messages=[{"role": "user", "content": parts}], add_generation_prompt=False, tools=None
            )
        # no template shipped with the tokenizer: Qwen's layout
        pad = "<|vision_start|><|image_pad|><|vision_end|>"
        body = "".join(i["value"] if i["type"] == "text" else pad for i in items)
        return f"<|im_start|>user\n{body}<|im_end|>\n"

    def prefix_within(self, items: list[dict[str, str]], max_tokens: int) -> list[dict[str, str]]:
        """The longest prefix of whole items whose count is within `max_tokens`, as the harness searches it."""
        lo, hi = 0, len(items)
        if self.count_items(items) <= max_tokens:
            return list(items)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.count_items(items[:mid]) <= max_tokens:
                lo = mid
            else:
                hi = mid - 1
        return list(items[:lo])


def smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """Qwen-VL's resize: both sides to multiples of `factor`, the area kept within [min_pixels, max_pixels]."""
    h = max(factor, round(height / factor) * factor)
    w = max(factor, round(width / factor) * factor)
    if h * w > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h = max(factor, math.floor(height / beta / factor) * factor)
        w = max(factor, math.floor(width / beta / factor) * factor)
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h = math.ceil(height * beta / factor) * factor
        w = math.ceil(width * beta / factor) * factor
    return h, w


def resolve_tokenizer(name: str) -> Path:
    """The tokenizer.json that `name` names: a file, a folder holding one, or a Hugging Face model name found in
    the local cache ($HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub). Nothing is downloaded."""
    path = Path(name).expanduser()
    if path.is_file():
        return path.resolve()
    if path.is_dir():
        if (path / "tokenizer.json").is_file():
            return (path / "tokenizer.json").resolve()
        raise ConfigError(f"tokenizer folder {path} has no tokenizer.json")
    for snapshot in _cached_snapshots(name):
        if (snapshot / "tokenizer.json").is_file():
            return (snapshot / "tokenizer.json").resolve()
    raise ConfigError(
        f"tokenizer {name!r} is neither a tokenizer.json file, a folder holding one, nor a model in the local "
        f"Hugging Face cache ({_hub_cache()}); download it once there (e.g. `hf download {name}`) or give its path"
    )


def _hub_cache() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = Path(os.environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface")
    return home / "hub"


def _cached_snapshots(name: str) -> list[Path]:
    if name.count("/") != 1:
        return []
    repo = _hub_cache() / ("models--" + name.replace("/", "--"))
    ref = repo / "refs" / "main"
    snapshots = []
    if ref.is_file():
        snapshots.append(repo / "snapshots" / ref.read_text().strip())
    if (repo / "snapshots").is_dir():
        snapshots += sorted(p for p in (repo / "snapshots").iterdir() if p not in snapshots)
    return snapshots


def _hf_encoder(path: Path) -> Callable[[str], int]:
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise ConfigError(
            "counting with a reader's tokenizer needs the `tokenizers` library: pip install 'runbook[harness]'"
        ) from None
    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as exc:  # the library raises its own Exception type for a malformed file
        raise ConfigError(f"tokenizer {path} could not be read: {exc}") from exc

    def encode(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

    return encode


def _chat_template(folder: Path) -> Any:
    """The folder's chat template (chat_template.jinja, chat_template.json or tokenizer_config.json) compiled with
    jinja2, or None when there is none or jinja2 is missing."""
    source = None
    if (folder / "chat_template.jinja").is_file():
        source = (folder / "chat_template.jinja").read_text(encoding="utf-8")
    else:
        for name in ("chat_template.json", "tokenizer_config.json"):
            if (folder / name).is_file():
                value = json.loads((folder / name).read_text(encoding="utf-8")).get("chat_template")
                if isinstance(value, str):
                    source = value
                    break
    if source is None:
        return None
    try:
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError:
        return None

    def raise_exception(message: str) -> None:
        raise ConfigError(f"chat template in {folder}: {message}")

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    env.filters["tojson"] = lambda value, **kw: json.dumps(value, ensure_ascii=False, **kw)
    return env.from_string(source)


def _image_config(folder: Path) -> dict[str, Any] | None:
    """Patch size, merge size and pixel bounds of the reader's image processor (Qwen-VL's keys), from the folder's
    preprocessor_config.json or the `image_processor` of its processor_config.json; None when there is neither."""
    raw = None
    if (folder / "preprocessor_config.json").is_file():
        raw = json.loads((folder / "preprocessor_config.json").read_text(encoding="utf-8"))
    elif (folder / "processor_config.json").is_file():
        raw = json.loads((folder / "processor_config.json").read_text(encoding="utf-8")).get("image_processor")
    if not isinstance(raw, dict):
        return None
    size = raw.get("size") or {}
    return {
        "patch_size": int(raw.get("patch_size", 14)),
        "merge_size": int(raw.get("merge_size", 2)),
        "min_pixels": int(raw.get("min_pixels") or size.get("shortest_edge") or 56 * 56),
        "max_pixels": int(raw.get("max_pixels") or size.get("longest_edge") or 28 * 28 * 1280),
    }


def fit_context(context: Context, max_tokens: int, counter: ReaderCounter) -> Context:
    """`context` re-packed from its own items until the reader's harness counts it within `max_tokens` (with one
    token per item reserved for joins): the tail is cut as runbook cuts it (the last item shortened, screenshots
    dropped before text), never by the harness dropping whole items."""
    items = context.to_lme_items()
    limit = max_tokens - ITEM_JOIN_RESERVE * len(items)
    counted = counter.count_items(items)
    if counted <= limit:
        return context
    originals = [dataclasses.replace(item) for item in context.items]
    budget = context.budget
    for _ in range(12):
        budget = max(1, min(budget - 1, int(budget * limit / max(counted, 1))))
        fitted = pack(
            context.question,
            budget,
            [dataclasses.replace(item) for item in originals],
            analysis=context.analysis,
            method=context.method,
            store_root=context.store_root,
            meta=dict(context.meta),
        )
        fitted.latency_s = context.latency_s
        items = fitted.to_lme_items()
        limit = max_tokens - ITEM_JOIN_RESERVE * len(items)
        counted = counter.count_items(items)
        if counted <= limit:
            fitted.meta["reader_tokens"] = counted
            return fitted
    return fitted
