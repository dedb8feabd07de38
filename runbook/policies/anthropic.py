"""The anthropic policy: method C's agent driven by an Anthropic model, each turn one request to it."""

from __future__ import annotations

from ..models.anthropic import AnthropicModel


class AnthropicPolicy(AnthropicModel):
    """Asks an Anthropic model for the next tool calls (the client does the translating, caching and retrying)."""

    name = "anthropic"
