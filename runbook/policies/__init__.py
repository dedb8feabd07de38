"""Everything that picks the agent's next call, by short name (adding one is one line).

    offline     OfflinePlanner: no model; a fixed, question-kind-aware plan over the sandbox tools (the default)
    anthropic   AnthropicPolicy: tool use through the anthropic SDK, prompt caching on
    openai      OpenAIPolicy: any OpenAI-compatible endpoint (llama.cpp, vLLM, Ollama through base_url)
    scripted    ScriptedPolicy: replays prepared replies, for tests

The two model policies are their clients (runbook.models.anthropic.AnthropicModel, runbook.models.openai.OpenAIModel),
whose base, runbook.models.client.ModelClient, holds the request limits, the retries and the guarded API call.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..agent.types import Policy
from ..config import Settings
from ..errors import ConfigError

POLICIES = {
    "offline": "runbook.policies.offline:OfflinePlanner",
    "anthropic": "runbook.policies.anthropic:AnthropicPolicy",
    "openai": "runbook.policies.openai:OpenAIPolicy",
    "scripted": "runbook.policies.scripted:ScriptedPolicy",
}


def get_policy(name: str, settings: Settings | None = None, *, model: str | None = None, **options: Any) -> Policy:
    """The policy called `name`, configured from `settings` and `options`."""
    if name not in POLICIES:
        raise ConfigError(f"unknown policy {name!r}: choose one of {', '.join(POLICIES)}")
    module, _, attr = POLICIES[name].partition(":")
    try:
        cls = getattr(importlib.import_module(module), attr)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        raise ConfigError(
            f"the {name} policy is not part of this installation ({module} is missing); "
            f"choose another with --policy or RUNBOOK_POLICY"
        ) from exc
    if settings is not None and hasattr(cls, "from_settings"):
        return cls.from_settings(settings, model=model, **options)
    return cls(**options) if model is None else cls(model=model, **options)
