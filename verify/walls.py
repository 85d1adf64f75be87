"""The sandbox's walls (child side): no network, no programs, no writes outside the work
directory in the build cache. Applied once per child, before any revision's code runs."""

from __future__ import annotations

import builtins
import io
import os
import socket
import subprocess
from pathlib import Path
from typing import Any


def _refuse(what: str):
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(f"kverr verify sandbox: {what} is disabled")

    return refuse


def close_walls(workdir: Path) -> None:
    """No network, no programs, no writes outside `workdir` (the build cache's temp dir)."""
    for name in ("socket", "create_connection", "getaddrinfo", "socketpair", "create_server"):
        setattr(socket, name, _refuse("network access"))
    subprocess.Popen = _refuse("running programs")  # type: ignore[misc,assignment]
    for name in ("system", "popen", "execv", "execve", "execvp", "spawnv", "fork", "forkpty"):
        if hasattr(os, name):
            setattr(os, name, _refuse("running programs"))
    root = str(workdir.resolve())
    real_open, real_mkdir = builtins.open, os.mkdir

    def inside(path: Any) -> bool:
        try:
            full = os.path.realpath(os.fspath(path))
        except TypeError:
            return True  # a file descriptor: already open
        return full == root or full.startswith(root + os.sep)

    def guarded_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if any(c in mode for c in "wax+") and not inside(file):
            raise PermissionError(f"kverr verify sandbox: writing {file} is disabled")
        return real_open(file, mode, *args, **kwargs)

    def guarded_mkdir(path: Any, *args: Any, **kwargs: Any) -> None:
        if not inside(path):
            raise PermissionError(f"kverr verify sandbox: creating {path} is disabled")
        real_mkdir(path, *args, **kwargs)

    builtins.open = io.open = guarded_open  # type: ignore[assignment]
    os.mkdir = guarded_mkdir  # type: ignore[assignment]
    os.chdir(workdir)
