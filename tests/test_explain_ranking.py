"""Which card comes first, and which cards come at all, for tracebacks of the shipped SGLang
catalog: the record at the file and line the traceback names leads; a record only a snapshot
of files from disk holds (the seed module laid over a release) never leads a real release's;
a second card comes from another line of the input, never from the same exception read twice.

The pastes are written here as a user would paste them: a launch's traceback through
`python/sglang/srt/server_args.py`, with lines the shipped dataset holds."""

from __future__ import annotations

import pytest
from kverr.catalog import open_catalog, store

SERVER_ARGS = "/usr/local/lib/python3.12/dist-packages/sglang/srt/server_args.py"
SEED_FILE = "/usr/local/lib/python3.12/dist-packages/sglang/srt/arg_groups/kv_cache_hook.py"

# records of the shipped catalog
HICACHE, HICACHE_SEED = "2a39664301a5f208", "83bf64c1692d7294"  # server_args.py:3431, seed:168
SWA, SWA_SEED = "4b3b1c52b1ac9a1b", "c3f15db00822059f"  # server_args.py:3447, seed:193
MAMBA_A, MAMBA_B = "825541e3567cb9ea", "e3705c9486533e49"  # server_args.py:2582 and :2586
MODALITY = "34303df021e62695"  # the one `raise ValueError(` of _handle_other_validations
# one text, its value named `{decode_backend!r}` in the seed module, another way in the release
KV4, KV4_SEED = "5e7d6b366f4b4adf", "2a18a6325381da9d"  # server_args.py:2516, seed:82

HICACHE_MSG = (
    "ValueError: The arguments enable-hierarchical-cache and disable-radix-cache are mutually"
    " exclusive and cannot be used at the same time. Please use only one of them."
)
SWA_MSG = "ValueError: --swa-full-tokens-ratio should be in range (0, 1.0]."
MAMBA_MSG = (
    "ValueError: FlashInfer mamba module not available, please check flashinfer installation."
)
KV4_MSG = (
    "AssertionError: KV4 FA4 MHA expects decode_attention_backend to be one of ['triton',"
    " 'torch_native', 'flex_attention'], but got 'fa3'"
)


def traceback(file: str, line: int, function: str, code: str, message: str) -> str:
    """A launch's traceback, as `python -m sglang.launch_server` prints it."""
    return "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "<frozen runpy>", line 198, in _run_module_as_main',
            '  File "/usr/local/lib/python3.12/dist-packages/sglang/launch_server.py", line 24, in <module>',
            "    server_args = prepare_server_args(sys.argv[1:])",
            f'  File "{SERVER_ARGS}", line 3102, in __post_init__',
            "    self._handle_cache_compatibility()",
            f'  File "{file}", line {line}, in {function}',
            f"    {code}",
            message,
        ]
    )


# (case, paste, the records in answer order (the first leads), records that must not answer)
CASES = [
    ("the frame names the release's site; the seed module has the same message",
     traceback(SERVER_ARGS, 3431, "_handle_cache_compatibility", "raise ValueError(", HICACHE_MSG),
     [HICACHE, HICACHE_SEED], []),
    ("the frame's function holds another check: no card of its own",
     traceback(SERVER_ARGS, 3431, "_handle_other_validations", "raise ValueError(", HICACHE_MSG),
     [HICACHE, HICACHE_SEED], [MODALITY]),
    ("the message alone: a real release before the seed snapshot",
     HICACHE_MSG, [HICACHE, HICACHE_SEED], []),
    ("the message after a launch log line: a real release before the seed snapshot",
     "[2026-04-07 10:05:08] Load weight begin.\n" + HICACHE_MSG, [HICACHE, HICACHE_SEED], []),
    ("the frame names the seed module's own file and line",
     traceback(SEED_FILE, 168, "handle_cache_compatibility", "raise ValueError(", HICACHE_MSG),
     [HICACHE_SEED, HICACHE], []),
    ("the frame's statement spells the message",
     traceback(SERVER_ARGS, 3447, "_handle_cache_compatibility",
               'raise ValueError("--swa-full-tokens-ratio should be in range (0, 1.0].")', SWA_MSG),
     [SWA, SWA_SEED], []),
    ("two sites of one function: the later one named",
     traceback(SERVER_ARGS, 2586, "_handle_mamba_backend", "raise ValueError(", MAMBA_MSG),
     [MAMBA_B, MAMBA_A], []),
    ("two sites of one function: the earlier one named",
     traceback(SERVER_ARGS, 2582, "_handle_mamba_backend", "raise ValueError(", MAMBA_MSG),
     [MAMBA_A, MAMBA_B], []),
    ("an older release's line: the nearest site first",
     traceback(SERVER_ARGS, 2585, "_handle_mamba_backend", "raise ValueError(", MAMBA_MSG),
     [MAMBA_B, MAMBA_A], []),
    ("one text, two templates: the release's first", KV4_MSG, [KV4, KV4_SEED], []),
    ("two errors on two lines: a card each",
     traceback(SERVER_ARGS, 3431, "_handle_other_validations", "raise ValueError(", HICACHE_MSG)
     + "\n\nand after a restart:\n" + SWA_MSG,
     [HICACHE, HICACHE_SEED, SWA, SWA_SEED], [MODALITY]),
]  # fmt: skip


@pytest.fixture(scope="module")
def shipped():
    if not store.packaged_datasets():
        pytest.skip("no packaged dataset")
    with open_catalog() as c:
        yield c


@pytest.mark.parametrize("case", [c[0] for c in CASES])
def test_answer_order(shipped, case):
    _, paste, order, absent = next(c for c in CASES if c[0] == case)
    found = [m.record["id"] for m in shipped.explain(paste)]
    assert found == order, found
    assert not set(absent) & set(found)


@pytest.mark.parametrize(
    ("paste", "head", "source", "beneath"),
    [
        (traceback(SERVER_ARGS, 3431, "_handle_other_validations", "raise ValueError(", HICACHE_MSG),
         "ERROR ValueError · pattern match 1.00 · input line 9", "server_args.py:3431",
         f"kv_cache_hook.py:168 ({HICACHE_SEED}; releases seed · 1 release)"),
        (KV4_MSG, "ERROR AssertionError · pattern match 1.00 · input line 1", "server_args.py:2516",
         f"kv_cache_hook.py:82 ({KV4_SEED}; releases seed · 1 release)"),
    ],
)  # fmt: skip
def test_one_card_leads_with_the_release_and_names_the_seed_beneath(
    shipped, monkeypatch, paste, head, source, beneath
):
    from typer.testing import CliRunner

    from kverr.cli import app

    monkeypatch.delenv("KVERR_CATALOG", raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    res = CliRunner().invoke(app, ["explain", paste, "--plain", "--no-pager"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0] == head
    assert f"Source         python/sglang/srt/{source}" in lines
    assert [line for line in lines if line.startswith(("ERROR", "WARNING"))] == [head]
    assert lines[-1] == (f"  same message also raised at python/sglang/srt/arg_groups/{beneath}")
