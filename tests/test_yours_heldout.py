"""`kverr check` judged on launches it was never tuned on: twelve realistic deployments of a
serving project of our own laid out as SGLang (tests/yours_fixture.py), and held-out mistakes,
each one of those deployments with one slip, given as argv or pasted as a GitHub issue. Every
fix is run again by the release in a child of its own: the code is the judge."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from kverr.extractor import extract_files, sources
from kverr.records import build_records
from kverr.verify import preflight, yours
from kverr.verify.spec import spec_for
from kverr.verify.step import Session, bench_for, files_key
from typer.testing import CliRunner
from yours_fixture import (
    BASES,
    MISTAKES,
    PROGRAM,
    RELEASE,
    grade,
    issue,
    message_only,
    release_repo,
    summary,
)

from kverr.answers import Match
from kverr.cli import app
from kverr.errors import QueryError
from kverr.launch import forms_of, read_launches
from kverr.profile import load_profile

pytestmark = pytest.mark.sandbox  # runs a revision's code (tests/conftest.py)
PROFILE = load_profile("sglang")
FORMS = forms_of([PROFILE])


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a check keeps (verify/memo.py) goes to this test's folder, not the user's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return release_repo(tmp_path_factory.mktemp("heldout") / "repo")


@pytest.fixture(scope="module")
def bench(repo: Path, tmp_path_factory: pytest.TempPathFactory):
    """One bench for the whole file, and a judge: a second session with no cache, so each fix
    is run again by a child that did not search for it."""
    work = tmp_path_factory.mktemp("heldout-work")
    rev, files = sources.read_git(repo, RELEASE, list(PROFILE.files))
    exts = extract_files(files)
    spec = spec_for(PROFILE)
    key = files_key(rev, [(f.path, f.blob) for f in files])
    session = Session(spec, str(repo), work, cache={})
    judge_session = Session(spec, str(repo), work, cache=None)
    b = bench_for(exts, session, rev, key=key)
    b.records = {r["id"]: r for r in build_records(exts, rev)}  # type: ignore[attr-defined]
    b.judge = replace(b, session=judge_session)  # type: ignore[attr-defined]
    yield b
    session.close()
    judge_session.close()


def launch_of(bench, text: str):
    (pasted,) = read_launches(text, FORMS)
    return preflight.your_launch(pasted, bench.info["options"])[1]


def checked(bench, text: str):
    return yours.check(bench, launch_of(bench, text), PROFILE.hardware_options)


@pytest.fixture(scope="module")
def graded(bench):
    options = bench.info["options"]

    def judge(launch) -> bool:
        return yours.run(bench.judge, launch).passed

    out = []
    for m in MISTAKES:
        text = issue(m) if m.pasted else m.command()
        out.append(grade(m, checked(bench, text), judge, options))
    return out


@pytest.mark.parametrize("name", sorted(BASES))
def test_each_base_deployment_passes_every_check(bench, name: str) -> None:
    text = f"{PROGRAM} {BASES[name]}"
    (pasted,) = read_launches(text, FORMS)
    resolved, launch, model = preflight.your_launch(pasted, bench.info["options"])
    assert resolved.unknown == () and "kverr's model table" in model
    got = yours.check(bench, launch, PROFILE.hardware_options)
    assert got.passed and not got.errors, [s.ran.outcome for s in got.steps]
    assert yours.run(bench.judge, launch).passed


def test_every_mistake_is_read_and_reproduced(graded) -> None:
    missed = [(g.mistake.command(), g.status, g.error) for g in graded if not g.reproduced]
    assert not missed
    assert len(graded) >= 40 and sum(g.mistake.pasted for g in graded) >= 12


def test_a_pasted_issue_reads_as_the_same_launch_as_its_argv(bench) -> None:
    for m in (m for m in MISTAKES if m.pasted):
        assert launch_of(bench, issue(m)) == launch_of(bench, m.command()), m


def test_personal_fixes_pass_every_check_and_keep_the_rest(graded) -> None:
    figures = summary(graded)
    wrong = [(g.mistake.command(), g.changed) for g in graded if g.fixed and not g.passes]
    lost = [(g.mistake.command(), g.changed) for g in graded if g.fixed and not g.keeps]
    assert figures["pass_and_keep"] >= 0.95, (wrong, lost)
    assert figures["mean_changed"] <= 1.5, figures
    # A floor of what the engine does today, so a change that fixes fewer shows: the mistake
    # it cannot fix is a LoRA adapter given without NAME= (no value it can build).
    assert figures["fixes"] >= 0.9 * len(graded), [(g.mistake.command(), g.why) for g in graded]


def test_a_value_the_parser_refuses_gets_one_it_takes(graded) -> None:
    refused = [g for g in graded if g.status == "parse-error"]
    assert refused and all(g.fixed and g.passes and g.keeps for g in refused), refused


def test_without_a_launch_nothing_claims_a_personal_fix(bench) -> None:
    records = bench.records
    for m in (m for m in MISTAKES if m.pasted):
        text = message_only(m)
        assert read_launches(text, FORMS) == [], m
        with pytest.raises(QueryError, match="no launch command in the input"):
            preflight.check_text(text)
        # explain's personal answer: advice at most, never a fix of a launch nobody gave
        record = next(r for r in records.values() if r["kind"] == "raise")
        match = Match(record, 1.0, "pattern", project={"name": "sglang"})
        (got,) = preflight.personal_answers(text, [match])
        assert got.yours is None


def test_a_pasted_issue_through_the_command_line(repo: Path, tmp_path: Path) -> None:
    m = next(m for m in MISTAKES if m.pasted and m.base == "qwen3-moe")
    paste = tmp_path / "issue.md"
    paste.write_text(issue(m), encoding="utf-8")
    args = ["check", "--json", "--source", str(repo), "--release", RELEASE, "--file", str(paste)]
    got = CliRunner().invoke(app, args)
    assert got.exit_code == 1, got.output
    report = json.loads(got.stdout)  # (a first read of the release reports progress on stderr)
    (err,) = report["errors"]
    assert m.says in err["message"]
    fix = err["yourFix"]
    assert fix["changed"] == ["--dp-size"] and fix["after"] == report["fixed"]
    # the user's own spelling, every other option as it was
    assert fix["after"].endswith("--tp 4 --ep 4 --enable-dp-attention --dp 4")


@pytest.mark.slow
def test_every_pasted_issue_through_check_text(repo: Path) -> None:
    """The whole way a user goes, one release read per paste (the cache makes the repeats
    cheap); the same errors and fixes as the shared bench's."""
    for m in (m for m in MISTAKES if m.pasted):
        report, data = preflight.check_text(issue(m), release=RELEASE, source=str(repo))
        first = data["errors"][0]
        # the parser's refusal is said in "stopped" (an error item carries no message for it)
        said = first["message"] or data["stopped"]["reason"]
        assert m.says in said, m
