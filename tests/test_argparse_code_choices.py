"""An option whose newer releases build their choices in code (`choices=list(REGISTRY)`):
kverr reads no fixed list there, but a pasted `invalid choice` line lists the user's own, so
the answer never says the option takes any value, and guesses from the printed list."""

from __future__ import annotations

from pathlib import Path

import pytest
from kverr.catalog import load_datasets, open_catalog
from test_sources import Git

from kverr import pipeline

SA = "python/sglang/srt/server_args.py"


def _server_args(choices: str, head: str = "") -> str:
    return (
        f"import argparse\nimport dataclasses\n{head}\n\n"
        "@dataclasses.dataclass\nclass ServerArgs:\n    parser_name: str = None\n\n"
        "    @staticmethod\n    def add_cli_args(parser: argparse.ArgumentParser):\n"
        f'        parser.add_argument("--parser-name", type=str, choices={choices})\n'
    )


@pytest.fixture(scope="module")
def cat(tmp_path_factory):
    root: Path = tmp_path_factory.mktemp("code_choices")
    g = Git(root / "repo")
    g.commit("before the option", {SA: _server_args('["a"]').replace("parser", "other")})
    g.tag("v0.0.1")
    g.commit("fixed choices", {SA: _server_args('["alpha", "beta"]')})
    g.tag("v0.1.0")
    g.commit(
        "choices from the registry",
        {SA: _server_args("list(REGISTRY.keys())", "from sglang.srt.parsers import REGISTRY")},
    )
    g.tag("v0.2.0")
    pipeline.build(
        pipeline.BuildSpec(out=root / "ds", source=pipeline.GitSource(g.root, tags="v*"))
    )
    load_datasets([root / "ds"], root / "c.duckdb")
    with open_catalog(root / "c.duckdb") as c:
        yield c


def _text(cat, line: str) -> list[str]:
    (m,) = cat.explain(line)
    return m.argparse["text"]


def test_a_printed_list_means_the_release_has_choices(cat) -> None:
    text = _text(
        cat,
        "launch_server.py: error: argument --parser-name: invalid choice: 'gama'"
        " (choose from 'alpha', 'beta', 'gamma')",
    )
    assert text[0] == (
        "From v0.2.0 on, --parser-name declares no fixed list of choices (it takes any value,"
        " or builds the list in code); your release printed its own."
    )
    # the releases named are those whose declaration lists choices, not those without it
    assert text[1].endswith("whose choices kverr reads (v0.1.0).")
    assert text[-1] == "Did you mean gamma?"
