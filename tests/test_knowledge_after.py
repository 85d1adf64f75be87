"""What a record's knowledge says once the build is done (records/knowledge/after.py)."""

from __future__ import annotations

from kverr.records.knowledge.after import finish

LAUNCH = "python -m sglang.launch_server --model-path MODEL_PATH"


def _rec(**kw) -> dict:
    base = {
        "id": "0" * 16,
        "severity": "error",
        "errorMessage": "--old-flag is deprecated, please use --new-flag instead.",
        "flags": ["--old-flag"],
        "backgroundTag": "other",
        "preventionTips": [],
        "commonSituations": "",
        "exampleFix": f"# before\n{LAUNCH} --tp-size 3\n# after\n{LAUNCH} --tp-size 2",
        "verification": {"status": "verified"},
    }
    return {**base, **kw}


def test_the_check_tip_names_the_launch_the_check_was_seen_to_stop() -> None:
    (tip,) = finish(_rec(), launch=LAUNCH)["preventionTips"]
    assert tip.startswith("Run a launch through `kverr check -- <command>`")
    assert tip.endswith("report this error for `--tp-size 3`")
    # a fix nobody ran proves nothing about what kverr check reports
    unverified = _rec(verification={"status": "unverified", "reason": "x"})
    assert finish(unverified, launch=LAUNCH)["preventionTips"] == []


def test_a_deprecation_names_the_release_its_successor_arrives_in() -> None:
    rec = _rec(
        backgroundTag="deprecated-option",
        preventionTips=["Replace --old-flag with --new-flag in launch scripts and config files"],
        exampleFix="",
    )
    got = finish(rec, launch=LAUNCH, since={"--new-flag": "v0.4.5"})
    assert got["preventionTips"] == [
        "Replace --old-flag with --new-flag in launch scripts and config files"
        " (--new-flag is accepted from v0.4.5 on)"
    ]
    assert "carry this check" not in (got["commonSituations"] or "")  # (the Releases section)


def _releases() -> list:
    from kverr.ftypes import Revision

    return [
        Revision(ord=k, sha=f"{k:040x}", date="2026-01-0{k}T00:00:00Z", tags=(tag,) if tag else ())
        for k, tag in enumerate(["v1", "", "v2"], start=0)
    ]


def _built(rec: dict, choices=("a", "b"), older: str = "") -> str:
    """The commonSituations a build gives `rec`, a check that arrived at ord 1 (shipped in v2),
    over --mode, declared since v1 with `choices`; `older` a message v1 already had."""
    from kverr.pipeline.docs import finish as build_finish

    from kverr.profile import load_profile

    spans = [{"id": rec["id"], "from": 1, "to": 2}]
    records = [rec]
    if older:
        records.append(_rec(id="1" * 16, errorMessage=older, exampleFix=""))
        spans.append({"id": "1" * 16, "from": 0, "to": 2})
    flags = [
        {"name": "--mode", "options": ["--mode"], "from": 0, "to": 2, "choices": list(choices)}
    ]
    out = build_finish(records, flags, _releases(), load_profile("sglang"), spans, [])
    return out[0]["commonSituations"]


BEFORE_B = f"# before\n{LAUNCH} --mode b\n# after\n{LAUNCH} --mode a"


def test_a_check_that_arrived_for_a_launch_an_older_release_took_is_met_after_upgrading():
    rec = _rec(errorMessage="The mode b is refused on this engine", exampleFix=BEFORE_B)
    assert _built(rec) == (
        "Met after upgrading: v1 took `--mode b` without this check, which arrived in v2."
    )
    # v1 had no such value: a launch of v1 could not give it
    assert _built(rec, choices=("a",)) == ""
    # v1 said it already, in a message lineage did not tie to this one
    assert _built(rec, older="Mode b is refused on this engine for now") == ""
    # a notice's arrival changes nothing a launch must do; a launch nobody ran proves nothing
    assert _built({**rec, "severity": "warning"}) == ""
    assert _built({**rec, "verification": {"status": "unverified", "reason": "x"}}) == ""


def test_a_solution_the_verified_fix_already_gives_is_not_repeated() -> None:
    rec = _rec(
        solutions=[
            "Launch with --ep-size 1",  # the verify step's, first
            "Set --ep-size=1",
            "Set --attention-backend to flashinfer",
            "Use a --moe-runner-backend value other than cutlass",
        ]
    )
    assert finish(rec, launch=LAUNCH)["solutions"] == [
        "Launch with --ep-size 1",
        "Set --attention-backend to flashinfer",
        "Use a --moe-runner-backend value other than cutlass",
    ]
    # without a verified fix first, the condition's own words stay
    unverified = _rec(solutions=["Set --ep-size=1", "Set --ep-size to 1"])
    assert finish(unverified, launch=LAUNCH)["solutions"] == [
        "Set --ep-size=1",
        "Set --ep-size to 1",
    ]
