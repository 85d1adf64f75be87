"""`kverr build`, `kverr diff`, `kverr history` through Typer's CliRunner, plus real subprocesses."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_sources import Git
from typer.testing import CliRunner

from kverr import io
from kverr.cli import app

SA = "python/sglang/srt/server_args.py"

V1 = """import logging

logger = logging.getLogger(__name__)


class ServerArgs:
    def check(self):
        if self.port < 1024:
            raise ValueError("--port must be at least 1024")
"""
V2 = (
    V1
    + """        if self.port > 65535:
            logger.warning("--port above 65535 is clamped")
"""
)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Git:
    g = Git(tmp_path_factory.mktemp("cli") / "repo")
    g.commit("one", {SA: V1})
    g.tag("v1.0")
    g.commit("two", {SA: V2})
    g.tag("v2.0")
    return g


def run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, list(args))
    return res.exit_code, res.stdout, res.stderr


@pytest.fixture(scope="module")
def built(repo: Git, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("built")
    code, out, err = run(
        "build",
        "--git",
        str(repo.root),
        "--tags",
        "v*",
        "--out",
        str(tmp / "ds"),
        "--catalog",
        str(tmp / "c.duckdb"),
    )
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith(f"built {tmp / 'ds'} from 2 revision(s) in ")
    assert lines[0].endswith(f"s; catalog {tmp / 'c.duckdb'}")
    assert (
        lines[1]
        == "  2 records (1 error, 1 warning), 2 sites, 0 flags, 2 occurrences, 0 lineage links"
    )
    assert lines[2] == "  blobs: 2 (2 parsed, 0 cached); functions: 2 parsed, 0 cached"
    return tmp


def test_build_writes_every_dataset_file(built: Path) -> None:
    names = sorted(p.name for p in (built / "ds").iterdir())
    assert names == [
        "README.md",
        "flaghistory.jsonl",
        "flags.jsonl",
        "lineage.jsonl",
        "manifest.json",
        "occurrences.jsonl",
        "records.jsonl",
        "revisions.jsonl",
    ]
    manifest = json.loads((built / "ds" / "manifest.json").read_text())
    assert manifest["counts"]["records"] == 2 and manifest["fileSet"][0] == SA


def test_rebuild_reports_cache_hits(repo: Git, built: Path) -> None:
    code, out, _ = run("build", "--git", str(repo.root), "--tags", "v*", "--out", str(built / "ds"))
    assert code == 0
    assert out.splitlines()[2] == "  blobs: 2 (0 parsed, 2 cached); functions: 0 parsed, 0 cached"


def test_diff_human_and_json(built: Path) -> None:
    code, out, _ = run("diff", "v1.0", "v2.0", "--catalog", str(built / "c.duckdb"))
    assert code == 0
    head, _, added = out.splitlines()[:3]
    assert head.startswith("v1.0 (") and head.endswith("): 1 added, 0 removed, 0 changed, 0 moved")
    assert added == "added:"
    code, out, _ = run("diff", "v1.0", "v2.0", "--json", "--catalog", str(built / "c.duckdb"))
    data = json.loads(out)
    assert [r["message"] for r in data["added"]] == ["--port above 65535 is clamped"]
    assert data["from"]["tags"] == ["v1.0"] and data["removed"] == []


def test_history_from_a_log_line(built: Path) -> None:
    code, out, _ = run(
        "history", "WARNING: --port above 65535 is clamped", "--catalog", str(built / "c.duckdb")
    )
    assert code == 0
    lines = out.splitlines()
    assert lines[1] == "present in 1 of 2 revision(s) built"
    assert lines[2].startswith("first seen: ") and lines[2].endswith("; first release v2.0")
    code, out, _ = run(
        "history",
        "WARNING: --port above 65535 is clamped",
        "--json",
        "--catalog",
        str(built / "c.duckdb"),
    )
    assert json.loads(out)["introduced"]["release"] == "v2.0"


def test_history_takes_an_id_prefix_a_slug_or_a_line_starting_with_dashes(built: Path) -> None:
    cat = str(built / "c.duckdb")
    code, out, _ = run("history", "--port above 65535 is clamped", "--catalog", cat)
    assert code == 0
    rid = out.split()[0]
    code, out, _ = run("explain", "--json", "--port above 65535 is clamped", "--catalog", cat)
    slug = json.loads(out)["matches"][0]["record"]["slug"]
    for key in (rid[:8], slug):
        code, again, _ = run("history", key, "--catalog", cat)
        assert code == 0 and again.split()[0] == rid


def test_history_without_an_argument_lists_the_revisions(built: Path) -> None:
    code, out, _ = run("history", "--catalog", str(built / "c.duckdb"))
    assert code == 0
    lines = out.splitlines()
    assert [line.split()[-1] for line in lines[:2]] == ["v1.0", "v2.0"]
    assert lines[-1] == "2 revision(s); pass a tag, a snapshot label or a sha to --release."
    code, out, _ = run("history", "--json", "--catalog", str(built / "c.duckdb"))
    assert [r["tags"] for r in json.loads(out)["revisions"]] == [["v1.0"], ["v2.0"]]


def test_overlay_warnings_are_reported(repo: Git, tmp_path: Path) -> None:
    overlay = tmp_path / "curated.json"
    overlay.write_text(json.dumps({"00000000000000aa": {"documentation": "Stale text."}}))
    code, out, _ = run(
        "build", "--git", str(repo.root), "--out", str(tmp_path / "ds"), "--overlay", str(overlay)
    )
    assert code == 0
    lines = out.splitlines()
    assert lines[3] == "1 overlay warning(s):"
    assert lines[4].startswith(
        f"  curated overlay {overlay}: id 00000000000000aa is not in this build;"
    )


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (
            ["build", "--git", "{tmp}", "--out", "{tmp}/o"],
            2,
            "kverr: {tmp} is not a git repository; pass a clone",
        ),
        (
            ["build", "--git", "{repo}", "--rev", "nope", "--out", "{tmp}/o"],
            2,
            "kverr: unknown revision 'nope' in {repo}",
        ),
        (["build", "{tmp}/missing", "--out", "{tmp}/o"], 2, "kverr: {tmp}/missing does not exist"),
        (
            ["build", "{repo}", "--out", "{tmp}/o", "--overlay", "{tmp}/nope.json"],
            2,
            "kverr: curated overlay {tmp}/nope.json does not exist",
        ),
        (
            ["build", "{repo}", "--out", "{repo}"],
            2,
            "kverr: {repo} exists and is not a kverr dataset directory",
        ),
        (
            ["history", "0123456789abcdef", "--catalog", "{built}/c.duckdb"],
            1,
            "kverr: no record matches '0123456789abcdef'",
        ),
        (
            ["diff", "v1.0", "v9.9", "--catalog", "{built}/c.duckdb"],
            1,
            "kverr: version 'v9.9' is not a revision",
        ),
    ],
)
def test_errors_are_one_line(
    repo: Git, built: Path, tmp_path: Path, args: list[str], code: int, message: str
) -> None:
    fill = {"tmp": str(tmp_path), "repo": str(repo.root), "built": str(built)}
    got_code, out, err = run(*[a.format(**fill) for a in args])
    assert got_code == code and out == ""
    assert err.startswith(message.format(**fill)) and err.count("\n") == 1


def test_directory_build_in_a_real_subprocess(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "check.py").write_text(V2)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kverr",
            "build",
            str(tmp_path / "src"),
            "--out",
            str(tmp_path / "ds"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.startswith(f"built {tmp_path / 'ds'} from directory in ")
    revs = [json.loads(x) for x in (tmp_path / "ds" / "revisions.jsonl").read_text().splitlines()]
    assert revs == [{"date": None, "ord": 0, "sha": None, "subject": None, "tags": []}]
    manifest = json.loads((tmp_path / "ds" / "manifest.json").read_text())
    assert manifest["command"] == [
        "kverr",
        "build",
        str(tmp_path / "src"),
        "--out",
        str(tmp_path / "ds"),
    ]
    assert manifest["datasetVersion"] == "1970-01-01T00:00:00.000Z" and manifest["fileSet"] == [
        "**/*.py"
    ]


@pytest.mark.slow  # a 40-commit build interrupted by SIGINT, then resumed (a process race)
def test_interrupt_leaves_no_half_written_dataset_and_resumes(tmp_path: Path) -> None:
    g = Git(tmp_path / "repo")
    for i in range(40):
        body = "".join(
            f'    def check_{j}(self):\n        if self.x_{j} < {i}:\n            raise ValueError("--x-{j} must be at least {i}")\n'
            for j in range(i % 7 + 1)
        )
        g.commit(f"c{i}", {SA: "class ServerArgs:\n" + body})
    cmd = [
        sys.executable,
        "-m",
        "kverr",
        "build",
        "--git",
        str(g.root),
        "--touching",
        "--out",
        str(tmp_path / "ds"),
    ]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "KVERR_STRICT": "1"},
    )
    time.sleep(1.5)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    # 130: stopped by the command's boundary; -2: the signal landed while Python was still
    # starting up (before kverr runs), which is Python's own behaviour, not ours
    assert proc.returncode in (0, 130, -signal.SIGINT), err
    if proc.returncode == 130:
        assert (
            err.strip().splitlines()[-1]
            == "kverr: interrupted; run the same command again to resume."
        )
    out = tmp_path / "ds"
    # either nothing was written or the whole dataset was: never a part of it
    whole = sorted(["manifest.json", *io.DATASET_FILES, "README.md"])
    assert not out.exists() or sorted(p.name for p in out.iterdir()) == whole
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name or ".old-" in p.name]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert len((out / "revisions.jsonl").read_text().splitlines()) == 40


def test_unparsable_files_are_reported_and_the_build_goes_on(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "good.py").write_text(V1)
    (src / "broken.py").write_text("def f(:\n    pass\n")
    (src / "latin.py").write_bytes(b"x = 1\n# caf\xe9\n")
    code, out, _ = run("build", str(src), "--out", str(tmp_path / "ds"))
    assert code == 0
    lines = out.splitlines()
    assert lines[1].startswith("  1 records (1 error)")
    assert lines[3] == "2 file(s) could not be parsed:"
    assert lines[4].startswith("  broken.py:1:")
    assert (
        lines[5]
        == "  latin.py:2:6: not UTF-8 (byte 0xe9); save the file as UTF-8 or leave it out of --files"
    )
