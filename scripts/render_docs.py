"""Regenerate every command output shown in README.md and docs/*.md from the command itself.

    python scripts/render_docs.py            # rewrite the blocks in place (review with git diff)
    python scripts/render_docs.py --check    # exit 1 listing every block that is stale
    python scripts/render_docs.py --check docs/usage.md   # only these files

A block is a fenced block right after a marker comment naming the commands that print it,
one per line; the block shows each command after `$ ` and then what it printed (its stdout,
then its stderr):

    <!-- output: kverr explain "ValueError: ..." -->
    ```text
    $ kverr explain "ValueError: ..."
    ERROR ValueError · pattern match 1.00 · input line 1
    ...
    ```

Each command runs under bash in a fixed environment, so the output is what a user gets and is
the same on every machine: plain output (NO_COLOR, TERM=dumb, no pager), COLUMNS=100, UTF-8,
TZ=UTC, the `kverr` beside this Python with its packaged catalog, and a fresh HOME and
XDG_CACHE_HOME in a temp folder (no catalog or cache of the machine is read). The working
folder is a temp folder holding a copy of docs/examples/, so `--file paste.txt` reads
docs/examples/paste.txt and what a command writes goes away with the run.

A command that needs a SGLang git clone (the fix of a user's own launch runs it through that
release's checks) names it as "$KVERR_SOURCE"; the variable is passed on from this script's
environment or --source. Without it those blocks are left as they are, and one line says which
blocks were not checked and why (CI has no clone, so CI checks every other block).

Exit status 0 or 1 is a result (kverr's "nothing matched", "the launch fails"); 2 or more, or a
traceback on stderr, means the command itself is wrong, and its block is reported, never
rewritten.

Only what must vary between runs is normalised (NORMALISE below): the run's temp folders (the
working folder's own prefix dropped, so `--out ds` reads `ds`; HOME shown as `~`; the rest as
`/tmp/kverr-docs`) and wall-clock timings, shown as `N.Ns`.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples"
MARKER = "<!-- output:"
FENCE = re.compile(r"^(`{3,})\w*$")
VARIABLE = re.compile(r"\$\{?([A-Z_][A-Z0-9_]*)\}?")
# The variables a command may name, and what each stands for (said when one is missing).
NEEDS = {"KVERR_SOURCE": "a git clone of SGLang with its release tags"}
TIMEOUT = 900  # seconds per command; a cold check of a release stays well under it
NORMALISE = (
    # wall-clock timings ("built ds from 2 revision(s) in 13.6s"): they differ on every run
    (re.compile(r"\b\d+(?:\.\d+)?s\b(?=[;,)]|$)", re.M), "N.Ns"),
)


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the marker
    commands: list[str]
    start: int  # index of the fence's first content line
    end: int  # index of the closing fence
    fence: str
    old: str


class DocError(Exception):
    """A marker without a block after it, or a block that is never closed."""


def find_blocks(path: Path, lines: list[str]) -> list[Block]:
    blocks, i = [], 0
    while i < len(lines):
        if not lines[i].startswith(MARKER):
            i += 1
            continue
        marker_line, body = i, lines[i][len(MARKER) :]
        while "-->" not in body:
            i += 1
            if i == len(lines):
                raise DocError(f"{path}:{marker_line + 1}: the output marker is never closed (-->)")
            body += "\n" + lines[i]
        commands = [c.strip() for c in body.split("-->")[0].splitlines() if c.strip()]
        i += 1
        while i < len(lines) and not lines[i].strip():
            i += 1
        opening = FENCE.match(lines[i]) if i < len(lines) else None
        if not commands or not opening:
            raise DocError(
                f"{path}:{marker_line + 1}: an output marker needs a command and a fenced block "
                "right after it"
            )
        fence = opening.group(1)
        end = next((j for j in range(i + 1, len(lines)) if lines[j] == fence), None)
        if end is None:
            raise DocError(f"{path}:{i + 1}: the fenced block is never closed ({fence})")
        old = "\n".join(lines[i + 1 : end])
        blocks.append(Block(path, marker_line + 1, commands, i + 1, end, fence, old))
        i = end + 1
    return blocks


def environment(tmp: Path, passed: dict[str, str]) -> dict[str, str]:
    home = tmp / "home"
    (home / ".cache").mkdir(parents=True, exist_ok=True)
    (tmp / "tmp").mkdir(exist_ok=True)
    bin_dir = str(Path(sys.executable).parent)
    return {
        "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "TMPDIR": str(tmp / "tmp"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TZ": "UTC",
        "COLUMNS": "100",
        "NO_COLOR": "1",
        "TERM": "dumb",
        "KVERR_PAGER": "cat",
        "PAGER": "cat",
        "PYTHONIOENCODING": "utf-8",
        **passed,
    }


def run(command: str, env: dict[str, str], cwd: Path, tmp: Path) -> tuple[str, str | None]:
    """The text a command prints, normalised, and why it is unusable (None when it is fine)."""
    with subprocess.Popen(
        ["bash", "-c", command],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,  # `kverr explain` with no text would wait for stdin
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="backslashreplace",
        start_new_session=True,  # a command past its time is stopped with all it started
    ) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return "", f"did not finish in {TIMEOUT} s"
    text = stdout + stderr
    text = (
        text.replace(f"{cwd}/", "").replace(env["HOME"], "~").replace(str(tmp), "/tmp/kverr-docs")
    )
    for pattern, replacement in NORMALISE:
        text = pattern.sub(replacement, text)
    text = "\n".join(line.rstrip() for line in text.splitlines()).strip("\n")
    if proc.returncode >= 2 or "Traceback (most recent call last)" in stderr:
        last = text.splitlines()[-1] if text else "(no output)"
        return text, f"exited {proc.returncode}: {last}"
    return text, None


def render(block: Block, env: dict[str, str], cwd: Path, tmp: Path) -> tuple[str, str | None]:
    parts = []
    for command in block.commands:
        text, problem = run(command, env, cwd, tmp)
        if problem:
            return "", f"`{command}` {problem}"
        parts.append(f"$ {command}" + (f"\n{text}" if text else ""))
    return "\n".join(parts), None


def missing(block: Block, env: dict[str, str]) -> list[str]:
    names = {m.group(1) for c in block.commands for m in VARIABLE.finditer(c)}
    return sorted(n for n in names if n not in env or not env[n])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, help="default: README.md and docs/*.md")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if stale")
    parser.add_argument(
        "--source", help="a git clone of SGLang for the personal-fix blocks ($KVERR_SOURCE)"
    )
    args = parser.parse_args(argv)
    files = args.files or [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    source = args.source or os.environ.get("KVERR_SOURCE", "")
    passed = {"KVERR_SOURCE": str(Path(source).resolve())} if source else {}
    if source and not Path(source).exists():
        print(f"--source {source} does not exist; pass a git clone of SGLang.", file=sys.stderr)
        return 2

    stale, failed, skipped, fresh = [], [], {}, 0
    with tempfile.TemporaryDirectory(prefix="kverr-docs-") as name:
        tmp = Path(name)
        env = environment(tmp, passed)
        for path in files:
            lines = path.read_text(encoding="utf-8").split("\n")
            try:
                blocks = find_blocks(path, lines)
            except DocError as exc:
                failed.append(str(exc))
                continue
            changed = []
            for block in blocks:
                where = f"{_rel(path)}:{block.line}"
                if lacking := missing(block, env):
                    skipped.setdefault(", ".join(lacking), []).append(where)
                    continue
                new, problem = render(block, env, _workdir(tmp), tmp)
                if problem:
                    failed.append(f"{where}: {problem}")
                elif new == block.old:
                    fresh += 1
                else:
                    stale.append((where, block, new))
                    changed.append((block, new))
            for block, new in reversed(changed):  # from the end: earlier indexes stay valid
                lines[block.start : block.end] = _fenced(new, block, lines)
            if changed and not args.check:
                path.write_text("\n".join(lines), encoding="utf-8")

    for where, block, new in stale:
        more = len(block.commands) - 1
        print(
            f"{where}: stale output of `{block.commands[0]}`" + (f" (+{more} more)" if more else "")
        )
        if args.check:
            diff = difflib.unified_diff(block.old.splitlines(), new.splitlines(), lineterm="", n=1)
            print("\n".join(f"    {d}" for d in list(diff)[2:42]))
    for problem in failed:
        print(problem)
    for names, where in skipped.items():
        why = "; ".join(f"{n} ({NEEDS.get(n, 'not set here')})" for n in names.split(", "))
        print(f"not checked, {why} is not set: {', '.join(where)}")
    verb = "stale" if args.check else "rewritten"
    print(f"{fresh} block(s) up to date, {len(stale)} {verb}, {len(failed)} failed.")
    if failed or (args.check and stale):
        if args.check and stale:
            print("Run `python scripts/render_docs.py` and review the diff.")
        return 1
    return 0


def _workdir(tmp: Path) -> Path:
    """A fresh working folder holding a copy of docs/examples/ for each block, and the
    checkout's scripts/ (a block may show what one prints: `python scripts/coverage.py`)."""
    cwd = tmp / "work"
    shutil.rmtree(cwd, ignore_errors=True)
    if EXAMPLES.is_dir():
        shutil.copytree(EXAMPLES, cwd)
    else:
        cwd.mkdir()
    if not (cwd / "scripts").exists():
        (cwd / "scripts").symlink_to(ROOT / "scripts")
    return cwd


def _fenced(text: str, block: Block, lines: list[str]) -> list[str]:
    """The block's new lines; a fence longer than any run of backticks the output holds."""
    longest = max((len(r) for r in re.findall(r"`+", text)), default=0)
    if longest >= len(block.fence):
        fence = "`" * (longest + 1)
        lines[block.start - 1] = lines[block.start - 1].replace(block.fence, fence, 1)
        lines[block.end] = fence
    return text.split("\n")


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


if __name__ == "__main__":
    sys.exit(main())
