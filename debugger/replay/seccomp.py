"""A seccomp filter for the kernel sandbox: no Unix-domain sockets, no io_uring, no keyring.

The namespaces take the network away, but a Unix socket is a file: one that lives in a
directory the sandbox shows read-only (a database's socket directory on the import path)
can still be connected to, since a read-only mount does not stop ``connect``. This filter
makes ``socket(AF_UNIX, ...)`` fail with EACCES, whatever code calls it (libpq, ctypes).
``socketpair`` (asyncio, multiprocessing pipes) is another system call and stays allowed.

io_uring is refused (ENOSYS, as on a kernel without it; programs fall back to plain
system calls): its ``IORING_OP_SOCKET`` and ``IORING_OP_CONNECT`` make and connect a socket
without the ``socket`` system call this filter looks at. The kernel keyring (``add_key``,
``request_key``, ``keyctl``) is refused (EACCES): it is not namespaced, so the child would
share the keys of the user it runs as with the host, and could leave its own behind.

It is a classic BPF program, passed to bubblewrap (``--seccomp FD``), which installs it in
the child after setting ``no_new_privs``. System calls of another ABI than the native one
(32-bit ``int 0x80`` on x86-64, x32) are refused outright, so the filter cannot be stepped
around. On an architecture not listed here no filter is installed (docs/replay.md says so).
"""

from __future__ import annotations

import errno
import platform
import socket
import struct

_ARCH = {
    # machine: (AUDIT_ARCH_*, socket, the keyring's add_key, request_key, keyctl)
    "x86_64": (0xC000003E, 41, (248, 249, 250)),
    "aarch64": (0xC00000B7, 198, (217, 218, 219)),
}
_IO_URING = (425, 426, 427)
"""io_uring_setup, _enter, _register (the same numbers on every architecture)."""
_X32_BIT = 0x40000000

_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000  # SECCOMP_RET_ALLOW
_ERRNO = 0x00050000  # SECCOMP_RET_ERRNO | errno
_DENY = _ERRNO | errno.EACCES

# offsets in struct seccomp_data: nr, arch, then args[0]'s low 32 bits (little-endian)
_NR, _ARCH_OFFSET, _ARG0 = 0, 4, 16


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def no_unix_sockets(machine: str | None = None) -> bytes | None:
    """The filter's program (``struct sock_filter`` array), or None on another machine."""
    arch = _ARCH.get(machine or platform.machine())
    if arch is None:
        return None
    audit_arch, nr_socket, keyring = arch
    # each refused call: "nr == N -> return its errno" (two instructions)
    refused = [(nr, errno.ENOSYS) for nr in _IO_URING] + [(nr, errno.EACCES) for nr in keyring]
    n = len(refused) * 2
    program = [
        _insn(_LD_W_ABS, _ARCH_OFFSET),           # 0
        _insn(_JEQ, audit_arch, 0, 6 + n),        # 1: another ABI -> deny
        _insn(_LD_W_ABS, _NR),                    # 2
        _insn(_JGE, _X32_BIT, 4 + n, 0),          # 3: x32 -> deny
    ]  # fmt: skip
    for nr, code in refused:
        program += [_insn(_JEQ, nr, 0, 1), _insn(_RET, _ERRNO | code)]
    program += [
        _insn(_JEQ, nr_socket, 0, 2),             # not socket() -> allow
        _insn(_LD_W_ABS, _ARG0),
        _insn(_JEQ, socket.AF_UNIX, 1, 0),        # AF_UNIX -> deny
        _insn(_RET, _ALLOW),
        _insn(_RET, _DENY),
    ]  # fmt: skip
    return b"".join(program)
