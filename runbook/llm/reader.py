"""The reader: a fixed model that answers a question from a memory context, as LongMemEval-V2 scores it.

The prompts and the message layout are LongMemEval-V2's (evaluation/harness.py, Apache-2.0), so an answer here is
what the benchmark's reader would give: system prompt, then one user message `### Memory context:` + the items
(text and images, in order) + `### Question to answer:` + the question (+ its image). The answer is the last
`\\boxed{...}`; `UNKNOWN` means the reader would not answer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..agent.types import Message
from ..context import Context
from ..errors import ConfigError

_RULES = ("Answer based on your memory of the environment. If you do not know the answer, output exactly "
          "\\boxed{UNKNOWN}. Do not guess. Never attempt to guess an answer if you are not sure. If you believe the "
          "question's construction/premise is wrong, provide an explanation in \\boxed{} explaining why the "
          "question is flawed.")

READER_PROMPTS = {
    "web": ("You are an experienced colleague in a web browsing environment that has a customized magento-based "
            "shopping website, a customized magento-based shopping admin cms website, as well as a customized "
            "forum website based on reddit/postmill. " + _RULES),
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

    @property
    def is_unknown(self) -> bool:
        return self.answer.strip().lower() == UNKNOWN.lower()


class Reader:
    """Answers questions from a Context with a chat model (any object with the Policy interface)."""

    def __init__(self, model_client: Any, *, domain: str = "generic"):
        if domain not in READER_PROMPTS:
            raise ConfigError(f"unknown reader domain {domain!r}; choose one of {', '.join(READER_PROMPTS)}")
        self.client = model_client
        self.domain = domain

    @classmethod
    def from_settings(cls, settings) -> "Reader":
        """The configured reader; ConfigError with set-up instructions when there is none."""
        from .config import config_path

        provider, model = settings.reader_provider, settings.reader_model
        if not provider or not model:
            raise ConfigError(HOW_TO_CONFIGURE.format(config_path=config_path()))
        if provider == "anthropic":
            from ..policies.anthropic import AnthropicPolicy

            client = AnthropicPolicy(model, api_key=settings.anthropic_api_key, base_url=settings.anthropic_base_url)
        elif provider == "openai":
            from ..policies.openai import OpenAIPolicy

            client = OpenAIPolicy(model, api_key=settings.openai_api_key,
                                  base_url=settings.reader_base_url or settings.openai_base_url)
        else:
            raise ConfigError(f"unknown reader provider {provider!r}: set RUNBOOK_READER_PROVIDER to anthropic or "
                              f"openai")
        return cls(client, domain=settings.get("reader_domain", "generic"))

    def answer(self, context: Context, *, question: str | None = None, image: str | None = None) -> ReaderAnswer:
        """The reader's answer to `question` (default: the context's own) given the context's items."""
        messages = reader_messages(READER_PROMPTS[self.domain], question or context.question,
                                   context.to_lme_items(), image)
        reply = self.client.next(messages, [])
        return ReaderAnswer(reply.text, extract_boxed(reply.text), reply.usage)


def reader_messages(system: str, question: str, items: list[dict[str, str]], image: str | None) -> list[Message]:
    """LongMemEval-V2's reader messages: system prompt; memory items, then the question (and its image)."""
    intro = "### Memory context:\n" + ("" if items else "(empty)")
    parts = list(items) + [{"type": "text", "value": f"\n\n### Question to answer:\n{question}"}]
    if image:
        parts.append({"type": "image", "value": image})
    return [Message("system", system), Message("user", intro, parts=parts)]


def extract_boxed(text: str) -> str:
    """The content of the last \\boxed{...} (braces may nest); the whole text when there is none."""
    marker = "\\boxed{"
    start = text.rfind(marker)
    if start == -1:
        return text.strip()
    depth, out = 1, []
    for ch in text[start + len(marker):]:
        depth += ch == "{"
        depth -= ch == "}"
        if depth == 0:
            break
        out.append(ch)
    return "".join(out).strip() or text.strip()
