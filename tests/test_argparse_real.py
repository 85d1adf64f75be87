"""Every argparse record of the vLLM mirror's newest revision against what that revision's own
parser prints: the build's verify step runs the revision's FlexibleArgumentParser (in the
sandbox) on each record's before line, a bad value, and judges the printed error by the record's
pattern. Skips cleanly without the mirror."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kverr import pipeline
from kverr.profile import load_profile

pytestmark = [pytest.mark.slow, pytest.mark.sandbox]

MIRROR = Path(__file__).resolve().parents[2] / ".mirror" / "local-inference-lab+vllm" / "repo"


@pytest.mark.skipif(not MIRROR.is_dir(), reason=f"no vLLM mirror at {MIRROR}")
def test_each_argparse_pattern_matches_what_the_newest_parser_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KVERR_STRICT", "0")  # upstream code: a message kverr cannot resolve is data
    out = tmp_path / "vllm"
    pipeline.build(
        pipeline.BuildSpec(
            out=out,
            source=pipeline.GitSource(MIRROR, revs=["HEAD"]),
            profile=load_profile("vllm"),
            verify=True,
        )
    )
    records = [json.loads(line)["record"] for line in (out / "records.jsonl").open()]
    forms = ("invalid-value", "invalid-choice", "expected-argument")
    ours = [r for r in records if r["kind"] == "argparse" and r["argparse"]["form"] in forms]
    assert len(ours) > 100
    # a before line its parser refused in other words: the record's pattern is not what the
    # parser prints (a flag the launch command's parser lacks is another matter: the
    # engine's options parsed alone by `vllm serve` do not include the client's)
    wrong = [
        (r["argparse"]["flag"], r["verification"]["reason"])
        for r in ours
        if "rejected the before line with another message" in r["verification"]["reason"]
        and "unrecognized arguments" not in r["verification"]["reason"]
    ]
    assert wrong == []
