"""The pipeline is the folder layout: each stage imports only what comes before it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# folder -> top-level modules it must never import (directly, at any nesting level)
FORBIDDEN = {
    "extractor": {
        "duckdb",
        "typer",
        "rich",
        "jsonschema",
        "kverr.catalog",
        "kverr.records",
        "kverr.feeds",
        "kverr.pipeline",
        "kverr.cli",
    },
    "schema": {
        "duckdb",
        "typer",
        "libcst",
        "kverr.catalog",
        "kverr.feeds",
        "kverr.pipeline",
        "kverr.cli",
    },
    "records": {
        "duckdb",
        "typer",
        "kverr.catalog",
        "kverr.feeds",
        "kverr.pipeline",
        "kverr.cli",
        "kverr.verify",
    },
    # verify/ runs a revision's own checks in a sandbox: it reads sources (extractor) and
    # records, never the catalog, the feeds, the build or the CLI.
    "verify": {
        "duckdb",
        "typer",
        "rich",
        "kverr.catalog",
        "kverr.feeds",
        "kverr.pipeline",
        "kverr.cli",
    },
    "catalog": {
        "typer",
        "libcst",
        "jsonschema",
        "kverr.extractor",
        "kverr.feeds",
        "kverr.pipeline",
        "kverr.cli",
    },
    "feeds": {"duckdb", "typer", "libcst", "kverr.extractor", "kverr.pipeline", "kverr.cli"},
    # present/ draws answers: kverr's own types (kverr.answers' Match) in, text out; it never
    # reaches for the catalog, the build or the CLI that hand it those answers.
    "present": {
        "duckdb",
        "typer",
        "rich",
        "libcst",
        "jsonschema",
        "kverr.catalog",
        "kverr.extractor",
        "kverr.records",
        "kverr.pipeline",
        "kverr.verify",
        "kverr.feeds",
        "kverr.cli",
    },
    # The build orchestrates extractor -> records -> dataset; it reaches libcst and jsonschema
    # only through those stages, and the catalog only to load the finished dataset (run.py).
    "pipeline": {"duckdb", "typer", "rich", "libcst", "jsonschema", "kverr.feeds", "kverr.cli"},
}


def imported_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def violates(name: str, banned: set[str]) -> str | None:
    for b in banned:
        if name == b or name.startswith(b + "."):
            return b
    return None


CASES = [(folder, p) for folder in FORBIDDEN for p in sorted((ROOT / folder).rglob("*.py"))]


@pytest.mark.parametrize(
    ("folder", "path"), CASES, ids=[str(p.relative_to(ROOT)) for _, p in CASES]
)
def test_stage_imports_stay_in_their_lane(folder, path):
    bad = sorted(n for n in imported_names(path) if violates(n, FORBIDDEN[folder]))
    assert not bad, f"{path.relative_to(ROOT)} imports {bad}: {folder}/ must not depend on them"


def test_only_catalog_imports_duckdb():
    offenders = [
        str(p.relative_to(ROOT))
        for folder in (
            "kverr",
            "extractor",
            "schema",
            "records",
            "pipeline",
            "feeds",
            "verify",
            "present",
        )
        for p in (ROOT / folder).rglob("*.py")
        if any(violates(n, {"duckdb", "_duckdb"}) for n in imported_names(p))
    ]
    assert not offenders, f"only catalog/ may import duckdb: {offenders}"


def test_every_package_folder_ships_in_the_wheel():
    """A sub-package missing from pyproject's explicit list would import in the editable
    install and be absent from the wheel."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    conf = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    listed = set(conf["setuptools"]["packages"])
    missing = []
    for name, folder in conf["setuptools"]["package-dir"].items():
        for init in sorted((ROOT / folder).rglob("__init__.py")):
            rel = init.parent.relative_to(ROOT / folder).parts
            if ".venv" not in rel and ".".join((name, *rel)) not in listed:
                missing.append(".".join((name, *rel)))
    assert not missing, f"add {missing} to [tool.setuptools] packages in pyproject.toml"


def test_only_the_build_entry_point_loads_the_catalog():
    """pipeline/ steps hand data to each other; only run.py, after writing, loads a catalog."""
    offenders = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "pipeline").rglob("*.py")
        if p.name != "run.py" and any(violates(n, {"kverr.catalog"}) for n in imported_names(p))
    ]
    assert not offenders, f"only pipeline/run.py may import kverr.catalog: {offenders}"


def test_the_sandboxed_child_imports_only_the_sandbox_and_the_stdlib():
    """What runs beside a revision's code is verify/sandbox/ alone: the child started the way
    the harness starts it imports no other kverr module and no third-party package."""
    import json
    import subprocess
    import sys

    from kverr.verify import confine

    probe = (
        "import json, sys; before = set(sys.modules); import kverr.verify.sandbox.child; "
        "print(json.dumps(sorted(set(sys.modules) - before)))"
    )
    out = subprocess.run(
        [sys.executable, "-s", "-B", "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": confine.kverr_root()},
    )
    loaded = json.loads(out.stdout)
    ours = {"kverr", "kverr.verify", "kverr.verify.sandbox"}
    strays = [
        name
        for name in loaded
        if name not in ours
        and not name.startswith("kverr.verify.sandbox.")
        and name.partition(".")[0] not in sys.stdlib_module_names
        and not name.startswith("_sysconfigdata")  # the stdlib's own, named per platform
    ]
    assert "kverr.verify.sandbox.child" in loaded
    assert not strays, f"the sandboxed child imports {strays}: move them into verify/sandbox/"


@pytest.mark.parametrize("name", ["sglang", "vllm"])
def test_a_profile_names_only_sandbox_modules_for_the_child(name):
    """The modules a verify spec has the child import (`substitutes`, `@ref:` values) are the
    sandbox's own, or the revision's."""
    from kverr.verify.spec import spec_for

    from kverr.profile import load_profile

    text = repr(spec_for(load_profile(name)))
    named = set(re.findall(r"kverr(?:\.\w+)+", text))
    assert named and all(n.startswith("kverr.verify.sandbox.") for n in named), named


# What `pip install .` and a wheel build leave in a checkout: copies of our files, not ours
BUILT = {"build", "dist", "kverr.egg-info"}


def project_files(skip: set[str]) -> list[Path]:
    """Our .py files outside the folders and files `skip` names (paths from the root)."""
    out = []
    for top in sorted(ROOT.iterdir()):
        if top.name.startswith(".") or top.name in skip or top.name in BUILT:
            continue
        found = [top] if top.suffix == ".py" else sorted(top.rglob("*.py"))
        out += [p for p in found if not any(_under(p, s) for s in skip)]
    return out


def _under(path: Path, skipped: str) -> bool:
    rel = path.relative_to(ROOT).as_posix()
    return rel == skipped or rel.startswith(skipped + "/")


def lines_matching(rx: re.Pattern[str], skip: set[str]) -> list[str]:
    return [
        f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
        for p in project_files(skip)
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if rx.search(line)
    ]


PARSE_CALL = re.compile(r"\b(?:ast\.parse|cst\.parse_\w+)\(")
NOT_PARSED_HERE = {
    "extractor",  # pysource.py and the extractor's own libcst reading
    # The sandboxed child imports nothing of kverr outside verify/sandbox/ (the test above):
    # it parses the revision's files it runs itself.
    "verify/sandbox",
    # Both benchmarks time the stdlib and libcst parsers themselves against the extractor:
    # calling the parser directly is what they measure.
    "bench/bench_extract.py",
    "bench/bench_backfill.py",
    # Tests build trees of their own fixtures, independently of the code they check.
    "tests",
}


def test_python_text_becomes_a_tree_in_the_extractor_alone():
    """One reader of Python source (extractor/pysource.py): which grammar and which errors
    count as "does not parse" are decided once."""
    found = lines_matching(PARSE_CALL, NOT_PARSED_HERE)
    assert not found, "parse through kverr.extractor.pysource instead:\n" + "\n".join(found)


# A compile (or a one-off search) whose argument is a message pattern, by its usual names
# (`pattern`, `messagePattern`; not a compiled regex's own `.pattern`)
PATTERN_COMPILE = re.compile(
    r"\b(?:re2?\.(?:compile|search|match|fullmatch|finditer)|_Regexp)\("
    r"\s*[\w.\[\]\"']*(?<![.\w])(?:message)?[pP]attern\b"
)
COMPILED_HERE = {
    "kverr/pattern.py",
    # The sandboxed child imports nothing of kverr outside verify/sandbox/ (the test above)
    "verify/sandbox",
    "tests",  # tests compile patterns to check the matchers against plain `re`
}


def test_message_patterns_are_compiled_in_kverr_pattern_alone():
    """One place compiles a messagePattern (kverr/pattern.py: `compiled`, RE2's `linear`), so
    the matchers, the build's collision report and the safety check run the same regex."""
    found = lines_matching(PATTERN_COMPILE, COMPILED_HERE)
    assert not found, "compile through kverr.pattern instead:\n" + "\n".join(found)
