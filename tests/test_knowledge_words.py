"""Conditions -> words (records/knowledge/words.py): triggerScenarios, commonSituations."""

from __future__ import annotations

import pytest
from test_records_knowledge import FLAGS_ONLY, PROBES, _by_message, _records


def test_flag_help_gives_common_situations_and_choices():
    src = (
        FLAGS_ONLY
        + """
def add_cli_args(parser):
    parser.add_argument("--backend", choices=["a", "b", "c"], default="c", help="Kernel family. More text.")
    parser.add_argument("--enable-fast", action="store_true", help="Pin pages for speed.")
"""
    )
    rec = _by_message(_records(src), "does not support --backend")
    assert rec["commonSituations"] == (
        "Seen when launching with --enable-fast (pin pages for speed) and --backend (kernel family)."
    )
    assert "declared choices: a, b, c" in rec["solutions"][0]
    assert "Only pass declared values to --backend: a, b, c" in rec["preventionTips"]


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
            "Make sure fastlib is installed",
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
    ("need ROCm", "documentation", "They are written in HIP assembly only."),
    ("need ROCm", "solutions", ["Remove --enable-turbo", "Run on ROCm"]),
    ("for this family", "backgroundTag", "auto-adjusted"),
    (
        "for this family",
        "triggerScenarios",
        "Launching a model such as AlphaForCausalLM, BetaForCausalLM or 2 other architectures.",
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
    ("does not support the triton", "documentation", "Its first layer has no attention."),
    ("fa3 as attention backend", "backgroundTag", "auto-adjusted"),
    ("fa3 as attention backend", "solutions", ["Set --attention-backend"]),
    (
        "fa3 as attention backend",
        "commonSituations",
        "Seen when launching an EtaForCausalLM model without --attention-backend (choose the kernels for attention layers).",
    ),
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
