"""Settings: defaults < config file < environment < arguments; secrets masked; clear errors."""

from __future__ import annotations

from typing import get_type_hints

import pytest
from click.testing import CliRunner

from runbook.cli.config import config
from runbook.config import Limits, Settings, load_settings, mask
from runbook.errors import ConfigError


def write_config(tmp_path, text):
    path = tmp_path / "config" / "runbook" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_defaults_without_file_or_environment():
    settings = load_settings()
    assert settings.policy == "offline" and settings.sandbox == "auto" and settings.max_steps == 30
    assert settings.model is None and settings.sources["policy"] == "default" and "model" not in settings.sources


def test_settings_are_typed_fields_each_with_one_default():
    """The loop's limits come from the settings without a cast or a second default (memory/coding_agent.py once
    restated 'offline' and 'auto' and cast each limit)."""
    hints = get_type_hints(Settings)
    assert hints["max_steps"] is int and hints["max_cost"] == float | None and hints["model"] == str | None
    assert Settings().limits() == Limits()
    settings = load_settings(max_steps="5", max_seconds=2)
    assert settings.limits() == Limits(max_steps=5, max_seconds=2.0) and isinstance(settings.max_seconds, float)
    assert not hasattr(Settings, "__getattr__")


def test_file_then_environment_then_arguments(tmp_path, monkeypatch):
    path = write_config(
        tmp_path,
        'policy = "openai"\nmodel = "qwen"\n[reader]\nprovider = "anthropic"\n'
        'model = "claude-x"\n[limits]\nmax_steps = 12\nmax_seconds = 60\n',
    )
    monkeypatch.setenv("RUNBOOK_MODEL", "qwen-big")
    monkeypatch.setenv("RUNBOOK_MAX_STEPS", "20")
    settings = load_settings(max_steps=5)
    assert settings.policy == "openai" and settings.sources["policy"] == f"file {path}"
    assert settings.model == "qwen-big" and settings.sources["model"] == "env RUNBOOK_MODEL"
    assert settings.reader_provider == "anthropic" and settings.reader_model == "claude-x"
    assert settings.max_seconds == 60.0 and isinstance(settings.max_seconds, float)
    assert settings.max_steps == 5 and settings.sources["max_steps"] == "argument"


def test_runbook_config_names_the_file(tmp_path, monkeypatch):
    path = tmp_path / "elsewhere.toml"
    path.write_text('sandbox = "bwrap"\n')
    monkeypatch.setenv("RUNBOOK_CONFIG", str(path))
    assert load_settings().sandbox == "bwrap"
    monkeypatch.setenv("RUNBOOK_CONFIG", str(tmp_path / "missing.toml"))
    with pytest.raises(ConfigError, match="RUNBOOK_CONFIG points to .*missing.toml, which does not exist"):
        load_settings()


@pytest.mark.parametrize(
    "text, message",
    [
        ('polcy = "openai"\n', "unknown setting 'polcy'; known: policy, model"),
        ('[reader]\nmodle = "x"\n', "unknown setting 'reader_modle'"),
        ('max_steps = "many"\n', "max_steps must be a int, got 'many'"),
        ("policy = \n", "not a readable TOML file"),
    ],
)
def test_bad_config_files_say_what_is_wrong(tmp_path, text, message):
    write_config(tmp_path, text)
    with pytest.raises(ConfigError, match=message):
        load_settings()


def test_a_bad_environment_value_names_the_variable(monkeypatch):
    monkeypatch.setenv("RUNBOOK_MAX_TOKENS", "lots")
    with pytest.raises(
        ConfigError, match="max_tokens must be a int, got 'lots' .from the environment variable RUNBOOK_MAX_TOKENS"
    ):
        load_settings()


def test_prices_come_from_the_table_or_the_settings(monkeypatch):
    settings = load_settings()
    assert settings.price("claude-sonnet-4-5-20250929") == (3.0, 15.0)
    assert settings.price("gpt-4.1-mini") == (0.4, 1.6) and settings.price("gpt-4.1") == (2.0, 8.0)
    assert settings.price("qwen2.5-coder") is None and settings.price(None) is None
    monkeypatch.setenv("RUNBOOK_PRICE_INPUT", "1")
    monkeypatch.setenv("RUNBOOK_PRICE_OUTPUT", "2")
    assert load_settings().price("qwen2.5-coder") == (1.0, 2.0)


def test_secrets_are_masked():
    assert mask("sk-ant-api03-abcdefghijklmnop") == "****mnop" and mask("short") == "****"


def test_config_show_prints_sources_and_masks_keys(tmp_path, monkeypatch):
    write_config(tmp_path, 'policy = "anthropic"\n')
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-value-1234")
    result = CliRunner().invoke(config, ["show"])
    assert result.exit_code == 0, result.output
    assert "sk-ant-secret" not in result.output
    line = next(l for l in result.output.splitlines() if "anthropic_api_key" in l)
    assert "****1234" in line and "env ANTHROPIC_API_KEY" in line
    assert "file " in next(l for l in result.output.splitlines() if l.strip().startswith("policy"))
    as_json = CliRunner().invoke(config, ["show", "--json"])
    assert '"value": "****1234"' in as_json.output and "secret" not in as_json.output


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_a_float_setting_must_be_finite(monkeypatch, value):
    monkeypatch.setenv("RUNBOOK_MAX_SECONDS", value)
    with pytest.raises(ConfigError, match=f"max_seconds must be a finite float, got '{value}'"):
        load_settings()
