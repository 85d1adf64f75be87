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
