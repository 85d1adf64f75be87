"""A build that never crashes: deep nesting, huge expressions, symlink loops and FIFOs become
ParseFailures while the other files go on; earlier-check analysis does work linear in the
checks of a function; temp files of killed builds are swept by the next one.

Sources that could segfault an unprotected libcst are built in a real `kverr build` subprocess,
so a regression fails this test instead of killing the test run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kverr.extractor import bindings as bind
from kverr.extractor import depth, extract_files
from kverr.extractor import guards as guards_mod
from kverr.extractor.sources import read_directory
from kverr.records import build_records
from kverr.records import conditions as cond

from kverr import io
from kverr.ftypes import Guard, Revision, Site, SourceFile

SA = "python/sglang/srt/server_args.py"
OK = "python/sglang/srt/arg_groups/ok.py"
OK_TEXT = (
    "def check(cfg):\n    if cfg.page_size < 0:\n"
    '        raise ValueError(f"--page-size must be positive, got {cfg.page_size}")\n'
)
HEAD = "class ServerArgs:\n    def _check(self):\n"


def _src(path: str, text: str) -> SourceFile:
    return SourceFile(path, text, "0" * 40)


def _deep(expr: str) -> str:
    return HEAD + f"        x = {expr}\n" + '        raise ValueError("--tp-size is wrong")\n'


# (case, source of server_args.py, line the failure names)
DEEP = [
    ("3,000 nested parentheses", _deep("(" * 3000 + "1" + ")" * 3000), 3),
    ("20,000-term concatenation", _deep(" + ".join(["'a'"] * 20_000)), 3),
    ("150 nested calls", _deep("f(" * 150 + "1" + ")" * 150), 3),
    ("600 chained attributes", _deep("self" + ".a" * 600), 3),
    ("3,000 parentheses in an f-string", HEAD + '        raise ValueError(f"{' + "(" * 3000 + "1" + ")" * 3000 + '}")\n', 3),
    ("200 nested not", _deep("not " * 200 + "self.x"), 3),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "text", "line"),
    # the default run keeps a nesting and a flat shape; -m slow builds every one
    [pytest.param(*c, id=c[0], marks=() if i in (0, 1) else pytest.mark.slow) for i, c in enumerate(DEEP)],
)  # fmt: skip
def test_too_deep_is_a_parse_failure_and_the_other_files_go_on(tmp_path, case, text, line):
    root = tmp_path / "src"
    for rel, body in ((SA, text), (OK, OK_TEXT)):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(body, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "kverr", "build", str(root), "--out", str(tmp_path / "ds")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, (case, proc.returncode, proc.stderr[-500:])
    assert f"  {SA}:{line}:1: {depth.TOO_DEEP}" in proc.stdout, proc.stdout
    records = (tmp_path / "ds" / "records.jsonl").read_text().splitlines()
    assert [json.loads(r)["record"]["filePath"] for r in records] == [OK]


def test_too_deep_in_process_names_file_and_line():
    """The same through the library: the deep unit fails, the file's other units still count."""
    text = (
        HEAD
        + "        x = "
        + "f(" * 150
        + "1"
        + ")" * 150
        + "\n"
        + '        raise ValueError("--tp-size is wrong")\n'
        + "    def _other(self):\n"
        + '        raise ValueError("--page-size must be a power of two")\n'
    )
    (fx,) = extract_files([_src(SA, text)])
    assert [(f.path, f.line, f.message.split(" to ")[0]) for f in fx.failures] == [
        (SA, 3, depth.TOO_DEEP)
    ]
    assert [s.line for s in fx.sites] == [6]


def test_depth_scan_passes_real_shapes_and_counts_what_nests():
    real = (
        "def f(self):\n"
        "    if (self.a and self.b and not self.c) or self.d in ['x', 'y', 'z']:\n"
        '        raise ValueError(f"--a {self.a!r} " + str(len(self.b)) + "x")\n'
    )
    assert depth.too_deep(real) is None
    assert depth.too_deep("x = " + " + ".join(["a"] * 150)) == 1
    assert depth.too_deep("x = [\n" + ",\n".join(["a"] * 5000) + "]") is None  # long, flat
    assert depth.too_deep("x = 1\ny = " + "-" * 101 + "1") == 2
    assert depth.too_deep("x = (" * 1 + "'unterminated") is None  # judged by brackets alone


def test_bytes_and_str_concatenation_is_a_failure_not_a_crash():
    (fx,) = extract_files([_src(SA, 'def f():\n    raise ValueError("a" b"b")\n')])
    assert fx.failures and fx.failures[0].line == 2 and not fx.sites


# ---------------------------------------------------------------- unreadable files


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_symlink_loops_dangling_links_and_fifos_are_reported_and_skipped(tmp_path):
    root = tmp_path / "src"
    root.mkdir()
    (root / "good.py").write_text(OK_TEXT)
    (root / "loop.py").symlink_to("loop.py")
    (root / "a.py").symlink_to("b.py")
    (root / "b.py").symlink_to("a.py")
    (root / "gone.py").symlink_to("nowhere.py")
    os.mkfifo(root / "pipe.py")  # reading it would block forever
    (root / "sub").mkdir()
    (root / "sub" / "up").symlink_to("..", target_is_directory=True)  # a directory loop
    _, files = read_directory(root)
    assert {f.path: f.error for f in files} == {
        "a.py": "1:1:it cannot be read (a symlink loop); fix it or leave it out of --files, skipped",
        "b.py": "1:1:it cannot be read (a symlink loop); fix it or leave it out of --files, skipped",
        "gone.py": "1:1:it cannot be read (No such file or directory); fix it or leave it out of --files, skipped",
        "good.py": None,
        "loop.py": "1:1:it cannot be read (a symlink loop); fix it or leave it out of --files, skipped",
        "pipe.py": "1:1:it is not a regular file (a FIFO, socket or device); fix it or leave it out of --files, skipped",
    }  # fmt: skip
    fxs = extract_files(files)
    assert sum(len(fx.sites) for fx in fxs) == 1
    assert sorted(f.path for fx in fxs for f in fx.failures) == [
        "a.py",
        "b.py",
        "gone.py",
        "loop.py",
        "pipe.py",
    ]


# ---------------------------------------------------------------- earlier checks


def _raises(n: int, early_returns: int = 0) -> str:
    body = "".join(
        f"        if self.mode == {i}:\n            return\n" for i in range(early_returns)
    )
    body += "".join(
        f"        if self.page_size == {i}:\n"
        f'            raise ValueError("--page-size {i} is not supported, got {{self.page_size}}")\n'
        for i in range(n)
    )
    return HEAD + body


def _count_calls(monkeypatch, module, name: str) -> list[int]:
    calls = [0]
    real = getattr(module, name)

    def counted(*args, **kwargs):
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


@pytest.mark.parametrize(
    ("module", "name", "shape"),
    [
        # the default run keeps the quickest shape; each of the others builds 700 checks
        pytest.param(
            cond, "_check_passed", lambda n: _raises(n), id="earlier checks", marks=pytest.mark.slow
        ),
        pytest.param(
            cond, "atoms_of", lambda n: _raises(n), id="guards read", marks=pytest.mark.slow
        ),
        pytest.param(
            guards_mod, "_exits", lambda n: _raises(10, early_returns=n), id="early exits"
        ),
        pytest.param(
            bind,
            "_simple_assignments",
            lambda n: _raises(n, early_returns=n),
            id="flag assignments",
            marks=pytest.mark.slow,
        ),
    ],
)
def test_work_per_function_is_linear_in_its_checks(monkeypatch, module, name, shape):
    """Counted, not timed: each further 100, 200 checks in one function add work in proportion
    (ratio 2); the unbounded analysis added work growing with the square (ratio 3 to 4)."""
    work = []
    for n in (100, 200, 400):
        calls = _count_calls(monkeypatch, module, name)
        build_records(extract_files([_src(SA, shape(n))]), Revision())
        work.append(calls[0])
        monkeypatch.undo()
    assert work[2] - work[1] <= 2.5 * (work[1] - work[0]), work


def test_earlier_checks_are_bounded_per_site():
    (fx,) = extract_files([_src(SA, _raises(300, early_returns=100))])
    last = fx.sites[-1]
    passed = cond.earlier_checks(last, fx.sites)
    assert len(passed) == cond.MAX_EARLIER
    assert [g.test for g in passed][-1] == "self.page_size == 298"  # the nearest ones
    exits = [g for g in last.guards if g.kind == "early-exit"]
    assert len(exits) == guards_mod.MAX_EARLY_EXITS
    assert exits[-1].test == "self.mode == 99"


def _old_earlier_checks(site: Site, siblings: list[Site]) -> tuple[Guard, ...]:
    """The unbounded analysis, as it was: the bounded one must agree on real-sized functions."""
    own = {(g.test, g.holds) for g in site.guards}
    out: dict[tuple[str, bool], Guard] = {}
    for t in siblings:
        if t.file != site.file or t.function != site.function or t.line >= site.line:
            continue
        g = cond._check_passed(t, site, own)
        if g is not None and (g.test, g.holds) not in own:
            out.setdefault((g.test, g.holds), g)
    return tuple(out.values())


def test_bounded_earlier_checks_agree_with_the_unbounded_ones(seed_module):
    golden = Path(__file__).parent / "golden" / "records"
    texts = [(p.name, p.read_text()) for p in sorted(golden.glob("*.py"))]
    texts += [("kv_cache_hook.py", seed_module), ("mixed.py", _raises(40, early_returns=5))]
    checked = 0
    for name, text in texts:
        (fx,) = extract_files([_src(name, text)])
        by_function: dict = {}
        for s in fx.sites:
            by_function.setdefault(s.function, []).append(s)
        for sites in by_function.values():
            for s in sites:
                assert cond.earlier_checks(s, sites) == _old_earlier_checks(s, sites)
                checked += 1
    assert checked > 50


# ---------------------------------------------------------------- leftovers of killed builds

DEAD = 4_999_999  # above Linux's largest pid_max (2**22): never a running process
OLD = time.time() - 2 * io.MIN_AGE


def _make(path: Path, *, folder: bool = False, mtime: float = OLD) -> Path:
    if folder:
        path.mkdir()
        (path / "records.jsonl").write_text("{}\n")
    else:
        path.write_bytes(b"x")
    os.utime(path, (mtime, mtime))
    return path


def test_sweep_removes_only_a_dead_owners_old_entries(tmp_path):
    target = tmp_path / "cat.duckdb"
    gone = [
        _make(tmp_path / f".cat.duckdb.{DEAD}.0123abcd.tmp"),
        _make(tmp_path / f".cat.duckdb.{DEAD}.0123abcd.tmp.wal"),
        _make(tmp_path / f".cat.duckdb.{DEAD}.tmp"),
    ]
    kept = [
        _make(tmp_path / f".cat.duckdb.{os.getpid()}.0123abcd.tmp"),  # owner alive
        _make(tmp_path / f".cat.duckdb.{DEAD}.4567cdef.tmp", mtime=time.time()),  # too fresh
        _make(tmp_path / f".other.duckdb.{DEAD}.0123abcd.tmp"),  # another target's
        _make(tmp_path / ".cat.duckdb.notes"),  # not a temp name
        _make(tmp_path / "cat.duckdb"),  # the target itself
    ]
    assert sorted(io.sweep(target)) == sorted(gone)
    assert [p.exists() for p in gone + kept] == [False] * 3 + [True] * 5


def test_sweep_removes_a_folder_and_never_follows_a_link(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    (tmp_path / "ds").mkdir()
    folder = _make(tmp_path / f".ds.tmp-{DEAD}", folder=True)
    link = tmp_path / f".ds.old-{DEAD}"
    link.symlink_to(outside, target_is_directory=True)
    os.utime(link, (OLD, OLD), follow_symlinks=False)
    removed = io.sweep(tmp_path / "ds")
    assert sorted(removed) == sorted([folder, link])
    assert (outside / "keep.txt").read_text() == "mine"


def test_the_only_copy_of_an_output_is_kept(tmp_path):
    """Killed between `out -> .out.old-PID` and `.out.tmp-PID -> out`: no `out`, so the old
    copy is the dataset, and stays; once `out` exists again it is a leftover."""
    old = _make(tmp_path / f".ds.old-{DEAD}", folder=True)
    assert io.sweep(tmp_path / "ds") == [] and old.is_dir()
    (tmp_path / "ds").mkdir()
    assert io.sweep(tmp_path / "ds") == [old]


def test_the_next_build_and_load_sweep_what_killed_ones_left(tmp_path):
    root = tmp_path / "src"
    (root / OK).parent.mkdir(parents=True)
    (root / OK).write_text(OK_TEXT)
    (tmp_path / "ds").mkdir()  # the dataset a killed rebuild was replacing
    stale = [
        _make(tmp_path / f".ds.tmp-{DEAD}", folder=True),
        _make(tmp_path / f".ds.old-{DEAD}", folder=True),
        _make(tmp_path / f".cat.duckdb.{DEAD}.0123abcd.tmp"),
        _make(tmp_path / f".cat.duckdb.{DEAD}.0123abcd.tmp.wal"),
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "kverr", "build", str(root), "--out", str(tmp_path / "ds"),
         "--catalog", str(tmp_path / "cat.duckdb")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in stale if p.exists()] == []
    assert (tmp_path / "ds" / "records.jsonl").is_file() and (tmp_path / "cat.duckdb").is_file()


@pytest.mark.parametrize(
    ("fmt", "out", "stale"),
    [
        ("site", "site", [".site.tmp-{dead}", ".site.old-{dead}"]),
        ("markdown", "md", [".md.tmp-{dead}"]),
        ("jsonl", "errors.jsonl", [".errors.jsonl.{dead}.tmp"]),
        ("parquet", "errors.parquet", [".errors.parquet.{dead}.tmp"]),
    ],
)
def test_the_next_export_sweeps_what_killed_ones_left(tmp_path, fmt, out, stale):
    """Exports build beside their output under names that carry their PID (a killed site
    export used to leave a `.site.XXXXXXXX` folder no later run could judge)."""
    import synth
    from kverr.catalog import load_dataset
    from kverr.feeds.exports import export
    from test_catalog import FIXTURE_RECORDS

    cat = tmp_path / "c.duckdb"
    load_dataset(synth.write_files(tmp_path / "ds", FIXTURE_RECORDS[:3]), cat)
    work = tmp_path / "out"
    work.mkdir()
    export(fmt, work / out, cat)  # the output a killed re-export was replacing
    left = [
        _make(work / name.format(dead=DEAD), folder=not name.endswith(".tmp")) for name in stale
    ]
    export(fmt, work / out, cat)
    assert [p.name for p in left if p.exists()] == []
    assert sorted(p.name for p in work.iterdir()) == [out]


class _Spans:
    """`_NAME` of extractor/link.py, counting the characters each class body it reads spans."""

    def __init__(self, rx) -> None:
        self.rx, self.read = rx, 0

    def findall(self, text: str, pos: int, endpos: int) -> list[str]:
        self.read += endpos - pos
        return self.rx.findall(text, pos, endpos)


@pytest.mark.parametrize(
    "text",
    [
        "class A:\n    pass\n" * 20_000,  # many classes: each body ends where the next begins
        "class A:\n" + "    y = 1\n" * 50_000,  # one body to the end of the file
        "class A(B, metaclass=M):\n" * 20_000,  # bodies of nothing, the metaclass test each
        "class A:\n" + "x" * 500_000,  # one endless line
    ],
    ids=["many classes", "one long body", "empty bodies", "one endless line"],
)
def test_the_classes_of_a_file_are_read_once(monkeypatch, text):
    """The classes an option's type names are read from each file's text at link time: every
    character once, however the classes are laid out (a body read to a fixed length from each
    class would read a file of many small classes again and again)."""
    from kverr.extractor import link

    spans = _Spans(link._NAME)
    monkeypatch.setattr(link, "_NAME", spans)
    monkeypatch.setattr(link, "_CLASSES", {})
    found = link._classes(SourceFile("pkg/config.py", text, "1" * 40))
    assert found and set(found) <= {"A"}
    assert spans.read <= len(text)
