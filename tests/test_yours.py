"""The user's own launch through the fixture revision's checks (verify/yours.py): read as its
parser reads it, each error reproduced, and a fix of *that* launch that passes every check."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kverr.extractor import extract_files, sources
from kverr.records import build_records
from kverr.verify import preflight, yours
from kverr.verify.step import Session, bench_for, files_key
from verify_fixture import ARGS, FILES, fake_repo, fake_spec

from kverr.launch import PastedLaunch

pytestmark = pytest.mark.sandbox  # runs a revision's code (tests/conftest.py)
HARDWARE = ("--tp-size",)  # as a profile's hardware_options: the GPUs the user has stay


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("yours")
    g, sha = fake_repo(root / "repo")
    rev, files = sources.read_git(g.root, sha, [ARGS])
    exts = extract_files(files)
    session = Session(fake_spec(), str(g.root), root, cache={})
    b = bench_for(exts, session, rev, key=files_key(rev, [(f.path, f.blob) for f in files]))
    b.records = {r["id"]: r for r in build_records(exts, rev)}  # type: ignore[attr-defined]
    yield b
    session.close()


def resolved(bench, *words: str):
    return yours.resolve(["--model-path", "org/m", *words], options=bench.info["options"])


def test_abbreviations_are_written_out_and_aliases_kept(bench) -> None:
    r = resolved(bench, "--tp", "4", "--moe-dp-size", "2", "--no-such-flag", "x")
    assert r.launch.args == (("--model-path", "org/m"), ("--tp-size", "4"), ("--moe-dp-size", "2"))
    assert r.spelled == (("--tp", "--tp-size"),)
    assert r.unknown == ("--no-such-flag",)


def test_a_logged_dump_keeps_only_what_differs_from_the_defaults(bench) -> None:
    fields = (("model_path", "org/m"), ("tp_size", 1), ("page_size", 16), ("enable_foo", False))
    r = yours.resolve(values=fields, every_field=True, options=bench.info["options"])
    assert dict(r.launch.args) == {"--model-path": "org/m", "--page-size": "16"}
    r = yours.resolve(values=(("enable_foo", True),), options=bench.info["options"])
    assert r.launch.args == (("--enable-foo", None),)


def test_a_launch_that_passes_says_what_the_release_would_change(bench) -> None:
    checked = yours.check(bench, resolved(bench, "--tp-size", "4").launch)
    assert checked.passed and not checked.errors
    assert [n.message for n in checked.notices] == ["Attention backend not set; using fa3."]


# (the user's mistake, the message it raises, what the fix may change)
MISTAKES = [
    (("--tp-size", "16"), "tp_size must be at most 8", {"--tp-size"}),
    (("--tp-size", "6", "--moe-dp-size", "4"), "tp_size must be divisible", {"--moe-dp-size"}),
    (("--page-size", "48"), "page_size must divide 64", {"--page-size"}),
    (("--attention-backend", "fa4"), "The fa4 attention backend", {"--attention-backend"}),
    (
        ("--prefill-only", "--attention-backend", "triton"),
        "--prefill-only currently requires",
        {"--attention-backend"},
    ),
]


@pytest.mark.parametrize(("words", "message", "changes"), MISTAKES)
def test_each_mistake_is_reproduced_and_its_fix_keeps_the_rest(
    bench, words, message, changes
) -> None:
    launch = resolved(bench, *words).launch
    checked = yours.check(bench, launch, keep=HARDWARE)
    (step,) = checked.errors
    assert step.ran.outcome.message.startswith(message)
    assert re.search(bench.records[step.ran.site_id]["messagePattern"], step.ran.outcome.message)
    fix = step.fix
    assert isinstance(fix, yours.YourFix), fix
    assert set(fix.changed) == changes  # the smallest change: the option the check reads
    kept = {o: v for o, v in launch.args if o not in changes}
    assert {o: v for o, v in fix.after.args if o not in changes} == kept
    assert yours.run(bench, fix.after).passed  # judged again, on its own
    assert checked.passed and checked.final == fix.after


def test_the_fix_moves_a_number_to_its_nearest_good_value(bench) -> None:
    fix = yours.check(bench, resolved(bench, "--tp-size", "12", "--moe-dp-size", "8").launch)
    assert fix.final is not None and fix.final.value("--tp-size") == "8"


def test_no_fix_turns_on_a_feature_the_user_did_not_ask_for(bench) -> None:
    launch = resolved(bench, "--enable-foo").launch
    (step,) = yours.check(bench, launch).errors
    assert step.ran.outcome.message.startswith("--enable-foo needs FAKE_ALLOW_FOO=1")
    fix = step.fix
    assert isinstance(fix, yours.YourFix)
    assert fix.after.has("--enable-foo") and dict(fix.after.env) == {"FAKE_ALLOW_FOO": "1"}


@pytest.mark.parametrize("kind", ["git", "folder"])
def test_check_launch_reads_the_release_from_a_clone_or_a_checkout(tmp_path: Path, kind) -> None:
    g, _ = fake_repo(tmp_path / "repo")
    source = g.root
    if kind == "folder":  # a checkout's files on disk, no git at all
        source = tmp_path / "checkout"
        for path, text in FILES.items():
            (source / path).parent.mkdir(parents=True, exist_ok=True)
            (source / path).write_text(text)
    pasted = PastedLaunch("fakesrv", "command", ("--model-path", "org/m", "--tp", "16"))
    report = preflight.check_launch(
        pasted, spec=fake_spec(), globs=[ARGS], workdir=tmp_path, source=str(source)
    )
    assert report.release and report.checked is not None, report.reason
    (step,) = report.checked.errors
    assert isinstance(step.fix, yours.YourFix) and step.fix.after.value("--tp-size") == "8"


def test_no_release_to_read_is_one_line(tmp_path: Path) -> None:
    pasted = PastedLaunch("fakesrv", "command", ("--tp", "2"))
    with pytest.raises(sources.SourceError, match="pass --source"):
        preflight.check_launch(pasted, spec=fake_spec(), globs=[ARGS], workdir=tmp_path)


@pytest.mark.parametrize(
    ("words", "args", "unknown"),
    [
        (["--spec-config.method=eagle"], (("--spec-config.method", "eagle"),), ()),
        (["--spec-config.method", "eagle", "--tp", "2"],
         (("--spec-config.method", "eagle"), ("--tp", "2")), ()),
        # a field given with no value is true, as the parser of such options reads it
        (["--spec-config.enabled"], (("--spec-config.enabled", "true"),), ()),
        # a field of an option that takes no JSON is no option
        (["--tp", "1", "--tp.size", "2"], (("--tp", "1"),), ("--tp.size",)),
    ],
)  # fmt: skip
def test_a_json_options_field_is_read_as_the_parser_reads_it(words, args, unknown) -> None:
    options = {
        "--spec-config": {"dest": "spec_config", "json": True, "names": ["--spec-config"]},
        "--tp": {"dest": "tp", "names": ["--tp"]},
    }
    got = yours.resolve(words, options=options)
    assert got.launch.args == args and got.unknown == unknown
