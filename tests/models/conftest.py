"""Every llm test runs with no runbook or provider settings from the machine: no keys, no config file."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_machine_settings(clean_env):
    """Every test here runs without the machine's keys and settings (tests/conftest.py)."""
