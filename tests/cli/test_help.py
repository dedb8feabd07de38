"""Every command documents itself: a --help text with an Example block."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from runbook.cli import main


def _commands(group: click.Group, prefix=()):
    for name, command in group.commands.items():
        yield (*prefix, name), command
        if isinstance(command, click.Group):
            yield from _commands(command, (*prefix, name))


@pytest.mark.parametrize("path", [p for p, _ in _commands(main)], ids=" ".join)
def test_command_has_help_with_example(path):
    result = CliRunner().invoke(main, [*path, "--help"])
    assert result.exit_code == 0
    assert "Example" in result.output, f"`runbook {' '.join(path)} --help` has no Example block"
