"""`runbook config`."""

from __future__ import annotations

import json

import click

from ..config import SETTING_BY_NAME, config_path, load_settings


@click.group()
def config():
    """Inspect runbook's settings: models, limits, the reader (environment variables and the config file).

    Example:

    \b
        RUNBOOK_POLICY=openai OPENAI_BASE_URL=http://127.0.0.1:8765/v1 runbook config show
    """


@config.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (secrets masked).")
def show(as_json):
    """Print every setting, where its value came from, and its environment variable; secrets are masked.

    Values come from defaults, then the config file ($RUNBOOK_CONFIG or ~/.config/runbook/config.toml), then the
    environment.

    Example:

    \b
        RUNBOOK_POLICY=openai OPENAI_BASE_URL=http://127.0.0.1:8765/v1 runbook config show
    """
    rows = load_settings().masked()
    if as_json:
        click.echo(
            json.dumps(
                {
                    "config_file": str(config_path()),
                    "settings": {name: {"value": value, "source": source} for name, value, source in rows},
                },
                indent=2,
            )
        )
        return
    path = config_path()
    click.echo(f"config file: {path}{'' if path.is_file() else ' (none)'}")
    for name, value, source in rows:
        click.echo(f"  {name:<18} {value:<36} {source:<24} ${SETTING_BY_NAME[name].env}")
