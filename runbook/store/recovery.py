"""What a writer stopped midway (kill -9, a power cut, a full disk) leaves in a store: found (`runbook store check`)
and undone by the next writer, or by the next open when no writer is at work.

A writer commits one trajectory in this order, so that no reader ever sees a folder whose catalog rows did not
commit: not the host, which reads the catalog, and not the sandbox, whose programs list and search the store's
files themselves (ripgrep and `os.listdir` skip hidden names):

1. its files are staged in `trajectories/.tmp-<name>-<pid>-<random>` (in worker processes);
2. the writer renames them to `trajectories/.pending-<name>`;
3. its pools commit (their manifest records how to undo that commit: core.pools.UNDO), then its catalog rows;
4. only then is `.pending-<name>` renamed to `<name>` (a replaced version first moved to `.trash-<name>`).

A writer marks the store with `.dirty` from its lock to its clean close; a reindex builds `pools.tmp-<pid>` beside
`pools/` and swaps it in through `pools.old-<pid>`. A file replaced whole (`.dirty`, the pools' manifest, the
summaries) is written as `.<name>.tmp<pid>-<random>` and renamed over it. Recovery rolls a committed trajectory
forward (step 4), removes what never committed and the temporary files of writes that never renamed, undoes pools
one commit ahead of the catalog, finishes or undoes a cut pools swap, and has the writer render the summaries again.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import orjson

from ..core import pools as core_pools
from ..errors import RunbookError
from .catalog import TrajectoryRow
from .journal import OPEN_DIR, Journal
from .layout import (
    FINGERPRINT_FILE,
    PENDING_PREFIX,
    POOLS_DIR,
    POOLS_FRESH_PREFIX,
    POOLS_OLD_PREFIX,
    SUMMARIES_DIR,
    TMP_PREFIX,
    TRAJECTORIES_DIR,
    TRASH_PREFIX,
    Layout,
)
from .safe_write import stopped_temporary

_REPLACED_IN = ("", POOLS_DIR, SUMMARIES_DIR)
"""The folders whose files are replaced whole (the root's `.dirty`, the pools' manifest, the summaries)."""


@dataclass(frozen=True, slots=True)
class Leftover:
    """One thing a stopped writer left, and what it is."""

    path: str
    """Relative to the store's root."""
    what: str

    def __str__(self) -> str:
        return f"{self.path} ({self.what})"


def needs_recovery(layout: Layout) -> bool:
    """Cheap, for every open: whether a writer stopped midway (its `.dirty` mark, or a reindex's folders)."""
    if os.path.lexists(layout.dirty):
        return True
    # a writer killed while it wrote `.dirty` itself left only its temporary file
    return any(
        name.startswith((POOLS_FRESH_PREFIX, POOLS_OLD_PREFIX)) or stopped_temporary(name)
        for name in _names(layout.root)
    )


def find_leftovers(layout: Layout, rows: list[TrajectoryRow]) -> list[Leftover]:
    """Everything a stopped writer left (nothing is changed); `rows`: the catalog's committed rows."""
    found = []
    if os.path.lexists(layout.dirty):
        found.append(Leftover(layout.dirty.name, "a writer stopped before it finished: the summaries may lag"))
    found += _trajectory_leftovers(layout, {row.dir: row.fingerprint for row in rows})
    found += _pools_swap_leftovers(layout)
    ahead = pools_ahead(layout, rows) if os.path.lexists(layout.dirty) else None  # only a stopped writer's
    if ahead is not None:
        found.append(Leftover(f"{POOLS_DIR}/{core_pools.MANIFEST}", ahead))
    found += [Leftover(rel, "an open trajectory whose creation was cut short") for rel in _journal_leftovers(layout)]
    found += [Leftover(rel, "a file's new content, never renamed into place") for rel in _temporary_files(layout)]
    return found


def _temporary_files(layout: Layout) -> list[str]:
    """The temporary files of whole-file writes (safe_write.replace) whose process stopped before the rename."""
    return [
        f"{folder}/{name}" if folder else name
        for folder in _REPLACED_IN
        for name in _names(layout.root / folder)
        if stopped_temporary(name)
    ]


def _journal_leftovers(layout: Layout) -> list[str]:
    return [f"{OPEN_DIR}/{name}" for name in _names(layout.root / OPEN_DIR) if name.startswith(TMP_PREFIX)]


def _trajectory_leftovers(layout: Layout, committed: dict[str, str]) -> list[Leftover]:
    base = layout.trajectories
    found = []
    names = _names(base)
    for name in names:
        rel = f"{TRAJECTORIES_DIR}/{name}"
        if name.startswith(TMP_PREFIX):
            found.append(Leftover(rel, "a staging folder of an insert that never committed"))
        elif name.startswith(PENDING_PREFIX):
            target = name[len(PENDING_PREFIX) :]
            if _rolls_forward(layout, base / name, target, committed):
                found.append(Leftover(rel, f"committed, not yet moved to {TRAJECTORIES_DIR}/{target}"))
            else:
                found.append(Leftover(rel, "staged for a commit that never happened"))
        elif name.startswith(TRASH_PREFIX):
            found.append(Leftover(rel, "a version a replace moved aside"))
        elif name not in committed:
            found.append(Leftover(rel, "a folder whose catalog rows never committed"))
    present = set(names)
    for dirname in committed:
        if dirname not in present and f"{PENDING_PREFIX}{dirname}" not in present:
            found.append(Leftover(f"{TRAJECTORIES_DIR}/{dirname}", "committed, but its folder is missing"))
    return found


def _pools_swap_leftovers(layout: Layout) -> list[Leftover]:
    found = []
    for name in _names(layout.root):
        if name.startswith(POOLS_FRESH_PREFIX):
            found.append(Leftover(name, "pools a reindex was building"))
        elif name.startswith(POOLS_OLD_PREFIX):
            missing = "" if os.path.lexists(layout.pools) else f"; {POOLS_DIR}/ is missing"
            found.append(Leftover(name, f"pools a reindex swapped out{missing}"))
    return found


def pools_ahead(layout: Layout, rows: list[TrajectoryRow]) -> str | None:
    """What is wrong when the pools' last commit added a version the catalog does not hold, else None."""
    manifest = _manifest(layout)
    if manifest is None:
        return None
    committed = {row.id: row.fingerprint for row in rows}
    ahead = sorted(tid for tid, fp in core_pools.undo_fingerprints(manifest).items() if committed.get(tid) != fp)
    if not ahead:
        return None
    return f"the pools hold trajectory {ahead[0]!r} as the catalog never committed it"


def recover(layout: Layout, rows: list[TrajectoryRow], *, crashed: bool) -> list[Leftover]:
    """Undo what a stopped writer left; call under the store's write lock. `crashed`: the store was marked dirty
    (only then can the pools be ahead of the catalog). Returns what was found and dealt with."""
    done = _recover_trajectories(layout, {row.dir: row.fingerprint for row in rows})
    done += _recover_pools_swap(layout)
    done += _recover_journal(layout)
    for rel in _temporary_files(layout):
        remove(layout.root / rel)
        done.append(Leftover(rel, "a write that never renamed into place: removed"))
    if crashed:
        ahead = pools_ahead(layout, rows)
        manifest = _manifest(layout) if ahead else None
        before = core_pools.manifest_before(manifest) if manifest else None
        if before is not None:
            layout.replace(layout.pools / core_pools.MANIFEST, orjson.dumps(before))
            done.append(Leftover(f"{POOLS_DIR}/{core_pools.MANIFEST}", f"{ahead}: that commit was undone"))
    return done


def _recover_trajectories(layout: Layout, committed: dict[str, str]) -> list[Leftover]:
    base = layout.trajectories
    done = []
    for name in _names(base):  # pending first: rolling one forward moves what its folder held aside
        if name.startswith(PENDING_PREFIX):
            target = name[len(PENDING_PREFIX) :]
            rel = f"{TRAJECTORIES_DIR}/{name}"
            if _rolls_forward(layout, base / name, target, committed):
                move_into_place(base / name, base / target)
                done.append(Leftover(rel, f"committed: moved to {TRAJECTORIES_DIR}/{target}"))
            else:
                remove(base / name)
                done.append(Leftover(rel, "never committed: removed"))
    for name in _names(base):
        rel = f"{TRAJECTORIES_DIR}/{name}"
        if name.startswith(TMP_PREFIX):
            remove(base / name)
            done.append(Leftover(rel, "a staging folder: removed"))
        elif name.startswith(TRASH_PREFIX):
            original = base / name[len(TRASH_PREFIX) :]
            if (
                committed.get(original.name)
                == read_fingerprint(layout, base / name)
                != read_fingerprint(layout, original)
            ):
                # an older runbook renamed a replacement in before its rows committed: the old version comes back
                remove(original)
                os.replace(base / name, original)
                done.append(Leftover(rel, "the committed version: put back"))
            else:
                remove(base / name)
                done.append(Leftover(rel, "a replaced version: removed"))
    for name in _names(base):
        if not name.startswith((TMP_PREFIX, PENDING_PREFIX, TRASH_PREFIX)) and name not in committed:
            remove(base / name)  # renamed in by an older runbook, its catalog rows never committed
            done.append(Leftover(f"{TRAJECTORIES_DIR}/{name}", "never committed: removed"))
    return done


def _rolls_forward(layout: Layout, pending: Path, target: str, committed: dict[str, str]) -> bool:
    """Whether `pending` holds the version the catalog committed for folder `target`, and `target` does not."""
    want = committed.get(target)
    return want is not None and read_fingerprint(layout, pending) == want != read_fingerprint(
        layout, pending.parent / target
    )


def move_into_place(source: Path, final: Path) -> None:
    """Rename `source` to `final`; a folder already at `final` is moved aside first, then removed."""
    if os.path.lexists(final):
        trash = final.with_name(f"{TRASH_PREFIX}{final.name}")
        remove(trash)
        os.replace(final, trash)
        os.replace(source, final)
        remove(trash)
    else:
        os.replace(source, final)


def _recover_journal(layout: Layout) -> list[Leftover]:
    """An open trajectory's folder whose creation was cut short (under the journal's lock: servers create them)."""
    if not _journal_leftovers(layout):
        return []
    done = []
    with Journal(layout).locked():
        for rel in _journal_leftovers(layout):
            remove(layout.root / rel)
            done.append(Leftover(rel, "an open trajectory's creation, cut short: removed"))
    return done


def _recover_pools_swap(layout: Layout) -> list[Leftover]:
    """A reindex stopped mid-way: its half-built pools go; a swap cut between its two renames is finished."""
    done = []
    names = _names(layout.root)
    if not os.path.lexists(layout.pools):
        olds = [n for n in names if n.startswith(POOLS_OLD_PREFIX)]
        for old in olds:
            fresh = POOLS_FRESH_PREFIX + old[len(POOLS_OLD_PREFIX) :]
            if fresh in names:  # the swap starts once the fresh pools are complete: finish it
                os.replace(layout.root / fresh, layout.pools)
                done.append(Leftover(fresh, f"complete, swapped in as {POOLS_DIR}/"))
            else:
                os.replace(layout.root / old, layout.pools)
                done.append(Leftover(old, f"put back as {POOLS_DIR}/"))
            break
    for name in _names(layout.root):
        if name.startswith((POOLS_FRESH_PREFIX, POOLS_OLD_PREFIX)):
            remove(layout.root / name)
            done.append(Leftover(name, "left by a reindex: removed"))
    return done


def read_fingerprint(layout: Layout, folder: Path) -> str | None:
    """The fingerprint a trajectory folder was written with; None when missing or planted (a link, a FIFO)."""
    try:
        return layout.read_text(folder / FINGERPRINT_FILE).strip()
    except (OSError, RunbookError):
        return None


def remove(path: Path) -> None:
    """A folder and what it holds, or a file; a link is removed itself, never followed."""
    if path.is_symlink() or (os.path.lexists(path) and not path.is_dir()):
        path.unlink()
    else:
        shutil.rmtree(path, ignore_errors=True)


def _manifest(layout: Layout) -> dict | None:
    try:
        return core_pools.read_manifest(layout.pools, layout.open)
    except (core_pools.PoolError, RunbookError, OSError, ValueError):
        return None  # unreadable pools are `runbook reindex`'s business, not a crash's


def _names(folder: Path) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
