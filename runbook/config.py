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
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, get_type_hints

from .errors import ConfigError

DEFAULT_REPLY_TOKENS = 4096
"""Tokens a model may write in one turn unless the `reply_tokens` setting says otherwise."""

DEFAULT_READER_DOMAIN = "generic"
"""The reader's prompt unless the `reader_domain` setting (or a bench config's reader) names another."""

CONFIG_ENV = "RUNBOOK_CONFIG"


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


def _setting(default: Any, env: str, *, secret: bool = False) -> Any:
    """A Settings field: its default, the environment variable that sets it, and whether it is shown masked."""
    return field(default=default, metadata={"env": env, "secret": secret})


@dataclass(frozen=True)
class Settings:
    """Resolved settings, each typed and with its one default, and where each value came from: load_settings()."""

    policy: str = _setting("offline", "RUNBOOK_POLICY")
    """Method C's policy: offline, anthropic or openai."""
    model: str | None = _setting(None, "RUNBOOK_MODEL")
    """Model name for the anthropic/openai policy."""
    sandbox: str = _setting("auto", "RUNBOOK_SANDBOX")
    """Sandbox backend: auto, docker, bwrap or local."""
    max_steps: int = _setting(Limits.max_steps, "RUNBOOK_MAX_STEPS")
    """Policy turns before the agent is stopped."""
    max_seconds: float = _setting(Limits.max_seconds, "RUNBOOK_MAX_SECONDS")
    """Wall time of one query's agent loop."""
    max_tokens: int = _setting(Limits.max_tokens, "RUNBOOK_MAX_TOKENS")
    """Model tokens (input + output) of one query."""
    max_cost: float | None = _setting(Limits.max_cost, "RUNBOOK_MAX_COST")
    """US dollars of one query (when the model's price is known)."""
    output_tokens: int = _setting(Limits.output_tokens, "RUNBOOK_OUTPUT_TOKENS")
    """Tokens of one tool output shown to the model."""
    reply_tokens: int = _setting(DEFAULT_REPLY_TOKENS, "RUNBOOK_REPLY_TOKENS")
    """Tokens the model may write in one turn (lower it for slow local models)."""
    price_input: float | None = _setting(None, "RUNBOOK_PRICE_INPUT")
    """US dollars per million input tokens (overrides the table)."""
    price_output: float | None = _setting(None, "RUNBOOK_PRICE_OUTPUT")
    """US dollars per million output tokens."""
    tool_results: str | None = _setting(None, "RUNBOOK_TOOL_RESULTS")
    """How the openai policy returns tool outputs: tool (role: tool, the protocol) or user (user messages, for chat
    templates that drop tool messages, e.g. llama-cpp-python's chatml-function-calling); unset: tool."""
    transcripts: str | None = _setting(None, "RUNBOOK_TRANSCRIPTS")
    """Folder for query transcripts."""
    transcripts_keep: int = _setting(500, "RUNBOOK_TRANSCRIPTS_KEEP")  # about 40 KB each: some 20 MB
    """Transcripts kept in that folder: the oldest go when a query writes one more (0 writes none)."""
    reader_provider: str | None = _setting(None, "RUNBOOK_READER_PROVIDER")
    """Reader for `runbook answer`: anthropic or openai."""
    reader_model: str | None = _setting(None, "RUNBOOK_READER_MODEL")
    """The reader's model name."""
    reader_base_url: str | None = _setting(None, "RUNBOOK_READER_BASE_URL")
    """An OpenAI-compatible URL for the reader only."""
    reader_domain: str = _setting(DEFAULT_READER_DOMAIN, "RUNBOOK_READER_DOMAIN")
    """Reader prompt: web, enterprise (LongMemEval-V2's) or generic."""
    anthropic_api_key: str | None = _setting(None, "ANTHROPIC_API_KEY", secret=True)
    """Anthropic API key."""
    anthropic_base_url: str | None = _setting(None, "ANTHROPIC_BASE_URL")
    """Anthropic API URL (a proxy or a fake)."""
    openai_api_key: str | None = _setting(None, "OPENAI_API_KEY", secret=True)
    """OpenAI (or compatible server) API key."""
    openai_base_url: str | None = _setting(None, "OPENAI_BASE_URL")
    """OpenAI-compatible URL: llama.cpp, vLLM, Ollama, ..."""
    sources: dict[str, str] = field(default_factory=dict, compare=False)
    """setting name -> 'default', 'file <path>', 'env <VAR>' or 'argument'; a setting left unset has none."""

    def with_overrides(self, **values: Any) -> Settings:
        """A copy with `values` (None ones skipped) set as explicit arguments."""
        unknown = [name for name in values if name not in SETTING_BY_NAME]
        if unknown:
            raise ConfigError(f"unknown setting {unknown[0]!r}; known: {', '.join(SETTING_BY_NAME)}")
        parsed = {name: parse_setting(name, value, "argument") for name, value in values.items() if value is not None}
        return replace(self, **parsed, sources={**self.sources, **dict.fromkeys(parsed, "argument")})

    def limits(self) -> Limits:
        """The agent loop's limits these settings set (the others keep Limits' defaults)."""
        return Limits(
            max_steps=self.max_steps,
            max_seconds=self.max_seconds,
            max_tokens=self.max_tokens,
            max_cost=self.max_cost,
            output_tokens=self.output_tokens,
        )

    def price(self, model: str | None) -> tuple[float, float] | None:
        """(input, output) US dollars per million tokens: configured, else from the table, else None."""
        if self.price_input is not None and self.price_output is not None:
            return self.price_input, self.price_output
        if not model:
            return None
        name = model.lower().split("/")[-1]
        match = max((p for p in PRICES if name.startswith(p)), key=len, default=None)
        return PRICES[match] if match else None

    def masked(self) -> list[tuple[str, str, str]]:
        """(name, shown value, source) for every setting, secrets masked."""
        rows = []
        for setting in SETTINGS:
            value = getattr(self, setting.name)
            shown = "-" if value is None else (mask(str(value)) if setting.secret else str(value))
            rows.append((setting.name, shown, self.sources.get(setting.name, "unset")))
        return rows


@dataclass(frozen=True)
class Setting:
    """One setting as `runbook config show` and the loaders see it: its environment variable, type and default."""

    name: str
    env: str
    kind: type
    default: Any
    secret: bool = False


def _settings() -> list[Setting]:
    hints = get_type_hints(Settings)
    out = []
    for f in fields(Settings):
        if "env" not in f.metadata:
            continue
        (kind,) = [k for k in getattr(hints[f.name], "__args__", (hints[f.name],)) if k is not type(None)]
        out.append(Setting(f.name, f.metadata["env"], kind, f.default, f.metadata["secret"]))
    return out


SETTINGS = _settings()
"""Every setting, in the order `runbook config show` prints them (Settings' field order)."""
SETTING_BY_NAME = {s.name: s for s in SETTINGS}

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
    values: dict[str, Any] = {}
    sources = {s.name: "default" for s in SETTINGS if s.default is not None}
    path = config_path()
    for name, value in read_config_file(path).items():
        values[name] = parse_setting(name, value, f"file {path}")
        sources[name] = f"file {path}"
    for setting in SETTINGS:
        raw = os.environ.get(setting.env)
        if raw not in (None, ""):
            values[setting.name] = parse_setting(setting.name, raw, f"env {setting.env}")
            sources[setting.name] = f"env {setting.env}"
    return Settings(**values, sources=sources).with_overrides(**overrides)


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


def parse_setting(name: str, value: Any, source: str) -> Any:
    """`value` as the setting's type; a ConfigError naming the setting and where the value came from."""
    setting = SETTING_BY_NAME[name]
    try:
        parsed = setting.kind(value)
        if isinstance(parsed, float) and not math.isfinite(parsed):
            raise ValueError("nan and inf are no limit a query can keep to")
    except (TypeError, ValueError):
        where = source.replace("env ", "the environment variable ").replace("file ", "")
        kind = "finite float" if setting.kind is float else setting.kind.__name__
        raise ConfigError(f"{setting.name} must be a {kind}, got {value!r} (from {where})") from None
    return parsed
