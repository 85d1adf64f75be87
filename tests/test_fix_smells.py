"""scripts/fix_smells.py: suspicious verified fixes, over a small dataset of our own whose
records point into a real git repo (the script reads each check's function at its revision)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from test_sources import Git

ROOT = Path(__file__).resolve().parents[1]
PATH = "python/sglang/srt/server_args.py"

SOURCE = """\
class ServerArgs:
    def _handle_defaults(self):
        if self.device is None:
            self.device = "cuda"
        if self.device == "cpu":
            self.page_size = 1

    def _handle_parallel(self):
        assert self.tp_size % self.dp_size == 0, "tp_size must be divisible by dp_size"

    def _handle_mamba(self):
        if self.mamba_strategy == "extra_buffer":
            if self.page_size > 64:
                raise ValueError("page size too big")

    def _handle_dp(self):
        if self.dp_size > 1 and self.mode == "eager":
            raise ValueError("dp needs the lazy mode")

    def _handle_metrics(self):
        self._handle_buckets(self.buckets)

    def _handle_buckets(self, rule):
        if rule == "tse" and self.served_name is None:
            raise ValueError("buckets need a name")
"""

FLAGS = [
    ("--device", "device", None, "None", "The device to use ('cuda', 'xpu', 'cpu')."),
    ("--attention-backend", "attention_backend", ["triton", "flashinfer"], "None", ""),
    ("--mamba-strategy", "mamba_strategy", ["auto", "extra_buffer"], "'auto'", ""),
    ("--mode", "mode", ["eager", "lazy"], "'eager'", ""),
    ("--page-size", "page_size", None, "1", ""),
    ("--tp-size", "tp_size", None, "1", ""),
    ("--dp-size", "dp_size", None, "1", ""),
    ("--pp-size", "pp_size", None, "1", ""),
    ("--served-name", "served_name", None, "None", "The name the server answers to."),
    ("--buckets", "buckets", None, "None", "The bucket rule."),
    ("--model-path", "model_path", None, "None", "The path of the model weights."),
]
TYPES = {"--page-size": "int", "--tp-size": "int", "--dp-size": "int", "--pp-size": "int"}

CASES = [
    # function, before options, after options, the smells
    ("_handle_mamba", "--mamba-strategy extra_buffer --page-size 65 --device flashinfer",
     "--mamba-strategy extra_buffer --page-size 64 --device flashinfer",
     {"foreign value": ["--device flashinfer"], "unread option": ["--device flashinfer"]}),
    # --tp-size 2 is what `tp_size % dp_size` asks of --dp-size 2: read, no smell
    ("_handle_dp", "--dp-size 2 --tp-size 2 --mode eager", "--dp-size 2 --tp-size 2 --mode lazy", {}),
    ("_handle_dp", "--dp-size 2 --mode eager --device main", "--dp-size 2 --mode lazy --device main",
     {"unknown value": ["--device main"], "unread option": ["--device main"]}),
    ("_handle_dp", "--dp-size 2 --mode eager --device xpu", "--dp-size 2 --mode lazy --device xpu",
     {"unread option": ["--device xpu"]}),
    ("_handle_dp", "--dp-size 2 --mode eager --pp-size 1", "--dp-size 2 --mode lazy --pp-size 1",
     {"default value": ["--pp-size 1"], "unread option": ["--pp-size 1"]}),
    ("_handle_dp", "--dp-size 2 --dp-size 4 --mode eager", "--dp-size 2 --mode lazy",
     {"duplicated option": ["before: dp_size x2"]}),
    # the base option given again (the launch's own --model-path beside MODEL_PATH)
    ("_handle_dp", "--dp-size 2 --mode eager --model-path /x", "--dp-size 2 --mode lazy",
     {"duplicated option": ["before: model_path x2"]}),
    ("_handle_mamba", "--mamba-strategy extra_buffer --page-size 65 --dp-size 2 --tp-size 2 "
     "--mode lazy --attention-backend triton --device cuda",
     "--mamba-strategy extra_buffer --page-size 64 --dp-size 2 --tp-size 2 --mode lazy "
     "--attention-backend triton --device cuda",
     {"long before": ["7 options"], "unread option": [
         "--attention-backend triton", "--device cuda", "--dp-size 2", "--mode lazy",
         "--tp-size 2"]}),
    # the function's own word for a rule, and a name left as its metavar
    ("_handle_buckets", "--buckets tse", "--buckets tse --served-name SERVED_NAME",
     {"placeholder value": ["--served-name SERVED_NAME"]}),
    ("_handle_buckets", "--buckets tse --served-name x", "--buckets tse --served-name x",
     {"placeholder value": ["--served-name x"]}),
]  # fmt: skip


def _script():
    spec = importlib.util.spec_from_file_location("fix_smells", ROOT / "scripts" / "fix_smells.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("smells")
    g = Git(root / "repo")
    sha = g.commit("our server args", {PATH: SOURCE})
    out = root / "data"
    out.mkdir()
    head = "python -m sglang.launch_server --model-path MODEL_PATH"
    records, occurrences = [], []
    for i, (function, before, after, _) in enumerate(CASES):
        rid = f"{i:016x}"
        start = next(n for n, line in enumerate(SOURCE.splitlines(), 1) if function in line)
        records.append(
            {
                "id": rid,
                "filePath": PATH,
                "flags": [],
                "sourceCode": SOURCE,
                "sourceCodeStart": 1,
                "sourceCodeEnd": start + 4,
                "exampleFix": f"# before\n{head} {before}\n# after\n{head} {after}",
                "verification": {"status": "verified", "revision": sha[:12]},
            }
        )
        occurrences.append({"id": rid, "function": f"ServerArgs.{function}", "from": 0, "to": 0})
    flags = [
        {"name": n, "dest": d, "choices": c, "default": df, "help": h, "type": TYPES.get(n, "str")}
        for n, d, c, df, h in FLAGS
    ]
    for name, rows in (("records", records), ("occurrences", occurrences), ("flags", flags)):
        wrap = (lambda r: {"record": r}) if name == "records" else (lambda r: r)
        text = "".join(json.dumps(wrap(r)) + "\n" for r in rows)
        (out / f"{name}.jsonl").write_text(text, encoding="utf-8")
    return out, str(g.root)


@pytest.mark.parametrize("case", range(len(CASES)), ids=[c[1][:40] for c in CASES])
def test_each_smell_is_flagged_and_nothing_else(dataset, case) -> None:
    data, mirror = dataset
    found = _script().audit(data, mirror)["records"].get(f"{case:016x}", {})
    want = CASES[case][3]
    assert {k: sorted(v) for k, v in found.items()} == {k: sorted(v) for k, v in want.items()}


def test_counts_and_the_command_line(dataset, capsys) -> None:
    data, mirror = dataset
    mod = _script()
    result = mod.audit(data, mirror)
    assert result["verified"] == len(CASES)
    assert result["counts"]["unread option"] == 5
    assert mod.main([str(data), "--git", mirror]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"verified fixes: {len(CASES)}; with a smell: {result['smelly']}\n")
    assert mod.main([str(data / "nowhere")]) == 2
    assert "holds records.jsonl" in capsys.readouterr().err
