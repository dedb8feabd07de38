"""A seccomp filter for the bwrap jail, written as a classic BPF program (no libseccomp, no new dependency).

bwrap drops capabilities, but an unprivileged process may still create a user namespace, become root inside it and
mount a tmpfs that takes host memory outside every limit, or reach kernel interfaces docker's default profile
closes (keyrings, bpf, io_uring, ptrace). The filter refuses those with EPERM; everything else is allowed.

    program = build_filter()        # bytes: struct sock_filter[], for `bwrap --seccomp FD`
    program is None                 # an architecture without a table here: the jail runs without a filter
"""

from __future__ import annotations

import platform
import struct

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
"""AUDIT_ARCH_* of the architectures the tables below are for (linux/audit.h)."""

X32_BIT = 0x40000000
"""x86_64 syscalls with this bit set are the x32 ABI: same kernel entry, other numbers, so refuse them all."""

NAMESPACE_FLAGS = 0x7E020000
"""CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET."""

# numbers from asm/unistd_64.h (x86_64) and asm-generic/unistd.h (aarch64); tests compare them with the headers
REFUSED = {
    #                    x86_64 aarch64
    "unshare": (272, 97),
    "setns": (308, 268),
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "chroot": (161, 51),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "move_mount": (429, 429),
    "open_tree": (428, 428),
    "mount_setattr": (442, 442),
    "keyctl": (250, 219),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "bpf": (321, 280),
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "pidfd_getfd": (438, 438),
    "kcmp": (312, 272),
    "perf_event_open": (298, 241),
    "userfaultfd": (323, 282),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "fanotify_init": (300, 262),
    "open_by_handle_at": (304, 265),
    "name_to_handle_at": (303, 264),
    "kexec_load": (246, 104),
    "kexec_file_load": (320, 294),
    "init_module": (175, 105),
    "finit_module": (313, 273),
    "delete_module": (176, 106),
    "swapon": (167, 224),
    "swapoff": (168, 225),
    "reboot": (169, 142),
    "syslog": (103, 116),
    "acct": (163, 89),
    "quotactl": (179, 60),
    "quotactl_fd": (443, 443),
    "lookup_dcookie": (212, 18),
    "vhangup": (153, 58),
    "settimeofday": (164, 170),
    "clock_settime": (227, 112),
    "clock_adjtime": (305, 266),
    "adjtimex": (159, 171),
}
CLONE = (56, 220)
"""clone: allowed unless its flags (argument 0 on both architectures) ask for a new namespace."""
CLONE3 = (435, 435)
"""clone3 passes its flags in memory a filter cannot read: ENOSYS makes glibc fall back to clone."""

EPERM, ENOSYS = 1, 38
RET_KILL_PROCESS, RET_ERRNO, RET_ALLOW = 0x80000000, 0x00050000, 0x7FFF0000
LD_W_ABS, JEQ_K, JGE_K, JSET_K, RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
NR_OFFSET, ARCH_OFFSET, ARG0_OFFSET = 0, 4, 16
"""Offsets in struct seccomp_data (nr, arch, args[0]'s low 32 bits on these little-endian machines)."""


def machine() -> str:
    name = platform.machine()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(name.lower(), name)


def _insn(code: int, k: int = 0, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def build_filter(arch: str | None = None) -> bytes | None:
    """The filter for `arch` (default: this machine's), or None when there is no syscall table for it."""
    arch = arch or machine()
    if arch not in AUDIT_ARCH:
        return None
    column = 0 if arch == "x86_64" else 1
    refuse_eperm = _insn(RET_K, RET_ERRNO | EPERM)
    program = [
        _insn(LD_W_ABS, ARCH_OFFSET),
        _insn(JEQ_K, AUDIT_ARCH[arch], jt=1),  # another ABI on the same kernel (i386, arm32) has other numbers
        _insn(RET_K, RET_KILL_PROCESS),
        _insn(LD_W_ABS, NR_OFFSET),
    ]
    if arch == "x86_64":
        program += [_insn(JGE_K, X32_BIT, jf=1), _insn(RET_K, RET_KILL_PROCESS)]
    for numbers in REFUSED.values():
        program += [_insn(JEQ_K, numbers[column], jf=1), refuse_eperm]
    program += [_insn(JEQ_K, CLONE3[column], jf=1), _insn(RET_K, RET_ERRNO | ENOSYS)]
    program += [
        _insn(JEQ_K, CLONE[column], jf=3),
        _insn(LD_W_ABS, ARG0_OFFSET),
        _insn(JSET_K, NAMESPACE_FLAGS, jf=1),
        refuse_eperm,
        _insn(RET_K, RET_ALLOW),
    ]
    return b"".join(program)


def describe(arch: str | None = None) -> tuple[bool, str]:
    """(whether a filter can be built here, what it does or why not), for `runbook sandbox check`."""
    arch = arch or machine()
    if arch not in AUDIT_ARCH:
        return False, f"no syscall table for {arch} (only {', '.join(AUDIT_ARCH)})"
    return True, (
        f"seccomp ({arch}): EPERM for {len(REFUSED)} syscalls (namespaces, mounts, keyrings, bpf, "
        f"ptrace, io_uring, ...) and for clone with namespace flags"
    )
