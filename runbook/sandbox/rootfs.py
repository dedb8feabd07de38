"""The offline base: a Debian root filesystem built with debootstrap from the host's own apt mirror, kept as a
tarball under ~/.cache/runbook so later builds skip the ~35 s download."""

from __future__ import annotations

import glob
import hashlib
import os
import platform
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import SandboxError

Log = Callable[[str], None]

PRUNE = (
    "var/cache/apt/archives/*.deb",
    "var/cache/apt/*.bin",
    "var/lib/apt/lists/*",
    "var/log/*",
    "usr/share/doc/*",
    "usr/share/man/*",
    "usr/share/info/*",
    "usr/share/locale/*",
)
"""Paths (globs under the rootfs) the sandbox never reads: ~130 MB of 270 MB."""


@dataclass(frozen=True)
class RootfsSpec:
    """What the offline base image holds."""

    suite: str = "bookworm"
    """Debian release; bookworm's python3 is 3.11, like the python image the Dockerfile pulls."""
    variant: str = "minbase"
    """debootstrap variant: essential packages and apt only."""
    packages: tuple[str, ...] = ("python3", "python3-pil", "python3-numpy", "ripgrep", "coreutils")
    """Installed on top (bash, util-linux and passwd come with minbase): python3-pil lets a query compare a
    question's image with the stored screenshots; python3-numpy lets `recall` read method R's pools."""

    def key(self) -> str:
        """Names the tarball and the imported base image; changes when anything that shapes the rootfs changes."""
        text = "|".join([self.suite, self.variant, ",".join(self.packages), platform.machine(), *PRUNE])
        return hashlib.sha256(text.encode()).hexdigest()[:12]


def cache_dir() -> Path:
    default = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "runbook"
    path = Path(os.environ.get("RUNBOOK_CACHE_DIR") or default)
    path.mkdir(parents=True, exist_ok=True)
    return path


def tarball_path(spec: RootfsSpec) -> Path:
    return cache_dir() / f"sandbox-rootfs-{spec.suite}-{spec.key()}.tar"


def apt_mirror(suite: str, apt_dir: Path = Path("/etc/apt")) -> str:
    """The Debian mirror this machine's apt uses (env RUNBOOK_DEBIAN_MIRROR overrides), read at run time."""
    if os.environ.get("RUNBOOK_DEBIAN_MIRROR"):
        return os.environ["RUNBOOK_DEBIAN_MIRROR"]
    entries = _apt_entries(apt_dir)
    release = suite.split("-")[0]
    # the plain release suite on a main archive first (not -security, not -updates, which lack a full release)
    for uri, suites, components in entries:
        if suite in suites and "main" in components:
            return uri
    for uri, suites, components in entries:
        if any(s.startswith(release) for s in suites) and "security" not in uri and "main" in components:
            return uri
    for uri, _suites, _components in entries:
        if re.search(r"/debian/?$", uri):
            return uri
    raise SandboxError(
        f"no Debian mirror found in {apt_dir}/sources.list or {apt_dir}/sources.list.d/; set "
        "RUNBOOK_DEBIAN_MIRROR to one (e.g. http://deb.debian.org/debian)"
    )


def _apt_entries(apt_dir: Path) -> list[tuple[str, list[str], list[str]]]:
    """(uri, suites, components) of every enabled `deb` source, in both the one-line and the deb822 format."""
    entries: list[tuple[str, list[str], list[str]]] = []
    for path in [str(apt_dir / "sources.list"), *sorted(glob.glob(str(apt_dir / "sources.list.d" / "*.list")))]:
        for line in _read(path).splitlines():
            words = re.sub(r"\[[^\]]*\]", " ", line.split("#", 1)[0]).split()  # drop [arch=...] options
            if len(words) >= 3 and words[0] == "deb":
                entries.append((words[1], [words[2]], words[3:]))
    for path in sorted(glob.glob(str(apt_dir / "sources.list.d" / "*.sources"))):
        for stanza in re.split(r"\n\s*\n", _read(path)):
            fields: dict[str, list[str]] = {}
            for line in stanza.splitlines():
                if ":" in line and not line.startswith(("#", " ", "\t")):
                    name, value = line.split(":", 1)
                    fields[name.strip().lower()] = value.split()
            if "deb" in fields.get("types", []) and fields.get("enabled", ["yes"])[0] != "no":
                for uri in fields.get("uris", []):
                    entries.append((uri, fields.get("suites", []), fields.get("components", [])))
    return entries


def _read(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def build_tarball(spec: RootfsSpec, log: Log) -> Path:
    """The cached rootfs tarball, running debootstrap first if there is none."""
    final = tarball_path(spec)
    if final.is_file():
        log(f"rootfs: cached {final} ({final.stat().st_size / 1e6:.0f} MB)")
        return final
    if os.geteuid() != 0:
        raise SandboxError(
            "building the sandbox offline runs debootstrap, which needs root: "
            "run `sudo runbook sandbox build` once (later builds reuse the cached rootfs)"
        )
    if not shutil.which("debootstrap"):
        raise SandboxError(
            "debootstrap is missing: apt-get install -y debootstrap (or run on a host that can "
            "pull python:3.11-slim-bookworm)"
        )
    mirror = apt_mirror(spec.suite)
    work = cache_dir() / f"rootfs-build-{spec.key()}"
    _remove_tree(work)
    debs = cache_dir() / "debs"
    debs.mkdir(exist_ok=True)
    root = work / "rootfs"
    cmd = [
        "debootstrap",
        f"--variant={spec.variant}",
        f"--include={','.join(spec.packages)}",
        f"--cache-dir={debs}",
        spec.suite,
        str(root),
        mirror,
    ]
    log(f"rootfs: debootstrap {spec.suite} from {mirror} (~35 s the first time)")
    started = time.monotonic()
    try:
        for attempt in (1, 2):  # one retry: a dropped connection to the mirror is the usual failure
            result = subprocess.run(cmd, capture_output=True, text=True)
            if result.returncode == 0:
                break
            tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-8:])
            if attempt == 2:
                raise SandboxError(
                    f"debootstrap failed (exit {result.returncode}); last lines:\n{tail}\n"
                    f"check that {mirror} is reachable, or set RUNBOOK_DEBIAN_MIRROR"
                )
            log(f"rootfs: debootstrap failed, retrying once: {tail.splitlines()[-1] if tail else ''}")
            _remove_tree(work)
        log(f"rootfs: debootstrap took {time.monotonic() - started:.1f} s")
        for pattern in PRUNE:
            for path in glob.glob(str(root / pattern)):
                shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.unlink(path)
        partial = final.with_suffix(".tar.partial")
        subprocess.run(
            ["tar", "-C", str(root), "--numeric-owner", "-cf", str(partial), "."], check=True, capture_output=True
        )
        partial.rename(final)  # a half-written tarball never looks cached
        log(f"rootfs: cached {final} ({final.stat().st_size / 1e6:.0f} MB)")
        return final
    finally:
        _remove_tree(work)


def _remove_tree(path: Path) -> None:
    """rmtree, after unmounting anything a failed debootstrap left mounted inside (proc, sys): rmtree would
    otherwise walk into them."""
    if not path.exists():
        return
    prefix = str(path.resolve()) + "/"
    mounts = [line.split()[1] for line in _read("/proc/self/mounts").splitlines() if len(line.split()) > 1]
    for mount in sorted((m for m in mounts if m.startswith(prefix)), key=len, reverse=True):
        subprocess.run(["umount", "-l", mount], capture_output=True)
    shutil.rmtree(path, ignore_errors=True)
