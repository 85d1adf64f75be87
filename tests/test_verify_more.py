"""The fix search's further means, each on a check of the second fixture project
(verify_fixture_more.py): the verdict, the platform and model it ran on, and the lines."""

from __future__ import annotations

import pytest
from kverr.extractor import extract_files, sources
from kverr.present.verdict import fix_status
from kverr.records import build_records
from kverr.verify.step import Session, verify_revision
from kverr.verify.verdict import REPORT
from verify_fixture_more import ARGS, more_repo, more_spec

pytestmark = pytest.mark.sandbox  # runs a revision's code (tests/conftest.py)


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("more")
    g, sha = more_repo(root / "repo")
    rev, files = sources.read_git(g.root, sha, [ARGS])
    exts = extract_files(files)
    records = build_records(exts, rev)
    session = Session(more_spec(), str(g.root), root, cache={})
    out = verify_revision(exts, records, session, rev, files=[(f.path, f.blob) for f in files])
    session.close()
    return {r["errorMessage"]: out[r["id"]] for r in records}


def verdict(verdicts, prefix: str):
    hits = [v for m, v in verdicts.items() if m.startswith(prefix)]
    assert len(hits) == 1, f"{prefix!r} names {len(hits)} records"
    return hits[0]


def lines(v) -> tuple[str, str]:
    before, after = v.example_fix.split("# after\n")
    return before.removeprefix("# before\n").strip(), after.strip()


CASES = [
    # prefix, platform, model, words in the before, words in the after
    # An environment variable's value, solved where the code reads it (os.environ.get).
    ("Wrong value of", "sm90", None, ["--moe-backend fused"], ["FAKE_FUSE_MODE=1"]),
    ("Fuse mode 2 supports only slim", "sm90", None, ["FAKE_FUSE_MODE=2", "--quantization awq"],
     ["FAKE_FUSE_MODE=2", "--quantization slim"]),
    # A list of numbers as long as the guard rules out, then one it allows.
    ("gc_threshold must contain", "sm90", None, ["--gc-threshold 1 2 3 4"], ["--gc-threshold 1 2 3"]),
    # A list option's items are its choices: 'all' and another one.
    ("If 'all' is in --target-modules", "sm90", None, ["--target-modules all q_proj"],
     ["--target-modules all"]),
    # An except clause's condition: the try body raises for a word that is not a number.
    ("custom bucket values must be numeric", "sm90", None, ["--buckets custom"], ["--buckets custom 1"]),
    # The earlier check stays passed: page size 3 wants a track interval it divides.
    ("CHUNK or page_size must divide", "sm90", None, ["--page-size 3", "--track-interval 3"],
     ["--page-size 1"]),
    # The default model lacks what the check reads: a profile that declares it.
    ("fa3 or triton is required", "sm90", "window", ["--attention-backend torch_native"],
     ["--attention-backend fa3"]),
    # An earlier check about the model fired: the check is about another model.
    ("Sparse attention requires --disable-cache", "sm90", "sparse", ["--enable-sparse"],
     ["--disable-cache"]),
    # A loop over literal items reads as its first item (getattr(self, "prefill_backend")).
    ("Sparse attention needs the sparse_mla", "sm90", "sparse", ["--prefill-backend dense_mla"],
     ["--prefill-backend sparse_mla"]),
    # The after needed a vision model: so does the before, which still fires there.
    ("--encoder-only and --language-only are the two halves", "sm90",
     "the default model with architectures VisionForConditionalGeneration",
     ["--encoder-only", "--language-only"], []),
    # A JSON option: a key nothing expects, then one the error lists.
    ("Invalid modality", "sm90", None, ["--mm-limits '{\"x\": 1}'"], ["--mm-limits '{\""]),
    # An argparse Action's own words: a JSON object without the keys, then with them.
    ("'{}' looks like JSON", None, None, [], []),
    # Platform variants: an empty InfiniBand directory, flashinfer without its mamba module.
    ("No IB devices found", "ib-empty", None, ["--ib-device"], []),
    ("FlashInfer mamba module not available", "no-mamba", None, ["--mamba-backend flashinfer"],
     ["--mamba-backend triton"]),
]  # fmt: skip


@pytest.mark.parametrize(("prefix", "platform", "model", "before", "after"), CASES,
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_each_further_means_verifies_its_check(verdicts, prefix, platform, model, before, after):
    if prefix.startswith("'{}'"):
        # The Action's message quotes the value back, so its record is found by its end.
        (v,) = [v for m, v in verdicts.items() if "looks like JSON but lacks" in m]
        b, a = lines(v)
        assert "--adapters '{}'" in b and '"name": "x"' in a and '"path": "x"' in a, v
        return
    v = verdict(verdicts, prefix)
    assert v.verification["status"] == "verified", v.verification
    assert v.verification["platform"] == platform
    assert v.verification.get("model") == model
    b, a = lines(v)
    for word in before:
        assert word in b, (word, b)
    for word in after:
        assert word in a, (word, a)
    if model:
        said = fix_status({"verification": v.verification}, verbose=True)
        assert said.endswith(f"with model profile {model}.")


def test_an_item_counted_twice_is_dropped_from_the_list(verdicts) -> None:
    """The fix keeps the list as the user wrote it, less the repeated item."""
    b, a = lines(verdict(verdicts, "gc_threshold must not repeat"))
    assert b.endswith("--gc-threshold 1 1") and a.endswith("--gc-threshold 1"), (b, a)


def test_a_check_the_parsers_choices_rule_out_is_not_applicable(verdicts) -> None:
    v = verdict(verdicts, "Invalid cache_mode")
    assert v.verification["status"] == "not-applicable"
    assert v.verification["reason"] == (
        "no command line reaches it: every value --cache-mode can hold (the parser's choices "
        'lru, fifo) leaves `self.cache_mode not in ("lru", "fifo")` false'
    )
    assert v.example_fix is None and not v.keep_fix
    # the record's prose says so in words, with no code of the guard
    rec = v.apply({"severity": "error", "triggerScenarios": "Launching with --cache-mode."})
    assert rec["triggerScenarios"] == (
        "No command line fires this check (every value --cache-mode can hold (the parser's"
        " choices lru, fifo) passes it): it states an assumption of the code around it, and"
        " fires only when that code breaks it."
    )
    assert rec["solutions"] == [REPORT] and rec["preventionTips"] == []


def test_a_notice_is_never_fixed_by_switching_off_the_variable_the_launch_set(verdicts) -> None:
    v = verdict(verdicts, "Turbo mode is on")
    assert v.verification["status"] == "unverified"
    assert v.verification["reason"].startswith("only giving the feature up would silence")


def test_a_fix_that_adds_and_removes_says_both(verdicts) -> None:
    v = verdict(verdicts, "--encoder-only and --language-only are the two halves")
    assert v.solution.startswith("Launch with ") or v.solution.startswith("Remove "), v.solution
    if ", without " in v.solution:
        assert v.solution.startswith("Launch with ")
