"""The openai policy: method C's agent driven by any OpenAI-compatible model, each turn one request to it."""

from __future__ import annotations

from ..models.openai import OpenAIModel


class OpenAIPolicy(OpenAIModel):
    """Asks an OpenAI-compatible model for the next tool calls (the client does the translating and retrying)."""

    name = "openai"
