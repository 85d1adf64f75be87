"""Imported constants read at the same revision (extractor/imports.py), over a real git repo."""

from __future__ import annotations

import json
from pathlib import Path

from test_sources import Git

from kverr import pipeline

SA = "python/sglang/srt/server_args.py"
GROUP = "python/sglang/srt/arg_groups/paging.py"
SERVER_ARGS = """
from dataclasses import dataclass

from sglang.srt.kernels.chunk import CHUNK_WIDTH as KERNEL_CHUNK
from sglang.srt.kernels.chunk import NOT_A_LITERAL
from sglang.srt.utils import NOT_WITH_EAGER, UNSUPPORTED


@dataclass
class ServerArgs:
    page_size: int = 1

    def check(self):
        if KERNEL_CHUNK % self.page_size != 0:
            raise ValueError(f"--page-size must divide {KERNEL_CHUNK}")
        if self.page_size > NOT_A_LITERAL:
            raise ValueError("--page-size is too large")
        if self.page_size == 3:
            raise ValueError(NOT_WITH_EAGER)
        if self.page_size == 5:
            raise NotImplementedError(UNSUPPORTED["PAGE_5"])
"""
PAGING = """
from typing import Any

from .limits import MAX_PAGES


def handle_paging(server_args: Any) -> None:
    if server_args.page_size > MAX_PAGES:
        raise ValueError("--page-size above the page limit")
"""

UTILS = """
NOT_WITH_EAGER = ("Paging is not supported "
                  "in eager mode.")
UNSUPPORTED = {"PAGE_5": "Five pages are not supported", "PAGE_7": NOT_WITH_EAGER}
"""


def test_an_imported_constant_reads_as_its_value(tmp_path: Path, monkeypatch) -> None:
    # a message that is an imported name alone is read at the build, not by the extractor
    monkeypatch.setenv("KVERR_STRICT", "0")
    g = Git(tmp_path / "repo")
    g.commit(
        "initial",
        {
            SA: SERVER_ARGS,
            GROUP: PAGING,
            "python/sglang/srt/kernels/chunk.py": "CHUNK_WIDTH = 64\nNOT_A_LITERAL = compute()\n",
            "python/sglang/srt/arg_groups/limits.py": "MAX_PAGES = 4096\n",
            "python/sglang/srt/utils.py": UTILS,
        },
    )
    out = tmp_path / "out"
    pipeline.build(
        pipeline.BuildSpec(
            out=out, source=pipeline.GitSource(g.root, revs=["HEAD"]), repo_name="acme/engine"
        )
    )
    lines = (out / "records.jsonl").read_text(encoding="utf-8").splitlines()
    trigger = {
        r["errorMessage"]: r["triggerScenarios"] for r in (json.loads(x)["record"] for x in lines)
    }
    # the message prints the constant: the record shows it, as the code's own constants
    assert "--page-size is not a divisor of 64" in trigger["--page-size must divide 64"]
    assert "Paging is not supported in eager mode." in trigger
    assert "Five pages are not supported" in trigger
    assert trigger["--page-size above the page limit"] == "Launching with --page-size > 4096."
    # a name bound to something computed at runtime stays a name
    assert "NOT_A_LITERAL" in trigger["--page-size is too large"]
