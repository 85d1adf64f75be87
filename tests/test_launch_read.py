"""The user's launch, read from a paste (kverr/launch.py): table tests in our own words, then
the adversarial shapes, whose cost must grow linearly with the paste."""

from __future__ import annotations

import time

import pytest

from kverr.launch import MAX_CHARS, MAX_LAUNCHES, forms_of, read_launches
from kverr.profile import load_profile

FORMS = forms_of([load_profile("sglang"), load_profile("vllm")])


def launch(text: str):
    found = read_launches(text, FORMS)
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize(
    ("paste", "project", "argv", "env"),
    [
        (
            "python -m sglang.launch_server --model-path Qwen/Qwen2.5-7B-Instruct --tp 4",
            "sglang",
            ["--model-path", "Qwen/Qwen2.5-7B-Instruct", "--tp", "4"],
            {},
        ),
        (  # a prompt, env prefixes, python3 and a quoted value
            "$ CUDA_VISIBLE_DEVICES=0,1 SGLANG_DISABLE_X=1 python3 -m sglang.launch_server "
            "--model-path '/models/my model' --port 30000",
            "sglang",
            ["--model-path", "/models/my model", "--port", "30000"],
            {"CUDA_VISIBLE_DEVICES": "0,1", "SGLANG_DISABLE_X": "1"},
        ),
        (  # a fence and backslash continuations
            "I start it like this:\n```bash\npython -m sglang.launch_server \\\n"
            "  --model-path meta-llama/Llama-3.1-8B \\\n  --dp-size 2 \\\n"
            "  --enable-dp-attention\n```\nand it fails.",
            "sglang",
            ["--model-path", "meta-llama/Llama-3.1-8B", "--dp-size", "2", "--enable-dp-attention"],
            {},
        ),
        (  # the backslashes lost on the way into an issue: indented options go on
            "root@node:/workspace# vllm serve meta-llama/Llama-3.1-8B\n    --max-model-len 65536\n"
            "    --gpu-memory-utilization 0.95\nINFO 05-19 loading",
            "vllm",
            [
                "meta-llama/Llama-3.1-8B",
                "--max-model-len",
                "65536",
                "--gpu-memory-utilization",
                "0.95",
            ],
            {},
        ),
        (  # inside a container command, behind a virtualenv's python
            "docker run --gpus all img /opt/venv/bin/python3.11 -m "
            "vllm.entrypoints.openai.api_server --model m --tensor-parallel-size 2",
            "vllm",
            ["--model", "m", "--tensor-parallel-size", "2"],
            {},
        ),
        (
            "`sglang serve --model-path m --tp-size 8`",
            "sglang",
            ["--model-path", "m", "--tp-size", "8"],
            {},
        ),
    ],
)
def test_a_command_line_is_read_as_typed(paste, project, argv, env) -> None:
    got = launch(paste)
    assert (got.project, got.form, list(got.words), dict(got.env)) == (
        project,
        "command",
        argv,
        env,
    )


def test_the_line_is_where_the_command_starts() -> None:
    paste = "Traceback? no, first my command:\n\n```\n$ vllm serve org/m --enforce-eager\n```"
    assert launch(paste).line == 4


def test_vllm_non_default_args_are_read_by_dest() -> None:
    paste = (
        "INFO 05-19 11:44:32 [utils.py:326] non-default args: {'model_tag': 'm', "
        "'tensor_parallel_size': 4, 'max_model_len': 65536, 'enforce_eager': True, "
        "'model': 'm'}\nERROR 05-19 ..."
    )
    got = launch(paste)
    assert got.project == "vllm" and got.form == "dict"
    assert dict(got.values) == {
        "model_tag": "m",
        "tensor_parallel_size": 4,
        "max_model_len": 65536,
        "enforce_eager": True,
        "model": "m",
    }


def test_sglang_server_args_are_every_field() -> None:
    paste = (
        "[2026-04-07 10:05:08] server_args=ServerArgs(model_path='m', tp_size=4, "
        "dp_size=3, chunked_prefill_size=None, device=<object at 0x7f>, log_level='info')"
    )
    got = launch(paste)
    assert got.project == "sglang" and got.form == "fields"
    # a value that is no literal is left out, never guessed
    assert dict(got.values) == {
        "model_path": "m",
        "tp_size": 4,
        "dp_size": 3,
        "chunked_prefill_size": None,
        "log_level": "info",
    }


@pytest.mark.parametrize(
    "paste",
    [
        "[Bug]: vllm serve crashes with --max-model-len",  # a title, no launch after it
        "We run `python -m sglang.launch_server` in a container.",
        "pip install sglang && python -m sglang.check_env",
        "python -m sglang.bench_serving --backend sglang",
        "non-default args: not a dict at all",
        "server_args=ServerArgs(" + "(" * 500,
        "unclosed 'quote python -m sglang.launch_server --tp 2",
    ],
)
def test_no_launch_where_there_is_none(paste) -> None:
    found = read_launches(paste, FORMS)
    assert all(f.words for f in found if f.form == "command") or not found
    if "launch_server`" in paste or "[Bug]" in paste:
        assert [f for f in found if f.words] == []


def test_a_paste_keeps_at_most_so_many_launches() -> None:
    paste = "\n".join(f"vllm serve m{i} --port {i}" for i in range(MAX_LAUNCHES * 3))
    assert len(read_launches(paste, FORMS)) == MAX_LAUNCHES


# ---------------------------------------------------------------- adversarial shapes

SHAPES = {
    "spaces": lambda n: "python -m sglang.launch_server" + " " * n + "--tp 2",
    "continuations": lambda n: "vllm serve org/m \\\n" + "  --x 1 \\\n" * (n // 10),
    "prefixes": lambda n: "$ " * (n // 2) + "vllm serve org/m",
    "endless line": lambda n: "vllm serve org/m --a " + "x" * n,
    "many candidates": lambda n: "python -m \n" * (n // 10),
    "dict": lambda n: "non-default args: {" + "'a': [" * (n // 6),
    "env words": lambda n: "A=1 " * (n // 4) + "vllm serve org/m",
}


def _cpu(text: str) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.thread_time()
        read_launches(text, FORMS)
        best = min(best, time.thread_time() - started)
    return max(best, 1e-5)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_reading_time_grows_linearly(shape) -> None:
    make = SHAPES[shape]
    small, large = _cpu(make(20_000)), _cpu(make(200_000))
    assert large / small < 30, (shape, small, large)  # linear: ~10; quadratic: ~100


def test_a_launch_is_cut_at_its_limit() -> None:
    got = read_launches("vllm serve org/m " + "--a " * MAX_CHARS, FORMS)
    assert len(" ".join(got[0].words)) <= MAX_CHARS
