"""The bwrap jail's seccomp program, checked without a jail: the syscall tables against the kernel headers, and the
program's shape."""
from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from runbook.sandbox import seccomp

HEADERS = {"x86_64": Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
           "aarch64": Path("/usr/include/asm-generic/unistd.h")}


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
    insns = [struct.unpack("<HBBI", program[i:i + 8]) for i in range(0, len(program), 8)]
    assert insns[0] == (seccomp.LD_W_ABS, 0, 0, seccomp.ARCH_OFFSET)
    assert insns[1][3] == seccomp.AUDIT_ARCH["x86_64"] and insns[2][3] == seccomp.RET_KILL_PROCESS
    assert insns[-1][3] == seccomp.RET_ALLOW
    refused = {k for code, _, _, k in insns if code == seccomp.JEQ_K}
    assert seccomp.REFUSED["unshare"][0] in refused and seccomp.REFUSED["mount"][0] in refused
    assert seccomp.build_filter("riscv64") is None and not seccomp.describe("riscv64")[0]
