"""A server-args module in SGLang's shape (our own fixture code, not SGLang's) whose argparse
declarations change between three tagged revisions, for the argparse records and answers:

  v0.1.0  --attention-backend choices triton, torch_sdpa, flashinfer; --old-flag exists
  v0.2.0  torch_sdpa renamed torch_native, fa3 added; --old-flag removed; --kt-amx-method added
  v0.3.0  --tp-size default 1 -> 2 (lines shift too)

Every revision: --tensor-parallel-size/--tp-size (int), --mem-fraction (float), --cuda-graph-bs
(nargs +), --enable-x (store_true), --json-args (json.loads), --name (str), --lora (nargs ?).
"""

from __future__ import annotations

from pathlib import Path

from test_sources import Git

SA = "python/sglang/srt/server_args.py"

V1_CHOICES = ["triton", "torch_sdpa", "flashinfer"]
V2_CHOICES = ["triton", "torch_native", "flashinfer", "fa3"]


def server_args(*, choices: list[str], old_flag: bool, kt: bool, tp_default: int, pad: int) -> str:
    extra = ""
    if old_flag:
        extra += (
            '        parser.add_argument("--old-flag", action="store_true", help="Gone later.")\n'
        )
    if kt:
        extra += (
            '        parser.add_argument("--kt-amx-method", type=str, default="AMXINT4",'
            ' help="Quantization formats for CPU execution.")\n'
        )
    return (
        "import argparse\nimport json\nfrom dataclasses import dataclass\n"
        + "# padding\n" * pad
        + f"\nATTENTION_BACKEND_CHOICES = {choices!r}\n\n\n"
        "@dataclass\n"
        "class ServerArgs:\n"
        f"    tp_size: int = {tp_default}\n"
        "    attention_backend: str = None\n"
        "    mem_fraction: float = None\n\n"
        "    @staticmethod\n"
        "    def add_cli_args(parser: argparse.ArgumentParser):\n"
        "        parser.add_argument(\n"
        '            "--tensor-parallel-size",\n'
        '            "--tp-size",\n'
        "            type=int,\n"
        "            default=ServerArgs.tp_size,\n"
        '            help="The tensor parallelism size.",\n'
        "        )\n"
        "        parser.add_argument(\n"
        '            "--attention-backend",\n'
        "            type=str,\n"
        "            choices=ATTENTION_BACKEND_CHOICES,\n"
        "            default=ServerArgs.attention_backend,\n"
        '            help="Choose the kernels for attention layers.",\n'
        "        )\n"
        '        parser.add_argument("--mem-fraction", type=float, default=0.9, help="Memory share.")\n'
        '        parser.add_argument("--cuda-graph-bs", type=int, nargs="+", help="Batch sizes.")\n'
        '        parser.add_argument("--enable-x", action="store_true", help="Enable x.")\n'
        '        parser.add_argument("--json-args", type=json.loads, default="{}", help="Extra.")\n'
        '        parser.add_argument("--name", type=str, default="srv", help="A name.")\n'
        '        parser.add_argument("--lora", type=str, nargs="?", help="A LoRA.")\n' + extra
    )


REVISIONS = (
    ("v0.1.0", {"choices": V1_CHOICES, "old_flag": True, "kt": False, "tp_default": 1, "pad": 0}),
    ("v0.2.0", {"choices": V2_CHOICES, "old_flag": False, "kt": True, "tp_default": 1, "pad": 0}),
    ("v0.3.0", {"choices": V2_CHOICES, "old_flag": False, "kt": True, "tp_default": 2, "pad": 3}),
)


def make_repo(root: Path) -> Git:
    g = Git(root)
    for tag, kw in REVISIONS:
        g.commit(f"release {tag}", {SA: server_args(**kw)})
        g.tag(tag)
    return g


# ---------------------------------------------------------------- vLLM's shape

ENGINE = "vllm/engine/arg_utils.py"
MODEL = "vllm/config/model.py"


def engine_args() -> str:
    """EngineArgs whose flags take their argparse kwargs from the fields' annotations."""
    return (
        "import argparse\nfrom dataclasses import dataclass\n\n"
        "from vllm.config.model import ModelConfig, RunnerOption, AttentionBackend\n"
        "from vllm.engine.arg_utils_kwargs import get_kwargs\n\n\n"
        "@dataclass\n"
        "class EngineArgs:\n"
        "    runner: RunnerOption = ModelConfig.runner\n"
        "    attention_backend: AttentionBackend | None = None\n"
        "    enable_prefix_caching: bool | None = None\n"
        "    max_num_seqs: int | None = None\n"
        "    tensor_parallel_size: int = 1\n\n"
        "    @staticmethod\n"
        "    def add_cli_args(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:\n"
        "        kwargs = get_kwargs(EngineArgs)\n"
        '        parser.add_argument("--runner", **kwargs["runner"])\n'
        '        parser.add_argument("--attention-backend", **kwargs["attention_backend"])\n'
        '        parser.add_argument("--enable-prefix-caching", **kwargs["enable_prefix_caching"])\n'
        '        parser.add_argument("--max-num-seqs", **kwargs["max_num_seqs"])\n'
        '        parser.add_argument("--tensor-parallel-size", "-tp", **kwargs["tensor_parallel_size"])\n'
        "        return parser\n"
    )


def model_config(runner_types: list[str]) -> str:
    return (
        "from dataclasses import dataclass\nfrom typing import Literal\n\n"
        f"RunnerType = Literal[{', '.join(map(repr, runner_types))}]\n"
        'RunnerOption = Literal["auto", RunnerType]\n'
        'AttentionBackend = Literal["triton", "flash_attn"]\n\n\n'
        "@dataclass\n"
        "class ModelConfig:\n"
        '    runner: RunnerOption = "auto"\n'
    )


def make_vllm_repo(root: Path) -> Git:
    """Two commits (vLLM tags no releases in the mirror kverr builds): the runner type
    `pooling` renamed `embed` in the second."""
    g = Git(root)
    g.commit("engine args", {ENGINE: engine_args(), MODEL: model_config(["generate", "pooling"])})
    g.commit("rename pooling", {MODEL: model_config(["embed", "generate"])})
    return g


def build_both(root: Path, sg: Git, vl: Git) -> None:
    """Datasets of both fixture repositories under `root` (sglang/, vllm/), one build cache:
    SGLang's tags, and vLLM's commits that touch its files (it tags no releases)."""
    from kverr import pipeline

    kw = {"cache": root / "cache.sqlite", "command": ["kverr", "build"]}
    pipeline.build(
        pipeline.BuildSpec(out=root / "sglang", source=pipeline.GitSource(sg.root, tags="v*"), **kw)
    )
    pipeline.build(
        pipeline.BuildSpec(
            out=root / "vllm",
            source=pipeline.GitSource(vl.root, touching=True),
            profile="vllm",
            **kw,
        )
    )
