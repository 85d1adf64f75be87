"""A long log finds every message a paste of it alone finds, at the line it starts on.

The long-log table test writes one log of realistic SGLang noise (data/noise.json)
with messages of the shipped catalog's records mixed in, plain, wrapped at words, hard-wrapped
by a terminal, cut with `...`, printed over several lines and inside tracebacks, and checks,
message by message, that the scan's answers are the ones a paste of the message alone gets.
"""

from __future__ import annotations

import random
import re
import time

import pytest
import synth
from kverr.catalog import load_datasets, matcher, normalize, open_catalog, store
from test_catalog import FIXTURE_RECORDS, build_catalog, catalog_file  # noqa: F401 (fixture)
from test_matcher import LONG, SPEC, SSL_A, TRACEBACK_MESSAGE, wrap, wrap_words

from kverr import template

OFFLOAD_STREAM, ROPE = "0ff1000000000010", "1ead000000000101"
PREFIX = "[2025-01-01 10:00:00 TP0] "


@pytest.fixture(scope="module")
def cat(catalog_file):  # noqa: F811
    with open_catalog(catalog_file) as c:
        yield c


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    if not store.packaged_datasets():
        pytest.skip("no packaged dataset")
    path = tmp_path_factory.mktemp("shipped") / "shipped.duckdb"
    load_datasets(store.packaged_datasets(), path)
    with open_catalog(path) as c:
        yield c


def noise(rnd: random.Random, n: int) -> list[str]:
    pool = synth.noise_messages()
    return [synth.log_prefix(i) + pool[rnd.randrange(len(pool))] for i in range(n)]


# ---------------------------------------------------------------- exact lines

# (case, lines of the input, record, the 1-based line its message starts on)
LINE_CASES = [
    ("after a fence", ["```", "ValueError: --ssl-keyfile requires --ssl-certfile.", "```"], SSL_A, 2),
    ("after a fence with a language", ["Here:", "```text", PREFIX + "--ssl-keyfile requires --ssl-certfile.", "```"], SSL_A, 3),
    ("value read across a fence", ["```", "yarn2 is not a known rope scaling type.", "```"], ROPE, 2),
    ("value read across a context line", ["Launch failed:", "yarn2 is not a known rope scaling type."], ROPE, 2),
    ("after a blank line", ["some context", "", "--ssl-keyfile requires --ssl-certfile."], SSL_A, 3),
    ("wrapped", ["", "", *wrap_words("ValueError: " + LONG, 50).split("\n")], OFFLOAD_STREAM, 3),
    ("wrapped after a log line", [PREFIX + "Load weight begin.", PREFIX + wrap(LONG, 70)], OFFLOAD_STREAM, 2),
    ("inside a traceback", ["```", *TRACEBACK_MESSAGE.split("\n"), "```"], SPEC, 7),
    ("cut after a log line", [PREFIX + "Load weight begin.", LONG[:60] + "…"], OFFLOAD_STREAM, 2),
    ("cut after a log line, with its class", [PREFIX + "Load weight begin.", "ValueError: " + LONG[:60] + "..."], OFFLOAD_STREAM, 2),
    ("cut after prose", ["It stops with", LONG[:60] + "…"], OFFLOAD_STREAM, 2),
    ("cut after a fence", ["Here:", "```", "ValueError: " + LONG[:60] + "…", "```"], OFFLOAD_STREAM, 3),
    ("cut and wrapped after prose", ["It stops with", "ValueError: " + LONG[:40], LONG[40:70] + "…"], OFFLOAD_STREAM, 2),
    ("a value opens it, wrapped after prose", ["Launch failed:", "yarn2 is not a known", "rope scaling type."], ROPE, 2),
    ("a value opens it, wrapped after a fence", ["```", "ValueError: yarn2 is not a known", "rope scaling type.", "```"], ROPE, 2),
    ("a value opens it, wrapped after a log line", [PREFIX + "Load weight begin.", "yarn2 is not a", "known rope scaling type."], ROPE, 2),
]  # fmt: skip


@pytest.fixture(scope="module")
def rope_cat(tmp_path_factory):
    from test_hostile_text import EXTRA_RECORDS

    path = build_catalog(tmp_path_factory.mktemp("lines"), FIXTURE_RECORDS + EXTRA_RECORDS)
    with open_catalog(path) as c:
        yield c


@pytest.mark.parametrize("case", [c[0] for c in LINE_CASES])
def test_line_is_where_the_message_starts(rope_cat, case):
    _, lines, rid, line = next(c for c in LINE_CASES if c[0] == case)
    found = [(m.record["id"], m.line) for m in rope_cat.explain("\n".join(lines))]
    assert (rid, line) in found and all(r != rid or n == line for r, n in found), found
    # the same lines in the middle of a long log: every input line counts
    rnd = random.Random(1)
    head, tail = noise(rnd, 700), noise(rnd, 500)
    log = [*head, *lines, *tail]
    hits = [(m.record["id"], m.line) for m in rope_cat.scan(log) if m.record["id"] == rid]
    assert hits == [(rid, len(head) + line)]


EDITED = LONG.replace("on device", "on the device")
# A paste's own fallbacks (a log answers none of these): a message that stops short with no
# cut mark, and one whose wording was edited since (fuzzy), read alone and with its paragraph
PASTE_LINE_CASES = [
    ("stopped short after a fence", ["```", "ValueError: " + LONG[:70], "```"], OFFLOAD_STREAM, 2),
    ("stopped short after prose", ["It stops with", "ValueError: " + LONG[:70]], OFFLOAD_STREAM, 2),
    ("stopped short, wrapped, after prose", ["It stops with", "ValueError: " + LONG[:45], LONG[45:70]], OFFLOAD_STREAM, 2),
    ("edited wording after a fence", ["Here:", "```", "ValueError: " + EDITED, "```"], OFFLOAD_STREAM, 3),
    ("edited wording, wrapped, after a fence", ["```", "ValueError: " + EDITED[:60], EDITED[60:], "```"], OFFLOAD_STREAM, 2),
    ("stopped short, wrapped, after a fence", ["```", "ValueError: " + LONG[:45], LONG[45:70], "```"], OFFLOAD_STREAM, 2),
]  # fmt: skip


@pytest.mark.parametrize("case", [c[0] for c in PASTE_LINE_CASES])
def test_a_paste_fallback_is_at_the_line_its_message_starts(rope_cat, case):
    _, lines, rid, line = next(c for c in PASTE_LINE_CASES if c[0] == case)
    found = [(m.record["id"], m.line) for m in rope_cat.explain("\n".join(lines))]
    assert found and found[0] == (rid, line), found


def test_line_in_the_middle_of_a_100k_line_log(cat):
    rnd = random.Random(2)
    log = noise(rnd, 60_000) + ["", "```", "ValueError: --ssl-keyfile requires --ssl-certfile."]
    log += noise(rnd, 40_000)
    hits = [(m.record["id"], m.line) for m in cat.scan(iter(log)) if m.record["id"] == SSL_A]
    assert hits == [(SSL_A, 60_003)]


# ---------------------------------------------------------------- cuts and reprs


@pytest.mark.parametrize(
    "text, cut",
    [
        ("server_args=ServerArgs(model_path='m', tp_size=8, ...)", None),
        ("ServerArgs(...)", None),
        ("chunked sizes [1, 2, ...]", None),
        ("args {'a': 1, ...}", None),
        ("--kv-offload-budget is incompatible with --enable-str...", "--kv-offload-budget is incompatible with --enable-str"),
        ("ValueError('--kv-offload-budget is incompatible...')", "ValueError('--kv-offload-budget is incompatible"),
        ("(it requires...)", "(it requires"),
    ],
)  # fmt: skip
def test_an_elided_repr_element_is_no_cut_message(text, cut):
    assert normalize.truncated(text) == cut


def test_a_server_args_dump_gets_no_answer_and_no_fuzzy_query(cat):
    dump = PREFIX + "server_args=ServerArgs(model_path='meta-llama/Llama-3.1-8B', tp_size=8, ...)"
    assert cat.explain(dump) == []
    # the cut-message prefilter does not send it to BM25 either
    assert not matcher.Index.__dict__.get("bm25")  # (bm25 is a module function: see below)
    calls = []
    real = matcher.bm25
    try:
        matcher.bm25 = lambda *a, **k: calls.append(a) or real(*a, **k)
        cat.scan([dump] * 3 + noise(random.Random(3), 500))
    finally:
        matcher.bm25 = real
    assert calls == []


def test_a_paste_with_a_server_args_dump_makes_no_cut_message_query(cat, monkeypatch):
    """The dump line of a launch log (`...)` closing a repr) beside the error pasted with it:
    the error is found, and no line is read as a message cut short (no BM25 query)."""
    dump = PREFIX + "server_args=ServerArgs(model_path='/m', tp_size=2, ...)"
    calls = []
    real = matcher.bm25
    monkeypatch.setattr(matcher, "bm25", lambda *a, **k: calls.append(a) or real(*a, **k))
    found = cat.explain("\n".join([dump, PREFIX + LONG, dump]))
    assert [m.how for m in found][:1] == ["pattern"]
    assert calls == []


def test_a_paste_reads_each_joined_text_once(cat, monkeypatch):
    """A traceback is one unit: its joins and the whole paste's joins are the same texts, read
    by the pattern search once each."""
    texts = []
    real = matcher.pattern_hits
    monkeypatch.setattr(
        matcher, "pattern_hits", lambda idx, text, **k: texts.append(text) or real(idx, text, **k)
    )
    found = cat.explain(TRACEBACK_MESSAGE)
    assert found
    assert len(texts) == len(set(texts))


def test_a_paste_that_matches_nothing_ranks_each_piece_once(cat, monkeypatch):
    """The fallbacks of a paste with no exact match (a message cut short without a mark, then
    fuzzy) rank each piece once for both, and its " " and "\n" joins once for the two."""
    ranked = []
    real = matcher._bm25
    monkeypatch.setattr(
        matcher, "_bm25", lambda idx, text: ranked.append(" ".join(text.split())) or real(idx, text)
    )
    cat.explain("the speculative decoding setup is wrong\nwhile the kv cache is being sized")
    assert ranked
    assert len(ranked) == len(set(ranked))


# ---------------------------------------------------------------- a long log, message by message


def _render(message: str) -> str:
    return re.sub(r"\{[^{}]*\}", "8", message)


def _forms(rnd: random.Random, text: str, rec: dict) -> dict[str, list[str]]:
    """The ways a message shows up in a log (first line prefixed, as SGLang's logger does)."""
    cls = rec.get("errorClass")
    exc = f"{cls}: {text}" if cls and rec.get("kind") in ("raise", "assert") else text
    lines = exc.split("\n")
    out = {
        "plain": [PREFIX + lines[0], *lines[1:]],
        "wrapped at words": (PREFIX + wrap_words(exc.replace("\n", " "), 60)).split("\n"),
        "cut": [PREFIX + exc.replace("\n", " ")[: max(40, len(exc) * 2 // 3)] + "..."],
    }
    width = max(30, len(PREFIX) + len(lines[0]) // 2)
    out["terminal wrap"] = wrap(PREFIX + exc.replace("\n", " "), width).split("\n")
    if rec.get("kind") == "raise" and rec.get("filePath"):
        code = template.source_line(rec) or "raise ValueError("
        out["traceback"] = [
            "Traceback (most recent call last):",
            '  File "/opt/sglang/python/sglang/launch_server.py", line 14, in <module>',
            "    server_args = prepare_server_args(sys.argv[1:])",
            f'  File "/opt/sglang/{rec["filePath"]}", line {rec.get("lineNumber") or 1}, in check',
            f"    {code}",
            *lines,
        ]
    return out


def _code_line_too(alone: set, got: set, log: list[str], first: int) -> bool:
    """A known difference: a traceback's code line that spells a message with a leading value
    (`raise ValueError(f"{config_path} is not found.")`) is a second hit of the record in a log,
    which reports each (record, values) once, where a paste folds it into the exception line."""
    extra = got - alone
    ids = {a[0] for a in alone}
    return (
        bool(extra)
        and alone <= got
        and all(
            rid in ids and log[first - 1 + off].lstrip().startswith("raise ")
            for rid, _, off in extra
        )
    )


def _answers(matches, first: int, last: int) -> set[tuple]:
    return {(m.record["id"], m.how, m.line - first) for m in matches if first <= m.line <= last}


@pytest.mark.slow  # a sweep over the shipped catalog
def test_a_long_log_answers_every_message_as_its_paste_alone(shipped, tmp_path):
    rnd = random.Random(12)
    recs = [
        r
        for r in shipped.records(project="sglang")
        if r.get("messagePattern") and r.get("errorMessage") and r.get("kind") in ("raise", "log")
    ]
    multi = [r for r in recs if "\n" in r["errorMessage"]]
    picked = multi[:6] + rnd.sample([r for r in recs if "\n" not in r["errorMessage"]], 60)
    log, placed, written = noise(rnd, 300), [], set()
    for n, rec in enumerate(picked):
        forms = _forms(rnd, _render(rec["errorMessage"]), rec)
        name = sorted(forms)[n % len(forms)]
        lines = forms[name]
        # one message raised at several sites: a log reports the same message once, at its first
        # line, whatever form it takes there (stream.log_hits), so each message is placed once
        if _render(rec["errorMessage"]) in written:
            continue
        written.add(_render(rec["errorMessage"]))
        alone = {
            (m.record["id"], m.how, m.line - 1)
            for m in shipped.explain("\n".join(lines), limit=100)
        }
        placed.append((rec["id"], name, len(log) + 1, len(log) + len(lines), alone))
        log += lines + noise(rnd, rnd.randrange(20, 400))
    path = tmp_path / "launch.log"
    path.write_text("\n".join(log) + "\n", encoding="utf-8")
    with path.open(encoding="utf-8") as fh:
        matches = shipped.explain_stream(fh)  # past the paste limit: streamed
    assert len(log) > matcher.PASTE_LINES
    # a log reports each message once, at its first line: a message the log showed earlier
    # (a noise line or another record's placement that reads as it) is answered there
    earlier = {(m.record["id"], m.line) for m in matches}
    differ = [
        (rid, name, alone, _answers(matches, first, last))
        for rid, name, first, last, alone in placed
        if _answers(matches, first, last) != alone
        and not any(r == rid and line < first for r, line in earlier)
        and not _code_line_too(alone, _answers(matches, first, last), log, first)
    ]
    assert differ == []
    found = sum(1 for rid, _, _, _, alone in placed if any(a[0] == rid for a in alone))
    assert found >= 0.8 * len(placed)  # the forms are found at all (most cuts and wraps too)
    forms_found = {name for rid, name, _, _, alone in placed if any(a[0] == rid for a in alone)}
    assert forms_found >= {"plain", "wrapped at words", "cut", "terminal wrap", "traceback"}


@pytest.mark.slow  # a sweep over the shipped catalog
def test_noise_gets_no_answer_a_line_alone_does_not(shipped):
    """Windows and joins add no answer: a log of SGLang's own other messages (errors raised
    outside the server-args files among them) gets exactly what its lines get one by one."""
    msgs = synth.noise_messages(("log", "raise", "assert"), ("info", "warning", "error"))
    rnd = random.Random(4)
    sample = rnd.sample(msgs, 600)
    log = [synth.log_prefix(i) + t for i, t in enumerate(sample)]
    one_by_one = {
        (m.record["id"], n) for n, line in enumerate(log, 1) for m in shipped.explain(line)
    }
    scanned = {(m.record["id"], m.line) for m in shipped.scan(log)}
    assert scanned <= one_by_one
    assert len({n for _, n in one_by_one}) <= 0.05 * len(log)  # the rare message in both


# ---------------------------------------------------------------- cost


def _cpu(fn, *args) -> float:
    best = float("inf")
    for _ in range(3):
        t0 = time.thread_time()
        fn(*args)
        best = min(best, time.thread_time() - t0)
    return best


@pytest.mark.parametrize(
    "shape",
    [
        pytest.param("log with errors", marks=pytest.mark.slow),
        pytest.param("errors only, no prefixes", marks=pytest.mark.slow),
        "tracebacks",
    ],
)
def test_scan_time_grows_linearly(cat, shape):
    rnd = random.Random(5)
    unit = {
        "log with errors": noise(rnd, 200) + [PREFIX + wrap(LONG, 70), LONG[:80] + "..."],
        "errors only, no prefixes": [LONG, wrap(LONG, 50), LONG[:80] + "..."],
        "tracebacks": TRACEBACK_MESSAGE.split("\n") + ["noise"],
    }[shape]
    small, big = unit * (2000 // len(unit) + 1), unit * (8000 // len(unit) + 1)
    assert _cpu(cat.scan, big) <= 12 * _cpu(cat.scan, small)  # 4x the lines: linear ~4x


# ---------------------------------------------------------------- blocks of bytes, as a file is read


def _answers_of(matches) -> list[tuple]:
    return [
        (m.record["id"], m.how, m.line, round(m.score, 6), sorted(m.values.items()))
        for m in matches
    ]


@pytest.mark.slow  # a sweep over the shipped catalog
def test_a_log_read_in_blocks_of_bytes_answers_as_read_line_by_line(shipped):
    """The scan of a file (bytes in blocks, the regex over each block, only lines near a hit
    decoded) gives what the same lines fed one by one give: with wrapped, cut and multi-line
    messages, tracebacks, CRLF line ends, a line past the reader's cap with a message at its
    end, hits on both sides of every block boundary (small blocks), no final newline."""
    from io import BytesIO, StringIO, TextIOWrapper

    from kverr.catalog.reader import MAX_LINE, BoundedLines

    rnd = random.Random(15)
    recs = [
        r
        for r in shipped.records(project="sglang")
        if r.get("messagePattern") and r.get("errorMessage") and r.get("kind") in ("raise", "log")
    ]
    log: list[str] = noise(rnd, 500)
    for rec in rnd.sample(recs, 40):
        forms = _forms(rnd, _render(rec["errorMessage"]), rec)
        log += forms[rnd.choice(sorted(forms))] + noise(rnd, rnd.randrange(1, 60))
    log += ["y" * (MAX_LINE + 5000) + " " + _render(recs[0]["errorMessage"])] + noise(rnd, 20)
    log += [PREFIX + "Load weight end. All done..."]  # a cut last line, no newline after it
    text = "".join(line + ("\r\n" if rnd.random() < 0.1 else "\n") for line in log)[:-1]
    want = _answers_of(shipped.scan(list(BoundedLines(StringIO(text), "t"))))
    assert len(want) >= 20
    data = text.encode("utf-8")
    for size in (1 << 20, 65_536 + 7, 4093):
        wrapper = TextIOWrapper(BytesIO(data), encoding="utf-8", errors="replace", newline="")
        reader = BoundedLines(wrapper, "t", binary=BytesIO(data))
        got = _answers_of(shipped.scan_blocks(reader.blocks(size)))
        assert got == want, size
        assert reader.cut_lines().lines == (len(log) - 21,)


# ---------------------------------------------------------------- kept hits, bounded


class _AllKept:
    """The kept hits as they were before they were bounded: every hit until the end, then
    traceback folding and the once-per-message dedupe over all of them (the reference
    answers)."""

    def __init__(self) -> None:
        self.kept: list[tuple[matcher.Hit, str | None]] = []

    def add(self, h, raw) -> None:
        self.kept.append((h, raw))

    def settle(self, floor, base, every=False) -> None:
        pass

    def answers(self):
        frames: dict[int, list] = {}
        for h, _ in self.kept:
            if h.how == "traceback" and h.span and h.span[0] == -1:
                frames.setdefault(h.index, []).append(h)
        gone = set()
        for h, _ in self.kept:
            for tb in frames.get(h.index, ()) if h.how != "traceback" else ():
                if id(tb) not in gone and tb.span[1] <= (h.line or 0) <= tb.span[2]:
                    gone.add(id(tb))
                    h.score = min(1.0, max(h.score, tb.score) + 0.02)
        first: dict[tuple, tuple] = {}
        for h, raw in self.kept:
            if id(h) in gone:
                continue
            key = (h.index, tuple(sorted(h.values.items())), h.text)
            old = first.get(key)
            if old is None:
                if len(first) < matcher.SCAN_MAX_HITS:
                    first[key] = (h, raw)
            elif (h.line or 0) < (old[0].line or 0):
                first[key] = (h, raw)
        return list(first.values())


def _repeats_log(shipped, seed: int) -> list[str]:
    """A log that says the same messages over and over: plain, cut, wrapped, inside tracebacks
    (short ones and ones longer than a block), with other values of the same record."""
    rnd = random.Random(seed)
    recs = [
        r
        for r in shipped.records(project="sglang")
        if r.get("messagePattern") and r.get("errorMessage") and r.get("kind") == "raise"
    ]
    # records whose raise statement spells the message: a traceback's code line hits too
    spelled = [
        r for r in recs if _render(r["errorMessage"])[:30] in (template.source_line(r) or "")
    ]
    picked = rnd.sample(spelled, 4) + rnd.sample(recs, 8)
    log = noise(rnd, 50)
    for n in range(400):
        rec = picked[rnd.randrange(len(picked))] if n else picked[0]
        value = str(rnd.choice((8, 8, 8, 16, 32)))
        text = re.sub(r"\{[^{}]*\}", value, rec["errorMessage"])
        forms = _forms(rnd, text, rec)
        lines = forms[rnd.choice(sorted(forms))]
        if n == 0:  # the first: its code line's hit is kept a block before its frame hit
            more = ["    locals: x = 1"] * 1900
            lines = noise(rnd, 950) + forms["traceback"][:5] + more + forms["traceback"][5:]
        elif lines[0].startswith("Traceback") and rnd.random() < 0.2:
            # past a block, with its message's hit (the code line that spells it) found long
            # before the traceback ends, so the frame hit comes after it
            frame = '  File "/opt/sglang/python/sglang/srt/x.py", line 1, in f\n    f()'
            more = ["    locals: x = 1"] * rnd.choice((60, 1500))
            lines = [lines[0], *(frame.split("\n") * 200), *lines[1:5], *more, *lines[5:]]
        log += lines + noise(rnd, rnd.randrange(0, 30))
    return log


def _scan(idx, log, kept_class, monkeypatch):
    from kverr.catalog import stream

    monkeypatch.setattr(stream, "_Kept", kept_class)
    hints: dict = {}
    hits = matcher.scan_lines(idx, iter(log), hints=hints)
    return [(h.index, h.score, h.how, h.line, h.values, h.span, h.text) for h in hits], hints


@pytest.mark.slow  # a sweep over the shipped catalog
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("cap", [matcher.SCAN_MAX_HITS, 7])
def test_kept_hits_answer_as_all_hits_kept_did(shipped, monkeypatch, seed, cap):
    from kverr.catalog import stream

    monkeypatch.setattr(matcher, "SCAN_MAX_HITS", cap)
    log = _repeats_log(shipped, seed)
    assert len(log) > 4 * stream.BLOCK_LINES
    new = _scan(shipped.index, log, stream._Kept, monkeypatch)
    old = _scan(shipped.index, log, _AllKept, monkeypatch)
    assert new == old
    assert len(new[0]) >= 5 if cap > 7 else len(new[0]) == cap


@pytest.mark.slow  # a scan of 100,000 lines
def test_kept_hits_stay_bounded_over_100k_repeats(cat, monkeypatch):
    from kverr.catalog import stream

    sizes = []
    settle = stream._Kept.settle

    def measured(self, *a, **k):
        settle(self, *a, **k)
        sizes.append(self.size())

    monkeypatch.setattr(stream._Kept, "settle", measured)
    unit = [PREFIX + "ValueError: --ssl-keyfile requires --ssl-certfile.", "```"]
    unit += TRACEBACK_MESSAGE.split("\n") + ["```", PREFIX + "Load weight end."]
    hits = cat.scan(iter(unit * 10_000))  # 100,000 lines: 20,000 hits, 2 answers
    assert {m.record["id"] for m in hits} == {SSL_A, SPEC}
    assert len(sizes) > 40 and max(sizes) <= 3 * stream.BLOCK_LINES


# ---------------------------------------------------------------- a log's cut lines


@pytest.mark.slow  # a sweep over the shipped catalog
def test_a_log_leaves_out_only_cut_lines_that_change_no_answer(shipped):
    """A log's prefilter does not mark a timestamped line cut with `...` that shows no head
    (prefilter.log_cuts); the answers are those of the paste's regex, which marks every cut
    line and lets the scan pass over them: cut messages of real records (heads shown), noise
    cut lines with and without the stamp, colours, redraws, CRLF, vLLM's `[type=` suffix,
    continuation lines, long lines."""
    from kverr.catalog import prefilter

    rnd = random.Random(21)
    recs = [
        r
        for r in shipped.records()
        if r.get("messagePattern") and r.get("errorMessage") and r.get("kind") in ("raise", "log")
    ]
    pool = synth.noise_messages()
    cut_noise = [m for m in pool if m.rstrip().endswith("...")] or ["Stopping server loop..."]
    variants = [
        lambda t: PREFIX + t,
        lambda t: "INFO 01-01 10:00:00 [engine.py:12] " + t,
        lambda t: "  " + t,
        lambda t: PREFIX + "\x1b[33m" + t + "\x1b[0m",
        lambda t: PREFIX + "x\r" + t,
        lambda t: PREFIX + t + "\r",
        lambda t: PREFIX + t + " [type=value_error, input_value='a...', input_type=str]",
        lambda t: "[2025-01-01 10:00:00 " + "y" * 90 + t,
        lambda t: PREFIX + "z" * 5000 + " " + t,
    ]
    log: list[str] = noise(rnd, 200)
    for _ in range(400):
        if rnd.random() < 0.4:
            rec = rnd.choice(recs)
            text = _render(rec["errorMessage"]).replace("\n", " ")
            text = text[: max(20, len(text) * 2 // 3)] + "..."
        else:
            text = rnd.choice(cut_noise)
        log += [rnd.choice(variants)(text), *noise(rnd, rnd.randrange(0, 5))]
    assert len(log) > matcher.PASTE_LINES
    idx = shipped.index
    texts = idx.prefilter.texts
    assert texts["log"]  # the shipped catalog has heads: a log's regex is the one used
    log_mode = _answers_of(shipped.scan(log))
    try:  # the paste's regex for the log too (no "log" text: every cut line marked)
        idx._prefilter = prefilter.Prefilter({**texts, "log": ""})
        every_cut = _answers_of(shipped.scan(log))
    finally:
        idx._prefilter = None
    assert log_mode == every_cut
    assert sum(1 for a in log_mode if a[1] == "partial") >= 20  # cut messages are answered
    block = "\n".join(log).encode()  # and the log's regex did leave lines out
    assert len(idx.prefilter.marked(block, len(log), log=True)) < len(
        idx.prefilter.marked(block, len(log))
    )
