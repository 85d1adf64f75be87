"""What the phases before a check do to the flags it reads (extractor/phases.py,
records/knowledge/earlier.py): assignments found in run order, the trigger's words, and
validationCode that reads each flag as the check does and runs on the parser's defaults."""

from __future__ import annotations

import argparse
import ast
import json
import shlex
from pathlib import Path

import pytest
from kverr.extractor.phases import assignments_before
from test_records_knowledge import _by_message, _records, _run_check

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "phases" / "launch_args.py"
ENTRIES = ("__post_init__", "check_server_args")
PAST = ("self.weights_path != 'none'",)  # __post_init__'s early return


def _text() -> str:
    return FIXTURE.read_text(encoding="utf-8")


def _line(words: str) -> int:
    return next(i for i, line in enumerate(_text().splitlines(), 1) if words in line)


@pytest.mark.parametrize(
    ("function", "at", "expected"),
    [
        # the same method: only what runs before the check, with the if it sits in
        (
            "LaunchArgs._handle_replicas",
            "assert self.enable_replica_split",
            [
                ("display_name", "self.weights_path", "self.display_name is None", ()),
                ("enable_replica_split", "False", "self.replica_count == 1", ()),
                ("enable_replica_head", "False", "self.replica_count == 1", ()),
            ],
        ),
        # a later entry: every step of __post_init__, past its early return, and the
        # statements of check_server_args' own callee before the check
        (
            "LaunchArgs._check_adapters",
            "adapters do not work",
            [
                ("display_name", "self.weights_path", "self.display_name is None", ()),
                ("enable_replica_split", "False", "self.replica_count == 1", PAST),
                ("enable_replica_head", "False", "self.replica_count == 1", PAST),
                ("draft_method", "'TREE'", "self.draft_method == 'OLD'", PAST),
                ("enable_fast_path", "True", "is_special_gpu()", PAST),
                ("queue_limit", None, "", PAST),  # in a loop: not followed
                ("cache_io", "'direct'", "self.cache_layout == 'split_direct'", PAST),
                (
                    "enable_adapters",
                    "True",
                    "self.adapter_files and self.enable_adapters is None",
                    (),
                ),
            ],
        ),
        # the first step runs before any other
        ("LaunchArgs._fill_defaults", "self.display_name = self.weights_path", []),
        # a method no entry reaches
        ("LaunchArgs.unrelated", "x", []),
    ],
)
def test_assignments_before_a_check_in_run_order(function, at, expected):
    line = _line(at) if at != "x" else 1
    got = assignments_before(_text(), function, line, ENTRIES)
    assert [(a.field, a.value, a.condition, a.past) for a in got] == expected


def test_no_entries_or_no_parse_means_no_assignments():
    assert assignments_before(_text(), "LaunchArgs.check_server_args", 999, ()) == ()
    assert assignments_before("def (:", "A.b", 1, ENTRIES) == ()


def _fixture_records() -> list[dict]:
    return _records(_text())


@pytest.mark.parametrize(
    ("message", "words", "code"),
    [
        (
            "replica head needs",
            "With --replica-count=1, --enable-replica-head is turned off before this check, "
            "so this check cannot fire.",
            "args.enable_replica_head and args.replica_count != 1",
        ),
        (
            "adapters do not work",
            "--adapter-files also turns on --enable-adapters when --enable-adapters is not given.",
            "(args.enable_adapters or (args.adapter_files and args.enable_adapters is None))",
        ),
        (
            "TREE drafting needs",
            "--draft-method OLD is read as TREE.",
            "('TREE' if args.draft_method == 'OLD' else args.draft_method) == 'TREE'",
        ),
        (
            "cannot contain a colon",
            "--display-name defaults to --weights-path when not given.",
            "(args.weights_path if args.display_name is None else args.display_name)",
        ),
        # set under a platform probe, or in a loop: left as the user gave it, and not mentioned
        ("--enable-fast-path supports", None, "args.enable_fast_path and args.replica_count > 2"),
        ("--queue-limit is above 8", None, "args.queue_limit > 8"),
        # an earlier check it passed is not its path: OLD -> TREE says nothing here
        ("too large for --batch-width", None, "args.block_count * 2 > args.batch_width"),
        # set only for a layout the check rules out: correct code, no words
        ("does not work with --cache-io", None, "args.cache_layout == 'split'"),
        # set in the other branch of the if the notice is in: it never ran before it
        ("are ignored without --enable-adapters", None, None),
    ],
)
def test_trigger_and_validation_read_flags_as_the_check_does(message, words, code):
    rec = _by_message(_fixture_records(), message)
    if words is None:
        assert "before this check" not in rec["triggerScenarios"]
        assert " is read as " not in rec["triggerScenarios"]
    else:
        assert words in rec["triggerScenarios"]
    if code is not None:
        assert code in rec["validationCode"]
    else:
        assert "also turns on" not in rec["triggerScenarios"]


def _fixture_parser() -> argparse.ArgumentParser:
    """The fixture's own add_cli_args, run for real (its other imports do not exist)."""
    tree = ast.parse(_text())
    keep = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "add_cli_args"]
    ns: dict = {"argparse": argparse}
    exec(compile(ast.Module(keep, []), str(FIXTURE), "exec"), ns)
    parser = argparse.ArgumentParser()
    ns["add_cli_args"](parser)
    return parser


@pytest.mark.parametrize(
    ("message", "fires", "passes"),
    [
        ("replica head needs", "--enable-replica-head --replica-count 2", "--enable-replica-head"),
        ("adapters do not work", "--adapter-files a --draft-method TREE", "--adapter-files a"),
        ("TREE drafting needs", "--draft-method OLD", "--draft-method OLD --draft-steps 2"),
        ("cannot contain a colon", "--weights-path a:b", "--weights-path a:b --display-name x"),
        ("--block-count above 4", "--block-count 5", "--block-count 4"),
    ],
)
def test_validation_fires_for_the_launch_the_trigger_describes(message, fires, passes):
    parser = _fixture_parser()
    code = _by_message(_fixture_records(), message)["validationCode"]
    assert _run_check(code, parser.parse_args(fires.split()))
    assert not _run_check(code, parser.parse_args(passes.split()))


def test_every_fixture_validation_runs_on_the_parser_defaults():
    defaults = _fixture_parser().parse_args([])
    checks = [r["validationCode"] for r in _fixture_records() if r["validationCode"]]
    assert len(checks) >= 7
    for code in checks:
        _run_check(code, defaults)  # no TypeError (`None > 4`), no AttributeError


# ---------------------------------------------------------------- the shipped dataset

DATA = ROOT / "data" / "sglang"
_TYPES = {"int": int, "float": float}


def _rows() -> list[dict]:
    with (DATA / "flaghistory.jsonl").open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _ords() -> dict[str | None, int]:
    with (DATA / "revisions.jsonl").open(encoding="utf-8") as fh:
        return {r["sha"]: r["ord"] for r in map(json.loads, fh)}


def _literal(text: str | None) -> object:
    try:
        return ast.literal_eval(text) if text is not None else None
    except (ValueError, SyntaxError):
        return None  # a computed default: the parser's value is not known here


def shipped_parser(rows: list[dict], at: int) -> argparse.ArgumentParser:
    """The launch parser as the dataset's flag history records it at revision `at`."""
    parser = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    for row in rows:
        if not row["from"] <= at <= row["to"]:
            continue
        options = [o for o in row["options"] or [row["name"]] if o.startswith("-")]
        kw: dict = {"default": _literal(row["default"])}
        if row["action"] in ("store_true", "store_false"):
            kw["action"] = row["action"]
        else:
            kw["type"] = _TYPES.get(row["type"] or "", str)
            if row["nargs"]:
                kw["nargs"] = int(row["nargs"]) if row["nargs"].isdigit() else row["nargs"]
        try:
            parser.add_argument(*options, **kw)
        except (argparse.ArgumentError, ValueError):
            continue  # an option two rows of one revision declare
    return parser


def _shipped() -> list[dict]:
    with (DATA / "records.jsonl").open(encoding="utf-8") as fh:
        recs = [json.loads(line)["record"] for line in fh]
    return [r for r in recs if r.get("validationCode")]


def test_every_shipped_validation_runs_on_the_parser_defaults():
    rows, ords = _rows(), _ords()
    crashed = {}
    for rec in _shipped():
        args = shipped_parser(rows, ords[rec["analyzedSha"]]).parse_args([])
        for flag in rec["flags"]:  # an option no revision's history holds: unset
            args.__dict__.setdefault(flag.lstrip("-").replace("-", "_"), None)
        try:
            _run_check(rec["validationCode"], args)
        except (TypeError, AttributeError) as exc:
            crashed[rec["id"]] = f"{type(exc).__name__}: {exc}"
    assert crashed == {}


def test_shipped_validation_fires_for_its_verified_launch():
    """A verified record's "before" launch made the revision's own check fire: its
    validationCode, run on that launch's parsed arguments, fires too."""
    rows, ords = _rows(), _ords()
    tried = missed = 0
    for rec in _shipped():
        if rec["verification"]["status"] != "verified" or not rec.get("exampleFix"):
            continue
        before = rec["exampleFix"].split("\n")[1]
        argv = shlex.split(before)[4:]  # after `python -m MODULE --model-path MODEL_PATH`
        parser = shipped_parser(rows, ords[rec["analyzedSha"]])
        try:
            args, _ = parser.parse_known_args(argv)
        except (argparse.ArgumentError, SystemExit):
            continue
        tried += 1
        missed += not _run_check(rec["validationCode"], args)
    assert tried >= 20
    assert missed <= tried // 20


CALLED_UNDER = """
class LaunchArgs:
    def __post_init__(self):
        model_arch = self.architectures()[0]
        if model_arch in ["AlphaForCausalLM"]:
            self._handle_cache(model_arch)
            self._handle_buffer(model_arch)
        elif model_arch == "BetaForCausalLM":
            self._handle_cache(model_arch, cache_ok=False)
            self._handle_buffer(model_arch, buffer_ok=False)
        elif model_arch == "GammaForCausalLM":
            if gamma_has_cache(model_arch):
                self._handle_cache(model_arch)
        if self.enable_split:
            self._handle_split()
        if not on_npu():
            self._handle_kernels()
        for _ in range(2):
            if not on_npu():
                self._handle_kernels()
        self._handle_always()
        if model_arch == "AlphaForCausalLM":
            self._handle_always()

    def _handle_cache(self, model_arch, cache_ok=True):
        if not cache_ok:
            return
        if self.page_size != 1:
            raise ValueError("this cache needs page size 1")

    def _handle_buffer(self, model_arch, buffer_ok=True):
        if not buffer_ok:
            assert not self.use_buffer, "no buffer for this model"
        if self.use_buffer:
            if self.page_size > 8:
                raise ValueError("the buffer needs small pages")
"""


@pytest.mark.parametrize(
    ("function", "guards", "expected"),
    [
        # each call's test of the architecture, in one list; a call under more than that
        # (Gamma: a test of its config too) is left out of it
        ("LaunchArgs._handle_cache", (), "model_arch in ['AlphaForCausalLM', 'BetaForCausalLM']"),
        # a call whose constant argument takes the site's way in the other way never reaches it
        (
            "LaunchArgs._handle_cache",
            (("not cache_ok", False),),
            "model_arch in ['AlphaForCausalLM']",
        ),
        # an earlier check the constants turn on (`buffer_ok=False`: no buffer) stops the call
        # before a site on the buffer's way
        (
            "LaunchArgs._handle_buffer",
            (("self.use_buffer", True), ("self.page_size > 8", True)),
            "model_arch in ['AlphaForCausalLM']",
        ),
        (
            "LaunchArgs._handle_buffer",
            (("self.use_buffer", False),),
            "model_arch in ['AlphaForCausalLM', 'BetaForCausalLM']",
        ),
        ("LaunchArgs._handle_split", (), ""),  # what a launch sets: the extractor's
        ("LaunchArgs._handle_kernels", (), "not on_npu()"),  # the same test at every call
        ("LaunchArgs._handle_always", (), ""),  # a call under no test
        ("LaunchArgs.__post_init__", (), ""),  # never called
        ("helper", (), ""),  # no method
    ],
)
def test_a_helper_is_read_with_the_test_its_callers_call_it_under(function, guards, expected):
    from kverr.extractor.phases import called_under

    at = next(i for i, ln in enumerate(CALLED_UNDER.splitlines(), 1) if "small pages" in ln)
    assert called_under(CALLED_UNDER, function, guards, at) == expected


def test_a_helpers_check_names_the_models_its_callers_call_it_for():
    rec = _by_message(_records(CALLED_UNDER), "page size 1")
    assert rec["triggerScenarios"].startswith("Launching an AlphaForCausalLM model with")
    # (what the record is: its own code's, whatever its callers test)
    assert rec["flags"] == ["--page-size"]
