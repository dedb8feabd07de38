"""The image tag follows the programs and the Dockerfile; the build context holds only them; the mirror comes from
apt."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

import pytest

from runbook.errors import SandboxError
from runbook.sandbox.image import build_context, ensure_image, image_tag
from runbook.sandbox.rootfs import RootfsSpec, apt_mirror
from runbook.sandbox.sources import content_hash, core_dir, dockerfile, iter_files, programs_dir


@pytest.fixture
def checkout(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "checkout"
    (root / "programs").mkdir(parents=True)
    (root / "programs" / "search").write_text("#!/bin/sh\n")
    shutil.copy(dockerfile(), root / "Dockerfile")
    (root / "README.md").write_text("not part of the image\n")
    monkeypatch.setenv("RUNBOOK_SOURCE_DIR", str(root))
    return root


def test_tag_changes_with_tools_and_dockerfile_only(checkout):
    first = image_tag()
    assert first.startswith("runbook-sandbox:") and image_tag() == first
    (checkout / "README.md").write_text("edited\n")
    (checkout / "programs" / "__pycache__").mkdir()
    (checkout / "programs" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert image_tag() == first
    (checkout / "programs" / "search").chmod(0o755)
    assert image_tag() != first
    second = content_hash()
    (checkout / "Dockerfile").write_text("FROM scratch\n")
    assert content_hash() != second


def test_build_context_holds_only_the_programs_the_core_library_and_the_dockerfile(checkout):
    with tarfile.open(fileobj=build_context()) as tar:
        names = tar.getnames()
    core = {f"core/{path.relative_to(core_dir()).as_posix()}" for path in iter_files(core_dir())}
    assert "core/question.py" in core and not any("__pycache__" in name for name in core)
    assert sorted(names) == sorted({"Dockerfile", "programs", "programs/search", "core", *core})


def test_missing_sources_say_what_to_set(tmp_path, monkeypatch):
    monkeypatch.setenv("RUNBOOK_SOURCE_DIR", str(tmp_path))
    with pytest.raises(SandboxError, match="RUNBOOK_SOURCE_DIR"):
        image_tag()


def test_mirror_from_deb822_and_one_line_sources(tmp_path, monkeypatch):
    monkeypatch.delenv("RUNBOOK_DEBIAN_MIRROR", raising=False)
    apt = tmp_path / "apt"
    (apt / "sources.list.d").mkdir(parents=True)
    (apt / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\nComponents: main\n\n"
        "Types: deb\n# a comment\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\n"
        "Components: main\n"
    )
    assert apt_mirror("bookworm", apt) == "http://mirror.example/debian"
    (apt / "sources.list.d" / "debian.sources").unlink()
    (apt / "sources.list").write_text(
        "# deb http://old/debian bookworm main\ndeb [arch=amd64] http://one.example/debian bookworm main contrib\n"
    )
    assert apt_mirror("bookworm", apt) == "http://one.example/debian"
    monkeypatch.setenv("RUNBOOK_DEBIAN_MIRROR", "http://override/debian")
    assert apt_mirror("bookworm", apt) == "http://override/debian"


def test_no_mirror_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("RUNBOOK_DEBIAN_MIRROR", raising=False)
    with pytest.raises(SandboxError, match="RUNBOOK_DEBIAN_MIRROR"):
        apt_mirror("bookworm", tmp_path)


def test_rootfs_key_follows_the_package_list():
    assert RootfsSpec().key() != RootfsSpec(packages=("python3",)).key()
    assert RootfsSpec().key() == RootfsSpec().key()


@pytest.mark.docker
def test_image_has_python_ripgrep_tools_core_and_user_1000(docker_engine):
    engine = docker_engine[0]
    image = ensure_image(engine)
    out = engine.client.containers.run(
        image,
        [
            "bash",
            "-c",
            "id -u; python3 --version; python --version; rg --version | head -1; "
            "echo $PATH; echo $PYTHONPATH; ls /opt/runbook/lib/runbook; "
            "python3 -c 'import runbook.core.question as q; print(q.__file__)'; "
            "ls /opt/runbook/tools",
        ],
        remove=True,
        network_mode="none",
    ).decode()
    lines = out.splitlines()
    assert lines[0] == "1000" and lines[1].startswith("Python 3") and lines[3].startswith("ripgrep")
    assert lines[4].startswith("/opt/runbook/tools:") and lines[5] == "/opt/runbook/tools:/opt/runbook/lib"
    # nothing of runbook but its core library: the namespace package holds `core` alone
    assert lines[6] == "core" and lines[7] == "/opt/runbook/lib/runbook/core/question.py"
    shipped = sorted(name for name in lines[8:] if name != "__pycache__")  # the image compiles rbk ahead
    assert shipped == sorted(p.name for p in programs_dir().iterdir() if p.name != "__pycache__")
