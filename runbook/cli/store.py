"""`runbook store check`."""

from __future__ import annotations

import json
import os

import click

from ..store.check import Unsafe, unsafe_entries
from ..store.recovery import Leftover, find_leftovers


@click.group("store")
def store_group() -> None:
    """Look after the store's files.

    Example:

    \b
        runbook --store /data/rb store check
    """


@store_group.command("check")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_context
def check(ctx: click.Context, as_json: bool) -> None:
    """List every file of the store that is a symbolic link, a FIFO, a socket or a device (what a store copied or
    unpacked from elsewhere may have planted), and everything a writer stopped midway left (kill -9, a power cut,
    a full disk). Readers leave planted files out and writers refuse to write through them; what a stopped writer
    left, the next open of the store (any command, e.g. `runbook stats`) finishes or removes, when no writer is at
    work. Exits 1 when there is either. Nothing is changed.

    Example:

    \b
        runbook store check --json
    """
    from ..errors import StoreError
    from ..store import Layout

    root = ctx.find_root().obj["store_path"]
    if not os.path.isdir(root):
        raise StoreError(f"no runbook store at {root}: pass --store DIR or set RUNBOOK_STORE")
    found = unsafe_entries(Layout(root))
    leftovers, busy = _leftovers(root)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "store": root,
                    "unsafe": [{"path": u.path, "kind": u.kind} for u in found],
                    "leftovers": [{"path": left.path, "what": left.what} for left in leftovers],
                    "writer_at_work": busy,
                },
                indent=2,
            )
        )
    else:
        _say(root, found, leftovers, busy)
    ctx.exit(1 if found or leftovers else 0)


def _leftovers(root: str) -> tuple[list[Leftover], bool]:
    """(what a stopped writer left, whether a writer is at work now: then its folders are its work in progress)."""
    from ..errors import RunbookError
    from ..store import Store

    try:
        store = Store(root, recover=False)
        if store.writing():
            return [], True
        return find_leftovers(store.layout, store.rows()), False
    except RunbookError:
        return [], False  # no catalog to judge by (or a planted one: listed as unsafe)


def _say(root: str, found: list[Unsafe], leftovers: list[Leftover], busy: bool) -> None:
    if found:
        click.echo(f"{len(found)} file(s) in the store at {root} are not regular files or folders:")
        for unsafe in found:
            click.echo(f"  {unsafe.path}: {unsafe.kind}")
        click.echo(
            "readers leave them out and writers refuse to write through them: remove them, or restore the store "
            "from a copy you trust (`runbook reindex` rebuilds pools/)"
        )
    else:
        click.echo(f"the store at {root} holds regular files and folders only")
    if busy:
        click.echo("a writer is at work: what it has under way is not judged; check again once it is done")
    elif leftovers:
        click.echo(f"{len(leftovers)} thing(s) left by a writer stopped midway:")
        for left in leftovers:
            click.echo(f"  {left.path}: {left.what}")
        click.echo(
            "the next open of the store (any runbook command on it, e.g. `runbook stats`) finishes what committed "
            "and removes the rest"
        )
    else:
        click.echo("nothing left by a stopped writer")
