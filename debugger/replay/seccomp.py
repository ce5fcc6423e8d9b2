"""A seccomp filter for the kernel sandbox: no Unix-domain sockets, no io_uring, no keyring,
no user namespaces.

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
``unshare`` and ``clone(CLONE_NEWUSER)`` are refused (EPERM), ``clone3`` answers ENOSYS (its
flags are out of a filter's reach; the C library falls back to ``clone``): a user namespace
of its own gives no way out (the mounts it copies stay read-only), but it gives the agent
every capability over it, and with them much of the kernel to attack.

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
    # machine: (AUDIT_ARCH_*, socket, (add_key, request_key, keyctl), unshare, clone)
    "x86_64": (0xC000003E, 41, (248, 249, 250), 272, 56),
    "aarch64": (0xC00000B7, 198, (217, 218, 219), 97, 220),
}
_IO_URING = (425, 426, 427)
"""io_uring_setup, _enter, _register (the same numbers on every architecture)."""
_CLONE3 = 435
_CLONE_NEWUSER = 0x10000000
_X32_BIT = 0x40000000

_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JSET = 0x45  # BPF_JMP | BPF_JSET | BPF_K
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
    audit_arch, nr_socket, keyring, nr_unshare, nr_clone = arch
    # each refused call: "nr == N -> return its errno" (two instructions); clone3 gets
    # ENOSYS so that the C library falls back to clone, whose flags the filter can read
    refused = [(nr, errno.ENOSYS) for nr in (*_IO_URING, _CLONE3)]
    refused += [(nr, errno.EACCES) for nr in keyring] + [(nr_unshare, errno.EPERM)]
    body = []
    for nr, code in refused:
        body += [_insn(_JEQ, nr, 0, 1), _insn(_RET, _ERRNO | code)]
    body += [
        _insn(_JEQ, nr_clone, 0, 4),              # not clone() -> the socket test
        _insn(_LD_W_ABS, _ARG0),
        _insn(_JSET, _CLONE_NEWUSER, 0, 1),       # a new user namespace -> EPERM
        _insn(_RET, _ERRNO | errno.EPERM),
        _insn(_RET, _ALLOW),
        _insn(_JEQ, nr_socket, 0, 2),             # not socket() -> allow
        _insn(_LD_W_ABS, _ARG0),
        _insn(_JEQ, socket.AF_UNIX, 1, 0),        # AF_UNIX -> deny
        _insn(_RET, _ALLOW),
        _insn(_RET, _DENY),
    ]  # fmt: skip
    deny = 4 + len(body) - 1  # the last instruction's index
    head = [
        _insn(_LD_W_ABS, _ARCH_OFFSET),           # 0
        _insn(_JEQ, audit_arch, 0, deny - 2),     # 1: another ABI -> deny
        _insn(_LD_W_ABS, _NR),                    # 2
        _insn(_JGE, _X32_BIT, deny - 4, 0),       # 3: x32 -> deny
    ]  # fmt: skip
    return b"".join(head + body)
