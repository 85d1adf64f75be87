"""Bounded reading: any input, however long its lines, is read in bounded memory.

The RSS soak over /dev/zero and 200 MB files lives in bench/bench_hostile.py; here a reader over
generated streams shows the bound with tracemalloc, and the CLI shows how a cut is reported.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import random
import tracemalloc

import pytest
from kverr.catalog import open_catalog
from kverr.catalog.reader import CHUNK, CUT_MARK, MAX_LINE, BoundedLines
from test_catalog import FIXTURE_RECORDS, catalog_file  # noqa: F401 (fixture)
from typer.testing import CliRunner

from kverr.cli import app
from kverr.errors import QueryError

MESSAGE = FIXTURE_RECORDS[0]["errorMessage"]  # --ssl-keyfile requires --ssl-certfile.


class Endless(io.TextIOBase):
    """A text stream generated on the fly: `size` characters of `fill` (None: forever), then
    `after`. Nothing is stored, so a reader that keeps what it reads shows in tracemalloc."""

    def __init__(self, fill: str, size: int | None, after: str = "") -> None:
        self.fill, self.left, self.after, self.reads = fill, size, after, 0

    def read(self, n: int = -1) -> str:
        self.reads += 1
        if self.left is None:
            return (self.fill * (n // len(self.fill) + 1))[:n]
        if self.left <= 0:
            out, self.after = self.after[:n], self.after[n:]
            return out
        k = min(n, self.left)
        self.left -= k
        return (self.fill * (k // len(self.fill) + 1))[:k]


def _peak(fn) -> tuple[object, int]:
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_64_mb_line_is_read_in_bounded_memory():
    stream = Endless("y", 64 << 20, after="\n" + MESSAGE + "\n")
    reader = BoundedLines(stream, "test")
    lines, peak = _peak(lambda: list(reader))
    assert [len(line) for line in lines] == [MAX_LINE + len(CUT_MARK), len(MESSAGE)]
    assert lines[0] == "y" * (MAX_LINE // 2) + CUT_MARK + "y" * (MAX_LINE // 2)
    assert peak < 16 * (MAX_LINE + CHUNK), peak  # a few buffers of 4-byte characters at most
    assert (reader.cut_count, reader.cut, reader.cut_lines().to_dict()) == (
        1,
        [1],
        {"maxChars": MAX_LINE, "count": 1, "lines": [1]},
    )


def test_an_endless_line_of_nul_bytes_stops_at_the_first_chunk():
    stream = Endless("\x00", None)
    with pytest.raises(QueryError, match="starts with 65,536 NUL bytes"):
        list(BoundedLines(stream, "/dev/zero"))
    assert stream.reads == 1


def test_an_endless_stream_of_lines_is_read_lazily():
    stream = Endless("a short log line\n", None)
    first = list(itertools.islice(BoundedLines(stream, "test"), 10))
    assert first == ["a short log line"] * 10 and stream.reads == 1


def test_lines_agree_with_split_and_keep_both_ends():
    rnd = random.Random(9)
    for _ in range(3000):
        text = "".join(
            rnd.choice(["a", "b", "\n", "cc", "\n\n", "\r\n", "xyz" * rnd.randrange(6)])
            for _ in range(rnd.randrange(60))
        )
        max_line, chunk = rnd.randrange(2, 12), rnd.randrange(1, 9)
        reader = BoundedLines(io.StringIO(text), "t", max_line=max_line, chunk=chunk)
        want = text.split("\n")
        if want[-1] == "":
            want.pop()
        half = max_line // 2
        cut = [s[:half] + CUT_MARK + s[-half:] if len(s) > max_line else s for s in want]
        assert list(reader) == cut, (text, max_line, chunk)
        assert reader.cut == [i for i, s in enumerate(want, 1) if len(s) > max_line]


def _utf8(raw: bytes) -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8", errors="replace", newline="")


def test_blocks_hold_the_same_lines_as_text_and_as_bytes():
    """`blocks` (what a scan reads) gives the lines iterating gives, cut the same, with the
    same line numbers noted: from text, and from bytes with bad UTF-8 and long lines among
    them, at any block size."""
    rnd = random.Random(15)
    pieces = ["a", "\u00e9", "\n", "cc", "\n\n", "\r\n", "\u20ac\u20ac", "\ufffd"]
    for i in range(3000):
        text = "".join(
            rnd.choice([*pieces, "xyz" * rnd.randrange(6)]) for _ in range(rnd.randrange(60))
        )
        raw = text.encode()
        if i % 3 == 0 and raw:  # a byte that is no UTF-8 (read as U+FFFD, as the text is)
            k = rnd.randrange(len(raw))
            raw = raw[:k] + bytes([rnd.choice([0xFF, 0xC3, 0xE2, 0x80])]) + raw[k:]
        max_line, chunk, size = rnd.randrange(2, 12), rnd.randrange(1, 9), rnd.randrange(1, 20)

        want_reader = BoundedLines(_utf8(raw), "t", max_line=max_line, chunk=chunk)
        want = list(want_reader)
        for reader in (
            BoundedLines(_utf8(raw), "t", max_line=max_line, chunk=chunk),
            BoundedLines(None, "t", max_line=max_line, chunk=chunk, binary=io.BytesIO(raw)),
        ):
            got = []
            for block, n in reader.blocks(size):
                lines = block.decode("utf-8", "replace") if isinstance(block, bytes) else block
                got += lines.split("\n")
                assert len(lines.split("\n")) == n
            assert got == want, (raw, max_line, chunk, size)
            assert (reader.cut, reader.lines_read) == (want_reader.cut, want_reader.lines_read)


def test_explain_stream_of_a_huge_line_is_bounded(catalog_file):  # noqa: F811
    with open_catalog(catalog_file) as cat:
        cat.explain("warm up")
        lines = BoundedLines(Endless("y", 32 << 20, after=" " + MESSAGE + "\n"), "test")
        matches, peak = _peak(lambda: cat.explain_stream(lines))
    assert [m.record["id"] for m in matches] == [FIXTURE_RECORDS[0]["id"]]  # the line's end
    assert peak < 16 << 20, peak
    assert lines.cut_lines().lines == (1,)


# ---------------------------------------------------------------- the CLI says so


@pytest.fixture
def run(catalog_file, monkeypatch):  # noqa: F811
    monkeypatch.setenv("KVERR_CATALOG", str(catalog_file))
    monkeypatch.setenv("COLUMNS", "100")
    return lambda *args, input=None: CliRunner().invoke(app, ["explain", *args], input=input)


def test_a_cut_line_is_flagged_in_json_and_on_stderr(run, tmp_path):
    log = tmp_path / "long.log"
    log.write_text("ok\n" + "y" * (3 * MAX_LINE) + " " + MESSAGE + "\nok\n", encoding="utf-8")
    res = run("--file", str(log), "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["cutLines"] == {"maxChars": MAX_LINE, "count": 1, "lines": [2]}
    assert [(m["record"]["id"], m["line"]) for m in out["matches"]] == [
        (FIXTURE_RECORDS[0]["id"], 2)
    ]
    human = run("--file", str(log))
    assert human.exit_code == 0
    assert human.stderr == (
        "kverr: note: line 2 is longer than 65,536 characters;"
        " only the first and last 32,768 of each were read.\n"
    )


def test_uncut_input_keeps_the_json_contract(run, tmp_path):
    log = tmp_path / "short.log"
    log.write_text(MESSAGE + "\n", encoding="utf-8")
    assert sorted(json.loads(run("--file", str(log), "--json").stdout)) == ["matches", "query"]


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
def test_dev_zero_is_one_line_and_exit_2(run):
    res = run("--file", "/dev/zero")
    assert res.exit_code == 2
    assert res.stderr == (
        "kverr: /dev/zero starts with 65,536 NUL bytes and nothing else, which is no log"
        " (a device like /dev/zero, or a file of zeros); pass a text log.\n"
    )


def test_nul_bytes_on_stdin_are_refused_too(run):
    res = run("-", input=b"\x00" * 100_000)
    assert (res.exit_code, res.stderr.startswith("kverr: stdin starts with ")) == (2, True)


def test_findings_of_one_message_share_its_record(catalog_file):  # noqa: F811
    """A log of many values of one message: memory grows by the small match, not the record."""
    lines = (f"tp_size={i} must be divisible by pp_size=7" for i in range(3000))
    with open_catalog(catalog_file) as cat:
        matches = cat.scan(lines)
    assert len(matches) == 3000 and len({id(m.record) for m in matches}) == 1


def test_json_is_written_a_match_at_a_time_with_the_same_bytes(catalog_file):  # noqa: F811
    from kverr.answers import explain_json
    from kverr.ftypes import CutLines

    with open_catalog(catalog_file) as cat:
        matches = cat.scan([f"tp_size={i} must be divisible by pp_size=7" for i in range(3)])
    for found in ([], matches[:1], matches):
        for cut in (None, CutLines(MAX_LINE, 2, (1, 5))):
            doc = {"query": 'a "q"\n', "matches": [m.to_dict() for m in found]}
            if cut:
                doc["cutLines"] = cut.to_dict()
            want = json.dumps(doc, indent=2, ensure_ascii=False)
            assert explain_json('a "q"\n', found, cut) == want
