"""Knowledge fields derived from guards, flags, comments and messages (plain functions)."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest
from kverr.extractor import extract
from kverr.records import build_records

from kverr.ftypes import FileExtraction, Revision, SourceFile

SEED_PATH = "python/sglang/srt/arg_groups/kv_cache_hook.py"
REV = Revision(
    repo="sgl-project/sglang",
    sha="0123456789abcdef0123456789abcdef01234567",
    date="2026-04-24T10:00:00Z",
)


def _records(text: str, path: str = "python/sglang/srt/server_args.py") -> list[dict]:
    from kverr.extractor import extract_file

    fx = extract_file(SourceFile(path=path, text=text, blob="0" * 40))
    return build_records([fx], REV)


def _by_message(records: list[dict], words: str) -> dict:
    (rec,) = [r for r in records if words in r["errorMessage"]]
    return rec


def _namespace(fragment: str, defaults: dict) -> argparse.Namespace:
    """Parsed args from a `--a --b=1` fragment: set flags True, values as literals."""
    ns = dict(defaults)
    for arg in fragment.split():
        name, _, value = arg.partition("=")
        dest = name.lstrip("-").replace("-", "_")
        if not value:
            ns[dest] = True
            continue
        try:
            ns[dest] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            ns[dest] = value
    return argparse.Namespace(**ns)


LAUNCH = "python -m sglang.launch_server --model-path MODEL_PATH"


def _fix_lines(fix: str) -> tuple[str, str]:
    """The flags of the before/after launch commands (each line is a full command)."""
    head, before, head2, after = fix.split("\n")
    assert (head, head2) == ("# before", "# after")
    assert before.startswith(LAUNCH) and after.startswith(LAUNCH)
    return before[len(LAUNCH) :].strip(), after[len(LAUNCH) :].strip()


def _run_check(code: str, args: argparse.Namespace) -> bool:
    """True when the validationCode rejects `args`."""
    try:
        exec(compile(code, "<validationCode>", "exec"), {"args": args})
    except SystemExit:
        return True
    return False


def test_reference_case_hisparse(seed_module):
    rec = _by_message(
        _records(seed_module, SEED_PATH), "is incompatible with --enable-hisparse: HiSparse"
    )
    trigger = rec["triggerScenarios"]
    assert trigger.startswith(
        "Launching with --prefill-only-disable-kv-cache and --enable-hisparse"
    )
    for earlier in ("--is-embedding", "--chunked-prefill-size=-1", "--disable-radix-cache"):
        assert earlier in trigger
    before, after = _fix_lines(rec["exampleFix"])
    assert (
        "--prefill-only-disable-kv-cache" in before.split()
        and "--enable-hisparse" in before.split()
    )
    assert "--prefill-only-disable-kv-cache" in after.split() and "--enable-hisparse" not in after
    assert "HiSparseDSATokenToKVPool" in rec["documentation"]
    assert {"hisparse", "kv-cache", "server-args"} <= set(rec["tags"])
    assert rec["backgroundTag"] == "unsupported-config-combination"
    assert rec["errorType"] == "validation" and rec["handlingStrategy"] == "validation"
    assert (
        rec["solutions"][0] == "Remove --enable-hisparse when using --prefill-only-disable-kv-cache"
    )
    assert rec["slug"].startswith("prefill-only-disable-kv-cache-is-incompatible-wi-")
    # The pre-flight check reproduces the guards: it rejects "before" and accepts "after".
    defaults = {"kv_cache_dtype": "auto", "chunked_prefill_size": None, "attn_cp_size": 1}
    flags = (
        "prefill_only_disable_kv_cache",
        "is_embedding",
        "disable_radix_cache",
        "enable_prefill_cp",
        "enable_hisparse",
    )
    defaults |= dict.fromkeys(flags, False)
    assert _run_check(rec["validationCode"], _namespace(before, defaults))
    assert not _run_check(rec["validationCode"], _namespace(after, defaults))


FLAGS_ONLY = """
import logging
logger = logging.getLogger(__name__)

class ServerArgs:
    def _handle_x(self):
        if not self.enable_fast:
            return
        # Fast mode pins pages, so the tree must be off.
        if not self.disable_tree:
            raise ValueError("--enable-fast requires --disable-tree. Pass --disable-tree.")
        if self.chunk_size != -1:
            raise ValueError(f"--enable-fast requires --chunk-size=-1, got {self.chunk_size}.")
        if self.world_size > 4:
            raise ValueError(f"--enable-fast supports at most 4 workers, got {self.world_size}.")
        if self.backend in ("a", "b"):
            raise ValueError(f"--enable-fast does not support --backend {self.backend}.")
        if not is_cuda():
            raise RuntimeError("--enable-fast requires a CUDA platform.")
        logger.warning("--enable-fast is experimental; setting --chunk-size=-1.")
"""

# message words -> (background, trigger contains, first solution, fix before, fix after)
CASES = [
    (
        "requires --disable-tree",
        "missing-dependency-flag",
        "without --disable-tree",
        "Pass --disable-tree",
        "--enable-fast",
        "--enable-fast --disable-tree",
    ),
    (
        "--chunk-size=-1, got",
        "missing-dependency-flag",
        "--chunk-size other than -1",
        "Set --chunk-size=-1",
        "--enable-fast --disable-tree",
        "--enable-fast --disable-tree --chunk-size=-1",
    ),
    (
        "at most 4 workers",
        "out-of-range",
        "--world-size > 4",
        "Set --world-size to 4 or less",
        "--enable-fast --disable-tree --chunk-size=-1 --world-size=5",
        "--enable-fast --disable-tree --chunk-size=-1 --world-size=4",
    ),
    (
        "does not support --backend",
        "unsupported-config-combination",
        "--backend set to a or b",
        "Set --backend to a value other than a, b",
        "--enable-fast --disable-tree --chunk-size=-1 --backend=a",
        "--enable-fast --disable-tree --chunk-size=-1",
    ),
]


@pytest.mark.parametrize(("words", "background", "trigger", "solution", "before", "after"), CASES)
def test_flag_guards_become_knowledge(words, background, trigger, solution, before, after):
    rec = _by_message(_records(FLAGS_ONLY), words)
    assert rec["backgroundTag"] == background
    assert trigger in rec["triggerScenarios"]
    assert rec["solutions"][0] == solution
    assert _fix_lines(rec["exampleFix"]) == (before, after)
    defaults = {
        "enable_fast": False,
        "disable_tree": False,
        "chunk_size": 8192,
        "world_size": 1,
        "backend": "auto",
    }
    assert _run_check(rec["validationCode"], _namespace(before, defaults))
    assert not _run_check(rec["validationCode"], _namespace(after, defaults))


def test_fields_stay_empty_when_the_code_says_nothing():
    recs = _records(FLAGS_ONLY)
    cuda = _by_message(recs, "CUDA platform")
    assert cuda["backgroundTag"] == "platform-unsupported"
    assert cuda["handlingStrategy"] == "environment-check"
    assert cuda["validationCode"] is None  # the guard reads the platform, not a flag
    assert cuda["commonSituations"] == ""  # no flag declares help here
    assert cuda["typeGuard"] is None
    warn = _by_message(recs, "experimental")
    assert warn["severity"] == "warning" and warn["handlingStrategy"] == "acknowledge"
    assert warn["backgroundTag"] == "auto-adjusted" and warn["tryCatchPattern"] is None
    tree = _by_message(recs, "requires --disable-tree")
    assert tree["documentation"] == "Fast mode pins pages, so the tree must be off."
    assert "ServerArgs(**kwargs)" in tree["tryCatchPattern"]


def test_source_fields(seed_module):
    recs = _records(seed_module, SEED_PATH)
    lines = seed_module.splitlines()
    for rec in recs:
        assert rec["sourceCodeStart"] == max(1, rec["lineNumber"] - 18)
        assert rec["sourceCodeEnd"] == min(len(lines), rec["lineNumber"] + 18)
        assert rec["sourceCode"] == "\n".join(
            lines[rec["sourceCodeStart"] - 1 : rec["sourceCodeEnd"]]
        )
        assert rec["githubUrl"] == (
            f"https://github.com/sgl-project/sglang/blob/{REV.sha}/{SEED_PATH}"
            f"#L{rec['sourceCodeStart']}-L{rec['sourceCodeEnd']}"
        )
        assert rec["analyzedAt"] == REV.date and rec["analyzedSha"] == REV.sha
        assert rec["httpStatus"] is None and rec["errorCode"] is None
        assert rec["slug"].endswith("-" + rec["id"][:6])
    assert [r["id"] for r in recs] == sorted(r["id"] for r in recs)


def test_directory_build_has_no_url_and_a_fixed_time():
    fx = FileExtraction(
        source=SourceFile(path="a.py", text="x", blob="0"),
        sites=extract('def f(a):\n    raise ValueError("boom")\n', "a.py"),
    )
    (rec,) = build_records([fx], Revision())
    assert rec["githubUrl"] is None and rec["analyzedSha"] is None
    assert rec["analyzedAt"] == "1970-01-01T00:00:00.000Z" and rec["repo"] == "sgl-project/sglang"


def test_only_builds_a_subset_equal_to_the_full_build(seed_module):
    from kverr.extractor import extract_file

    fx = extract_file(SourceFile(path=SEED_PATH, text=seed_module, blob="0" * 40))
    full = build_records([fx], REV)
    some = {r["id"] for r in full[::5]}
    assert build_records([fx], REV, only=some) == [r for r in full if r["id"] in some]


PROBES = """
import logging
import os

logger = logging.getLogger(__name__)


class ServerArgs:
    def _handle_kernels(self):
        if self.kernel_backend == "fastlib":
            if is_fastlib_available():
                logger.info("Loaded the fastlib kernels")
            else:
                raise ValueError("fastlib kernels not available, please check fastlib installation.")

    def _handle_files(self):
        if self.key_file and not os.path.isfile(self.key_file):
            raise ValueError(f"Key file not found: {self.key_file!r}. Please check the --key-file path.")

    def _handle_platform(self):
        if self.enable_turbo and not is_hip():
            raise ValueError("Turbo kernels need ROCm, as they are written in HIP assembly only.")

    def _handle_models(self, model_arch):
        if model_arch in ["AlphaForCausalLM", "BetaForCausalLM", "GammaForCausalLM", "DeltaForCausalLM"]:
            logger.info("Use triton as attention backend for this family")
        elif "Epsilon" in model_arch:
            pass
        elif model_arch in ["ThetaForCausalLM", "IotaForCausalLM", "KappaForCausalLM"]:
            logger.info("Use flashinfer as attention backend for the three of them")
        elif model_arch == "ZetaForCausalLM" and self.device != "cpu":
            pass
        elif model_arch in ["EtaForCausalLM"]:
            if self.attention_backend == "triton":
                raise ValueError(
                    f"{model_arch} does not support the triton backend, as its first layer has no attention, "
                    "please remove --attention-backend triton."
                )
            if self.attention_backend is None:
                self.attention_backend = "fa3"
                logger.info("Use fa3 as attention backend for EtaForCausalLM")
        if self.tp_size % self.nodes != 0 or not (0 < self.ratio <= 1.0):
            raise ValueError("tp_size must be divisible by nodes and ratio in (0, 1].")


def add_cli_args(parser):
    parser.add_argument("--kernel-backend", choices=["native", "fastlib"], default="native", help="Kernel family.")
    parser.add_argument("--key-file", type=str, default=None, help="Path to the TLS key file.")
    parser.add_argument("--attention-backend", type=str, choices=["triton", "fa3", "flashinfer"], help="Choose the kernels for attention layers.")
    parser.add_argument("--device", type=str, default="cuda", help="The device to use.")
    parser.add_argument("--tp-size", type=int, default=1, help="The tensor parallelism size.")
    parser.add_argument("--nodes", type=int, default=1, help="The number of nodes.")
    parser.add_argument("--ratio", type=float, default=0.5, help="A ratio.")
    parser.add_argument("--enable-turbo", action="store_true", help="Use the turbo kernels.")
"""


def _all_fixture_records(seed_module: str) -> list[dict]:
    golden = Path(__file__).resolve().parent / "golden" / "records"
    out = _records(FLAGS_ONLY) + _records(PROBES) + _records(seed_module, SEED_PATH)
    for case in sorted(golden.glob("*.py")):
        out += _records(
            case.read_text(encoding="utf-8"), f"python/sglang/srt/arg_groups/{case.name}"
        )
    return out


def test_every_validation_code_compiles_and_no_field_is_a_placeholder(seed_module):
    recs = _all_fixture_records(seed_module)
    checks = [r["validationCode"] for r in recs if r["validationCode"]]
    assert len(checks) >= 20
    for code in checks:
        compile(code, "<validationCode>", "exec")
    for rec in recs:
        assert "<value>" not in rec["exampleFix"] and "(no extra flags)" not in rec["exampleFix"]
        assert "..." not in rec["triggerScenarios"]
        assert all("{" not in s for s in rec["solutions"])
