"""Hostile input, measured: text, memory, build and bounds figures, each probe bounded.

    python bench/bench_hostile.py [--only text,memory,build,bounds] [--timeout 120] [--big-mb 200]
        [--source-mb 10] [--full-build]

text   - `Catalog.explain` CPU time on adversarial pastes (runs of spaces, long words after a
         known word, `(` x N, repeated prefixes, repeated pattern literals, one endless line, the
         literals of a pattern with side-by-side placeholders over and over) at
         1 KB, 10 KB and 100 KB, with the 100 KB / 10 KB ratio (linear: ~10; quadratic: ~100).
         Each probe runs in a child process with --timeout, so a quadratic one cannot hang the run.
memory - peak RSS of `kverr explain --file` over /dev/zero (15 s), a --big-mb single-line file and
         a --big-mb log, against `kverr explain "x"` (the baseline measured in the same run).
build  - `kverr build` of generated sources: 3,000 nested parentheses, a 20,000-term concatenation,
         a symlink loop, 200/400/800 raises on one flag; and whether a killed build's temp files
         are swept by the next build.
bounds - a --source-mb file of small functions, each with a raise: peak RSS and CPU of its
         extraction read whole (the path every file took before the outline) and as an outline
         (extractor/skeleton.py), and with --full-build of a whole `kverr build` of it; builds
         of 1,000 to 8,000 raises (files of 1,000): CPU seconds and Python calls (cProfile,
         which the machine's load does not change), each against half as many (linear: 2.0);
         40 lines of `A1 = A0 + A0` (a terabyte, folded).

Everything is local: a catalog loaded from the packaged dataset into a temp dir, files in a temp
dir, children killed at their timeout. Nothing here asserts: it prints figures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timed import KVERR

KB = 1024
SIZES = (1 * KB, 10 * KB, 100 * KB)


# ---------------------------------------------------------------- text


def shapes(n: int) -> dict[str, str]:
    """Adversarial pastes of about `n` characters."""
    word = "x" * 8000
    return {
        "run of spaces": "a" + " " * (n - 2) + "b",
        "long words after a known word": "\n".join(
            f"requires {word}" for _ in range(max(1, n // 8010))
        )[:n],
        "( x N": "(" * n,
        "repeated prefix": ("[rank0]: " * (n // 9))[:n],
        "pattern literals repeated": (" cannot be empty list" * (n // 21 + 1))[:n],
        "value before a literal": ("y" * 7000 + " is not found. ") * (n // 7015 + 1),
        "one endless line": ("--tp-size " * (n // 10 + 1))[:n],
        "ellipsis after spaces": "--ssl-keyfile requires" + " " * (n - 40) + "...x",
    }


# Shapes made of the catalog's own messages: the words that make patterns run.
CATALOG_SHAPES = (
    "leading wildcards, literal after 300 x",
    "every message on one line",
    "adjacent placeholders, literals repeated",
)


def catalog_shape(cat, name: str, n: int) -> str:
    from kverr.catalog import patterns

    recs = [r for r in cat.records() if r.get("messagePattern")]
    if name == CATALOG_SHAPES[0]:
        lead = "(?P<v0>.{0,256}?)"
        rest = [r["messagePattern"][len(lead) :].split("(?P<")[0] for r in recs]
        pieces = [
            "x" * 300 + p.replace("\\", "")
            for p, r in zip(rest, recs, strict=True)
            if r["messagePattern"].startswith(lead)
        ]
    elif name == CATALOG_SHAPES[2]:
        # a pattern with two placeholders side by side (`use {a}{b} instead?`): its literals
        # over and over, each start's placeholders finding the next literal again and again,
        # the closing literal too far to match (`re` multiplied their 257 lengths)
        pieces = []
        for r in recs:
            p = r["messagePattern"]
            runs = patterns.shape(p).runs
            if ")(?P<" in p and len(runs) >= 2:
                cycle = runs[0] + "1.5Gi" + "".join(runs[1:-1])
                pieces.append(runs[-1] + " " + cycle * 60 + "y" * 600)
    else:
        pieces = [r["errorMessage"] for r in recs]
    one = " ".join(pieces)
    return (one * (n // len(one) + 1))[:n]


def _time_explain(catalog: str, name: str, n: int) -> float:
    from kverr.catalog import open_catalog

    with open_catalog(catalog) as cat:
        if name in ISSUE_FIGURES:
            text = ISSUE_FIGURES[name]()
        elif name in CATALOG_SHAPES:
            text = catalog_shape(cat, name, n)
        else:
            text = shapes(n)[name]
        cat.explain("warm up --tp-size")
        t0 = time.process_time()  # CPU: the machine may be busy with other work
        try:
            cat.explain(text)
        except Exception as exc:  # a budget refusal is an answer too: report how long it took
            print(f"({type(exc).__name__})", end=" ", file=sys.stderr)
        return time.process_time() - t0


def text_probe(catalog: str, timeout: float) -> None:
    print("## text: Catalog.explain CPU time (s) by paste size; ratio = 100 KB / 10 KB")
    print(f"{'shape':40} {'1 KB':>8} {'10 KB':>8} {'100 KB':>8} {'ratio':>7}")
    for name in [*shapes(100), *CATALOG_SHAPES]:
        row = []
        for n in SIZES:
            took = _in_child(catalog, name, n, timeout)
            row.append(float(took.split()[0]) if not took.startswith(">") else float("inf"))
        ratio = row[2] / row[1] if row[1] > 0 else float("nan")
        cells = " ".join(
            f"{t:8.3f}" if t != float("inf") else f"{'>' + str(int(timeout)):>8}" for t in row
        )
        print(f"{name:40} {cells} {ratio:7.1f}", flush=True)
    for label in ISSUE_FIGURES:
        print(f"{label}: {_in_child(catalog, label, 0, timeout)}", flush=True)


# The two probes the issue names, exactly as it states them.
ISSUE_FIGURES = {
    "20,000 spaces in a line": lambda: "a" + " " * 20000 + "b",
    "20 long words after 'requires' (164 KB)": lambda: "\n".join(["requires " + "x" * 8192] * 20),
}


def _in_child(catalog: str, name: str, n: int, timeout: float) -> str:
    here = str(Path(__file__).parent)
    code = (
        f"import sys; sys.path.insert(0, {here!r}); import bench_hostile as b;"
        f" print(b._time_explain({catalog!r}, {name!r}, {n}))"
    )
    try:
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout
        )
        return f"{float(out.stdout.strip() or 'nan'):.3f} s"
    except subprocess.TimeoutExpired:
        return f"> {timeout:.0f} s (killed)"


# ---------------------------------------------------------------- memory


def peak_rss_mb(cmd: list[str], timeout: float, env: dict[str, str]) -> tuple[float, str]:
    """(peak RSS in MB, how it ended) of `cmd`, killed at `timeout` seconds."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    t0 = time.perf_counter()
    ended = None
    while ended is None:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            code = os.waitstatus_to_exitcode(status)
            ended = f"exit {code} after {time.perf_counter() - t0:.1f} s"
            break
        if time.perf_counter() - t0 > timeout:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            ended = f"killed at {timeout:.0f} s"
        time.sleep(0.05)
    proc.returncode = 0
    err = proc.stderr.read().decode(errors="replace").strip().splitlines() if proc.stderr else []
    proc.stderr.close()
    return usage.ru_maxrss / 1024, ended + (f" ({err[-1][:100]})" if err else "")


def load_catalog(catalog: str) -> None:
    code = (
        "from kverr.catalog import load_datasets, store;"
        f"load_datasets(store.packaged_datasets(), {catalog!r})"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def memory_probe(catalog: str, timeout: float, big_mb: int) -> None:
    env = {**os.environ, "KVERR_CATALOG": catalog}
    print(f"## memory: peak RSS of `kverr explain --file` (MB), timeout {timeout:.0f} s")
    base, how = peak_rss_mb([KVERR, "explain", "--ssl-keyfile requires"], timeout, env)
    print(f"baseline `kverr explain <line>`: {base:.0f} MB ({how})", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        one = Path(tmp) / "one-line.log"
        with one.open("w") as fh:
            chunk = "y" * (1 << 20)
            for _ in range(big_mb):
                fh.write(chunk)
        log = Path(tmp) / "big.log"
        with log.open("w") as fh:
            block = (
                "[2026-04-07 10:05:08 TP0] Load weight end. type=LlamaForCausalLM, avail mem=70.1 GB\n"
                "[2026-04-07 10:05:09 TP0] ValueError: --ssl-keyfile requires --ssl-certfile to be specified as well.\n"
            ) * 6000
            for _ in range(max(1, big_mb * (1 << 20) // len(block))):
                fh.write(block)
        # 30,000 values of one message: findings are capped (10,000) and share their record
        many = Path(tmp) / "distinct.log"
        with many.open("w") as fh:
            for i in range(30_000):
                fh.write(
                    "AssertionError: fa3, aiter, triton, trtllm_mha or intel_xpu is required for"
                    f" Llama4 model but got backend-{i}-{'z' * 200}\n"
                )
        for label, path, limit, more in (
            ("/dev/zero", "/dev/zero", 15.0, []),
            (f"{big_mb} MB single line", str(one), timeout, []),
            (f"{big_mb} MB log", str(log), timeout * 5, []),
            ("30,000 distinct findings, --json", str(many), timeout, ["--json"]),
        ):
            rss, how = peak_rss_mb([KVERR, "explain", "--file", path, *more], limit, env)
            print(f"{label}: {rss:.0f} MB, {rss / base:.1f}x baseline ({how})", flush=True)


# ---------------------------------------------------------------- build

SERVER_ARGS = "python/sglang/srt/server_args.py"
HEADER = """import dataclasses


@dataclasses.dataclass
class ServerArgs:
    page_size: int = 1

    def __post_init__(self):
        self._check()

"""


def _raises(n: int) -> str:
    body = "".join(
        f"        if self.page_size == {i}:\n"
        f'            raise ValueError("--page-size {i} is not supported, got {{self.page_size}}")\n'
        for i in range(n)
    )
    return HEADER + "    def _check(self):\n" + body


def build_case(tmp: Path, name: str, text: str | None) -> Path:
    root = tmp / name
    target = root / SERVER_ARGS
    target.parent.mkdir(parents=True)
    target.write_text(text if text is not None else _raises(3), encoding="utf-8")
    # a second, ordinary file, so "the other files go on" is visible in the record count
    other = root / "python/sglang/srt/arg_groups/ok.py"
    other.parent.mkdir(parents=True)
    other.write_text(
        "def check(cfg):\n    if cfg.page_size < 0:\n"
        '        raise ValueError(f"--page-size must be positive, got {cfg.page_size}")\n',
        encoding="utf-8",
    )
    return root


def run_build(root: Path, timeout: float) -> str:
    """How `kverr build` of `root` ended: exit code, CPU seconds of the child, last line."""
    out = root.parent / f"{root.name}-out"
    before = os.times()
    try:
        proc = subprocess.run(
            [KVERR, "build", str(root), "--out", str(out), "--cache", str(out) + ".sqlite"],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return f"> {timeout:.0f} s (killed)"
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    last = (proc.stderr.strip().splitlines() or proc.stdout.strip().splitlines() or [""])[-1]
    return f"exit {proc.returncode}, {cpu:.1f} s CPU: {last[:140]}"


def build_probe(timeout: float) -> None:
    print("## build: `kverr build DIR` on generated sources")
    nested = HEADER + "    def f(self):\n        x = " + "(" * 3000 + "1" + ")" * 3000 + "\n"
    nested += '        raise ValueError("--page-size is wrong")\n'
    concat = HEADER + "    def f(self):\n        x = " + " + ".join(["'a'"] * 20000) + "\n"
    concat += '        raise ValueError("--page-size is wrong")\n'
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        for name, text in (("nested-3000", nested), ("concat-20000", concat)):
            print(f"{name}: {run_build(build_case(tmp, name, text), timeout)}", flush=True)
        loop = build_case(tmp, "symlink-loop", None)
        (loop / "python/sglang/srt/arg_groups/loop.py").symlink_to("loop.py")
        print(f"symlink loop: {run_build(loop, timeout)}", flush=True)
        for n in (200, 400, 800, 1600):
            root = build_case(tmp, f"raises-{n}", _raises(n))
            print(f"{n} raises on one flag: {run_build(root, timeout)}", flush=True)
        for n in (400, 1600):
            text = _raises(n).replace(
                "    def _check(self):\n",
                "    def _check(self):\n"
                + "".join(f"        if self.mode == {i}:\n            return\n" for i in range(n)),
            )
            root = build_case(tmp, f"returns-{n}", text)
            print(f"{n} early returns, then {n} raises: {run_build(root, timeout)}", flush=True)
        # leftovers of a killed build: a dead PID's temp folder and catalog files, made old
        root = build_case(tmp, "leftovers", None)
        out = tmp / "ds"
        out.mkdir()  # the dataset the killed build was replacing
        dead = 4_999_999  # above any pid_max default: never a live process
        stale = [
            tmp / f".ds.tmp-{dead}",
            tmp / f".ds.old-{dead}",
            tmp / f".cat.duckdb.{dead}.0123abcd.tmp",
            tmp / f".cat.duckdb.{dead}.0123abcd.tmp.wal",
        ]
        stale[0].mkdir()
        stale[1].mkdir()
        for p in stale[2:]:
            p.write_bytes(b"x")
        for p in stale:
            os.utime(p, (time.time() - 86400, time.time() - 86400))
        subprocess.run(
            [KVERR, "build", str(root), "--out", str(out), "--catalog", str(tmp / "cat.duckdb")],
            capture_output=True,
            timeout=timeout,
        )
        left = [p.name for p in stale if p.exists()]
        print(f"stale temp files left after the next build: {len(left)} of {len(stale)} {left}")


# ---------------------------------------------------------------- bounds


def small_functions(n: int, start: int = 0) -> str:
    """`n` small functions of about 150 bytes, each with one raise."""
    return "".join(
        f"def check_{i}(cfg):\n"
        f"    if cfg.page_size == {i}:\n"
        f'        raise ValueError(f"--page-size {i} is not supported, got {{cfg.page_size}}")\n'
        f"    return cfg\n\n\n"
        for i in range(start, start + n)
    )


# A child extracts one file, as a build does (the sites kept in the function cache), and
# says its CPU seconds: `whole` reads the file with one ast.parse, as every file was before.
EXTRACT = """
import sys, time
from kverr.extractor import skeleton
from kverr.extractor.run import extract_raw
from kverr.extractor.sources import read_disk_file
from pathlib import Path
if sys.argv[2] == "whole":
    skeleton.WHOLE_FILE_BYTES = 1 << 40
src = read_disk_file(Path(sys.argv[1]), "python/sglang/srt/server_args.py")
units = []
t = time.process_time()
fx = extract_raw(src, {}, None, units)
print(len(units), "functions with sites,", len(fx.failures), "failures,",
      f"{time.process_time() - t:.0f} s CPU", file=sys.stderr)  # (peak_rss_mb shows stderr)
"""

# A child builds a directory and prints its CPU seconds, or (profiled) its Python calls.
BUILD = """
import cProfile, pstats, sys, time
from pathlib import Path
from kverr.pipeline import BuildSpec, build
root, profiled = Path(sys.argv[1]), sys.argv[2] == "calls"
run = lambda: build(BuildSpec(out=root / "ds", source=root / "src", cache=root / "c.sqlite",
                              globs=["**/*.py"]))
if profiled:
    prof = cProfile.Profile()
    prof.runcall(run)
    print(pstats.Stats(prof).total_calls)
else:
    t = time.process_time()
    run()
    print(f"{time.process_time() - t:.1f}")
"""


def _child(code: str, *args: str, timeout: float) -> str:
    try:
        out = subprocess.run(
            [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return f"> {timeout:.0f} s (killed)"
    return (out.stdout.strip() or out.stderr.strip()[-200:]).splitlines()[-1]


def bounds_probe(timeout: float, source_mb: float, full_build: bool) -> None:
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        target = tmp / "big" / "src" / SERVER_ARGS
        target.parent.mkdir(parents=True)
        n = int(source_mb * (1 << 20) / len(small_functions(1, 10_000)))
        target.write_text(small_functions(n), encoding="utf-8")
        size = target.stat().st_size / (1 << 20)
        print(f"## bounds: one {size:.1f} MB file of {n:,} small functions, each with a raise")
        for mode in ("whole", "outline"):
            cmd = [sys.executable, "-c", EXTRACT, str(target), mode]
            rss, how = peak_rss_mb(cmd, timeout * 20, dict(os.environ))
            print(f"extraction, {mode}: peak RSS {rss:.0f} MB ({how})", flush=True)
        if full_build:
            out = tmp / "big" / "ds"
            cmd = [KVERR, "build", str(target.parents[3]), "--out", str(out)]
            rss, how = peak_rss_mb(cmd, timeout * 60, dict(os.environ))
            print(f"kverr build: peak RSS {rss:.0f} MB ({how})", flush=True)
        print("## bounds: builds by raises (files of 1,000); ratio = against half as many")
        print(f"{'raises':>8} {'CPU s':>8} {'ratio':>6} {'calls':>12} {'ratio':>6}")
        before = None
        for raises in (1000, 2000, 4000, 8000):
            root = tmp / f"scale-{raises}"
            for k in range(0, raises, 1000):
                f = root / "src" / f"m{k}.py"
                f.parent.mkdir(parents=True, exist_ok=True)
                f.write_text(small_functions(1000, k), encoding="utf-8")
            row = []
            for what in ("cpu", "calls"):
                shutil.rmtree(root / "ds", ignore_errors=True)
                (root / "c.sqlite").unlink(missing_ok=True)
                got = _child(BUILD, str(root), what, timeout=timeout * 20)
                row.append(float(got) if got.replace(".", "").isdigit() else float("nan"))
            ratios = [a / b for a, b in zip(row, before, strict=True)] if before else ["", ""]
            cells = [f"{r:6.2f}" if r != "" else f"{'':6}" for r in ratios]
            print(f"{raises:>8} {row[0]:8.1f} {cells[0]} {row[1]:12,.0f} {cells[1]}", flush=True)
            before = row
        lines = ['A0 = "ab"'] + [f"A{i} = A{i - 1} + A{i - 1}" for i in range(1, 41)]
        text = "\n".join(lines) + '\n\n\ndef f(cfg):\n    raise ValueError(f"--x {A40}")\n'
        root = build_case(tmp, "doubling", HEADER + text)
        print(f"40 doubling constants (2**40 characters folded): {run_build(root, timeout)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="text,memory,build,bounds")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--big-mb", type=int, default=200)
    ap.add_argument("--source-mb", type=float, default=10.0)
    ap.add_argument("--full-build", action="store_true", help="also `kverr build` the big file")
    args = ap.parse_args()
    only = set(args.only.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        catalog = str(Path(tmp) / "kverr.duckdb")
        # Every shipped project (SGLang and vLLM), as `kverr explain` sees them. Loaded by a
        # child: Linux carries a parent's peak RSS into the ru_maxrss of every child it forks,
        # so this process must stay small for the memory probe's figures to be the child's own.
        load_catalog(catalog)
        if "text" in only:
            text_probe(catalog, args.timeout)
        if "memory" in only:
            memory_probe(catalog, args.timeout, args.big_mb)
    if "build" in only:
        build_probe(args.timeout)
    if "bounds" in only:
        bounds_probe(args.timeout, args.source_mb, args.full_build)


if __name__ == "__main__":
    main()
