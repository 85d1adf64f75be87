"""Every command has help text with an example, and the README documents it (sqlite-utils' test_docs)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from kverr.cli import app

ROOT = Path(__file__).resolve().parents[1]

COMMANDS = sorted(typer.main.get_command(app).commands.items())
README = (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(("name", "cmd"), COMMANDS, ids=[n for n, _ in COMMANDS])
def test_command_has_help_with_example(name, cmd):
    assert cmd.help and len(cmd.help.strip()) > 20, f"`kverr {name}` has no real help text"
    assert "Example" in cmd.help, f"`kverr {name}` help shows no example"


@pytest.mark.parametrize("name", [n for n, _ in COMMANDS])
def test_command_is_in_readme(name):
    assert re.search(rf"\bkverr {re.escape(name)}\b", README), (
        f"README does not document `kverr {name}`"
    )


def test_every_option_has_help():
    missing = [
        f"kverr {name} {param.opts[0]}"
        for name, cmd in COMMANDS
        for param in cmd.params
        if param.param_type_name == "option" and not getattr(param, "help", None)
    ]
    assert not missing, f"options without help: {missing}"


# ---------------------------------------------------------------- the README and docs/

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RENDER = ROOT / "scripts" / "render_docs.py"
FENCE = re.compile(r"^(`{3,})")
# Words of the team's own bookkeeping that mean nothing to a reader.
JARGON = re.compile(r"\b(?:stop|issue)s? \d", re.IGNORECASE)


def ci_block(name: str) -> str:
    """The fenced block after <!-- ci:NAME --> in the README, as .ci/run extracts it."""
    after = README.split(f"<!-- ci:{name} -->\n", 1)[1]
    return after.split("```", 2)[1].split("\n", 1)[1].strip()


def test_readme_is_one_screen_for_users():
    assert len(README.splitlines()) <= 150


@pytest.mark.parametrize("path", [*DOCS, ROOT / "DEVELOPING.md"], ids=lambda p: p.name)
def test_no_team_working_words(path):
    hits = [
        f"{path.name}:{n}: {line.strip()}"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if JARGON.search(line)
    ]
    assert not hits, hits


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_every_shown_output_is_rendered_by_the_script(path):
    """A block that shows a command at a `$ ` prompt is one render_docs.py writes, so it
    can be checked; a hand-written one would go stale unseen."""
    lines = path.read_text(encoding="utf-8").splitlines()
    fence, unmarked, last = None, [], ""
    for n, line in enumerate(lines, 1):
        if fence:
            if line == fence:
                fence = None
            continue
        if opening := FENCE.match(line):
            fence = opening.group(1)
            body = lines[n] if n < len(lines) else ""
            marked = last.endswith("-->") and "<!-- output:" in "\n".join(lines[max(0, n - 20) : n])
            if body.startswith("$ ") and not marked:
                unmarked.append(f"{path.name}:{n}")
        if line.strip():
            last = line
    assert not unmarked, f"command output not written by scripts/render_docs.py: {unmarked}"


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("path", [*DOCS, ROOT / "DEVELOPING.md"], ids=lambda p: p.name)
def test_relative_links_reach_a_file_and_heading(path):
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", path.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", dest.read_text(encoding="utf-8"), re.M)
            if anchor not in {_anchor(h) for h in headings}:
                broken.append(target)
    assert not broken, f"{path.name}: broken links {broken}"


def test_ci_blocks_install_explain_and_test_everything():
    main = ci_block("main")
    assert main.startswith("pip install . && kverr explain ")
    test = ci_block("test")
    assert test.startswith("pip install '.[test]' && pytest -q")
    assert "-m slow" in test and "python scripts/render_docs.py --check" in test


def test_ci_main_prints_the_record_it_expects(monkeypatch):
    """.ci/run greps the main job's output for the README's ci:expect id."""
    expect = re.search(r"<!-- ci:expect (\S+) -->", README).group(1)
    line = shlex.split(ci_block("main").split("kverr explain ", 1)[1])
    monkeypatch.delenv("KVERR_CATALOG", raising=False)
    res = CliRunner().invoke(app, ["explain", *line])
    assert res.exit_code == 0 and expect in res.output


def _render(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "KVERR_SOURCE"}
    return subprocess.run(
        [sys.executable, str(RENDER), *args, str(tmp_path / "doc.md")],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


DOC = """# A page

<!-- output: echo one; echo "$HOME" -->
```text
$ echo one; echo "$HOME"
stale
```

<!-- output:
printf 'a  \\nb\\n'
echo "took 12.5s"
-->
```text
```

<!-- output: ls "$KVERR_SOURCE" -->
```text
left as it is
```
"""


def test_render_docs_check_lists_stale_blocks_and_render_fixes_them(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text(DOC, encoding="utf-8")
    check = _render(tmp_path, "--check")
    assert check.returncode == 1, check.stdout + check.stderr
    assert f"{doc}:3: stale output of `echo one" in check.stdout
    assert f"{doc}:9: stale output of `printf 'a  \\nb\\n'` (+1 more)" in check.stdout
    assert doc.read_text(encoding="utf-8") == DOC  # --check changes nothing
    # No clone here: that block is named, with why, in one line; the others are still checked.
    (unchecked,) = [ln for ln in check.stdout.splitlines() if ln.startswith("not checked")]
    assert "KVERR_SOURCE (a git clone of SGLang" in unchecked and f"{doc}:16" in unchecked

    assert _render(tmp_path).returncode == 0
    text = doc.read_text(encoding="utf-8")
    # HOME is a temp folder, shown as ~; a timing is normalised; trailing spaces go.
    assert '$ echo one; echo "$HOME"\none\n~\n```' in text
    assert "$ printf 'a  \\nb\\n'\na\nb\n$ echo \"took 12.5s\"\ntook N.Ns\n```" in text
    assert "left as it is" in text
    again = _render(tmp_path, "--check")
    assert again.returncode == 0 and "2 block(s) up to date, 0 stale" in again.stdout


def test_render_docs_reports_a_failing_command_and_keeps_its_block(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("<!-- output: kverr show -->\n```text\nkept\n```\n")
    done = _render(tmp_path)
    assert done.returncode == 1
    assert f"{doc}:1: `kverr show` exited 2: " in done.stdout
    assert doc.read_text(encoding="utf-8").endswith("```text\nkept\n```\n")


def test_render_docs_names_a_marker_without_a_block(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("<!-- output: echo hi -->\n\nsome prose\n")
    done = _render(tmp_path, "--check")
    assert done.returncode == 1
    assert (
        f"{doc}:1: an output marker needs a command and a fenced block right after it"
        in done.stdout
    )
