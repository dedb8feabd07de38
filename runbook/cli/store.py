"""`runbook store check`."""

from __future__ import annotations

import json
import os

import click


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
    """List every file of the store that is a symbolic link, a FIFO, a socket or a device: what a store copied or
    unpacked from elsewhere may have planted. Readers leave such files out and writers refuse to write through
    them; this names them all. Exits 1 when there is one.

    Example:

    \b
        runbook store check --json
    """
    from ..errors import StoreError
    from ..store import Layout
    from ..store.check import unsafe_entries

    root = ctx.find_root().obj["store_path"]
    if not os.path.isdir(root):
        raise StoreError(f"no runbook store at {root}: pass --store DIR or set RUNBOOK_STORE")
    found = unsafe_entries(Layout(root))
    if as_json:
        click.echo(json.dumps({"store": root, "unsafe": [{"path": u.path, "kind": u.kind} for u in found]}, indent=2))
    elif found:
        click.echo(f"{len(found)} file(s) in the store at {root} are not regular files or folders:")
        for unsafe in found:
            click.echo(f"  {unsafe.path}: {unsafe.kind}")
        click.echo(
            "readers leave them out and writers refuse to write through them: remove them, or restore the store "
            "from a copy you trust (`runbook reindex` rebuilds pools/)"
        )
    else:
        click.echo(f"the store at {root} holds regular files and folders only")
    ctx.exit(1 if found else 0)
