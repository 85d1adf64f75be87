"""`kverr build` over a hostile repository: its work stays bounded, and one odd input costs a
warning naming it, never the whole build.

Every case builds a real git repository made here with the real `kverr build` in a
subprocess (a regression then fails this test instead of taking the test run down), and
checks that the build finishes, writes the records of the ordinary file beside the odd one,
and names the odd input. Memory-hungry cases run under an address-space limit (RLIMIT_AS):
a regression meets a MemoryError, not the machine's memory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_sources import Git

SA = "python/sglang/srt/server_args.py"
OK = "python/sglang/srt/arg_groups/ok.py"
OK_TEXT = (
    "def check(cfg):\n    if cfg.page_size < 0:\n"
    '        raise ValueError(f"--page-size must be positive, got {cfg.page_size}")\n'
)
OK_MESSAGE = "--page-size must be positive, got {cfg.page_size}"

# The child sets its own limit once it has imported what a build needs, so the limit is
# "this much more than a build's own start", whatever this machine's baseline is.
LIMITED = textwrap.dedent(
    """
    import resource, sys
    import jsonschema, kverr.cli, kverr.pipeline, kverr.extractor.run, kverr.records
    size = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
    limit = size + int(sys.argv[1]) * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    sys.argv = ["kverr", *sys.argv[2:]]
    kverr.cli.main()
    """
)


def kverr_build(repo: Path, out: Path, *args: str, headroom_mb: int | None = None):
    """`kverr build --git REPO ... --out OUT` in a subprocess (at most `headroom_mb` more
    address space than its start, when given); the CompletedProcess."""
    argv = ["build", "--git", str(repo), "--out", str(out), *args]
    if headroom_mb is None:
        cmd = [sys.executable, "-m", "kverr", *argv]
    else:
        cmd = [sys.executable, "-c", LIMITED, str(headroom_mb), *argv]
    # one malloc arena: a thread's own 64 MB arena would count against the limit
    env = {**os.environ, "MALLOC_ARENA_MAX": "1"}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=out.parent)


def records(out: Path) -> dict[str, dict]:
    """errorMessage -> record of a dataset."""
    lines = (out / "records.jsonl").read_text(encoding="utf-8").splitlines()
    recs = [json.loads(line)["record"] for line in lines]
    return {r["errorMessage"]: r for r in recs}


def repo_with(tmp_path: Path, files: dict[str, str | bytes], subject: str = "odd") -> Git:
    g = Git(tmp_path / "repo")
    g.commit("ordinary", {OK: OK_TEXT})
    g.commit(subject, files)
    return g


def assert_built(proc: subprocess.CompletedProcess, out: Path) -> dict[str, dict]:
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    got = records(out)
    assert OK_MESSAGE in got, sorted(got)
    return got


# ---------------------------------------------------------------- constant folding


@pytest.mark.slow  # builds of modules whose constants double past the bound (stress)
def test_doubling_constants_are_not_folded_past_a_bound(tmp_path):
    """40 lines of `A1 = A0 + A0` would fold into 2**40 characters (a terabyte): past the
    bound the name is a runtime value, so the message keeps its placeholder."""
    lines = ['A0 = "ab"'] + [f"A{i} = A{i - 1} + A{i - 1}" for i in range(1, 41)]
    lines += ["L0 = [1, 2]"] + [f"L{i} = L{i - 1} + L{i - 1}" for i in range(1, 41)]
    body = "\n".join(lines) + (
        "\n\n\ndef f(cfg):\n"
        "    if cfg.a:\n"
        '        raise ValueError(f"--tp-size needs {A40}")\n'
        "    if cfg.b:\n"
        '        raise ValueError(f"--dp-size needs {len(L40)} and {A3}")\n'
    )
    g = repo_with(tmp_path, {SA: body})
    got = assert_built(kverr_build(g.root, tmp_path / "ds", headroom_mb=400), tmp_path / "ds")
    assert "--tp-size needs {A40}" in got
    assert "--dp-size needs {len(L40)} and abababababababab" in got  # small ones still fold


# ---------------------------------------------------------------- memory


@pytest.mark.slow  # a 3 MB module built under a memory limit
def test_extraction_memory_follows_one_function_not_the_file(tmp_path):
    """3 MB of 20,000 ordinary functions: a parse of the whole file peaks near 700 MB, more
    than the build may take here; a function at a time it stays near 150 MB. The file's one
    check is found."""
    filler = "".join(
        f"def f{i}(cfg):\n    a = cfg.x + {i}\n    b = [a, a * 2, a * 3]\n    for v in b:\n"
        f"        if v > {i}:\n            a += v\n    return {{'a': a, 'b': b}}\n\n\n"
        for i in range(20_000)
    )
    text = filler + 'def check(cfg):\n    if cfg.x:\n        raise ValueError("--ep-size is odd")\n'
    g = repo_with(tmp_path, {SA: text})
    proc = kverr_build(g.root, tmp_path / "ds", headroom_mb=300)
    assert "--ep-size is odd" in assert_built(proc, tmp_path / "ds"), proc.stderr


TRICKY = '''import logging
logger = logging.getLogger(__name__)
LIMIT = 8
NAMES = ["a", "b"] + \\
    ["c"]
TEXT = """
def not_a_function():
    raise ValueError("--in-a-string")
"""


def wrap(x):
    "doc"
    return "<" + x + ">"

def one(cfg): raise ValueError(f"--one-liner {cfg.a}")

@decorator(
    arg=1,
)
async def coro(cfg):
    s = \'\'\'at column 0
def fake(): pass
\'\'\'
    if cfg.b > LIMIT:  # a comment with a 'quote
        raise ValueError(wrap(f"--b must be <= {LIMIT}, got {cfg.b}"))
    helper(cfg.tp_size)

def helper(size):
    if size < 0:
        logger.warning("--tp-size %s is negative", size)
        NAMES.append("x")

class ServerArgs:
    tp_size: int = 1
    """The tensor parallel size."""
    dp_size: int = 1

    def __post_init__(self):
        helper(self.dp_size)

    class Inner:
        def deep(self):
            if self.x:
                raise RuntimeError("--inner is bad")

    def add_cli_args(parser):
        CHOICES = ["x", "y"]
        parser.add_argument("--tp-size", type=int, default=1, help="tp")
        parser.add_argument("--mode", choices=CHOICES)

    def check(self):
        if self.tp_size % 2 and (self.dp_size >
                                 4):
            raise ValueError(
                f"--tp-size {self.tp_size} and --dp-size"
                " do not fit"
            )

if True:
    def cond_def():
        raise ValueError("--cond")

def tabbed(x):
\tif x:
\t\traise ValueError("--tabbed")
'''


def test_the_outline_reads_what_the_whole_tree_reads(monkeypatch):
    """Past skeleton.WHOLE_FILE_BYTES a file is read as an outline and a function at a time:
    every golden source, and a file of the shapes the outline's scan must get right, give the
    same extraction both ways."""
    from kverr.extractor import skeleton
    from kverr.extractor.run import extract_raw
    from kverr.extractor.sources import decode_source

    golden = Path(__file__).parents[1] / "golden"
    texts = [(p.name, p.read_bytes()) for p in sorted(golden.rglob("*.py"))]
    texts.append((SA, TRICKY.encode()))
    for name, data in texts:
        src = decode_source(name, data)
        whole = extract_raw(src, {})
        monkeypatch.setattr(skeleton, "WHOLE_FILE_BYTES", 0)
        outlined = extract_raw(src, {})
        monkeypatch.undo()
        assert (outlined.sites, outlined.flags, outlined.failures) == (
            whole.sites,
            whole.flags,
            whole.failures,
        ), name
    assert len(whole.sites) == 7 and len(whole.flags) == 3  # (the last text: TRICKY)


def test_a_file_over_the_size_cap_is_skipped_with_its_name(tmp_path):
    from kverr.extractor.sources import MAX_SOURCE_BYTES

    huge = "x = 1\n" * (MAX_SOURCE_BYTES // 6 + 10)
    g = repo_with(tmp_path, {SA: huge})
    proc = kverr_build(g.root, tmp_path / "ds", headroom_mb=300)
    assert_built(proc, tmp_path / "ds")
    assert f"  {SA}:1:1: 16.0 MB, over the 16 MB a source file may have; skipped" in proc.stdout


@pytest.mark.slow  # two builds of a module with a 1.5-million-line statement
def test_out_of_memory_is_this_runs_failure_and_never_cached(tmp_path):
    """One statement too big for the memory the build may take: the file is reported as a
    failure of this run, named in a warning, and the next build (with memory) parses it."""
    big = "TABLE = [\n" + "    0,\n" * 1_500_000 + "]\n\n\n"
    text = big + 'def check(cfg):\n    if cfg.x:\n        raise ValueError("--ep-size is odd")\n'
    g = repo_with(tmp_path, {SA: text})
    out = tmp_path / "ds"
    first = kverr_build(g.root, out, headroom_mb=120)
    got = assert_built(first, out)
    assert "--ep-size is odd" not in got
    assert f"kverr: warning: {SA}: out of memory while parsing" in first.stderr
    again = kverr_build(g.root, out)
    assert "--ep-size is odd" in assert_built(again, out)
    assert "out of memory" not in again.stdout + again.stderr


# ---------------------------------------------------------------- odd inputs


def test_a_lone_surrogate_escape_keeps_a_visible_escape(tmp_path):
    odd = (
        "def check(cfg):\n    if cfg.x:\n"
        '        raise ValueError("--tp-size \\ud800 is \\udcff odd")\n'
    )
    g = repo_with(tmp_path, {SA: odd})
    got = assert_built(kverr_build(g.root, tmp_path / "ds"), tmp_path / "ds")
    assert "--tp-size \\ud800 is \\udcff odd" in got


def test_commit_messages_with_control_characters_are_read_whole(tmp_path):
    g = Git(tmp_path / "repo")
    g.commit("ordinary\x01subject", {OK: OK_TEXT})
    g.commit("second", {SA: 'def f(cfg):\n    raise ValueError("--dp-size is odd")\n'})
    g.run("commit", "--allow-empty", "-q", "-m", "third\n\nbody \x01 with\x01 \x02 bytes")
    proc = kverr_build(g.root, tmp_path / "ds", "--touching")
    got = assert_built(proc, tmp_path / "ds")
    assert "--dp-size is odd" in got
    rows = [json.loads(line) for line in (tmp_path / "ds" / "revisions.jsonl").open()]
    assert [r["subject"] for r in rows] == ["ordinary\x01subject", "second"]  # (third: no file)


def test_a_record_failing_the_schema_is_skipped_alone(tmp_path):
    """A message over the schema's 20,000 characters, and a flag whose name has a space (its
    argparse records cannot name it): those records are left out, each named in a warning
    with its file:line, at every build (the second one reads the first one's cache)."""
    long = "--tp-size " + "a" * 20_001
    text = (
        "def check(cfg):\n    if cfg.x:\n"
        f'        raise ValueError("{long}")\n'
        "    if cfg.y:\n"
        '        raise ValueError("--dp-size is odd")\n'
        "\n\n"
        "def add_cli_args(parser):\n"
        '    parser.add_argument("--odd name", type=int, default=1)\n'
    )
    g = repo_with(tmp_path, {SA: text})
    out = tmp_path / "ds"
    for _ in range(2):
        proc = kverr_build(g.root, out)
        got = assert_built(proc, out)
        assert "--dp-size is odd" in got and long not in got
        warned = [line for line in proc.stderr.splitlines() if "record skipped" in line]
        assert len(warned) == 3, proc.stderr
        assert warned[0].startswith(f"kverr: warning: record skipped at {SA}:3: record ")
        assert "fails schema v2 at field messagePattern" in warned[0]
        assert all(f"{SA}:9: record " in w and "'--odd name'" in w for w in warned[1:])


def test_odd_file_names_are_linked_percent_encoded(tmp_path):
    """A newline, a space, an accent, and a byte that is not UTF-8 (kept as the surrogate
    escape it decodes to, written out as the visible `\\udcff`)."""
    odd = "python/sglang/srt/arg_groups/new\nline \xe9.py"
    raw = "python/sglang/srt/arg_groups/raw\udcff.py"
    g = repo_with(
        tmp_path,
        {
            odd: 'def f(cfg):\n    raise ValueError("--dp-size is odd")\n',
            raw: 'def f(cfg):\n    raise ValueError("--pp-size is odd")\n',
        },
    )
    got = assert_built(kverr_build(g.root, tmp_path / "ds"), tmp_path / "ds")
    rec = got["--dp-size is odd"]
    assert rec["filePath"] == odd
    assert rec["githubUrl"].endswith("/arg_groups/new%0Aline%20%C3%A9.py#L1-L2")
    rec = got["--pp-size is odd"]
    assert rec["filePath"] == "python/sglang/srt/arg_groups/raw\\udcff.py"
    assert rec["githubUrl"].endswith("/arg_groups/raw%FF.py#L1-L2")


# ---------------------------------------------------------------- git


def test_a_ref_named_like_an_option_writes_nothing(tmp_path):
    g = repo_with(tmp_path, {SA: 'def f(cfg):\n    raise ValueError("--dp-size is odd")\n'})
    g.run("update-ref", "refs/tags/--output=X", "HEAD~1")
    out = tmp_path / "ds"
    proc = kverr_build(g.root, out, "--", "--output=X..HEAD")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("kverr: revision '--output=X' starts with '-'")
    assert len(proc.stderr.splitlines()) == 1
    assert [p.name for p in (g.root, tmp_path) for p in p.iterdir() if "X" in p.name] == []
    proc = kverr_build(g.root, out, "refs/tags/--output=X..HEAD")
    assert "--dp-size is odd" in records(out) and proc.returncode == 0
    assert [p.name for p in (g.root, tmp_path) for p in p.iterdir() if "X" in p.name] == []


def test_the_repositorys_own_config_runs_nothing(tmp_path):
    """A signed commit in a repository whose config asks `git log` to check signatures with
    a program of its choosing: the build reads the log without running it."""
    g = repo_with(tmp_path, {SA: 'def f(cfg):\n    raise ValueError("--dp-size is odd")\n'})
    head = g.run("rev-parse", "HEAD")
    tree = g.run("rev-parse", "HEAD^{tree}")
    commit = (
        f"tree {tree}\nparent {head}\n"
        "author t <t@example.com> 1704070800 +0000\ncommitter t <t@example.com> 1704070800 +0000\n"
        "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAd\n -----END PGP SIGNATURE-----\n"
        "\nsigned\n"
    )
    obj = tmp_path / "commit.txt"
    obj.write_text(commit)
    signed = g.run("hash-object", "-t", "commit", "-w", str(obj))
    g.run("update-ref", "refs/heads/main", signed)
    marker = tmp_path / "ran"
    program = tmp_path / "gpg.sh"
    program.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    program.chmod(0o755)
    g.run("config", "log.showSignature", "true")
    g.run("config", "gpg.program", str(program))
    hook = g.root / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    proc = kverr_build(g.root, tmp_path / "ds")
    assert_built(proc, tmp_path / "ds")
    assert not marker.exists()
