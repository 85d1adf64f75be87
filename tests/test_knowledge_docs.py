"""The project's own documentation in the knowledge fields (records/knowledge/docs.py): what
a flag is, the rules the docs state, how the docs and tests launch it, the "Learn more" page.
Fixtures are pages, tests and a server-args module written here for a made-up server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kverr.extractor import extract_file
from kverr.records import build_records
from kverr.records.knowledge import docs as D
from kverr.records.knowledge import introduced
from test_records_knowledge import REV, _by_message
from test_sources import Git

from kverr import pipeline
from kverr.ftypes import DocLaunch, Docs, FlagDecl, SourceFile

SA = "python/sglang/srt/server_args.py"
ARGS_PAGE = "docs/advanced_features/server_arguments.md"
FEATURE_PAGE = "docs/advanced_features/dp_attention.md"
TEST_FILE = "test/test_dp.py"
MARKERS = ("sglang.launch_server",)

SERVER_ARGS = """
from dataclasses import dataclass


@dataclass
class ServerArgs:
    tp_size: int = 1
    dp_size: int = 1
    enable_dp_attention: bool = False
    max_requests: int = 8

    def check(self):
        if self.enable_dp_attention:
            assert self.tp_size % self.dp_size == 0
        if self.max_requests <= 0:
            raise ValueError("--max-requests must be positive")


def add_cli_args(parser):
    parser.add_argument("--tp-size", "--tp", type=int, default=1, help="Tensor parallel ranks.")
    parser.add_argument("--dp-size", "--dp", type=int, default=1, help="Data parallel ranks.")
    parser.add_argument("--enable-dp-attention", action="store_true", help="DP attention.")
    parser.add_argument("--max-requests", type=int, default=8, help="Requests at once.")
"""

ARGS = """# Server arguments

## Parallelism
| Argument | Description | Defaults | Options |
| --- | --- | --- | --- |
| `--tp-size`<br>`--tp` | The tensor parallelism size. | `1` | Type: int |
| `--dp-size`<br>`--dp` | The data parallelism size. | `1` | Type: int |
| `--enable-dp-attention` | Runs attention data-parallel and the FFN tensor-parallel. The tp size must be a multiple of the dp size. | `False` | bool flag |

## Scheduling
| `--max-requests` | How many requests run at once (`<n>` of them). | `8` | Type: int |

## Sparse decoding
| Argument | Type / Default | Description |
| --- | --- | --- |
| `--enable-sparse` | flag; default: disabled | Decode with sparse attention. |
"""

FEATURE = """# Data-parallel attention

DP attention splits the attention of each layer over data-parallel ranks with `--enable-dp-attention`.
Set `--dp-size` together with `--enable-dp-attention`.
Only models with MLA attention gain from `--enable-dp-attention` today.

```bash
python -m sglang.launch_server --model-path acme/Falcon-7B-Instruct \\
  --tp 4 --dp 2 --enable-dp-attention
```
"""

TEST = """
def test_dp_attention():
    other_args = ["--tp", "4", "--dp", "2", "--enable-dp-attention", "--max-requests", "64"]
    run(other_args)
"""


def _docs(args: str = ARGS) -> Docs:
    files = (
        D.read_file(ARGS_PAGE, args, MARKERS, page=True),
        D.read_file(FEATURE_PAGE, FEATURE, MARKERS, page=True),
        D.read_file(TEST_FILE, TEST, MARKERS),
    )
    return Docs(files, url="https://github.com/acme/engine/blob/SHA/{path}#{anchor}")


def _records(docs: Docs | None) -> list[dict]:
    fx = extract_file(SourceFile(path=SA, text=SERVER_ARGS, blob="0" * 40))
    return build_records([fx], REV, docs=docs)


def _dp_record(recs: list[dict]) -> dict:
    (rec,) = [r for r in recs if r["kind"] == "assert"]
    return rec


def test_a_table_row_prose_and_launches_are_read_per_file():
    page = D.read_file(ARGS_PAGE, ARGS, MARKERS, page=True)
    rows = {n.flags[0]: n for n in page.notes if n.kind == "table"}
    assert rows["--tp-size"].flags == ("--tp-size", "--tp")
    assert rows["--tp-size"].anchor == "parallelism"
    # a placeholder in angle brackets is text, not a tag to strip
    assert "`<n>`" in rows["--max-requests"].text
    # the column headed "Description" describes, wherever the table puts it
    assert rows["--enable-sparse"].text == "Decode with sparse attention."
    feature = D.read_file(FEATURE_PAGE, FEATURE, MARKERS, page=True)
    (launch,) = feature.launches
    assert launch.args == ("--model-path=acme/Falcon-7B-Instruct", "--tp=4", "--dp=2",
                           "--enable-dp-attention")  # fmt: skip
    assert launch.model == "Falcon"
    (test_launch,) = D.read_file(TEST_FILE, TEST, MARKERS).launches
    assert "--max-requests=64" in test_launch.args
    # a launch file is no page: a Markdown file only for its launches reads no notes
    assert D.read_file(FEATURE_PAGE, FEATURE, MARKERS).notes == ()


PY_LAUNCHES = """
MODEL = "acme/Falcon-7B-Instruct"


def test_offline(runner, tmp_path):
    llm = Engine(model=MODEL, tp_size=2, enable_dp_attention=True, chunked=False,
                 draft={"method": "ngram", "steps": 3}, seed=None, path=tmp_path)
    with runner("acme/Olmo-2-7B", max_requests=8) as r:
        r.generate([])
    Other(tp_size=8)
"""


def test_a_tests_python_launches_read_their_keywords_as_options():
    launches = D.read_file("test/test_offline.py", PY_LAUNCHES, MARKERS,
                           calls=("Engine", "runner")).launches  # fmt: skip
    assert [(la.args, la.model) for la in launches] == [
        (("--tp-size=2", "--enable-dp-attention", "--no-chunked",
          '--draft={"method": "ngram", "steps": 3}'), "Falcon"),
        (("--max-requests=8",), "Olmo-2"),
    ]  # fmt: skip
    # a keyword whose value the file computes (`seed=None`, a fixture) says nothing; no
    # launch without the calls the profile names
    assert D.read_file("test/test_offline.py", PY_LAUNCHES, MARKERS).launches == ()
    assert (
        D.read_file("test/broken.py", "Engine(tp_size=(", MARKERS, calls=("Engine",)).launches == ()
    )


def test_the_meaning_says_what_the_feature_is_and_why_from_the_docs():
    rec = _dp_record(_records(_docs()))
    assert rec["meaning"] == {
        "what": "--enable-dp-attention: runs attention data-parallel and the FFN tensor-parallel.",
        "why": "The tp size must be a multiple of the dp size.",
    }
    assert rec["documentation"] == " ".join(rec["meaning"].values())
    # a page about the feature (three sentences name it, its file name shares its words)
    assert rec["learnMore"] == f"https://github.com/acme/engine/blob/SHA/{FEATURE_PAGE}"
    assert rec["preventionTips"] == [
        "Keep --tp-size a multiple of --dp-size when --enable-dp-attention is set"
    ]


def test_a_docs_row_of_only_type_and_default_leaves_the_word_to_the_help():
    (row,) = [line for line in ARGS.splitlines() if line.startswith("| `--enable-dp-attention`")]
    args = ARGS.replace(row, "| `--enable-dp-attention` | flag; default: disabled | | |")
    rec = _dp_record(_records(_docs(args)))
    assert rec["meaning"]["what"] == "--enable-dp-attention: DP attention."


SITUATIONS = """
import logging
from dataclasses import dataclass

logger = logging.getLogger(__name__)


@dataclass
class ServerArgs:
    tp_size: int = 1
    dp_size: int = 1
    enable_dp_attention: bool = False
    disable_radix_cache: bool = False
    chunked_prefill_size: int = 8192
    kernel: str = None
    kernel_mode: str = None
    bind_nodes: list = None
    split_backend: str = "mp"
    split_vision: bool = False

    def __post_init__(self):
        if self.chunked_prefill_size <= 0:
            self.chunked_prefill_size = None  # (what the check reads is this, not the launch's)
        self.check_server_args()

    def check_server_args(self):
        if self.enable_dp_attention:
            assert self.tp_size % self.dp_size == 0, "--tp-size must split into --dp-size groups"
        if self.disable_radix_cache and self.chunked_prefill_size is not None:
            logger.warning("Chunked prefill without the radix cache is experimental.")
        if self.kernel is None:
            logger.info("No kernel given; the engine picks one.")
        if self.kernel_mode != "fast":
            logger.info("The kernels run their careful path.")
        if self.enable_dp_attention and self.dp_size < 2:
            raise ValueError("DP attention needs two data ranks")
        if getattr(self.hf_config, "long_context", None) is not None:
            if self.kernel != "chunked":
                raise ValueError("Long-context models need the chunked kernel")
        if getattr(self.hf_config, "long_window", None) is not None and not self.enable_dp_attention:
            raise ValueError("Long windows need the eager path: pass --enable-dp-attention")
        if getattr(self.hf_config, "long_window", None) is not None:
            if self.kernel != "chunked":
                logger.warning("Long windows run slower without the chunked kernel.")
        if self.enable_dp_attention and self.dp_size > 8 and self.probe():
            raise ValueError("Too many data ranks for this probe")
        if self.enable_dp_attention and not envs.ACME_FAST_SPLIT.get():
            logger.info("Splitting attention the slow way.")
        if self.enable_dp_attention:
            try:
                wait_port_available(self.port)
            except ValueError:
                logger.warning("The rank port is taken.")
        if self.tp_size < self.dp_size:
            logger.warning("Fewer tensor ranks than data ranks.")
        if not self.disable_radix_cache and self.dp_size > self.tp_size + 1:
            logger.warning("Data ranks share one prefix cache.")
        if self.split_backend == "ray":
            logger.info("Splitting with ray.")
        else:
            assert self.split_backend == "mp", "split_backend can only be ray or mp"
        model_arch = self.architectures()[0]
        if self.split_vision and model_arch not in ["AlphaVLForCausalLM", "BetaForCausalLM"]:
            raise ValueError(f"Model type {model_arch} cannot split its vision tower.")
        if self.bind_nodes is None:
            return
        if not self.bind_nodes:
            raise ValueError("bind_nodes must not be empty.")


def add_cli_args(parser):
    parser.add_argument("--tp-size", type=int, default=1, help="Tensor parallel ranks.")
    parser.add_argument("--dp-size", type=int, default=1, help="Data parallel ranks.")
    parser.add_argument("--enable-dp-attention", action="store_true", help="DP attention.")
    parser.add_argument("--disable-radix-cache", action="store_true", help="No prefix cache.")
    parser.add_argument("--chunked-prefill-size", type=int, default=8192, help="Chunk size.")
    parser.add_argument("--kernel", type=str, default=None, help="The kernel family.")
    parser.add_argument("--kernel-mode", type=str, default=None, help="The kernel mode.")
    parser.add_argument("--bind-nodes", type=int, nargs="+", help="A node per GPU.")
    parser.add_argument("--split-backend", type=str, default="mp", help="ray or mp.")
    parser.add_argument("--split-vision", action="store_true", help="Split the vision tower.")
"""

LAUNCHES = """
def test_uneven_split():
    run(["--tp", "3", "--dp", "2", "--enable-dp-attention"])


def test_even_split():
    run(["--tp", "4", "--dp", "2", "--enable-dp-attention"])


def test_odd_split():
    pass
    # (commented out: it runs nowhere, so it hits nothing)
    # run(["--tp", "5", "--dp", "2", "--enable-dp-attention"])


def test_long_context():
    run(["--model-path", "org/LongCtx-7B", "--kernel", "chunked"])


def test_no_radix_cache():
    run(["--disable-radix-cache"])


def test_no_radix_cache_unchunked():
    run(["--disable-radix-cache", "--chunked-prefill-size", "-1"])


def test_turbo_kernels():
    run(["--kernel-mode", "turbo"])


def test_sizes_from_the_environment():
    run(["--tp", "$NUM_GPUS", "--dp", "$REPLICAS"])


def test_bound_nodes():
    run(["--bind-nodes", "0", "0", "1", "1"])


def test_split_vision():
    run(["--model-path", "org/AlphaVL-7B", "--split-vision"])


def test_split_vision_of_another_model():
    run(["--model-path", "org/Gamma-7B", "--split-vision"])


def test_split_vision_of_some_model():
    run(["--split-vision"])
"""

SITUATION_CASES = [
    # arithmetic over the launch's own values: 3 % 2 != 0 hits, 4 % 2 passes; the launches
    # write --tp and --dp, which argparse reads as the one option each abbreviates
    ("split into", "In this release's docs and tests, one launch hits it (test/test_launches.py)."),
    # the default gives the rest of the check (as the phase before it leaves the value), and
    # the launch that leaves it so hits it; -1 becomes None on the way and does not
    (
        "radix cache is experimental",
        "Any launch with --disable-radix-cache hits it: --chunked-prefill-size is 8192 by"
        " default. In this release's docs and tests, one launch hits it (test/test_launches.py).",
    ),
    # a None default is what the code may pick before the check: no evidence either way
    ("engine picks one", ""),
    # a condition almost every launch meets ("other than fast") counts no launch: nothing
    # in it says the launch chose it
    ("careful path", ""),
    # a variable the environment leaves unset is a default too
    (
        "the slow way",
        "Any launch with --enable-dp-attention hits it: ACME_FAST_SPLIT is not enabled by"
        " default. In this release's docs and tests, 2 launches hit it (test/test_launches.py),"
        " most often with --dp-size and --tp-size.",
    ),
    # no launch hits it, but two make the choice it needs (--enable-dp-attention) and give
    # what it asks for: the deployments of the feature, and what they set besides
    (
        "needs two data ranks",
        "Any launch with --enable-dp-attention hits it: --dp-size is 1 by default."
        " In this release's docs and tests, 2 launches run with --enable-dp-attention and"
        " --dp-size >= 2, as this check asks (test/test_launches.py), most often with --tp-size.",
    ),
    # a comparison of two options is a clause of its own, beside the flags a launch gives
    (
        "share one prefix cache",
        "Any launch when --dp-size is above --tp-size plus 1 hits it: --disable-radix-cache is off"
        " by default.",
    ),
    # what no launch can be read for (the model's config) and what the check asks of it: the
    # one launch that gives it says whose deployment it is
    (
        "need the chunked kernel",
        "In this release's docs and tests, one launch runs with --kernel=chunked, as this check"
        " asks (test/test_launches.py), serving LongCtx.",
    ),
    # a switch many launches turn on says nothing of which model's config asks for it
    ("Long windows need the eager path", ""),
    # a notice asks for nothing: the launches that give what it tests against are no evidence
    ("Long windows run slower", ""),
    # a condition on no option (`self.probe()`) may rule every such launch out: none is named
    ("for this probe", ""),
    # an except handler's: a port taken at run time fires it, not the launch's words
    ("rank port is taken", ""),
    # what a shell variable holds is not on the page ("$NUM_GPUS" < "$REPLICAS" as text)
    ("Fewer tensor ranks", ""),
    # a list option's launch value is several words: its first ("0") is not what it holds
    ("must not be empty", ""),
    # the default that passes the way in (mp is not ray) is the value the launch must change
    ("can only be ray or mp", ""),
    # "a model other than AlphaVL or Beta": a launch that names another model, not one
    # serving AlphaVL, nor one that names none
    (
        "cannot split its vision tower",
        "In this release's docs and tests, one launch hits it (test/test_launches.py), serving Gamma.",
    ),
]


@pytest.mark.parametrize(("words", "expected"), SITUATION_CASES)
def test_common_situations_are_the_launches_that_hit_the_check(words, expected):
    docs = Docs((D.read_file("test/test_launches.py", LAUNCHES, MARKERS),))
    fx = extract_file(SourceFile(path=SA, text=SITUATIONS, blob="0" * 40))
    assert _by_message(build_records([fx], REV, docs=docs), words)["commonSituations"] == expected
    # without docs there is no launch to count; the defaults alone still speak
    alone = _by_message(build_records([fx], REV), words)["commonSituations"]
    assert alone == expected.partition(" In this release")[0].partition("In this release")[0]


def test_a_flag_the_docs_cover_only_in_a_table_links_its_section():
    rec = _by_message(_records(_docs()), "--max-requests must be positive")
    assert rec["learnMore"] == f"https://github.com/acme/engine/blob/SHA/{ARGS_PAGE}#scheduling"
    # a rule sentence about another subject is no why ("Only models with MLA ... gain")
    assert "MLA" not in rec["documentation"]


def test_a_fix_takes_the_value_deployments_use_not_the_boundary():
    src = SERVER_ARGS.replace("max_requests: int = 8", "max_requests: int = None").replace(
        'default=8, help="Requests at once."', 'help="Requests at once."'
    )
    fx = extract_file(SourceFile(path=SA, text=src, blob="0" * 40))
    (rec,) = [r for r in build_records([fx], REV, docs=_docs()) if "positive" in r["errorMessage"]]
    after = rec["exampleFix"].splitlines()[3]
    assert after.endswith("--max-requests=64")  # the test's launch, not `> 0` -> 1
    # the parser leaves it at None: the check tests that first, so it never raises TypeError
    assert "args.max_requests is not None" in rec["validationCode"]


def test_config_field_docstrings_say_what_an_option_is():
    module = 'class CacheConfig:\n    block_size: int = 16\n    """Tokens per KV block."""\n'
    docs = Docs((D.read_file("engine/config/cache.py", module, page=True),), url="")
    decl = FlagDecl("--block-size", "block_size", default="CacheConfig.block_size")
    note = D.about("--block-size", {"--block-size": decl}, docs)
    assert note is not None and note.text == "Tokens per KV block."
    # a test file is read for launches only: its classes document nothing
    assert D.read_file("tests/t.py", module).notes == ()
    # and a config module for its fields only: its checks' messages quote options, as in
    # "--fast-prefill requires ...", which no one launches
    checked = (
        module + '\n    def check(self):\n        raise ValueError("--fast-prefill requires it")\n'
    )
    assert D.read_file("tests/t.py", checked).launches
    config = D.read_file("engine/config/cache.py", checked, page=True, shows=False)
    assert config.notes and config.launches == ()


def test_the_introducing_commit_is_the_why_only_when_its_body_speaks_to_the_check():
    rec = {"errorMessage": "--kv-dtype fp4 requires --enable-kv4", "flags": ["--kv-dtype"],
           "meaning": {"what": "--kv-dtype: the cache dtype."}, "documentation": "x"}  # fmt: skip
    about = {"sha": "a" * 40, "subject": "Add the kv4 check (#12)",
             "body": "FP4 caches need the kv4 kernels, so a launch asking for fp4 must enable them."}  # fmt: skip
    got = introduced(rec, about)
    assert got["meaning"]["why"].startswith("The change that added this check (#12) explains:")
    assert got["documentation"].startswith("--kv-dtype: the cache dtype. The change")
    unrelated = {**about, "body": "Refactor the launcher so its logging setup reads one file."}
    assert introduced(rec, unrelated) is rec
    assert introduced(rec, {**about, "body": ""}) is rec  # a subject alone is no meaning


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> dict:
    g = Git(tmp_path_factory.mktemp("docs") / "repo")
    files = {SA: SERVER_ARGS, ARGS_PAGE: ARGS, FEATURE_PAGE: FEATURE, TEST_FILE: TEST}
    first = g.commit("Server and its docs (#1)", files)
    edited = ARGS.replace("The tp size must be a multiple", "The tp size has to be a multiple")
    second = g.commit("Docs: reword (#2)", {ARGS_PAGE: edited})
    return {"git": g, "first": first, "second": second, "tmp": tmp_path_factory.mktemp("out")}


def _build(repo: dict, rev: str, name: str) -> dict:
    out = repo["tmp"] / name
    pipeline.build(pipeline.BuildSpec(out=out, source=pipeline.GitSource(repo["git"].root, revs=[rev]), repo_name="acme/engine", cache=repo["tmp"] / "cache.sqlite"))  # fmt: skip
    lines = (out / "records.jsonl").read_text(encoding="utf-8").splitlines()
    recs = [json.loads(x)["record"] for x in lines]
    return _dp_record([r for r in recs if r["kind"] != "argparse"])


def test_a_build_reads_the_docs_of_the_revision_and_links_that_revision(repo: dict) -> None:
    rec = _build(repo, repo["first"], "first")
    assert rec["learnMore"] == (
        f"https://github.com/acme/engine/blob/{repo['first']}/{FEATURE_PAGE}"
    )
    assert rec["meaning"]["why"] == "The tp size must be a multiple of the dp size."
    # the same code, docs edited, one shared cache: the record follows the docs
    again = _build(repo, repo["second"], "second")
    assert again["meaning"]["why"] == "The tp size has to be a multiple of the dp size."
    assert repo["second"] in again["learnMore"]


def test_shipped_datasets_hold_no_template_text_or_stock_sentences() -> None:
    """Every trigger, solution and prose field of the shipped datasets reads as words: no
    `{self.x}` placeholder, no `self.`, no empty parentheses; no sentence on more than 5% of
    a dataset's records."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    import knowledge_stats as ks

    data = Path(__file__).resolve().parents[1] / "data"
    for records in sorted(data.glob("*/records.jsonl")):
        recs = ks.load(records.parent)
        if not any("meaning" in r for r in recs):
            pytest.skip(f"{records} predates the meaning field: regenerate the shipped datasets")
        leaks = ks.leaking(recs)
        assert not leaks, f"{records}: {len(leaks)} template leaks, e.g. {leaks[0]}"
        stock = ks.stock(recs)
        assert not stock, f"{records}: stock sentences {stock[:3]}"


def test_the_files_of_the_launches_are_named_up_to_three():
    found = [DocLaunch(("--x",), "", f"t/{name}.py") for name in "abcd"]
    assert "(t/a.py, t/b.py, t/c.py)." in D.met_by(
        found[:3], {"--x"}, {}, Docs(()), ("hits", "hit"), " it"
    )
    assert "(t/a.py, t/b.py and 2 more files)." in D.met_by(
        found, {"--x"}, {}, Docs(()), ("hits", "hit"), " it"
    )


PAGED = """# Paged attention

- The paged backend only supports a `--page-size` of 16, 32 or 64 with the MHA kernels.
- For paged MHA backends with `--page-size > 1` and `--eagle-topk > 1`, only the classic backend is supported.
- To keep memory aligned, the chunk is cut down to a multiple of max(`--page-size`, 64).
- Each entry of `--page-size` must use `numactl --physcpubind` syntax for MHA kernels.
"""


@pytest.mark.parametrize(
    ("sentence", "kept"),
    [
        ("The paged backend only supports", True),
        # names an option the check does not read: the rule of another check
        ("--eagle-topk > 1", False),
        # "to", "of" and "64" are all it shares with the check's words: no content
        ("the chunk is cut down", False),
        # another tool's option is no option of the project's
        ("numactl --physcpubind", True),
    ],
)
def test_a_docs_rule_is_the_why_only_when_it_speaks_to_the_checks_own_options(sentence, kept):
    decls = {
        f: FlagDecl(f, f.lstrip("-").replace("-", "_"), type="int")
        for f in ("--page-size", "--attention-backend", "--eagle-topk")
    }
    docs = Docs((D.read_file("docs/paged.md", PAGED, MARKERS, page=True),), url="")
    message = "MHA kernels only support page_size of 16, 32 or 64, changing page_size to 64"
    words = D.content_words(message + " --page-size --attention-backend")
    topic = D.content_words(message) - D.content_words("--page-size")
    notes = D.rules(
        ["--page-size"],
        words,
        decls,
        docs,
        within=["--page-size", "--attention-backend"],
        ties=topic,
    )
    assert any(sentence in n.text for n in notes) is kept


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("entries", {"entry"}),  # a plural in -ies is its -y word
        ("batches of tokens", {"batche", "token"}),
        ("set it to one of 16 or 32", {"one", "16", "32"}),  # function words are no content
    ],
)
def test_content_words(text, words):
    assert D.content_words(text) == words


def test_a_field_docstring_listing_values_says_what_the_option_is_and_no_rule():
    module = (
        "class CacheConfig:\n"
        "    cache_mode: str = 'none'\n"
        '    """The cache strategy for state layers.\n'
        '    - "none": set when prefix caching is disabled.\n'
        '    - "all": cache the state of all tokens at each block boundary.\n'
        "    This is the default behavior when prefix caching is enabled for state layers.\n"
        '    - "align": only cache the state of the last token of each block step."""\n'
    )
    docs = Docs((D.read_file("engine/config/cache.py", module, page=True),), url="")
    decls = {
        "--cache-mode": FlagDecl("--cache-mode", "cache_mode", default="CacheConfig.cache_mode")
    }
    note = D.about("--cache-mode", decls, docs)
    assert note is not None and D.sentences(note.text)[0] == "The cache strategy for state layers."
    # a list opened by a colon ends the sentence that opens it
    assert D.sentences("The mode of the graph: - NONE, no graph. - FULL.") == [
        "The mode of the graph:",
        "- NONE, no graph.",
        "- FULL.",
    ]
    # one value's description, or a sentence about the one before it, is no rule of a check
    words = D.content_words("--cache-mode align needs the state of each block step cached")
    assert D.rules(["--cache-mode"], words, decls, docs, ties=words) == []


def test_a_table_without_a_description_column_describes_no_option():
    matrix = (
        "## Hierarchical cache\n\n"
        "| Argument | Defaults | Options | A2 | A3 |\n"
        "|---|---|---|---|---|\n"
        "| `--cache-layout` | `layer_first` | `page_first` | yes | yes |\n"
    )
    docs = Docs((D.read_file("docs/platforms/npu.md", matrix, MARKERS, page=True),), url="")
    decls = {"--cache-layout": FlagDecl("--cache-layout", "cache_layout")}
    assert D.about("--cache-layout", decls, docs) is None


@pytest.mark.parametrize(
    ("rule", "kept"),
    [
        # "model" and "type" are in half the options' names: they tie a rule to no check
        ("If the model param is not provided, the method type must be provided.", False),
        # nor do the option's own words: the method's docs speak of the speculative method
        ("If the model param is not provided, the speculative type must be given.", False),
        # a word of the message's own ("llama") does
        ("If the model param is not provided, the llama method type must be given.", True),
    ],
)
def test_a_docs_rule_sharing_only_the_options_words_with_the_check_is_no_why(rule, kept):
    page = f"| Option | Description |\n|---|---|\n| `--spec-method` | The method. {rule} |\n"
    docs = Docs((D.read_file("docs/args.md", page, MARKERS, page=True),), url="")
    decls = {"--spec-method": FlagDecl("--spec-method", "spec_method")}
    message = "Eagle3 is only supported for llama models. Got speculative model_type=x"
    words = D.content_words(message + " --spec-method")
    topic = D.content_words(message) - D.content_words("--spec-method --speculative-config")
    assert bool(D.rules(["--spec-method"], words, decls, docs, ties=topic)) is kept
