"""The file system a run sees (child side): the platform's declared paths, the launch's files.

- A platform profile declares what some paths are on its machine (`/sys/class/infiniband`
  lists four devices, or does not exist): `fake_paths` answers os.path.isdir/exists/isfile and
  os.listdir for those, every other path is the real one; `restore` undoes it.
- A launch names files that exist (a key file, touched) or that it writes first (a config
  file, {path: text}), relative to the child's work directory: `write_files` makes them before
  the run and `remove` takes them away after it, so each run sees only its own launch's files
  (a run answered from the cache must mean what a fresh one would).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

RealOs = tuple[Any, Any, Any, Any]


def fake_paths(paths: Mapping[str, Any]) -> RealOs:
    """Answer the declared paths (a list: a directory and its entries; False: absent); returns
    the real functions, for restore()."""
    real = (os.path.isdir, os.path.exists, os.path.isfile, os.listdir)
    if not paths:
        return real
    isdir, exists, isfile, listdir = real

    def declared(path: Any) -> Any:
        try:
            p = os.path.normpath(os.fspath(path))
        except TypeError:
            return None
        for root, entries in paths.items():
            if p == root:
                return ("dir", entries) if entries is not False else ("absent", None)
            if p.startswith(root + os.sep):
                if entries is False:
                    return ("absent", None)
                rest = p[len(root) + 1 :].split(os.sep)[0]
                return ("dir", []) if rest in entries else ("absent", None)
        return None

    def fake_isdir(path: Any) -> bool:
        d = declared(path)
        return isdir(path) if d is None else d[0] == "dir"

    def fake_exists(path: Any) -> bool:
        d = declared(path)
        return exists(path) if d is None else d[0] == "dir"

    def fake_isfile(path: Any) -> bool:
        d = declared(path)
        return isfile(path) if d is None else False

    def fake_listdir(path: Any = ".") -> list[str]:
        d = declared(path)
        if d is None:
            return listdir(path)
        if d[0] == "absent":
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return list(d[1])

    os.path.isdir, os.path.exists, os.path.isfile = fake_isdir, fake_exists, fake_isfile
    os.listdir = fake_listdir  # type: ignore[assignment]
    return real


def restore(real: RealOs) -> None:
    os.path.isdir, os.path.exists, os.path.isfile, os.listdir = real


def write_files(files: Sequence[str] | Mapping[str, str]) -> list[Path]:
    """Make the launch's files under the working directory (a path outside it, or one there
    already, such as the model directory's, is left alone); the paths made, for remove()."""
    texts = dict(files) if isinstance(files, Mapping) else dict.fromkeys(files, "")
    made: list[Path] = []
    for name, text in texts.items():
        path = Path(name)
        if path.is_absolute() or ".." in path.parts or path.exists():
            continue
        for parent in reversed(path.parents):
            if str(parent) != "." and not parent.exists():
                parent.mkdir()
                made.append(parent)
        path.write_text(text, encoding="utf-8")
        made.append(path)
    return made


def remove(made: Sequence[Path]) -> None:
    for path in reversed(made):
        try:
            path.rmdir() if path.is_dir() else path.unlink()
        except OSError:
            pass  # a directory the run filled: leave it (the next setup starts a clean one)
