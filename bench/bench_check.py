"""`kverr check` on the real SGLang release: the held-out launches of tests/yours_fixture.py
(twelve deployments and their one-slip mistakes) judged by the release's own checks, and what
a check costs next to a warm `kverr explain` of one line.

    python bench/bench_check.py [--repo ../.mirror/Clarit-AI+Engram/repo] [--release 0.5.9]
                                [--rounds 5] [--skip-quality] [--skip-time]

Quality (in this process): one bench for the release; each launch through yours.check; each
fix run again by a judge with no cache, in a sandbox of its own. Prints each base's result,
each mistake's first error and fix, then: how many raised, how many got a fix, the share of
fixes that pass every check and keep every other option, the mean options changed, and how
often the fix is the one a maintainer would give (Mistake.good). The mistakes were written
for the fixture project, so fewer of them raise in the real release.

Time (subprocesses, as a user runs it): per round, `kverr explain LINE` (its catalog built
before the first round), then `kverr check` cold (an empty check cache), warm (the cache of
earlier checks, a launch not seen before) and repeated (the same launch again); medians over
the rounds, and each check's ratio to the explain of the same round. Every process keeps its
bytecode in one temp PYTHONPYCACHEPREFIX (as an installed kverr has its .pyc files), whatever
PYTHONDONTWRITEBYTECODE says. Beside wall seconds, CPU seconds (what a loaded machine
changes less): the command's and those of the sandboxes it waited for (a sandbox killed
before it answered, as a check whose runs all come from the cache does, is not counted).
Target: a warm check within 3x of a warm explain.

Skips with a message (exit 0) when the repository is absent.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from timed import timed

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the held-out launches: one list for tests and bench

from yours_fixture import BASES, MISTAKES, PROGRAM, grade, issue, summary  # noqa: E402

MIRROR = ROOT.parent / ".mirror" / "Clarit-AI+Engram" / "repo"
LINE = "AssertionError: tp_size must be divisible by dp_size"
LAUNCH = "--model-path meta-llama/Llama-3.1-8B-Instruct --tp 4 --enable-dp-attention --dp {dp}"


def quality(repo: Path, release: str) -> None:
    from kverr.extractor import extract_files, sources
    from kverr.verify import preflight, yours
    from kverr.verify.spec import spec_for
    from kverr.verify.step import Session, bench_for, files_key

    from kverr.launch import forms_of, read_launches
    from kverr.profile import load_profile

    profile = load_profile("sglang")
    forms, keep = forms_of([profile]), profile.hardware_options
    tag = release if release.startswith("v") else f"v{release}"
    rev, files = sources.read_git(repo, tag, list(profile.files))
    spec = spec_for(profile)
    with tempfile.TemporaryDirectory(prefix="bench-check-") as tmp:
        session = Session(spec, str(repo), Path(tmp), cache={})
        judge_session = Session(spec, str(repo), Path(tmp), cache=None)
        started = time.perf_counter()
        bench = bench_for(
            extract_files(files),
            session,
            rev,
            key=files_key(rev, [(f.path, f.blob) for f in files]),
        )
        print(f"{tag}: bench built in {time.perf_counter() - started:.1f} s", flush=True)
        judge = replace(bench, session=judge_session)
        options = bench.info["options"]

        def launch_of(text: str):
            (pasted,) = read_launches(text, forms)
            return preflight.your_launch(pasted, options)

        print("\nbase deployments")
        for name, words in BASES.items():
            resolved, launch, _ = launch_of(f"{PROGRAM} {words}")
            got = yours.check(bench, launch, keep)
            last = got.steps[-1].ran.outcome
            said = "passes" if got.passed and not got.errors else f"{last.status}: {last.message}"
            unknown = (
                f" (not options here: {', '.join(resolved.unknown)})" if resolved.unknown else ""
            )
            print(f"  {name:16} {said[:100]}{unknown}")

        print("\nmistakes (ok: a maintainer's fix, NO: another fix, -: no fix)")
        graded = []
        for m in MISTAKES:
            launch = launch_of(issue(m) if m.pasted else m.command())[1]
            g = grade(m, yours.check(bench, launch, keep), lambda a: yours.run(judge, a).passed,
                      options)  # fmt: skip
            graded.append(g)
            slip = " ".join(f"{o} {v or ''}".strip() for o, v in m.set) or f"without {m.drop[0]}"
            mark = "ok" if g.maintainer else ("NO" if g.fixed else "-")
            told = g.changed if g.fixed else g.why
            print(f"  {mark:2} {m.base:16} {slip:36} {g.status:11} {g.error[:60]!r} -> {told}")
        session.close()
        judge_session.close()
    f = summary(graded)
    raised = sum(g.status in ("raised", "parse-error") for g in graded)
    print(
        f"\n{f['launches']} launches: {raised} raised an error, {f['fixes']} got a fix of the"
        f" launch; {f['pass_and_keep']:.0%} of fixes pass every check and keep every other"
        f" option (judged again); mean options changed {f['mean_changed']:.2f};"
        f" a maintainer's fix {f['maintainer']:.0%}"
    )


def timing(repo: Path, release: str, rounds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-check-time-") as tmp:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pyc")
        kverr = [sys.executable, "-m", "kverr"]
        explain = [*kverr, "explain", LINE]

        def check(dp: int) -> list[str]:
            launch = [*PROGRAM.split(), *LAUNCH.format(dp=dp).split()]
            return [*kverr, "check", "--json", "--release", release, "--source", str(repo),
                    "--", *launch]  # fmt: skip

        cpu: dict[str, list[float]] = {}

        def seconds(cmd: list[str], cache: str | None = None, kind: str = "") -> float:
            """Wall seconds; the CPU seconds of the process and its sandbox go to cpu[kind]
            (what the machine's load does not change)."""
            run_env = dict(env, XDG_CACHE_HOME=cache) if cache else env
            took, used, _ = timed(cmd, ok=(0, 1), env=run_env, timeout=600)
            cpu.setdefault(kind, []).append(used)
            return took

        warm = str(Path(tmp) / "warm-cache")
        print("\npriming: bytecode, the explain catalog, one check", flush=True)
        # The sandbox's own modules too: its child never writes bytecode (-B), and nothing
        # else here imports them (pip compiles them all when it installs kverr).
        seconds([sys.executable, "-c", "import kverr.verify.sandbox.child"])
        seconds(explain)
        seconds(check(3), warm)
        rows: dict[str, list[float]] = {"explain": [], "cold": [], "warm": [], "repeat": []}
        for i in range(rounds):
            dp = 5 + i  # a launch the warm cache has not seen (each raises and gets a fix)
            rows["explain"].append(seconds(explain, kind="explain"))
            rows["cold"].append(seconds(check(dp), str(Path(tmp) / f"cold-{i}"), "cold"))
            rows["warm"].append(seconds(check(dp), warm, "warm"))
            rows["repeat"].append(seconds(check(dp), warm, "repeat"))
            print(
                f"  round {i + 1}: explain {rows['explain'][-1]:.2f} s, check cold"
                f" {rows['cold'][-1]:.2f} s, warm {rows['warm'][-1]:.2f} s, repeat"
                f" {rows['repeat'][-1]:.2f} s",
                flush=True,
            )
        base = statistics.median(rows["explain"])
        print(f"\nmedians of {rounds} rounds (load average {os.getloadavg()[0]:.1f}): wall, CPU")
        explain_cpu = statistics.median(cpu["explain"])
        print(f"  {'kverr explain (warm, one line)':34} {base:6.2f} s {explain_cpu:6.2f} s")
        for kind, what in (
            ("cold", "kverr check, cold (no cache)"),
            ("warm", "kverr check, warm (a new launch)"),
            ("repeat", "kverr check, the same launch again"),
        ):
            ratios = [c / e for c, e in zip(rows[kind], rows["explain"], strict=True)]
            print(
                f"  {what:34} {statistics.median(rows[kind]):6.2f} s"
                f" {statistics.median(cpu[kind]):6.2f} s   {statistics.median(ratios):4.1f}x"
                f" explain (CPU {statistics.median(cpu[kind]) / explain_cpu:.1f}x)"
            )
        print("  target: a warm check within 3x of a warm explain")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", type=Path, default=MIRROR, help="SGLang git repository")
    ap.add_argument("--release", default="0.5.9")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--skip-quality", action="store_true")
    ap.add_argument("--skip-time", action="store_true")
    args = ap.parse_args()
    if not (args.repo / "HEAD").exists() and not (args.repo / ".git").exists():
        print(f"skipped: no SGLang repository at {args.repo} (pass --repo)")
        return 0
    if not args.skip_quality:
        quality(args.repo, args.release)
    if not args.skip_time:
        timing(args.repo, args.release, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
