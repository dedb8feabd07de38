"""The reader: a fixed model that answers a question from a memory context, as LongMemEval-V2 scores it.

The prompts and the message layout are LongMemEval-V2's (evaluation/harness.py, Apache-2.0), so an answer here is
what the benchmark's reader would give: system prompt, then one user message `### Memory context:` + the items
(text and images, in order) + `### Question to answer:` + the question (+ its image). The answer is the last
`\\boxed{...}`; `UNKNOWN` means the reader would not answer.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from ..config import DEFAULT_READER_DOMAIN, Settings
from ..context import Context
from ..errors import ConfigError
from ..reader_tokens import ReaderCounter
from .messages import Message

_RULES = (
    "Answer based on your memory of the environment. If you do not know the answer, output exactly "
    "\\boxed{UNKNOWN}. Do not guess. Never attempt to guess an answer if you are not sure. If you believe the "
    "question's construction/premise is wrong, provide an explanation in \\boxed{} explaining why the "
    "question is flawed."
)

READER_PROMPTS = {
    "web": (
        "You are an experienced colleague in a web browsing environment that has a customized magento-based "
        "shopping website, a customized magento-based shopping admin cms website, as well as a customized "
        "forum website based on reddit/postmill. " + _RULES
    ),
    "enterprise": "You are an experienced colleague working in a customized ServiceNow environment. " + _RULES,
    "generic": "You are an experienced colleague in the web environment the memory below was recorded in. " + _RULES,
}
"""`web` and `enterprise` are the benchmark's own; `generic` names no particular sites (the default here)."""

UNKNOWN = "UNKNOWN"

HOW_TO_CONFIGURE = """\
No reader is configured. `runbook answer` needs a model to read the evidence. Set one of:
  export RUNBOOK_READER_PROVIDER=anthropic RUNBOOK_READER_MODEL=claude-sonnet-4-5 ANTHROPIC_API_KEY=...
  export RUNBOOK_READER_PROVIDER=openai RUNBOOK_READER_MODEL=gpt-4.1-mini OPENAI_API_KEY=...
  export RUNBOOK_READER_PROVIDER=openai RUNBOOK_READER_MODEL=any RUNBOOK_READER_BASE_URL=http://127.0.0.1:8765/v1
or put the same in {config_path}:
  [reader]
  provider = "openai"
  model = "gpt-4.1-mini"
`runbook config show` prints what is set now. `runbook query` gives the evidence without a reader."""


@dataclass
class ReaderAnswer:
    """The reader's full response and the answer taken from its last \\boxed{...}."""

    response: str
    answer: str
    usage: dict[str, int]
    context_tokens: int = 0
    """Tokens of the memory items the reader was shown (after the cut to `max_context_tokens`)."""
    original_tokens: int = 0
    """Tokens of the memory items before that cut."""

    @property
    def is_unknown(self) -> bool:
        return self.answer.strip().lower() == UNKNOWN.lower()


class Reader:
    """Answers questions from a Context with a chat model (a model client: `next(messages, tools)`)."""

    def __init__(
        self,
        model_client: Any,
        *,
        domain: str = DEFAULT_READER_DOMAIN,
        images: bool = True,
        counter: ReaderCounter | None = None,
    ):
        if domain not in READER_PROMPTS:
            raise ConfigError(f"unknown reader domain {domain!r}; choose one of {', '.join(READER_PROMPTS)}")
        self.client = model_client
        self.domain = domain
        self.images = images
        """False for a text-only model: screenshots and the question's image are left out of the messages."""
        self.counter = counter or ReaderCounter()
        """How the harness counts the items it cuts: the reader's tokenizer when given, else cl100k."""

    @classmethod
    def from_settings(cls, settings: Settings) -> Reader:
        """The configured reader; ConfigError with set-up instructions when there is none."""
        from ..config import config_path

        provider, model = settings.reader_provider, settings.reader_model
        if not provider or not model:
            raise ConfigError(HOW_TO_CONFIGURE.format(config_path=config_path()))
        client = chat_model(
            provider, model, settings, base_url=settings.reader_base_url if provider == "openai" else None
        )
        return cls(client, domain=settings.reader_domain)

    def answer(
        self,
        context: Context,
        *,
        question: str | None = None,
        image: str | None = None,
        max_context_tokens: int | None = None,
        domain: str | None = None,
    ) -> ReaderAnswer:
        """The reader's answer to `question` (default: the context's own) given the context's items.

        With `max_context_tokens` the items are cut as LongMemEval-V2's harness cuts them: the longest prefix of
        whole items within the cap. `domain` picks another of READER_PROMPTS for this one question.
        """
        items = context.to_lme_items()
        if not self.images:
            items, image = [item for item in items if item["type"] == "text"], None
        original = lme_items_tokens(items, self.counter)
        if max_context_tokens is not None:
            items = whole_items_within(items, max_context_tokens, self.counter)
        prompt = READER_PROMPTS.get(domain or self.domain, READER_PROMPTS[self.domain])
        reply = self.client.next(reader_messages(prompt, question or context.question, items, image), [])
        response = unescape_html(reply.text)
        return ReaderAnswer(
            response,
            extract_boxed(response),
            reply.usage,
            context_tokens=lme_items_tokens(items, self.counter),
            original_tokens=original,
        )


def chat_model(
    provider: str,
    model: str | None,
    settings: Settings,
    *,
    base_url: str | None = None,
    max_output_tokens: int | None = None,
    timeout: float | None = None,
):
    """A model client (used without tools) for `provider`, keys taken from `settings`."""
    options: dict[str, Any] = {
        k: v for k, v in {"max_output_tokens": max_output_tokens, "timeout": timeout}.items() if v
    }
    if provider == "anthropic":
        from .anthropic import AnthropicModel

        return AnthropicModel(
            model, api_key=settings.anthropic_api_key, base_url=base_url or settings.anthropic_base_url, **options
        )
    if provider == "openai":
        from .openai import OpenAIModel

        return OpenAIModel(
            model, api_key=settings.openai_api_key, base_url=base_url or settings.openai_base_url, **options
        )
    raise ConfigError(f"unknown model provider {provider!r}: choose anthropic or openai")


def lme_items_tokens(items: list[dict[str, str]], counter: ReaderCounter | None = None) -> int:
    """Tokens of LongMemEval-V2 memory items as the harness counts them with `counter` (the reader's tokenizer,
    chat template and image tokens); without one, text with cl100k_base and an image at its stated cost."""
    return (counter or ReaderCounter()).count_items(items)


def whole_items_within(
    items: list[dict[str, str]], max_tokens: int, counter: ReaderCounter | None = None
) -> list[dict[str, str]]:
    """The longest prefix of whole items within `max_tokens` (the harness drops the tail, never cuts an item)."""
    return (counter or ReaderCounter()).prefix_within(items, max_tokens)


def reader_messages(system: str, question: str, items: list[dict[str, str]], image: str | None) -> list[Message]:
    """LongMemEval-V2's reader messages: system prompt; memory items, then the question (and its image)."""
    intro = "### Memory context:\n" + ("" if items else "(empty)")
    parts = list(items) + [{"type": "text", "value": f"\n\n### Question to answer:\n{question}"}]
    if image:
        parts.append({"type": "image", "value": image})
    return [Message("system", system), Message("user", intro, parts=parts)]


def unescape_html(text: str) -> str:
    """`&gt;` back to `>`: llama-cpp-python's chatml-function-calling template HTML-escapes the prompt, and a model
    copies the entities into its answer, where they would break phrase matching (`Sales &gt; Orders`)."""
    return html.unescape(text) if "&" in text else text


def extract_boxed(text: str) -> str:
    """The content of the last \\boxed{...} (braces may nest); the whole text when there is none."""
    marker = "\\boxed{"
    start = text.rfind(marker)
    if start == -1:
        return text.strip()
    depth, out = 1, []
    for ch in text[start + len(marker) :]:
        depth += ch == "{"
        depth -= ch == "}"
        if depth == 0:
            break
        out.append(ch)
    return "".join(out).strip() or text.strip()
