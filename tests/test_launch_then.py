"""An example fix is written with the launch command of its own release: a vLLM-shaped
project (our own fixture modules) whose `vllm serve` entry point arrives in its second
commit, so a flag removed before then is launched through the OpenAI server module."""

from __future__ import annotations

import json
from pathlib import Path

from argparse_fixture import ENGINE, MODEL, engine_args, model_config
from test_sources import Git

from kverr import pipeline
from kverr.profile import load_profile

CLI = "vllm/entrypoints/cli/main.py"
OLD = "python -m vllm.entrypoints.openai.api_server --model MODEL"


def _with_old_flag() -> str:
    """The engine arguments with an --old-batch option the next commit removes."""
    return engine_args().replace(
        "        return parser\n",
        '        parser.add_argument("--old-batch", type=int, default=8)\n        return parser\n',
    )


def test_each_example_uses_the_launch_command_of_its_revision(tmp_path: Path) -> None:
    g = Git(tmp_path / "vl")
    g.commit("engine args", {ENGINE: _with_old_flag(), MODEL: model_config(["generate"])})
    g.commit("the CLI", {ENGINE: engine_args(), CLI: "def main():\n    return 0\n"})
    out = tmp_path / "out"
    pipeline.build(
        pipeline.BuildSpec(
            out=out,
            source=pipeline.GitSource(g.root, touching=True),
            profile="vllm",
            cache=tmp_path / "cache.sqlite",
        )
    )
    heads: dict[str, set[str]] = {}
    for line in (out / "records.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)["record"]
        if rec["exampleFix"]:
            flag = rec["argparse"].get("flag") or ""
            heads.setdefault(flag, set()).add(rec["exampleFix"].splitlines()[1].split(" --")[0])
    assert heads.pop("--old-batch") == {OLD.split(" --")[0]}
    assert heads and all(h == {"vllm serve MODEL"} for h in heads.values())


def test_the_profile_says_which_files_brought_the_command() -> None:
    vllm = load_profile("vllm")
    assert vllm.launched_at(lambda path: path == CLI) is vllm
    assert vllm.launched_at(lambda path: False).launch_command() == OLD
    sglang = load_profile("sglang")
    assert sglang.launched_at(lambda path: False) is sglang  # one command all along
