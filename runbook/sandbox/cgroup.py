"""A cgroup for one bwrap sandbox: a memory and a process limit for the whole jail, where the host lets us make one.

    group = Cgroup.create("runbook-bwrap-<pid>-<hex>", memory_bytes=..., pids=...)
    group.memory, group.pids      # which limits it holds; group.why says why one is missing
    argv = group.enter(argv)      # runs argv inside it: a shell writes its own pid into cgroup.procs, then execs
    group.remove()                # after the jail ended
    reap_leftovers()              # cgroups whose owner process is gone (it was killed with SIGKILL)

Tried in order: cgroup v2 (a `runbook` folder under the root of the unified hierarchy; needs root and the memory and
pids controllers), then cgroup v1 (the memory and pids hierarchies, under this process's own cgroups; needs write
access there, i.e. root). Without either the jail still runs, with per-process rlimits, and `runbook sandbox check`
says the whole-sandbox limits are NOT ENFORCED.
"""

from __future__ import annotations

import os
import re
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

PREFIX = "runbook-bwrap-"
"""Every sandbox cgroup is named PREFIX<owner pid>-<random hex>, so leftovers of a dead owner can be found."""
ROOT = Path("/sys/fs/cgroup")
V2_PARENT = "runbook"
JAIL_OVERHEAD_PIDS = 2
"""Processes of the jail that are not the calls': the outer bwrap and the init."""
_NAME = re.compile(re.escape(PREFIX) + r"(\d+)-[0-9a-f]+$")


@dataclass
class Cgroup:
    """The cgroup folders of one sandbox (v2: one; v1: one per controller) and the limits they hold."""

    folders: list[Path] = field(default_factory=list)
    memory: bool = False
    pids: bool = False
    how: str = ""
    """e.g. "cgroup v1 (memory, pids)"."""
    why: str = ""
    """Why a limit is missing, when one is."""

    @classmethod
    def create(cls, name: str, *, memory_bytes: int, pids: int, root: Path = ROOT) -> Cgroup:
        """The cgroup `name` with both limits, or as many as the host allows (none: an empty Cgroup saying why)."""
        if (root / "cgroup.controllers").exists():
            return _create_v2(root, name, memory_bytes, pids)
        return _create_v1(root, name, memory_bytes, pids)

    def enter(self, argv: list[str]) -> list[str]:
        if not self.folders:
            return argv
        script = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done; exec "$@"'
        return [
            "/bin/sh",
            "-c",
            script,
            "runbook-cgroup",
            str(len(self.folders)),
            *[str(folder / "cgroup.procs") for folder in self.folders],
            *argv,
        ]

    def remove(self, wait_s: float = 2.0) -> None:
        """Kill what is left in the folders (nothing, normally: the jail ended) and remove them."""
        for folder in self.folders:
            _remove(folder, wait_s)
        self.folders = []


def _write(path: Path, value: str) -> None:
    path.write_text(value)


def _create_v2(root: Path, name: str, memory_bytes: int, pids: int) -> Cgroup:
    parent = root / V2_PARENT
    try:
        for folder in (root, parent):
            if folder is parent:
                parent.mkdir(exist_ok=True)
            enabled = (folder / "cgroup.subtree_control").read_text().split()
            if not {"memory", "pids"} <= set(enabled):
                _write(folder / "cgroup.subtree_control", "+memory +pids")
        folder = parent / name
        folder.mkdir()
    except OSError as exc:
        return Cgroup(
            why=f"cannot make a cgroup v2 folder under {parent} ({exc.strerror or exc}); run as root on a "
            f"host whose cgroup root delegates the memory and pids controllers"
        )
    group = Cgroup([folder], how="cgroup v2")
    try:
        _write(folder / "memory.max", str(memory_bytes))
        if (folder / "memory.swap.max").exists():
            _write(folder / "memory.swap.max", "0")
        group.memory = True
        _write(folder / "pids.max", str(pids + JAIL_OVERHEAD_PIDS))
        group.pids = True
    except OSError as exc:
        group.why = f"cgroup v2 {folder}: {exc.strerror or exc}"
    return group


def own_v1_path(controller: str) -> str | None:
    """This process's cgroup in the v1 hierarchy of `controller`, e.g. "/" or "/user.slice"."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return path
    return None


def _v1_folder(root: Path, controller: str, name: str) -> Path | None:
    own = own_v1_path(controller)
    base = root / controller
    if own is None or not base.is_dir():
        return None
    return base / own.lstrip("/") / name


def _create_v1(root: Path, name: str, memory_bytes: int, pids: int) -> Cgroup:
    group = Cgroup(how="cgroup v1")
    problems = []
    memory = _v1_folder(root, "memory", name)
    if memory is None:
        problems.append("no cgroup v1 memory hierarchy")
    else:
        try:
            memory.mkdir()
            group.folders.append(memory)
            _write(memory / "memory.limit_in_bytes", str(memory_bytes))
            try:  # memory plus swap, where swap accounting is on
                _write(memory / "memory.memsw.limit_in_bytes", str(memory_bytes))
            except OSError:
                pass
            group.memory = True
        except OSError as exc:
            problems.append(f"cannot make {memory} ({exc.strerror or exc}; needs root)")
    task = _v1_folder(root, "pids", name)
    if task is None:
        problems.append("no cgroup v1 pids hierarchy")
    else:
        try:
            task.mkdir()
            group.folders.append(task)
            _write(task / "pids.max", str(pids + JAIL_OVERHEAD_PIDS))
            group.pids = True
        except OSError as exc:
            problems.append(f"cannot make {task} ({exc.strerror or exc}; needs root)")
    group.why = "; ".join(problems)
    if not (group.memory or group.pids):
        group.remove()
        group.how = ""
    return group


def _remove(folder: Path, wait_s: float) -> None:
    deadline = time.monotonic() + wait_s
    while True:
        try:
            for pid in (folder / "cgroup.procs").read_text().split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:  # EBUSY until the killed processes are gone
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)


def _candidate_parents(root: Path) -> list[Path]:
    parents = [root / V2_PARENT]
    for controller in ("memory", "pids"):
        own = own_v1_path(controller)
        if own is not None:
            parents.append(root / controller / own.lstrip("/"))
    return parents


def find(name: str, root: Path = ROOT) -> list[Path]:
    """The folders of the sandbox cgroup `name` that exist."""
    return [parent / name for parent in _candidate_parents(root) if (parent / name).is_dir()]


def owner_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True


def reap_leftovers(root: Path = ROOT) -> int:
    """Remove sandbox cgroups whose owning process is gone; never one of a live process. Best effort."""
    removed = 0
    for parent in _candidate_parents(root):
        try:
            children = list(parent.iterdir())
        except OSError:
            continue
        for folder in children:
            match = _NAME.match(folder.name)
            if match and folder.is_dir() and not owner_alive(int(match.group(1))):
                _remove(folder, 1.0)
                removed += not folder.exists()
    return removed
