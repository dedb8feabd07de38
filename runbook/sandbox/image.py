"""The sandbox image: tagged by the hash of its inputs (the Dockerfile and the programs), built on a pullable
Python base when a registry answers, else from a Debian rootfs made offline (see rootfs.py)."""

from __future__ import annotations

import io
import sys
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath

from ..errors import SandboxError
from .engine import Engine
from .rootfs import RootfsSpec, build_tarball
from .sources import DOCKERFILE, content_hash, image_inputs

Log = Callable[[str], None]

IMAGE_REPO = "runbook-sandbox"
BASE_REPO = "runbook-sandbox-base"
ONLINE_BASE = "python:3.11-slim-bookworm"
"""The Dockerfile's default base; bookworm, so both ways ship the same Debian python3 generation and ripgrep."""
METHODS = ("auto", "dockerfile", "offline")


@dataclass(frozen=True)
class BuildReport:
    """What `build_image` did."""

    tag: str
    method: str
    """"existing" (already built), "dockerfile" (pulled base) or "offline" (debootstrap rootfs)."""
    seconds: float
    detail: str = ""


def stderr_log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def image_tag() -> str:
    return f"{IMAGE_REPO}:{content_hash()}"


def image_exists(engine: Engine, tag: str) -> bool:
    import docker.errors

    try:
        engine.client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def build_image(engine: Engine, *, method: str = "auto", force: bool = False, log: Log = stderr_log) -> BuildReport:
    """Build the image for the current programs and Dockerfile unless it exists; say which way was taken."""
    if method not in METHODS:
        raise SandboxError(f"unknown build method {method!r}; use one of {', '.join(METHODS)}")
    tag = image_tag()
    started = time.monotonic()
    if not force and image_exists(engine, tag):
        return BuildReport(tag, "existing", 0.0, "already built for the current programs and Dockerfile")
    offline_base = f"{BASE_REPO}:{RootfsSpec().key()}"
    if method == "auto" and not image_exists(engine, ONLINE_BASE) and image_exists(engine, offline_base):
        method = "offline"  # built offline before: do not wait on a registry again (it may hang, not just fail)
    if method in ("auto", "dockerfile"):
        pulled, why = _have_online_base(engine, log)
        if pulled:
            _docker_build(engine, tag, ONLINE_BASE, network=None, log=log)
            _remove_stale(engine, tag)
            return BuildReport(tag, "dockerfile", time.monotonic() - started, f"FROM {ONLINE_BASE}")
        if method == "dockerfile":
            raise SandboxError(f"cannot get {ONLINE_BASE}: {why}; use --method offline to build from Debian packages")
        log(f"image: {ONLINE_BASE} is not available ({why}); building offline from Debian packages")
    base = _offline_base(engine, RootfsSpec(), log)
    # the rootfs already has everything the RUN steps would fetch, so the build needs no network
    _docker_build(engine, tag, base, network="none", log=log)
    _remove_stale(engine, tag)
    return BuildReport(tag, "offline", time.monotonic() - started, f"FROM {base} (debootstrap rootfs)")


def ensure_image(engine: Engine, log: Log = stderr_log) -> str:
    """The current image's tag, building it first if it is missing or stale."""
    tag = image_tag()
    if image_exists(engine, tag):
        return tag
    log(f"image: {tag} is missing or stale; building it (once)")
    report = build_image(engine, log=log)
    log(f"image: built {report.tag} via {report.method} in {report.seconds:.1f} s")
    return report.tag


def _have_online_base(engine: Engine, log: Log) -> tuple[bool, str]:
    if image_exists(engine, ONLINE_BASE):
        return True, "present"
    log(f"image: pulling {ONLINE_BASE}")
    try:
        engine.client.images.pull(ONLINE_BASE)
        return True, "pulled"
    except Exception as exc:  # no registry, no DNS, auth: all mean "go offline"
        return False, str(exc).splitlines()[0][:160]


def _offline_base(engine: Engine, spec: RootfsSpec, log: Log) -> str:
    base = f"{BASE_REPO}:{spec.key()}"
    if image_exists(engine, base):
        log(f"image: reusing imported base {base}")
        return base
    tarball = build_tarball(spec, log)
    started = time.monotonic()
    engine.client.api.import_image_from_file(
        str(tarball),
        repository=BASE_REPO,
        tag=spec.key(),
        changes=["ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 'CMD ["bash"]'],
    )
    if not image_exists(engine, base):
        raise SandboxError(f"docker import of {tarball} did not create {base}; see the engine's log")
    log(f"image: imported {base} in {time.monotonic() - started:.1f} s")
    return base


def build_context() -> io.BytesIO:
    """A tar of exactly the image's inputs (what the tag hashes), with the exec bits the programs need."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        added: set[str] = set()
        for path, name in image_inputs():
            for parent in reversed(PurePosixPath(name).parents[:-1]):
                if str(parent) not in added:
                    tar.addfile(_folder_entry(str(parent)))
                    added.add(str(parent))
            tar.add(path, arcname=name, recursive=False)
    buffer.seek(0)
    return buffer


def _folder_entry(name: str) -> tarfile.TarInfo:
    entry = tarfile.TarInfo(name)
    entry.type, entry.mode = tarfile.DIRTYPE, 0o755
    return entry


def _docker_build(engine: Engine, tag: str, base: str, *, network: str | None, log: Log) -> None:
    started = time.monotonic()
    lines: list[str] = []
    stream = engine.client.api.build(
        fileobj=build_context(),
        custom_context=True,
        dockerfile=DOCKERFILE,
        tag=tag,
        buildargs={"BASE": base},
        rm=True,
        forcerm=True,
        decode=True,
        network_mode=network,
        labels={"runbook.sandbox.image": "1"},
    )
    for chunk in stream:
        if "error" in chunk:
            raise SandboxError(f"docker build of {tag} failed: {chunk['error'].strip()}\n" + "".join(lines[-10:]))
        if chunk.get("stream"):
            lines.append(chunk["stream"])
    if not image_exists(engine, tag):
        raise SandboxError(f"docker build did not produce {tag}; last output:\n" + "".join(lines[-10:]))
    log(f"image: docker build {tag} FROM {base} took {time.monotonic() - started:.1f} s")


KEEP_IMAGES = 3
"""Recent images kept besides the new one: another process may be about to start a container from one."""


def _remove_stale(engine: Engine, keep: str) -> None:
    """Drop images built for older programs so they do not pile up; recent ones and ones in use stay."""
    images = sorted(engine.client.images.list(name=IMAGE_REPO), key=lambda i: i.attrs.get("Created", ""), reverse=True)
    for image in [i for i in images if keep not in i.tags][KEEP_IMAGES:]:
        for stale in image.tags:
            try:
                engine.client.images.remove(stale, noprune=False)
            except Exception:
                pass
