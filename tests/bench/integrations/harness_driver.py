"""A driver shaped like LongMemEval-V2's harness (evaluation/harness.py and memory_modules/memory.py at
be15ea6), step by step as it treats a memory, without its reader and judge:

- the `Memory` base class with its persistence hooks: `save_memory` writes memory_config.json then calls
  `_save_backend(dir)`; `load_memory` builds a fresh memory from the saved config then calls `_load_backend(dir)`;
- all questions sharing one ordered haystack: one memory built (or loaded from --load-memory-dir) and queried for
  every question; otherwise a memory built per question from its haystack and dropped after its prompt is built;
- the query wrapped in set/clear_query_context, its items validated (non-empty text, image files that exist);
- the context counted as one user message through the reader's chat template, image pads expanded to the image's
  patches, and cut by a binary search over whole-item prefixes to `memory_context_max_tokens`;
- the prompt built with every image read into a data URL, and a per_question.jsonl row written.

The harness counts with `AutoProcessor.from_pretrained(...)`; here the reader is a tokenizer folder made with the
`tokenizers` library (tokenizer.json, chat_template.jinja, preprocessor_config.json) and counted the same way.
"""

from __future__ import annotations

import base64
import json
import math
import threading
from abc import ABC, abstractmethod
from copy import deepcopy
from pathlib import Path
from typing import Any

from jinja2 import Environment
from PIL import Image
from tokenizers import Tokenizer, models, pre_tokenizers

MEMORY_TYPES: dict[str, type] = {}

QWEN_LIKE_TEMPLATE = (
    "{%- for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for content in message['content'] %}{% if content['type'] == 'image' %}"
    "<|vision_start|><|image_pad|><|vision_end|>{% elif 'text' in content %}{{ content['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
)
SPECIAL = ["<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|image_pad|>", "<|vision_end|>"]


def write_reader_tokenizer(folder: Path) -> Path:
    """A reader's tokenizer folder: one token per byte (far more tokens than cl100k counts), the chat template
    above, and a Qwen-VL image processor config (16 px patches merged 2x2)."""
    folder.mkdir(parents=True, exist_ok=True)
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tokenizer.add_special_tokens(SPECIAL)
    tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "chat_template.jinja").write_text(QWEN_LIKE_TEMPLATE)
    (folder / "preprocessor_config.json").write_text(
        json.dumps({"patch_size": 16, "merge_size": 2, "min_pixels": 3136, "max_pixels": 1003520})
    )
    return folder


class ReaderProcessor:
    """What the harness's processor does for counting: chat template, then tokens with image pads expanded."""

    def __init__(self, folder: Path):
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        template = (folder / "chat_template.jinja").read_text()
        self.template = Environment(trim_blocks=True, lstrip_blocks=True).from_string(template)
        self.image = json.loads((folder / "preprocessor_config.json").read_text())

    def image_pads(self, path: str) -> int:
        with Image.open(path) as image:
            width, height = image.size
        factor = self.image["patch_size"] * self.image["merge_size"]
        h, w = max(factor, round(height / factor) * factor), max(factor, round(width / factor) * factor)
        if h * w < self.image["min_pixels"]:
            beta = math.sqrt(self.image["min_pixels"] / (height * width))
            h, w = math.ceil(height * beta / factor) * factor, math.ceil(width * beta / factor) * factor
        return (h // factor) * (w // factor)

    def count(self, items: list[dict[str, str]]) -> int:
        if not items:
            return 0
        parts = [{"type": "text", "text": i["value"]} if i["type"] == "text" else {"type": "image"} for i in items]
        text = self.template.render(messages=[{"role": "user", "content": parts}], add_generation_prompt=False)
        pads = sum(self.image_pads(i["value"]) - 1 for i in items if i["type"] == "image")
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids) + pads


class Memory(ABC):
    """memory_modules.memory.Memory, as the harness defines it."""

    memory_type = ""

    def __init__(self, memory_params: dict[str, object]) -> None:
        self.memory_params = dict(memory_params)
        self._query_context_local = threading.local()

    @property
    def memory_config(self) -> dict[str, Any]:
        return {"memory_type": self.memory_type, "memory_params": self.memory_params}

    @abstractmethod
    def insert(self, trajectory: dict[str, object]) -> None: ...

    @abstractmethod
    def query(self, query: str, query_image: str | None = None) -> list[dict[str, str]]: ...

    def configure_runtime(self, **kwargs: object) -> None:
        return None

    def post_query_hook(self, **kwargs: object) -> dict[str, object] | None:
        return None

    def set_query_context(self, **kwargs: object) -> None:
        self._query_context_local.context = dict(kwargs)

    def clear_query_context(self) -> None:
        if hasattr(self._query_context_local, "context"):
            delattr(self._query_context_local, "context")

    def save_memory(self, output_dir: str | Path) -> None:
        path = Path(output_dir)
        path.mkdir(parents=True, exist_ok=True)
        (path / "memory_config.json").write_text(json.dumps(self.memory_config, indent=2) + "\n")
        self._save_backend(path)

    def _save_backend(self, output_dir: Path) -> None:
        return None

    def _load_backend(self, input_dir: Path) -> None:
        return None


def register_memory(cls: type) -> type:
    MEMORY_TYPES[cls.memory_type] = cls
    return cls


def build_memory(config: dict[str, Any]) -> Memory:
    return MEMORY_TYPES[config["memory_type"]](config["memory_params"])


def load_memory(input_dir: Path, requested: dict[str, Any] | None) -> Memory:
    saved = json.loads((Path(input_dir) / "memory_config.json").read_text())
    if requested is not None and requested != saved:
        raise RuntimeError("the requested memory config must match the saved one")
    memory = build_memory(deepcopy(saved))
    memory._load_backend(Path(input_dir))
    return memory


def validate_items(items: Any, question_id: str) -> list[dict[str, str]]:
    if not isinstance(items, list):
        raise RuntimeError(f"memory.query must return a list for {question_id}")
    for idx, item in enumerate(items):
        if item.get("type") not in ("text", "image") or not str(item.get("value", "")).strip():
            raise RuntimeError(f"memory.query item {idx} is invalid for {question_id}")
        if item["type"] == "image" and not Path(item["value"]).exists():
            raise RuntimeError(f"memory.query image path does not exist for {question_id}: {item['value']}")
    return items


def truncate(items: list[dict[str, str]], max_tokens: int, processor: ReaderProcessor) -> tuple[list, int, int]:
    """The harness's cut: the longest prefix of whole items within max_tokens, found by binary search."""
    original = processor.count(items)
    if original <= max_tokens:
        return items, original, original
    lo, hi = 0, len(items)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if processor.count(items[:mid]) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return items[:lo], original, processor.count(items[:lo])


def prompt_row(memory: Memory, question: dict, max_tokens: int, processor: ReaderProcessor) -> dict[str, Any]:
    memory.set_query_context(question_id=question["id"], question_type=question["question_type"])
    try:
        items = validate_items(memory.query(question["question"], query_image=question.get("image")), question["id"])
    finally:
        memory.clear_query_context()
    kept, original, final = truncate(items, max_tokens, processor)
    for item in kept:  # build_messages reads every image into a data URL
        if item["type"] == "image":
            base64.b64encode(Path(item["value"]).read_bytes())
    return {
        "question_id": question["id"],
        "memory_context": kept,
        "memory_context_original_token_count": original,
        "memory_context_token_count": final,
        "memory_context_was_truncated": original > final,
    }


def run(
    *,
    questions: list[dict],
    haystacks: dict[str, list[str]],
    trajectories: dict[str, dict],
    memory_config: dict[str, Any] | None,
    output_dir: Path,
    max_tokens: int,
    processor: ReaderProcessor,
    save_memory: bool = False,
    load_memory_dir: Path | None = None,
    after_each: Any = None,
) -> list[dict[str, Any]]:
    """The harness's main loop (pass 1, prompt building); per_question.jsonl as it records the contexts."""
    output_dir.mkdir(parents=True, exist_ok=True)
    ids = [q["id"] for q in questions]
    shared = all(haystacks[i] == haystacks[ids[0]] for i in ids)
    rows = []
    if shared:
        if load_memory_dir is not None:
            memory = load_memory(load_memory_dir, memory_config)
        else:
            assert memory_config is not None
            memory = build_memory(memory_config)
            for tid in haystacks[ids[0]]:
                memory.insert(trajectories[tid])
            if save_memory:
                memory.save_memory(output_dir / "memory_state")
        rows = [prompt_row(memory, q, max_tokens, processor) for q in questions]
    else:
        if save_memory or load_memory_dir is not None:
            raise RuntimeError("--save-memory and --load-memory-dir need one shared haystack")
        assert memory_config is not None
        for question in questions:
            memory = build_memory(memory_config)
            for tid in haystacks[question["id"]]:
                memory.insert(trajectories[tid])
            rows.append(prompt_row(memory, question, max_tokens, processor))
            del memory  # the harness's per-question memory is a local of the function that builds the prompt
            if after_each is not None:
                after_each(question["id"])
    with open(output_dir / "per_question.jsonl", "w") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    return rows
