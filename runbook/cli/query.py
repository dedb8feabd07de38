"""`runbook query`."""

from __future__ import annotations

import click

from ..memory import get_memory
from ..store import Store
from .options import evidence_options, memory_options


@click.command()
@click.argument("question")
@evidence_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of markdown.")
@click.option("--lme", "as_lme", is_flag=True, help="Print LongMemEval-V2 items: [{type, value}, ...].")
@click.pass_context
def query(ctx, question, budget, method, policy, model, sandbox, image, as_json, as_lme):
    """Gather evidence for QUESTION and print it, cut to the token budget, every item citing its source.

    Example:

    \b
        runbook query "What price does the admin currently list for SKU WS05-XS-Black?" --budget 8k
        runbook query "How is a pending order canceled?" --method r --json
    """
    import json

    memory = get_memory(method, Store(ctx.obj["store_path"]), **memory_options(policy, model, sandbox))
    context = memory.query(question, budget=budget, image=image)
    if as_json:
        click.echo(context.to_json_text())
    elif as_lme:
        click.echo(json.dumps(context.to_lme_items(), ensure_ascii=False, indent=1))
    else:
        click.echo(context.to_markdown())
