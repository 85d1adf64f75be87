"""Matcher table tests against records built by the real pipeline (extractor -> records ->
dataset -> catalog) from our own fixture module and from the seed module."""

from __future__ import annotations

from pathlib import Path

import pytest
from kverr.catalog import open_catalog

# Our own module in SGLang's shape (not SGLang code): raises, a warning, a bare assert.
FIXTURE_MODULE = """\
import logging

logger = logging.getLogger(__name__)


class ServerArgs:
    def _handle_ssl(self):
        if self.ssl_keyfile and not self.ssl_certfile:
            raise ValueError("--ssl-keyfile requires --ssl-certfile.")
        if self.ssl_certfile and not self.ssl_keyfile:
            raise ValueError("--ssl-certfile requires --ssl-keyfile.")

    def _handle_parallel(self):
        if self.tp_size % self.pp_size != 0:
            raise ValueError(
                f"tp_size={self.tp_size} must be divisible by pp_size={self.pp_size}"
            )
        assert self.page_size % 16 == 0

    def _handle_backend(self):
        if self.attention_backend not in ("fa3", "triton"):
            raise ValueError(
                f"Unsupported attention backend {self.attention_backend!r} for model "
                f"{self.model_path}; choose another backend."
            )
        if self.disable_radix_cache:
            logger.warning(
                "Overlap schedule is disabled because --disable-radix-cache is set; "
                "throughput may drop."
            )
        if not 0 < self.mem_fraction_static <= 1:
            raise ValueError(
                f"--mem-fraction-static must be in (0, 1], got {self.mem_fraction_static:.2f}"
            )
"""


def _build(root: Path, rel: str, text: str) -> Path:
    from kverr import pipeline

    target = root / "src" / rel
    target.parent.mkdir(parents=True)
    target.write_text(text, encoding="utf-8")
    pipeline.build(
        pipeline.BuildSpec(
            out=root / "out", source=root / "src", catalog=root / "c.duckdb", command=["test"]
        )
    )
    return root / "c.duckdb"


@pytest.fixture(scope="module")
def fixture_cat(tmp_path_factory):
    path = _build(tmp_path_factory.mktemp("fx"), "python/sglang/srt/server_args.py", FIXTURE_MODULE)
    with open_catalog(path) as c:
        yield c


@pytest.fixture
def seed_cat(seed_module, tmp_path):
    path = _build(tmp_path, "python/sglang/srt/arg_groups/kv_cache_hook.py", seed_module)
    with open_catalog(path) as c:
        yield c


def by_message(cat, start: str) -> str:
    """Id of the one record whose message starts with `start` ("" means the bare assert)."""
    ids = [
        r["id"]
        for r in cat.records()
        if (r["errorMessage"].startswith(start) if start else r["errorMessage"] == "")
    ]
    assert len(ids) == 1, (start, ids)
    return ids[0]


BARE_ASSERT_TB = """\
Traceback (most recent call last):
  File "/opt/venv/lib/python3.12/site-packages/sglang/launch_server.py", line 11, in <module>
    server_args = prepare_server_args(sys.argv[1:])
  File "/opt/venv/lib/python3.12/site-packages/sglang/srt/server_args.py", line 18, in _handle_parallel
    assert self.page_size % 16 == 0
           ^^^^^^^^^^^^^^^^^^^^^^^^
AssertionError"""

FIXTURE_CASES = [
    ("--ssl-keyfile requires --ssl-certfile.", "--ssl-keyfile requires", "pattern", {}),
    ("[2026-04-07 10:05:08 TP0] ValueError: --ssl-certfile requires --ssl-keyfile.", "--ssl-certfile requires", "pattern", {}),
    ("tp_size=8 must be divisible by pp_size=3", "tp_size=", "pattern", {"self.tp_size": "8", "self.pp_size": "3"}),
    ("ValueError: Unsupported attention backend 'flashmla' for model /data/models/Qwen3-8B; choose another backend.",
     "Unsupported attention", "pattern", {"self.attention_backend": "'flashmla'", "self.model_path": "/data/models/Qwen3-8B"}),
    ("WARNING:sglang.srt.server_args:Overlap schedule is disabled because --disable-radix-cache is set; throughput may drop.",
     "Overlap schedule", "pattern", {}),
    ("\x1b[33m--mem-fraction-static must be in (0, 1], got 1.20\x1b[0m", "--mem-fraction-static", "pattern", {"self.mem_fraction_static": "1.20"}),
    ("Overlap schedule is disabled because --disable-radix-cache is set; throu...", "Overlap schedule", "partial", {}),
    (BARE_ASSERT_TB, "", "traceback", {}),
    ("--ssl-keyfile requires --ssl-certfile and a CA bundle.", None, None, None),
    ("--mem-fraction-static is deprecated; use --mem-fraction.", None, None, None),
    (BARE_ASSERT_TB.replace("_handle_parallel", "_handle_backend").replace("line 18", "line 30").replace("self.page_size % 16", "self.page_size % 32"), None, None, None),
]  # fmt: skip


@pytest.mark.parametrize("text, start, how, values", FIXTURE_CASES)
def test_fixture_module(fixture_cat, text, start, how, values):
    matches = fixture_cat.explain(text)
    if start is None:
        assert [(m.record["errorMessage"], m.how) for m in matches] == []
        return
    assert (matches[0].record["id"], matches[0].how) == (by_message(fixture_cat, start), how)
    assert matches[0].values == values


HISPARSE = "--prefill-only-disable-kv-cache is incompatible with --enable-hisparse: HiSparse uses a dedicated pool family that is not the no-op MHA pool."
SEED_CASES = [
    ("[2026-04-07 10:05:08 TP0] ValueError: " + HISPARSE, "--prefill-only-disable-kv-cache is incompatible with --enable-hisparse", "pattern", {}),
    ("[rank3]: ValueError: " + HISPARSE[:100] + "…", "--prefill-only-disable-kv-cache is incompatible with --enable-hisparse", "partial", {}),
    ("--prefill-only-disable-kv-cache is incompatible with --enable-prefill-cp: the prefill-CP path stages K/V through the paged cache, which the no-op pool does not support.",
     "--prefill-only-disable-kv-cache is incompatible with --enable-prefill-cp", "pattern", {}),
    ("AssertionError: KV4 FA4 MHA expects decode_attention_backend to be one of ['triton', 'torch_native', 'flex_attention'], but got 'fa3'",
     "KV4 FA4 MHA expects", "pattern", {"decode_backend": "'fa3'"}),
    ("--enable-page-major-kv-layout requires the Triton Mamba kernels for the strided conv/SSM state; got 'cuda'. Pass --mamba-backend triton.",
     "--enable-page-major-kv-layout requires the Triton", "pattern", {"cfg.mamba_backend": "'cuda'"}),
    ("[2026-04-07 10:05:08 TP0] --enable-unified-memory: disabling prefill cuda-graph capture (not wired for the unified pool's loc rebind); decode capture is unaffected.",
     "--enable-unified-memory: disabling prefill", "pattern", {}),
    ("ValueError: --swa-full-tokens-ratio should be in range (0, 1.0].", "--swa-full-tokens-ratio", "pattern", {}),
    # near misses: shared opening words, cut before the difference, other flags
    ("--prefill-only-disable-kv-cache is incompatible with --en...", None, None, None),
    ("--prefill-only-disable-kv-cache is incompatible with --enable-lora: adapters need real KV slots.", None, None, None),
    ("--swa-full-tokens-ratio is deprecated; use --swa-ratio instead.", None, None, None),
]  # fmt: skip


@pytest.mark.parametrize("text, start, how, values", SEED_CASES)
def test_seed_module(seed_cat, text, start, how, values):
    matches = seed_cat.explain(text)
    if start is None:
        assert [(m.record["errorMessage"][:60], m.how) for m in matches] == []
        return
    assert (matches[0].record["id"], matches[0].how) == (by_message(seed_cat, start), how)
    assert matches[0].values == values
