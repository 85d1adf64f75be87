"""Prose (records/knowledge/text.py): documentation where the code has no comment."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_records_knowledge import _by_message, _records

WORDS = Path(__file__).resolve().parent / "golden" / "records" / "words.py"


def test_without_docs_the_meaning_says_what_the_feature_is_from_its_help():
    recs = _records(WORDS.read_text(encoding="utf-8"))
    # no comment, no explanation in the message, no docs: only what the feature is
    assert _by_message(recs, "divisible by expert_shards")["meaning"] == {
        "what": "--shard-size: the tensor shard count."
    }
    # a parameter two callers fill: the first flag is the feature
    assert _by_message(recs, "must not contain spaces")["documentation"] == (
        "--rdma-device: the RDMA devices for transfers."
    )


HELPERS = '''
class ServerArgs:
    def _handle_memory(self):
        """Configure memory-dependent settings such as --symm-mem-size."""
        if self.enable_symm_mem and self.symm_mem_size > 4:
            raise ValueError("Symmetric memory above 4GB is not supported.")

    def _plan_pool(self):
        """Generates the memory pool plan for every worker."""
        if self.symm_mem_size > 8:
            raise ValueError("The memory pool plan cannot hold more than 8GB.")

    def _handle_mxfp8(self):
        """MXFP8 KV cache uses operands available only on Blackwell."""
        if self.kv_cache_dtype == "mxfp8" and not is_blackwell():
            raise ValueError("--kv-cache-dtype mxfp8 requires a Blackwell GPU.")


def add_cli_args(parser):
    parser.add_argument("--enable-symm-mem", action="store_true", help="Enable symmetric memory.")
    parser.add_argument("--symm-mem-size", type=int, default=1, help="Symmetric memory in GB.")
    parser.add_argument("--kv-cache-dtype", type=str, default="auto", help="The KV cache data type.")
'''


def test_a_helpers_docstring_that_only_says_its_job_is_not_the_meaning():
    recs = _records(HELPERS)
    # "Configure ..." describes what the function does, not why this check exists
    assert _by_message(recs, "Symmetric memory above")["meaning"] == {
        "what": "--enable-symm-mem: enable symmetric memory."
    }
    assert _by_message(recs, "pool plan cannot")["meaning"] == {
        "what": "--symm-mem-size: symmetric memory in GB."
    }
    # a docstring that explains, about this check's own subject, is the why
    assert _by_message(recs, "mxfp8 requires")["documentation"] == (
        "--kv-cache-dtype: the KV cache data type. "
        "MXFP8 KV cache uses operands available only on Blackwell."
    )


REPORT = """
class ServerArgs:
    def _handle_graph(self):
        if self.graph_batch > 512:
            raise RuntimeError(
                "Graph capture failed.\\nPossible solutions:\\n"
                "1. lower --graph-batch (not recommended. It costs a lot of speed)\\n"
                "Open an issue on GitHub https://example.org/project/issues/new and attach the log\\n"
            )


def add_cli_args(parser):
    parser.add_argument("--graph-batch", type=int, default=64, help="The largest batch captured.")
"""


DEVELOPER_NOTE = """
class ServerArgs:
    def _handle_pool(self):
        # Rebuild the pool when its sizes differ from `[self.pool_config.size]`, as with two groups.
        if self.pool_groups > 1 and self.pool_size > 64:
            raise ValueError("A pool of several groups holds at most 64 pages.")

    def _rebuild_pool(self):
        '''Rebuild the pool pages when they differ from `[self.pool_config.size]` in size.'''
        if self.pool_size > 128:
            raise ValueError("The pool pages cannot be rebuilt above 128.")


def add_cli_args(parser):
    parser.add_argument("--pool-size", type=int, default=16, help="Pages in the pool.")
    parser.add_argument("--pool-groups", type=int, default=1, help="Groups of the pool.")
"""


def test_a_comment_or_docstring_that_reads_the_codes_own_attributes_is_no_meaning():
    recs = _records(DEVELOPER_NOTE)
    assert len(recs) == 2
    for rec in recs:
        assert "self." not in rec["documentation"]
        assert "why" not in rec["meaning"]


SUBJECTS = """
import logging

logger = logging.getLogger(__name__)


class ServerArgs:
    def check(self):
        if self.image_mode:
            if self.skip_processor and self.processor != self.model_path:
                logger.warning(
                    f"You gave a processor ({self.processor}) but also skipped it via --skip-processor."
                )
        if not self.enable_dp_attention and self.nnodes == 1:
            logger.info("Enable the fused all-reduce for this model")


def add_cli_args(parser):
    parser.add_argument("--image-mode", type=str, help="How images reach the model.")
    parser.add_argument("--skip-processor", action="store_true", help="Skip the processor.")
    parser.add_argument("--processor", type=str, help="The image processor to load.")
    parser.add_argument("--enable-dp-attention", action="store_true", help="DP attention.")
    parser.add_argument("--nnodes", type=int, default=1, help="The number of nodes.")
"""


def test_the_meaning_is_about_what_the_message_names_not_the_gate_on_the_way():
    recs = _records(SUBJECTS)
    # a notice that adjusts nothing is about the option it names, not the switch around it
    assert _by_message(recs, "You gave a processor")["meaning"]["what"] == (
        "--processor: the image processor to load."
    )
    # a gate the launch only leaves off or at its default is where the check is, not its
    # subject: its help would describe another feature
    assert "meaning" not in _by_message(recs, "fused all-reduce") or not _by_message(
        recs, "fused all-reduce"
    )["meaning"].get("what")


ENGINE = """
class Engine:
    def generate(self, prompt, data_parallel_rank=None):
        if self.server_args.enable_dp_attention:
            if data_parallel_rank is None:
                pass
            elif data_parallel_rank < 0:
                raise ValueError("data_parallel_rank must be non-negative")
            elif data_parallel_rank >= self.server_args.dp_size:
                raise ValueError(f"data_parallel_rank must be below {self.server_args.dp_size}")
        if self.server_args.enable_dp_attention and not prompt:
            raise ValueError("--enable-dp-attention needs a prompt")


def add_cli_args(parser):
    parser.add_argument("--enable-dp-attention", action="store_true", help="Split attention.")
    parser.add_argument("--dp-size", type=int, default=1, help="The data parallel size.")
"""


@pytest.mark.parametrize(
    ("message", "what"),
    [
        # a request's own value fails it: the launch option it runs under is not its subject
        ("must be non-negative", None),
        # the message names the option whose value bounds the request's
        ("must be below", "--dp-size: the data parallel size."),
        # the message names the launch option: that is what it is about
        ("needs a prompt", "--enable-dp-attention: split attention."),
    ],
)
def test_a_request_check_is_not_described_by_the_launch_option_it_runs_under(message, what):
    rec = _by_message(_records(ENGINE, path="python/sglang/srt/entrypoints/engine.py"), message)
    assert rec["meaning"].get("what") == what


@pytest.mark.parametrize(
    ("message", "sentences"),
    [
        ("Model not found.Please check the path.", ["Model not found.", "Please check the path."]),
        # names with a period are no sentence end
        ("Ensure CuDNN >= 9.15 to avoid nn.Conv3d bugs.", ["Ensure CuDNN >= 9.15 to avoid nn.Conv3d bugs."]),
        ("Use torch.cuda.Stream instead.", ["Use torch.cuda.Stream instead."]),
        ("Use the Config.Default class.", ["Use the Config.Default class."]),
        # an abbreviation's period before a word in lower case ends no sentence
        ("Min. batch size cannot be greater than max. batch size. If you want to skip warmup, "
         "set SKIP_WARMUP=true",
         ["Min. batch size cannot be greater than max. batch size.",
          "If you want to skip warmup, set SKIP_WARMUP=true"]),
        ("Pass a list, e.g. [1, 2]. Max. 8 items.", ["Pass a list, e.g. [1, 2].", "Max. 8 items."]),
    ],
)  # fmt: skip
def test_a_sentence_glued_on_is_split_and_a_dotted_name_is_not(message, sentences):
    from kverr.records.knowledge.text import _advice_sentences

    assert _advice_sentences(message) == sentences


def test_advice_for_one_purpose_is_advice_not_an_explanation():
    from kverr.records.knowledge.text import _IMPERATIVE

    assert _IMPERATIVE.match("If you want to skip warmup, set SKIP_WARMUP=true")
    assert _IMPERATIVE.match("Please launch without --num-scheduler-steps")
    assert not _IMPERATIVE.match("If the model is large, the warmup takes long")


TAGGED = """
class ServerArgs:
    def check(self):
        if self.cache_backend == "paged" and self.page_size == 1:
            # NOTE(someone): paged kernels read whole pages, so a page of one token wastes them.
            raise ValueError("Paging with one-token pages is refused since paged_v2 does not support page_size 1")


def add_cli_args(parser):
    parser.add_argument("--cache-backend", type=str, default="paged", help="The KV cache backend.")
    parser.add_argument("--page-size", type=int, default=16, help="Tokens per page.")
"""


def test_an_authors_tag_and_a_names_spelling_are_kept_out_of_the_prose():
    (rec,) = _records(TAGGED)
    why = rec["meaning"]["why"]
    assert why.startswith("Paged kernels read whole pages"), why
    assert "NOTE" not in rec["documentation"]
    # a reason the message gives that starts with a name keeps the name's spelling
    from kverr.records.knowledge.text import capitalised

    assert (
        capitalised("paged_v2 does not support page_size 1")
        == "paged_v2 does not support page_size 1"
    )
    assert capitalised("the page is full") == "The page is full"


NAMED_IN_WORDS = """
class ServerArgs:
    def check(self):
        if self.executor_backend is None and self.tensor_parallel_size > gpu_count():
            raise ValueError(
                f"Tensor parallel size ({self.world_size}) cannot be larger than"
                " the number of GPUs"
            )


def add_cli_args(parser):
    parser.add_argument("--executor-backend", type=str, help="How workers are started.")
    parser.add_argument("--tensor-parallel-size", type=int, default=1, help="The TP size.")
"""


@pytest.mark.parametrize(
    ("message", "why"),
    [
        ("topk > 1 with page_size > 1 is unstable and produces incorrect results for paged "
         "backends. This combination is only supported for the 'flashinfer' backend.",
         "topk > 1 with page_size > 1 is unstable and produces incorrect results for paged backends."),
        ("Sequence parallelism with pipeline parallelism will likely lead to an error.",
         "Sequence parallelism with pipeline parallelism will likely lead to an error."),
        # the refusal alone explains nothing
        ("Sequence parallelism is not supported with pipeline parallelism.", None),
        # a later sentence that says what goes wrong, though it starts as an action
        ("This model does not officially support prefix caching. Enabling this manually may "
         "cause the engine to crash or produce incorrect outputs.",
         "Enabling this manually may cause the engine to crash or produce incorrect outputs."),
        # "it" is what the sentence acted on; alone it would say nothing
        ("Disabling hybrid SWA memory for {model_arch} as it is not yet supported.",
         "Hybrid SWA memory is not yet supported."),
        ("The pool is rebuilt as it is not yet supported.", None),
        # a sentence for the developers is no reason a user reads
        ("No pool level is set. This method should only be called where the level is set.",
         None),
        ("Disabled the custom all-reduce kernel because it is not supported on AMD GPUs.",
         "The custom all-reduce kernel is not supported on AMD GPUs."),
        ("Multi-modal processor cache is disabled because it is not compatible with two servers.",
         "Multi-modal processor cache is not compatible with two servers."),
    ],
)  # fmt: skip
def test_what_goes_wrong_in_the_first_sentence_is_the_reason(message, why):
    from kverr.records.knowledge.facts import facts_for
    from kverr.records.knowledge.text import message_reasons

    from kverr.ftypes import Part, Site, Template

    site = Site(
        "raise", "a.py", 1, 1, 0, 0, "f", "ValueError", "error",
        Template((Part(text=message),)), "raise ValueError(...)",
    )  # fmt: skip
    got = message_reasons(facts_for(site))
    assert (got[0] if got else None) == (why and why[0].upper() + why[1:])


MODEL_NOTICE = """
import logging

logger = logging.getLogger(__name__)


class ServerArgs:
    def __post_init__(self):
        if "gemma" in self.model_path.lower():
            logger.info("Using triton attention for this model.")
            self.attention_backend = "triton"


def add_cli_args(parser):
    parser.add_argument("--model-path", type=str, help="The path of the model weights.")
    parser.add_argument("--attention-backend", type=str, default=None, help="The kernels.")
"""


TESTS_NOTE = """
class ServerArgs:
    def check(self):
        # model_config may be None during testing, so the check reads it with care.
        if self.model_config is not None and self.page_size > 64:
            raise ValueError("The page size must be at most 64 for this model.")


def add_cli_args(parser):
    parser.add_argument("--page-size", type=int, default=16, help="Tokens per page.")
"""


CODE_NOTES = """
class ServerArgs:
    def check(self):
        # This function needs to be called before the pool pages are counted.
        if self.page_size > 32:
            raise ValueError("The page size must be at most 32 for counted pool pages.")
        # Double check that the pooled pages fit after every pool adjustment.
        if self.page_size > 64:
            raise ValueError("The page size must be at most 64 for pooled pages.")

    def log_pages(self):
        \'\'\'This method logs the pool pages and checks that the page size fits the pool.\'\'\'
        if self.page_size > 128:
            raise ValueError("The pool pages cannot be logged above 128.")

    def capture(self):
        \'\'\'The engine defines the pool page candidates for capture as:

            pages = [1, 2, 4]
        \'\'\'
        if self.page_size > 512:
            raise ValueError("The pool pages cannot be captured above 512.")

    def rebuilt(self):
        # FIXME: the pool pages are not rebuilt for gemma models.
        # It failed at this test: https://example.org/runs/1
        if self.page_size > 256:
            raise ValueError("The pool pages cannot be rebuilt above 256 for gemma models.")


def add_cli_args(parser):
    parser.add_argument("--page-size", type=int, default=16, help="Tokens per page.")
"""


SWITCH_NAMED = """
class ServerArgs:
    def check(self):
        if self.tokenizer_path and self.enable_chunked_prefill and self.sliding_window:
            raise ValueError("Chunked prefill is not supported with sliding window models.")


def add_cli_args(parser):
    parser.add_argument("--tokenizer-path", type=str, default=None, help="The tokenizer.")
    parser.add_argument("--enable-chunked-prefill", action="store_true", help="Prefill in chunks.")
    parser.add_argument("--sliding-window", action="store_true", help="Windowed attention.")
"""


CONFIG_NAMED = """
import os


class ServerArgs:
    def check(self):
        if self.worker_cls == "auto":
            if self.speculative_config:
                if os.environ.get("APP_USE_V2"):
                    raise ValueError("Speculative decoding is not yet supported on V2.")


def add_cli_args(parser):
    # (a default the parser takes from elsewhere: `auto` is a choice the launch makes)
    parser.add_argument("--worker-cls", type=str, default=DEFAULT_WORKER, help="The worker class.")
    parser.add_argument("--speculative-config", type=str, default=None, help="Drafting.")
"""


SIZE_NAMED = """
class ServerArgs:
    def check(self):
        if self.prefill_context_parallel_size * self.decode_context_parallel_size > 1:
            if self.decode_context_parallel_size > 1 and self.kernel == "paged":
                raise ValueError("Decode Context Parallelism needs the LSE; disable DCP.")
            if self.kernel == "ring" and self.decode_context_parallel_size >= 1 and (
                self.prefill_context_parallel_size > 1
            ):
                raise ValueError("PCP cannot run with the ring kernel.")


def add_cli_args(parser):
    parser.add_argument("--prefill-context-parallel-size", type=int, default=1, help="PCP ranks.")
    parser.add_argument("--decode-context-parallel-size", type=int, default=1, help="DCP ranks.")
    parser.add_argument("--kernel", type=str, default="flash", help="The kernel.")
"""


# One record's whole meaning, where what a fixture shows is a part left out or the option
# described: fixture -> the meaning's parts.
MEANING_CASES = [
    # a piece of a parenthesis, or where to report, is no meaning
    (REPORT, {"what": "--graph-batch: the largest batch captured."}),
    # an option the message names in words is what it is about
    (NAMED_IN_WORDS, {"what": "--tensor-parallel-size: the TP size."}),
    # a notice about the model served says what the project does, not what a model option is
    (MODEL_NOTICE, {"instead": "SGLang sets --attention-backend to triton for this launch."}),
    # a comment about the project's tests is a note to developers, no meaning
    (TESTS_NOTE, {"what": "--page-size: tokens per page."}),
    # a switch is named by what it switches ("Chunked prefill ..." names
    # --enable-chunked-prefill), before an option the message does not name
    (SWITCH_NAMED, {"what": "--enable-chunked-prefill: prefill in chunks."}),
    # a config option by the feature it configures ("Speculative decoding ..." names
    # --speculative-config), before the worker class the guard reads first
    (CONFIG_NAMED, {"what": "--speculative-config: drafting."}),
]
# a size is named by what it sizes, its last word a stem ("Decode Context Parallelism"), or
# by its initials ("PCP"), as the subject its message opens with, before the other size
SIZES_NAMED = {
    "Decode Context Parallelism needs the LSE; disable DCP.": "--decode-context-parallel-size",
    "PCP cannot run with the ring kernel.": "--prefill-context-parallel-size",
}


@pytest.mark.parametrize(("fixture", "parts"), MEANING_CASES)
def test_the_meaning_has_only_the_parts_a_source_says(fixture, parts):
    (rec,) = _records(fixture)
    assert rec["meaning"] == parts
    assert rec["documentation"] == " ".join(parts.values())


def test_a_size_is_named_by_what_it_sizes_or_its_initials():
    described = {
        r["errorMessage"]: r["meaning"]["what"].partition(":")[0] for r in _records(SIZE_NAMED)
    }
    assert described == SIZES_NAMED


def test_a_note_about_the_code_around_the_check_or_a_test_run_is_no_meaning():
    # "This function needs to be called ...", "Double check that ...", "This method logs
    # ...", a docstring that opens a block ("... as:"), "It failed at this test": notes to
    # the developers
    recs = _records(CODE_NOTES)
    assert [r["meaning"] for r in recs] == [{"what": "--page-size: tokens per page."}] * 5


LINES = """
class ServerArgs:
    def check(self):
        # Pool pages are split to match the kernel pages
        # Each kernel page holds sixteen tokens of the pool
        if self.page_size % 16 != 0:
            raise ValueError("The page size must be a multiple of 16 for the kernel pages.")

    def sizes(self):
        # If users gave sizes, we only need to compare the pool pages before and after.
        if self.page_size > 1024:
            raise ValueError("The pool pages cannot be compared above 1024.")


def add_cli_args(parser):
    parser.add_argument("--page-size", type=int, default=16, help="Tokens per page.")
"""


def test_a_comment_of_lines_without_periods_reads_as_its_sentences_and_a_code_note_as_none():
    split, code_note = _records(LINES)
    assert split["meaning"]["why"] == (
        "Pool pages are split to match the kernel pages. Each kernel page holds sixteen tokens"
        " of the pool."
    )
    assert code_note["meaning"] == {"what": "--page-size: tokens per page."}


def test_a_stray_period_joins_its_sentence_and_a_note_for_later_is_no_reason():
    src = """
class ServerArgs:
    def check(self):
        # Currently only eager and inductor backends are supported.
        # for piecewise compilation. Custom backends cannot be split
        # into pieces. Update when more backends are supported.
        # Turn the pieces off for now.
        # they are rebuilt for each size.
        if self.backend not in ("eager", "inductor"):
            raise ValueError("Invalid backend for piecewise compilation.")


def add_cli_args(parser):
    parser.add_argument("--backend", type=str, default="inductor", help="The compiler.")
"""
    (rec,) = _records(src)
    assert rec["meaning"]["why"] == (
        "Currently only eager and inductor backends are supported for piecewise compilation."
        " Custom backends cannot be split into pieces. Turn the pieces off for now."
        " they are rebuilt for each size."
    )
