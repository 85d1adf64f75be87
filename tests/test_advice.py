"""Advice from a message's captured values when no launch was pasted (kverr/advice.py)."""

from __future__ import annotations

import pytest

from kverr.advice import advise
from kverr.profile import AdviceRules, builtin_names, load_profile

HARDWARE = ("--tp-size",)


@pytest.mark.parametrize(
    ("condition", "flags", "values", "expected"),
    [
        (  # keep the GPUs the user has: the other option moves
            "--tp-size % --dp-size == 0",
            ["--tp-size", "--dp-size"],
            {"self.tp_size": "4", "self.dp_size": "3"},
            [
                "With --tp-size 4, use --dp-size 4, 2 or 1 (not 3).",
                "With --dp-size 3, use --tp-size 3, 6 or 9 (not 4).",
            ],
        ),
        (  # a constant of the code: its divisors nearest to the printed value
            "64 % --page-size == 0",
            ["--page-size"],
            {"self.page_size": "48"},
            ["Use --page-size 64, 32 or 16 (not 48)."],
        ),
        (
            "0 < --swa-full-tokens-ratio <= 1.0",
            ["--swa-full-tokens-ratio"],
            {"self.swa_full_tokens_ratio": "1.5"},
            ["Use --swa-full-tokens-ratio 1 (not 1.5)."],
        ),
        (  # a limit: its edge, then the round numbers past it
            "token_num + max_tokens <= --max-model-len",
            ["--max-model-len"],
            {"self.max_model_len": "8192", "token_num": "7691", "max_tokens": "512"},
            ["Use --max-model-len 8203, 16384 or 32768 (not 8192)."],
        ),
        (  # the words the check allows, in its order
            "--kernel in ('fa3', 'triton', 'flashinfer', 'cutlass')",
            ["--kernel"],
            {"self.kernel": "ascend"},
            ["Use --kernel fa3, triton or flashinfer (not ascend)."],
        ),
        (  # a printed list of qualified words: the words a command line gives
            "not --dtype not in supported_dtypes",
            ["--dtype"],
            {"self.dtype": "torch.bfloat16", "supported_dtypes": "[torch.float16]"},
            ["Use --dtype float16 (not bfloat16)."],
        ),
        (  # a printed expression over an option's dest is the condition's over the option
            "len(--adapter-paths) <= --max-adapters",
            ["--max-adapters", "--adapter-paths"],
            {"self.max_adapters": "2", "len(self.adapter_paths)": "4"},
            ["Use --max-adapters 4, 8 or 16 (not 2)."],
        ),
        (  # values that already satisfy it say nothing
            "--tp-size % --dp-size == 0",
            ["--tp-size", "--dp-size"],
            {"self.tp_size": "4", "self.dp_size": "2"},
            [],
        ),
        (  # a value the message did not print: no guess
            "--tp-size % --dp-size == 0",
            ["--tp-size", "--dp-size"],
            {"self.tp_size": "4"},
            [],
        ),
        (  # code the interpreter does not run
            "len(--port) == 2",
            ["--port"],
            {"self.port": "3"},
            [],
        ),
    ],
)
def test_advice_from_captured_values(condition, flags, values, expected) -> None:
    record = {"flags": flags, "solutions": [f"Change them so that `{condition}` is true"]}
    assert advise(record, values, keep=HARDWARE) == expected


KV = {  # a launch-path check that says which way to move the option, printing no value
    "flags": ["--gpu-memory-utilization"],
    "errorMessage": "No room for the KV cache. Try increasing `gpu_memory_utilization`.",
    "scope": "launch-path",
}


@pytest.mark.parametrize(
    ("pasted", "expected"),
    [
        (
            "vllm serve m --gpu-memory-utilization 0.7\nNo room for the KV cache.",
            "from 0.7 to 0.75",
        ),
        ("vllm serve m --gpu-memory-utilization=0.6 --port 8000", "from 0.6 to 0.65"),
        ("engine = Engine(model=m, gpu_memory_utilization=0.5)\nNo room", "from 0.5 to 0.55"),
        ("gpu_memory_utilization: 0.4  # from the YAML", "from 0.4 to 0.45"),
        # the value set last wins: a retry after a first attempt
        (
            "--gpu-memory-utilization 0.3 failed, --gpu-memory-utilization 0.8 failed too",
            "from 0.8 to 0.85",
        ),
        # another option's spelling that starts alike is not it, nor a word that contains it
        ("--gpu-memory-utilization-cap 0.2", None),
        ("max_gpu_memory_utilization=0.2", None),
        ("--gpu-memory-utilization auto", None),
    ],
)
def test_advice_from_values_the_paste_gives_outside_the_message(pasted, expected) -> None:
    said = advise(KV, {}, text=pasted)
    if expected is None:
        assert said == []
    else:
        assert [expected in line for line in said] == [True], said


def test_the_message_printed_value_beats_the_pasted_one() -> None:
    record = {
        **KV,
        "errorMessage": "At {gpu_memory_utilization}: try increasing `gpu_memory_utilization`.",
    }
    said = advise(
        record, {"self.gpu_memory_utilization": "0.9"}, text="--gpu-memory-utilization 0.5"
    )
    assert said and "from 0.9 to 0.95" in said[0]


def test_a_printed_number_of_the_model_is_a_constant_and_fewer_gpus_come_first() -> None:
    """`heads % --tp == 0` with the heads the message printed: the divisors the launch can
    have without more GPUs first (4, 2, 1 for 52 heads on 8), not the nearest (13)."""
    record = {
        "flags": ["--tp"],
        "solutions": ["Change --tp so that `num_heads % --tp != 0` is false"],
    }
    values = {"num_heads": "52", "self.tp": "8"}
    assert advise(record, values, keep=("--tp",)) == ["Use --tp 4, 2 or 1 (not 8)."]
    # an option that is no hardware count keeps the nearest values first
    assert advise(record, values) == ["Use --tp 13, 4 or 26 (not 8)."]


def test_without_a_condition_of_its_own_the_triggers_clauses_are_undone() -> None:
    # vLLM's context check words no condition; its trigger's first clause reads a printed value
    record = {
        "flags": ["--max-model-len"],
        "triggerScenarios": "Launching when `max_model_len > derived_max_model_len` is true and"
        " `envs.ALLOW_LONG` is false.",
    }
    values = {"max_model_len": "65536", "derived_max_model_len": "40960.0"}
    assert advise(record, values) == ["Use --max-model-len 40960, 32768 or 16384 (not 65536)."]


@pytest.mark.parametrize(
    ("condition", "flags", "values", "expected"),
    [
        (  # the option is not printed, the prompt's length is: at least that, nothing guessed
            "prompt_len > (--max-model-len if prompt_type == 'decoder' else cache_size)",
            ["--max-model-len"],
            {"prompt_type": "decoder", "prompt_len": "16476", "max_prompt_len": "16384"},
            ["Use --max-model-len 16476, 32768 or 32952."],
        ),
        (  # the other branch reads no option
            "prompt_len > (--max-model-len if prompt_type == 'decoder' else cache_size)",
            ["--max-model-len"],
            {"prompt_type": "encoder", "prompt_len": "16476", "cache_size": "8192"},
            [],
        ),
        (  # a number of GPUs is never guessed from the model's numbers
            "heads % --tp-size == 0",
            ["--tp-size"],
            {"heads": "28"},
            [],
        ),
    ],
)
def test_an_option_the_message_did_not_print(condition, flags, values, expected) -> None:
    record = {"flags": flags, "solutions": [f"Change it so that `{condition}` is false"]}
    assert advise(record, values, keep=HARDWARE) == expected


RULES = AdviceRules(
    derived=(("window_len", "--window-size"),),
    caveats=(("--window-size", "the checkpoint may have been trained on less"),),
)

# (case, record fields, values the message printed, advice); the rules above stand for a
# project's [advice] table: `window_len` is what --window-size sets
DERIVED = [
    ("a derived value printed and read by the trigger: solved as its option, with the caveat",
     {"flags": ["--truncate"],
      "placeholders": ["n_tokens", "self.window_len"],
      "triggerScenarios": "Launching without --truncate, when `n_tokens >= window_len` is true."},
     {"n_tokens": "5000", "self.window_len": "4096"},
     ["Use --window-size 5001, 8192 or 16384 (not 4096). The checkpoint may have been trained on"
      " less."]),
    ("a printed expression that is no name is bound to its number",
     {"flags": ["--window-size"],
      "triggerScenarios": "Launching when `len(req.ids) > window_len` is true."},
     {"len(req.ids)": "3000", "window_len": "1024"},
     ["Use --window-size 3000, 4096 or 8192 (not 1024). The checkpoint may have been trained on"
      " less."]),
    ("lowering an option needs no caveat",
     {"flags": ["--window-size"],
      "triggerScenarios": "Launching when `window_len > limit` is true."},
     {"window_len": "8192", "limit": "2048"},
     ["Use --window-size 2048, 1024 or 512 (not 8192)."]),
    ("a derived name the record never reads maps nothing",
     {"flags": ["--truncate"],
      "triggerScenarios": "Launching without --truncate, when `n_tokens >= cap` is true."},
     {"n_tokens": "5000", "window_len": "4096"},
     []),
    ("a printed word: the other word the message printed for the same check",
     {"flags": ["--quant"],
      "solutions": ["Change --quant so that `--quant != config_quant` is false"]},
     {"config_quant": "awq", "self.quant": "fp8"},
     ["Use --quant awq (not fp8)."]),
    ("a word with no other word printed: nothing to offer",
     {"flags": ["--quant"],
      "solutions": ["Change --quant so that `--quant != config_quant` is false"]},
     {"config_quant": "7", "self.quant": "fp8"},
     []),
]  # fmt: skip


@pytest.mark.parametrize("case", [c[0] for c in DERIVED])
def test_advice_with_the_projects_rules(case) -> None:
    _, record, values, expected = next(c for c in DERIVED if c[0] == case)
    assert advise(record, values, rules=RULES) == expected


def test_the_shipped_profiles_map_what_their_checks_read() -> None:
    """Each derived name of a shipped profile is an identifier mapped to an option, and a
    caveat is said of an option some name sets or raises (else no advice raises it)."""
    for name in builtin_names():
        rules = load_profile(name).advice
        assert all(k.isidentifier() and v.startswith("--") for k, v in rules.derived)
        # (a computed name stands for an expression over options, or for a derived name)
        assert all(
            k.isidentifier() and ("--" in v or v in dict(rules.derived)) for k, v in rules.computed
        )
        moved = {v for _, v in rules.derived} | {f for _, fs in rules.raised_by for f in fs}
        assert {f for f, _ in rules.caveats} <= moved


# (case, message, record flags, values printed, advice)
SAID = [
    ("an option set in an example",
     "Half precision is missing on {device}. Pick another type, for example: --precision=fp16.",
     ["--precision"], {"device": "Orin"}, ["Use --precision fp16, as the message says."]),
    ("a variable that lifts the check",
     "Window {n} is past the model's {limit}. To go past it, set APP_ALLOW_WIDE=1.",
     ["--window"], {"n": "9000", "limit": "4096"}, ["Set APP_ALLOW_WIDE=1, as the message says."]),
    ("a value the message printed, in its own instruction",
     "Too little room for {want} rows. Launch with --rows {fits}.",
     ["--rows"], {"want": "900", "fits": "512"}, ["Use --rows 512, as the message says."]),
    ("alternatives in one sentence stay alternatives",
     "Workers > 1 need no cache. Either use --workers=1 or --cache-gb=0.",
     ["--workers", "--cache-gb"], {}, ["Use --workers 1 or use --cache-gb 0, as the message says."]),
    # what describes the launch is no instruction
    ("a value the launch has", "--precision=fp8 requires a newer device.", ["--precision"], {}, []),
    ("a variable the launch has", "Detected APP_MODE=2 with {feature}.", [], {"feature": "x"}, []),
    # an option given a word with a space is a sentence going on, not a value
    ("a word after a space", "Please set --rows to enable paging.", ["--rows"], {}, []),
    # a value the sentence goes on past is not cut short
    ("a compound value", "For example, use APP_CORES=0-31|32-63 on two nodes.", [], {}, []),
    ("an option that is not the record's", "Use --other=3 instead.", ["--rows"], {}, []),
    ("a placeholder not printed", "Launch with --rows {fits}.", ["--rows"], {"want": "900"}, []),
]  # fmt: skip


@pytest.mark.parametrize("case", [c[0] for c in SAID])
def test_the_messages_own_instruction_with_its_values(case) -> None:
    _, message, flags, values, expected = next(c for c in SAID if c[0] == case)
    assert advise({"errorMessage": message, "flags": flags}, values) == expected


def test_a_computed_value_comes_before_the_messages_instruction_for_the_same_option() -> None:
    record = {
        "errorMessage": "Window {self.window} is past the model's {limit}. To go past it, set"
        " APP_ALLOW_WIDE=1, e.g. --window=4096.",
        "flags": ["--window"],
        "triggerScenarios": "Launching when `window > limit` is true.",
    }
    assert advise(record, {"self.window": "9000", "limit": "4096"}) == [
        "Use --window 4096, 2048 or 1024 (not 9000).",
        "Set APP_ALLOW_WIDE=1, as the message says.",
    ]


POOL_RULES = AdviceRules(
    raised_by=(("pool_rows", ("--mem-share",)), ("row_cap", ("--mem-share", "--window-size"))),
)

# (case, record fields, values printed, pasted text, advice); `pool_rows` grows with --mem-share
RAISED = [
    ("a bound below zero: no value of the option fits, the share that grows it does",
     {"flags": ["--pool-limit"],
      "triggerScenarios": "Launching with --pool-limit set, when `--pool-limit > pool_rows` is true."},
     {"user_limit": "4000", "pool_rows": "-52000"}, "pool_limit=4000",
     ["Raise --mem-share: `pool_rows`, -52000 here, grows with it."]),
    ("the share's value in the paste: one step up from it",
     {"flags": ["--pool-limit"],
      "triggerScenarios": "Launching with --pool-limit set, when `--pool-limit > pool_rows` is true."},
     {"pool_rows": "-52000"}, "launch --pool-limit 4000 --mem-share 0.7",
     ["Raise --mem-share from 0.7 to 0.75: `pool_rows`, -52000 here, grows with it."]),
    ("a bound above zero: the option lowered first, the share after",
     {"flags": ["--pool-limit"],
      "triggerScenarios": "Launching with --pool-limit set, when `--pool-limit > pool_rows` is true."},
     {"pool_rows": "3000"}, "--pool-limit 4096",
     ["Use --pool-limit 3000, 2048 or 1024 (not 4096).",
      "Raise --mem-share: `pool_rows`, 3000 here, grows with it."]),
    ("a bound grown by two options, read as self.x, beside a printed expression",
     {"flags": ["--truncate"],
      "triggerScenarios": "Launching without --truncate, when `len(req.ids) >= self.row_cap` is true."},
     {"len(req.ids)": "9000", "self.row_cap": "5000"}, "",
     ["Raise --mem-share: `row_cap`, 5000 here, grows with it.",
      "Raise --window-size: `row_cap`, 5000 here, grows with it."]),
    ("the check does not fire at the printed value: nothing",
     {"flags": ["--truncate"],
      "triggerScenarios": "Launching without --truncate, when `len(req.ids) >= row_cap` is true."},
     {"len(req.ids)": "9000", "row_cap": "12000"}, "", []),
    ("raising the bound cannot pass the check: nothing",
     {"flags": ["--truncate"],
      "triggerScenarios": "Launching without --truncate, when `row_cap > 100` is true."},
     {"row_cap": "5000"}, "", []),
]  # fmt: skip


@pytest.mark.parametrize("case", [c[0] for c in RAISED])
def test_a_bound_that_options_raise(case) -> None:
    _, record, values, pasted, expected = next(c for c in RAISED if c[0] == case)
    assert advise(record, values, text=pasted, rules=POOL_RULES) == expected


# (case, trigger clause, values printed, advice): quantities printed in another unit
CONVERTED = [
    ("both sides printed in one unit, a fraction option",
     "`spare < whole * --share` is true",
     {"Mb(self.spare)": "30.5", "Mb(whole)": "40.0", "cfg.share": "0.8"},
     ["Use --share 0.76, 0.75 or 0.7 (not 0.8)."]),
    ("a numeric call in the condition",
     "`spare < math.ceil(whole * --share)` is true",
     {"Mb(spare)": "30.5", "Mb(whole)": "40.0", "cfg.share": "0.8"},
     ["Use --share 0.76, 0.75 or 0.7 (not 0.8)."]),
    # an option with a unit of its own would be compared across units: nothing
    ("an option that is no fraction",
     "`spare < whole - --reserve` is true",
     {"Mb(spare)": "30.5", "Mb(whole)": "40.0", "cfg.reserve": "2048"},
     []),
    ("two units in one comparison",
     "`spare < whole * --share` is true",
     {"Mb(spare)": "30.5", "Gb(whole)": "0.04", "cfg.share": "0.8"},
     []),
    ("a quantity printed raw beside converted ones",
     "`spare < whole * --share - pad` is true",
     {"Mb(spare)": "30.5", "Mb(whole)": "40.0", "pad": "1", "cfg.share": "0.8"},
     []),
    # the profile's `computed`: `asked` is what the code computed from --share
    ("a name the code computed from the option",
     "`spare < asked` is true",
     {"Mb(spare)": "30.5", "Mb(whole)": "40.0", "cfg.share": "0.8", "Mb(asked)": "32.0"},
     ["Use --share 0.76, 0.75 or 0.7 (not 0.8)."]),
    ("so little free that no share is a fix",
     "`spare < asked` is true",
     {"Mb(spare)": "0.5", "Mb(whole)": "40.0", "cfg.share": "0.8", "Mb(asked)": "32.0"},
     []),
]  # fmt: skip
COMPUTED = AdviceRules(computed=(("asked", "whole * --share"),))


@pytest.mark.parametrize("case", [c[0] for c in CONVERTED])
def test_quantities_printed_in_another_unit(case) -> None:
    _, clause, values, expected = next(c for c in CONVERTED if c[0] == case)
    record = {"flags": ["--share", "--reserve"], "triggerScenarios": f"Launching when {clause}."}
    assert advise(record, values, rules=COMPUTED) == expected


@pytest.mark.parametrize(
    ("printed", "expected"),
    [
        ("1", ["Use --rank 8, 16 or 32 (not 1)."]),  # the next larger first
        ("100", ["Use --rank 128, 256 or 64 (not 100)."]),
        ("16", []),  # allowed: nothing to say
    ],
)
def test_a_set_of_allowed_values_offers_the_nearest(printed, expected) -> None:
    record = {"flags": ["--rank"], "solutions": ["Set --rank to one of 8, 16, 32, 64, 128, 256"]}
    assert advise(record, {"self.rank": printed}) == expected


@pytest.mark.parametrize(
    ("solution", "printed", "expected"),
    [
        ("Set --page-size=1", "128", ["Use --page-size 1 (not 128)."]),
        ("Set --page-size=1", "1", []),  # the value the check wants: nothing to say
        ("Set --backend=triton", "fa3", ["Use --backend triton (not fa3)."]),
        ("Set --backend to one of triton, fa4", "fa3", []),  # words: none nearest
    ],
)
def test_a_single_allowed_value_replaces_the_printed_one(solution, printed, expected) -> None:
    flag = solution.split()[1].split("=")[0]
    record = {"flags": [flag], "solutions": [solution]}
    assert advise(record, {f"self.{flag[2:].replace('-', '_')}": printed}) == expected


SWAP = {  # a check that fired on one word of an option, with its verified fix of that word
    "flags": ["--kernel", "--prefill-kernel"],
    "errorMessage": "The fast kernel needs a newer GPU. Pick another kernel.",
    "exampleFix": "# before\nserve M --kernel fast\n# after\nserve M --kernel plain",
    "verification": {"status": "verified"},
}


@pytest.mark.parametrize(
    ("record", "pasted", "expected"),
    [
        (
            SWAP,
            "My GPU rejects --kernel fast with:\nThe fast kernel needs",
            ["Use --kernel plain (not fast)."],
        ),
        (
            SWAP,
            "Trying `--kernel=fast` here, the server stops:",
            ["Use --kernel plain (not fast)."],
        ),
        (  # an engine's keyword or a config's key, spelt as the option's dest
            SWAP,
            'engine = Engine(model=m, kernel="fast")\nThe fast kernel needs',
            ["Use --kernel plain (not fast)."],
        ),
        (SWAP, "kernel: fast  # from the YAML", ["Use --kernel plain (not fast)."]),
        (  # the value set last
            SWAP,
            "serve M --kernel plain --kernel fast",
            ["Use --kernel plain (not fast)."],
        ),
        (SWAP, "serve M --kernel fast --kernel other", []),  # the check did not fire on it
        (SWAP, "serve M --prefill-kernel fast", []),  # the fix is of another option
        (SWAP, "serve M --kernel-fast yes", []),  # another option that starts alike
        (SWAP, "prefill_kernel=fast", []),  # or a name that ends alike
        (SWAP, "The fast kernel needs a newer GPU.", []),  # no value of the user's
        ({**SWAP, "verification": {"status": "unverified"}}, "--kernel fast", []),
        (  # a number of the example fits the example's other values, not the user's
            {
                **SWAP,
                "exampleFix": "# before\nserve M --chunk 1 --page 2\n# after\nserve M --chunk 2 --page 2",
            },
            "--chunk 1",
            [],
        ),
        (  # an example that changes two options says nothing of one of them
            {
                **SWAP,
                "exampleFix": "# before\nserve M --kernel fast\n# after\nserve M --kernel plain --eager",
            },
            "--kernel fast",
            [],
        ),
        (  # the message's own words are no value of the user's
            {**SWAP, "errorMessage": "--kernel fast needs a newer GPU."},
            "--kernel fast needs a newer GPU.",
            [],
        ),
        (
            {**SWAP, "errorMessage": "A newer GPU is needed. Got kernel=fast."},
            "ValueError: A newer GPU is needed. Got kernel=fast.",
            [],
        ),
    ],
)
def test_a_verified_fix_of_the_word_the_paste_gives(record, pasted, expected) -> None:
    assert advise(record, {}, text=pasted) == expected


NICS = {  # a helper's check of a comma list, called for either option
    "flags": ["--nics", "--backup-nics"],
    "triggerScenarios": "Launching with --nics set (or --backup-nics, whichever the caller "
    "passes), when `len(names) != len(set(names))` is true.",
}


@pytest.mark.parametrize(
    ("record", "printed", "pasted", "expected"),
    [
        (
            NICS,
            "ib0,ib1,ib0",
            "",
            [
                "Use --nics ib0,ib1 or --backup-nics ib0,ib1, whichever you set to ib0,ib1,ib0:"
                " each value once (ib0 is named twice)."
            ],
        ),
        (  # the launch says which option holds the list
            NICS,
            "ib0,ib0,ib1,ib1",
            "serve M --backup-nics=ib0,ib0,ib1,ib1 --nics ib2",
            ["Use --backup-nics ib0,ib1: each value once (ib0, ib1 is named twice)."],
        ),
        (NICS, "ib0,ib1", "", []),  # no value twice: some other list fired it
        (NICS, '{"0":"ib0,ib1","1":"ib0,ib1"}', "", []),  # a JSON map is no comma list
        (  # a check that does not refuse repeats says nothing of them
            {**NICS, "triggerScenarios": "Launching when `len(names) > 4` is true."},
            "ib0,ib0,ib0,ib0,ib0",
            "",
            [],
        ),
        (  # the other spelling of the same test
            {
                **NICS,
                "triggerScenarios": "Launching when `len(set(names)) == len(names)` is false.",
            },
            "a,a",
            "serve M --nics a,a",
            ["Use --nics a: each value once (a is named twice)."],
        ),
    ],
)
def test_a_list_that_names_a_value_twice(record, printed, pasted, expected) -> None:
    assert advise(record, {"device_str": printed}, text=pasted) == expected


@pytest.mark.parametrize(
    ("message", "kind", "printed", "expected"),
    [
        (
            "Watchdog timeout (self.wait_timeout={self.wait_timeout})",
            "log",
            "300",
            [
                "Raise --wait-timeout from 300 to 600, if what it waits for is slow rather than"
                " stuck."
            ],
        ),
        (
            "Timed out after {self.wait_timeout} s",
            "raise",
            "1.5",
            ["Raise --wait-timeout from 1.5 to 3, if what it waits for is slow rather than stuck."],
        ),
        ("Cannot start with {self.wait_timeout}", "raise", "300", []),  # no time ran out
        ("argument --wait-timeout: invalid {self.wait_timeout}", "argparse", "300", []),
        ("Watchdog timeout ({self.wait_timeout})", "log", "0", []),  # nothing to double
    ],
)
def test_a_timeout_that_ran_out_is_raised(message, kind, printed, expected) -> None:
    record = {"flags": ["--wait-timeout"], "errorMessage": message, "kind": kind}
    assert advise(record, {"self.wait_timeout": printed}) == expected


TEMPLATE = {  # a check that a path option names an existing file (records/conditions.py)
    "flags": ["--template"],
    "placeholders": ["template_arg"],
    "triggerScenarios": "Launching when `known(--template)` is false and --template does not"
    " name an existing file.",
}


@pytest.mark.parametrize(
    ("values", "pasted", "expected"),
    [
        (
            {"template_arg": "conf/t.jinja"},
            "",
            [
                "Use --template /absolute/path/to/conf/t.jinja: conf/t.jinja is a relative path,"
                " read from the directory the server starts in, and no file is there."
            ],
        ),
        (
            {"server_args.template": "/srv/t.jinja"},
            "",
            [
                "Make /srv/t.jinja exist where the server runs (inside its container, if it runs"
                " in one): no file is there."
            ],
        ),
        (
            {},
            "serve M --template=tpl/a.j2",
            [
                "Use --template /absolute/path/to/tpl/a.j2: tpl/a.j2 is a relative path, read from"
                " the directory the server starts in, and no file is there."
            ],
        ),
        ({"template_arg": "chatml"}, "", []),  # a name the option also takes, not a path
        ({"template_arg": "</code>[y](javascript:z)/t.j2"}, "", []),  # markup is no path
        ({"other": "conf/t.jinja"}, "", []),  # a value of something else
    ],
)
def test_a_path_the_check_found_nothing_at(values, pasted, expected) -> None:
    assert advise(TEMPLATE, values, text=pasted) == expected


SERVE = {  # a launch that takes the model as the word after the command, not as --model
    "flags": ["--model"],
    "errorMessage": "With `tool serve`, give the model as a positional argument, not --model.",
}


@pytest.mark.parametrize(
    ("record", "pasted", "expected"),
    [
        (
            SERVE,
            "$ tool serve --model org/m-7b --port 1\nValueError: With `tool serve`, give ...",
            ["Give org/m-7b as the word after the command, without --model: tool serve org/m-7b"],
        ),
        (SERVE, "ValueError: With `tool serve`, give the model ...", []),  # no value given
        ({**SERVE, "errorMessage": "No model given."}, "tool serve --model org/m", []),
        (SERVE, "tool serve --model '<b>x</b>'", []),  # markup is no model name
    ],
)
def test_the_word_a_command_takes_instead_of_an_option(record, pasted, expected) -> None:
    rules = AdviceRules(positional=(("--model", "tool serve"),))
    assert advise(record, {}, text=pasted, rules=rules) == expected


def test_the_shipped_profiles_say_which_option_a_command_takes_as_a_word() -> None:
    assert load_profile("vllm").advice.positional == (("--model", "vllm serve"),)
    assert load_profile("sglang").advice.positional == ()


def test_a_size_split_by_another_option_must_divide_it() -> None:
    """`moe_tp_size` is --tp-size // --ep-size (a profile's `computed`): an expert size that
    does not divide the tensor-parallel size is no answer, though the floor would pass."""
    rules = AdviceRules(derived=(("moe_ep_size", "--ep-size"),),
                        computed=(("moe_tp_size", "--tp-size // --ep-size"),))  # fmt: skip
    record = {
        "flags": ["--tp-size", "--ep-size"],
        "placeholders": [
            "moe_intermediate_size",
            "moe_tp_size",
            "self.tp_size",
            "self.moe_ep_size",
        ],
        "triggerScenarios": "Launching when `moe_intermediate_size % moe_tp_size != 0` is true.",
    }
    values = {"moe_intermediate_size": "2048", "moe_tp_size": "6", "self.tp_size": "6",
              "self.moe_ep_size": "1"}  # fmt: skip
    assert advise(record, values, keep=HARDWARE, rules=rules) == [
        "With --tp-size 6, use --ep-size 3 or 6 (not 1).",
        "With --ep-size 1, use --tp-size 4, 2 or 1 (not 6).",
    ]


def test_a_computed_name_may_stand_for_a_derived_one() -> None:
    rules = AdviceRules(derived=(("context_len", "--context-length"),),
                        computed=(("_limit", "context_len"),))  # fmt: skip
    record = {
        "flags": ["--allow-truncate"],
        "placeholders": ["self.context_len", "new_tokens", "input_tokens"],
        "triggerScenarios": "Launching without --allow-truncate, when "
        "`new_tokens + input_tokens >= _limit` is true.",
    }
    values = {"self.context_len": "4096", "new_tokens": "3000", "input_tokens": "1320"}
    assert advise(record, values, rules=rules) == [
        "Use --context-length 4321, 8192 or 16384 (not 4096)."
    ]


def test_a_local_named_after_its_option_is_that_option() -> None:
    record = {
        "flags": ["--task"],
        "placeholders": ["task_option", "supported_tasks"],
        "solutions": ["Change --task so that `--task not in supported_tasks` is false"],
    }
    values = {"task_option": "embedding", "supported_tasks": "{'generate'}"}
    assert advise(record, values) == ["Use --task generate (not embedding)."]


def test_the_records_own_condition_reads_derived_names_as_options() -> None:
    rules = AdviceRules(derived=(("moe_ep_size", "--ep-size"),))
    record = {
        "flags": ["--tp-size"],
        "placeholders": ["self.tp_size", "self.moe_ep_size"],
        "solutions": ["Change --tp-size so that `--tp-size % moe_ep_size != 0` is false"],
    }
    values = {"self.tp_size": "6", "self.moe_ep_size": "4"}
    assert advise(record, values, keep=HARDWARE, rules=rules)[0] == (
        "With --tp-size 6, use --ep-size 3, 6 or 2 (not 4)."
    )


def test_a_length_is_lowered_in_the_proportion_of_the_memory_it_lacks() -> None:
    # What one request of that length needs grows with it: 4.25 of 4.26 GiB fits ~99.7% of
    # the length, not half of it; without the pair, the length is halved.
    record = {
        "flags": ["--max-model-len"],
        "errorMessage": "To serve the model's max seq len ({max_model_len}), ({need} GiB KV cache"
        " is needed, which is larger than the available KV cache memory ({have} GiB). Try"
        " decreasing `max_model_len`.",
    }
    values = {"max_model_len": "100000", "format_gib(needed_memory)": "4.26",
              "format_gib(available_memory)": "4.25"}  # fmt: skip
    assert advise(record, values) == ["Lower --max-model-len from 100000 to 99000."]
    assert advise(record, {"max_model_len": "100000"}) == [
        "Lower --max-model-len from 100000 to 50000."
    ]
