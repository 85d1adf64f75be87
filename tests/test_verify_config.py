"""Checks decided at argv time: the launch's own step before parsing (a config reader behind
`--config FILE`, verify_fixture_config.py) runs for real, and each of its checks gets a fix
whose before raises exactly it and whose after passes, with the file it needs written out."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from kverr.extractor import extract_files, sources
from kverr.records import build_records
from kverr.verify.harness import Harness, Target
from kverr.verify.sandbox import json_yaml
from kverr.verify.sandbox.argv import prefix, reach
from kverr.verify.spec import spec_for
from kverr.verify.step import Session, verify_revision
from verify_fixture import ARGS, line_of
from verify_fixture_config import PREPARE, READER, READER_TEXT, config_repo, config_spec

from kverr.ftypes import Launch

pytestmark = pytest.mark.sandbox  # runs a revision's code (tests/conftest.py)

RUN = "python -m fakesrv.launch --model-path MODEL_PATH"
GOOD = f"echo '{{\"tp-size\": 1}}' > config.yaml && {RUN} --config config.yaml"


def verdicts_of(root: Path, **kw: object) -> dict[str, tuple[dict, object]]:
    g, sha = config_repo(root / "repo", **kw)
    rev, files = sources.read_git(g.root, sha, [ARGS, READER])
    exts = extract_files(files)
    records = build_records(exts, rev)
    session = Session(config_spec(), str(g.root), root, cache={})
    try:
        out = verify_revision(exts, records, session, rev, files=[(f.path, f.blob) for f in files])
    finally:
        session.close()
    return {r["errorMessage"]: (r, out[r["id"]]) for r in records}


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict, object]]:
    return verdicts_of(tmp_path_factory.mktemp("config"))


def one(verdicts, prefix_: str):
    hits = [v for m, v in verdicts.items() if m.startswith(prefix_)]
    assert len(hits) == 1, f"{prefix_!r} names {len(hits)} records"
    return hits[0]


CASES = [
    # message, before, after, the first solution
    (
        "Only one --config file may be given.",
        f"echo '{{\"tp-size\": 1}}' > config.yaml && {RUN} --config config.yaml --config extra.yaml",
        GOOD,
        "Pass --config once: merge the files into config.yaml and point --config at it",
    ),
    (
        "--config needs a file name after it.",
        f"{RUN} --config",
        GOOD,
        "Name the config file after --config: --config config.yaml",
    ),
    (
        "--config wants a .yaml file",
        f"echo '{{\"tp-size\": 1}}' > config.json && {RUN} --config config.json",
        GOOD,
        "Rename the config file to end in .yaml: --config config.yaml",
    ),
    (
        "No such config file",
        f"{RUN} --config /no/such/config.yaml",
        GOOD,
        "Point --config at an existing YAML file: --config config.yaml",
    ),
    (
        "A config file holds a mapping",
        f"echo '[{{\"tp-size\": 1}}]' > config.yaml && {RUN} --config config.yaml",
        GOOD,
        'Write config.yaml as one mapping of option names to values (`{"tp-size": 1}`), not a list',
    ),
    # --old-flag is deprecated (no example to copy) and --lora-paths' own action rejects the
    # value on the command line too: --served-name is the option that moves there.
    (
        "--{key} ({type(action).__name__}) cannot be set",
        f'echo \'{{"tp-size": 1, "served-name": "SERVED_NAME"}}\' > config.yaml && {RUN} '
        "--config config.yaml",
        f"{GOOD} --served-name SERVED_NAME",
        "Move served-name out of config.yaml and pass --served-name on the command line",
    ),
    # The log line of a file that does not read (the sandbox's yaml raises for it).
    (
        "Cannot read config file",
        f"echo '{{\"tp-size\": 1' > config.yaml && {RUN} --config config.yaml",
        GOOD,
        'Fix the syntax of config.yaml: it must read as YAML (`{"tp-size": 1}`)',
    ),
]


@pytest.mark.parametrize(("message", "before", "after", "solution"), CASES)
def test_each_config_check_gets_a_verified_fix(verdicts, message, before, after, solution) -> None:
    record, v = one(verdicts, message)
    assert v.verification["status"] == "verified", v.verification
    assert v.verification["reason"] == ""
    assert v.example_fix == f"# before\n{before}\n# after\n{after}"
    assert v.solution == solution


def test_a_check_no_config_mistake_reaches_is_unverified_and_says_what_was_tried(
    verdicts,
) -> None:
    _, v = one(verdicts, "A config file of over a megabyte")
    assert v.verification["status"] == "unverified"
    line = line_of("cannot be set in a config file", READER_TEXT)
    assert v.verification["reason"] == (
        "none of 9 --config launches raised it (--config with no file after it; two --config "
        "files; a config file named config.json; a config file that does not exist; a config "
        "file holding a list; a config file that does not read; a config file setting "
        "--lora-paths; a config file setting --served-name; a config file setting --old-flag); "
        f"the last raised ValueError at config_reader.py:{line} (--old-flag (DeprecatedFlag) "
        "cannot be set in a config file)"
    )
    assert v.example_fix is None and v.keep_fix is False


def test_the_other_checks_still_verify_with_the_stage_in_front(verdicts) -> None:
    _, v = one(verdicts, "page_size must divide")
    assert v.verification["status"] == "verified"
    assert v.example_fix.endswith("--page-size 64")


def test_an_option_no_other_fix_moves_is_removed_from_the_file(tmp_path: Path) -> None:
    # Without --served-name, only --lora-paths is left to show (its action rejects the
    # example value on the command line as well): the fix leaves it out of the file.
    _, v = one(verdicts_of(tmp_path, served_name=False), "--{key} ({type(action).__name__})")
    assert v.verification["status"] == "verified"
    assert v.example_fix == (
        f'# before\necho \'{{"tp-size": 1, "lora-paths": ["/path/to/lora-paths"]}}\' > config.yaml '
        f"&& {RUN} --config config.yaml\n# after\n{GOOD}"
    )
    assert v.solution == "Remove lora-paths from config.yaml"


NO_PARSE = """

def prepare_server_args(argv):
    return argv
"""

FAILS = PREPARE.replace(
    '    parser = argparse.ArgumentParser(prog="fakesrv")\n',
    '    parser = argparse.ArgumentParser(prog="fakesrv")\n'
    '    assert os.environ.get("FAKE_NEVER"), "needs FAKE_NEVER"\n',
)


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("", "the launch's step before parsing (prepare_server_args()) cannot run: this "
             f"revision's {ARGS} has no prepare_server_args()"),
        (NO_PARSE, "the launch's step before parsing (prepare_server_args()) cannot run: this "
                   "revision's prepare_server_args() does not parse a command line it is given"),
        (FAILS, "the launch's step before parsing (prepare_server_args()) cannot run: "
                "prepare_server_args fails before parsing a plain launch (AssertionError: "
                "needs FAKE_NEVER)"),
    ],
)  # fmt: skip
def test_a_revision_without_a_working_stage_leaves_its_checks_unverified(
    tmp_path: Path, entry: str, reason: str
) -> None:
    out = verdicts_of(tmp_path, entry=entry)
    _, v = one(out, "No such config file")
    assert v.verification["status"] == "unverified"  # never "not-applicable": it is the launch's
    assert v.verification["reason"] == reason
    assert v.example_fix is None and v.keep_fix is False
    _, page = one(out, "page_size must divide")  # the rest of the revision is unaffected
    assert page.verification["status"] == "verified"


def test_a_config_files_options_reach_the_validation_and_each_run_has_only_its_files(
    tmp_path: Path,
) -> None:
    g, sha = config_repo(tmp_path / "repo")
    line = line_of("tp_size must be at most 8")
    check = Target(ARGS, "ServerArgs.check_server_args", line, line)
    path_check = Target(READER, "ConfigReader._load", 0)
    with Harness(config_spec(), repo=str(g.root), sha=sha, workdir=tmp_path) as h:
        out = h.run(["--config", "config.yaml"], {}, check, files={"config.yaml": '{"tp-size": 9}'})
        assert (out.status, out.message) == ("raised", "tp_size must be at most 8")
        passed = h.run(["--config", "config.yaml"], {}, check, files={"config.yaml": ""})
        assert passed.status == "passed"  # an empty file is an empty mapping
        # The file of the run before is gone: this launch names no file.
        gone = h.run(["--config", "config.yaml"], {}, path_check)
        assert (gone.status, gone.exc_class) == ("raised", "FileNotFoundError")
        assert gone.message == "No such config file: config.yaml"
        assert h.info["argv"]["ready"] is True
        assert h.info["options"]["--lora-paths"]["action"] == "LoRAPathAction"


def test_the_stage_is_the_entrys_statements_before_the_parse_and_what_they_reach() -> None:
    import ast

    tree = ast.parse(PREPARE)
    body = prefix(tree.body[0])
    assert [ast.unparse(s).splitlines()[0] for s in body] == [
        "parser = argparse.ArgumentParser(prog='fakesrv')",
        "ServerArgs.add_cli_args(parser)",
        "if '--config' in argv:",
    ]
    reached = reach(body, {READER: ast.parse(READER_TEXT)})
    assert {q for _, q in reached} == {
        "ConfigReader.__init__",
        "ConfigReader.merged",
        "ConfigReader._path",
        "ConfigReader._load",
        "ConfigReader._words",
    }
    assert prefix(ast.parse("def f(argv):\n    return argv\n").body[0]) is None


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"tp-size": 1, "x": [1, "a"]}', {"tp-size": 1, "x": [1, "a"]}),
        ('[{"tp-size": 1}]', [{"tp-size": 1}]),
        ("", None),
        ("  \n", None),
        ('"a"', "a"),
        (b'{"a": true}', {"a": True}),
    ],
)
def test_the_sandbox_yaml_reads_the_json_subset(text: str | bytes, value: object) -> None:
    assert json_yaml.safe_load(text) == value
    if isinstance(text, str):
        assert json_yaml.safe_load(io.StringIO(text)) == value
        assert json_yaml.load(io.StringIO(text), Loader=json_yaml.SafeLoader) == value


@pytest.mark.parametrize("text", ['{"tp-size": 1', "tp-size: 1", "[1, 2"])
def test_text_outside_the_subset_is_a_yaml_error(text: str) -> None:
    with pytest.raises(json_yaml.YAMLError, match="while parsing"):
        json_yaml.safe_load(io.StringIO(text))


@pytest.mark.parametrize(
    ("texts", "command"),
    [
        ((("c.yaml", '{"a": 1}'),), "echo '{\"a\": 1}' > c.yaml && run --config c.yaml"),
        ((("c.yaml", "it's"),), "echo 'it'\"'\"'s' > c.yaml && run --config c.yaml"),
        # Several lines stay one shell line, so an example fix keeps its two commands.
        (
            (("c.yaml", "a: 1\nb: 5%\n"),),
            "printf 'a: 1\\nb: 5%%\\n' > c.yaml && run --config c.yaml",
        ),
    ],
)
def test_a_launch_writes_its_files_first_on_the_same_line(texts, command: str) -> None:
    launch = Launch((("--config", "c.yaml"),), texts=texts)
    assert launch.command("run") == command


def test_the_shipped_spec_runs_sglangs_config_merger_at_argv_time() -> None:
    spec = spec_for()
    assert spec.argv is not None and spec.argv.entry == "prepare_server_args"
    assert spec.argv.modules == ("sglang.srt.server_args_config_parser",)
    assert spec.argv.config_option == "--config"
    assert spec.substitutes["yaml"] == "kverr.verify.sandbox.json_yaml"
