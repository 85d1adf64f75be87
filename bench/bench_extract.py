"""One revision of the SGLang server-args files: a cold build, a warm rebuild and extraction
alone, each as a ratio to the `ast.parse` of server_args.py measured in the same run.

    python bench/bench_extract.py --repo MIRROR [--rev REV] [--rounds 5]

Floor: a fresh process that reads server_args.py and runs the stdlib `ast.parse` on it (a
build cannot do less than parse the largest file once). Each round runs, in turn:
  * the floor;
  * `kverr build --git MIRROR --rev REV` with a new, empty cache (cold: every function parsed);
  * the same build again on that cache (warm: nothing to parse, imports off the path);
  * `extract_files` over the revision's files in a fresh process (extraction alone);
  * a reference: libcst's import and parse of the same files alone, no extraction (the
    parser the design card names);
  * the design card's floor: in one process, libcst's import and parse of exactly the units
    the extractor hands it (the functions that hold a site, captured from a real extraction),
    then jsonschema's validation of every record the cold build wrote (the validator the
    design card names). No libcst and jsonschema build can do less than these two, and the
    floor's own parse of the module comes on top of them.
Medians of wall time and of the child's CPU time. Target: the cold build <= 8x.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from timed import KVERR, timed

from kverr.profile import load_profile

TARGET = 8.0
FLOOR = "import ast, sys; ast.parse(open(sys.argv[1], encoding='utf-8').read())"
# What the design card's parser costs by itself: libcst's import and its parse of the same
# files, no metadata, no extraction (a cold build cannot go below it either).
LIBCST = """
import sys
import libcst
for p in sys.argv[1:]:
    libcst.parse_module(open(p, encoding="utf-8").read())
"""
# The texts the extractor hands libcst (its units), captured from a real extraction.
UNITS = """
import json, sys
import libcst
from kverr.extractor import extract_files
from kverr.ftypes import SourceFile
texts = []
parse = libcst.parse_module
libcst.parse_module = lambda text: texts.append(text) or parse(text)  # run.py's cst.parse_module
extract_files([SourceFile(p, open(p, encoding="utf-8").read(), "") for p in sys.argv[2:]], {})
json.dump(texts, open(sys.argv[1], "w"))
"""
DESIGN_FLOOR = """
import json, sys
import libcst
for text in json.load(open(sys.argv[1])):
    libcst.parse_module(text)
from kverr.schema import validate_record
for line in open(sys.argv[2], encoding="utf-8"):
    validate_record(json.loads(line)["record"])
"""
EXTRACT = """
import sys
from kverr.extractor import extract_files
from kverr.ftypes import SourceFile
extract_files([SourceFile(p, open(p, encoding="utf-8").read(), "") for p in sys.argv[1:]], {})
"""


def once(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child and its own children) of one run."""
    return timed(cmd, env=env, cwd=tempfile.gettempdir())[:2]


def from_git(repo: Path, rev: str, globs: list[str], into: Path) -> list[Path]:
    names = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "--name-only", rev],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    paths = []
    for name in names:
        if any(fnmatch.fnmatch(name, g) for g in globs):
            blob = subprocess.run(
                ["git", "-C", str(repo), "show", f"{rev}:{name}"], capture_output=True, check=True
            ).stdout
            target = into / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(blob)
            paths.append(target)
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", type=Path, required=True, help="SGLang git repository (bare is fine)")
    ap.add_argument("--rev", default="HEAD", help="the revision built (default HEAD)")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    profile = load_profile("sglang")
    env = {**os.environ, "KVERR_STRICT": "0"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its .pyc files
    with tempfile.TemporaryDirectory(prefix="kverr-bench-") as tmp:
        t = Path(tmp)
        paths = from_git(args.repo, args.rev, list(profile.files), t / "src")
        main_file = next(p for p in paths if p.name == "server_args.py")
        lines = sum(p.read_text(encoding="utf-8").count("\n") for p in paths)

        def build(n: int) -> list[str]:
            return [KVERR, "build", "--git", str(args.repo.resolve()), "--rev", args.rev,
                    "--repo-name", profile.repository, "--out", str(t / f"out{n}"),
                    "--cache", str(t / f"cache{n}.sqlite")]  # fmt: skip

        runs: dict[str, list[tuple[float, float]]] = {
            "floor": [], "cold build": [], "warm rebuild": [], "extract alone": [],
            "libcst parse": [], "design floor": [],
        }  # fmt: skip
        once([sys.executable, "-c", FLOOR, str(main_file)], env)  # warm-up (.pyc, page cache)
        once([sys.executable, "-c", EXTRACT, *map(str, paths)], env)
        units = t / "units.json"
        once([sys.executable, "-c", UNITS, str(units), *map(str, paths)], env)
        once(build(-1), env)  # the records the design floor validates
        written = t / "out-1" / "records.jsonl"
        floor_args = [sys.executable, "-c", DESIGN_FLOOR, str(units), str(written)]
        n_units = len(json.loads(units.read_text(encoding="utf-8")))
        n_records = sum(1 for _ in written.open(encoding="utf-8"))
        for n in range(args.rounds):
            runs["floor"].append(once([sys.executable, "-c", FLOOR, str(main_file)], env))
            runs["cold build"].append(once(build(n), env))
            runs["warm rebuild"].append(once(build(n), env))
            runs["extract alone"].append(
                once([sys.executable, "-c", EXTRACT, *map(str, paths)], env)
            )
            runs["libcst parse"].append(once([sys.executable, "-c", LIBCST, *map(str, paths)], env))
            runs["design floor"].append(once(floor_args, env))
    wall = {k: statistics.median(w for w, _ in v) for k, v in runs.items()}
    cpu = {k: statistics.median(c for _, c in v) for k, v in runs.items()}
    print(f"{args.rev}: {len(paths)} files, {lines} lines; {args.rounds} rounds in turn, medians")
    for name in runs:
        print(
            f"  {name:<14} wall {wall[name]:7.3f} s ({wall[name] / wall['floor']:5.2f}x)"
            f"   cpu {cpu[name]:7.3f} s ({cpu[name] / cpu['floor']:5.2f}x)"
        )
    print(
        f"design floor: libcst's import and parse of the {n_units} units the extractor parses"
        f" and jsonschema's validation of the {n_records} records the build wrote:"
        f" {wall['design floor'] / wall['floor']:.2f}x wall, before any extraction, record or"
        " file is made (the module's own parse, the floor, comes on top)"
    )
    ratio = wall["cold build"] / wall["floor"]
    print(
        f"cold build / ast.parse floor: {ratio:.2f}x wall, {cpu['cold build'] / cpu['floor']:.2f}x"
        f" cpu (target <= {TARGET:g}x: {'PASS' if ratio <= TARGET else 'FAIL'})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
