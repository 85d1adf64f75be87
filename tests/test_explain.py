"""`kverr explain` and `kverr load`: exit codes, the JSON contract, inputs, and a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import synth
from test_catalog import FIXTURE_RECORDS, catalog_file  # noqa: F401 (fixture)
from typer.testing import CliRunner

from kverr.cli import app

TP_LINE = "[2026-04-07 10:05:08 TP0] ValueError: tp_size=3 must be divisible by pp_size=2"
NO_MATCH = "No known SGLang error matches this text.\n"


@pytest.fixture
def run(catalog_file, monkeypatch):  # noqa: F811
    monkeypatch.setenv("KVERR_CATALOG", str(catalog_file))
    monkeypatch.setenv("COLUMNS", "100")

    def invoke(*args: str, input: str | bytes | None = None):
        return CliRunner().invoke(app, ["explain", *args], input=input)

    return invoke


def test_json_contract(run):
    res = run(TP_LINE, "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert sorted(out) == ["matches", "query"] and out["query"] == TP_LINE
    (m,) = out["matches"]
    assert sorted(m) == [
        "fixStatus", "line", "match", "project", "record", "releases", "score", "values"
    ]  # fmt: skip
    # The fixture dataset was not verified, and says so in one sentence.
    assert m["fixStatus"].startswith("Fix not verified: ")
    assert m["record"] == FIXTURE_RECORDS[2]
    # a dataset without a profile in its manifest (older than profiles) is the default project's;
    # the "[date time TP0]" prefix is that project's log form
    assert m["project"] == {"name": "sglang", "product": "SGLang", "detectedBy": "log form"}
    assert (m["match"], m["line"], m["releases"]) == ("pattern", 1, ["v0.4.0", "v0.5.0"])
    assert m["values"] == {"self.tp_size": "3", "self.pp_size": "2"}
    assert isinstance(m["score"], float) and 0.9 <= m["score"] <= 1.0


def test_json_when_nothing_matches(run):
    res = run("all good here", "--json")
    assert (res.exit_code, json.loads(res.stdout)) == (1, {"query": "all good here", "matches": []})


def test_human_view_shows_values_meaning_fix_and_source(run):
    res = run(TP_LINE)
    assert res.exit_code == 0
    text = res.stdout
    for piece in ("tp_size=3 must be divisible by pp_size=2", "What it means", "Why it fired", "--tp-size, --pp-size",
                  "How to fix", "• Remove one of the conflicting flags", "Before:", "Source", "server_args.py#L100",
                  "Releases", "v0.4.0, v0.5.0 · 2 releases", "pattern match 0.99", "input line 1"):  # fmt: skip
        assert piece in text, piece


def test_human_view_when_nothing_matches(run):
    res = run("all good here")
    assert (res.exit_code, res.stdout) == (1, NO_MATCH)


@pytest.mark.parametrize(
    "args, input, code, message",
    [
        (["x", "--file", "y.log"], None, 2, "kverr: both a text and --file y.log were given; pass a log line, --file PATH, or pipe text on stdin, not both.\n"),
        (["   "], None, 2, "kverr: the text to explain is empty; pass a log line, --file PATH, or pipe text on stdin.\n"),
        ([], "", 2, "kverr: the text to explain is empty; pass a log line, --file PATH, or pipe text on stdin.\n"),
        (["--file", "/nonexistent/x.log"], None, 2, "kverr: cannot read /nonexistent/x.log (No such file or directory); pass a log line, --file PATH, or pipe text on stdin.\n"),
        ([TP_LINE, "--release", "v9"], None, 2, "kverr: version 'v9' is not a revision in this catalog; list revisions with `kverr history` or pass a release tag like v0.5.0.\n"),
    ],
)  # fmt: skip
def test_bad_usage_exits_2_with_one_line(run, args, input, code, message):
    res = run(*args, input=input)
    assert (res.exit_code, res.stderr) == (code, message)


def test_version_flag(run):
    # a pasted line may start with "--": it is the text, with or without `--` before it
    assert run("--ssl-keyfile requires --ssl-certfile.", "--json").exit_code == 0
    assert run("--release", "v0.5.0", "--", "--ssl-certfile requires --ssl-keyfile.").exit_code == 0
    assert run("--release", "v0.4.0", "--", "--ssl-certfile requires --ssl-keyfile.").exit_code == 1


def test_version_without_the_error_says_where_it_exists(run):
    res = run("--release", "v0.4.0", "--", "--ssl-certfile requires --ssl-keyfile.")
    assert res.exit_code == 1
    assert (
        res.stdout.splitlines()[0]
        == "No error that v0.4.0 can raise matches this text. Other revisions have it:"
    )
    assert res.stdout.splitlines()[1].startswith(
        "  55b1000000000002  --ssl-certfile requires --ssl-keyfile.  (in: v0.5.0"
    )
    json_res = run("--release", "v0.4.0", "--json", "--", "--ssl-certfile requires --ssl-keyfile.")
    assert json.loads(json_res.stdout)["matches"] == []  # the JSON contract stays as it is


def test_stdin_and_dash(run):
    assert run(input=TP_LINE + "\n").exit_code == 0
    assert run("-", input=TP_LINE + "\n").exit_code == 0
    assert run("--file", "-", input=b"\xff\xfe" + TP_LINE.encode() + b"\n").exit_code == 0


def test_file_input_traceback_and_binary(run, tmp_path):
    log = tmp_path / "x.log"
    log.write_bytes(
        b"\x00\x01garbage\xff\r\nWARNING:sglang.srt.server_args:"
        + FIXTURE_RECORDS[6]["errorMessage"].encode()
        + b"\r\n"
    )
    res = run("--file", str(log), "--json")
    assert res.exit_code == 0
    assert [(m["record"]["id"], m["line"]) for m in json.loads(res.stdout)["matches"]] == [
        ("0de0000000000007", 2)
    ]
    garbage = tmp_path / "bin"
    garbage.write_bytes(bytes(range(256)) * 1000)
    assert (run("--file", str(garbage)).exit_code, run("--file", str(garbage)).stdout) == (
        1,
        NO_MATCH,
    )


def test_one_megabyte_line(run, tmp_path):
    big = tmp_path / "big.log"
    big.write_text("y" * (1 << 20) + " --ssl-keyfile requires --ssl-certfile.\n")
    res = run("--file", str(big), "--json")
    assert res.exit_code == 0
    assert [m["record"]["id"] for m in json.loads(res.stdout)["matches"]] == ["55a1000000000001"]


def test_long_log_is_scanned_most_severe_first(run, tmp_path):
    errors = [
        "WARNING:sglang.srt.server_args:" + FIXTURE_RECORDS[6]["errorMessage"],  # warning
        "ValueError: " + FIXTURE_RECORDS[9]["errorMessage"],  # critical
        "tp_size=3 must be divisible by pp_size=2",  # error
    ]
    log = tmp_path / "launch.log"
    synth.launch_log(log, 30_000, errors, every=9_000)  # > 1 MB: takes the streaming path
    assert log.stat().st_size > 1 << 20
    res = run("--file", str(log), "--json")
    assert res.exit_code == 0
    found = [(m["record"]["severity"], m["line"]) for m in json.loads(res.stdout)["matches"]]
    assert found == [("critical", 18000), ("error", 27000), ("warning", 9000)]


def test_missing_and_corrupt_catalog(tmp_path, monkeypatch):
    monkeypatch.setenv("KVERR_CATALOG", str(tmp_path / "none.duckdb"))
    res = CliRunner().invoke(app, ["explain", "x"])
    assert res.exit_code == 2 and res.stderr.startswith(
        f"kverr: catalog {tmp_path / 'none.duckdb'} does not exist"
    )
    (tmp_path / "bad.duckdb").write_bytes(b"junk" * 100)
    res = CliRunner().invoke(app, ["explain", "x", "--catalog", str(tmp_path / "bad.duckdb")])
    assert (
        res.exit_code == 2
        and "is not a kverr catalog (not a DuckDB file)" in res.stderr
        and "Traceback" not in res.output
    )


def test_load_command(tmp_path):
    bad = synth.make_record("bad0000000000001", "nested", r"(a+)+ nested")
    ds = synth.write_files(tmp_path / "ds", FIXTURE_RECORDS[:3] + [bad])
    res = CliRunner().invoke(app, ["load", str(ds), "--catalog", str(tmp_path / "c.duckdb")])
    assert res.exit_code == 0
    assert (
        res.stderr
        == "kverr: warning: record bad0000000000001: messagePattern skipped because it nests quantifiers\n"
    )
    assert (
        res.stdout
        == f"loaded 4 records into {tmp_path / 'c.duckdb'} (1 found by traceback or id only)\n"
    )
    res = CliRunner().invoke(
        app, ["load", str(tmp_path / "nope"), "--catalog", str(tmp_path / "c.duckdb")]
    )
    assert (res.exit_code, res.stderr) == (
        2,
        f"kverr: {tmp_path / 'nope'} is not a directory; pass a dataset directory written by `kverr build`.\n",
    )


@pytest.mark.parametrize("command", ["explain", "load"])
def test_help_has_an_example(command):
    res = CliRunner().invoke(app, [command, "--help"])
    assert res.exit_code == 0 and "Example: kverr " + command in res.stdout


# ---------------------------------------------------------------- a real process

PROBE = """
import sys
from kverr.cli import main
sys.argv = ["kverr", "explain", sys.argv[1], *sys.argv[2:]]
try:
    main()
except SystemExit as exc:
    code = exc.code
heavy = sorted(m for m in ("libcst", "jsonschema", "kverr.extractor", "kverr.records", "kverr.schema",
                           "pydantic", "rich", "typer._adapters", "duckdb") if m in sys.modules)
views = sorted(m for m in ("kverr.render", "kverr.present.text", "kverr.present.display") if m in sys.modules)
print("\\nPROBE", code, heavy, file=sys.stderr)
print("VIEWS", views, file=sys.stderr)
"""


@pytest.mark.parametrize("view", [["--json"], ["--plain"]])
def test_explain_path_never_imports_libcst_jsonschema_or_pydantic(catalog_file, view):  # noqa: F811
    """Nor Rich, nor the pydantic adapters Typer builds per parameter (kverr/cli.py's
    _PlainValues), nor the `duckdb` package around DuckDB's engine (catalog/engine.py):
    start-up is the engine plus little else (bench/bench_explain.py)."""
    env = {**os.environ, "KVERR_CATALOG": str(catalog_file)}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, TP_LINE, *view],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    probe, views = proc.stderr.strip().splitlines()[-2:]
    assert probe == "PROBE 0 []"
    if view == ["--json"]:  # the card and the terminal views are the human view's alone
        assert views == "VIEWS []"
        assert json.loads(proc.stdout)["matches"][0]["record"]["id"] == "7d10000000000003"
    else:
        assert "tp_size=3 must be divisible by pp_size=2" in proc.stdout


def test_main_runs_one_command_and_keeps_them_all(catalog_file, monkeypatch, capsys):  # noqa: F811
    """main() registers only the command the first argument names for the run (Typer builds
    the parameters of every registered command first); help and typo hints still see them
    all, and afterwards every command is registered again."""
    from kverr import cli

    every = list(cli.app.registered_commands)
    monkeypatch.setenv("KVERR_CATALOG", str(catalog_file))
    for argv, code, shown in (
        (["explain", TP_LINE, "--json"], 0, '"7d10000000000003"'),
        (["-h"], 0, "  version "),
        (["explian", "x"], 2, "Did you mean 'explain'?"),
    ):
        monkeypatch.setattr(sys, "argv", ["kverr", *argv])
        with pytest.raises(SystemExit) as exc:
            cli.main()
        out = capsys.readouterr()
        assert exc.value.code == code and shown in out.out + out.err
        assert cli.app.registered_commands == every


def test_real_subprocess(catalog_file):  # noqa: F811
    env = {**os.environ, "KVERR_CATALOG": str(catalog_file)}
    cmd = [sys.executable, "-m", "kverr", "explain"]
    ok = subprocess.run([*cmd, TP_LINE], capture_output=True, text=True, env=env, timeout=120)
    assert ok.returncode == 0 and "tp_size=3 must be divisible by pp_size=2" in ok.stdout
    miss = subprocess.run([*cmd, "fine"], capture_output=True, text=True, env=env, timeout=120)
    assert (miss.returncode, miss.stdout, miss.stderr) == (1, NO_MATCH, "")
    piped = subprocess.run(
        cmd,
        input=Path(__file__).read_text()[:0] + TP_LINE,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert piped.returncode == 0


def test_one_message_from_several_sites_is_one_panel(tmp_path, monkeypatch):
    from test_catalog import build_catalog

    recs = [
        synth.make_record(
            "e000000000000001", "Disabling radix cache since page_size = 1.", line=10
        ),
        synth.make_record(
            "e000000000000002", "Disabling radix cache since page_size = 1.", line=900
        ),
    ]
    monkeypatch.setenv("KVERR_CATALOG", str(build_catalog(tmp_path, recs)))
    monkeypatch.setenv("COLUMNS", "200")
    res = CliRunner().invoke(app, ["explain", "Disabling radix cache since page_size = 1."])
    assert res.exit_code == 0
    assert res.stdout.count("What it means") == 1
    assert "same message also raised at python/sglang/srt/server_args.py:" in res.stdout


def test_the_explanation_shows_the_captured_value():
    """A record's words may name a message placeholder; the view puts in what was pasted."""
    from kverr.ftypes import Match
    from kverr.render import explain_text

    rec = {
        "id": "5c0000000000001a",
        "errorMessage": "'{self.schedule}' is not supported.",
        "placeholders": ["self.schedule"],
        "severity": "error",
        "triggerScenarios": "Launching with --schedule={self.schedule} (not fifo or lof).",
        "solutions": ["Set --schedule to one of fifo, lof"],
    }
    out = explain_text([Match(rec, 1.0, "pattern", {"self.schedule": "'dfs-weight'"})])
    assert "--schedule=dfs-weight (not fifo or lof)" in out
    out = explain_text([Match(rec, 1.0, "pattern", {})])  # nothing captured: its label
    assert "--schedule=‹schedule›" in out
