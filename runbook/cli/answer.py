"""`runbook answer`."""

from __future__ import annotations

import json

import click

from ..config import load_settings
from ..memory import get_memory
from ..models.reader import Reader
from ..query_input import check_query
from ..store import Store
from .options import evidence_options, memory_options


@click.command()
@click.argument("question")
@evidence_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object: answer, response, context.")
@click.pass_context
def answer(ctx, question, budget, method, policy, model, sandbox, image, as_json):
    """Answer QUESTION: gather evidence as `runbook query` does, then a fixed reader model answers from it.

    The reader uses LongMemEval-V2's reader prompt and answers in \\boxed{...} (UNKNOWN when the evidence does
    not say; an explanation when the question's premise is wrong). Configure it with RUNBOOK_READER_PROVIDER
    and RUNBOOK_READER_MODEL (see `runbook config show`).

    Example:

    \b
        RUNBOOK_READER_PROVIDER=anthropic RUNBOOK_READER_MODEL=claude-sonnet-4-5 \\
            runbook answer "What is the latest price of the Quest Lumaflex Band?" --budget 8k
    """
    question, image = check_query(question, image)  # a bad question is reported before a missing reader
    reader = Reader.from_settings(load_settings())  # before the query: no reader, no point gathering evidence
    context = get_memory(method, Store(ctx.obj["store_path"]), **memory_options(policy, model, sandbox)).query(
        question, budget=budget, image=image
    )
    result = reader.answer(context, image=image)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "question": question,
                    "answer": result.answer,
                    "response": result.response,
                    "context": context.to_json(),
                },
                ensure_ascii=False,
            )
        )
        return
    click.echo(f"answer: {result.answer}")
    click.echo(f"\nreader: {result.response.strip()}")
    click.echo(
        f"\nevidence ({len(context.items)} items, {context.tokens:,} of {context.budget:,} tokens, "
        f"{context.latency_s:.1f} s):"
    )
    if context.analysis:
        click.echo(f"  analysis: {context.analysis}")
    for n, item in enumerate(context.items, 1):
        click.echo(f"  {n}. {item.citation()}  {item.path}")
    if context.meta.get("transcript"):
        click.echo(f"transcript: {context.meta['transcript']}  (runbook replay shows it)")
