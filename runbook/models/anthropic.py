"""A client of an Anthropic model (tool_use / tool_result), with prompt caching and retries: the anthropic policy
and an Anthropic reader or judge talk through it."""

from __future__ import annotations

from typing import Any, Unpack

from ..config import Settings
from ..errors import ConfigError
from .client import ClientOptions, ModelClient, image_base64
from .messages import Message, ToolCall, ToolSpec

DEFAULT_MODEL = "claude-sonnet-4-5"
KEY_ENV = "ANTHROPIC_API_KEY"
CACHE = {"type": "ephemeral"}


class AnthropicModel(ModelClient):
    """Asks an Anthropic model for the next tool calls.

    The system prompt carries a cache breakpoint, and so does the newest message (a breakpoint that moves with the
    conversation), so each turn re-reads the earlier turns from the cache instead of paying for them again.
    """

    name = "anthropic"

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        client: Any = None,
        **options: Unpack[ClientOptions],
    ):
        import anthropic

        super().__init__(**options)
        self.model = model or DEFAULT_MODEL
        if client is None and not api_key:
            raise ConfigError(
                f"the anthropic policy needs an API key: set {KEY_ENV} (or anthropic_api_key in the "
                f"config file), or choose --policy offline"
            )
        # retries are tenacity's job here (one place, honouring retry-after), so the SDK's own are off
        self.client = client or anthropic.Anthropic(
            api_key=api_key, base_url=self.base_url, timeout=self.timeout, max_retries=0
        )

    @classmethod
    def from_settings(cls, settings: Settings, *, model: str | None = None, **options: Any) -> AnthropicModel:
        return cls(
            model or settings.model,
            api_key=settings.anthropic_api_key,
            base_url=settings.anthropic_base_url,
            **cls.options_from(settings, options),
        )

    def next(self, messages: list[Message], tools: list[ToolSpec]) -> Message:
        system, turns = to_anthropic(messages)
        request: dict[str, Any] = {"model": self.model, "max_tokens": self.max_output_tokens, "messages": turns}
        if system:
            request["system"] = system
        if tools:
            request["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
            ]
        response = self.call_api(self.client.messages.create, request, provider="Anthropic", key_env=KEY_ENV)
        return from_anthropic(response)


def to_anthropic(messages: list[Message]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(system blocks, messages) in Anthropic's shape: tool results ride in user turns; same-role turns merge."""
    system: list[dict[str, Any]] = [{"type": "text", "text": m.text} for m in messages if m.role == "system" and m.text]
    if system:
        system[-1]["cache_control"] = CACHE
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    if turns and turns[-1]["content"]:
        turns[-1]["content"][-1] = {**turns[-1]["content"][-1], "cache_control": CACHE}
    return system, turns


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool" and message.tool_result is not None:
        result = message.tool_result
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": result.call_id,
            "content": result.output or "(no output)",
        }
        if result.error:
            block["is_error"] = True
        return [block]
    blocks: list[dict[str, Any]] = []
    if message.text:
        blocks.append({"type": "text", "text": message.text})
    for part in message.parts:
        if part.get("type") == "image":
            media, data = image_base64(part["value"])
            blocks.append({"type": "image", "source": {"type": "base64", "media_type": media, "data": data}})
        elif part.get("value"):
            blocks.append({"type": "text", "text": part["value"]})
    for call in message.tool_calls:
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments})
    return blocks or [{"type": "text", "text": "(empty)"}]


def from_anthropic(response: Any) -> Message:
    """An assistant Message from an Anthropic response."""
    texts, calls = [], []
    for block in response.content:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use":
            arguments = block.input if isinstance(block.input, dict) else {}
            error = None if isinstance(block.input, dict) else f"input is {type(block.input).__name__}, not an object"
            calls.append(ToolCall(block.id, block.name, arguments, error=error))
    usage = response.usage
    cached = int(getattr(usage, "cache_read_input_tokens", 0) or 0)
    written = int(getattr(usage, "cache_creation_input_tokens", 0) or 0)
    return Message(
        "assistant",
        "\n".join(texts).strip(),
        calls,
        usage={
            "input_tokens": int(usage.input_tokens or 0) + cached + written,
            "output_tokens": int(usage.output_tokens or 0),
            "cached_tokens": cached,
        },
    )
