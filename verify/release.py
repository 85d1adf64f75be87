"""Where the release a user runs is read from, for `kverr check` (in this order):

1. `--source DIR|GIT` (or `KVERR_SOURCE`): a git clone (bare is fine; the release is a tag
   there, `v0.5.9` or `0.5.9`) or a checkout's folder;
2. the installed package's own files (site-packages), read as text: the package is located,
   never imported;
3. nothing: a one-line error that says how to give one. (kverr ships no upstream source.)
"""

from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass
from pathlib import Path

from kverr.extractor import sources
from kverr.verify.spec import VerifySpec

from kverr.errors import SourceError
from kverr.ftypes import Revision, SourceFile

_VERSION = re.compile(r"""__version__\s*=\s*["']([^"'\n]{1,40})["']""")


@dataclass(frozen=True)
class Release:
    """One release's files, and how the sandbox reads the rest of its package."""

    name: str  # "v0.5.9", "0.5.9 (installed)", "the checkout at /src/sglang"
    revision: Revision
    files: tuple[SourceFile, ...]  # the profile's file set, for the extractor
    repo: str = ""  # the git repository the sandbox reads ("" for a folder)
    disk: tuple[str, str] | None = None  # (folder, its place in the repository's layout)


def find_release(
    spec: VerifySpec, globs: tuple[str, ...], *, release: str | None, source: str | None
) -> Release:
    """The release to check against (module doc); SourceError names what to do otherwise."""
    source = source or os.environ.get("KVERR_SOURCE") or None
    if source:
        path = Path(source).expanduser()
        if not path.exists():
            raise SourceError(f"--source {source} does not exist; pass a git clone or a checkout.")
        if _is_git(path):
            return _from_git(path, globs, release)
        return _from_folder(path, globs, f"the checkout at {path}", "")
    installed = _installed(spec)
    if installed is not None:
        folder, version = installed
        if release and version and _bare(release) != _bare(version):
            raise SourceError(
                f"the installed {spec.package} is {version}, not {release}; pass --source with a"
                f" git clone of {spec.project} to check against {release}."
            )
        name = f"{version or 'unknown version'} (installed)"
        return _from_folder(folder, globs, name, spec.source_root)
    raise SourceError(
        f"no {spec.project} source to check against: pass --source (a git clone or a checkout),"
        f" set KVERR_SOURCE, or run kverr where {spec.package} is installed."
    )


def _is_git(path: Path) -> bool:
    try:
        sources.git(path, "rev-parse", "--git-dir")
    except SourceError:
        return False
    return True


def _bare(version: str) -> str:
    return version.lstrip("vV")


def _from_git(repo: Path, globs: tuple[str, ...], release: str | None) -> Release:
    if release:
        tags = [release] if release.startswith("v") else [f"v{release}", release]
        for tag in tags:
            try:
                rev, files = sources.read_git(repo, tag, globs)
                return Release(tag, rev, tuple(files), repo=str(repo.resolve()))
            except SourceError:
                continue
        raise SourceError(
            f"release {release} is not a tag of {repo}; list them with `git -C {repo} tag`."
        )
    tag = newest_tag(repo)
    rev, files = sources.read_git(repo, tag or "HEAD", globs)
    return Release(tag or rev.sha[:12], rev, tuple(files), repo=str(repo.resolve()))


def newest_tag(repo: Path) -> str | None:
    """The release tag with the highest version (v0.5.10 after v0.5.9; rc after nothing)."""
    names = [t for ts in sources.tags_by_commit(repo).values() for t in ts]
    releases = [t for t in names if re.fullmatch(r"v?\d+(\.\d+){1,3}(\.post\d+)?", t)]
    return max(releases, key=_version_key, default=None)


def _version_key(tag: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", tag))


def _from_folder(folder: Path, globs: tuple[str, ...], name: str, at: str) -> Release:
    """A folder whose files stand under `at` in the repository ("python" for site-packages,
    "" for a checkout)."""
    prefix = f"{at}/" if at else ""
    wanted = [g[len(prefix) :] for g in globs if g.startswith(prefix)]
    _, files = sources.read_directory(folder, wanted)
    placed = tuple(SourceFile(prefix + f.path, f.text, f.blob, error=f.error) for f in files)
    return Release(name, Revision(tags=(name,)), placed, disk=(str(folder.resolve()), at))


def _installed(spec: VerifySpec) -> tuple[Path, str | None] | None:
    """(site-packages, version) of the installed package, located without importing it."""
    try:
        found = importlib.util.find_spec(spec.package)
    except (ImportError, ValueError):
        return None
    if found is None or not found.submodule_search_locations:
        return None
    package = Path(next(iter(found.submodule_search_locations)))
    version = None
    for name in ("version.py", "__init__.py"):
        try:
            m = _VERSION.search((package / name).read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
        if m:
            version = m.group(1)
            break
    return package.parent, version
