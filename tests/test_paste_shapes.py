"""What users actually paste: argparse errors wrapped by issue titles and chat clients, lists
of several options, argparse's other forms, removed flags with a successor, long messages cut
short, and one check worded differently across releases. Table tests over real catalogs built
from our own fixture repositories (tests/argparse_fixture.py) and fixture records; every text
below is written for these tests.
"""

from __future__ import annotations

import pytest
import synth
from argparse_fixture import ENGINE, SA, build_both, engine_args, make_repo, make_vllm_repo
from kverr.catalog import load_dataset, load_datasets, open_catalog
from kverr.catalog.argparse_answers import History, _successor, program_of
from test_catalog import FLAGS, REVISIONS

# v0.1.0 has --old-flag and --enable-x; v0.2.0 drops --old-flag. The successor test adds a
# release that drops a switch whose work another option of the same words goes on doing, and
# vLLM takes that option too.
SWITCH = '        parser.add_argument("--enable-thinking", action="store_true", help="Think.")\n'
PARSER = (
    '        parser.add_argument("--thinking-parser", type=str, default=None, help="Parser.")\n'
)
# --accel has fixed choices in v0.4.0; v0.5.0 takes any value
ACCEL = '        parser.add_argument("--accel", type=str, choices=["gpu", "cpu"], help="Where.")\n'
FREE_ACCEL = '        parser.add_argument("--accel", type=str, default=None, help="Where.")\n'


def _with(text: str, extra: str) -> str:
    return text.rstrip("\n") + "\n" + extra


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("shapes")
    sg = make_repo(root / "sglang-repo")
    base = (sg.root / SA).read_text(encoding="utf-8")
    sg.commit("add thinking", {SA: _with(base, SWITCH + PARSER + ACCEL)})
    sg.tag("v0.4.0")
    sg.commit("drop the switch", {SA: _with(base, PARSER + FREE_ACCEL)})
    sg.tag("v0.5.0")
    vl = make_vllm_repo(root / "vllm-repo")
    thinking = (
        engine_args()
        .replace(
            "    tensor_parallel_size: int = 1\n",
            "    tensor_parallel_size: int = 1\n    thinking_parser: str | None = None\n",
        )
        .replace(
            "        return parser\n",
            '        parser.add_argument("--thinking-parser", **kwargs["thinking_parser"])\n'
            "        return parser\n",
        )
    )
    vl.commit("thinking parser", {ENGINE: thinking})
    build_both(root, sg, vl)
    load_datasets([root / "sglang", root / "vllm"], root / "both.duckdb")
    with open_catalog(root / "both.duckdb") as c:
        yield c


def _one(cat, text: str):
    matches = cat.explain(text)
    assert len(matches) == 1, [(m.record["id"], m.record["errorMessage"]) for m in matches]
    (m,) = matches
    assert m.argparse is not None, m.record["errorMessage"]
    return m


# (case, pasted text, project, program, sentences the answer must hold)
SHAPES = [
    ("backtick glued to the program", "`launch_server.py: error: unrecognized arguments: --enable-xx",
     "sglang", "launch_server.py", ["did you mean --enable-x"]),
    ("quote glued to the program", "\"sglang: error: argument --tensor-parallel-size/--tp-size: invalid int value: 'two'",
     "sglang", "sglang", ["'two'"]),
    ("issue title before the program", "[Bug]: sglang serve: error: unrecognized arguments: --enable-xx",
     "sglang", "sglang serve", ["did you mean --enable-x"]),
    ("issue title and a quote", "[Usage]: 'vllm: error: unrecognized arguments: --max-num-seq 8",
     "vllm", "vllm", ["did you mean --max-num-seqs"]),
    ("several options, one unknown", "sglang: error: unrecognized arguments: --name x --zzqq-blorp --enable-xx",
     "sglang", "sglang", ["Every SGLang release in this catalog has --name", "No SGLang release in this catalog has --zzqq-blorp.",
                          "did you mean --enable-x"]),
    ("a removed flag of one project, printed by the other's program",
     "vllm: error: unrecognized arguments: --old-flag --max-num-seqs 8",
     "vllm", "vllm", ["No vLLM revision in this catalog has --old-flag", "--max-num-seqs"]),
    ("ambiguous option", "sglang: error: ambiguous option: --enable could match --enable-x, --enable-thinking",
     "sglang", "sglang", ["--enable is no whole option name", "--enable-x, --enable-thinking all do"]),
    ("required argument", "launch_server.py: error: the following arguments are required: --name",
     "sglang", "launch_server.py", ["Add --name VALUE: the parser requires it (SGLang v0.1.0 … v0.5.0)."]),
    ("a required positional", "vllm serve: error: the following arguments are required: model_tag",
     "vllm", "vllm serve", ["Add the model_tag argument: the parser requires it, as a word after the"
                            " command with no option name before it, as in `vllm serve MODEL`."]),
    ("removed switch with a successor", "sglang: error: unrecognized arguments: --enable-thinking",
     "sglang", "sglang", ["--enable-thinking was removed in v0.5.0", "use --thinking-parser NAME instead"]),
    ("another project's switch, whose successor there this one has",
     "vllm: error: unrecognized arguments: --enable-thinking",
     "vllm", "vllm", ["No vLLM revision in this catalog has --enable-thinking.",
                      "--enable-thinking is an option of SGLang (v0.4.0), replaced there by"
                      " --thinking-parser, which vLLM has too: use --thinking-parser NAME instead."]),
    ("another project's option", "sglang: error: unrecognized arguments: --runner pooling",
     "sglang", "sglang", ["No SGLang release in this catalog has --runner.",
                          "--runner is an option of vLLM (", "), not of SGLang."]),
    ("a model path where no positional is taken", "[Usage]: vllm: error: unrecognized arguments: /data/ckpt/tiny-7b",
     "vllm", "vllm", ["/data/ckpt/tiny-7b is no option, and vllm takes no positional argument there",
                      "vLLM is launched as `vllm serve"]),
]  # fmt: skip


@pytest.mark.parametrize("case", [c[0] for c in SHAPES])
def test_paste_shapes(built, case):
    _, text, project, program, sentences = next(c for c in SHAPES if c[0] == case)
    m = _one(built, text)
    assert m.project["name"] == project and m.argparse["program"] == program
    said = " ".join(m.argparse["text"])
    for sentence in sentences:
        assert sentence in said, said


def test_a_value_of_a_release_without_fixed_choices_is_an_upgrade(built):
    m = _one(built, "launch_server.py: error: argument --accel: invalid choice: 'npu'")
    assert m.argparse["text"][0] == (
        "From v0.5.0 on, --accel takes any value (no fixed choices), 'npu' included: upgrade,"
        " or choose a value your release accepts."
    )
    assert m.argparse["example"] is None  # no other value to guess


def test_a_printed_list_says_the_release_has_choices_kverr_may_not_read(built):
    # The user's release printed its choices: a newer declaration without a literal list may
    # take any value or build its list in code, and kverr cannot tell which.
    m = _one(built, "launch_server.py: error: argument --accel: invalid choice: 'npu' (choose"
                    " from 'gpu', 'cpu')")  # fmt: skip
    assert m.argparse["text"][0] == (
        "From v0.5.0 on, --accel declares no fixed list of choices (it takes any value, or"
        " builds the list in code); your release printed its own."
    )
    assert not any("takes any value (no fixed" in t for t in m.argparse["text"])


def test_the_successor_is_offered_as_the_fix(built):
    m = _one(built, "sglang: error: unrecognized arguments: --enable-thinking")
    (row,) = m.argparse["options"]
    assert row["successor"] == "--thinking-parser NAME" and row["removedIn"] == "v0.5.0"
    assert m.argparse["example"] == {
        "before": "--enable-thinking",
        "after": "--thinking-parser NAME",
    }


@pytest.mark.parametrize(
    "text",
    [
        "pip: error: ambiguous option: --enable could match --enable-x, --enable-thinking",
        "error: the following arguments are required: --input-file",  # nothing either knows
        "[Bug]: pip: error: unrecognized arguments: --enable-xx",
        "`git: error: the following arguments are required: --name",
        "train.py: error: unrecognized arguments: /data/ckpt/tiny-7b",  # another program's
        "error: unrecognized arguments: start webui",  # no program: nobody's to answer
    ],
)
def test_near_misses_stay_silent(built, text):
    assert [m for m in built.explain(text) if m.record["kind"] == "argparse"] == []


@pytest.mark.parametrize(
    ("before", "program"),
    [
        ("`launch_server.py: error: ", "launch_server.py"),
        ('"vllm: error: ', "vllm"),
        ("[Bug]: vllm: error: ", "vllm"),
        ("[Bug]: vllm serve: error: ", "vllm serve"),
        ("\u201csglang serve: error: ", "sglang serve"),
        ("Title: `pip: error: ", "pip"),
    ],
)
def test_program_of_a_wrapped_paste(before, program):
    assert program_of(before) == program


# ---------------------------------------------------------------- cut messages

# One check (one function) in two releases' wordings, long enough that a cut shows a small
# share of it, and a different check that shares its opening words.
_FN = "    def _check_context_window(self):\n        raise ValueError(msg)"
OLD_WORDING, NEW_WORDING, OTHER = "c1d0000000000001", "c1d0000000000002", "c1d0000000000003"
WARNED = "c1d0000000000004"  # the newer check's warning when the override is set: same words first
_HEAD = (
    "Requested context window ({window}) is larger than what the checkpoint declares "
    "(position_limit={limit} or tokenizer_limit={tok} in its config file). "
)
_OLD_TAIL = "Outputs past that window are unreliable; lower the window or check the checkpoint."
_NEW_TAIL = (
    "To go past that limit anyway, set KVX_ALLOW_LONG_WINDOW=1, knowing that positions beyond "
    "the trained range produce garbage with rotary embeddings and out-of-range indexing with "
    "learned ones; otherwise pass a smaller --context-window."
)

_WARNED_TAIL = (
    "KVX_ALLOW_LONG_WINDOW is set, so the window is kept; positions beyond the trained range "
    "produce garbage with rotary embeddings and out-of-range indexing with learned ones."
)


def _rec(rid: str, tail: str, *, function: str = _FN, **kind) -> dict:
    message = _HEAD + tail
    pattern = (
        r"Requested context window \((?P<v0>.{0,256}?)\) is larger than what the checkpoint"
        r" declares \(position_limit=(?P<v1>.{0,256}?) or tokenizer_limit=(?P<v2>.{0,256}?)"
        r" in its config file\)\. " + synth.re.escape(tail).replace("\\ ", " ")
    )
    return synth.make_record(
        rid, message, pattern, placeholders=["window", "limit", "tok"],
        flags=["--context-window"], source=function, source_start=99, **kind,
    )  # fmt: skip


@pytest.fixture(scope="module")
def cut_cat(tmp_path_factory):
    other = "    def _check_other_window(self):\n        raise ValueError(msg)"
    records = [
        _rec(OLD_WORDING, _OLD_TAIL),
        _rec(NEW_WORDING, _NEW_TAIL),
        _rec(WARNED, _WARNED_TAIL, kind="log", error_class=None, severity="warning"),
        synth.make_record(
            OTHER,
            "Requested context window is larger than the scheduler budget; raise --budget.",
            source=other,
            source_start=99,
        ),
    ]
    tmp = tmp_path_factory.mktemp("cuts")
    # the old wording in the older release only, the new one in the newer only
    occs = [
        {"id": r["id"], "sha": rev["sha"], "file": r["filePath"], "line": r["lineNumber"]}
        for rev in REVISIONS
        for r in records
        if (r["id"], rev["ord"]) not in ((OLD_WORDING, 1), (NEW_WORDING, 0), (WARNED, 0))
    ]
    ds = synth.write_files(tmp / "ds", records, revisions=REVISIONS, occurrences=occs, flags=FLAGS)
    load_dataset(ds, tmp / "cuts.duckdb")
    with open_catalog(tmp / "cuts.duckdb") as c:
        yield c


FULL_NEW = (
    "ValueError: Requested context window (65536) is larger than what the checkpoint declares "
    "(position_limit=32768 or tokenizer_limit=None in its config file). " + _NEW_TAIL
)

# (case, pasted text, the records answered, best first)
CUTS = [
    ("the whole newer wording", FULL_NEW, [NEW_WORDING]),
    ("cut by an issue title, with an ellipsis", "[Bug]: " + FULL_NEW[12:200] + "...", [NEW_WORDING]),
    ("cut by a chat client, no mark", FULL_NEW[:215], [NEW_WORDING]),
    ("cut before the wordings differ: the check's newest wording", FULL_NEW[:140] + "…",
     [NEW_WORDING]),
    ("cut before the checks differ: no guess", "ValueError: Requested context window...", []),
    ("cut where a raise and its warning agree: the exception named is the raise's",
     FULL_NEW[:147] + "...", [NEW_WORDING]),
    ("cut where a raise and its warning agree, no exception named: no guess",
     FULL_NEW[12:147] + "...", []),
]  # fmt: skip


@pytest.mark.parametrize("case", [c[0] for c in CUTS])
def test_cut_messages(cut_cat, case):
    _, text, expected = next(c for c in CUTS if c[0] == case)
    assert [m.record["id"] for m in cut_cat.explain(text)] == expected


# A message whose first sentence is a small share of it: quoted alone (a README, a chat), that
# sentence is what the user saw of it.
SENTENCES = "c1d0000000000005"
SHORT_FIRST = "c1d0000000000006"
ENDS_IN_VALUE = "c1d0000000000007"
_LONG_TAIL = (
    "This may give wrong outputs or device errors on some checkpoints. Note that the derived "
    "length can differ from the position limit in the model's config file. To go past it "
    "anyway, set KVX_ALLOW_LONG_WINDOW=1 and check the outputs."
)


@pytest.fixture(scope="module")
def sentence_cat(tmp_path_factory):
    records = [
        synth.make_record(
            SENTENCES,
            "Chosen window ({window}) is over the derived window ({derived}). " + _LONG_TAIL,
            r"Chosen window \((?P<v0>.{0,256}?)\) is over the derived window \((?P<v1>.{0,256}?)"
            r"\)\. " + synth.re.escape(_LONG_TAIL).replace("\\ ", " "),
            placeholders=["window", "derived"],
        ),
        synth.make_record(
            SHORT_FIRST,
            "Odd size ({n}). " + _LONG_TAIL,
            r"Odd size \((?P<v0>.{0,256}?)\)\. " + synth.re.escape(_LONG_TAIL).replace("\\ ", " "),
            placeholders=["n"],
        ),
    ]
    records.append(
        synth.make_record(
            ENDS_IN_VALUE,
            "The tile backend currently does not support {what}. " + _LONG_TAIL,
            r"The tile backend currently does not support (?P<v0>.{0,256}?)\. "
            + synth.re.escape(_LONG_TAIL).replace("\\ ", " "),
            placeholders=["what"],
        )
    )
    tmp = tmp_path_factory.mktemp("sentences")
    ds = synth.write_files(tmp / "ds", records, revisions=REVISIONS, flags=FLAGS)
    load_dataset(ds, tmp / "s.duckdb")
    with open_catalog(tmp / "s.duckdb") as c:
        yield c


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Chosen window (65536) is over the derived window (32768)", [SENTENCES]),
        ("Chosen window (65536) is over the derived window (32768).", [SENTENCES]),
        ("Chosen window (65536) is over the derived", []),  # inside it: too little to be sure
        ("Odd size (3)", []),  # a first sentence this short says too little
        # a sentence that ends with a value is a whole message of its own as well
        ("The tile backend currently does not support sparse heads.", []),
        ("Chosen window (65536) is over the derived window (32768). This may give", [SENTENCES]),
    ],
)
def test_a_long_message_quoted_up_to_the_end_of_its_first_sentence(sentence_cat, text, expected):
    assert [m.record["id"] for m in sentence_cat.explain(text)] == expected


def test_a_message_without_its_final_period_is_read_with_its_values(cut_cat):
    """Titles and chat drop a message's final period: the message is still whole, and its
    values are read as from the whole line."""
    (m,) = cut_cat.explain(FULL_NEW.removesuffix("."))
    assert m.record["id"] == NEW_WORDING
    assert m.values == {"window": "65536", "limit": "32768", "tok": "None"}


# One raise printing either of two texts, the second the first plus the value (`msg` assigned
# in branches): both records are alive in both releases.
SHORT, LONG = "c1d0000000000005", "c1d0000000000006"
_SHORT_MESSAGE = "Not enough cache memory. Please try to increase --cache-fraction."


@pytest.fixture(scope="module")
def wordings_cat(tmp_path_factory):
    fn = "    def _size_the_cache(self):\n        raise RuntimeError(msg)"
    long_pattern = (
        synth.re.escape(_SHORT_MESSAGE).replace("\\ ", " ").replace("\\-", "-")
        + r" Current value: cache_fraction=(?P<v0>.{0,256})"
    )
    records = [
        synth.make_record(SHORT, _SHORT_MESSAGE, source=fn, source_start=99),
        synth.make_record(
            LONG, _SHORT_MESSAGE + " Current value: cache_fraction={self.cache_fraction}",
            long_pattern, placeholders=["self.cache_fraction"], source=fn, source_start=99,
        ),
    ]  # fmt: skip
    tmp = tmp_path_factory.mktemp("wordings")
    occs = [
        {"id": r["id"], "sha": rev["sha"], "file": r["filePath"], "line": r["lineNumber"]}
        for rev in REVISIONS
        for r in records
    ]
    ds = synth.write_files(tmp / "ds", records, revisions=REVISIONS, occurrences=occs, flags=FLAGS)
    load_dataset(ds, tmp / "wordings.duckdb")
    with open_catalog(tmp / "wordings.duckdb") as c:
        yield c


# (case, pasted text, the record answered and how)
WORDINGS = [
    ("the shorter wording without its period", "RuntimeError: " + _SHORT_MESSAGE[:-1],
     (SHORT, "partial")),
    ("the longer wording whole", _SHORT_MESSAGE + " Current value: cache_fraction=0.8",
     (LONG, "pattern")),
]  # fmt: skip


@pytest.mark.parametrize("case", [c[0] for c in WORDINGS])
def test_a_whole_message_is_not_a_cut_of_its_longer_wording(wordings_cat, case):
    _, text, expected = next(c for c in WORDINGS if c[0] == case)
    assert [(m.record["id"], m.how) for m in wordings_cat.explain(text)] == [expected]


SUCCESSORS = [
    # (options of the revision that dropped it, the successor): a word many options have
    # says less than one only the successor has
    ({"--spec-config", "--model", "--model-impl", "--served-model-name"}, "--spec-config"),
    ({"--spec-config", "--spec-draft"}, None),  # two share as much: no guess
    ({"--reasoning-parser", "--port"}, "--reasoning-parser"),
]


@pytest.mark.parametrize("there,successor", SUCCESSORS)
def test_a_successor_shares_the_removed_options_rarest_words(there, successor):
    hist = History([{"ord": 0, "sha": "a" * 40}, {"ord": 1, "sha": "b" * 40}])
    hist.runs = {"--spec-model": [[0, 0]], "--enable-reasoning": [[0, 0]],
                 **{o: [[0, 1]] for o in there}}  # fmt: skip
    option = "--enable-reasoning" if "--reasoning-parser" in there else "--spec-model"
    assert _successor(hist, option, 1) == successor


def test_the_successor_a_removed_options_help_named_comes_first():
    """ "--enable-fast-mla is deprecated. Please use '--attention-backend fast' instead.": the
    history keeps the option its help named (pipeline/history.flag_facts), and the answer
    offers it when the revision that dropped the option has it, before any shared word."""
    from kverr.extractor import extract_files
    from kverr.pipeline.history import flag_facts

    from kverr.ftypes import SourceFile

    module = """\
import argparse


def add_cli_args(parser: argparse.ArgumentParser):
    parser.add_argument(
        "--enable-fast-mla",
        action="store_true",
        help="--enable-fast-mla is deprecated. Please use '--attention-backend fast' instead.",
    )
    parser.add_argument("--attention-backend", type=str, help="the backend")
    parser.add_argument("--fast-mla-ragged", action="store_true", help="ragged prefill")
"""
    exts = extract_files([SourceFile("pkg/server_args.py", module, "c" * 40)])
    facts = {f["name"]: f for f in flag_facts(exts)}
    assert facts["--enable-fast-mla"]["successor"] == "--attention-backend fast"
    assert "successor" not in facts["--attention-backend"]
    row = ["--enable-fast-mla", 0, 0, None, None, None, "store_true", None,
           ["--enable-fast-mla"], "pkg/server_args.py", "--attention-backend fast"]  # fmt: skip
    hist = History([{"ord": 0, "sha": "a" * 40}, {"ord": 1, "sha": "b" * 40}])
    hist.declared = {"--enable-fast-mla": [row]}
    hist.runs = {"--enable-fast-mla": [[0, 0]], "--attention-backend": [[0, 1]],
                 "--fast-mla-ragged": [[0, 1]]}  # fmt: skip
    # (the shared words alone would name --fast-mla-ragged)
    assert _successor(hist, "--enable-fast-mla", 1) == "--attention-backend fast"
    # a help's typo of a choice ("pytroch"): the choice it meant
    backend = ["--attention-backend", 0, 1, ["fast", "slow"], "str", None, None, None,
               ["--attention-backend"], "pkg/server_args.py", None]  # fmt: skip
    typo = History(hist.revisions, runs=hist.runs)
    typo.declared = {"--enable-fast-mla": [[*row[:10], "--attention-backend fsat"]],
                     "--attention-backend": [backend]}  # fmt: skip
    assert _successor(typo, "--enable-fast-mla", 1) == "--attention-backend fast"
    hist.runs["--attention-backend"] = [[0, 0]]  # gone too: the words decide again
    assert _successor(hist, "--enable-fast-mla", 1) == "--fast-mla-ragged"
