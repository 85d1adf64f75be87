"""Cross-check the extractor against an independent count made with the stdlib `ast`.

Usage:
    python scripts/crosscheck_ast.py MIRROR [--profile NAME] [--tags GLOB] [--rev REV ...]
                                     [--touching] [--seed PATH] [--verbose]

For every release tag of the git repository MIRROR (bare is fine) matching --tags (default
`v*`), and every --rev, reads the profile's file set at that revision (`git show REV:path`),
extracts it with kverr (with that profile's rules) and counts sites with `ast_sites` below
(every raise with an exception, every assert, every logging call including the `*_once`
variants some loggers add, warnings.warn, sys.exit with a message), then prints per-revision
counts and any (line, kind) present on one side only. With --touching, every commit up to the
--rev revisions that changed the file set is checked, each distinct file version once (a
backfill's whole input). The last line is the summary:
`crosscheck: N revisions, F files, M sites, K mismatches, recall R%` (recall: the ast-counted
sites the extractor also found).
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from kverr.extractor.pysource import parse_module

LEVELS = {"warning", "warn", "error", "exception", "critical", "fatal", "info"}
LEVELS |= {f"{level}_once" for level in LEVELS}  # vLLM's logger: warning_once, info_once


def ast_sites(text: str) -> Counter[tuple[int, str]]:
    """(statement line, kind) of every site, from the stdlib tree alone."""
    tree = parse_module(text)
    loggers, logging_mods, warn_names, exit_names, sys_mods, warnings_mods = _bindings(tree)
    found: Counter[tuple[int, str]] = Counter()
    for stmt in _statements(tree):
        if isinstance(stmt, ast.Raise) and stmt.exc is not None:
            exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
            name = exc.attr if isinstance(exc, ast.Attribute) else getattr(exc, "id", "")
            found[(stmt.lineno, "exit" if name == "SystemExit" else "raise")] += 1
        elif isinstance(stmt, ast.Assert):
            found[(stmt.lineno, "assert")] += 1
        for call in _own_calls(stmt):
            kind = _call_kind(call, loggers, logging_mods, warn_names, exit_names)
            kind = kind or _module_call_kind(call, sys_mods, warnings_mods)
            if kind:
                found[(stmt.lineno, kind)] += 1
    return found


def _bindings(tree: ast.Module):
    loggers: set[str] = set()
    logging_mods: set[str] = set()
    factories = {"init_logger", "get_logger"}
    warn_names: set[str] = set()
    exit_names: set[str] = set()
    sys_mods: set[str] = set()
    warnings_mods: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                target = {"logging": logging_mods, "sys": sys_mods, "warnings": warnings_mods}
                if a.name in target:
                    target[a.name].add(a.asname or a.name)
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                bound = a.asname or a.name
                if (node.module, a.name) == ("logging", "getLogger"):
                    factories.add(bound)
                elif (node.module, a.name) == ("warnings", "warn"):
                    warn_names.add(bound)
                elif (node.module, a.name) == ("sys", "exit"):
                    exit_names.add(bound)
                elif a.name in ("init_logger", "get_logger"):
                    factories.add(bound)
                elif a.name == "logger":
                    loggers.add(bound)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            f = node.value.func
            is_factory = (
                isinstance(f, ast.Attribute)
                and f.attr == "getLogger"
                and isinstance(f.value, ast.Name)
                and f.value.id in logging_mods
            ) or (isinstance(f, ast.Name) and f.id in factories)
            if is_factory:
                loggers.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return loggers, logging_mods, warn_names, exit_names, sys_mods, warnings_mods


def _statements(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            yield node


def _own_calls(stmt: ast.stmt):
    """Calls in the statement's own expressions, not in the statements nested in it."""
    todo = [c for c in ast.iter_child_nodes(stmt) if isinstance(c, ast.expr)]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Call):
            yield node
        todo.extend(ast.iter_child_nodes(node))


def _call_kind(call, loggers, logging_mods, warn_names, exit_names) -> str | None:
    f = call.func
    if isinstance(f, ast.Attribute) and (f.attr in LEVELS or f.attr == "log"):
        owner = f.value
        if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Attribute):
            chained = owner.func  # logging.getLogger(name).warning(...)
            if chained.attr == "getLogger" and getattr(chained.value, "id", "") in logging_mods:
                owner = ast.Name(id=next(iter(logging_mods)))
        if isinstance(owner, ast.Name) and (owner.id in loggers or owner.id in logging_mods):
            if f.attr != "log" or len(call.args) >= 2:
                return "log"
    if isinstance(f, ast.Name) and f.id in warn_names:
        return "warn"
    if isinstance(f, ast.Name) and f.id in exit_names and _exit_has_message(call):
        return "exit"
    return None


def _module_call_kind(call: ast.Call, sys_mods: set[str], warnings_mods: set[str]) -> str | None:
    f = call.func
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
        if f.attr == "warn" and f.value.id in warnings_mods:
            return "warn"
        if f.attr == "exit" and f.value.id in sys_mods and _exit_has_message(call):
            return "exit"
    return None


def _exit_has_message(call: ast.Call) -> bool:
    if not call.args:
        return False
    first = call.args[0]
    return not (isinstance(first, ast.Constant) and isinstance(first.value, int))


_CACHE: dict[str, str] = {}  # unchanged functions between tags are extracted once


def extractor_sites(text: str, path: str, rules=None) -> Counter[tuple[int, str]]:
    from kverr.extractor import extract_file

    from kverr.ftypes import SourceFile

    fx = extract_file(SourceFile(path, text, ""), _CACHE, rules)
    return Counter((s.line, s.kind) for s in fx.sites if s.variant <= 1)


def compare(text: str, path: str, rules=None) -> tuple[int, list[str]]:
    """(number of sites, mismatch descriptions) for one file's text."""
    want = ast_sites(text)
    got = extractor_sites(text, path, rules)
    problems = [f"{path}:{line}: ast has {n} {kind}, extractor {got[(line, kind)]}"
                for (line, kind), n in sorted(want.items()) if got[(line, kind)] != n]  # fmt: skip
    problems += [f"{path}:{line}: extractor invented {kind}"
                 for (line, kind) in sorted(got) if (line, kind) not in want]  # fmt: skip
    return sum(want.values()), problems


def found(text: str, path: str, rules=None) -> int:
    """How many of the ast-counted sites the extractor found too (recall's numerator)."""
    want, got = ast_sites(text), extractor_sites(text, path, rules)
    return sum(min(n, got[key]) for key, n in want.items())


def _git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True)
    return out.stdout.decode("utf-8", "replace")


def _rev_files(repo: Path, rev: str, globs: tuple[str, ...]) -> list[str]:
    names = _git(repo, "ls-tree", "-r", "--name-only", rev).splitlines()
    return [n for n in names if any(fnmatch.fnmatch(n, g) for g in globs)]


def _touching_blobs(
    repo: Path, revs: list[str], files: tuple[str, ...], globs: tuple[str, ...]
) -> list[tuple[str, str]]:
    """Distinct (path, blob) of every commit up to `revs` that changed the file set (`files`:
    git glob pathspecs; `globs`: the same as fnmatch patterns)."""
    commits = _git(repo, "rev-list", *revs, "--", *(f":(glob){g}" for g in files)).split()
    seen: dict[tuple[str, str], None] = {}
    for sha in commits:
        for row in _git(repo, "ls-tree", "-r", sha).splitlines():
            meta, path = row.split("\t", 1)
            if any(fnmatch.fnmatch(path, g) for g in globs):
                seen.setdefault((path, meta.split()[2]), None)
    print(f"{len(commits)} commits touch the file set: {len(seen)} distinct file versions")
    return list(seen)


def main(argv: list[str] | None = None) -> int:
    from kverr.profile import load_profile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mirror", type=Path, help="git repository (bare is fine)")
    parser.add_argument(
        "--profile", help="project profile: its file set and rules (default sglang)"
    )
    parser.add_argument("--seed", type=Path, help="an extra module to check, e.g. the seed")
    parser.add_argument("--tags", default="v*", help="tag glob (default v*; '' for none)")
    parser.add_argument("--rev", action="append", default=[], help="a revision; repeatable")
    parser.add_argument("--touching", action="store_true", help="every commit up to --rev")
    parser.add_argument("--verbose", action="store_true", help="print every mismatch")
    args = parser.parse_args(argv)
    os.environ["KVERR_STRICT"] = "0"  # real history has messages we cannot resolve: tolerate
    profile = load_profile(args.profile)
    globs = tuple(g.replace("**/", "*") for g in profile.files)
    tags = (
        _git(args.mirror, "tag", "-l", args.tags, "--sort=creatordate").split() if args.tags else []
    )
    revs = tags + args.rev
    files = sites = hits = mismatches = 0
    checked = len(revs)
    if args.touching:
        problems_all: list[str] = []
        for path, blob in _touching_blobs(args.mirror, revs, profile.files, globs):
            text = _git(args.mirror, "cat-file", "blob", blob)
            n, problems = compare(text, f"{path}@{blob[:10]}", profile.extract)
            hits += found(text, path, profile.extract)
            files, sites = files + 1, sites + n
            problems_all += problems
        mismatches = len(problems_all)
        for p in problems_all if args.verbose else problems_all[:10]:
            print("   ", p)
        checked = len(
            _git(
                args.mirror, "rev-list", *revs, "--", *(f":(glob){g}" for g in profile.files)
            ).split()
        )
        revs = []  # counted above, blob by blob
    for rev in revs:
        rev_sites, rev_problems = 0, []
        for path in _rev_files(args.mirror, rev, globs):
            text = _git(args.mirror, "show", f"{rev}:{path}")
            n, problems = compare(text, path, profile.extract)
            hits += found(text, path, profile.extract)
            files, rev_sites = files + 1, rev_sites + n
            rev_problems += problems
        sites, mismatches = sites + rev_sites, mismatches + len(rev_problems)
        print(f"{rev[:16]:16} sites={rev_sites:4} mismatches={len(rev_problems)}")
        for p in rev_problems if args.verbose else rev_problems[:3]:
            print("   ", p)
    if args.seed is not None:
        text = args.seed.read_text(encoding="utf-8")
        n, problems = compare(text, str(args.seed), profile.extract)
        hits += found(text, str(args.seed), profile.extract)
        files, sites, mismatches = files + 1, sites + n, mismatches + len(problems)
        print(f"{'seed':16} sites={n:4} mismatches={len(problems)}")
        for p in problems:
            print("   ", p)
    recall = 100.0 * hits / sites if sites else 100.0
    print(
        f"crosscheck: {checked} revisions, {files} files, {sites} sites, "
        f"{mismatches} mismatches, recall {recall:.2f}%"
    )
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
