"""The block prefilter's keys (catalog/prefilter.py): a key is a necessary condition, so every
blank `str.split()` takes must still mark a line; what the byte class lets through beyond it
only costs a look."""

from __future__ import annotations

import pytest
from kverr.catalog import prefilter

KEY = prefilter.escape("be") + prefilter.BLANK_CLASS + "+" + prefilter.escape("removed")


@pytest.mark.parametrize(
    "line, marked",
    [
        ("[t] it will be removed soon", True),
        ("[t] it will be  \t removed soon", True),
        ("[t] it will be\u00a0removed soon", True),  # no-break space
        ("[t] it will be\u3000\u2003removed soon", True),  # ideographic, em space
        ("[t] it will be\u2028removed soon", True),  # line separator (str.split() splits it)
        ("[t] it will beremoved soon", False),
        ("[t] it will be-removed soon", False),
        ("[t] it will be\u00e9removed soon", True),  # beyond ASCII: let through, then matched
    ],
)
def test_a_multi_word_key_marks_every_blank_split_takes(line, marked):
    pf = prefilter.Prefilter(prefilter.sources([KEY]))
    assert pf.rx is not None  # compiled: else a block this short is read whole (SMALL_BLOCK)
    block = f"[t] first line\n{line}\n[t] last line".encode()
    assert (1 in pf.marked(block, 3)) is marked
    if "\u00e9" not in line:  # the table agrees with the matcher's own folding of blanks
        assert marked == ("be removed" in " ".join(line.split()))


def test_a_short_block_is_read_whole_until_the_regex_is_compiled():
    """A one-shot explain of a short paste reads its lines rather than compile ~2,500 keys;
    a long block compiles the regex, and from then on short blocks are filtered too."""
    pf = prefilter.Prefilter(prefilter.sources([KEY]))
    short = b"[t] first line\n[t] nothing here\n[t] it will be removed"
    assert pf.marked(short, 3) == {0: 0, 1: 15, 2: 32} and not pf.compiled
    long = b"\n".join([b"[t] nothing here"] * 200 + [b"[t] it will be removed"])
    assert len(long) > prefilter.SMALL_BLOCK
    assert pf.marked(long, 201) == {200: long.rindex(b"[t] it")}
    assert pf.marked(short, 3) == {2: 32}


# ---------------------------------------------------------------- a log's cut lines

HEAD = "Loading weights from"  # a pattern's head (what a cut message shows of it)
STAMPED = "[2025-01-01 10:00:00 TP0] "


def _log_marks(pf: prefilter.Prefilter, lines: list[str]) -> tuple[set[int], set[int]]:
    """(lines marked in a log's block, lines of them marked for their cut alone)."""
    block = "\n".join(lines).encode()
    found = pf.marked(block, len(lines), log=True)
    return set(found), set(pf.cut_only)


@pytest.mark.parametrize(
    "line, marked",
    [
        (STAMPED + "Stopping server loop...", False),  # opens a record, shows no head
        (STAMPED + "Stopping server loop...  ')]", False),
        ("[2025-01-01T10:00:00.123 rank0] Stopping...", False),
        (STAMPED + "Stopping server loop. " + "x" * 5000 + "...", False),  # long: still a record's
        (STAMPED + HEAD + " remote instance ...", True),  # may be a cut message: read
        ("INFO 01-01 10:00:00 [x.py:1] Stopping...", True),  # no timestamp: its unit may be longer
        ("  continued from the line before...", True),
        ("...", True),
        ("[truncated]", True),
        ("[2025-01-01 10:0...", True),  # the mark where the stamp would be
        ("[2025-01-01 10:00:00 " + "x" * 90 + "...", True),  # no `]` within 80: no record's stamp
        ("[2025-01-01 10:00:00 no bracket...", True),
        (STAMPED + "\x1b[1mStopping\x1b[0m...", True),  # colours: cleaned text is no piece of it
        (STAMPED + "a\rStopping...", True),  # a redraw: the last one is what was seen
        (STAMPED + "Stopping...\r '", True),
        (STAMPED + "Stopping server loop.", False),  # no cut, no key
        (STAMPED + "the needle is here...", True),  # a key: marked as in a paste
    ],
)
def test_a_log_marks_the_cut_lines_a_scan_must_read(line, marked):
    """A log's regex leaves out only the cut lines `stream.Scanner._mark` passes over; a line
    it marks for its cut is still known as cut alone (its first mark), a key's line is not."""
    pf = prefilter.Prefilter(prefilter.sources([prefilter.escape("needle")], [HEAD]))
    pf.rx  # noqa: B018 - compiled, so a short block is filtered (SMALL_BLOCK)
    lines = [STAMPED + "first", line, STAMPED + "last"]
    found, cut = _log_marks(pf, lines)
    assert (1 in found) is marked
    paste = pf.marked("\n".join(lines).encode(), 3)
    if marked:  # what a paste's regex says of the line, a log's says too
        assert 1 in paste and (1 in cut) == (1 in pf.cut_only)
    assert found <= set(paste) | {1}


def test_a_timestamped_line_opens_a_record_under_every_shipped_profile():
    """The claim `log_cuts` rests on: a line its regex leaves out, had it a cut, opens a log
    record (`record_layer` > 0), so its unit starts at it; for random lines around the stamp
    (digits, brackets, blanks, non-ASCII) under each shipped profile's forms."""
    import random

    import re2
    from kverr.catalog import normalize

    from kverr.profile import load_profile

    shipped = [(name, f) for name in ("sglang", "vllm") for f in load_profile(name).log_prefixes]
    forms = [normalize.NO_FORMS, normalize.LogForms(tuple(shipped))]  # as catalog.forms makes them
    forms += [normalize.LogForms((p,)) for p in shipped]
    opts = re2.Options()
    opts.encoding = re2.Options.Encoding.LATIN1
    rx = re2.compile(prefilter._bytewise("(?m)" + prefilter.log_cuts([])), opts)
    rnd = random.Random(7)
    alphabet = "0123456789-: T[]x.\t\u00e9\u0660"
    left = 0
    for _ in range(20_000):
        stamp = list("[2025-01-01 10:00:00")
        for _ in range(rnd.randrange(3)):  # a few characters changed
            stamp[rnd.randrange(len(stamp))] = rnd.choice(alphabet)
        tail = "".join(rnd.choice(alphabet) for _ in range(rnd.randrange(0, 100)))
        line = "".join(stamp) + tail + rnd.choice(("...", "…", " ...)", "[truncated]"))
        if rx.search(line.encode()) is None:
            left += 1
            for f in forms:
                assert normalize.record_layer(line, f) > 0, (line, f.prefixes)
                assert normalize.starts_record(line, f)
    assert left > 1000  # the generator reaches the lines left out


def test_the_prefilter_blanks_are_the_matchers_blanks():
    """The prefilter's RE2 classes spell kverr.pattern.BLANKS (the whitespace a text is folded
    by before a pattern runs), as text and as UTF-8 bytes: a blank either leaves out is a line
    the prefilter skips and the matcher would have matched."""
    import re2

    from kverr import pattern

    text = re2.compile(prefilter.BLANK_CLASS)
    assert {c for c in map(chr, range(0x3001)) if text.fullmatch(c)} == set(pattern.BLANKS)
    opts = re2.Options()
    opts.encoding = re2.Options.Encoding.LATIN1
    raw = re2.compile(prefilter.BLANK_BYTES.encode("latin-1"), opts)
    as_bytes = {c for c in map(chr, range(0x3001)) if raw.fullmatch(c.encode())}
    assert as_bytes == set(pattern.BLANKS)
