"""How a replay's child is isolated: by the kernel (bubblewrap), or by in-process hooks only.

``kernel`` (the default) starts the child inside ``bwrap`` (bubblewrap, what Flatpak uses):

- its own network namespace: no interface but an empty loopback, no route anywhere;
- its own PID namespace (``--unshare-pid``, ``--die-with-parent``): it sees only its own
  processes, cannot signal any other, and everything it starts dies with it;
- its own IPC and UTS namespaces, a new terminal session, every capability dropped and
  ``no_new_privs`` (bwrap sets it), so nothing can raise a limit or mount anything;
- a filesystem built from read-only binds of what the agent's code needs to import (the
  system's ``/usr``, the Python installation, every import path, the agent's packages) and
  nothing else: the rest of ``$HOME`` and the disk is absent, and the store, its WAL and
  every source the store was imported from are masked where an import path would show
  them. Writable: only the replay's work directory, and a private, size-capped ``/tmp``;
- no Unix-domain sockets (a seccomp filter, :mod:`debugger.replay.seccomp`): a socket file
  in a visible directory could otherwise be connected to;
- a cleared environment (:func:`environment`).

``hooks`` is the weaker mode: the child runs as a plain process with the same environment
and limits, and only the in-process guard (:mod:`debugger.replay.guard`) stands between the
agent and the world; code that goes around Python (a C driver, ctypes) is not stopped.

In both modes hard resource limits (soft = hard) are set before the child's ``exec``, so
nothing in it can raise them (:func:`set_limits`).
"""

from __future__ import annotations

import contextlib
import glob
import os
import resource
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path

from debugger.errors import ReplayError

ISOLATIONS = ("kernel", "hooks")
DEFAULT_ISOLATION = "kernel"
FILE_LIMIT_MB = 1024
"""Largest file the child may write (RLIMIT_FSIZE)."""
OPEN_FILES = 1024
"""Descriptors the child may hold (RLIMIT_NOFILE)."""
PROCESSES = 1024
"""RLIMIT_NPROC: counted per user by the kernel, and not enforced for root (the PID
namespace then bounds how long a replay's processes live, not how many there are)."""
TMP_MB = 256
"""Size of the private ``/tmp`` and ``/dev/shm`` (memory-backed, so capped)."""

_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "passwd",
        "group", "nsswitch.conf", "hosts", "ssl", "alternatives", "os-release",
        "mime.types")  # fmt: skip
"""What of /etc a Python program may look at; no secrets (no shadow, no credentials)."""
_NEVER_WHOLE = ("/", "/tmp", "/dev", "/proc", "/run", "/var", "/home", "/root")
"""Never bound whole, even when on the import path (a script run from /tmp puts it there):
what the agent needs below them is bound on its own."""
_SECRETS = (".env", ".envrc", ".pgpass", ".netrc", ".git-credentials", ".pypirc", ".npmrc",
            ".ssh", ".aws", ".azure", ".gnupg", ".docker", ".kube", ".config/gcloud")  # fmt: skip
"""Credentials a project or home directory keeps next to code: masked at the top of every
directory the sandbox shows (the replay has no network to use them, and its agent's state
lands in the store and the report)."""
_LOCALE = ("LANG", "LC_ALL", "LC_CTYPE", "TZ")


class IsolationUnavailable(ReplayError):
    """Kernel isolation cannot be had here; the replay refuses to start."""

    title = "Kernel isolation is not available"
    exit_code = 2


class SandboxOptionError(ReplayError):
    """An isolation option that cannot be honoured as given (bad input)."""

    title = "Cannot set up the replay"
    exit_code = 2


_WEAKER = "or pass --isolation=hooks (isolation='hooks') for the weaker in-process guard"


def check_available(isolation: str) -> None:
    """Refuse early, in one line, when ``isolation`` cannot be provided here.

    Raises:
        IsolationUnavailable: not Linux, or bubblewrap is not installed.
        SandboxOptionError: an unknown isolation name.
    """
    if isolation not in ISOLATIONS:
        raise SandboxOptionError(f"unknown isolation {isolation!r}", "use kernel or hooks")
    if isolation == "hooks":
        return
    if not sys.platform.startswith("linux"):
        raise IsolationUnavailable(
            f"kernel isolation needs Linux namespaces (bubblewrap); this is {sys.platform}",
            f"run the replay on Linux (a container or VM will do), {_WEAKER}",
        )
    if shutil.which("bwrap") is None:
        raise IsolationUnavailable(
            "kernel isolation needs bubblewrap (bwrap), which is not installed",
            f"install it (apt-get install bubblewrap, dnf install bubblewrap), {_WEAKER}",
        )


def unavailable_from(stderr_line: str) -> IsolationUnavailable:
    """The error for bwrap failing to build the sandbox (user namespaces disabled, ...)."""
    return IsolationUnavailable(
        f"bubblewrap could not create the sandbox: {stderr_line.strip()[:200]}",
        "unprivileged user namespaces may be disabled (sysctl "
        "kernel.unprivileged_userns_clone=1, or an AppArmor profile for bwrap on Ubuntu), "
        + _WEAKER,
    )


def environment(import_path: list[str], home: str, passed: Iterable[str] = ()) -> dict[str, str]:
    """The child's whole environment: an allow-list, plus the ``--env`` names passed.

    ``passed`` holds ``NAME`` (copied from this environment) or ``NAME=VALUE``.

    Raises:
        SandboxOptionError: a ``NAME`` that is not set here.
    """
    bindir = str(Path(sys.executable).parent)
    env = {
        "PATH": os.pathsep.join(dict.fromkeys([bindir, "/usr/local/bin", "/usr/bin", "/bin"])),
        "PYTHONPATH": os.pathsep.join(import_path),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "PYTHONNOUSERSITE": "1",
        "HOME": home,
        "TMPDIR": home,
        "TEMP": home,
        "TMP": home,
    }
    env.update({k: os.environ[k] for k in _LOCALE if k in os.environ})
    for item in passed:
        name, eq, value = item.partition("=")
        if not name.isidentifier():
            raise SandboxOptionError(f"--env {item!r} is not NAME or NAME=VALUE", "name a variable")
        if not eq:
            if name not in os.environ:
                raise SandboxOptionError(
                    f"--env {name}: {name} is not set in this environment",
                    f"set it first, or pass --env {name}=VALUE",
                )
            value = os.environ[name]
        env[name] = value
    return env


def import_path() -> list[str]:
    """The parent's import path minus the installation's own, which the child's interpreter
    finds by itself. A user site directory stays: the child's ``$HOME`` is not the user's."""
    paths = [str(Path(p or os.getcwd()).resolve()) for p in sys.path if isinstance(p, str)]
    prefixes = tuple(
        os.path.join(p, "lib") + os.sep for p in {sys.base_prefix, sys.prefix, sys.exec_prefix}
    )
    return [
        p
        for p in dict.fromkeys(paths)
        if os.path.isdir(p) and not (p + os.sep).startswith(prefixes)
    ]


def set_limits(memory_mb: int, cpu_seconds: int) -> None:
    """Hard limits, soft = hard, for the process about to ``exec`` the child.

    Runs between fork and exec (``preexec_fn``): only calls into the resource module.
    Without CAP_SYS_RESOURCE (dropped in the sandbox; never held by a user) a hard limit
    cannot be raised again.
    """
    mb = 1024 * 1024
    for which, value in (
        (resource.RLIMIT_AS, memory_mb * mb),
        (resource.RLIMIT_CPU, cpu_seconds),
        (resource.RLIMIT_FSIZE, FILE_LIMIT_MB * mb),
        (resource.RLIMIT_NOFILE, OPEN_FILES),
        (resource.RLIMIT_NPROC, PROCESSES),
        (resource.RLIMIT_CORE, 0),
    ):
        _, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))


def _covered(path: Path, roots: list[Path]) -> bool:
    return any(path == r or r in path.parents for r in roots)


def readable_roots(extra: Iterable[str]) -> list[Path]:
    """What the child sees read-only besides the system: Python and every import root."""
    exe = Path(sys.executable)
    found = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix), exe.parent,
             exe.resolve().parent.parent]  # fmt: skip
    found += [Path(p or os.getcwd()) for p in sys.path if isinstance(p, str)]
    found += [Path(p) for p in extra]
    roots: list[Path] = []
    never = {Path(p) for p in _NEVER_WHOLE}
    with contextlib.suppress(RuntimeError):  # no home to find
        never.add(Path.home().resolve())  # a notebook started there puts it on the path
    candidates = {q.resolve() for q in found if q.exists()} - never
    for p in sorted(candidates, key=lambda q: len(q.parts)):
        if not _covered(p, roots) and not _covered(p, [Path(s) for s in _SYSTEM]):
            roots.append(p)
    return roots


def bwrap_command(
    argv: list[str],
    *,
    writable: Path,
    readable: list[Path],
    hidden: Iterable[Path],
    env: dict[str, str],
    seccomp_fd: int | None = None,
) -> list[str]:
    """The ``bwrap`` command line that runs ``argv`` in the sandbox described above
    (``seccomp_fd``: a descriptor to read a seccomp program from, :mod:`.seccomp`)."""
    # the bwrap check_available found on this PATH (the child's own PATH is another)
    cmd = [shutil.which("bwrap") or "bwrap", "--unshare-net", "--unshare-pid",
           "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent",
           "--new-session", "--cap-drop", "ALL", "--hostname", "stepscope-replay"]  # fmt: skip
    for d in _SYSTEM:
        if os.path.islink(d):
            cmd += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            cmd += ["--ro-bind", d, d]
    for name in _ETC:
        cmd += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    size = str(TMP_MB * 1024 * 1024)
    # the private tmpfs first: binds below /tmp (an import path, the work directory) go on it
    # /proc read-only: its sys/ holds the host's kernel settings (kernel.core_pattern runs a
    # program as the host's root), writable by uid 0 whatever the capabilities
    cmd += ["--proc", "/proc", "--remount-ro", "/proc", "--dev", "/dev", "--size", size,
            "--tmpfs", "/dev/shm", "--size", size, "--tmpfs", "/tmp"]  # fmt: skip
    for root in readable:
        cmd += ["--ro-bind", str(root), str(root)]
    later: list[str] = []
    emptied: list[Path] = []
    hidden = [*hidden, *secret_paths(readable)]
    for path in sorted(set(hidden), key=lambda p: len(p.parts)):
        if not _covered(path, readable) or _covered(path, emptied) or not path.exists():
            continue
        if path.is_dir():  # emptied; read-only once the work directory is bound below it
            cmd += ["--tmpfs", str(path)]
            later += ["--remount-ro", str(path)]
            emptied.append(path)
        else:
            cmd += ["--ro-bind", "/dev/null", str(path)]
    cmd += ["--bind", str(writable), str(writable), *later, "--remount-ro", "/", "--clearenv"]
    for key, value in env.items():
        cmd += ["--setenv", key, value]
    if seccomp_fd is not None:
        cmd += ["--seccomp", str(seccomp_fd)]
    return [*cmd, "--chdir", str(writable), "--", *argv]


def secret_paths(roots: Iterable[Path]) -> list[Path]:
    """The credentials files and directories (``_SECRETS``, ``.env.*``) at the top of
    ``roots``, to be masked."""
    found = []
    for root in roots:
        found += [root / name for name in _SECRETS if (root / name).exists()]
        found += [Path(p) for p in glob.glob(str(root / ".env.*"))]
    return [p.resolve() for p in found]


def hidden_paths(
    store_path: str, sources: Iterable[str], replays: Path | None = None
) -> list[Path]:
    """The store and the sources it was imported from, with their journal files, and the
    store's replays directory (earlier replays' inputs are the store's data too)."""
    found: list[Path] = [replays.resolve()] if replays is not None and replays.is_dir() else []
    for location in [store_path, *sources]:
        if not location or "://" in location or location == ":memory:":
            continue
        matches = glob.glob(location) if any(c in location for c in "*?[") else [location]
        for path in (Path(m).expanduser() for m in matches):
            found += _with_journals(path)
    return found


def _with_journals(path: Path) -> list[Path]:
    journals = [path.with_name(path.name + s) for s in (".wal", "-wal", "-shm", "-journal")]
    return [p.resolve() for p in (path, *journals) if p.exists()]


def module_roots(names: Iterable[str | None]) -> list[str]:
    """Where the named modules' top-level packages live (found, not imported).

    An editable install maps a package outside every import path; its directory must be
    visible in the sandbox for the child to import it.
    """
    import importlib.util

    roots = []
    for name in names:
        top = (name or "").partition(":")[0].split(".")[0]
        if not top:
            continue
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            continue
        if spec is None:
            continue
        if spec.submodule_search_locations:
            roots += [str(p) for p in spec.submodule_search_locations]
        elif spec.origin and os.path.isabs(spec.origin):
            roots.append(str(Path(spec.origin).parent))
    return roots
