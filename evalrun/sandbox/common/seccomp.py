"""The verifier's shield: no process of the verifier phase may trace or write another's memory.

A verifier runs the agent's code (in children, if it is well written). That code must not reach
the processes above it - the verifier's own deciding process, `verify.sh`, the wrapper or init
that hands the exit status to the harness - and rewrite what they report. On Linux the ways in
are `ptrace`, `process_vm_writev` (and `process_vm_readv`), `pidfd_getfd` and writing
`/proc/<pid>/mem`. This module holds a seccomp filter that makes the four system calls fail with
EPERM; backends install it on every command of the verifier phase (bwrap: `--seccomp`; the
container backends: `LAUNCHER`, run as root before the command drops to its user), and close
`/proc/<pid>/mem` where they can (bwrap remounts /proc read-only for the verifier; in a container
the reporting processes belong to root, which the verifier's user cannot open).

The filter is a classic BPF program, built here rather than with libseccomp so that it needs
nothing installed: it dispatches on the calling convention (`seccomp_data.arch`) and denies the
calls by number for each ABI a kernel of the supported hosts can run: x86_64 (with i386 and x32),
aarch64 (with 32-bit arm) and riscv64. Other architectures get a filter that allows everything -
the shield is then absent, never in the way.
"""

from __future__ import annotations

import itertools
import struct
from dataclasses import dataclass

# seccomp_data offsets and return values (linux/seccomp.h, linux/filter.h)
_NR, _ARCH = 0, 4
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_ALLOW = 0x7FFF0000
_DENY = 0x00050000 | 1  # SECCOMP_RET_ERRNO | EPERM
_X32_BIT = 0x40000000


@dataclass(frozen=True)
class Abi:
    """One calling convention: its audit arch and the numbers of the calls the shield denies
    (ptrace, process_vm_readv, process_vm_writev, pidfd_getfd)."""

    name: str
    audit_arch: int
    denied: tuple[int, ...]


ABIS: tuple[Abi, ...] = (
    Abi("x86_64", 0xC000003E, (101, 310, 311, 438)),
    Abi("i386", 0x40000003, (26, 347, 348, 438)),
    Abi("aarch64", 0xC00000B7, (117, 270, 271, 438)),
    Abi("arm", 0x40000028, (26, 376, 377, 438)),
    Abi("riscv64", 0xC00000F3, (117, 270, 271, 438)),
)


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def no_trace_filter() -> bytes:
    """The filter as the kernel takes it (an array of `struct sock_filter`).

    Layout: one arch test per ABI jumping to that ABI's block, an unknown arch allowed; each
    block loads the call number and jumps to the shared DENY for a denied one. x32 calls (the
    x86_64 arch with bit 30 set in the number) are all denied: nothing evalrun runs uses x32.
    """
    checks = [
        ([(_JGE_K, _X32_BIT)] if abi.name == "x86_64" else []) + [(_JEQ_K, nr) for nr in abi.denied]
        for abi in ABIS
    ]
    # The head (load arch, one test per ABI, allow an unknown arch), then each ABI's block (load
    # the call number, its checks, allow), then the shared DENY.
    *starts, deny_at = itertools.accumulate([2 + len(c) for c in checks], initial=len(ABIS) + 2)
    program = [_insn(_LD_W_ABS, _ARCH)]
    for abi, start in zip(ABIS, starts, strict=True):
        program.append(_insn(_JEQ_K, abi.audit_arch, jt=start - (len(program) + 1)))
    program.append(_insn(_RET_K, _ALLOW))
    for block in checks:
        program.append(_insn(_LD_W_ABS, _NR))
        for code, nr in block:
            program.append(_insn(code, nr, jt=deny_at - (len(program) + 1)))
        program.append(_insn(_RET_K, _ALLOW))
    program.append(_insn(_RET_K, _DENY))
    return b"".join(program)


NO_TRACE_FILTER = no_trace_filter()

# Run as root inside a container: install the filter (when given), drop to uid:gid (when given),
# exec the command. `python3 -I -S`: nothing of the environment, the working folder or site.
# argv: <filter as hex, or ""> <uid or ""> <gid or ""> <command...>
LAUNCHER = r"""
import os, sys
shield, uid, gid, argv = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
if shield:
    try:
        import ctypes
        prog = bytes.fromhex(shield)
        buf = ctypes.create_string_buffer(prog, len(prog))
        class Fprog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
        fprog = Fprog(len(prog) // 8, ctypes.addressof(buf))
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(38, 1, 0, 0, 0) or libc.prctl(22, 2, ctypes.byref(fprog), 0, 0):
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    except (ImportError, OSError) as exc:
        sys.stderr.write("evalrun: the verifier runs without its seccomp shield: %s\n" % exc)
if uid:
    import pwd
    uid, gid = int(uid), int(gid)
    try:
        os.initgroups(pwd.getpwuid(uid).pw_name, gid)
    except KeyError:
        os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
try:
    os.execvp(argv[0], argv)
except OSError as exc:
    sys.stderr.write("evalrun: %s: %s\n" % (argv[0], exc.strerror))
    sys.exit(127 if isinstance(exc, FileNotFoundError) else 126)
"""
