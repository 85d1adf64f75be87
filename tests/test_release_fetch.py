"""A release fetched from the project's repository for `kverr check` (verify/release.py): the
archive a local HTTP server plays, unpacked into the user's cache, kept only when its file set
has the blob ids the dataset records; a tampered or hostile archive is refused."""

from __future__ import annotations

import io
import subprocess
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from kverr.pipeline import BuildSpec, GitSource, build
from kverr.verify.release import find_release, releases_to_try
from kverr.verify.spec import spec_for
from test_sources import Git
from verify_fixture import sglang_files

from kverr.errors import SourceError
from kverr.profile import load_profile

PROFILE = load_profile("sglang")
SPEC = spec_for(PROFILE)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("fetch")
    g = Git(root / "repo")
    sha = g.commit("fixture", sglang_files())
    g.tag("v9.9.9")
    build(
        BuildSpec(
            out=root / "ds", source=GitSource(g.root, revs=["HEAD"], tags="v*"), profile=PROFILE
        )
    )
    good = subprocess.run(
        ["git", "-C", str(g.root), "archive", "--format=tar.gz", f"--prefix=sglang-{sha}/", sha],
        capture_output=True,
        check=True,
    ).stdout
    return root, sha, good


class _Archive(BaseHTTPRequestHandler):
    body = b""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def serve(monkeypatch, tmp_path):
    """serve(bytes): KVERR_ARCHIVE_URL points at a server on 127.0.0.1 that answers them."""
    servers = []

    def start(body: bytes) -> None:
        handler = type("Handler", (_Archive,), {"body": body})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        monkeypatch.setenv("KVERR_ARCHIVE_URL", f"http://127.0.0.1:{server.server_port}/{{sha}}")

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("KVERR_SOURCE", raising=False)
    yield start
    for server in servers:
        server.shutdown()


def fetch(project, release: str = "9.9.9"):
    root, _, _ = project
    return find_release(
        SPEC, PROFILE.files, release=release, source=None, profile=PROFILE, dataset=root / "ds"
    )


def test_a_release_is_fetched_and_checked_against_the_dataset(project, serve, tmp_path) -> None:
    _, sha, good = project
    serve(good)
    rel = fetch(project)
    assert rel.name == "v9.9.9" and rel.disk is not None
    folder = Path(rel.disk[0])
    assert folder == tmp_path / "cache" / "kverr" / "sources" / "sglang" / sha
    assert (folder / "python/sglang/srt/server_args.py").is_file()
    assert {f.path for f in rel.files} >= {"python/sglang/srt/server_args.py"}
    serve(b"not an archive")  # a second check reads the cache, not the network
    assert fetch(project).disk == rel.disk


def _archive(sha: str, members: dict[str, bytes], links: dict[str, str] = ()) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(f"sglang-{sha}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, target in dict(links).items():
            info = tarfile.TarInfo(f"sglang-{sha}/{name}")
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return out.getvalue()


def test_a_tampered_archive_is_refused_and_removed(project, serve, tmp_path) -> None:
    _, sha, _ = project
    files = {k: v.encode() for k, v in sglang_files().items()}
    files["python/sglang/srt/server_args.py"] += b"\nimport os  # planted\n"
    serve(_archive(sha, files))
    with pytest.raises(SourceError, match="does not hold the files the dataset records"):
        fetch(project)
    assert not (tmp_path / "cache" / "kverr" / "sources" / "sglang" / sha).exists()


def test_a_hostile_archive_writes_nothing_outside_its_folder(project, serve, tmp_path) -> None:
    _, sha, _ = project
    files = {k: v.encode() for k, v in sglang_files().items()}
    files["python/sglang/../../../../escaped.py"] = b"x = 1\n"
    links = {"python/sglang/srt/linked.py": "/etc/passwd"}
    serve(_archive(sha, files, links))
    rel = fetch(project)
    folder = Path(rel.disk[0])
    assert not (folder / "python/sglang/srt/linked.py").exists()
    assert not list(tmp_path.rglob("escaped.py"))


def test_offline_is_one_line_naming_the_way_out(project, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("KVERR_ARCHIVE_URL", "http://127.0.0.1:9/{sha}")  # nothing listens
    monkeypatch.delenv("KVERR_SOURCE", raising=False)
    with pytest.raises(SourceError) as err:
        fetch(project)
    said = str(err.value)
    assert "cannot download" in said and "pass --source" in said and "\n" not in said


@pytest.mark.parametrize(
    ("known", "expected"),
    [
        ({"v0.2.0", "v0.1.0", "v0.3.0rc1"}, ["v0.2.0", "v0.1.0"]),  # releases that have it
        ({"v0.3.0rc1", "0123456789ab"}, ["v0.3.0rc1"]),  # none yet: the candidates that do
        ({"0123456789ab"}, ["v0.2.0", "v0.1.0"]),  # no tag has it: every release
    ],
)
def test_the_releases_a_pasted_launch_is_tried_at(tmp_path, known, expected) -> None:
    g = Git(tmp_path / "repo")
    for n, tag in enumerate(("v0.1.0", "v0.2.0", "v0.3.0rc1")):
        g.commit(tag, {"python/sglang/srt/server_args.py": f"x = {n}\n"})
        g.tag(tag)
    assert releases_to_try(SPEC, str(g.root), known) == expected
