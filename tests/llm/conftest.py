"""Every llm test runs with no runbook or provider settings from the machine: no keys, no config file."""
from __future__ import annotations

import pytest

from runbook.llm.config import CONFIG_ENV, SETTINGS


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for setting in SETTINGS:
        monkeypatch.delenv(setting.env, raising=False)
    monkeypatch.delenv(CONFIG_ENV, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
