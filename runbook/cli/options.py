"""Options shared by the commands that gather evidence (`query`, `answer`), defined once."""

from __future__ import annotations

import click

from ..budget import DEFAULT_BUDGET
from ..memory import DEFAULT_METHOD, METHODS


def evidence_options(command):
    """--budget, --method, --policy, --model, --sandbox and --image, as `runbook query` takes them."""
    decorators = [
        click.option(
            "--budget",
            default=DEFAULT_BUDGET,
            show_default=True,
            help="Token budget of the context: 8000, 8k, 1.5k, 32K.",
        ),
        click.option(
            "--method",
            type=click.Choice(sorted(METHODS), case_sensitive=False),
            default=DEFAULT_METHOD,
            show_default=True,
            help="auto: r, escalating to c when r's evidence is weak (and c for a question with an image); "
            "c: coding agent in a sandbox; r: knowledge pools; baselines: bm25 (plain BM25 over states), full "
            "(whole trajectories, newest first), none (an empty context). Case does not matter: R is r.",
        ),
        click.option(
            "--policy", default=None, help="Method c's policy: offline (default without a model), anthropic, openai."
        ),
        click.option("--model", default=None, help="Model name for the anthropic/openai policy."),
        click.option("--sandbox", default=None, help="Method c's sandbox: auto (default), docker, bwrap, local."),
        click.option(
            "--image",
            type=click.Path(),
            default=None,
            help="An image that belongs to the question (a screenshot: PNG, JPEG, ...).",
        ),
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


def memory_options(policy: str | None, model: str | None, sandbox: str | None) -> dict:
    """The options given on the command line, for `get_memory`."""
    return {k: v for k, v in {"policy": policy, "model": model, "sandbox": sandbox}.items() if v}
