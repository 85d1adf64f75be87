"""Whole-process `kverr explain "<line>"`: its ratio to the `import duckdb` floor, same run.

Floor: `python -c "import duckdb"` (a bare interpreter plus duckdb, which every explain needs).
Target: `explain --json` <= 1.4x the floor. Each round runs the floor and every
explain once, in turn (A B C D A B C D ...), so load from other jobs on the machine hits them
alike; figures are medians over the rounds, wall time and the child's CPU time (the CPU
ratio moves less with load). kverr imports DuckDB's engine module `_duckdb` alone, not the
`duckdb` package that re-exports it (catalog/engine.py: the package's own Python costs 100
ms), so two more rows show that engine's import and what no explain can skip beyond it:
importing Typer and opening a connection. The ratio to the engine is printed as well.

The console script runs in a fresh process each time, with bytecode caching on (an installed
package has its .pyc files; one warm-up run writes them for a checkout).

    python bench/bench_explain.py [--catalog FILE] [--rounds 15]

Without --catalog it uses $KVERR_CATALOG or the packaged catalog (built into the cache first,
outside the timing), else a synthetic catalog of 600 records, and says which.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from kverr.catalog import open_catalog
from timed import KVERR, timed

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))  # the synthetic datasets of tests/synth.py
import synth  # noqa: E402

TARGET = 1.4


def sample_line(path: Path) -> str:
    with open_catalog(path) as cat:
        for rec in cat.records():
            if (
                rec.get("messagePattern")
                and not rec.get("placeholders")
                and rec.get("errorMessage")
            ):
                return f"[2026-04-07 10:05:08 TP0] {rec.get('errorClass') or 'ValueError'}: {rec['errorMessage']}"
    raise SystemExit(f"no record with a plain message in {path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--catalog")
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path, label = synth.pick_catalog(args.catalog, Path(tmp))
        line = sample_line(path)
        env = {**os.environ, "KVERR_CATALOG": str(path), "COLUMNS": "100"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        rows = {
            "floor: python -c 'import duckdb'": ([sys.executable, "-c", "import duckdb"], 0),
            # kverr opens catalogs through DuckDB's engine module alone (catalog/engine.py),
            # not the `duckdb` package around it: what that floor is, and what no explain skips
            "engine: python -c 'import _duckdb'": ([sys.executable, "-c", "import _duckdb"], 0),
            "reference: engine + typer + connect": (
                [sys.executable, "-c", f"import _duckdb, typer; _duckdb.connect({str(path)!r}, read_only=True)"],
                0,
            ),
            "explain --json": ([KVERR, "explain", line, "--json"], 0),
            "explain (card view)": ([KVERR, "explain", line], 0),
            "explain, no match": ([KVERR, "explain", "all quiet on the launch front"], 1),
        }  # fmt: skip
        for cmd, expect in rows.values():  # warm-up: .pyc files written, the page cache filled
            timed(cmd, ok=(expect,), env=env)
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in rows}
        for _ in range(args.rounds):
            for name, (cmd, expect) in rows.items():
                times[name].append(timed(cmd, ok=(expect,), env=env)[:2])
    wall = {n: statistics.median(t[0] for t in ts) * 1000 for n, ts in times.items()}
    cpu = {n: statistics.median(t[1] for t in ts) * 1000 for n, ts in times.items()}
    floor = "floor: python -c 'import duckdb'"
    print(f"catalog: {label}")
    print(f"line: {line[:100]}{'...' if len(line) > 100 else ''}")
    print(f"{args.rounds} rounds, each row once per round in turn; medians:")
    for name in rows:
        print(
            f"  {name:<38} wall {wall[name]:6.0f} ms ({wall[name] / wall[floor]:.2f}x)"
            f"   cpu {cpu[name]:6.0f} ms ({cpu[name] / cpu[floor]:.2f}x)"
        )
    ratio = wall["explain --json"] / wall[floor]
    engine = "engine: python -c 'import _duckdb'"
    print(
        f"explain --json / floor: {ratio:.2f}x wall, {cpu['explain --json'] / cpu[floor]:.2f}x cpu"
        f" (target <= {TARGET}x: {'PASS' if ratio <= TARGET else 'FAIL'});"
        f" / the engine alone: {wall['explain --json'] / wall[engine]:.2f}x wall"
    )


if __name__ == "__main__":
    main()
