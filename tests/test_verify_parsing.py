"""argparse records judged by their revision's own parser (verify/parsing.py, the build's
verify step): our own fixture project in SGLang's layout (tests/verify_fixture.py) with a few
flags added, committed twice so that a flag is removed in between."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from argparse_fixture import make_vllm_repo
from kverr.pipeline import BuildSpec, GitSource, build
from kverr.verify.parsing import Fix, fix_of, launch_of
from kverr.verify.verdict import printed, rejected_as_recorded
from test_sources import Git
from verify_fixture import sglang_files

from kverr.ftypes import Launch

pytestmark = pytest.mark.sandbox  # runs a revision's code (tests/conftest.py)

SA = "python/sglang/srt/server_args.py"
LAUNCH = "python -m sglang.launch_server --model-path MODEL_PATH"

# Added to the fixture's parser: --level, an int whose declared default is no int (its
# example's after line, `--level 1.5`, is one the parser rejects); --kernel, choices whose first one a later
# check refuses on the build's platform (SM90); --old-flag, in the first commit only.
ADDED = (
    '        parser.add_argument("--level", type=int, default=1.5)\n'
    '        parser.add_argument("--kernel", type=str, choices=["fa4-only", "basic"])\n'
)
OLD = '        parser.add_argument("--old-flag", action="store_true")\n'
CHECK = (
    '        if self.kernel == "fa4-only" and get_device_sm() < 100:\n'
    '            raise RuntimeError("The fa4-only kernel requires an SM100 GPU.")\n'
)


def files(*, old_flag: bool) -> dict[str, str]:
    out = sglang_files()
    anchor = '        parser.add_argument("--slow-mode", action="store_true")\n'
    text = out[SA].replace(anchor, anchor + ADDED + (OLD if old_flag else ""))
    text = text.replace("    slow_mode: bool = False\n", "    slow_mode: bool = False\n"
                        "    kernel: str = \"basic\"\n")  # fmt: skip
    text = text.replace("        self._check_ib(self.ib_device)\n",
                        CHECK + "        self._check_ib(self.ib_device)\n")  # fmt: skip
    out[SA] = text
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str, object, Path]:
    root = tmp_path_factory.mktemp("vp")
    g = Git(root / "repo")
    g.commit("with --old-flag", files(old_flag=True))
    newest = g.commit("without --old-flag", files(old_flag=False))
    result = build(BuildSpec(out=root / "ds", source=GitSource(g.root, revs=["HEAD~1", "HEAD"]), repo_name="o/r", cache=root / "c.sqlite", verify=True))  # fmt: skip
    return by_form(root / "ds"), newest, result, root


def by_form(out: Path) -> dict[tuple[str, str | None], dict]:
    recs = [json.loads(x)["record"] for x in (out / "records.jsonl").read_text().splitlines()]
    return {
        (r["argparse"]["form"], r["argparse"]["flag"]): r for r in recs if r["kind"] == "argparse"
    }


@pytest.mark.parametrize(
    ("form", "flag", "status", "reason", "shown"),
    [
        ("invalid-value", "--page-size", "verified", "", True),
        ("expected-argument", "--page-size", "verified", "", True),
        ("invalid-choice", "--attention-backend", "verified", "", True),
        ("unrecognized", "--old-flag", "verified", "", True),
        # the after line `--level 1.5`: the parser rejects it, so no command is shown
        ("invalid-value", "--level", "unverified",
         "the before line gives this error, but the after line was rejected by the argument"
         " parser (argument --level: invalid int value: '1.5')", False),
        # `--kernel fa4-only` parses, and then the launch's own check stops it
        ("invalid-choice", "--kernel", "unverified",
         "the before line gives this error, but the after line raised RuntimeError at"
         " server_args.py:", False),
        ("unrecognized", None, "unverified", "nothing to run: the record has no example fix", True),
    ],
)  # fmt: skip
def test_each_form_through_the_revisions_own_parser(built, form, flag, status, reason, shown):
    recs, newest, _, _ = built
    rec = recs[(form, flag)]
    v = rec["verification"]
    assert (v["status"], v["platform"], v["revision"]) == (status, "cuda-sm90", newest[:12]), v
    assert v["reason"].startswith(reason), v["reason"]
    # a fix the check ran and did not pass is advice only, like any record's
    assert bool(rec["exampleFix"]) == (shown and flag is not None)
    assert rec["solutions"]


def test_the_removed_flag_is_judged_where_it_is_absent(built) -> None:
    recs, newest, _, _ = built
    rec = recs[("unrecognized", "--old-flag")]
    assert rec["analyzedSha"] != newest  # its declaration is the older commit's
    assert rec["verification"]["revision"] == newest[:12]  # its error is the newest's
    assert rec["exampleFix"] == f"# before\n{LAUNCH} --old-flag\n# after\n{LAUNCH}"


def test_the_summary_counts_them_and_a_rebuild_runs_nothing(built) -> None:
    recs, _, result, root = built
    v = result.verify
    per_flag = [r for (_, flag), r in recs.items() if flag]
    assert v.argparse_records == len(per_flag)
    assert v.argparse_verified == sum(r["verification"]["status"] == "verified" for r in per_flag)
    assert v.argparse_verified >= 4
    from kverr.render import verify_summary

    line = verify_summary(v)
    assert f"argparse records: {v.argparse_verified} of {v.argparse_records} verified" in line
    again = build(BuildSpec(out=root / "again", source=GitSource(root / "repo", revs=["HEAD~1", "HEAD"]), repo_name="o/r", cache=root / "c.sqlite", verify=True))  # fmt: skip
    assert again.verify.runs == 0
    assert by_form(root / "again") == recs


def test_explain_names_the_lines_the_parser_ran(built, monkeypatch) -> None:
    # the answer shows the option as pasted (`--page-size x`); the verified sentence says
    # which lines the revision's own parser ran, in the card and in --json
    recs, newest, _, root = built
    from kverr.catalog import load_datasets
    from typer.testing import CliRunner

    from kverr.cli import app

    load_datasets([root / "ds"], root / "ds.duckdb")
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("KVERR_CATALOG", str(root / "ds.duckdb"))
    paste = "launch_server.py: error: argument --page-size: invalid int value: 'x'"
    card = CliRunner().invoke(app, ["explain", paste, "--verbose"])
    assert card.exit_code == 0, card.output
    want = (
        f"Fix verified against commit {newest[:12]}'s own check on cuda-sm90 (its parser rejects"
        " `--page-size NOT_A_INT`; `--page-size 1` passes it and the launch's validation)."
    )
    assert want in " ".join(card.stdout.split())
    out = json.loads(CliRunner().invoke(app, ["explain", "--json", paste]).stdout)
    said = f"Fix verified against commit {newest[:12]}'s own checks."
    assert out["matches"][0]["fixStatus"] == said


def test_a_vllm_revision_without_the_specs_parser_says_so(tmp_path: Path) -> None:
    # vLLM's spec reads the command line with the revision's own FlexibleArgumentParser; a
    # revision whose arg_utils names none is not run, and each record says why
    g = make_vllm_repo(tmp_path / "vllm")
    build(BuildSpec(out=tmp_path / "ds", source=GitSource(g.root, revs=["HEAD"]), profile="vllm", repo_name="o/v", verify=True))  # fmt: skip
    recs = by_form(tmp_path / "ds")
    assert recs
    for rec in recs.values():
        assert rec["verification"]["status"] == "unverified"
        reason = rec["verification"]["reason"]
        assert "does not load in the sandbox" in reason, rec
        assert "names no FlexibleArgumentParser" in reason, rec
        # raised by the sandbox itself: no line of kverr's files, which moves with each edit
        assert reason.endswith("reads the command line with"), reason


# ---------------------------------------------------------------- the pieces


@pytest.mark.parametrize(
    ("text", "fix"),
    [
        (f"# before\n{LAUNCH} --x NOT_A_INT\n# after\n{LAUNCH} --x 40", Fix(("--x", "NOT_A_INT"), ("--x", "40"))),
        (f"# before\n{LAUNCH} --x\n# after\n{LAUNCH}", Fix(("--x",), ())),
        (f"# before\n{LAUNCH} --x 'a b'\n# after\n{LAUNCH} --x c", Fix(("--x", "a b"), ("--x", "c"))),
        ("", None),
        ("# before\nvllm serve --x\n# after\nvllm serve", None),  # another launch
        (f"# before\n{LAUNCH} --x 'open\n# after\n{LAUNCH}", None),  # no shell words
    ],
)  # fmt: skip
def test_fix_of(text, fix) -> None:
    assert fix_of(text, LAUNCH) == fix


@pytest.mark.parametrize(
    ("words", "args"),
    [
        (("--x", "1"), (("--x", "1"),)),
        (("--bs", "1", "2", "--on"), (("--bs", ("1", "2")), ("--on", None))),
        ((), ()),
    ],
)
def test_launch_of(words, args) -> None:
    launch = launch_of(words)
    assert launch == Launch(args=args) and launch.argv() == list(words)


PATTERN = r"(?P<before>.{0,100}?)argument --x: invalid (?P<v0>[\w.<>]{1,80}) value: (?P<v1>\S+)"


@pytest.mark.parametrize(
    ("reason", "program", "ok"),
    [
        ("argument --x: invalid int value: 'y'", "launch_server.py", True),
        ("argument --x: invalid int value: 'y'", "", True),
        (
            "argument --x:  invalid int\nvalue: 'y'",
            "launch_server.py",
            True,
        ),  # spaces as normalised
        ("argument --x: expected one argument", "launch_server.py", False),
        ("argument --xy: invalid int value: 'y'", "launch_server.py", False),
    ],
)
def test_rejected_as_recorded(reason, program, ok) -> None:
    assert rejected_as_recorded(PATTERN, printed(reason, program), program) is ok


@pytest.mark.parametrize(
    ("early", "verified", "na", "said"),
    [
        # launch-path checks besides: the rate of the ones a launch runs before it starts
        (8, 3, 2, "checked before start-up: 3 of 8, 38% (50% leaving out the 2 not applicable)"),
        (8, 3, 0, "checked before start-up: 3 of 8, 38%)"),
        (8, 0, 8, "checked before start-up: 0 of 8, 0%)"),
        # every check runs before start-up: the first rate says it all
        (10, 3, 2, None),
    ],
)  # fmt: skip
def test_the_summary_gives_the_rate_of_the_checks_run_before_start_up(
    early: int, verified: int, na: int, said: str | None
) -> None:
    from kverr.verify.step import VerifyReport

    from kverr.render import verify_summary

    v = VerifyReport(newest="abc", errors_newest=10, verified_newest=verified, platform="p",
                     before_start=early, before_start_verified=verified, before_start_na=na)  # fmt: skip
    line = verify_summary(v)
    assert ("before start-up" in line) == (said is not None), line
    assert said is None or said in line
