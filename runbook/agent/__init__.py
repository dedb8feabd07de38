"""The agent loop that drives method C: tools run in a sandbox, a policy picks the calls, limits stop it.

    types        provider-neutral Message / ToolCall / ToolResult / ToolSpec / Span and the Policy protocol
    tools        the tool specs and how each call becomes a sandbox command
    loop         AgentLoop(policy, toolbox, limits).run(system, user) -> AgentRun
    exceptions   why a loop stops (finish, a limit, a failing policy)
    transcript   the JSONL record of every query, and its replay
    prompts      what a model policy is told

Policies are picked by short name, each mapped to an import path, so adding one is one line.
"""
from __future__ import annotations

import importlib
from typing import Any

from ..errors import ConfigError
from .types import Policy

POLICIES = {
    "offline": "runbook.agent.offline:OfflinePlanner",
    "anthropic": "runbook.llm.anthropic_policy:AnthropicPolicy",
    "openai": "runbook.llm.openai_policy:OpenAIPolicy",
}


def get_policy(name: str, settings: Any = None, *, model: str | None = None, **options: Any) -> Policy:
    """The policy called `name`, configured from `settings` (runbook.llm.config.Settings) and `options`."""
    if name not in POLICIES:
        raise ConfigError(f"unknown policy {name!r}: choose one of {', '.join(POLICIES)}")
    module, _, attr = POLICIES[name].partition(":")
    try:
        cls = getattr(importlib.import_module(module), attr)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        raise ConfigError(f"the {name} policy is not part of this installation ({module} is missing); "
                          f"choose another with --policy or RUNBOOK_POLICY") from exc
    if settings is not None and hasattr(cls, "from_settings"):
        return cls.from_settings(settings, model=model, **options)
    return cls(**options) if model is None else cls(model=model, **options)
