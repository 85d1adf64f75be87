"""Sources: directories, single files and git revisions (real repositories built in temp dirs).

`Git` below is also the fixture builder for test_build*.py and test_history*.py.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from kverr.extractor import sources
from kverr.extractor.sources import (
    decode_source,
    glob_regex,
    list_revisions,
    read_directory,
    read_git,
)

from kverr.errors import SourceError
from kverr.profile import load_profile

SGLANG_FILES = load_profile("sglang").files


class Git:
    """A real git repository in a temp dir with deterministic commits (fixed author/committer
    dates one hour apart), so shas, dates and everything derived from them are reproducible."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.n = 0
        root.mkdir(parents=True, exist_ok=True)
        self.run("init", "-q", "-b", "main")

    def run(self, *args: str) -> str:
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.com",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.com",
            "GIT_AUTHOR_DATE": self.date,
            "GIT_COMMITTER_DATE": self.date,
            "GIT_CONFIG_NOSYSTEM": "1",
            "HOME": str(self.root),
        }
        out = subprocess.run(
            ["git", "-C", str(self.root), *args], env=env, check=True, capture_output=True
        )
        return out.stdout.decode().strip()

    @property
    def date(self) -> str:
        return f"{1704067200 + 3600 * self.n} +0000"  # 2024-01-01T00:00:00Z + n hours

    def write(self, path: str, text: str | bytes) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            target.write_bytes(text)
        else:
            target.write_text(text, encoding="utf-8")

    def rm(self, path: str) -> None:
        self.run("rm", "-q", path)

    def commit(self, subject: str, files: dict[str, str | bytes] | None = None) -> str:
        for path, text in (files or {}).items():
            self.write(path, text)
        self.n += 1
        self.run("add", "-A")
        self.run("commit", "-q", "--allow-empty", "-m", subject)
        return self.run("rev-parse", "HEAD")

    def tag(self, name: str, *, annotated: bool = False) -> None:
        self.run("tag", *(["-a", "-m", name] if annotated else []), name)

    def clone(self, dest: Path) -> Git:
        """A full clone that can take more commits without touching this repository."""
        subprocess.run(
            ["git", "clone", "-q", str(self.root), str(dest)], check=True, capture_output=True
        )
        other = Git.__new__(Git)
        other.root, other.n = dest, self.n
        return other

    def bare_clone(self, dest: Path) -> Path:
        subprocess.run(
            ["git", "clone", "-q", "--bare", str(self.root), str(dest)],
            check=True,
            capture_output=True,
        )
        return dest


SA = "python/sglang/srt/server_args.py"


@pytest.fixture
def repo(tmp_path: Path) -> Git:
    g = Git(tmp_path / "repo")
    g.commit("first", {SA: "x = 1\n", "README.md": "hi\n"})
    g.tag("v0.1.0")
    g.commit("docs only", {"README.md": "hello\n"})
    g.commit("second", {SA: "x = 2\n", "python/sglang/srt/arg_groups/kv.py": "y = 1\n"})
    g.tag("v0.2.0", annotated=True)
    return g


# ---------------------------------------------------------------- globs and decoding


@pytest.mark.parametrize(
    ("glob", "path", "hit"),
    [
        ("python/sglang/srt/server_args.py", "python/sglang/srt/server_args.py", True),
        ("python/sglang/srt/server_args.py", "python/sglang/srt/server_args.pyc", False),
        ("python/sglang/srt/arg_groups/**/*.py", "python/sglang/srt/arg_groups/kv.py", True),
        ("python/sglang/srt/arg_groups/**/*.py", "python/sglang/srt/arg_groups/a/b/kv.py", True),
        ("python/sglang/srt/arg_groups/**/*.py", "python/sglang/srt/arg_groups.py", False),
        ("*.py", "a.py", True),
        ("*.py", "pkg/a.py", False),
        ("**/*.py", "pkg/a.py", True),
        ("**/*.py", "a.py", True),
        ("pkg/?.py", "pkg/a.py", True),
        ("pkg/[ab].py", "pkg/c.py", False),
        ("pkg/[!ab].py", "pkg/c.py", True),
    ],
)
def test_glob_regex(glob: str, path: str, hit: bool) -> None:
    assert bool(glob_regex(glob).match(path)) is hit


@pytest.mark.parametrize(
    ("data", "text", "error"),
    [
        (b"x = 1\n", "x = 1\n", None),
        (b"\xef\xbb\xbfx = 1\n", "x = 1\n", None),
        (
            b"x = 1\n# caf\xe9\n",
            "",
            "2:6:not UTF-8 (byte 0xe9); save the file as UTF-8 or leave it out of --files",
        ),
        (b"\x7fELF\0\0\1", "", "1:1:binary file (contains NUL bytes); leave it out of --files"),
    ],
)
def test_decode_source(data: bytes, text: str, error: str | None) -> None:
    src = decode_source("m.py", data)
    assert (src.text, src.error) == (text or data.decode("utf-8", "surrogateescape"), error)
    assert src.blob == sources.blob_sha(data)


def test_blob_sha_equals_git(repo: Git) -> None:
    data = (repo.root / SA).read_bytes()
    assert sources.blob_sha(data) == repo.run("hash-object", SA)


# ---------------------------------------------------------------- directories


def test_read_directory(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "__pycache__").mkdir(parents=True)
    (tmp_path / "pkg" / "b.py").write_text("b = 1\n")
    (tmp_path / "a.py").write_text("a = 1\n")
    (tmp_path / "pkg" / "__pycache__" / "c.py").write_text("c = 1\n")
    (tmp_path / "notes.txt").write_text("no\n")
    rev, files = read_directory(tmp_path, ["**/*.py"])
    assert rev.sha is None and rev.date is None
    assert [(f.path, f.text) for f in files] == [("a.py", "a = 1\n"), ("pkg/b.py", "b = 1\n")]


def test_read_single_file(tmp_path: Path) -> None:
    (tmp_path / "one.py").write_text("raise ValueError('x')\n")
    _, files = read_directory(tmp_path / "one.py", ["nothing/*.py"])
    assert [f.path for f in files] == ["one.py"]


@pytest.mark.parametrize(
    ("make", "globs", "message"),
    [
        (
            lambda p: p / "missing",
            ["*.py"],
            "does not exist; pass an existing directory or .py file.",
        ),
        (
            lambda p: p,
            ["src/*.py"],
            "match 'src/*.py'; pass --files GLOB with a pattern relative to that root.",
        ),
    ],
)
def test_read_directory_errors(tmp_path: Path, make, globs: list[str], message: str) -> None:
    (tmp_path / "a.py").write_text("a = 1\n")
    with pytest.raises(SourceError, match=message.replace(".", r"\.").replace("*", r"\*")):
        read_directory(make(tmp_path), globs)


# ---------------------------------------------------------------- git


def test_read_git_head(repo: Git) -> None:
    rev, files = read_git(repo.root, "HEAD", SGLANG_FILES, repo_name="o/n")
    assert rev.repo == "o/n"
    assert rev.sha == repo.run("rev-parse", "HEAD")
    assert rev.date == "2024-01-01T03:00:00.000Z"
    assert rev.tags == ("v0.2.0",)  # annotated tag, peeled to its commit
    assert rev.subject == "second"
    assert [(f.path, f.text) for f in files] == [
        ("python/sglang/srt/arg_groups/kv.py", "y = 1\n"),
        (SA, "x = 2\n"),
    ]
    assert files[1].blob == repo.run("rev-parse", f"HEAD:{SA}")


def test_read_git_old_revision_from_bare_clone(repo: Git, tmp_path: Path) -> None:
    bare = repo.bare_clone(tmp_path / "bare.git")
    rev, files = read_git(bare, "v0.1.0", SGLANG_FILES)
    assert rev.tags == ("v0.1.0",) and rev.subject == "first"
    assert [(f.path, f.text) for f in files] == [(SA, "x = 1\n")]


@pytest.mark.parametrize(
    ("where", "rev", "globs", "message"),
    [
        ("plain", "HEAD", SGLANG_FILES, "is not a git repository; pass a clone"),
        ("missing", "HEAD", SGLANG_FILES, "does not exist; pass the path of a git clone"),
        ("repo", "nope", SGLANG_FILES, "unknown revision 'nope' in"),
        ("repo", "HEAD", ["src/*.py"], r"match 'src/\*\.py'; pass --files GLOB"),
    ],
)
def test_read_git_errors(
    repo: Git, tmp_path: Path, where: str, rev: str, globs, message: str
) -> None:
    (tmp_path / "plain").mkdir()
    path = {"plain": tmp_path / "plain", "missing": tmp_path / "missing", "repo": repo.root}[where]
    with pytest.raises(SourceError, match=message):
        read_git(path, rev, globs)


def test_read_git_binary_blob_is_marked(repo: Git) -> None:
    repo.commit("binary", {"python/sglang/srt/arg_groups/blob.py": b"\0\1\2"})
    _, files = read_git(repo.root, "HEAD", SGLANG_FILES)
    assert [f.error is not None for f in files] == [True, False, False]


@pytest.fixture
def odd_tree(tmp_path: Path) -> Git:
    """Nested directories, a symlink, an executable, a submodule entry, a non-ASCII name and
    names that share a prefix with the file set's directories."""
    g = Git(tmp_path / "odd")
    g.commit("c1", {SA: "x = 1\n", "python/sglang/srt/arg_groups/a/b/deep.py": "d = 1\n",
                    "python/sglang/srt/arg_groups.py": "n = 1\n",
                    "python/sglang/srt/arg_groups_old/x.py": "o = 1\n",
                    "python/sglang/srt/arg_groups/caf\u00e9.py": "c = 1\n",
                    "python/sglang/srt/arg_groups/notes.txt": "t\n", "top.py": "t = 1\n"})  # fmt: skip
    os.symlink("../server_args.py", g.root / "python/sglang/srt/arg_groups/link.py")
    (g.root / "python/sglang/srt/arg_groups/run.py").write_text("r = 1\n")
    (g.root / "python/sglang/srt/arg_groups/run.py").chmod(0o755)
    g.run("add", "-A")
    sub = g.run("rev-parse", "HEAD")  # any commit id will do for a gitlink
    g.run(
        "update-index", "--add", "--cacheinfo", f"160000,{sub},python/sglang/srt/arg_groups/sub.py"
    )
    g.n += 1
    g.run("commit", "-q", "-m", "c2")
    return g


@pytest.mark.parametrize(
    "globs",
    [
        SGLANG_FILES,
        ["python/sglang/srt/arg_groups/*.py"],
        ["python/**/*.py"],
        ["**/*.py"],
        ["*.py", "python/sglang/srt/arg_groups.py"],
        ["python/sglang/srt/arg_groups/a/b/deep.py"],
        ["python/sglang/srt/arg_group*/*.py"],
        ["nothing/here.py"],
    ],
)
def test_listing_a_tree_from_git_objects_equals_ls_tree(odd_tree: Git, globs) -> None:
    """The plan reads trees through `git cat-file --batch` (no process per commit): its listing
    must be ls-tree's, blobs only (no symlink, no submodule), for every commit."""
    for rev in ("HEAD~1", "HEAD"):
        sha = odd_tree.run("rev-parse", rev)
        out = subprocess.run(["git", "-C", str(odd_tree.root), "ls-tree", "-r", "-z", sha],
                             check=True, capture_output=True).stdout  # fmt: skip
        expected = []
        for entry in filter(None, out.split(b"\0")):
            meta, path = entry.split(b"\t", 1)
            mode, kind, obj = meta.decode().split(" ")
            name = path.decode("utf-8", "surrogateescape")
            if kind == "blob" and mode != "120000" and sources.matches_any(name, globs):
                expected.append((name, obj))
        assert sources.list_files(odd_tree.root, sha, globs) == sorted(expected)
    memo: dict = {}
    with sources.BlobReader(odd_tree.root) as reader:  # through one memo of subtrees read
        both = [sources.list_files_read(reader, r, globs, memo) for r in ("HEAD~1", "HEAD")]
    assert both == [sources.list_files(odd_tree.root, r, globs) for r in ("HEAD~1", "HEAD")]


# ---------------------------------------------------------------- revision listing


def _subjects(revs) -> list[str]:
    return [r.subject for r in revs]


@pytest.mark.parametrize(
    ("revs", "tags", "touching", "expected"),
    [
        ([], None, False, ["second"]),
        (["HEAD~1"], None, False, ["docs only"]),
        (["HEAD", "HEAD~2"], None, False, ["first", "second"]),
        (["HEAD~2..HEAD"], None, False, ["docs only", "second"]),
        (["HEAD~2..HEAD"], None, True, ["second"]),
        ([], None, True, ["first", "second"]),
        ([], "v0.*", False, ["first", "second"]),
        (["HEAD~1"], "v0.2*", False, ["docs only", "second"]),
    ],
)
def test_list_revisions(repo: Git, revs, tags, touching, expected) -> None:
    got = list_revisions(repo.root, revs, tags_glob=tags, touching=touching, globs=SGLANG_FILES)
    assert _subjects(got) == expected


def test_list_revisions_with_merge_is_oldest_first(repo: Git) -> None:
    repo.run("checkout", "-q", "-b", "side")
    repo.commit("side work", {"python/sglang/srt/arg_groups/side.py": "s = 1\n"})
    repo.run("checkout", "-q", "main")
    repo.commit("main work", {SA: "x = 3\n"})
    repo.n += 1
    repo.run("merge", "-q", "--no-ff", "-m", "merge side", "side")
    revs = list_revisions(repo.root, [], touching=True, globs=SGLANG_FILES)
    assert _subjects(revs) == ["first", "second", "side work", "main work", "merge side"]
    assert revs[-1].date == "2024-01-01T06:00:00.000Z"


@pytest.mark.parametrize(
    ("revs", "tags", "message"),
    [
        (["nope"], None, "unknown revision 'nope'"),
        (["HEAD..nope"], None, "unknown revision 'nope'"),
        (["HEAD..HEAD~1"], None, r"select no commit; check the range order \(OLD\.\.NEW\)"),
        ([], "release-*", r"no tag in .* matches 'release-\*'"),
    ],
)
def test_list_revisions_errors(repo: Git, revs, tags, message) -> None:
    with pytest.raises(SourceError, match=message):
        list_revisions(repo.root, revs, tags_glob=tags)


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("https://github.com/sgl-project/sglang.git", "sgl-project/sglang"),
        ("git@github.com:Clarit-AI/Engram.git", "Clarit-AI/Engram"),
        ("https://github.com/acme/launcher", "acme/launcher"),
        ("https://gitlab.com/acme/launcher.git", None),
        ("", None),
    ],
)
def test_github_name_of_the_origin(tmp_path: Path, url: str, name: str | None) -> None:
    repo = Git(tmp_path / "r")
    if url:
        repo.run("remote", "add", "origin", url)
    assert sources.github_name(repo.root) == name


def test_links_point_at_the_origin_or_are_asked_for(tmp_path: Path) -> None:
    from kverr.pipeline import BuildSpec, GitSource, build

    repo = Git(tmp_path / "r")
    repo.commit(
        "c1", {"app/config.py": 'def check(args):\n    raise ValueError("--port is taken.")\n'}
    )
    with pytest.raises(SourceError, match=r"no GitHub origin .*pass --repo-name OWNER/NAME"):
        build(
            BuildSpec(
                out=tmp_path / "a", source=GitSource(repo.root, revs=["HEAD"]), globs=["app/*.py"]
            )
        )
    repo.run("remote", "add", "origin", "git@github.com:acme/launcher.git")
    build(
        BuildSpec(
            out=tmp_path / "b", source=GitSource(repo.root, revs=["HEAD"]), globs=["app/*.py"]
        )
    )
    (line,) = (tmp_path / "b" / "records.jsonl").read_text(encoding="utf-8").splitlines()
    rec = json.loads(line)["record"]
    assert rec["repo"] == "acme/launcher"
    assert rec["githubUrl"].startswith("https://github.com/acme/launcher/blob/")
