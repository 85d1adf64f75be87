"""Matcher table tests: pasted text -> the record it must find (or nothing), with how and values."""

from __future__ import annotations

import re

import pytest
import synth
from kverr.catalog import normalize, open_catalog, patterns
from kverr.catalog.matcher import prefix_cover
from test_catalog import FIXTURE_RECORDS, build_catalog, catalog_file  # noqa: F401 (fixture)

from kverr import regexsafe

SSL_A, SSL_B = "55a1000000000001", "55b1000000000002"
TP, BACKEND, JSON_ARGS, MEM = (
    "7d10000000000003",
    "ab10000000000004",
    "d1c0000000000005",
    "fa70000000000006",
)
OVERLAP, PAGE_ASSERT, SPEC = "0de0000000000007", "a5e0000000000008", "5de0000000000009"
OFFLOAD_STREAM, OFFLOAD_LORA = "0ff1000000000010", "0ff2000000000011"
QUANT_ANY, QUANT_FP4, CHUNK, DISAGG = (
    "9a10000000000012",
    "9a20000000000013",
    "c4a0000000000014",
    "d15c000000000015",
)
COLOURED = "c010000000000016"

LONG = FIXTURE_RECORDS[9]["errorMessage"]
SGL = "[2026-04-07 10:05:08 TP0] "


def wrap(text: str, width: int) -> str:
    """What a terminal shows: hard breaks every `width` characters, mid-word."""
    return "\n".join(text[i : i + width] for i in range(0, len(text), width))


def wrap_words(text: str, width: int) -> str:
    """What an issue tracker or mail client does: breaks at spaces."""
    lines, cur = [], ""
    for word in text.split(" "):
        if cur and len(cur) + 1 + len(word) > width:
            lines.append(cur)
            cur = word
        else:
            cur = f"{cur} {word}" if cur else word
    return "\n".join(lines + [cur])


TRACEBACK_ASSERT = """\
[rank0]: Traceback (most recent call last):
[rank0]:   File "/opt/conda/lib/python3.11/site-packages/sglang/launch_server.py", line 14, in <module>
[rank0]:     server_args = prepare_server_args(sys.argv[1:])
[rank0]:   File "/opt/conda/lib/python3.11/site-packages/sglang/srt/server_args.py", line 203, in _handle_page_size
[rank0]:     assert cfg.page_size % 16 == 0
[rank0]:            ^^^^^^^^^^^^^^^^^^^^^^^
[rank0]: AssertionError"""

TRACEBACK_MESSAGE = """\
Traceback (most recent call last):
  File "/usr/lib/python3/dist-packages/sglang/srt/server_args.py", line 512, in __post_init__
    self._handle_speculative()
  File "/usr/lib/python3/dist-packages/sglang/srt/server_args.py", line 640, in _handle_speculative
    assert self.speculative_eagle_topk == 1, (
AssertionError: Speculative decoding with EAGLE3 requires --speculative-eagle-topk 1, got 4"""

# (case, pasted text, expected record id or None, how, captured values or None to skip the check)
CASES = [
    ("plain line", "--ssl-keyfile requires --ssl-certfile.", SSL_A, "pattern", {}),
    ("same words, other meaning", "--ssl-certfile requires --ssl-keyfile.", SSL_B, "pattern", {}),
    ("sglang prefix", SGL + "ValueError: --ssl-keyfile requires --ssl-certfile.", SSL_A, "pattern", {}),
    ("sglang prefix, several ranks", "[2026-04-07 10:05:08 TP3 EP1 PP0] --ssl-certfile requires --ssl-keyfile.", SSL_B, "pattern", {}),
    ("root logger prefix", "WARNING:sglang.srt.server_args:" + FIXTURE_RECORDS[6]["errorMessage"], OVERLAP, "pattern", {}),
    ("container runtime", "2026-04-07T10:05:08.123456789Z stderr F ValueError: --ssl-keyfile requires --ssl-certfile.", SSL_A, "pattern", {}),
    ("container runtime split line", "2026-04-07T10:05:08.1Z stderr P --ssl-keyfile requires\n2026-04-07T10:05:08.2Z stderr F  --ssl-certfile.", SSL_A, "pattern", {}),
    ("torchrun rank", "[rank0]: ValueError: --ssl-keyfile requires --ssl-certfile.", SSL_A, "pattern", {}),
    ("ray worker", "(WorkerDict pid=41873, ip=10.0.0.7) ValueError: --ssl-keyfile requires --ssl-certfile.", SSL_A, "pattern", {}),
    ("stacked prefixes", "2026-04-07T10:05:08Z stdout F [rank1]: " + SGL + "--ssl-keyfile requires --ssl-certfile.", SSL_A, "pattern", {}),
    ("ansi colours", "\x1b[1;31mValueError\x1b[0m: \x1b[33m--ssl-keyfile\x1b[0m requires --ssl-certfile.", SSL_A, "pattern", {}),
    ("colours printed by the source", "\x1b[31mKV cache pool is full; lower --max-running-requests.\x1b[0m", COLOURED, "pattern", {}),
    ("same, colours lost", "KV cache pool is full; lower --max-running-requests.", COLOURED, "pattern", {}),
    ("crlf", "some context\r\nValueError: --ssl-keyfile requires --ssl-certfile.\r\n", SSL_A, "pattern", {}),
    ("quoted in an issue", "> ValueError: --ssl-keyfile requires --ssl-certfile.", SSL_A, "pattern", {}),
    ("a JSON error body escapes the quotes", '{"object":"error","message":"Unsupported attention backend \\\'fa3\\\' for model /m/x; choose another backend.","code":400}', BACKEND, "pattern", {"backend": "'fa3'", "model_path": "/m/x"}),
    ("terminal wrap mid-word", wrap("ValueError: " + LONG, 37), OFFLOAD_STREAM, "pattern", {}),
    ("tracker wrap at spaces", wrap_words("ValueError: " + LONG, 50), OFFLOAD_STREAM, "pattern", {}),
    ("wrap with prefix", SGL + wrap_words(LONG, 60), OFFLOAD_STREAM, "pattern", {}),
    ("truncated ...", LONG[:90] + "...", OFFLOAD_STREAM, "partial", {}),
    ("truncated …", "ValueError: " + LONG[:70] + "…", OFFLOAD_STREAM, "partial", {}),
    ("cut short, no ellipsis", "ValueError: " + LONG[:90], OFFLOAD_STREAM, "partial", {}),
    ("cut short keeps word order", "--ssl-certfile requires --ssl-key", SSL_B, "partial", {}),
    ("truncated in a wrap", wrap_words(LONG[:120], 40) + " ...", OFFLOAD_STREAM, "partial", {}),
    ("ints", "ValueError: tp_size=3 must be divisible by pp_size=2", TP, "pattern", {"self.tp_size": "3", "self.pp_size": "2"}),
    ("negative int", "tp_size=-1 must be divisible by pp_size=2", TP, "pattern", {"self.tp_size": "-1", "self.pp_size": "2"}),
    ("repr string and path", "Unsupported attention backend 'fa3' for model /models/Llama 3.1/8B; choose another backend.", BACKEND, "pattern", {"backend": "'fa3'", "model_path": "/models/Llama 3.1/8B"}),
    ("dict value", "Invalid --json-model-override-args {'rope_scaling': {'type': 'yarn', 'factor': 4.0}}: expected a JSON object.", JSON_ARGS, "pattern", {"overrides": "{'rope_scaling': {'type': 'yarn', 'factor': 4.0}}"}),
    ("float value", "--mem-fraction-static must be in (0, 1], got 1.50", MEM, "pattern", {"value": "1.50"}),
    ("scientific float", "--mem-fraction-static must be in (0, 1], got 1e-05", MEM, "pattern", {"value": "1e-05"}),
    ("list value", "Disaggregation mode 'prefill' needs a transfer backend in ['mooncake', 'nixl'].", DISAGG, "pattern", {"mode": "'prefill'", "backends": "['mooncake', 'nixl']"}),
    ("None value", "Disaggregation mode None needs a transfer backend in ('mooncake',).", DISAGG, "pattern", {"mode": "None", "backends": "('mooncake',)"}),
    ("literal beats placeholder", "Quantization method 'fp4' is not supported.", QUANT_FP4, "pattern", {}),
    ("placeholder when literal differs", "Quantization method 'awq' is not supported.", QUANT_ANY, "pattern", {"method": "'awq'"}),
    ("traceback, message-less assert", TRACEBACK_ASSERT, PAGE_ASSERT, "traceback", {}),
    ("traceback with message", TRACEBACK_MESSAGE, SPEC, "pattern", {"algo": "EAGLE3", "topk": "4"}),
    # cut after its innermost frame's code line, header and all: the statement is the record
    ("traceback cut at its frame", "\n".join(TRACEBACK_ASSERT.split("\n")[3:5]), PAGE_ASSERT, "traceback", {}),
    ("edited wording", "Chunked prefill size 4096 has to be a multiple of the page size 64", CHUNK, "fuzzy", {}),
    # near misses: nothing, rather than something wrong
    ("unrelated info line", SGL + "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16", None, None, None),
    ("server ready", SGL + "The server is fired up and ready to roll!", None, None, None),
    ("shared prefix, other flag", "--kv-offload-budget is incompatible with --enable-dp-attention: data-parallel attention shards the pool.", None, None, None),
    ("negated", "Quantization method 'fp4' is supported.", None, None, None),
    ("flag typo", "--ssl-keyfile requires --ssl-cert.", None, None, None),
    ("truncated too early", "--kv-offload-budget is...", None, None, None),
    ("assert elsewhere", TRACEBACK_ASSERT.replace("server_args.py", "scheduler.py"), None, None, None),
    ("cut frame elsewhere", "\n".join(TRACEBACK_ASSERT.replace("server_args.py", "scheduler.py").split("\n")[3:5]), None, None, None),
    ("binary garbage", "\x00\x01\x02\xff\xfe" * 50, None, None, None),
]  # fmt: skip


@pytest.fixture(scope="module")
def cat(catalog_file):  # noqa: F811
    with open_catalog(catalog_file) as c:
        yield c


@pytest.mark.parametrize("case, text, expected, how, values", CASES, ids=[c[0] for c in CASES])
def test_paste(cat, case, text, expected, how, values):
    matches = cat.explain(text)
    if expected is None:
        assert [(m.record["id"], m.how, round(m.score, 3)) for m in matches] == []
        return
    assert matches, f"{case}: nothing matched"
    top = matches[0]
    assert (top.record["id"], top.how) == (expected, how)
    assert 0.0 < top.score <= 1.0
    if values is not None:
        assert top.values == values
    # honesty: nothing else rivals the answer with an exact-looking score
    assert all(m.score < top.score or m.record["id"] == expected for m in matches[1:])


def test_score_order_follows_how(cat):
    exact = cat.explain("--ssl-keyfile requires --ssl-certfile.")[0].score
    frame = cat.explain(TRACEBACK_ASSERT)[0].score
    partial = cat.explain(LONG[:90] + "...")[0].score
    fuzzy = cat.explain(next(c[1] for c in CASES if c[0] == "edited wording"))[0].score
    assert exact > frame > partial > fuzzy >= 0.35


def test_line_numbers_point_at_the_message(cat):
    text = "starting\n" + SGL + "tp_size=3 must be divisible by pp_size=2\nbye"
    assert [m.line for m in cat.explain(text)] == [2]
    assert cat.explain(TRACEBACK_ASSERT)[0].line == 7
    assert cat.explain("x\n" + wrap_words(LONG, 50))[0].line == 2


def test_version_restricts_the_answer(cat):
    assert [m.record["id"] for m in cat.explain("--ssl-certfile requires --ssl-keyfile.")] == [
        SSL_B
    ]
    assert cat.explain("--ssl-certfile requires --ssl-keyfile.", version="v0.4.0") == []
    m = cat.explain(FIXTURE_RECORDS[10]["errorMessage"])[0]
    assert m.revisions == ("v0.4.0",)
    assert cat.explain("--ssl-keyfile requires --ssl-certfile.")[0].revisions == (
        "v0.4.0",
        "v0.5.0",
    )


def test_reversed_words_do_not_match_without_the_record(tmp_path):
    only_b = [r for r in FIXTURE_RECORDS if r["id"] != SSL_A]
    with open_catalog(build_catalog(tmp_path, only_b)) as c:
        assert c.explain("--ssl-keyfile requires --ssl-certfile.") == []
        assert [m.record["id"] for m in c.explain("--ssl-certfile requires --ssl-keyfile.")] == [
            SSL_B
        ]


def test_several_errors_in_one_paste(cat):
    text = "\n".join(
        [
            SGL + "tp_size=3 must be divisible by pp_size=2",
            "noise",
            "WARNING:x:" + FIXTURE_RECORDS[6]["errorMessage"],
        ]
    )
    assert sorted(m.record["id"] for m in cat.explain(text)) == sorted([TP, OVERLAP])


def test_a_short_log_reports_every_error_most_severe_first(cat):
    # A warning first, then six errors: more than the five candidates one line is ranked by.
    lines = ["WARNING:x:" + FIXTURE_RECORDS[6]["errorMessage"]]
    lines += [f"tp_size={n} must be divisible by pp_size=2" for n in (3, 5)]
    lines += [
        "--ssl-keyfile requires --ssl-certfile.",
        "--ssl-certfile requires --ssl-keyfile.",
        "--mem-fraction-static must be in (0, 1], got 1.5",
        "Quantization method 'fp4' is not supported.",
    ]
    got = [(m.record["id"], m.line) for m in cat.explain("\n".join(lines))]
    assert got[-1] == (OVERLAP, 1)  # the warning last, though it comes first in the log
    assert {rid for rid, _ in got[:-1]} == {TP, SSL_A, SSL_B, MEM, QUANT_FP4}
    assert [line for _, line in got[:-1]] == sorted(line for _, line in got[:-1])


def test_a_cut_line_is_found_beside_an_exact_one(cat):
    text = "\n".join(
        ["tp_size=3 must be divisible by pp_size=2", "ValueError: " + LONG[:90] + "..."]
    )
    assert {(m.record["id"], m.how) for m in cat.explain(text)} == {
        (TP, "pattern"),
        (OFFLOAD_STREAM, "partial"),
    }


def test_hostile_and_huge_lines_finish(cat):
    # 1 MB on one line with the message at the very end, and text built to make patterns backtrack
    huge = "x" * 1_000_000 + " tp_size=3 must be divisible by pp_size=2"
    assert [m.record["id"] for m in cat.explain(huge)] == [TP]
    hostile = ("Unsupported attention backend " + "'a' for model " * 2000) + "; choose"
    # a legitimate prefix of the backend message cut before "another backend.": it must finish fast
    assert [m.how for m in cat.explain(hostile)] in ([], ["fuzzy"], ["partial"])
    assert cat.explain("Chunked prefill size " * 5000) == []


def test_search_ranks_by_words(cat):
    assert cat.search("kv offload budget streaming")[0].record["id"] == OFFLOAD_STREAM


# ---------------------------------------------------------------- the pieces


@pytest.mark.parametrize(
    "raw, clean",
    [
        ("[2026-04-07 10:05:08 TP0] hello", "hello"),
        ("[2026-04-07 10:05:08,123] hello", "hello"),
        ("WARNING:sglang.srt.server_args:hello", "hello"),
        ("2026-04-07T10:05:08.123456789Z stderr F hello", "hello"),
        ("2026-04-07T10:05:08+02:00 hello", "hello"),
        ("[rank12]: hello", "hello"),
        ("(WorkerDict pid=1, ip=1.2.3.4) hello", "hello"),
        ("/x/server_args.py:12: UserWarning: hello", "hello"),
        ("\x1b[31mhello\x1b[0m  \r", "hello"),
        ("10%\r50%\r100% hello", "100% hello"),
        ("[not a date] hello", "[not a date] hello"),
    ],
)
def test_clean_line(raw, clean):
    assert normalize.clean_line(raw) == clean


@pytest.mark.parametrize(
    "text, body",
    [
        ("abc def...", "abc def"),
        ("abc def …", "abc def"),
        ("abc [...]", "abc"),
        ("abc def.", None),
        ("...", None),
    ],
)
def test_truncated(text, body):
    assert normalize.truncated(text) == body


def test_traceback_parse_takes_the_innermost_frame():
    (tb,) = normalize.parse_tracebacks(
        [t for _, t in normalize.clean_lines(TRACEBACK_ASSERT.split("\n"))]
    )
    assert (tb.file.endswith("srt/server_args.py"), tb.line, tb.function, tb.code) == (
        True,
        203,
        "_handle_page_size",
        "assert cfg.page_size % 16 == 0",
    )
    assert (tb.exc_class, tb.message) == ("AssertionError", "")


@pytest.mark.parametrize(
    "pattern, unsafe",
    [
        (r"plain text\.", None),
        (r"a (?P<v0>.{1,256}?) b", None),
        (r"(?:a|b)+ c", None),
        (r"(a+)+", "it nests quantifiers"),
        (r"(?:x(?:y)*)+", "it nests quantifiers"),
        (r"(a|b*)*", "it nests quantifiers"),
        (r"(?P<v0>a)(?P=v0)", "it uses a named backreference (?P=...)"),
        (r"a(?!b)", "it uses lookaround"),
        (r"(?<=a)b", "it uses lookaround"),
        (
            r"(",
            "it does not compile in Python re (missing ), unterminated subpattern at position 0)",
        ),
        (r"x.*y", "it repeats `.` without a bound (write .{0,256} instead)"),
        (r"x\Z", "it uses \\Z, which RE2 does not support"),
    ],
)
def test_unsafe_patterns_are_named(pattern, unsafe):
    # the catalog holds hand-edited datasets to the build's own rule
    assert patterns.inspect(pattern)[0] == regexsafe.problem(pattern) == unsafe


@pytest.mark.parametrize(
    "pattern, anchors",
    [
        (r"--ssl-keyfile requires --ssl-certfile\.", ["ssl-keyfile", "requires", "ssl-certfile"]),
        (
            r"(?P<v0>.{1,9})-way split of --tp-size",
            ["split", "tp-size"],
        ),  # "way" may fuse with the value
        (r"size=(?P<v0>\d{1,9}) ok", ["size"]),
        # a gap that cannot put a token character against a run leaves its tokens whole: the
        # flag of "unrecognized arguments: --x" followed by `[ =]...` or nothing
        (
            r"(?P<before>.{0,100}?)unrecognized arguments: (?P<head>(?:.{0,500}? )?)"
            r"--image-token-id(?P<tail>(?:[ =].{0,1000})?)",
            ["arguments", "image-token-id"],
        ),
        (r"--tp (?P<v0>\S{1,9}) left", ["left"]),  # \S may end with a letter
        (r"(?P<v0>[ =]?)abc def(?P<v1>[ =]?)ghi", ["abc"]),  # empty gaps join the runs
        (r"(?:x|-)y? from(?P<v0>(?: |\t){1,3})--page-size", ["from", "page-size"]),
    ],
)
def test_anchor_tokens_never_touch_a_placeholder(pattern, anchors):
    assert [t for t, _ in patterns.anchor_tokens(patterns.shape(pattern))] == anchors


@pytest.mark.parametrize(
    "pattern, text, covered",
    [
        (r"abc def ghi", "abc de", 6),
        (r"abc (?P<v0>.{1,9}) ghi jkl", "abc 12 ghi j", 10),
        (r"abc (?P<v0>.{1,9}) ghi", "abc 12", 4),
        (r"abc def ghi", "abc dx", None),
        (r"abc\s+def", "abc   de", 5),
    ],
)
def test_prefix_cover(pattern, text, covered):
    assert prefix_cover(patterns.shape(pattern), text) == covered


def test_scan_streams_a_log_with_a_traceback(cat):
    log = ["[2026-04-07 10:05:08 TP0] Load weight begin."] * 50
    log += TRACEBACK_ASSERT.split("\n")  # lines 51-57
    log += (
        ["noise"] * 10
        + ["ValueError: " + LONG]
        + ["WARNING:x:" + FIXTURE_RECORDS[6]["errorMessage"]] * 3
    )
    found = [(m.record["id"], m.how, m.line) for m in cat.scan(iter(log))]
    assert found == [
        (OFFLOAD_STREAM, "pattern", 68),
        (PAGE_ASSERT, "traceback", 57),
        (OVERLAP, "pattern", 69),
    ]
    # a paste longer than PASTE_LINES takes the same streaming path
    assert [m.record["id"] for m in cat.explain("\n".join(log * 8))] == [
        OFFLOAD_STREAM,
        PAGE_ASSERT,
        OVERLAP,
    ]


def test_overlapping_patterns_keep_the_fuller_one_and_equal_ones_both(tmp_path):
    R = synth.make_record
    recs = [
        R("1000000000000001", "fa3 or triton is required for Llama4 model"),
        R("1000000000000002", "fa3 or triton is required for Llama4 model but got {backend}",
          r"fa3 or triton is required for Llama4 model but got (?P<v0>.{0,256})", placeholders=["backend"]),
        R("1000000000000003", "Disabling radix cache since page_size = 1."),  # one message ...
        R("1000000000000004", "Disabling radix cache since page_size = 1.", line=900),  # ... two sites
    ]  # fmt: skip
    with open_catalog(build_catalog(tmp_path, recs)) as c:
        got = [
            (m.record["id"], m.values)
            for m in c.explain("fa3 or triton is required for Llama4 model but got 'x'")
        ]
        assert got == [("1000000000000002", {"backend": "'x'"})]
        assert [
            m.record["id"] for m in c.explain("fa3 or triton is required for Llama4 model")
        ] == ["1000000000000001"]
        same = c.explain("Disabling radix cache since page_size = 1.")
        assert sorted(m.record["id"] for m in same) == ["1000000000000003", "1000000000000004"]
        assert same[0].score == same[1].score


def test_a_wrapped_message_beats_an_older_shorter_wording(tmp_path):
    # v1 said "X."; v2 says "X. Y." A terminal wraps the v2 message: the first line alone
    # matches v1's pattern, the joined lines match v2's, which explains more of the paste.
    from test_catalog import R, build_catalog

    short = R(
        "5401000000000001",
        "Max running requests is reset to 48.",
        r"Max running requests is reset to 48\.",
        kind="log",
        error_class=None,
        severity="warning",
    )
    long_ = R("5402000000000002", "Max running requests is reset to 48. Set --max-running-requests to override.",
              r"Max running requests is reset to 48\. Set --max-running-requests to override\.",
              kind="log", error_class=None, severity="warning")  # fmt: skip
    path = build_catalog(tmp_path, [short, long_])
    wrapped = "(WorkerDict pid=1) Max running requests is reset to 48.\n(WorkerDict pid=1) Set --max-running-requests to override."
    with open_catalog(path) as c:
        assert [m.record["id"] for m in c.explain(wrapped)] == ["5402000000000002"]
        assert [m.record["id"] for m in c.explain("Max running requests is reset to 48.")] == [
            "5401000000000001"
        ]


def test_only_the_candidates_holding_their_literals_are_compiled(tmp_path):
    """Records sharing every anchor word ("unrecognized arguments") differ in a literal run
    (the flag, its words shared too): the index holds each pattern's runs from the catalog, so explaining one line
    compiles the one pattern whose runs it shows, not the hundred that share its words."""
    R = synth.make_record
    recs = [
        R(f"20000000000000{n:02d}", f"unrecognized arguments: --flag.{n:02d}") for n in range(40)
    ]
    with open_catalog(build_catalog(tmp_path, recs)) as c:
        got = c.explain("launch_server.py: error: unrecognized arguments: --flag.07")
        assert [m.record["id"] for m in got] == ["2000000000000007"]
        idx = c.index
        assert len(idx.candidates("unrecognized arguments: --flag.07")) == 40
        assert list(idx._compiled) == [idx.pos["2000000000000007"]]
        assert idx.required[idx.pos["2000000000000007"]] == ["unrecognized arguments: --flag.07"]


@pytest.mark.parametrize(
    ("pattern", "head"),
    [
        # a long first run: its first HEAD_CHARS characters
        (r"Attention backend (?P<v0>.{0,256}) is not supported", "Attention backen"[:15]),
        # a short first run: the next run's start, up to HEAD_CHARS literal characters in all
        (r"\.(?P<v0>.{0,256}) is not supported on this platform", " is not support"[:14]),
        (r"`(?P<v0>.{0,256})` must be one of (?P<v1>.{0,256})", "` must be one o"[:14]),
        # every run short: the longest of them (each is certain to be shown)
        (r"(?P<v0>.{0,256}) < (?P<v1>.{0,256})", " < "),
    ],
)
def test_a_cut_message_head_is_what_every_judged_cut_shows(pattern, head):
    """A cut line is judged once it shows HEAD_CHARS literal characters (partial_hits): the
    head is a piece every such line contains, the longest one, so a head of "." cannot keep
    every "...Loading..." line of a log for a second look."""
    from kverr.catalog import prefilter

    sh = patterns.shape(pattern)
    assert prefilter.head(sh) == head
    text = "x" + "".join(sh.runs)  # each value empty: shows every literal character
    for cut in range(len(text), 0, -1):
        covered = prefix_cover(sh, text[:cut])  # the text before a cut mark
        if covered is not None and covered >= prefilter.HEAD_CHARS:
            assert head in text[:cut]


def test_a_cover_long_enough_to_judge_always_shows_the_head():
    """partial_hits passes over a candidate whose head is not in the cut text, before its
    prefix_cover: sound only if every cover of HEAD_CHARS literal characters shows the head
    whole. Random patterns of literal runs, blanks and placeholders, each filled and cut at
    every position behind some noise, with and without a strict end."""
    import random

    from kverr.catalog import prefilter

    rnd = random.Random(15)
    words = ["--tp-size", "is", "not", "supported", "when", "a", "x", "., ", "`", "must be", "=="]
    checked = 0
    for _ in range(300):
        parts, values = [], []
        for k in range(rnd.randint(1, 6)):
            kind = rnd.random()
            if kind < 0.55:
                word = rnd.choice(words)
                parts.append(re.escape(word))
                values.append(word)
            elif kind < 0.75:
                parts.append(r"\s+")
                values.append(rnd.choice([" ", "  "]))
            else:
                parts.append(f"(?P<v{k}>.{{0,256}})")
                values.append(rnd.choice(["", "8", "'fp8'", "a b", "not"]))
        try:
            sh = patterns.shape("".join(parts))
        except re.error:
            continue
        head = prefilter.head(sh)
        text = rnd.choice(["", "ValueError: ", "noise is not supported "]) + "".join(values)
        for cut in range(len(text) + 1):
            for strict in (False, True):
                covered = prefix_cover(sh, text[:cut], strict_end=strict)
                if covered is not None and covered >= prefilter.HEAD_CHARS:
                    checked += 1
                    assert head in text[:cut], (parts, text[:cut])
    assert checked > 500


@pytest.mark.parametrize(
    ("lines", "ways"),
    [
        (["one"], [("one", [0])]),
        # smart: the longest line was cut by the terminal (nothing between), a shorter one at a
        # space; then every line joined by "\n", " " and nothing
        (["abcd", "ef", "g"], [("abcdef g", [0, 4, 7]), ("abcd\nef\ng", [0, 5, 8]),
                               ("abcd ef g", [0, 5, 8]), ("abcdefg", [0, 4, 6])]),
        # a way that reads as an earlier one is left out (the earlier keeps its offsets)
        (["ab", "cd"], [("abcd", [0, 2]), ("ab\ncd", [0, 3]), ("ab cd", [0, 3])]),
        (["a ", "b"], [("a b", [0, 2]), ("a \nb", [0, 3]), ("a  b", [0, 3])]),
    ],
)  # fmt: skip
def test_the_ways_a_wrapped_message_reads(lines, ways):
    assert normalize.joins(lines) == ways


SHORT_PASTES = [
    "[2026-04-24 10:00:02 TP0] ValueError: --ssl-keyfile requires --ssl-certfile to be set.",
    'Traceback (most recent call last):\n  File "x.py", line 3, in <module>\n'
    "ValueError: chunked_prefill_size must be positive, got -4",
    "[2026-04-24 10:00:00] Loading weights...\n[2026-04-24 10:00:01] ValueError: --ssl-keyfile"
    " requires...",
    "[2026-04-24 10:00:00] INFO: Started server process [4242]\nchunked_prefill_size must be"
    " positive, got 0",
    "nothing known here at all...",
]


def test_a_short_paste_read_whole_answers_as_the_block_regex_does(tmp_path):
    """A short block in a process that has not compiled the block regex is read line by line
    (prefilter.SMALL_BLOCK: a one-shot explain would pay more for the regex than for the
    lines). A key only ever skips lines, so the answers are the regex's own, cut marks too."""
    R = synth.make_record
    recs = [
        R("3000000000000001", "--ssl-keyfile requires --ssl-certfile to be set."),
        R("3000000000000002", "chunked_prefill_size must be positive, got {v}",
          r"chunked_prefill_size must be positive, got (?P<v0>.{0,256})", placeholders=["v"]),
    ]  # fmt: skip
    path = build_catalog(tmp_path, recs)

    def answers(compiled: bool) -> list:
        out = []
        for paste in SHORT_PASTES:
            with open_catalog(path) as c:
                if compiled:
                    assert c.index.prefilter.rx is not None
                got = c.explain(paste)
                assert c.index.prefilter.compiled is compiled
                out.append([(m.record["id"], m.how, m.score, m.line, m.values) for m in got])
        return out

    whole, regex = answers(False), answers(True)
    assert whole == regex
    assert [bool(a) for a in whole] == [True, True, True, True, False]


def test_a_warmed_index_has_compiled_the_block_regex(tmp_path):
    """A server warms its index (feeds/api.py): its short pastes are filtered by the block
    regex from the first request, not read line by line as a one-shot explain's are."""
    path = build_catalog(tmp_path, [synth.make_record("3000000000000001", "--a requires --b.")])
    with open_catalog(path) as c:
        assert not c.index.prefilter.compiled
        c.index.warm()
        assert c.index.prefilter.compiled and c.index.prefilter.rx is not None


@pytest.mark.parametrize(
    "pattern, text, values",
    [
        # both values shown whole, the cut falls in the words after them
        (r"Batch of (?P<v0>.{0,256}?) rows exceeds the cap \((?P<v1>.{0,256}?) rows\)\. Split it",
         "Batch of 900 rows exceeds the cap (512 rows). Spl", {"v0": "900", "v1": "512"}),
        # the cut shows the start of the words after a value: the value ends there
        (r"Batch of (?P<v0>.{0,256}?) rows exceeds the cap \((?P<v1>.{0,256}?) rows\)\. Split it",
         "Batch of 900 rows exceeds the cap (512 row", {"v0": "900", "v1": "512"}),
        # too few of those words to know where the value ends: left out
        (r"Batch of (?P<v0>.{0,256}?) rows exceeds the cap \((?P<v1>.{0,256}?) rows\)\. Split it",
         "Batch of 900 rows exceeds the cap (512 r", {"v0": "900"}),
        (r"Batch of (?P<v0>.{0,256}?) rows exceeds the cap \((?P<v1>.{0,256}?) rows\)\. Split it",
         "Batch of 900 rows exceeds the ca", {"v0": "900"}),
        # a value that opens the message has no known start
        (r"(?P<v0>.{0,256}?) is over (?P<v1>.{0,256}?) rows now", "batch 3 is over 7 rows", {"v1": "7"}),
        # past what the reader knows (an alternation) nothing more is read
        (r"a (?P<v0>.{0,256}?) b(?:c|d) (?P<v1>.{0,256}?) e", "a 1 bc 2 e", {"v0": "1"}),
        # text that is not the message
        (r"Batch of (?P<v0>.{0,256}?) rows", "Lot of 900 rows", {}),
    ],
)  # fmt: skip
def test_values_a_cut_message_shows_whole(pattern, text, values):
    assert patterns.cut_values(pattern, text) == values


def test_a_cut_match_carries_the_values_it_shows(tmp_path):
    from test_catalog import R, build_catalog

    rec = R("ba7c000000000001",
            "Batch of {n_rows} rows exceeds the cap ({self.cap} rows). Split it, or raise"
            " --row-cap, which sizes the staging buffer on every worker at start-up.",
            r"Batch of (?P<v0>.{0,256}?) rows exceeds the cap \((?P<v1>.{0,256}?) rows\)\. Split it,"
            r" or raise --row-cap, which sizes the staging buffer on every worker at start-up\.",
            placeholders=["n_rows", "self.cap"], flags=["--row-cap"])  # fmt: skip
    with open_catalog(build_catalog(tmp_path, [rec])) as c:
        (m,) = c.explain(
            "ValueError: Batch of 900 rows exceeds the cap (512 rows). Split it, or rai"
        )
    assert (m.how, m.values) == ("partial", {"n_rows": "900", "self.cap": "512"})
