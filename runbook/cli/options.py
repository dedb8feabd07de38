"""Options shared by several commands, defined once: the evidence options of `query` and `answer`, and the types
that check every number an option takes when the command line is parsed (a usage error, never a traceback)."""

from __future__ import annotations

import math

import click

from ..budget import DEFAULT_BUDGET, parse_budget
from ..errors import BudgetError
from ..memory import DEFAULT_METHOD, METHODS

MAX_WORKERS = 64
"""Processes an insert or a reindex may start: past the cores a machine has, more only cost memory."""


class Finite(click.FloatRange):
    """A number within a range; nan and infinity are refused (FloatRange lets nan through: no comparison holds)."""

    def convert(self, value, param, ctx):
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return super().convert(number, param, ctx)


class Budget(click.ParamType):
    """A token budget (8000, 8k, 1.5k, 32K), parsed with the command line: at most budget.MAX_BUDGET."""

    name = "budget"

    def convert(self, value, param, ctx):
        try:
            return parse_budget(value)
        except BudgetError as exc:
            self.fail(str(exc), param, ctx)


WORKERS = click.IntRange(1, MAX_WORKERS)
PORT = click.IntRange(1, 65535)


def evidence_options(command):
    """--budget, --method, --policy, --model, --sandbox and --image, as `runbook query` takes them."""
    decorators = [
        click.option(
            "--budget",
            type=Budget(),
            default=DEFAULT_BUDGET,
            show_default=True,
            help="Token budget of the context: 8000, 8k, 1.5k, 32K (at most 1m).",
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
