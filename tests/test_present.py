"""One answer, drawn per medium: the terminal card, the Markdown a bot posts, the Markdown
export's page and the site's record page show the same sections under the same labels in the
same order (present/answer.py's LABELS, fix first), and no module outside present/ names a
section or writes its own Markdown escaping."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from kverr.feeds.exports import export_markdown, site_meta
from kverr.feeds.site import export_site, page_of
from kverr.present import answer as a
from kverr.present import display, text
from kverr.present import markdown as md
from test_feeds_data import BY_KEY

from kverr import template
from kverr.answers import Match

ROOT = Path(__file__).resolve().parents[1]
# The installed code: every folder pyproject.toml maps into the kverr namespace.
PACKAGES = ("kverr", "feeds", "catalog", "records", "pipeline", "schema", "extractor", "verify")
# Labels the renderers used to pick for themselves.
OLD_LABELS = ("How to fix it", "When it happens", "Why it happens", "Common situations")


@pytest.fixture(scope="module")
def drawn(feeds_catalog, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("present")
    export_site(feeds_catalog, out / "site", meta=site_meta(feeds_catalog))
    export_markdown(feeds_catalog, out / "md")
    return {"site": out / "site", "md": out / "md", "cat": feeds_catalog}


def _in_order(found: dict[str, int]) -> list[str]:
    return [label for label, at in sorted(found.items(), key=lambda kv: kv[1]) if at >= 0]


def card_labels(lines: list[str]) -> list[str]:
    """The labels of a terminal card: the fix's heading alone on its line, each fact's label
    in the label column."""
    found = {}
    for label in a.LABELS.values():
        at = [i for i, x in enumerate(lines) if x == label or x.startswith(label.ljust(text.LABEL))]
        found[label] = at[0] if at else -1
    return _in_order(found)


def bot_labels(body: str) -> list[str]:
    """The labels of a bot's answer: bold headings, then `Label: value` facts on one line."""
    found = {}
    for label in a.LABELS.values():
        hit = re.search(rf"(?m)(?:^\*\*|^|· ){re.escape(label)}(?::|\*\*)", body)
        found[label] = hit.start() if hit else -1
    return _in_order(found)


def page_labels(body: str) -> list[str]:
    return [h for h in re.findall(r"(?m)^## (.+)$", body) if h in a.LABELS.values()]


def site_labels(body: str) -> list[str]:
    sections = re.findall(r'<section id="(\w+)"><h2>([^<]*)</h2>', body)
    return [label for key, label in sections if key in a.LABELS]


# a fix and every fact; a fix without a trigger; no fix; a message-less assert
KEYS = (
    "page-size-power",
    "chat-template-missing",
    "kv-dtype-backend",
    "radix-offload",
    "assert-tp-pp",
)


@pytest.mark.parametrize("key", KEYS)
def test_every_medium_shows_the_same_sections(drawn, key):
    rec = BY_KEY[key]
    cat = drawn["cat"]
    orders = cat.release_orders()
    releases = cat.releases_of(rec["id"])
    m = Match(rec, 1.0, "id", revisions=tuple(releases))
    want = [a.LABELS[k] for k in a.of_match(m, orders).sections()]
    assert want[-1] == "Source" and (want[0] == "How to fix") == bool(rec.get("solutions"))

    assert card_labels(text.card(m, orders=orders)) == want
    assert bot_labels(md.match(m, orders)) == want
    page = (drawn["md"] / "errors" / f"{rec['slug']}.md").read_text(encoding="utf-8")
    site = (drawn["site"] / page_of(rec)).read_text(encoding="utf-8")
    # a page also says when it happens (commonSituations) under "Why it fired"
    shown = [
        a.LABELS[k] for k in a.of_record(rec, releases, display.order_of(orders, m)).sections()
    ]
    assert page_labels(page) == site_labels(site) == shown
    assert [x for x in shown if x in want] == want


def _strings(path: Path):
    """The string constants of a module, docstrings left out (they may name a section)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node.value


def test_only_present_names_sections_and_escapes_markdown():
    """A section label, or the characters Markdown escapes, written anywhere but present/ is a
    renderer of its own in the making."""
    labels = [x for x in a.LABELS.values() if " " in x] + list(OLD_LABELS)  # "Flags" is a word
    offenders = []
    for folder in PACKAGES:
        for path in (ROOT / folder).rglob("*.py"):
            for s in _strings(path):
                if any(label in s for label in labels) or "`*_{}" in s:
                    offenders.append(f"{path.relative_to(ROOT)}: {s[:60]!r}")
    assert offenders == []
    escapes = [p for p in (ROOT / "present").glob("*.py") if "`*_{}" in p.read_text("utf-8")]
    assert [p.name for p in escapes] == ["markdown.py"]


def test_a_placeholder_reads_one_way_in_messages_and_prose():
    """`{value!r}` (argparse's records) and `{ratio:.2f}` are the placeholder `value` or
    `ratio` for the runs of a message and for the values filled into prose alike."""
    msg = "invalid choice: {value!r} (choose from {choices})"
    assert template.spans(msg, ["value", "choices"]) == [
        ("invalid choice: ", None), ("{value!r}", "value"), (" (choose from ", None),
        ("{choices}", "choices"), (")", None),
    ]  # fmt: skip
    prose = "Pass a value other than {value!r}; {value} is not one of {choices}, not {ratio:.2f}."
    got = template.fill(prose, ["value", "choices", "ratio"], {"value": "'fa9'", "ratio": "0.5"})
    assert got == "Pass a value other than fa9; fa9 is not one of {choices}, not 0.5."
    rec = {"placeholders": ["value"]}
    assert a.fill("use {value!r}", rec, {"value": "'x'"}) == "use x"
    assert template.fold("a {self.x} b {}", lambda e: f"<{e}>") == "a <self.x> b {}"


@pytest.mark.parametrize(
    ("advice", "example"),
    [
        ("Use --max-adapters 4 or 8 (not 2).", "Launch with --max-adapters 2"),
        ("Use --nics mlx5_1: each value once (mlx5_1 is named twice).", "Launch with --nics a,b"),
    ],
)
def test_a_value_the_pasted_values_move_is_not_given_again_by_the_records_example(advice, example):
    rec = {
        **BY_KEY["page-size-power"],
        "solutions": [
            example.replace("--max-adapters", advice.split()[1]),  # the example's launch
            "Change --max-adapters and --adapter-paths so that it holds",
            "Leave --max-adapters unset",
        ],
    }
    m = Match(record=rec, score=1.0, how="pattern", advice=(advice,))
    fix = a.of_match(m).fix
    assert fix.advice == (advice,)
    assert fix.solutions == (
        "Change --max-adapters and --adapter-paths so that it holds",
        "Leave --max-adapters unset",
    )
