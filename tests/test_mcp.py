"""`kverr mcp`: the SDK's own client over real transports, a `kverr mcp` process on stdio and
one on streamable HTTP (127.0.0.1), against the shipped catalog: every tool listed and called,
a table of pasted errors from the shipped datasets (SGLang and vLLM, with the log prefixes
they come with) and lines that are no launch error, the resources, and a failing check as a
tool error the model can read."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from typer.testing import CliRunner

from kverr.cli import app

ROOT = Path(__file__).resolve().parents[1]
TOOLS = {"explain", "check", "show", "search", "releases"}

# (project, record id, what a user pastes): messages of data/*/records.jsonl as the servers
# print them, behind the prefixes their logs put in front.
PASTES = [
    ("sglang", "35f71508f59b40d3", "[2025-06-02 09:14:03] AssertionError: tp_size must be divisible by moe_dp_size"),
    ("sglang", "4f44e4523bfffe61", "[2025-06-02 09:14:03 TP0] ValueError: --ssl-certfile requires --ssl-keyfile to be specified as well."),
    ("sglang", "013f50a5625463b3", "ValueError: SSL key file not found: '/etc/ssl/private/server.key'. Please check the --ssl-keyfile path."),
    ("sglang", "38cd822a1fb91248", '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/server_args.py", line 612, in __post_init__\nAssertionError: chunked_prefill_size must be divisible by page_size'),
    ("sglang", "ac14c40b254f12e9", "[2025-05-11 22:01:47] ValueError: Speculative decoding with page_size != 1 is not supported. Please set page_size to 1."),
    ("sglang", "b894feae36dcfe5e", "AssertionError: mamba_track_interval 100 must be divisible by page_size 64"),
    ("sglang", "a239d118ea75c8ad", "[2025-07-19 03:22:10] ValueError: Invalid disaggregation_mode=both"),
    ("sglang", "0630cf22a53ce3ef", "launch_server.py: error: argument --mamba-ssm-dtype: invalid choice: 'fp8' (choose from 'float32', 'bfloat16')"),
    ("sglang", "a886873e19e01c33", "launch_server.py: error: unrecognized arguments: --speculative-lookahead-min-bfs-breadth 4"),
    ("sglang", "c5d95403b8c65efc", "[2025-08-30 11:05:12] AssertionError: base_gpu_id must be non-negative"),
    ("vllm", "b86079f50575a98d", "(APIServer pid=1) ValueError: Tensor parallel size (8) cannot be larger than the number of available GPUs (4)."),
    ("vllm", "c73d1da84e5f5e9b", "ERROR 05-14 10:12:09 [core.py:586] ValueError: max_lora_rank (24) must be one of (1, 8, 16, 32, 64, 128, 256, 320, 512)."),
    ("vllm", "b3e94bc489b4ee73", "(EngineCore_0 pid=5123) ValueError: LoRA is not supported with quantized models yet."),
    ("vllm", "e05cc04fc88aaa13", "ValueError: max_cpu_loras (2) must be >= max_loras (4)"),
    ("vllm", "da4e486843c09eec", "INFO 03-02 08:00:01 [api_server.py:1043] ValueError: Chunked prefill is not supported with sliding window."),
    ("vllm", "d296e5812e035bf9", "(APIServer pid=77) NotImplementedError: Prefix caching is not supported for fp8 cache_dtype. Run with --kv-cache-dtype auto to use prefix caching."),
    ("vllm", "ca606763ed36f7d7", "AssertionError: world_size=6 must be divisible by nnodes=4."),
    ("vllm", "fe2d36c220832ecf", "ERROR 11-20 16:45:33 [arg_utils.py:1221] ValueError: numa_bind_nodes and numa_bind_cpus require numa_bind=True."),
    ("vllm", "e4799263647bfc01", "ValueError: Unknown tokenizer mode: fast. Must be either 'auto', 'slow' or 'mistral'."),
    ("vllm", "b9ede94a7ab790be", "(APIServer pid=42) ValueError: torch_profiler_dir must be set when profiler is 'torch'"),
]  # fmt: skip

# Lines a running server logs that are no launch error.
NEGATIVES = [
    "INFO 05-14 10:12:09 [api_server.py:1880] Starting vLLM API server 0 on http://0.0.0.0:8000",
    '[2025-06-02 09:14:03] INFO:     127.0.0.1:53822 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    "[2025-06-02 09:20:11 TP0] Decode batch. #running-req: 12, #token: 8412, token usage: 0.21, gen throughput (token/s): 1520.33, #queue-req: 0",
    "Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:03<00:00,  1.12it/s]",
    "(EngineCore_0 pid=311) INFO 05-14 10:13:40 [gpu_model_runner.py:2007] Model loading took 14.99 GiB and 6.13 seconds",
]  # fmt: skip


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "KVERR_SOURCE"}
    env["PYTHONPATH"] = str(ROOT)
    return env


@contextlib.contextmanager
def http_server(*extra: str) -> Iterator[str]:
    """A `kverr mcp --http 127.0.0.1:0` process; yields the URL it prints."""
    cmd = [sys.executable, "-m", "kverr", "mcp", "--http", "127.0.0.1:0", *extra]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(), stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()  # the first line, once the socket listens
        assert line.startswith("kverr: MCP over streamable HTTP at http://127.0.0.1:"), line
        url = line.split(" at ", 1)[1].strip()
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        proc.stderr.close()


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    with http_server() as url:
        yield url


def stdio_params() -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "kverr", "mcp"], env=_env(), cwd=str(ROOT)
    )


def session(server):
    return Client(server, read_timeout_seconds=60)


async def exercise(client: Client) -> dict:
    """Every tool listed and called, and the table of pastes explained, in one session."""
    out: dict = {"tools": (await client.list_tools()).tools, "explained": [], "negatives": []}
    for _project, _rid, text in PASTES:
        out["explained"].append(await client.call_tool("explain", {"text": text}))
    for text in NEGATIVES:
        out["negatives"].append(await client.call_tool("explain", {"text": text}))
    out["show"] = await client.call_tool("show", {"id": "35f71508f59b40d3"})
    out["search"] = await client.call_tool("search", {"query": "", "flag": "--page-size"})
    out["releases"] = await client.call_tool("releases", {"project": "sglang"})
    out["check"] = await client.call_tool("check", {"command": "python -m sglang.launch_server"})
    out["after"] = await client.call_tool("explain", {"text": PASTES[0][2]})
    return out


def assert_answers(out: dict) -> None:
    tools = {t.name: t for t in out["tools"]}
    assert set(tools) == TOOLS
    for t in tools.values():
        assert len(t.description or "") > 60, t.name  # written for a model to pick the tool
        assert t.input_schema["type"] == "object" and t.input_schema["properties"], t.name
        for name, prop in t.input_schema["properties"].items():
            assert prop.get("description"), f"{t.name}.{name} has no description"
    assert tools["explain"].input_schema["required"] == ["text"]
    assert tools["releases"].input_schema["properties"]["project"]["enum"] == ["sglang", "vllm"]

    wrong = []
    for (project, rid, _text), got in zip(PASTES, out["explained"], strict=True):
        matches = got.structured_content["matches"]
        top = matches[0] if matches else {"record": {}, "project": {}}
        if got.is_error or top["record"].get("id") != rid or top["project"]["name"] != project:
            wrong.append((rid, [m["record"]["id"] for m in matches]))
        elif f"kverr id `{rid}`" not in got.content[0].text:
            wrong.append((rid, "not in the Markdown"))
    assert not wrong, wrong
    for got in out["negatives"]:
        assert not got.is_error and got.structured_content["matches"] == []
        assert got.content[0].text.startswith("No known launch-argument error")

    show = out["show"]
    assert show.structured_content["record"]["id"] == "35f71508f59b40d3"
    assert "v0.5.9" in show.structured_content["releases"]
    assert show.content[0].text.startswith("**AssertionError**: `tp_size must be divisible")
    search = out["search"].structured_content
    assert search["flag"] == "--page-size" and search["total"] >= len(search["matches"]) > 0
    assert all("--page-size" in m["record"]["flags"] for m in search["matches"])
    releases = out["releases"].structured_content
    assert releases["product"] == "SGLang" and "v0.5.9" in releases["releases"]
    # no release source on this server: a tool error with kverr's one sentence, and the
    # session goes on
    check = out["check"]
    assert check.is_error and check.content[0].text.startswith("no sglang source to check against")
    assert not out["after"].is_error


def test_every_tool_over_stdio() -> None:
    async def run() -> dict:
        async with session(stdio_params()) as client:
            return await exercise(client)

    assert_answers(anyio.run(run))


def test_every_tool_over_streamable_http(http_url) -> None:
    async def run() -> dict:
        async with session(http_url) as client:
            return await exercise(client)

    assert_answers(anyio.run(run))


# an argparse answer (the record, the values, the answer's fields); advice from the values
@pytest.mark.parametrize("text", [PASTES[7][2], PASTES[5][2]])
def test_explain_carries_the_json_of_explain_json(http_url, text) -> None:

    async def run():
        async with session(http_url) as client:
            return await client.call_tool("explain", {"text": text, "project": "sglang"})

    got = anyio.run(run)
    cli = CliRunner().invoke(app, ["explain", "--json", "--project", "sglang", text])
    assert got.structured_content == json.loads(cli.output)
    top = got.structured_content["matches"][0]
    assert top.get("argparse", {}).get("form") == "invalid-choice" or top["advice"][0].startswith(
        "With --page-size 64, use --mamba-track-interval"
    )


def test_records_are_resources_by_project(http_url) -> None:
    async def run():
        async with session(http_url) as client:
            templates = (await client.list_resource_templates()).resource_templates
            sglang = await client.read_resource("kverr://sglang/35f71508f59b40d3")
            vllm = await client.read_resource("kverr://vllm/b86079f50575a98d")
            with pytest.raises(MCPError, match="no vLLM record has the id"):
                await client.read_resource("kverr://vllm/35f71508f59b40d3")
            return templates, sglang, vllm

    templates, sglang, vllm = anyio.run(run)
    assert {t.uri_template for t in templates} == {"kverr://sglang/{id}", "kverr://vllm/{id}"}
    doc = json.loads(sglang.contents[0].text)
    assert doc["record"]["id"] == "35f71508f59b40d3" and "v0.5.9" in doc["releases"]
    assert sglang.contents[0].mime_type == "application/json"
    assert json.loads(vllm.contents[0].text)["record"]["project"] == "vllm"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ({"text": PASTES[0][2], "release": "v0.0.0-nope"}, "v0.0.0-nope"),
        ({"text": PASTES[0][2], "project": "trt"}, "Input should be 'sglang' or 'vllm'"),
        ({"text": "x" * (1 << 20 | 1)}, "at most 1048576 characters"),
    ],
)
def test_bad_arguments_are_tool_errors(http_url, args, said) -> None:
    async def run():
        async with session(http_url) as client:
            return await client.call_tool("explain", args)

    got = anyio.run(run)
    assert got.is_error and said in got.content[0].text


def test_show_of_an_unknown_id_says_how_to_find_one(http_url) -> None:
    async def run():
        async with session(http_url) as client:
            return await client.call_tool("show", {"id": "0000000000000000"})

    got = anyio.run(run)
    assert got.is_error and "no record has the id" in got.content[0].text


@pytest.mark.parametrize("spec", ["127.0.0.1", "localhost:http", ":8766", "127.0.0.1:99999"])
def test_a_bad_http_address_is_one_line(spec) -> None:
    got = CliRunner().invoke(app, ["mcp", "--http", spec])
    assert got.exit_code == 2
    assert "is not HOST:PORT" in got.output and len(got.output.strip().splitlines()) == 1


@pytest.mark.sandbox  # runs the fixture release's code
def test_check_gives_the_fix_of_this_launch(tmp_path) -> None:
    from test_sources import Git
    from verify_fixture import sglang_files

    g = Git(tmp_path / "sglang")
    g.commit("fixture", sglang_files())
    g.tag("v9.9.9")
    launch = "python -m sglang.launch_server --model-path org/m --tp 16"

    async def run():
        async with session(url) as client:
            return await client.call_tool("check", {"command": launch, "release": "9.9.9"})

    with http_server("--source", str(g.root)) as url:
        started = time.monotonic()
        got = anyio.run(run)
    assert not got.is_error, got.content[0].text
    report = got.structured_content
    (err,) = report["errors"]
    assert err["message"] == "tp_size must be at most 8"
    fixed = "python -m sglang.launch_server --model-path org/m --tp 8"
    assert err["yourFix"]["after"] == fixed and report["fixed"] == fixed
    text = got.content[0].text
    assert "Your fix changes `--tp-size`, verified against `v9.9.9`" in text
    assert f"```bash\n{fixed}\n```" in text
    assert time.monotonic() - started < 120
