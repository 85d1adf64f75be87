"""The verify child's confinement, made of the OS (parent side).

`kverr build --verify` runs a repository's own code: whoever controls the repository controls
that code. The child therefore runs under bubblewrap (Debian's `bubblewrap`; the sandbox
Flatpak uses, a small setuid-free tool kept by the Flatpak and GNOME projects), not under
checks inside the interpreter it confines:

- its own pid, network, IPC and UTS namespaces: no network at all, no process of the host to
  see or signal, and every process it starts dies with it (the namespace's init ends with it);
- its own mount namespace holding only what it reads: the interpreter, kverr, the system
  libraries and git, all read-only, the target repository read-only (so no hook is planted,
  no object rewritten), a fresh /proc and a minimal /dev, and one empty writable scratch
  tmpfs that is also its HOME and TMPDIR; the user's home, /etc, /tmp and the build cache
  are not there;
- an environment cleared down to PATH, HOME, TMPDIR, LANG and the hash seed;
- rlimits (util-linux `prlimit`) on address space, CPU, file size, open files and processes;
- a seccomp filter (x86-64 and arm64) that refuses the system calls a validation never makes
  and kernel exploits favour: ptrace, bpf, io_uring, keyrings, mounts, namespaces, modules;
- no privileges: run by a normal user it is an unprivileged user namespace with further
  namespaces disabled; run by root it drops to `nobody` (util-linux `setpriv`) with an empty
  capability set, since root's process count is not bounded by RLIMIT_NPROC;
- its own session and process group, killed as a whole by the harness, and SIGKILLed by the
  kernel if kverr itself dies (`--die-with-parent`).

Where bubblewrap cannot make these namespaces (not installed, user namespaces disabled),
`--verify` refuses unless the user passes `--trust-repo`, which runs the child unconfined.
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
import site
import struct
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kverr.errors import SourceError

SCRATCH = "/scratch"  # the child's only writable directory (and its HOME and TMPDIR)
NOBODY = 65534
# The host's top-level folders a program needs: the libraries, git and the shell tools.
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf")  # where the loader finds libraries


@dataclass(frozen=True)
class Limits:
    """Each child's rlimits, and the scratch directory's size."""

    address_space: int = 1 << 30  # bytes; a child measures about 70 MB
    cpu_seconds: int = 1800  # over the child's whole life: the harness recycles it sooner
    file_size: int = 64 << 20  # bytes any one file may grow to (stderr included)
    open_files: int = 256
    processes: int = 64  # the child, its git and whatever the revision starts
    scratch: int = 256 << 20  # bytes of the scratch tmpfs


class SandboxUnavailable(SourceError):
    """--verify was asked for and this machine cannot confine the child."""


@functools.lru_cache(maxsize=1)
def unavailable() -> str | None:
    """Why no sandbox can be made here, or None when bubblewrap works."""
    for tool in ("bwrap", "prlimit", "setpriv"):
        if shutil.which(tool) is None:
            package = "bubblewrap" if tool == "bwrap" else "util-linux"
            return f"{tool} is not installed (Debian/Ubuntu: apt-get install {package})"
    try:
        probe = subprocess.run(
            [*_namespaces(), "--ro-bind", "/", "/", "--", "true"],
            capture_output=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap did not run ({exc})"
    if probe.returncode != 0:
        said = probe.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"bwrap cannot make namespaces here ({said[-1] if said else probe.returncode})"
    return None


def require(trust_repo: bool) -> None:
    """Raise SandboxUnavailable unless a sandbox can be made or the user trusts the repo."""
    why = unavailable()
    if why is not None and not trust_repo:
        raise SandboxUnavailable(
            f"--verify runs the repository's own code and this machine cannot confine it: {why}."
            " Install bubblewrap, or pass --trust-repo to run it unconfined."
        )


def _root() -> bool:
    return os.geteuid() == 0


def _namespaces() -> list[str]:
    ns = ["bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
    ns += ["--unshare-cgroup-try", "--die-with-parent", "--new-session"]
    if not _root():  # a user namespace of its own, and no further ones inside it
        ns += ["--unshare-user", "--disable-userns"]
    return ns


def command(
    argv: Sequence[str],
    *,
    reads: Sequence[str | os.PathLike[str]],
    env: dict[str, str],
    limits: Limits = Limits(),
    seccomp_fd: int | None = None,
) -> list[str]:
    """The command line that runs `argv` confined (module doc). `reads`: host paths the
    child reads (the repository, its git dir), bound read-only at the same path;
    `seccomp_fd`: a descriptor holding `seccomp_filter()`, passed to the child."""
    cmd = _namespaces()
    if seccomp_fd is not None:
        cmd += ["--seccomp", str(seccomp_fd)]
    for top in _SYSTEM:
        if os.path.islink(top):
            cmd += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            cmd += ["--ro-bind", top, top]
    for path in _SYSTEM_FILES:
        cmd += ["--ro-bind-try", path, path]
    binds = _outermost([*python_paths(), *map(str, reads)])
    for folder in sorted({a for p in binds for a in map(str, Path(p).parents)} - {"/"}):
        cmd += ["--perms", "0755", "--dir", folder]  # bwrap would make them 0700
    for path in binds:
        cmd += ["--ro-bind", path, path]
    cmd += ["--proc", "/proc", "--dev", "/dev"]
    cmd += ["--perms", "1777", "--size", str(limits.scratch), "--tmpfs", SCRATCH]
    cmd += ["--chdir", SCRATCH, "--clearenv"]
    for key, value in {"HOME": SCRATCH, "TMPDIR": SCRATCH, **env}.items():
        cmd += ["--setenv", key, value]
    if _root():
        cmd += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    cmd.append("--")
    cmd += [
        "prlimit",
        f"--as={limits.address_space}",
        f"--cpu={limits.cpu_seconds}",
        f"--fsize={limits.file_size}",
        f"--nofile={limits.open_files}",
        f"--nproc={limits.processes}",
        "--",
    ]
    if _root():
        cmd += [
            "setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
            "--",
        ]
    return cmd + list(argv)


def python_paths() -> list[str]:
    """What the child's interpreter reads: its prefixes, its site-packages and kverr's
    packages. Never the import path as such (its first entry can be the user's current
    directory), and of a source checkout only its package folders."""
    import kverr

    paths = {sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable))}
    paths.update(site.getsitepackages())
    for location in map(Path, kverr.__path__):
        if (location / "pyproject.toml").is_file():  # a checkout: its stage folders
            paths.update(str(d) for d in location.iterdir() if (d / "__init__.py").is_file())
            paths.add(str(location / "pyproject.toml"))  # how kverr/__init__ knows a checkout
        else:
            paths.add(str(location))
    return [os.path.realpath(p) for p in paths if os.path.exists(p)]


def kverr_root() -> str:
    """The folder that holds the `kverr` package this process runs: the child imports that
    one (PYTHONPATH), not whichever kverr its interpreter would find on its own (a checkout
    under test beside an editable install of another)."""
    import kverr

    return os.path.dirname(os.path.dirname(os.path.realpath(kverr.__file__)))


def _outermost(paths: Sequence[str]) -> list[str]:
    """`paths` without those inside another one (a bind of the outer folder shows them)."""
    kept: list[str] = []
    for path in sorted({str(Path(p).resolve()) for p in paths if p}):
        if path == "/" or any(path == k or path.startswith(k.rstrip("/") + "/") for k in kept):
            continue
        kept.append(path)
    return kept


# ---------------------------------------------------------------- seccomp

# System calls no validation makes, per architecture: tracing other processes, eBPF, io_uring,
# the kernel keyring, mounts and namespaces, kernel modules and kexec, handles that reach past
# a mount namespace. (`setresuid`, which setpriv needs, and clone3, which glibc needs, stay.)
_DENIED = {
    "x86_64": (0xC000003E, [101, 310, 311, 321, 298, 250, 248, 249, 323, 165, 166, 155, 272,
                            308, 246, 320, 175, 313, 176, 425, 426, 427, 304, 303, 169, 167,
                            168, 163, 300, 428, 429, 430, 431, 432, 442]),
    "aarch64": (0xC00000B7, [117, 270, 271, 280, 241, 219, 217, 218, 282, 40, 39, 41, 97, 268,
                             104, 294, 105, 273, 106, 425, 426, 427, 265, 264, 142, 224, 225,
                             89, 262, 428, 429, 430, 431, 432, 442]),
}  # fmt: skip
_LOAD, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06  # BPF_LD|W|ABS, JMP|JEQ|K, JMP|JGE|K, RET|K
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_EPERM, _ENOSYS = 1, 38


def seccomp_filter() -> bytes | None:
    """The classic-BPF program bubblewrap loads (`--seccomp FD`), or None on an architecture
    this table does not know (the other walls stand alone there). A call from another ABI
    (i386 on x86-64, x32) is refused whole: it would name other numbers."""
    arch = _DENIED.get(platform.machine())
    if arch is None:
        return None
    audit_arch, denied = arch
    prog = [(_LOAD, 0, 0, 4), (_JEQ, 1, 0, audit_arch), (_RET, 0, 0, _ERRNO | _ENOSYS)]
    prog.append((_LOAD, 0, 0, 0))  # the call's number
    deny_at = len(prog) + 1 + len(denied) + 1  # after the x32 test, the list and ALLOW
    prog.append((_JGE, deny_at - len(prog) - 1, 0, 0x40000000))  # x32 numbers
    for nr in denied:
        prog.append((_JEQ, deny_at - len(prog) - 1, 0, nr))
    prog += [(_RET, 0, 0, _ALLOW), (_RET, 0, 0, _ERRNO | _EPERM)]
    return b"".join(struct.pack("=HBBI", *ins) for ins in prog)
