"""Settings for models, limits and the reader: defaults < config file < environment < explicit arguments.

The config file is TOML at $RUNBOOK_CONFIG, else ~/.config/runbook/config.toml (optional). Keys are the setting
names below; a table groups them, so `[reader] model = "..."` sets `reader_model` and `[limits] max_steps = 20`
sets `max_steps`. Example:

    policy = "openai"
    model = "qwen2.5-coder"
    openai_base_url = "http://127.0.0.1:8765/v1"
    [reader]
    provider = "anthropic"
    model = "claude-sonnet-4-5"
    [limits]
    max_steps = 20
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError

DEFAULT_REPLY_TOKENS = 4096
"""Tokens a model may write in one turn unless the `reply_tokens` setting says otherwise."""

CONFIG_ENV = "RUNBOOK_CONFIG"


@dataclass(frozen=True)
class Setting:
    """One setting: its environment variable, type and meaning."""

    name: str
    env: str
    kind: type
    help: str
    secret: bool = False


SETTINGS = [
    Setting("policy", "RUNBOOK_POLICY", str, "method C's policy: offline, anthropic or openai"),
    Setting("model", "RUNBOOK_MODEL", str, "model name for the anthropic/openai policy"),
    Setting("sandbox", "RUNBOOK_SANDBOX", str, "sandbox backend: auto, docker, bwrap or local"),
    Setting("max_steps", "RUNBOOK_MAX_STEPS", int, "policy turns before the agent is stopped"),
    Setting("max_seconds", "RUNBOOK_MAX_SECONDS", float, "wall time of one query's agent loop"),
    Setting("max_tokens", "RUNBOOK_MAX_TOKENS", int, "model tokens (input + output) of one query"),
    Setting("max_cost", "RUNBOOK_MAX_COST", float, "US dollars of one query (when the model's price is known)"),
    Setting("output_tokens", "RUNBOOK_OUTPUT_TOKENS", int, "tokens of one tool output shown to the model"),
    Setting(
        "reply_tokens",
        "RUNBOOK_REPLY_TOKENS",
        int,
        "tokens the model may write in one turn (lower it for slow local models)",
    ),
    Setting("price_input", "RUNBOOK_PRICE_INPUT", float, "US dollars per million input tokens (overrides the table)"),
    Setting("price_output", "RUNBOOK_PRICE_OUTPUT", float, "US dollars per million output tokens"),
    Setting(
        "tool_results",
        "RUNBOOK_TOOL_RESULTS",
        str,
        "how the openai policy returns tool outputs: tool (role: tool, the protocol) or user (user messages, "
        "for chat templates that drop tool messages, e.g. llama-cpp-python's chatml-function-calling)",
    ),
    Setting("transcripts", "RUNBOOK_TRANSCRIPTS", str, "folder for query transcripts"),
    Setting(
        "transcripts_keep",
        "RUNBOOK_TRANSCRIPTS_KEEP",
        int,
        "transcripts kept in that folder: the oldest go when a query writes one more (0 writes none)",
    ),
    Setting("reader_provider", "RUNBOOK_READER_PROVIDER", str, "reader for `runbook answer`: anthropic or openai"),
    Setting("reader_model", "RUNBOOK_READER_MODEL", str, "the reader's model name"),
    Setting("reader_base_url", "RUNBOOK_READER_BASE_URL", str, "an OpenAI-compatible URL for the reader only"),
    Setting(
        "reader_domain", "RUNBOOK_READER_DOMAIN", str, "reader prompt: web, enterprise (LongMemEval-V2's) or generic"
    ),
    Setting("anthropic_api_key", "ANTHROPIC_API_KEY", str, "Anthropic API key", secret=True),
    Setting("anthropic_base_url", "ANTHROPIC_BASE_URL", str, "Anthropic API URL (a proxy or a fake)"),
    Setting("openai_api_key", "OPENAI_API_KEY", str, "OpenAI (or compatible server) API key", secret=True),
    Setting("openai_base_url", "OPENAI_BASE_URL", str, "OpenAI-compatible URL: llama.cpp, vLLM, Ollama, ..."),
]
SETTING_BY_NAME = {s.name: s for s in SETTINGS}


@dataclass
class Limits:
    """When the loop stops without `finish`, and how much of each output the policy sees."""

    max_steps: int = 30
    """Policy turns (each may make several tool calls)."""
    max_seconds: float = 300.0
    """Wall time of the whole loop."""
    max_tokens: int = 1_000_000
    """Model tokens, input plus output, summed over turns."""
    max_cost: float | None = None
    """US dollars, checked only when the model's price is known."""
    output_tokens: int = 2_000
    """Tokens of one tool output shown to the policy (head and tail kept)."""
    call_seconds: float = 60.0
    """Wall time of one tool call in the sandbox."""
    repeat_limit: int = 3
    """The n-th identical call is not run; the policy is told instead."""
    stuck_turns: int = 3
    """Turns in a row made only of refused repeats before the loop gives up on the policy."""


_LIMITS = Limits()
DEFAULTS: dict[str, Any] = {
    "policy": "offline",
    "sandbox": "auto",
    "max_steps": _LIMITS.max_steps,
    "max_seconds": _LIMITS.max_seconds,
    "max_tokens": _LIMITS.max_tokens,
    "output_tokens": _LIMITS.output_tokens,
    "reply_tokens": DEFAULT_REPLY_TOKENS,
    "reader_domain": "generic",
    "transcripts_keep": 500,  # about 40 KB each: some 20 MB
}
"""The settings' defaults; the agent's limits take theirs from Limits, so each is written once."""

PRICES = {
    "claude-opus-4": (15.0, 75.0),
    "claude-sonnet-4": (3.0, 15.0),
    "claude-haiku-4": (1.0, 5.0),
    "claude-3-5-haiku": (0.8, 4.0),
    "gpt-4.1-nano": (0.1, 0.4),
    "gpt-4.1-mini": (0.4, 1.6),
    "gpt-4.1": (2.0, 8.0),
    "gpt-4o-mini": (0.15, 0.6),
    "gpt-4o": (2.5, 10.0),
}
"""Published list prices, US dollars per million (input, output) tokens, by model-name prefix (longest wins)."""


@dataclass
class Settings:
    """Resolved settings and where each value came from."""

    values: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    """setting name -> 'default', 'file <path>', 'env <VAR>' or 'argument'."""

    def get(self, name: str, default: Any = None) -> Any:
        value = self.values.get(name)
        return default if value is None else value

    def __getattr__(self, name: str) -> Any:
        if name in SETTING_BY_NAME:
            return self.values.get(name)
        raise AttributeError(name)

    def with_overrides(self, **values: Any) -> Settings:
        """A copy with `values` (None ones skipped) set as explicit arguments."""
        copy = Settings(dict(self.values), dict(self.sources))
        for name, value in values.items():
            if name not in SETTING_BY_NAME:
                raise ConfigError(f"unknown setting {name!r}; known: {', '.join(SETTING_BY_NAME)}")
            if value is not None:
                _put(copy, name, value, "argument")
        return copy

    def price(self, model: str | None) -> tuple[float, float] | None:
        """(input, output) US dollars per million tokens: configured, else from the table, else None."""
        if self.get("price_input") is not None and self.get("price_output") is not None:
            return float(self.values["price_input"]), float(self.values["price_output"])
        if not model:
            return None
        name = model.lower().split("/")[-1]
        match = max((p for p in PRICES if name.startswith(p)), key=len, default=None)
        return PRICES[match] if match else None

    def masked(self) -> list[tuple[str, str, str]]:
        """(name, shown value, source) for every setting, secrets masked."""
        rows = []
        for setting in SETTINGS:
            value = self.values.get(setting.name)
            shown = "-" if value is None else (mask(str(value)) if setting.secret else str(value))
            rows.append((setting.name, shown, self.sources.get(setting.name, "unset")))
        return rows


def mask(secret: str) -> str:
    """'sk-abc...wxyz' -> '****wxyz': enough to tell keys apart, not enough to use one."""
    return "****" + secret[-4:] if len(secret) >= 12 else "****"


def config_path() -> Path:
    if os.environ.get(CONFIG_ENV):
        return Path(os.environ[CONFIG_ENV]).expanduser()
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "runbook" / "config.toml"


def load_settings(**overrides: Any) -> Settings:
    """Defaults, then the config file, then the environment, then `overrides` (None values are ignored)."""
    settings = Settings()
    for name, value in DEFAULTS.items():
        _put(settings, name, value, "default")
    path = config_path()
    for name, value in read_config_file(path).items():
        _put(settings, name, value, f"file {path}")
    for setting in SETTINGS:
        raw = os.environ.get(setting.env)
        if raw not in (None, ""):
            _put(settings, setting.name, raw, f"env {setting.env}")
    return settings.with_overrides(**overrides)


def read_config_file(path: Path) -> dict[str, Any]:
    """The config file's settings, flattened; {} when there is no file."""
    if not path.is_file():
        if os.environ.get(CONFIG_ENV):
            raise ConfigError(f"{CONFIG_ENV} points to {path}, which does not exist")
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: not a readable TOML file: {exc}") from exc
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            for inner, item in value.items():
                out[_file_key(path, f"{key}_{inner}", inner)] = item
        else:
            out[_file_key(path, key, key)] = value
    return out


def _file_key(path: Path, qualified: str, bare: str) -> str:
    for name in (qualified, bare):
        if name in SETTING_BY_NAME:
            return name
    raise ConfigError(f"{path}: unknown setting {qualified!r}; known: {', '.join(SETTING_BY_NAME)}")


def _put(settings: Settings, name: str, value: Any, source: str) -> None:
    setting = SETTING_BY_NAME[name]
    try:
        parsed = setting.kind(value) if value is not None else None
        if isinstance(parsed, float) and not math.isfinite(parsed):
            raise ValueError("nan and inf are no limit a query can keep to")
    except (TypeError, ValueError):
        where = source.replace("env ", "the environment variable ").replace("file ", "")
        kind = "finite float" if setting.kind is float else setting.kind.__name__
        raise ConfigError(f"{setting.name} must be a {kind}, got {value!r} (from {where})") from None
    settings.values[name] = parsed
    settings.sources[name] = source
