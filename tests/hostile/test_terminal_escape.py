"""Hostile text on every sink: the terminal card (piped and on a pseudo-terminal), `--json`,
the Markdown answer and export, and the static site. One list of payloads, written here, goes
through each: control characters that steer a terminal (C1 CSI and OSC, ESC, BEL, backspace,
bidirectional overrides), markup that runs in a page (`<script>`, `onerror=`, `javascript:`),
and text that breaks out of Markdown (backticks, `](`) or out of a shell command (`$(id)`).

Each payload sits in a record's fields (message value, prose, solutions, fix command, file
path, flag) and in the pasted line, so it reaches every place a string is printed.
"""

from __future__ import annotations

import html
import json
import re
import shlex
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
import synth
from kverr.catalog import load_dataset, load_datasets, open_catalog
from kverr.feeds.exports import export_markdown
from kverr.feeds.site import export_site
from kverr.present import display
from kverr.present import markdown as answer_md
from markdown_it import MarkdownIt
from test_terminal import in_pty
from typer.testing import CliRunner

from kverr import pipeline
from kverr.cli import app
from kverr.term import escape_terminal

PAYLOADS = {
    "csi-c1": "\u009b2J\u009bH",  # erases the screen and homes the cursor in a VT emulator
    "osc52-c1": "\u009d52;c;aWQ=\u009c",  # writes the clipboard
    "osc8-c1": "\u009d8;;https://evil.example/\u009cclick\u009d8;;\u009c",  # a hidden link
    "osc8-esc": "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\",
    "csi-esc": "\x1b[2J\x1b[H",
    "bel-backspace-del": "ok\x07\x08\x08\x7fno",
    "bidi": "\u202egnp.exe\u202c \u2066x\u2069 \u200f\u061c",
    "script": "<script>alert(1)</script>",
    "onerror": '<img src=x onerror="alert(1)">',
    "javascript": "javascript:alert(1)",
    "backticks": "``` `x` ``",
    "md-link": "[x](javascript:alert(1))",
    "subst": "$(id);`id`|x&&y>z",
}
# What a terminal acts on (the payloads' controls), kverr's own styling aside.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
OWN = re.compile(r"\x1b\[[0-9;]*m|\x1b\]8;;https://[\x21-\x7e]*?\x1b\\")


def record(i: int, payload: str) -> dict:
    rid = f"e5c{i:013d}"
    return synth.make_record(
        rid,
        f"case {i} mode {{mode}} is bad",
        rf"case {i} mode (?P<v0>.{{1,300}}?) is bad",
        placeholders=["mode"],
        flags=["--mode", f"--x{payload}"],
        file=f"python/{payload}/args.py",
        documentation=f"Doc {payload} end",
        triggerScenarios=f"Set `{payload}` or {payload}",
        solutions=[f"Use {payload} never", f"`{payload}`"],
        exampleFix=f"# before\npython -m srv --mode {shlex.quote(payload)}\n# after\npython -m srv --mode ok",
        githubUrl=payload if payload.startswith("javascript") else f"https://e.example/x#{payload}",
    )


def paste(i: int, payload: str) -> str:
    return f"ValueError: case {i} mode {payload} is bad"


CASES = list(enumerate(PAYLOADS.values()))
IDS = list(PAYLOADS)


@pytest.fixture(scope="module")
def catalog(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("escape")
    ds = synth.write_files(tmp / "ds", [record(i, p) for i, p in CASES])
    load_dataset(ds, tmp / "c.duckdb")
    return tmp / "c.duckdb"


def acted_on(out: str) -> list[str]:
    """The control characters left in `out` once kverr's own styling is taken out."""
    return CONTROL.findall(OWN.sub("", out))


# ---------------------------------------------------------------- the terminal


@pytest.mark.parametrize(("i", "payload"), CASES, ids=IDS)
def test_piped_card_and_json_show_no_control(catalog, i, payload):
    res = CliRunner().invoke(app, ["explain", "--catalog", str(catalog), paste(i, payload)])
    assert res.exit_code == 0, res.output
    assert acted_on(res.stdout) == [], res.stdout
    assert "ValueError" in res.stdout and "Doc " in res.stdout
    res = CliRunner().invoke(
        app, ["explain", "--json", "--catalog", str(catalog), paste(i, payload)]
    )
    assert acted_on(res.stdout) == []
    (m,) = json.loads(res.stdout)["matches"]  # the data itself is kept, escaped only as JSON
    assert m["record"]["documentation"] == f"Doc {payload} end"
    if "\x1b" not in payload:  # (a paste's own ESC sequences are read past, as colour codes are)
        assert m["values"]["mode"] == payload


def test_the_tty_card_shows_each_control_as_its_escape(catalog):
    i, payload = 0, PAYLOADS["csi-c1"] + PAYLOADS["bidi"] + PAYLOADS["osc52-c1"]
    everything = "".join(PAYLOADS.values())
    ds = synth.write_files(catalog.parent / "all", [record(i, everything)])
    load_dataset(ds, catalog.parent / "all.duckdb")
    _, out = in_pty(
        catalog.parent / "all.duckdb", "explain", paste(i, payload), env={"FORCE_HYPERLINK": "1"}
    )
    assert "\x1b[" in out  # styled: a terminal, not a pipe
    assert acted_on(out) == [], out
    assert r"\u009b2J\u009bH" in out and r"\u202egnp.exe" in out and r"\x1b]8;;" in out
    # the only links are kverr's, and a record's own link is not one of them
    assert re.findall(r"\x1b\]8;;([^\x1b]*)\x1b\\", out) in ([], ["", ""])


def test_an_error_message_that_quotes_a_path_is_escaped(tmp_path):
    bad = tmp_path / "c\u009b2J\x1b]8;;x\x1b\\.duckdb"
    res = CliRunner().invoke(app, ["explain", "--catalog", str(bad), "x"])
    assert res.exit_code == 2
    assert acted_on(res.stderr) == [] and r"\u009b2J\x1b]8;;x" in res.stderr


# ---------------------------------------------------------------- commands


@pytest.mark.parametrize("payload", PAYLOADS.values(), ids=IDS)
def test_a_shown_command_runs_the_words_or_shows_a_placeholder(payload):
    for words in (["--mode", payload], ["--mode", "a b", "--x=" + payload]):
        cmd = display.command(words)
        assert acted_on(cmd.text) == []
        if cmd.hidden:
            assert display.VALUE in cmd.text
        else:  # what a shell runs is exactly the words, whatever they hold
            assert shlex.split(cmd.text) == words


@pytest.mark.parametrize(("i", "payload"), CASES, ids=IDS)
def test_a_records_fix_command_is_safe_to_copy(catalog, i, payload):
    res = CliRunner().invoke(app, ["explain", "--catalog", str(catalog), paste(i, payload)])
    lines = res.stdout.splitlines()
    before = lines[lines.index("  Before:") + 1]
    assert before.startswith("python -m srv --mode ")
    if before.endswith(display.VALUE):
        assert display.HIDDEN_NOTE in res.stdout
    else:
        assert shlex.split(before) == ["python", "-m", "srv", "--mode", payload]


@pytest.fixture(scope="module")
def argparse_catalog(tmp_path_factory) -> Path:
    from argparse_fixture import make_repo

    root = tmp_path_factory.mktemp("argparse-escape")
    repo = make_repo(root / "repo")
    pipeline.build(pipeline.BuildSpec(out=root / "ds", source=pipeline.GitSource(repo.root, tags="v*"), cache=root / "cache.sqlite", command=["kverr", "build"]))  # fmt: skip
    load_datasets([root / "ds"], root / "c.duckdb")
    return root / "c.duckdb"


@pytest.mark.parametrize(
    ("value", "shown"),
    [("$(id)", "--tp-size <VALUE>"), ("`id`", "--tp-size <VALUE>"), ("1;id", "--tp-size <VALUE>"),
     ("x\u009b2J", "--tp-size <VALUE>"), ("two", "--tp-size two"), ("a b", "--tp-size 'a b'"),
     ("it's", "--tp-size 'it'\"'\"'s'")],
)  # fmt: skip
def test_a_pasted_value_in_before_is_quoted_or_not_shown(argparse_catalog, value, shown):
    line = f"sglang: error: argument --tensor-parallel-size/--tp-size: invalid int value: {value!r}"
    res = CliRunner().invoke(app, ["explain", "--catalog", str(argparse_catalog), line])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[lines.index("  Before:") + 1] == shown
    assert (display.HIDDEN_NOTE in res.stdout) == shown.endswith(display.VALUE)
    res = CliRunner().invoke(app, ["show", "--markdown", "--catalog", str(argparse_catalog),
                                   "7a1578be7cc2eb4c"])  # fmt: skip
    assert res.exit_code == 0
    with open_catalog(argparse_catalog) as cat:
        (m,) = cat.explain(line)
    md = answer_md.match(m)
    assert f"```bash\n{shown}\n```" in md and acted_on(md) == []


# ---------------------------------------------------------------- Markdown and the site


class Tags(HTMLParser):
    """Every start tag and its attributes, and the text, of an HTML document."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def assert_inert(page: str, where: str, scripts: tuple[str, ...] = ()) -> None:
    """No markup of a payload is live in `page`: no handler attribute, no javascript: link, no
    image, only the named scripts (by src, none inline), no control character in the text."""
    doc = Tags()
    doc.feed(page)
    for tag, attrs in doc.tags:
        handlers = {(a, v) for a, v in attrs.items() if a.lower().startswith("on")}
        assert handlers <= {("onsubmit", "return false")}, (where, tag, attrs)  # the site's own
        for name in ("href", "src", "action", "formaction"):
            assert not (attrs.get(name) or "").strip().lower().startswith("javascript"), where
        assert tag != "img", where
        if tag == "script":
            assert attrs.get("src", "").endswith(scripts), (where, attrs)
    assert acted_on("".join(doc.text)) == [], where


def test_the_markdown_answer_renders_inert(catalog):
    md = MarkdownIt("commonmark")  # raw HTML passes through, as on most forums
    with open_catalog(catalog) as cat:
        for i, payload in CASES:
            (m,) = cat.explain(paste(i, payload))
            text = answer_md.answers([m])
            assert acted_on(text) == []
            assert_inert(md.render(text), f"answer {IDS[i]}")


def test_the_markdown_export_renders_inert(catalog, tmp_path):
    md = MarkdownIt("commonmark")
    with open_catalog(catalog) as cat:
        export_markdown(cat, tmp_path / "md")
    pages = sorted((tmp_path / "md").rglob("*.md"))
    assert len(pages) == len(CASES) + 1
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert acted_on(text) == [], page.name
        assert_inert(md.render(text.split("---\n", 2)[-1]), page.name)


def test_the_site_renders_inert(catalog, tmp_path):
    with open_catalog(catalog) as cat:
        export_site(cat, tmp_path / "site", meta={"siteTitle": "t"})
    pages = sorted((tmp_path / "site").rglob("*.html"))
    assert len(pages) > len(CASES)
    for page in pages:
        assert_inert(page.read_text(encoding="utf-8"), page.name, scripts=(".js",))
    text = "".join(page.read_text(encoding="utf-8") for page in pages)
    for payload in PAYLOADS.values():  # each shown as text (escaped for HTML and terminal)
        assert html.escape(f"Doc {escape_terminal(payload)} end", quote=True) in text, payload
    search = (tmp_path / "site" / "assets" / "search-index.js").read_text(encoding="utf-8")
    assert acted_on(search) == [] and "</script" not in search.lower()


if sys.platform == "win32":  # pragma: no cover - the pty and the shell quoting are POSIX
    pytestmark = pytest.mark.skip("POSIX terminals and shells")
