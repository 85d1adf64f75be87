"""Where the release a user runs is read from, for `kverr check` (in this order):

1. `--source DIR|GIT` (or `KVERR_SOURCE`): a git clone (bare is fine; the release is a tag
   there, `v0.5.9` or `0.5.9`) or a checkout's folder;
2. the installed package's own files (site-packages), read as text: the package is located,
   never imported;
3. the project's public repository: the release's tree as one archive (the profile's
   `[launch] archive` URL, or KVERR_ARCHIVE_URL), unpacked into the user's cache and kept
   only when each file of the file set has the blob id the shipped dataset records for that
   release (revisions.jsonl `files`); kverr ships no upstream source;
4. nothing: a one-line error that says how to give one.

Whatever is read this way is run in the sandbox (verify/confine.py), never imported here.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    spec: VerifySpec,
    globs: tuple[str, ...],
    *,
    release: str | None,
    source: str | None,
    profile: Any = None,
    dataset: Path | None = None,
) -> Release:
    """The release to check against (module doc); SourceError names what to do otherwise.
    `profile` (kverr.profile.Profile): where its archive is fetched from; `dataset`: the
    dataset folder whose blob ids a fetched archive must match (default: the shipped one)."""
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
    why = "no archive URL is declared"
    if profile is not None and (os.environ.get("KVERR_ARCHIVE_URL") or profile.archive):
        try:
            return _fetched(spec, globs, profile, release, dataset)
        except SourceError as exc:
            why = str(exc)
    raise SourceError(
        f"no {spec.project} source to check against ({why}): pass --source (a git clone or a"
        f" checkout), set KVERR_SOURCE, or run kverr where {spec.package} is installed."
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
        # a tag, or (a project that tags no releases) a commit, as named
        names = [release] if release.startswith("v") else [f"v{release}", release]
        for name in names:
            try:
                rev, files = sources.read_git(repo, name, globs)
                return Release(name, rev, tuple(files), repo=str(repo.resolve()))
            except SourceError:
                continue
        raise SourceError(
            f"release {release} is neither a tag nor a commit of {repo}; list the tags with"
            f" `git -C {repo} tag`."
        )
    tag = next(iter(release_tags(_repo_tags(repo))), None)
    rev, files = sources.read_git(repo, tag or "HEAD", globs)
    return Release(tag or rev.sha[:12], rev, tuple(files), repo=str(repo.resolve()))


def release_tags(names: Iterable[str], *, candidates: bool = False) -> list[str]:
    """The release tags among `names`, highest version first (v0.5.10 before v0.5.9; release
    candidates left out unless `candidates`, other tags always)."""
    rc = r"(rc\d+)?" if candidates else ""
    releases = {t for t in names if re.fullmatch(rf"v?\d+(\.\d+){{1,3}}(\.post\d+)?{rc}", t)}
    return sorted(releases, key=_version_key, reverse=True)


def _repo_tags(repo: Path) -> set[str]:
    return {t for ts in sources.tags_by_commit(repo).values() for t in ts}


def releases_to_try(spec: VerifySpec, source: str | None, known: Iterable[str]) -> list[str]:
    """The releases a launch that names none may be run against, newest first: the tags of a
    git source (those the dataset knows the check in, when it knows any), or without any
    source and nothing installed, the releases `known` to have the check (fetched). A check
    no release has yet is tried at the release candidates that have it. [] when the source
    is one version (a checkout, the installed package): that one is the answer."""
    source = source or os.environ.get("KVERR_SOURCE") or None
    known = set(known)
    if source:
        path = Path(source).expanduser()
        if not path.exists() or not _is_git(path):
            return []
        tags = _repo_tags(path)
        releases = release_tags(tags)
        mine = [t for t in releases if t in known]
        return mine or release_tags(known & tags, candidates=True) or releases
    if _installed(spec) is not None:
        return []
    return release_tags(known) or release_tags(known, candidates=True)


def _version_key(tag: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", tag))


def files_of(rel: Release, globs: Sequence[str]) -> tuple[SourceFile, ...]:
    """More of the release's files than its file set: `globs`, read where its files were."""
    if rel.disk is not None:
        return _from_folder(Path(rel.disk[0]), tuple(globs), rel.name, rel.disk[1]).files
    if rel.repo and rel.revision.sha:
        return tuple(sources.read_git(Path(rel.repo), rel.revision.sha, tuple(globs))[1])
    return ()


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


# ---------------------------------------------------------------- fetched from the repository

MAX_ARCHIVE = 512 << 20  # bytes of a release's archive, and of what it unpacks to
FETCH_TIMEOUT = 60.0  # seconds without a byte before the download is given up


def _fetched(
    spec: VerifySpec,
    globs: tuple[str, ...],
    profile: Any,
    release: str | None,
    dataset: Path | None = None,
) -> Release:
    """The release unpacked into the user's cache from the project's repository, kept only
    when its file set matches the blob ids the shipped dataset records (module doc)."""
    import shutil

    from kverr.places import cache_dir

    sha, name, expected = _recorded(profile.name, release, dataset)
    folder = cache_dir() / "sources" / profile.name / sha
    if not (folder / ".complete").is_file():
        shutil.rmtree(folder, ignore_errors=True)
        template = os.environ.get("KVERR_ARCHIVE_URL") or profile.archive
        url = template.format(repository=profile.repository, sha=sha)
        _unpack(_download(url), folder, f"{spec.source_root}/{spec.package}".strip("/"))
        (folder / ".complete").write_text(url + "\n", encoding="utf-8")
    got = _from_folder(folder, globs, name, "")
    wrong = [f.path for f in got.files if expected.get(f.path) not in (None, f.blob)]
    missing = sorted(set(expected) - {f.path for f in got.files})
    if wrong or missing:
        shutil.rmtree(folder, ignore_errors=True)
        raise SourceError(
            f"the archive of {name} does not hold the files the dataset records"
            f" ({', '.join((wrong + missing)[:3])}); it was removed"
        )
    return got


def _recorded(
    project: str, release: str | None, dataset: Path | None
) -> tuple[str, str, dict[str, str]]:
    """(sha, name, {path: blob}) of `release` (default: the newest release) as the dataset
    records it."""
    import json
    from importlib import resources

    rows = []
    try:
        where = dataset or resources.files("kverr.data").joinpath(project)
        text = where.joinpath("revisions.jsonl").read_text("utf-8")
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    except (OSError, ValueError):
        pass
    with_files = [r for r in rows if r.get("sha") and r.get("files")]
    if release:
        want = {release, f"v{_bare(release)}", _bare(release)}
        hit = [
            r for r in with_files if want & set(r.get("tags") or ()) or r["sha"].startswith(release)
        ]
    else:
        hit = [r for r in with_files if r.get("tags")] or with_files
        hit = hit[-1:]
    if not hit:
        raise SourceError(
            f"the shipped {project} dataset records no file blob ids for {release or 'any release'}"
        )
    row = hit[-1]
    return row["sha"], (row.get("tags") or [row["sha"][:12]])[0], dict(row["files"])


def _download(url: str) -> bytes:
    import urllib.request

    if not url.startswith(("https://", "http://127.0.0.1", "http://localhost")):
        raise SourceError(f"the archive URL {url!r} is not https")
    try:
        with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT) as answer:  # noqa: S310
            data = answer.read(MAX_ARCHIVE + 1)
    except OSError as exc:
        # urllib's "<urlopen error [Errno -2] Name or service not known>": its reason alone
        why = getattr(exc, "reason", None) or exc
        why = getattr(why, "strerror", None) or why
        raise SourceError(f"cannot download {url}: {why}") from None
    if len(data) > MAX_ARCHIVE:
        raise SourceError(f"{url} is over {MAX_ARCHIVE >> 20} MiB")
    return data


def _unpack(data: bytes, folder: Path, package: str) -> None:
    """The archive's Python files under `package`, as regular files under `folder`, at their
    path in the repository (the archive's own top folder dropped); links, devices, absolute
    or escaping names and anything past MAX_ARCHIVE bytes are left out."""
    import io
    import tarfile

    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            for member in tar:
                parts = member.name.split("/", 1)
                rel = parts[1] if len(parts) == 2 else ""
                if (
                    not member.isreg()
                    or not rel.endswith(".py")
                    or not rel.startswith(package + "/")
                    or ".." in rel.split("/")
                ):
                    continue
                total += member.size
                if total > MAX_ARCHIVE:
                    raise SourceError("the archive unpacks to more than it may")
                target = folder / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                if source is not None:
                    target.write_bytes(source.read())
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise SourceError(f"the archive cannot be unpacked ({exc})") from None
