"""explain (terminal and --json), the site and the API say whether a record's fix was verified
against its revision's own check, in the same sentence (present/verdict.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import synth
from kverr.catalog import open_catalog
from kverr.feeds.site import export_site, page_of
from kverr.present.verdict import fix_status, revision_names
from test_catalog import build_catalog
from typer.testing import CliRunner

from kverr.answers import Revision
from kverr.cli import app

VERIFIED = {"status": "verified", "platform": "cuda-sm90", "revision": "3d3a32c0b9f5", "reason": ""}
FIX = "# before\npython -m sglang.launch_server --model-path MODEL_PATH --page-size 3\n# after\npython -m sglang.launch_server --model-path MODEL_PATH --page-size 64"


def unverified(reason: str, status: str = "unverified") -> dict:
    return {"status": status, "platform": "cuda-sm90", "revision": "3d3a32c0b9f5", "reason": reason}


# (verification, the record's trigger, the card's sentence): one row per kind of reason the
# verify step writes (the shipped datasets hold each of them), in a user's words; --verbose
# and --json keep the reason whole
CASES = [
    (VERIFIED, "", "Fix verified against commit 3d3a32c0b9f5's own checks."),
    ({**VERIFIED, "model": "exaone4"}, "", "Fix verified against commit 3d3a32c0b9f5's own checks."),
    ({**VERIFIED, "revision": "seed"}, "", "Fix verified against seed's own checks."),
    (unverified("only giving the feature up would silence this notice, which is no fix"), "",
     "Fix not verified: only turning the feature off silences this notice."),
    (unverified("no launch built from the check's conditions reached it: the last one passed"),
     "Launching a Llama4 model with --device other than cpu and without --attention-backend on an SM100 (Blackwell) GPU.",
     "Fix not verified: the check fires on an SM100 (Blackwell) GPU, and kverr's test launches did not reach it."),
    (unverified("no launch built from the check's conditions reached it: the last one passed"),
     "Launching with --kv-cache-dtype=fp8_e4m3 not on an Ascend NPU, when `is_deepseek_nsa(hf_config)` is true.",
     "Fix not verified: kverr's test launches did not reach this check."),
    (unverified("no launch built from the check's conditions reached it: the last one raised AssertionError at server_args.py:1894 (One of the attention backends in ['fa3', 'triton', 'trtllm_mha'] is required for Exaone4ForCausalLM…)"),
     "Launching with --hicache-mem-layout=page_first and --hicache-io-backend=direct.",
     "Fix not verified: kverr's test launches did not reach this check."),
    (unverified("the check could not be decided: it reads torch.cuda.get_device_capability()"), "Launching on ROCm.",
     "Fix not verified: the check fires on ROCm, and kverr's test launches did not reach it."),
    (unverified("validate_prefill_only_disable_kv_cache_args is not reached from ServerArgs.__post_init__ and ServerArgs.check_server_args: nothing calls it; its module imports sglang.srt.arg_groups.overrides, sglang.srt.model_executor.cuda_graph_config, sglang.srt.runtime_context, which this revision lacks", "not-applicable"), "",
     "Fix not verified: nothing that starts a server runs this check."),
    (unverified("no command line reaches it: every value --enable-hierarchical-cache can hold (on or off) leaves `self.enable_hierarchical_cache and is_npu()` false", "not-applicable"), "",
     "Fix not verified: no command line can reach this check."),
    (unverified("none of 2 candidate fixes passed; the first, --attention-backend triton, raised RuntimeError at server_args.py:3582 (Unknown diffusion LLM: LlamaForCausalLM)"), "",
     "Fix not verified: none of the fixes tried passed the release's checks."),
    (unverified("the before line gives this error, but the after line was rejected by the argument parser (argument --mm-per-request-timeout: invalid int value: '10.0')"), "",
     "Fix not verified: the parser refuses the fixed launch."),
    (unverified("the parser rejected the before line with another message (launch_server.py: error: argument --hooks: Invalid JSON list: NOT_A_JSON_LIST_TYPE. Please provide a valid JSON list.)"), "",
     "Fix not verified: the example launch gives another error."),
    (unverified("the before line raised ValueError at server_args_config_parser.py:96 (No config file specified after --config flag!), not argparse's error"), "",
     "Fix not verified: the example launch does not give this error."),
    (unverified("nothing to run: the record has no example fix (explain answers from the pasted option, with the closest names)"), "",
     "Fix not verified: there is no example launch to run."),
    (unverified("kverr has no verify spec for vLLM yet (profile vllm has no [verify] table)"), "",
     "Fix not verified: kverr cannot run vLLM's checks yet."),
    (unverified("an argparse error, read from the flag's declarations; the build did not run the revision's parser on its fix (kverr build --verify)."), "",
     "Fix not verified: this catalog was built without running the checks."),
    (unverified("the revision's code does not load in the sandbox: the sandbox process failed: did not load within 30 s"), "",
     "Fix not verified: the release's code could not be loaded to run its checks."),
    (unverified("a reason no release of kverr wrote"), "", "Fix not verified: kverr explain --verbose says why."),
    (None, "", "Fix not verified: this catalog was built without running the checks."),
]  # fmt: skip


@pytest.mark.parametrize(("verification", "trigger", "text"), CASES)
def test_one_sentence_in_a_users_words(verification, trigger, text) -> None:
    rec = {"verification": verification, "triggerScenarios": trigger} if verification else {}
    assert fix_status(rec) == text
    # no harness words: no function, module or platform profile names, no placeholder values
    for word in ("ServerArgs", "sglang.srt", "cuda-sm90", "__post_init__", "NOT_A_", "harness"):
        assert word not in text


@pytest.mark.parametrize(
    ("verification", "text"),
    [
        (VERIFIED, "Fix verified against commit 3d3a32c0b9f5's own check on cuda-sm90."),
        (
            {**VERIFIED, "model": "exaone4"},
            "Fix verified against commit 3d3a32c0b9f5's own check on cuda-sm90 with model profile exaone4.",
        ),
        (
            unverified("PortArgs.init_new is not reached from ServerArgs.__post_init__", "not-applicable"),
            "Fix not verified: PortArgs.init_new is not reached from ServerArgs.__post_init__.",
        ),
        (None, "Fix not verified: this dataset was built without verification."),
    ],
)  # fmt: skip
def test_verbose_says_it_as_the_verify_step_did(verification, text) -> None:
    rec = {"verification": verification} if verification else {}
    assert fix_status(rec, verbose=True) == text


def test_a_revision_is_named_as_users_know_it() -> None:
    rows = [
        Revision(sha="bbe9c7eeb520b0a67e92d133dfc137a3688dc7f2", tags=("v0.5.9",)),
        Revision(sha="3d3a32c0b9f50962ccdddadda02c52a59e45bbc8"),
        Revision(tags=("seed",)),
    ]
    names = revision_names(rows)
    said = {
        rev: fix_status({"verification": {**VERIFIED, "revision": rev}}, names=names)
        for rev in ("bbe9c7eeb520", "3d3a32c0b9f5", "seed")
    }
    assert said == {
        "bbe9c7eeb520": "Fix verified against v0.5.9's own checks.",
        "3d3a32c0b9f5": "Fix verified against commit 3d3a32c0b9f5's own checks.",
        "seed": "Fix verified against the seed snapshot's own checks.",
    }


@pytest.mark.parametrize(
    ("before", "after", "ran"),
    [
        ("--tp-size NOT_A_INT", "--tp-size 1",
         "its parser rejects `--tp-size NOT_A_INT`; `--tp-size 1` passes it and the launch's validation"),
        ("--tp-size", "", "its parser rejects `--tp-size`; the launch without it passes its validation"),
    ],
)  # fmt: skip
def test_an_argparse_fix_says_which_lines_ran_with_verbose(before, after, ran) -> None:
    # explain shows the option as pasted, answered for the user's release: the verbose
    # sentence names the lines the revision's own parser ran
    launch = "python -m sglang.launch_server --model-path MODEL_PATH"
    fix = f"# before\n{launch} {before}\n# after\n{launch} {after}".rstrip()
    rec = {"kind": "argparse", "verification": VERIFIED, "exampleFix": fix}
    assert fix_status(rec) == "Fix verified against commit 3d3a32c0b9f5's own checks."
    assert fix_status(rec, verbose=True) == (
        f"Fix verified against commit 3d3a32c0b9f5's own check on cuda-sm90 ({ran})."
    )


@pytest.fixture(scope="module")
def verified_catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rec = synth.make_record(
        "9a9e000000000001",
        "page_size must divide 64, got {self.page_size}",
        r"page_size must divide 64, got (?P<v0>-?\d+)",
        placeholders=["self.page_size"],
        flags=["--page-size"],
        exampleFix=FIX,
        solutions=["Launch with --page-size 64"],
        verification=VERIFIED,
    )
    return build_catalog(tmp_path_factory.mktemp("verified"), [rec])


def test_explain_terminal_and_json_say_it_is_verified(verified_catalog, monkeypatch) -> None:
    monkeypatch.setenv("KVERR_CATALOG", str(verified_catalog))
    monkeypatch.setenv("COLUMNS", "120")
    line = "ValueError: page_size must divide 64, got 3"
    text = CliRunner().invoke(app, ["explain", line])
    assert text.exit_code == 0, text.output
    assert "Fix verified against commit 3d3a32c0b9f5's own checks." in text.output
    verbose = CliRunner().invoke(app, ["explain", line, "--verbose"])
    assert "Fix verified against commit 3d3a32c0b9f5's own check on cuda-sm90." in verbose.output
    js = CliRunner().invoke(app, ["explain", line, "--json"])
    (m,) = json.loads(js.stdout)["matches"]
    assert m["fixStatus"] == "Fix verified against commit 3d3a32c0b9f5's own checks."
    assert m["record"]["verification"] == VERIFIED  # the data whole


def test_explain_says_why_not_in_a_users_words_and_verbose_says_it_whole(
    tmp_path_factory, monkeypatch
) -> None:
    reason = (
        "validate_prefill_only_disable_kv_cache_args is not reached from ServerArgs.__post_init__"
        " and ServerArgs.check_server_args: nothing calls it; its module imports"
        " sglang.srt.arg_groups.overrides, which this revision lacks"
    )
    rec = synth.make_record(
        "9a9e000000000002",
        "--prefill-only-disable-kv-cache currently requires --is-embedding.",
        r"--prefill-only-disable-kv-cache currently requires --is-embedding\.",
        exampleFix=FIX,
        solutions=["Launch with --is-embedding"],
        verification=unverified(reason, "not-applicable"),
    )
    path = build_catalog(tmp_path_factory.mktemp("unverified"), [rec])
    monkeypatch.setenv("KVERR_CATALOG", str(path))
    monkeypatch.setenv("COLUMNS", "120")
    line = "ValueError: --prefill-only-disable-kv-cache currently requires --is-embedding."
    text = CliRunner().invoke(app, ["explain", line]).output
    assert "  Fix not verified: nothing that starts a server runs this check." in text
    assert "ServerArgs" not in text and "sglang.srt" not in text
    verbose = " ".join(CliRunner().invoke(app, ["explain", line, "--verbose"]).output.split())
    assert f"Fix not verified: {reason}." in verbose
    (m,) = json.loads(CliRunner().invoke(app, ["explain", line, "--json"]).stdout)["matches"]
    assert m["record"]["verification"]["reason"] == reason


def test_the_site_page_says_it_under_the_fix(verified_catalog, tmp_path: Path) -> None:
    with open_catalog(verified_catalog) as cat:
        export_site(cat, tmp_path / "site", meta={"siteTitle": "t", "repository": "o/r"})
        rec = cat.get("9a9e000000000001")
    page = (tmp_path / "site" / page_of(rec)).read_text()
    assert (
        '<p class="fix-status verified">Fix verified against commit 3d3a32c0b9f5&#x27;s own'
        " checks.</p>" in page
    )


@pytest.mark.parametrize(
    ("held", "shown"),
    [
        (2048, "2048"),
        ([1, 2, 4], "[1, 2, 4]"),
        # a long list by its ends and its length: a reason stays one readable sentence
        ([1, 2, 4, *range(8, 257, 8)], "[1, 2, 4, …, 256] (35 values)"),
    ],
)
def test_a_value_the_code_filled_in_is_shown_briefly(held, shown) -> None:
    from kverr.verify.search.core import _brief

    assert _brief(held) == shown
