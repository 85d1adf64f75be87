"""Extraction benchmark: one revision of the SGLang server-args files, in a fresh process.

Usage:
    python bench/bench_extract.py --repo MIRROR [--rev REV]   # the revision's file set
    python bench/bench_extract.py FILE [FILE ...]               # files on disk

Prints, for the same input in the same run (best of --repeat fresh subprocesses):
  * whole-process time (user+sys CPU, and wall) of `python -c 'extract the files'`,
  * the same for a baseline process that only does a stdlib `ast.parse` + `ast.walk`,
  * their ratio, and the in-process extraction time alone (cold, then with a warm cache).
Target: the extraction process under 1 s of CPU time on a 2-core machine.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GLOBS = (
    "python/sglang/srt/server_args.py",
    "python/sglang/srt/server_args_config_parser.py",
    "python/sglang/srt/arg_groups/*.py",
)

EXTRACT = """
import json, sys, time
t0 = time.process_time()
from kverr.extractor import extract_files
from kverr.ftypes import SourceFile
paths = sys.argv[1:]
sources = [SourceFile(p, open(p, encoding="utf-8").read(), "") for p in paths]
t1 = time.process_time()
cache = {}
out = extract_files(sources, cache)
t2 = time.process_time()
extract_files(sources, cache)
t3 = time.process_time()
print(json.dumps({
    "import": t1 - t0, "extract": t2 - t1, "warm": t3 - t2,
    "sites": sum(len(x.sites) for x in out), "flags": sum(len(x.flags) for x in out),
    "failures": sum(len(x.failures) for x in out),
    "lines": sum(s.text.count(chr(10)) for s in sources),
}))
"""

BASELINE = """
import ast, json, sys, time
t0 = time.process_time()
n = 0
for p in sys.argv[1:]:
    n += sum(1 for _ in ast.walk(ast.parse(open(p, encoding="utf-8").read())))
print(json.dumps({"nodes": n, "parse_walk": time.process_time() - t0}))
"""


def run(code: str, paths: list[str]) -> tuple[float, float, dict]:
    """(CPU seconds of the child, wall seconds, its JSON line)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code, *paths],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "KVERR_STRICT": "0"},
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, json.loads(out.stdout.strip().splitlines()[-1])


def from_git(repo: Path, rev: str, into: Path) -> list[str]:
    names = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "--name-only", rev, "python/sglang/srt"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    paths = []
    for name in names:
        if any(fnmatch.fnmatch(name, g) for g in GLOBS):
            blob = subprocess.run(
                ["git", "-C", str(repo), "show", f"{rev}:{name}"], capture_output=True, check=True
            ).stdout
            target = into / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(blob)
            paths.append(str(target))
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="kverr extraction benchmark")
    parser.add_argument("files", nargs="*", help="Python files to extract")
    parser.add_argument("--repo", type=Path, help="git repository (bare is fine)")
    parser.add_argument("--rev", default="HEAD", help="revision with --repo (default HEAD)")
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes per side")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        paths = list(args.files)
        if args.repo is not None:
            paths += from_git(args.repo, args.rev, Path(tmp))
        if not paths:
            parser.error("give FILE(s) or --repo MIRROR")
        ext = min((run(EXTRACT, paths) for _ in range(args.repeat)), key=lambda r: r[0])
        base = min((run(BASELINE, paths) for _ in range(args.repeat)), key=lambda r: r[0])
    info = ext[2]
    print(f"input: {len(paths)} files, {info['lines']} lines ({args.rev if args.repo else 'disk'})")
    print(f"found: {info['sites']} sites, {info['flags']} flags, {info['failures']} failures")
    print(f"extract process: cpu {ext[0]:.3f} s  wall {ext[1]:.3f} s")
    print(f"ast baseline process (parse+walk): cpu {base[0]:.3f} s  wall {base[1]:.3f} s")
    print(
        f"in-process: import {info['import']:.3f} s, extract {info['extract']:.3f} s cold, "
        f"{info['warm']:.3f} s warm cache; ast parse+walk {base[2]['parse_walk']:.3f} s"
    )
    print(f"ratio extract/ast (process cpu): {ext[0] / base[0]:.2f}x")
    print(f"ratio extract/ast (in-process): {info['extract'] / base[2]['parse_walk']:.2f}x")
    print(f"target < 1 s process cpu: {'met' if ext[0] < 1.0 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
