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
