"""The bwrap jail's seccomp program and cgroups, checked without a jail: the syscall tables against the kernel
headers, the program's shape, and cgroup folders made, entered and reaped."""

from __future__ import annotations

import os
import re
import struct
import subprocess
from pathlib import Path

import pytest

from runbook.sandbox import seccomp
from runbook.sandbox.cgroup import PREFIX, Cgroup, find, reap_leftovers

HEADERS = {
    "x86_64": Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
    "aarch64": Path("/usr/include/asm-generic/unistd.h"),
}


def header_numbers(path: Path) -> dict[str, int]:
    numbers = {}
    for name, value in re.findall(r"#define __NR(?:3264)?_(\w+)\s+(\d+)", path.read_text()):
        numbers.setdefault(name, int(value))
    return numbers


@pytest.mark.parametrize("arch", sorted(seccomp.AUDIT_ARCH))
def test_syscall_numbers_match_the_kernel_headers(arch):
    column = 0 if arch == "x86_64" else 1
    ours = {name: numbers[column] for name, numbers in seccomp.REFUSED.items()}
    ours.update(clone=seccomp.CLONE[column], clone3=seccomp.CLONE3[column])
    if not HEADERS[arch].exists():  # linux-libc-dev absent: the numbers can still not clash
        assert len(set(ours.values())) == len(ours)
        return
    known = header_numbers(HEADERS[arch])
    assert {name: known.get(name) for name in ours} == ours


def test_filter_checks_the_architecture_first_and_allows_by_default():
    program = seccomp.build_filter("x86_64")
    insns = [struct.unpack("<HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    assert insns[0] == (seccomp.LD_W_ABS, 0, 0, seccomp.ARCH_OFFSET)
    assert insns[1][3] == seccomp.AUDIT_ARCH["x86_64"] and insns[2][3] == seccomp.RET_KILL_PROCESS
    assert insns[-1][3] == seccomp.RET_ALLOW
    refused = {k for code, _, _, k in insns if code == seccomp.JEQ_K}
    assert seccomp.REFUSED["unshare"][0] in refused and seccomp.REFUSED["mount"][0] in refused
    assert seccomp.build_filter("riscv64") is None and not seccomp.describe("riscv64")[0]


def test_cgroup_v2_folder_gets_both_limits(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpu memory pids\n")
    (tmp_path / "cgroup.subtree_control").write_text("memory pids\n")
    (tmp_path / "runbook").mkdir()
    (tmp_path / "runbook" / "cgroup.subtree_control").write_text("")
    group = Cgroup.create(f"{PREFIX}1-ab", memory_bytes=128 * 2**20, pids=64, root=tmp_path)
    folder = tmp_path / "runbook" / f"{PREFIX}1-ab"
    assert group.memory and group.pids and group.folders == [folder] and group.how == "cgroup v2"
    assert (folder / "memory.max").read_text() == str(128 * 2**20)
    assert int((folder / "pids.max").read_text()) >= 64
    assert (tmp_path / "runbook" / "cgroup.subtree_control").read_text() == "+memory +pids"
    argv = group.enter(["bwrap", "--", "true"])
    assert (
        argv[:2] == ["/bin/sh", "-c"] and str(folder / "cgroup.procs") in argv and argv[-3:] == ["bwrap", "--", "true"]
    )


def test_without_a_writable_cgroup_it_says_why(tmp_path):
    group = Cgroup.create(f"{PREFIX}1-ab", memory_bytes=2**20, pids=8, root=tmp_path / "none")
    assert not (group.memory or group.pids) and group.folders == [] and "no cgroup v1" in group.why
    assert group.enter(["true"]) == ["true"]


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_leftover_cgroups_of_dead_owners_are_reaped_and_live_ones_kept():
    dead = Cgroup.create(f"{PREFIX}{dead_pid()}-0dead", memory_bytes=64 * 2**20, pids=8)
    live = Cgroup.create(f"{PREFIX}{os.getpid()}-0a11e", memory_bytes=64 * 2**20, pids=8)
    made = dead.folders + live.folders
    try:
        if not dead.folders:  # no cgroup can be made here (not root): there is nothing to leave behind
            assert dead.why and not live.folders
            return
        held = subprocess.Popen(live.enter(["sleep", "30"]))
        reap_leftovers()
        assert all(not folder.exists() for folder in dead.folders)
        assert all(folder.exists() for folder in live.folders) and held.poll() is None
        assert find(live.folders[0].name) == live.folders
        held.kill()
        held.wait()
    finally:
        dead.remove()
        live.remove()
    assert all(not folder.exists() for folder in made)
