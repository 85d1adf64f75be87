"""explain (terminal and --json), the site and the API say whether a record's fix was verified
against its revision's own check, in the same sentence (kverr/verification.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kverr.catalog import open_catalog, synth
from kverr.feeds.site import export_site, page_of
from test_catalog import build_catalog
from typer.testing import CliRunner

from kverr.cli import app
from kverr.verification import fix_status

VERIFIED = {"status": "verified", "platform": "cuda-sm90", "revision": "3d3a32c0b9f5", "reason": ""}
FIX = "# before\npython -m sglang.launch_server --model-path MODEL_PATH --page-size 3\n# after\npython -m sglang.launch_server --model-path MODEL_PATH --page-size 64"


@pytest.mark.parametrize(
    ("verification", "text"),
    [
        (VERIFIED, "Fix verified against 3d3a32c0b9f5's own check on cuda-sm90."),
        (
            {**VERIFIED, "model": "exaone4"},
            "Fix verified against 3d3a32c0b9f5's own check on cuda-sm90 with model profile exaone4.",
        ),
        (
            {"status": "unverified", "platform": "cuda-sm90", "revision": "3d3a32c0b9f5",
             "reason": "none of 3 candidate fixes passed."},
            "Fix not verified: none of 3 candidate fixes passed.",
        ),
        (
            {"status": "not-applicable", "platform": "cuda-sm90", "revision": "x",
             "reason": "PortArgs.init_new is not reached from ServerArgs.__post_init__"},
            "Fix not verified: PortArgs.init_new is not reached from ServerArgs.__post_init__.",
        ),
        (None, "Fix not verified: this dataset was built without verification."),
    ],
)  # fmt: skip
def test_one_sentence_per_status(verification, text) -> None:
    rec = {"verification": verification} if verification else {}
    assert fix_status(rec) == text


@pytest.mark.parametrize(
    ("before", "after", "ran"),
    [
        ("--tp-size NOT_A_INT", "--tp-size 1",
         "its parser rejects `--tp-size NOT_A_INT`; `--tp-size 1` passes it and the launch's validation"),
        ("--tp-size", "", "its parser rejects `--tp-size`; the launch without it passes its validation"),
    ],
)  # fmt: skip
def test_an_argparse_fix_says_which_lines_ran(before, after, ran) -> None:
    # explain shows the option as pasted, answered for the user's release: the sentence names
    # the lines the revision's own parser ran
    launch = "python -m sglang.launch_server --model-path MODEL_PATH"
    fix = f"# before\n{launch} {before}\n# after\n{launch} {after}".rstrip()
    rec = {"kind": "argparse", "verification": VERIFIED, "exampleFix": fix}
    assert fix_status(rec) == f"Fix verified against 3d3a32c0b9f5's own check on cuda-sm90 ({ran})."


@pytest.fixture(scope="module")
def verified_catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rec = synth.make_record(
        "9a9e000000000001",
        "page_size must divide 64, got {self.page_size}",
        r"page_size must divide 64, got (?P<v0>-?\d+)",
        placeholders=["self.page_size"],
        flags=["--page-size"],
        exampleFix=FIX,
        solutions=["Launch with --page-size 64"],
        verification=VERIFIED,
    )
    return build_catalog(tmp_path_factory.mktemp("verified"), [rec])


def test_explain_terminal_and_json_say_it_is_verified(verified_catalog, monkeypatch) -> None:
    monkeypatch.setenv("KVERR_CATALOG", str(verified_catalog))
    monkeypatch.setenv("COLUMNS", "120")
    line = "ValueError: page_size must divide 64, got 3"
    text = CliRunner().invoke(app, ["explain", line])
    assert text.exit_code == 0, text.output
    assert "Fix verified against 3d3a32c0b9f5's own check on cuda-sm90." in text.output
    js = CliRunner().invoke(app, ["explain", line, "--json"])
    (m,) = json.loads(js.stdout)["matches"]
    assert m["fixStatus"] == "Fix verified against 3d3a32c0b9f5's own check on cuda-sm90."
    assert m["record"]["verification"] == VERIFIED


def test_the_site_page_says_it_under_the_fix(verified_catalog, tmp_path: Path) -> None:
    with open_catalog(verified_catalog) as cat:
        export_site(cat, tmp_path / "site", meta={"siteTitle": "t", "repository": "o/r"})
        rec = cat.get("9a9e000000000001")
    page = (tmp_path / "site" / page_of(rec)).read_text()
    assert (
        '<p class="fix-status verified">Fix verified against 3d3a32c0b9f5&#x27;s own check on'
        " cuda-sm90.</p>" in page
    )
