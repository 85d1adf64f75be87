"""Every command has help text with an example, and the README documents it (sqlite-utils' test_docs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer.main

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
