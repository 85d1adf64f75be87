"""Conditions -> words (records/knowledge/words.py): triggerScenarios, commonSituations."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_records_knowledge import FLAGS_ONLY, PROBES, _by_message, _records


def test_the_rule_of_the_check_is_the_prevention_tip_and_no_launch_is_no_situation():
    src = (
        FLAGS_ONLY
        + """
def add_cli_args(parser):
    parser.add_argument("--backend", choices=["a", "b", "c"], default="c", help="Kernel family. More text.")
    parser.add_argument("--enable-fast", action="store_true", help="Pin pages for speed.")
"""
    )
    rec = _by_message(_records(src), "does not support --backend")
    # no docs, no launch, no model or platform in the guards: no evidence, no situation
    assert rec["commonSituations"] == ""
    assert "declared choices: a, b, c" in rec["solutions"][0]
    assert rec["preventionTips"] == ["Keep --backend other than a or b when --enable-fast is set"]


def test_unhashable_literals_in_guards():
    src = 'class ServerArgs:\n    def f(self):\n        if self.dims == [1, 2] or self.opts == {"a": [1]}:\n            raise ValueError("--dims [1, 2] is not allowed.")\n        if self.dims == [3]:\n            raise ValueError("--dims [3] is not allowed.")\n'
    recs = _records(src)
    assert len(recs) == 2
    assert _by_message(recs, "[3]")["triggerScenarios"] == "Launching with --dims=[3]."


# message words -> field -> expected (exact) or a check
PROBE_CASES = [
    ("not available", "backgroundTag", "missing-package"),
    (
        "not available",
        "solutions",
        [
            "Check fastlib installation",
            "Install fastlib",
            "Use a --kernel-backend value other than fastlib (declared choices: native, fastlib)",
        ],
    ),
    (
        "not available",
        "triggerScenarios",
        "Launching with --kernel-backend=fastlib, when fastlib is not installed.",
    ),
    ("Loaded the", "backgroundTag", "advisory"),
    ("Key file not found", "backgroundTag", "missing-file"),
    (
        "Key file not found",
        "solutions",
        ["Check the --key-file path", "Point --key-file at an existing file"],
    ),
    ("need ROCm", "backgroundTag", "platform-unsupported"),
    ("need ROCm", "triggerScenarios", "Launching with --enable-turbo not on ROCm."),
    (
        "need ROCm",
        "documentation",
        "--enable-turbo: use the turbo kernels. They are written in HIP assembly only.",
    ),
    ("need ROCm", "solutions", ["Remove --enable-turbo", "Needs ROCm"]),
    ("for this family", "backgroundTag", "auto-adjusted"),
    (
        "for this family",
        "triggerScenarios",
        "Launching a model such as AlphaForCausalLM, BetaForCausalLM or 2 other architectures.",
    ),
    # three are named all ("or 1 other architectures" says less, in worse words)
    (
        "for the three of them",
        "triggerScenarios",
        "Launching a ThetaForCausalLM, IotaForCausalLM or KappaForCausalLM model.",
    ),
    ("does not support the triton", "backgroundTag", "model-unsupported"),
    (
        "does not support the triton",
        "triggerScenarios",
        "Launching an EtaForCausalLM model with --attention-backend=triton.",
    ),
    (
        "does not support the triton",
        "solutions",
        [
            "Remove --attention-backend triton",
            "Use a --attention-backend value other than triton (declared choices: triton, fa3, flashinfer)",
        ],
    ),
    (
        "does not support the triton",
        "documentation",
        "--attention-backend: choose the kernels for attention layers. Its first layer has no"
        " attention.",
    ),
    ("fa3 as attention backend", "backgroundTag", "auto-adjusted"),
    (
        "fa3 as attention backend",
        "solutions",
        ["Pass --attention-backend yourself to choose its value (SGLang uses fa3 otherwise)"],
    ),
    (
        "fa3 as attention backend",
        "documentation",
        "--attention-backend: choose the kernels for attention layers. SGLang sets"
        " --attention-backend to fa3 for this launch.",
    ),
    # --attention-backend's None default is what the code picks from, not a known value,
    # and without docs there is no launch to count: the trigger says it all
    ("fa3 as attention backend", "commonSituations", ""),
]


@pytest.mark.parametrize(("words", "field", "expected"), PROBE_CASES)
def test_probes_and_model_chains_read_as_words(words, field, expected):
    rec = _by_message(_records(PROBES), words)
    assert rec[field] == expected


def test_elif_chain_keeps_only_the_selecting_branch():
    rec = _by_message(_records(PROBES), "does not support the triton")
    # The failed sibling tests (Epsilon, Zeta with --device) do not appear, nor do cut-off lists.
    for gone in ("Epsilon", "Zeta", "--device", "...", "is false", "is true"):
        assert gone not in rec["triggerScenarios"]


WORDS = Path(__file__).resolve().parent / "golden" / "records" / "words.py"


def _words(message: str) -> dict:
    return _by_message(_records(WORDS.read_text(encoding="utf-8")), message)


# The "words a user understands" rules on the words.py fixture (its golden shows every field).
# message words -> field -> the exact text, or the words it must contain
LOCALS_CASES = [
    # a local: `prefill = self.prefill_kernel if ... else self.kernel`
    (
        "tiled prefill kernel",
        "triggerScenarios",
        "Launching with --prefill-kernel=tiled (falling back to --kernel) not on an SM100 "
        "(Blackwell) GPU.",
    ),
    # a local unpacked from a helper over the launch arguments, named by its words
    ("FA prefill kernel", "solutions", "Set --prefill-kernel to one of fa3, fa4"),
    # the words say the flag, never the message's placeholder
    (
        "FA prefill kernel",
        "triggerScenarios",
        "--prefill-kernel not fa3 or fa4 (falling back to --kernel)",
    ),
    # a parameter: what the callers pass
    (
        "No devices given",
        "triggerScenarios",
        "Launching without --rdma-device (or --backup-device, whichever the caller passes).",
    ),
    # an argparse Action: the flag declared with it
    ("looks like a JSON object", "triggerScenarios", "Launching with --adapter-paths, when"),
    # constants by value: TILE is 64, PRIORITY_SCHEDULES is ['fifo', 'lof']
    ("needs --page-width to divide", "triggerScenarios", "--page-width is not a divisor of 64"),
    ("priority scheduling", "triggerScenarios", "--schedule not fifo or lof."),
    # a module's attribute is no option: `torch.dtype` is not --dtype
    (
        "need a resolved dtype",
        "triggerScenarios",
        "Launching with --enable-wide, when `isinstance(--dtype, torch.dtype)` is false.",
    ),
]


@pytest.mark.parametrize(("message", "field", "expected"), LOCALS_CASES)
def test_names_read_as_the_flags_they_hold(message, field, expected):
    got = _words(message)[field]
    text = got if isinstance(got, str) else "\n".join(got)
    assert expected in text


def test_a_local_with_a_known_value_gives_a_runnable_check():
    rec = _words("needs --page-width to divide")
    assert rec["flags"] == ["--page-width", "--prefill-kernel", "--kernel"]
    assert rec["validationCode"].startswith(
        "if (args.prefill_kernel if args.prefill_kernel is not None else args.kernel) == 'paged'"
        " and 64 % args.page_width != 0:"
    )


def test_a_guessed_flag_never_makes_a_check():
    """The unpacked local's flags come from its name: words may use them, code may not."""
    assert _words("FA prefill kernel")["validationCode"] is None


def test_defaults_decide_what_the_launch_needs_to_say():
    # --labels-header defaults to "x-labels": only an explicitly empty value gets here
    labels = _words("Please set --labels-header")
    assert labels["triggerScenarios"] == (
        "Launching with --labels-header set to an empty value and --allowed-labels."
    )
    # the earlier `--pipeline-size != 1` check passes with the default: no word about it
    assert "--pipeline-size" not in _words("priority scheduling")["triggerScenarios"]


def test_a_check_reads_what_the_function_assigned_before_it():
    # `self.draft_width = self.lookahead_width` just before: the check is about --lookahead-width
    assert _words("A draft wider than 1")["triggerScenarios"] == (
        "Launching with --speculative-mode=lookahead, --lookahead-width > 1 and --page-width > 1 "
        "(the default)."
    )
    # `self.window = 8`, then maybe 16: no value is certain, the flag stays
    assert _words("The window must fit")["triggerScenarios"] == (
        "Launching when --window is above --page-width."
    )


def test_a_comparison_by_identity_with_a_literal_is_left_as_written_and_warns_nothing():
    # Folding `"fast" is "fast"` (a local's known value substituted) compiled an `is` with a
    # literal, and Python printed a SyntaxWarning into every build's output.
    import ast
    import warnings

    from kverr.records.names import _Fold

    src = (
        "class ServerArgs:\n"
        "    def _handle_mode(self):\n"
        '        mode = "fast"\n'
        '        if mode is "fast" and self.tp_size > 1:\n'
        '            raise ValueError("fast mode needs one GPU")\n'
    )
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        rec = _by_message(_records(src), "fast mode needs one GPU")
        folded = ast.unparse(_Fold().visit(ast.parse('"fast" is "fast" and 2 > 1', mode="eval")))
    assert rec["errorMessage"] == "fast mode needs one GPU"
    assert folded == "'fast' is 'fast' and True"
    assert [w for w in seen if issubclass(w.category, SyntaxWarning)] == []


def test_an_early_exit_is_a_condition_of_the_launch_and_a_passed_check_an_earlier_check():
    src = """
import logging

logger = logging.getLogger(__name__)

class ServerArgs:
    def _handle_dllm(self):
        if self.dllm_algorithm is None:
            return
        if self.tp_size > 8:
            raise ValueError("At most 8 GPUs for diffusion models")
        if not self.disable_cuda_graph:
            logger.warning("Cuda graph is disabled because of diffusion LLM inference")
            self.disable_cuda_graph = True

def add_cli_args(parser):
    parser.add_argument("--dllm-algorithm", type=str, help="The diffusion LLM algorithm.")
    parser.add_argument("--tp-size", type=int, default=1)
    parser.add_argument("--disable-cuda-graph", action="store_true")
"""
    rec = _by_message(_records(src), "Cuda graph is disabled")
    assert rec["triggerScenarios"] == (
        "Launching with --dllm-algorithm set and without --disable-cuda-graph."
    )


def test_a_notice_nothing_silences_says_there_is_nothing_to_change():
    src = """
import logging

logger = logging.getLogger(__name__)

class ServerArgs:
    def _handle_backend(self):
        if self.attention_backend == "dual":
            logger.warning("Mixed chunk is disabled because of the dual backend")
            self.enable_mixed_chunk = False

def add_cli_args(parser):
    parser.add_argument("--attention-backend", choices=["dual", "triton"])
    parser.add_argument("--enable-mixed-chunk", action="store_true")
"""
    rec = _by_message(_records(src), "Mixed chunk is disabled")
    assert rec["solutions"] == [
        "Nothing to change: SGLang turns --enable-mixed-chunk off for this launch"
    ]


@pytest.mark.parametrize(
    "test",
    [
        "self.enable_moe and self.enable_dp != True",
        "self.enable_moe is True and self.enable_dp is not True",
    ],
)
def test_a_switch_compared_with_true_reads_as_given_or_left_out(test):
    src = (
        "class ServerArgs:\n"
        "    def check(self):\n"
        f"        if {test}:\n"
        '            raise ValueError("MoE needs dp attention.")\n'
        "\n"
        "def add_cli_args(parser):\n"
        '    parser.add_argument("--enable-moe", action="store_true")\n'
        '    parser.add_argument("--enable-dp", action="store_true")\n'
    )
    rec = _by_message(_records(src), "MoE needs")
    assert rec["triggerScenarios"] == "Launching with --enable-moe and without --enable-dp."
    assert not any("=True" in s for s in rec["solutions"]), rec["solutions"]
    assert "Add --enable-dp" in rec["solutions"]


def test_a_tip_keeps_the_models_condition_and_drops_its_own_options():
    src = (
        "class ServerArgs:\n"
        "    def check(self):\n"
        '        if getattr(self.model_config.hf_config, "dual_chunk", None) is not None:\n'
        "            if self.attention_backend is None:\n"
        '                self.attention_backend = "dca"\n'
        '            elif self.attention_backend != "dca":\n'
        '                raise ValueError("Dual chunk models need the dca backend.")\n'
        "\n"
        "def add_cli_args(parser):\n"
        '    parser.add_argument("--attention-backend", choices=["dca", "fa3"])\n'
    )
    (tip,) = _by_message(_records(src), "Dual chunk models")["preventionTips"]
    assert tip.startswith("Set --attention-backend to dca when ") and "dual_chunk" in tip, tip
    assert "--attention-backend is set" not in tip


@pytest.mark.parametrize(
    ("test", "said"),
    [
        ("envs.VLLM_USE_V1", "VLLM_USE_V1 is enabled"),
        ("not envs.VLLM_USE_V1", "VLLM_USE_V1 is not enabled"),
        ("envs.VLLM_ATTENTION_BACKEND == 'FLASHINFER'", "VLLM_ATTENTION_BACKEND=FLASHINFER"),
        ("envs.VLLM_ATTENTION_BACKEND != 'FLASHINFER'", "VLLM_ATTENTION_BACKEND is not FLASHINFER"),
        ("envs.VLLM_DP_SIZE is None", "VLLM_DP_SIZE is not set"),
        (
            "envs.VLLM_ATTENTION_BACKEND in ('XFORMERS', 'FLASHINFER')",
            "VLLM_ATTENTION_BACKEND is XFORMERS or FLASHINFER",
        ),
        ("envs.is_set('VLLM_USE_V1')", "VLLM_USE_V1 is set"),
        ("'HOST_IP' in os.environ", "HOST_IP is set"),
        ("'HOST_IP' not in os.environ", "HOST_IP is not set"),
        ("current_platform.get_device_capability() == (7, 5)", "on an SM75 (Turing) GPU"),
        ("current_platform.get_device_capability() < (8, 0)", "on a GPU older than SM80"),
        ("0 < self.ratio <= 1.0", "--ratio within (0, 1.0]"),
        ("not 0 <= self.ratio < 1", "--ratio outside [0, 1)"),
        ("'gemma-2' in self.model_path.lower()", "--model-path contains gemma-2"),
        ("' ' not in self.model_path", "--model-path does not contain ' '"),
        # a variable's name alone on another object is no variable
        ("config.VLLM_USE_V1", None),
    ],
)
def test_a_module_of_environment_variables_reads_as_the_variables(test, said):
    import ast

    from kverr.records.conditions import describe, flag_attrs

    got = describe(ast.parse(test, mode="eval").body, flag_attrs(("--ratio", "--model-path")))
    assert (got[0] if got else None) == said


@pytest.mark.parametrize(
    ("test", "said"),
    [
        ("model_config.is_multimodal_model", "a multimodal model"),
        ("not self.model_config.is_multimodal_model", "a model that is not multimodal"),
        ("use_mla", "an MLA model"),
        ("model_config.is_moe", "an MoE model"),
        ("getattr(self.hf_config, 'is_encoder_decoder', False)", "an encoder-decoder model"),
        ("model_arch == 'MiMoV2FlashForCausalLM'", "a MiMoV2FlashForCausalLM model"),
    ],
)
def test_a_property_of_the_served_model_reads_as_its_kind(test, said):
    import ast

    from kverr.records.conditions import describe, flag_attrs

    from kverr.profile import load_profile

    attrs = flag_attrs((), profile=load_profile("vllm"))
    assert describe(ast.parse(test, mode="eval").body, attrs) == (
        said,
        describe(ast.parse(f"not ({test})", mode="eval").body, attrs)[0],
        "model",
    )


@pytest.mark.parametrize(
    ("test", "holds", "kept"),
    [
        ("self.model_config is not None", True, 0),
        ("self.model_config", True, 0),
        ("self.model_config is None", False, 0),  # an early exit the launch passed
        ("self.model_config is None", True, 1),  # (no launch gets here; said as code)
        ("self.model_config is not None and self.model_config.is_moe", True, 1),
        ("self.speculative_config is not None", True, 1),  # an option's config: a launch's choice
        # failing, the part it settles leaves the other: `not self.sleep_mode`, one flag fact
        ("self.model_config is not None and self.model_config.sleep_mode", False, "unset"),
        ("self.model_config is None or self.model_config.sleep_mode", True, "set"),
    ],
)
def test_a_config_the_engine_builds_for_every_launch_is_no_condition(test, holds, kept):
    from kverr.records.conditions import atoms_of, flag_attrs

    from kverr.profile import load_profile

    flags = ("--speculative-config", "--sleep-mode")
    atoms = atoms_of(test, holds, flag_attrs(flags, profile=load_profile("vllm")))
    if isinstance(kept, str):
        assert [(a.flag, a.op) for a in atoms] == [("--sleep-mode", kept)]
    else:
        assert len(atoms) == kept


@pytest.mark.parametrize(
    ("test", "fact"),
    [
        ("self.model_config.dtype == torch.float32", ("--dtype", "==", "float32")),
        (
            "model_config.dtype in (torch.float16, torch.bfloat16)",
            ("--dtype", "in", ("float16", "bfloat16")),
        ),
        ("model_config.dtype != torch.half", ("--dtype", "!=", "half")),
        # an enum's member is the word a launch gives (`--cudagraph-mode NONE`)
        ("self.cudagraph_mode == CUDAGraphMode.NONE", ("--cudagraph-mode", "==", "NONE")),
        # a case-blind comparison compares the option's own word
        (
            "self.tokenizer_mode.lower() not in ['auto', 'slow']",
            ("--tokenizer-mode", "not in", ("auto", "slow")),
        ),
    ],
)
def test_a_torch_dtype_an_option_is_compared_with_is_the_word_a_launch_writes(test, fact):
    from kverr.records.conditions import atoms_of, flag_attrs

    (atom,) = atoms_of(test, True, flag_attrs(("--dtype", "--cudagraph-mode", "--tokenizer-mode")))
    assert (atom.flag, atom.op, atom.value) == fact


EFFECTIVE = """
import logging

logger = logging.getLogger(__name__)


class ServerArgs:
    def __post_init__(self):
        self._resolve_io()

    def _resolve_io(self) -> bool:
        if self.io_backend != "kernel":
            return False
        effective = self.decode_backend or self.backend
        if effective != "fa3":
            return False
        if self.decode_backend is not None:
            self.io_backend = "direct"
            logger.warning("FA3 decode is not compatible with the kernel io backend.")
            return True
        return False


def add_cli_args(parser):
    parser.add_argument("--io-backend", type=str, default="kernel", help="The IO backend.")
    parser.add_argument("--decode-backend", type=str, default=None, help="The decode backend.")
    parser.add_argument("--backend", type=str, default=None, help="The backend.")
"""


def test_a_value_the_path_needs_is_not_lost_to_a_later_test_that_the_option_is_set():
    # `effective != "fa3": return` then `if self.decode_backend is not None`: fa3 is the point
    (rec,) = _records(EFFECTIVE)
    assert rec["triggerScenarios"] == (
        "Launching with --io-backend=kernel and --decode-backend=fa3 (falling back to --backend)."
    )


RULED_OUT = """
class ServerArgs:
    def check(self):
        if self.mode in ("eagle", "eagle3"):
            if self.mode not in ("eagle", "eagle3") or self.page_size > 1:
                raise ValueError("Eagle needs pages of one token.")
        if self.rank is None:
            if self.external_lb or self.rank is not None:
                raise ValueError("An external load balancer needs a rank.")
        if self.async_mode:
            pass
        elif self.async_mode is None:
            raise ValueError("The tri-state async mode needs a value.")
        if self.offload == "uva" and self.group > 0:
            pass
        elif self.offload == "auto" and self.group > 0:
            raise ValueError("Auto offload with groups picks prefetch.")
        if pooling := self.pooling:
            if pooling in ("CLS", "LAST"):
                self.seq = pooling
            elif pooling in ("ALL",):
                self.tok = pooling
            else:
                raise NotImplementedError(f"pooling {pooling}")


def add_cli_args(parser):
    parser.add_argument("--mode", type=str, default=None, choices=["eagle", "eagle3", "ngram"])
    parser.add_argument("--page-size", type=int, default=1)
    parser.add_argument("--rank", type=int, default=None)
    parser.add_argument("--external-lb", action="store_true")
    parser.add_argument("--async-mode", action="store_true", default=None)
    parser.add_argument("--pooling", type=str, default=None)
    parser.add_argument("--offload", type=str, default="auto")
    parser.add_argument("--group", type=int, default=0)
"""


@pytest.mark.parametrize(
    ("message", "trigger"),
    [
        ("Eagle needs", "Launching with --mode set to eagle or eagle3, when --page-size > 1."),
        ("external load", "Launching without --rank, when --external-lb."),
        # `not x`, then `x is None`: one fact, not given at all
        ("tri-state", "Launching without --async-mode."),
        # a name the enclosing test bound (`if x := self.x:`) is that option, in each test
        # of the chain: the `else` fires for every value the branches above it did not take
        ("pooling", "Launching with --pooling not CLS, LAST or ALL."),
        # with --offload=auto, "either --offload other than uva or --group <= 0" always holds
        ("Auto offload", "Launching with --offload=auto (the default) and --group > 0."),
    ],
)
def test_a_choice_of_conditions_says_only_those_the_launch_can_meet(message, trigger):
    # (the code tests again what the branch around it settled: that part can never hold)
    assert _by_message(_records(RULED_OUT), message)["triggerScenarios"] == trigger


@pytest.mark.parametrize(
    ("test", "holds", "fix"),
    [
        ("--tp % --dcp != 0", True, "Make --tp a multiple of --dcp"),
        ("--dp-local > --dp", True, "Make --dp-local at most --dp"),
        ("--rank < --nodes", False, "Make --rank less than --nodes"),
        ("--x != --x", True, "Change --x so that `--x != --x` is false"),
        ("64 % --page != 0", True, "Make --page a divisor of 64"),
        ("--ep not in [1, --tp]", True, "Make --ep equal to 1 or --tp"),
        (
            "--a > some_helper(--b)",
            True,
            "Change --a and --b so that `--a > some_helper(--b)` is false",
        ),
    ],
)
def test_a_comparison_of_options_is_fixed_in_words(test, holds, fix):
    from kverr.records.conditions import Atom
    from kverr.records.knowledge.fixes import fix_words

    flags = tuple(
        dict.fromkeys(
            w for w in test.replace("(", " ").replace(")", " ").split() if w.startswith("--")
        )
    )
    assert fix_words(Atom(None, "expr", text=test, holds=holds, flags=flags), {}) == fix


@pytest.mark.parametrize(
    ("test", "holds", "words"),
    [
        ("--tp % --dcp != 0", True, "--tp is not a multiple of --dcp"),
        ("--tp % --dcp == 0", True, "--tp is a multiple of --dcp"),
        ("--tp * --pp % --nodes == 0", False, "--tp times --pp is not a multiple of --nodes"),
        ("--long-prefill >= --block", False, "--long-prefill is below --block"),
        ("64 % --page != 0", True, "--page is not a divisor of 64"),
        # a side that is code no option sets stays code
        ("--page % config.block != 0", True, "`--page % config.block != 0` is true"),
        # a list holding an option
        ("--ep in [1, --tp]", False, "--ep is neither 1 nor --tp"),
        ("--ep in [1, --tp]", True, "--ep is equal to 1 or --tp"),
    ],
)
def test_a_comparison_of_options_reads_in_words_where_a_launch_meets_it(test, holds, words):
    from kverr.records.conditions import atoms_of, phrase

    names = dict.fromkeys(re.findall(r"--[a-z][\w-]*", test))
    code = test
    for w in names:  # (the guard as the code spells it: `self.tp % self.dcp != 0`)
        code = code.replace(w, "self." + w[2:].replace("-", "_"))
    attrs = {w[2:].replace("-", "_"): w for w in names}
    (atom,) = atoms_of(code, holds, attrs)
    assert phrase(atom) == words


def test_an_enum_member_reads_as_the_choice_the_option_declares():
    from kverr.records.conditions import as_declared, readings

    from kverr.ftypes import FlagDecl, Guard, Part, Site, Template

    guard = Guard("self.mamba_backend == MambaBackend.TRITON", True, "if", 3, ("--mamba-backend",))
    site = Site(
        "raise", "cfg.py", 4, 4, 0, 0, "Cfg.check", "ValueError", "error",
        Template((Part(text="no triton here"),)), "raise ValueError('no triton here')",
        guards=(guard,), flags=("--mamba-backend",),
    )  # fmt: skip
    decls = {
        "--mamba-backend": FlagDecl("--mamba-backend", "mamba_backend", choices=("triton", "fa"))
    }
    (direct,) = as_declared(readings(site), decls)
    assert [(a.flag, a.op, a.value) for a in direct.atoms] == [("--mamba-backend", "==", "triton")]


def test_a_test_against_an_empty_collection_is_no_fact_about_the_value():
    from kverr.records.conditions import atoms_of, flag_attrs, or_list

    (atom,) = atoms_of("self.backend.lower() in ()", True, flag_attrs(("--backend",)))
    assert atom.flag is None and atom.flags == ("--backend",)
    assert or_list(()) == "no value"


def test_a_value_outside_a_list_is_never_the_none_among_the_choices():
    from kverr.records.conditions import cli_arg

    choices = ("None", "awq", "gptq", "squeezellm")
    assert cli_arg("--quantization", "not in", ("awq", "squeezellm"), choices=choices) == (
        "--quantization=gptq"
    )


DOUBLE_NOTICE = """
import logging

logger = logging.getLogger(__name__)


class ServerArgs:
    def __post_init__(self):
        if self.enable_prefix_caching is not None:
            if self.enable_prefix_caching and not self.model_supports_caching:
                logger.warning("This model does not officially support prefix caching.")


def add_cli_args(parser):
    parser.add_argument("--enable-prefix-caching", action="store_true", default=None, help="Cache.")
"""


def test_a_notice_names_each_option_of_its_launches_once():
    (rec,) = _records(DOUBLE_NOTICE)
    (advice,) = rec["solutions"]
    assert advice.count("--enable-prefix-caching") == 1, advice


CRASH_NOTICE = """
import logging

logger = logging.getLogger(__name__)


class ServerArgs:
    def __post_init__(self):
        if self.enable_prefix_caching and not self.model_supports_caching:
            logger.warning(
                "This model does not support prefix caching. Enabling it may cause the engine"
                " to crash."
            )


def add_cli_args(parser):
    parser.add_argument("--enable-prefix-caching", action="store_true", help="Cache.")
"""


def test_a_notice_that_warns_of_a_crash_never_says_nothing_needs_changing():
    (rec,) = _records(CRASH_NOTICE)
    assert not any(s.startswith("Nothing to change") for s in rec["solutions"]), rec["solutions"]
    assert "may cause the engine to crash" in rec["meaning"]["why"]


FROM_THE_ENVIRONMENT = """
import envs


class ServerArgs:
    def check(self):
        if self.dp_size > 1:
            self.rank = 0
        else:
            self.dp_size = envs.SGLANG_DP_SIZE
            if self.dp_size > 1 and self.dense_model:
                raise ValueError("Offline data parallel mode is not supported for dense models.")


def add_cli_args(parser):
    parser.add_argument("--dp-size", type=int, default=1)
    parser.add_argument("--dense-model", action="store_true")
"""


def test_a_flag_the_code_sets_from_the_environment_reads_as_the_variable():
    # the check after `self.dp_size = envs.SGLANG_DP_SIZE` reads the variable, not --dp-size
    rec = _by_message(_records(FROM_THE_ENVIRONMENT), "Offline data parallel")
    assert rec["triggerScenarios"] == (
        "Launching with --dp-size <= 1 and --dense-model, when SGLANG_DP_SIZE > 1."
    )


PREDICATE_METHOD = '''
class ServerArgs:
    strategy: str = "none"
    page_size: int = 16

    def uses_buffer(self) -> bool:
        """Whether states are buffered."""
        return self.strategy == "buffer"

    def check(self):
        if self.uses_buffer() and self.page_size > 64:
            raise ValueError("Buffered states need pages of at most 64 tokens.")


class Runner:
    def uses_buffer(self):
        return True

    def run(self, args):
        if self.uses_buffer() and args.page_size > 128:
            raise ValueError("The runner buffers pages of at most 128 tokens.")


def add_cli_args(parser):
    parser.add_argument("--strategy", choices=["none", "buffer"], default="none", help="States.")
    parser.add_argument("--page-size", type=int, default=16, help="Tokens per page.")
'''


def test_a_method_that_only_returns_a_test_of_the_options_reads_as_that_test():
    (rec,) = [r for r in _records(PREDICATE_METHOD) if r["errorMessage"].startswith("Buffered")]
    assert rec["triggerScenarios"] == "Launching with --strategy=buffer and --page-size > 64."
    assert "args.strategy == 'buffer' and args.page_size > 64" in rec["validationCode"]
    # another class's method of the same name is another test, left as the code has it
    (other,) = [r for r in _records(PREDICATE_METHOD) if r["errorMessage"].startswith("The runner")]
    assert "`uses_buffer()`" in other["triggerScenarios"]


def test_the_empty_string_among_values_reads_as_a_command_line_writes_it():
    src = """
class ServerArgs:
    def check(self):
        if self.backend not in ("", "eager", "inductor"):
            raise ValueError("Invalid backend for piecewise compilation.")


def add_cli_args(parser):
    parser.add_argument("--backend", type=str, default="", help="The compiler.")
"""
    (rec,) = _records(src)
    assert rec["triggerScenarios"] == 'Launching with --backend not "", eager or inductor.'
    assert rec["solutions"] == ['Set --backend to one of "", eager, inductor']


SELF_TESTS = """
class ServerArgs:
    def check(self):
        if self.graph_mode.has_full_graphs() and self.pipeline_size > 1:
            raise ValueError("Full graphs need one pipeline stage.")
        if not self.spec_config.use_eagle():
            raise ValueError("Aux hidden states come from EAGLE drafters only.")
        if self.pipeline_size > 1 and get_cpu_architecture() in (CpuArch.POWERPC, CpuArch.RISCV):
            raise ValueError("Pipelines are not supported on this CPU.")


def add_cli_args(parser):
    parser.add_argument("--graph-mode", type=str, default="piecewise")
    parser.add_argument("--pipeline-size", type=int, default=1)
    parser.add_argument("--spec-config", type=str, default=None)
"""


@pytest.mark.parametrize(
    ("message", "trigger"),
    [
        ("Full graphs", "Launching with --pipeline-size > 1, when --graph-mode has full graphs."),
        ("Aux hidden", "Launching when --spec-config does not use eagle."),
        # the platform's answer about itself: the members it lists name it
        ("Pipelines", "Launching with --pipeline-size > 1 on a POWERPC or RISCV CPU."),
    ],
)
def test_a_test_an_options_value_answers_about_itself_reads_as_its_name(message, trigger):
    assert _by_message(_records(SELF_TESTS), message)["triggerScenarios"] == trigger


EARLY_EXITS = """
import os


class ServerArgs:
    def check(self):
        if self.connector is None:
            return
        if "expandable_segments:True" not in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""):
            return
        if self.sleep_mode:
            return
        raise ValueError("The connector pins memory the allocator remaps.")


def add_cli_args(parser):
    parser.add_argument("--connector", type=str, default=None)
    parser.add_argument("--sleep-mode", action="store_true")
"""


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        # every early exit on the way is a condition: a flag left out and a variable too
        (
            "triggerScenarios",
            "Launching with --connector set and without --sleep-mode, when"
            " PYTORCH_CUDA_ALLOC_CONF contains expandable_segments:True.",
        ),
        # with no if around the raise, the exit just before it is its test: the fix undoes it
        ("solutions", ["Add --sleep-mode"]),
    ],
)
def test_the_early_exits_before_a_check_are_its_conditions(field, expected):
    assert _by_message(_records(EARLY_EXITS), "pins memory")[field] == expected


GIVEN_EMPTY = """
class ServerArgs:
    def check(self):
        if self.module_path is not None and not self.module_path:
            raise ValueError("module_path cannot be an empty string.")
        if self.retries is not None and not self.retries:
            raise ValueError("retries cannot be zero.")


def add_cli_args(parser):
    parser.add_argument("--module-path", type=str, default=None)
    parser.add_argument("--retries", type=int, default=None)
"""


@pytest.mark.parametrize(
    ("message", "trigger", "before"),
    [
        # given, and empty: one fact, not "without" (the check never fires when left out)
        ("empty string", 'Launching with --module-path="".', '--module-path=""'),
        ("zero", "Launching with --retries=0.", "--retries=0"),
    ],
)
def test_an_option_given_empty_is_one_fact(message, trigger, before):
    rec = _by_message(_records(GIVEN_EMPTY), message)
    assert rec["triggerScenarios"] == trigger
    assert rec["exampleFix"].split("\n")[1].endswith(before)
