"""The command line's conventions, for every command: an unknown option is a usage error that
names the nearest real one (pasted text that starts with a flag still works), one exit-status
table in every --help, command summaries never cut, types in Click's words, and Tab completion
of values (releases, projects, flags, ids) from the catalog."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_feeds_data import BY_KEY
from typer.testing import CliRunner

from kverr.cli import EXIT_STATUS, app

PASTE = "ValueError: --page-size must be a power of two, got 48."
COMMANDS = [c.name or c.callback.__name__.replace("_", "-") for c in app.registered_commands]
KVERR = Path(sys.executable).parent / "kverr"


@pytest.fixture
def cli(feeds_catalog_path, monkeypatch):
    monkeypatch.setenv("KVERR_CATALOG", str(feeds_catalog_path))
    return lambda *args: CliRunner().invoke(app, list(args))


# ---------------------------------------------------------------- unknown options


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["explain", "--jsn"], "no such option --jsn; did you mean --json?"),
        (["explain", PASTE, "--jsn"], "no such option --jsn; did you mean --json?"),
        (["explain", "--projet=sglang", PASTE], "no such option --projet; did you mean --project?"),
        (["explain", "--release", "v0.5.0", "--pain", PASTE], "--pain; did you mean --plain?"),
        (["history", "--jsn"], "no such option --jsn; did you mean --json?"),
        (["check", "--relase", "v1", "--", "python", "-m", "x"], "did you mean --release?"),
        (["search", "--jsn", "page"], "no such option --jsn; did you mean --json?"),
        (["search", "--zzzz", "page"], "no such option --zzzz"),
        (["show", "--markdwn", "abc"], "did you mean --markdown?"),
    ],
    ids=["explain", "after-text", "with-value", "after-a-valued-option", "history", "check",
         "search", "nothing-near", "show"],
)  # fmt: skip
def test_an_unknown_option_is_a_usage_error_with_the_nearest(cli, args, said):
    res = cli(*args)
    assert res.exit_code == 2 and "Error: no such option" in res.stderr, res.output
    assert said in res.stderr, res.output
    assert "Traceback" not in res.output


@pytest.mark.parametrize(
    "args",
    [["explain", "--page-size must be a power of two, got 48."],  # a paste, quoted: one word
     ["explain", "--", "--jsn"],  # after --: text whatever it says
     ["explain", "--release", "--page-size"]],  # an option's value, whatever it looks like
    ids=["paste", "after-dashes", "a-value"],
)  # fmt: skip
def test_pasted_text_that_starts_with_a_flag_is_still_text(cli, args):
    res = cli(*args)
    assert "no such option" not in res.output, res.output
    if args[1] != "--release":
        assert res.exit_code in (0, 1), res.output


def test_a_paste_starting_with_a_flag_is_explained(cli):
    res = cli("explain", "--page-size must be a power of two, got 48.", "--json")
    assert res.exit_code == 0 and BY_KEY["page-size-power"]["id"] in res.stdout


def test_a_launch_keeps_its_own_options(cli):
    # `--tp`, `--relese` after the launch's first word are the launch's, not kverr's
    res = cli("check", "--json", "python", "-m", "pkg.serve", "--relese", "x", "--tp", "4")
    assert "no such option" not in res.output


def test_unknown_option_in_a_real_process():
    res = subprocess.run([KVERR, "explain", "--jsn"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "did you mean --json?" in res.stderr and res.stdout == ""


# ---------------------------------------------------------------- help


def _help(*args: str) -> str:
    res = CliRunner().invoke(app, [*args, "--help"])
    assert res.exit_code == 0, res.output
    return res.stdout


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_every_help_ends_with_the_one_exit_table(command):
    text = _help(*([command] if command else []))
    table = text.split("\nExit status:\n", 1)[1]
    rows = [line.split(None, 1) for line in table.strip().splitlines()]
    assert [(code, said) for code, said in rows] == list(EXIT_STATUS)
    assert text.count("Exit status") == 1  # not also in a docstring


def test_summaries_are_whole_in_kverr_help():
    text = _help()
    listing = text.split("\nCommands:\n", 1)[1].split("\n\n", 1)[0]
    assert "..." not in listing
    summaries = dict(re.findall(r"^  (\S+)\s+(.*(?:\n {4,}.*)*)", listing, re.M))
    for cmd in app.registered_commands:
        name = cmd.name or cmd.callback.__name__.replace("_", "-")
        first = " ".join(cmd.callback.__doc__.split("\n\n", 1)[0].split())
        assert " ".join(summaries[name].split()) == first, name


@pytest.mark.parametrize("command", COMMANDS)
def test_help_names_types_in_clicks_words(command):
    text = _help(command)
    typer_words = re.findall(r"<(?:str|int|float|bool|path|\w+ range|list\[\w+\])>", text)
    assert typer_words == []


def test_help_types_are_integer_and_text():
    text = _help("search")
    assert "--limit INTEGER" in text and "--flag TEXT" in text
    assert "  [WORDS]...  " in text  # an argument by its metavar alone
    assert "--rev TEXT" in _help("build")


# ---------------------------------------------------------------- completion


def _complete(words: str, catalog: Path) -> list[str]:
    """What bash's Tab offers: the script run with the variables the completion function sets."""
    parts = words.split(" ")
    env = {**os.environ, "_KVERR_COMPLETE": "complete_bash", "COMP_WORDS": words,
           "COMP_CWORD": str(len(parts) - 1), "KVERR_CATALOG": str(catalog)}  # fmt: skip
    res = subprocess.run([KVERR], capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    return res.stdout.split()


@pytest.mark.skipif(not KVERR.is_file(), reason="no kverr script beside this python")
@pytest.mark.parametrize(
    ("words", "offered"),
    [("kverr explain --release v0.", ["v0.5.0", "v0.4.0"]),
     ("kverr search -r 0.5", ["0.5.0"]),
     ("kverr diff v0.4.0 v", ["v0.5.0", "v0.4.0"]),
     ("kverr search --project sg", ["sglang"]),
     ("kverr search --flag page", ["page-size"]),
     ("kverr search --flag kv-", ["kv-cache-dtype"]),
     ("kverr show " + BY_KEY["radix-offload"]["id"][:5], [BY_KEY["radix-offload"]["id"]]),
     ("kverr show radix-off", [BY_KEY["radix-offload"]["slug"]])],
    ids=["release", "release-digits", "diff", "project", "flag", "flag-bare", "id", "slug"],
)  # fmt: skip
def test_tab_completes_values_from_the_catalog(feeds_catalog_path, words, offered):
    assert _complete(words, feeds_catalog_path) == offered


@pytest.mark.skipif(not KVERR.is_file(), reason="no kverr script beside this python")
def test_tab_with_a_missing_catalog_offers_nothing(tmp_path):
    assert _complete("kverr show ab", tmp_path / "missing.duckdb") == []
