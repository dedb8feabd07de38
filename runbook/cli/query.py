"""`runbook query`."""
from __future__ import annotations

import click

from ..budget import parse_budget
from ..memory import METHODS, get_memory
from ..store import Store


@click.command()
@click.argument("question")
@click.option("--budget", default="8k", show_default=True, help="Token budget of the context: 8000, 8k, 1.5k, 32K.")
@click.option("--method", type=click.Choice(sorted(METHODS)), default="c", show_default=True,
              help="c: coding agent in a sandbox; r: knowledge pools; bm25: plain BM25 over states (baseline).")
@click.option("--policy", default=None, help="Method c's policy: offline (default without a model), anthropic, openai.")
@click.option("--model", default=None, help="Model name for the anthropic/openai policy.")
@click.option("--sandbox", default=None, help="Method c's sandbox: auto (default), docker, bwrap, local.")
@click.option("--image", type=click.Path(exists=True, dir_okay=False), default=None,
              help="An image that belongs to the question (a screenshot).")
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

    options = {k: v for k, v in {"policy": policy, "model": model, "sandbox": sandbox}.items() if v}
    memory = get_memory(method, Store(ctx.obj["store_path"]), **options)
    context = memory.query(question, budget=parse_budget(budget), image=image)
    if as_json:
        click.echo(context.to_json_text())
    elif as_lme:
        click.echo(json.dumps(context.to_lme_items(), ensure_ascii=False, indent=1))
    else:
        click.echo(context.to_markdown())
