"""Where source text comes from: a directory (or one file) on disk, or a revision of a git repo.

Git is read through plumbing only (`rev-parse`, `ls-tree`, `cat-file --batch`, `rev-list`,
`log`, `for-each-ref`), so bare repositories work and nothing is ever checked out. Every
bytes -> text decision goes through `decode_source`, so a binary or non-UTF-8 file looks the
same whichever source it came from (a SourceFile with `error` set, reported as a ParseFailure).
"""

from __future__ import annotations

import errno
import functools
import hashlib
import os
import re
import stat
import subprocess
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, timezone
from fnmatch import fnmatchcase
from pathlib import Path

from kverr.errors import SourceError
from kverr.ftypes import Revision, SourceFile

# Directories never worth walking when reading a plain directory.
_SKIP_DIRS = {".git", "__pycache__", ".venv", "venv", "node_modules", ".mypy_cache", ".ruff_cache"}


# ---------------------------------------------------------------- globs


@functools.lru_cache(maxsize=256)
def glob_regex(glob: str) -> re.Pattern[str]:
    """Compile a repo-relative glob: `*` and `?` stay inside one path segment, `**/` spans any
    number of directories (zero included), `[...]` is a character class. Python 3.10 has no
    `glob.translate`, and fnmatch lets `*` cross `/`, which would make `a/*.py` match `a/b/c.py`."""
    out, i, n = [], 0, len(glob)
    while i < n:
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[" and "]" in glob[i + 1 :]:
            j = glob.index("]", i + 1)
            body = glob[i + 1 : j]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out) + r"\Z")


def matches_any(path: str, globs: Sequence[str]) -> bool:
    return any(glob_regex(g).match(path) for g in globs)


def _literal_prefix(glob: str) -> str:
    """The leading directories of a glob that contain no wildcard: 'a/b/**/*.py' -> 'a/b/'."""
    parts = glob.split("/")
    keep = []
    for part in parts[:-1]:
        if any(ch in part for ch in "*?["):
            break
        keep.append(part)
    if len(keep) == len(parts) - 1 and not any(ch in parts[-1] for ch in "*?["):
        return glob  # no wildcard at all: the exact path
    return "/".join(keep) + "/" if keep else ""


# ---------------------------------------------------------------- decoding

# A source file larger than this is skipped (a ParseFailure naming it): no file of a project's
# file set comes near it, and a bigger one would only cost memory for records nobody reads.
MAX_SOURCE_BYTES = 16 * 1024 * 1024


class _TooLarge(SourceError):
    def __init__(self, size: int) -> None:
        super().__init__(too_large(size)[4:])
        self.size = size


def too_large(size: int) -> str:
    """The `error` of a SourceFile over MAX_SOURCE_BYTES."""
    mb, cap = size / (1 << 20), MAX_SOURCE_BYTES >> 20
    return f"1:1:{mb:.1f} MB, over the {cap} MB a source file may have; skipped (split it or leave it out of --files)"


def blob_sha(data: bytes) -> str:
    """Git's blob id for these bytes, so a file on disk and the same blob in git share cache keys."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def decode_source(path: str, data: bytes, blob: str | None = None) -> SourceFile:
    """The one place bytes become text. Binary or non-UTF-8 content gives a SourceFile with
    `error` set (line:col:message), which extraction reports as a ParseFailure; its text keeps
    the bad bytes (NULs, surrogate escapes) so the extractor's own check refuses it too."""
    blob = blob or blob_sha(data)
    if len(data) > MAX_SOURCE_BYTES:
        return SourceFile(path, "", blob, error=too_large(len(data)))
    if b"\0" in data[:8192]:
        loose = data.decode("utf-8", "surrogateescape")
        return SourceFile(
            path, loose, blob, error="1:1:binary file (contains NUL bytes); leave it out of --files"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        head = data[: exc.start]
        line = head.count(b"\n") + 1
        col = exc.start - (head.rfind(b"\n") + 1) + 1
        msg = f"not UTF-8 (byte 0x{data[exc.start]:02x}); save the file as UTF-8 or leave it out of --files"
        loose = data.decode("utf-8", "surrogateescape")
        return SourceFile(path, loose, blob, error=f"{line}:{col}:{msg}")
    # A BOM is an encoding marker, not source; dropping it keeps line/col identical.
    return SourceFile(path, text.removeprefix("\ufeff"), blob)


# ---------------------------------------------------------------- directories


def read_directory(
    path: str | os.PathLike[str], globs: Sequence[str] = ("**/*.py",)
) -> tuple[Revision, list[SourceFile]]:
    """Read every file under `path` matching `globs` (paths relative to `path`), sorted by path.
    A single file is read as itself, whatever the globs say (its path is its file name)."""
    root = Path(path)
    if root.is_file():
        return Revision(), [read_disk_file(root, root.name)]
    if not root.is_dir():
        raise SourceError(f"{root} does not exist; pass an existing directory or .py file.")
    files = []
    for rel in sorted(_walk(root)):
        if matches_any(rel, globs):
            files.append(read_disk_file(root / rel, rel))
    if not files:
        raise SourceError(_no_match(str(root), globs))
    return Revision(), files


def read_disk_file(path: Path, rel: str) -> SourceFile:
    """One file of a directory as a SourceFile at `rel`. A file that cannot be read (a symlink
    loop, a dangling link, no permission) or is no regular file (a FIFO would block the read
    forever) comes back with `error` set, so the build reports it as a ParseFailure and goes on."""
    try:
        info = path.stat()  # follows links: ELOOP for a loop
        if not stat.S_ISREG(info.st_mode):
            return _unreadable(rel, "it is not a regular file (a FIFO, socket or device)")
        if info.st_size > MAX_SOURCE_BYTES:  # never read into memory
            return SourceFile(rel, "", blob_sha(b""), error=too_large(info.st_size))
        return decode_source(rel, path.read_bytes())
    except OSError as exc:
        why = "a symlink loop" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
        return _unreadable(rel, f"it cannot be read ({why})")


def _unreadable(rel: str, why: str) -> SourceFile:
    return SourceFile(
        rel, "", blob_sha(b""), error=f"1:1:{why}; fix it or leave it out of --files, skipped"
    )


def _walk(root: Path) -> Iterator[str]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        for name in filenames:
            yield name if rel_dir == "." else f"{rel_dir}/{name}"


def shown(text: str) -> str:
    """`text` (a file name from a repository, a revision) for a one-line message: control,
    format (bidi) and surrogate characters as their Python escapes."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _no_match(where: str, globs: Sequence[str]) -> str:
    shown = ", ".join(repr(g) for g in globs)
    return f"no files in {where} match {shown}; pass --files GLOB with a pattern relative to that root."


# ---------------------------------------------------------------- git plumbing


# Every git call only reads, whatever the repository's own config says: no hook, no
# fsmonitor daemon, no gpg for a signature, no fetch (a partial clone would fetch lazily), no
# optional lock or index refresh written into it. `safe.directory`: a clone another user owns
# is read as well (its config runs nothing, per the above).
_GIT_CONFIG = (
    "safe.directory=*",
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "log.showSignature=false",
    "protocol.allow=never",
)
# Variables that would point git at another repository than `-C` names (a kverr run from a
# git hook inherits GIT_DIR).
_GIT_REDIRECTS = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_EXTERNAL_DIFF",
)  # fmt: skip


def git_command(repo: str | os.PathLike[str], *args: str) -> list[str]:
    """The argv of one read-only git call in `repo` (every git call kverr makes)."""
    config = [arg for item in _GIT_CONFIG for arg in ("-c", item)]
    return ["git", "--no-pager", "-C", str(repo), *config, *args]


# What every git call's environment says over the caller's own (the verify child's git too).
GIT_ENV = {
    "GIT_TERMINAL_PROMPT": "0",  # never prompt
    "GIT_PAGER": "cat",
    "LC_ALL": "C",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_NO_REPLACE_OBJECTS": "1",  # the objects as they are, not as refs/replace says
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_NO_LAZY_FETCH": "1",
}


def git_env() -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k not in _GIT_REDIRECTS}, **GIT_ENV}


def git(repo: str | os.PathLike[str], *args: str, stdin: bytes | None = None) -> bytes:
    """Run one git command in `repo`; a failure becomes a SourceError naming the repo."""
    try:
        proc = subprocess.run(
            git_command(repo, *args),
            input=stdin,
            capture_output=True,
            check=False,
            env=git_env(),
        )
    except FileNotFoundError:
        raise SourceError("git is not installed; install git to build from a repository.") from None
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        first = err[0] if err else f"exit status {proc.returncode}"
        raise SourceError(
            f"git {args[0]} failed in {repo}: {first}; check the repository and revision."
        )
    return proc.stdout


def _git_ask(repo: str | os.PathLike[str], *args: str) -> str | None:
    """stdout of a git question whose "no" is an answer, not an error (None then)."""
    proc = subprocess.run(git_command(repo, *args), capture_output=True, check=False, env=git_env())
    return proc.stdout.decode("utf-8", "replace").strip() if proc.returncode == 0 else None


def _nul_fields(out: bytes, width: int) -> Iterator[list[str]]:
    """Records of `width` NUL-separated fields (`log -z` with %x00 between fields): a name or
    a message may hold any other byte, a newline or \x01 included. A record whose first
    field is no commit sha (never, from git) is left out rather than misread."""
    fields = out.decode("utf-8", "replace").split("\0")
    for i in range(0, len(fields) - width + 1, width):
        record = fields[i : i + width]
        if _SHA.fullmatch(record[0]):
            yield record


_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_GITHUB_URL = re.compile(r"github\.com[:/]+([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?/?$")


def github_name(repo: str | os.PathLike[str]) -> str | None:
    """`owner/name` of the repository's GitHub `origin` remote, or None (no remote, elsewhere)."""
    m = _GITHUB_URL.search(_git_ask(repo, "config", "--get", "remote.origin.url") or "")
    return f"{m.group(1)}/{m.group(2)}" if m else None


def check_repo(repo: str | os.PathLike[str]) -> Path:
    """The repository path, or a SourceError if it is missing or not a git repository."""
    path = Path(repo)
    if not path.exists():
        raise SourceError(f"{path} does not exist; pass the path of a git clone (bare is fine).")
    if _git_ask(path, "rev-parse", "--git-dir") is None:
        raise SourceError(
            f"{path} is not a git repository; pass a clone (bare is fine) to --git, or build the directory without --git."
        )
    return path


def resolve(repo: str | os.PathLike[str], rev: str) -> str:
    """Full commit sha of `rev` (branch, tag, sha prefix, HEAD~3 ...)."""
    if rev.startswith("-"):
        raise SourceError(
            f"revision {rev!r} starts with '-', which git would read as an option; name the ref in full (refs/tags/..., refs/heads/...)."
        )
    sha = _git_ask(
        repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"
    )
    if sha is None:
        raise SourceError(
            f"unknown revision {rev!r} in {repo}; list candidates with `git -C {repo} log --oneline` or `git tag`."
        )
    return sha


def tags_by_commit(repo: str | os.PathLike[str]) -> dict[str, tuple[str, ...]]:
    """commit sha -> sorted tag names pointing at it (annotated tags peeled)."""
    fmt = "--format=%(objectname)%00%(*objectname)%00%(refname:short)%00"
    out = git(repo, "for-each-ref", fmt, "refs/tags")
    tags: dict[str, list[str]] = {}
    for line in out.decode("utf-8", "replace").split("\0\n"):
        if line:
            obj, peeled, name = line.split("\0", 2)
            tags.setdefault(peeled or obj, []).append(name)
    return {sha: tuple(sorted(names)) for sha, names in tags.items()}


def iso_utc(epoch: int) -> str:
    """Commit time as ISO 8601 UTC with milliseconds and `Z`, the dataset's one date format."""
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def describe(
    repo: str | os.PathLike[str],
    shas: Sequence[str],
    *,
    repo_name: str | None = None,
    tags: dict[str, tuple[str, ...]] | None = None,
) -> list[Revision]:
    """Revision (sha, date, tags, subject) for each commit sha, in the order given; one git call."""
    if not shas:
        return []
    tags = tags_by_commit(repo) if tags is None else tags
    out = git(
        repo,
        "log",
        "-z",
        "--no-walk=unsorted",
        "--format=%H%x00%ct%x00%s",
        "--stdin",
        stdin="\n".join(shas).encode() + b"\n",
    )
    info = {sha: (int(ct), subject) for sha, ct, subject in _nul_fields(out, 3)}
    return [
        Revision(
            repo=repo_name,
            sha=s,
            date=iso_utc(info[s][0]),
            tags=tags.get(s, ()),
            subject=info[s][1],
        )
        for s in shas
    ]


def list_files(
    repo: str | os.PathLike[str], sha: str, globs: Sequence[str]
) -> list[tuple[str, str]]:
    """(path, blob sha) of every file in commit `sha` matching `globs`, sorted by path."""
    with BlobReader(repo) as reader:
        return list_files_read(reader, sha, globs)


def list_files_read(
    reader: BlobReader, sha: str, globs: Sequence[str], memo: dict | None = None
) -> list[tuple[str, str]]:
    """`list_files` through a running `git cat-file --batch`: the commit's tree objects read
    one by one, only down the globs' literal directories so huge trees stay cheap, and no
    process started per commit (one ls-tree each was 2 ms, most of a thousand-commit plan).
    `memo`, kept by the caller across commits, holds the listing of each (tree, directory)
    read: neighbours share subtrees."""
    prefixes = sorted({_literal_prefix(g) for g in globs})
    memo = {} if memo is None else memo

    def listing(tree: str, base: str) -> list[tuple[str, str]]:
        hit = memo.get((tree, base))
        if hit is not None:
            return hit
        found: list[tuple[str, str]] = []
        for mode, name, obj in _tree_entries(reader.read(tree)):
            path = base + name
            if mode.startswith(b"4"):  # 40000: a directory
                if any(p.startswith(path + "/") or (path + "/").startswith(p) for p in prefixes):
                    found += listing(obj, path + "/")
            elif mode not in (b"120000", b"160000") and matches_any(path, globs):
                found.append((path, obj))  # (a symlink and a submodule are no source files)
        memo[(tree, base)] = found
        return found

    return sorted(listing(f"{sha}^{{tree}}", ""))


def _tree_entries(data: bytes) -> Iterator[tuple[bytes, str, str]]:
    """(mode, name, object sha) of each entry of a raw tree object: `<mode> <name>\\0<20 bytes>`."""
    at = 0
    while at < len(data):
        space = data.index(b" ", at)
        nul = data.index(b"\0", space)
        name = data[space + 1 : nul].decode("utf-8", "surrogateescape")
        yield data[at:space], name, data[nul + 1 : nul + 21].hex()
        at = nul + 21


class BlobReader:
    """One long-lived `git cat-file --batch` process: thousands of blobs without a spawn each."""

    def __init__(self, repo: str | os.PathLike[str]) -> None:
        self.repo = str(repo)
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> BlobReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read(self, obj: str) -> bytes:
        """The object's bytes; an object over MAX_SOURCE_BYTES is never held in memory (a
        _TooLarge SourceError), and a name that would break the batch protocol is refused."""
        if "\n" in obj or "\r" in obj:
            raise SourceError(
                f"object name {obj!r} holds a line break; git cannot be asked for it."
            )
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(obj.encode("utf-8", "surrogateescape") + b"\n")
        proc.stdin.flush()
        header = proc.stdout.readline().decode("utf-8", "replace").split()
        if len(header) != 3 or not header[2].isdigit():
            raise SourceError(
                f"object {obj!r} is missing from {self.repo}; run `git -C {self.repo} fsck`."
            )
        size = int(header[2])
        if size > MAX_SOURCE_BYTES:
            left = size + 1  # drained in pieces, to keep the protocol in step
            while left > 0 and (piece := proc.stdout.read(min(left, 1 << 20))):
                left -= len(piece)
            raise _TooLarge(size)
        data = proc.stdout.read(size)
        proc.stdout.read(1)  # the newline after each object
        return data

    def source(self, path: str, obj: str) -> SourceFile:
        try:
            return decode_source(path, self.read(obj), obj)
        except _TooLarge as exc:
            return SourceFile(path, "", obj, error=too_large(exc.size))

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is None:
            self._proc = subprocess.Popen(
                git_command(self.repo, "cat-file", "--batch"),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=git_env(),
            )
        return self._proc

    def close(self) -> None:
        if self._proc is not None:
            for stream in (self._proc.stdin, self._proc.stdout):
                if stream:
                    stream.close()
            self._proc.wait()
            self._proc = None


def read_git(
    repo: str | os.PathLike[str],
    rev: str = "HEAD",
    globs: Sequence[str] = (),
    *,
    repo_name: str | None = None,
) -> tuple[Revision, list[SourceFile]]:
    """Revision metadata and the matching files of one commit, straight from git objects.
    `globs`: the file set (a project profile's `files`)."""
    if not globs:
        raise SourceError(f"no file set to read from {repo}; pass --files GLOB or --profile NAME.")
    check_repo(repo)
    sha = resolve(repo, rev)
    (revision,) = describe(repo, [sha], repo_name=repo_name)
    with BlobReader(repo) as reader:
        entries = list_files_read(reader, sha, globs)
        if not entries:
            raise SourceError(_no_match(f"{repo} at {rev}", globs))
        return revision, [reader.source(path, obj) for path, obj in entries]


def pathspecs(globs: Iterable[str]) -> list[str]:
    return [f":(glob){g}" for g in globs]


def list_revisions(
    repo: str | os.PathLike[str],
    revs: Sequence[str] = (),
    *,
    tags_glob: str | None = None,
    touching: bool = False,
    globs: Sequence[str] = (),
    repo_name: str | None = None,
) -> list[Revision]:
    """The commits to build, oldest first, each once.

    `revs` items are single revisions or `A..B` ranges (every commit in B not in A). `tags_glob`
    adds each tag whose name matches. `touching` keeps, within ranges, only commits that changed a
    file of `globs`; with no range at all it walks the history of the given revs (or HEAD).
    Nothing selected at all means HEAD."""
    if touching and not globs:
        raise SourceError("--touching needs the file set it watches; pass --files or --profile.")
    check_repo(repo)
    singles = [r for r in revs if ".." not in r]
    ranges = [r for r in revs if ".." in r]
    tags = tags_by_commit(repo)
    chosen: set[str] = set()
    for rng in ranges:
        old, new = (resolve(repo, end or "HEAD") for end in rng.split("..", 1))
        chosen |= set(_rev_list(repo, [new, f"^{old}"], globs if touching else None))
    if touching and not ranges:
        tips = [resolve(repo, r) for r in singles] or [resolve(repo, "HEAD")]
        chosen |= set(_rev_list(repo, tips, globs))
    chosen |= {resolve(repo, r) for r in singles}
    if tags_glob:
        names = {n: sha for sha, ns in tags.items() for n in ns}
        hits = [n for n in names if fnmatchcase(n, tags_glob)]
        if not hits:
            raise SourceError(
                f"no tag in {repo} matches {tags_glob!r}; list tags with `git -C {repo} tag`."
            )
        chosen |= {resolve(repo, f"refs/tags/{n}") for n in hits}
    if not chosen and not ranges and not tags_glob:
        chosen.add(resolve(repo, "HEAD"))
    if not chosen:
        raise SourceError(
            f"the revisions {', '.join(revs)} of {repo} select no commit; check the range order (OLD..NEW)."
        )
    return describe(repo, _oldest_first(repo, chosen), repo_name=repo_name, tags=tags)


def _rev_list(
    repo: str | os.PathLike[str], shas: Sequence[str], globs: Sequence[str] | None
) -> list[str]:
    """`shas`: resolved commits, `^sha` to exclude one; never a user's text (a ref named
    `--output=X` would be an option here)."""
    cmd = ["rev-list", "--end-of-options", *shas]
    if globs is not None:
        cmd += ["--", *pathspecs(globs)]
    return git(repo, *cmd).decode().split()


def touching_commits(repo: str | os.PathLike[str], tip: str, globs: Sequence[str]) -> list[str]:
    """Every commit up to `tip` that changed a file of `globs`, in the order `--touching`
    builds them (parents first, date order between branches): one rev-list walk."""
    cmd = ["rev-list", "--date-order", "--reverse", "--end-of-options", tip]
    cmd += ["--", *pathspecs(globs)]
    return git(repo, *cmd).decode().split()


def commit_messages(
    repo: str | os.PathLike[str], shas: Sequence[str]
) -> dict[str, tuple[str, str]]:
    """sha -> (subject, body) of each commit; one git call."""
    if not shas:
        return {}
    out = git(
        repo,
        "log",
        "-z",
        "--no-walk=unsorted",
        "--format=%H%x00%s%x00%b",
        "--stdin",
        stdin="\n".join(shas).encode() + b"\n",
    )
    return {sha: (subject, body) for sha, subject, body in _nul_fields(out, 3)}


def _oldest_first(repo: str | os.PathLike[str], shas: set[str]) -> list[str]:
    """Parents before children (date order breaks ties between branches): one rev-list walk."""
    order = git(
        repo,
        "rev-list",
        "--date-order",
        "--reverse",
        "--stdin",
        stdin="\n".join(sorted(shas)).encode() + b"\n",
    )
    return [s for s in order.decode().split() if s in shas]


# ---------------------------------------------------------------- snapshots


def parse_snapshot(spec: str) -> tuple[Path, str]:
    """`PATH=REPO_PATH` -> (file or directory on disk, its posix path in the repository)."""
    disk, sep, repo_path = spec.rpartition("=")
    repo_path = repo_path.strip().strip("/")
    if not sep or not disk or not repo_path:
        raise SourceError(
            f"--snapshot {spec!r} is not PATH=REPO_PATH; pass e.g. --snapshot hook.py=python/pkg/hook.py."
        )
    return Path(disk), repo_path


def read_snapshot(spec: str, globs: Sequence[str]) -> list[tuple[str, SourceFile]]:
    """The files of one `--snapshot PATH=REPO_PATH`, as (path on disk, SourceFile at its repository
    path), sorted by repository path. A directory contributes the files under it that match
    `globs` once placed; a file must itself land inside the file set, or it would be ignored."""
    disk, repo_path = parse_snapshot(spec)
    if disk.is_file():
        if not matches_any(repo_path, globs):
            raise SourceError(_no_match(f"--snapshot {spec}", globs))
        return [(str(disk), read_disk_file(disk, repo_path))]
    if not disk.is_dir():
        raise SourceError(
            f"--snapshot {spec}: {disk} does not exist; pass an existing file or directory."
        )
    out = []
    for rel in sorted(_walk(disk)):
        placed = f"{repo_path}/{rel}"
        if matches_any(placed, globs):
            out.append((str(disk / rel), read_disk_file(disk / rel, placed)))
    if not out:
        raise SourceError(_no_match(f"--snapshot {spec}", globs))
    return out


def parse_date(text: str, *, what: str) -> str:
    """An ISO 8601 date-time (offset or `Z`; naive means UTC) in the dataset's one date format."""
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise SourceError(
            f"{what} {text!r} is not an ISO 8601 date-time; pass e.g. 2026-08-28T05:10:05Z."
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return iso_utc(int(when.timestamp()))
