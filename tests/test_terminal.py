"""The terminal answer: the fix first, commands whole on their own lines outside any
border, releases as ranges, plain text in a pipe, colour and links on a terminal, a pager for
long output, the option conventions (-h, --version, completion, --release) and `show` / `search`.

Real processes where the terminal matters: a pseudo-terminal (pty) stands in for one.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
import synth
from kverr.catalog import load_dataset, open_catalog
from kverr.present import display
from kverr.present import text as card
from typer.testing import CliRunner

from kverr.cli import app
from kverr.term import Term, pager_command

ANSI = re.compile(r"\x1b\[[0-9;]*m|\x1b\]8;;[^\x1b]*\x1b\\")
BORDER = set("│┃║╭╮╰╯─━═┌┐└┘|")
LONG_BEFORE = (
    "python -m sglang.launch_server --model-path MODEL_PATH --tp-size 8 --pp-size 3 "
    "--chunked-prefill-size 8192 --enable-hierarchical-cache --hicache-ratio 2.5"
)
LONG_AFTER = (
    "python -m sglang.launch_server --model-path MODEL_PATH --tp-size 8 --pp-size 2 "
    "--chunked-prefill-size 8192 --enable-hierarchical-cache --hicache-ratio 2.5"
)
TAGS = ["v0.1.0", "v0.2.0", "v0.3.0", "v0.3.1", "v0.4.0", "v0.5.0"]
SHAS = [f"{i:x}" * 40 for i in range(1, 8)]
REVISIONS = [
    {"ord": i, "sha": SHAS[i], "date": f"2026-0{i + 1}-01T00:00:00Z", "tags": [t], "subject": t}
    for i, t in enumerate(TAGS)
] + [{"ord": 6, "sha": SHAS[6], "date": "2026-08-01T00:00:00Z", "tags": [], "subject": "main"}]
TP = synth.make_record(
    "7d20000000000001",
    "tp_size={self.tp_size} must be divisible by pp_size={self.pp_size}",
    r"tp_size=(?P<v0>[0-9]+) must be divisible by pp_size=(?P<v1>[0-9]+)",
    placeholders=["self.tp_size", "self.pp_size"],
    flags=["--tp-size", "--pp-size"],
    solutions=["Use a --pp-size that divides --tp-size", "Check `--tp-size % --pp-size == 0`"],
    exampleFix=f"# before\n{LONG_BEFORE}\n# after\n{LONG_AFTER}",
    documentation="Each pipeline stage holds the same number of tensor-parallel ranks, so the "
    "tensor-parallel size has to split evenly over the stages; otherwise some stage would be "
    "left with a fraction of a rank, which the scheduler cannot place on any GPU.",
    githubUrl="https://github.com/sgl-project/sglang/blob/" + "7" * 40
    + "/python/sglang/srt/server_args.py#L1200-L1236",
)  # fmt: skip
GAP = synth.make_record("9a30000000000002", "--page-size {self.page_size} is not a power of two.",
                        placeholders=["self.page_size"], flags=["--page-size"])  # fmt: skip
OCCURRENCES = [
    # TP: every release and the newest commit; GAP: v0.1.0-v0.2.0, then v0.4.0 on
    *({"id": TP["id"], "sha": s, "file": TP["filePath"], "line": 1218} for s in SHAS),
    *({"id": GAP["id"], "sha": SHAS[i], "file": GAP["filePath"], "line": 90} for i in (0, 1, 4, 5, 6)),
]  # fmt: skip
PASTE = "ValueError: tp_size=8 must be divisible by pp_size=3"


@pytest.fixture(scope="module")
def catalog(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("terminal")
    ds = synth.write_files(tmp / "ds", [TP, GAP], revisions=REVISIONS, occurrences=OCCURRENCES)
    load_dataset(ds, tmp / "c.duckdb")
    return tmp / "c.duckdb"


@pytest.fixture
def tp_match(catalog):
    with open_catalog(catalog) as cat:
        (m,) = cat.explain(PASTE)
        return m, cat.release_orders()


def visible(text: str) -> str:
    return ANSI.sub("", text)


# ---------------------------------------------------------------- the card


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("color", [True, False], ids=["colour", "plain"])
def test_fix_commands_are_whole_lines_without_borders(tp_match, width, color):
    m, order = tp_match
    term = Term(color=color, links=color, width=width, tty=True)
    lines = [visible(line) for line in card.card(m, term, order)]
    assert LONG_BEFORE in lines and LONG_AFTER in lines  # each one whole, on a line of its own
    assert len(LONG_AFTER) > width  # so the terminal, not kverr, may fold it on screen
    assert not BORDER & set("".join(lines)), "a border character would be copied with the command"
    # the fix comes before the explanation, right under the message
    assert lines.index("How to fix") < next(
        i for i, x in enumerate(lines) if x.startswith("What it means")
    )
    assert lines[0].startswith("ERROR ValueError · pattern match 0.9")
    assert lines[0].endswith(" · input line 1")
    assert lines[1] == "tp_size=8 must be divisible by pp_size=3"
    # prose is wrapped to the width; only commands and the URL may pass it
    long = [x for x in lines if len(x) > width]
    assert all(x in (LONG_BEFORE, LONG_AFTER) or x.strip().startswith("https://") for x in long)
    assert any(x.startswith("               ") for x in lines)  # a fact wrapped under its label


def test_changed_arguments_are_highlighted(tp_match):
    m, order = tp_match
    lines = card.card(m, Term(color=True, width=100, tty=True), order)
    after = next(x for x in lines if visible(x) == LONG_AFTER)
    before = next(x for x in lines if visible(x) == LONG_BEFORE)
    assert "\x1b[1;32m2\x1b[0m" in after and "\x1b[1;31m3\x1b[0m" in before
    assert "\x1b[1;32m--tp-size" not in after  # unchanged arguments stay plain


def test_plain_card_is_unwrapped_text(tp_match):
    m, order = tp_match
    lines = card.card(m, Term(), order)
    assert "\x1b" not in "".join(lines)
    meaning = next(x for x in lines if x.startswith("What it means"))
    assert meaning == "What it means  " + TP["documentation"]  # one line, however long
    assert "               " + TP["githubUrl"] in lines  # the URL whole, clickable by its text
    assert "Releases       v0.1.0 … v0.5.0, 7777777777 · 7 releases" in lines
    assert "  Fix not verified: this catalog was built without running the checks." in lines


def test_links_are_osc8_where_supported(tp_match):
    m, order = tp_match
    text = "\n".join(card.card(m, Term(color=True, links=True, width=100, tty=True), order))
    assert f"\x1b]8;;{TP['githubUrl']}\x1b\\" in text
    assert TP["githubUrl"] + "\n" not in visible(text)  # the label is the link; no bare URL line


def test_verified_fix_says_against_what(tp_match):
    m, order = tp_match
    rec = {**m.record, "verification": {"status": "verified", "platform": "cuda-sm90",
                                        "revision": "3d3a32c0b9f5", "reason": ""}}  # fmt: skip
    m = type(m)(rec, m.score, m.how, m.values, m.line, m.revisions)
    names = {"3d3a32c0b9f5": "v0.5.9"}  # its release, where the catalog has it tagged
    assert "  Fix verified against v0.5.9's own checks." in card.card(m, Term(), order, names=names)
    assert "  Fix verified against commit 3d3a32c0b9f5's own checks." in card.card(m, Term(), order)
    verbose = card.card(m, Term(), order, verbose=True)  # the platform profile it ran on
    assert "  Fix verified against commit 3d3a32c0b9f5's own check on cuda-sm90." in verbose


@pytest.mark.parametrize(
    ("names", "span", "gaps"),
    [(["v0.1.0"], "v0.1.0 · 1 release", []),
     (["v0.1.0", "v0.2.0"], "v0.1.0, v0.2.0 · 2 releases", []),
     (TAGS, "v0.1.0 … v0.5.0 · 6 releases", []),
     (["v0.1.0", "v0.2.0", "v0.4.0", "v0.5.0", "main"], "v0.1.0, v0.2.0, v0.4.0 … main · 5 releases", ["v0.3.0, v0.3.1"]),
     (["v0.1.0", "v0.5.0"], "v0.1.0, v0.5.0 · 2 releases", ["v0.2.0 … v0.4.0"]),
     (["v0.3.0", "seed"], "v0.3.0, seed · 2 releases", []),
     ([], "", [])],
    ids=["one", "two", "all", "gap", "wide-gap", "unknown-name", "none"],
)  # fmt: skip
def test_releases_as_ranges(names, span, gaps):
    order = [*TAGS, "main"]
    assert display.release_span(names, order) == span
    assert display.release_gaps(names, order) == gaps


def test_history_lists_releases_as_ranges(catalog, monkeypatch):
    monkeypatch.setenv("KVERR_CATALOG", str(catalog))
    out = CliRunner().invoke(app, ["history", GAP["id"]]).stdout.splitlines()
    # the same list, and count, as the card's Releases line and `show --json`'s `releases`
    # (the newest commit is untagged: its short sha is one of them)
    assert out[-2:] == [
        "releases: v0.1.0, v0.2.0, v0.4.0, v0.5.0, 7777777777 · 5 releases",
        "not in: v0.3.0, v0.3.1",
    ]
    doc = json.loads(CliRunner().invoke(app, ["history", GAP["id"], "--json"]).stdout)
    shown = json.loads(CliRunner().invoke(app, ["show", GAP["id"], "--json"]).stdout)
    assert doc["releases"] == shown["releases"] == [*TAGS[:2], *TAGS[4:], "7777777777"]


def test_gaps_show_on_the_card(catalog):
    with open_catalog(catalog) as cat:
        m = cat.record_match(GAP["id"])
        lines = card.card(m, Term(), cat.release_orders())
    assert "Releases       v0.1.0, v0.2.0, v0.4.0, v0.5.0, 7777777777 · 5 releases" in lines
    assert "               not in v0.3.0, v0.3.1" in lines
    assert "--page-size ‹page_size› is not a power of two." in lines  # placeholder as a label


# ---------------------------------------------------------------- pipes, terminals, pagers


def run(catalog, *args, env=None, input=None):
    env = {**os.environ, "KVERR_CATALOG": str(catalog), **(env or {})}
    return subprocess.run([sys.executable, "-m", "kverr", *args], capture_output=True, text=True,
                          env=env, input=input, timeout=120)  # fmt: skip


def test_piped_output_is_plain_and_unwrapped(catalog):
    res = run(catalog, "explain", PASTE, env={"COLUMNS": "80"})
    assert res.returncode == 0 and "\x1b" not in res.stdout
    lines = res.stdout.splitlines()
    assert LONG_AFTER in lines and ("What it means  " + TP["documentation"]) in lines


def in_pty(catalog, *args, env=None, timeout=60.0) -> tuple[int, str]:
    """Run kverr with a pseudo-terminal as stdin/stdout/stderr: what a user's shell gives it."""
    env = {**os.environ, "KVERR_CATALOG": str(catalog), "COLUMNS": "80", "LINES": "500",
           "TERM": "xterm-256color", **(env or {})}  # fmt: skip
    for name in ("NO_COLOR", "FORCE_HYPERLINK", "PAGER", "KVERR_PAGER"):
        if name not in (env or {}) and name in os.environ:
            del env[name]
    env = {k: v for k, v in env.items() if v is not None}
    pid, fd = pty.fork()
    if pid == 0:  # the child: exec kverr on the pty
        os.execvpe(sys.executable, [sys.executable, "-m", "kverr", *args], env)
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the child closed the pty
                break
            if not chunk:
                break
            out += chunk
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), out.decode("utf-8", "replace").replace("\r\n", "\n")


def test_terminal_gets_colour_and_wrapped_prose(catalog):
    code, out = in_pty(catalog, "explain", PASTE)
    assert code == 0 and "\x1b[" in out
    lines = [visible(x) for x in out.splitlines()]
    assert LONG_AFTER in lines  # still whole
    assert all(
        len(x) <= 80 for x in lines if x not in (LONG_BEFORE, LONG_AFTER) and "https://" not in x
    )


@pytest.mark.parametrize(
    ("args", "env"),
    [(["--plain"], {}), ([], {"NO_COLOR": "1"}), ([], {"TERM": "dumb"})],
    ids=["--plain", "NO_COLOR", "TERM=dumb"],
)
def test_plain_on_a_terminal_when_asked(catalog, args, env):
    code, out = in_pty(catalog, "explain", *args, PASTE, env=env)
    assert code == 0 and "\x1b" not in out
    assert ("What it means  " + TP["documentation"]) in out.splitlines()


def test_osc8_links_when_the_terminal_has_them(catalog):
    _, out = in_pty(catalog, "explain", PASTE, env={"FORCE_HYPERLINK": "1"})
    assert f"\x1b]8;;{TP['githubUrl']}\x1b\\" in out
    _, out = in_pty(
        catalog, "explain", PASTE, env={"FORCE_HYPERLINK": "0", "TERM_PROGRAM": "iTerm.app"}
    )
    assert "\x1b]8;;" not in out


def test_long_output_is_paged_on_a_terminal(catalog, tmp_path):
    paged = tmp_path / "paged.txt"
    pager = f"cat > {paged}"
    code, out = in_pty(catalog, "explain", PASTE, env={"LINES": "10", "KVERR_PAGER": pager})
    assert code == 0 and paged.is_file() and LONG_AFTER in visible(paged.read_text())
    assert LONG_AFTER not in visible(out)  # it went to the pager, not around it
    paged.unlink()
    code, out = in_pty(
        catalog, "explain", "--no-pager", PASTE, env={"LINES": "10", "KVERR_PAGER": pager}
    )
    assert not paged.exists() and LONG_AFTER in visible(out)
    # short output, or a pipe, never pages
    code, out = in_pty(catalog, "explain", PASTE, env={"LINES": "200", "KVERR_PAGER": pager})
    assert not paged.exists()
    assert run(catalog, "explain", PASTE, env={"LINES": "10", "KVERR_PAGER": pager}).returncode == 0
    assert not paged.exists()


def test_a_missing_pager_falls_back_to_printing(catalog):
    code, out = in_pty(catalog, "explain", PASTE, env={"LINES": "10", "PAGER": "no-such-pager-x"})
    assert code == 0 and LONG_AFTER in visible(out)


@pytest.mark.parametrize(
    ("env", "cmd"),
    [({}, "less"), ({"PAGER": "more"}, "more"), ({"PAGER": "more", "KVERR_PAGER": "most"}, "most"),
     ({"KVERR_PAGER": "cat"}, None), ({"PAGER": ""}, None)],
)  # fmt: skip
def test_pager_choice_follows_git(env, cmd):
    assert pager_command(env) == cmd


def test_a_closed_pipe_is_not_an_error(catalog):
    env = {**os.environ, "KVERR_CATALOG": str(catalog)}
    res = subprocess.run(f"{sys.executable} -m kverr explain '{PASTE}' | head -1", shell=True,
                         capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
    assert res.stdout.startswith("ERROR") and "Traceback" not in res.stderr


# ---------------------------------------------------------------- option conventions


@pytest.mark.parametrize("args", [["-h"], ["explain", "-h"], ["show", "-h"], ["search", "-h"]])
def test_dash_h_is_help(args):
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0 and res.stdout.startswith("Usage: kverr")
    assert "<bool>" not in res.stdout and "╭" not in res.stdout


def test_kverr_version_is_kverrs_own():
    from kverr import __version__

    for flag in ("--version", "-V"):
        res = CliRunner().invoke(app, [flag])
        assert (res.exit_code, res.stdout) == (0, f"kverr {__version__}\n")


def test_release_accepts_the_version_python_prints(catalog, monkeypatch):
    monkeypatch.setenv("KVERR_CATALOG", str(catalog))
    outs = [
        CliRunner().invoke(app, ["explain", *flag, PASTE, "--json"])
        for flag in (["--release", "v0.3.0"], ["--release", "0.3.0"], ["-r", "0.3.0"])
    ]
    assert {o.exit_code for o in outs} == {0}
    assert len({o.stdout for o in outs}) == 1
    gone = CliRunner().invoke(
        app, ["explain", "--release", "0.3.0", "--page-size 64 is not a power of two."]
    )
    assert gone.exit_code == 1 and "No error that 0.3.0 can raise" in gone.stdout
    bad = CliRunner().invoke(app, ["explain", "--release", "9.9", PASTE])
    assert bad.exit_code == 2 and bad.stderr.startswith("kverr: version '9.9' is not a revision")


KVERR_SCRIPT = Path(sys.executable).parent / "kverr"


@pytest.mark.skipif(not KVERR_SCRIPT.is_file(), reason="no kverr script beside this python")
def test_shell_completion_completes_commands_and_options():
    # what the completion script does: run the installed script with these variables set
    env = {
        **os.environ,
        "_KVERR_COMPLETE": "complete_bash",
        "COMP_WORDS": "kverr sh",
        "COMP_CWORD": "1",
    }
    res = subprocess.run([KVERR_SCRIPT], capture_output=True, text=True, env=env, timeout=60)
    assert res.stdout.split() == ["show"]
    env.update(COMP_WORDS="kverr explain --re", COMP_CWORD="2")
    res = subprocess.run([KVERR_SCRIPT], capture_output=True, text=True, env=env, timeout=60)
    assert res.stdout.split() == ["--release"]
    # --show-completion names the shell it finds among its parent processes (not $SHELL): run
    # it from bash, as a user would, so the test does not depend on what started pytest
    # (`; :` keeps bash from exec'ing kverr in its own place)
    script = subprocess.run(["bash", "-c", f"{KVERR_SCRIPT} --show-completion; :"],
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert "complete -o default -F _kverr_completion kverr" in script.stdout, script.stderr


# ---------------------------------------------------------------- show, search, explain ID


@pytest.mark.parametrize("key", [TP["id"], TP["id"][:8], TP["slug"]], ids=["id", "prefix", "slug"])
def test_show_prints_the_card(catalog, monkeypatch, key):
    monkeypatch.setenv("KVERR_CATALOG", str(catalog))
    res = CliRunner().invoke(app, ["show", key])
    assert res.exit_code == 0
    lines = res.stdout.splitlines()
    assert lines[0] == "ERROR ValueError" and LONG_AFTER in lines
    assert lines[1] == "tp_size=‹tp_size› must be divisible by pp_size=‹pp_size›"


def test_show_json_and_markdown(catalog, monkeypatch):
    monkeypatch.setenv("KVERR_CATALOG", str(catalog))
    doc = json.loads(CliRunner().invoke(app, ["show", TP["id"], "--json"]).stdout)
    assert doc == {"record": TP, "releases": [*TAGS, "7777777777"]}
    md = CliRunner().invoke(app, ["show", TP["id"], "--markdown"]).stdout
    assert md.startswith(
        "**ValueError**: `tp_size=‹tp_size› must be divisible by pp_size=‹pp_size›`"
    )
    assert f"```bash\n{LONG_AFTER}\n```" in md
    assert "- Use a `--pp-size` that divides `--tp-size`" in md
    assert "Releases: v0.1.0 … v0.5.0, 7777777777 · 7 releases" in md


def test_explain_given_an_id_shows_that_record(catalog, monkeypatch):
    monkeypatch.setenv("KVERR_CATALOG", str(catalog))
    by_id = CliRunner().invoke(app, ["explain", TP["id"]])
    shown = CliRunner().invoke(app, ["show", TP["id"]])
    assert by_id.exit_code == 0 and by_id.stdout == shown.stdout
    assert (
        json.loads(CliRunner().invoke(app, ["explain", TP["slug"], "--json"]).stdout)["matches"][0][
            "match"
        ]
        == "id"
    )


def test_search_by_words_and_by_flag(catalog, monkeypatch):
    monkeypatch.setenv("KVERR_CATALOG", str(catalog))
    res = CliRunner().invoke(app, ["search", "power", "of", "two"])
    assert res.exit_code == 0
    assert res.stdout.splitlines()[0].startswith(f"{GAP['id']}  error   ValueError")
    by_flag = CliRunner().invoke(app, ["search", "--flag", "tp_size", "--json"])
    doc = json.loads(by_flag.stdout)
    assert (doc["flag"], doc["total"]) == ("--tp-size", 1)
    assert [m["record"]["id"] for m in doc["matches"]] == [TP["id"]]
    old = CliRunner().invoke(app, ["search", "--flag", "page-size", "--release", "0.3.0"])
    assert old.exit_code == 1 and old.stdout == "No record matches involving --page-size.\n"


def test_search_pages(catalog, monkeypatch):
    monkeypatch.setenv("KVERR_CATALOG", str(catalog))
    first = CliRunner().invoke(app, ["search", "must", "power", "divisible", "--limit", "1"])
    lines = first.stdout.splitlines()
    assert (
        len(lines) == 2
        and lines[1].startswith("1-1 of 2 record(s)")
        and "--offset 1 for more" in lines[1]
    )
    rest = json.loads(
        CliRunner()
        .invoke(app, ["search", "must", "power", "divisible", "--offset", "1", "--json"])
        .stdout
    )
    assert rest["total"] == 2 and len(rest["matches"]) == 1


# ---------------------------------------------------------------- bad input: one line, next step


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [(["show", "nope"], 1, "kverr: no record has the id, slug or id prefix 'nope' in this catalog; find one with `kverr search WORDS` or `kverr explain \"LOG LINE\"`.\n"),
     (["search"], 2, "kverr: pass the words to look for or --flag NAME (one of them); e.g. `kverr search radix cache`.\n"),
     (["search", "a", "--flag", "x"], 2, "kverr: pass the words to look for or --flag NAME (one of them); e.g. `kverr search radix cache`.\n"),
     (["search", "--flag", "x", "--release", "v9"], 2, "kverr: version 'v9' is not a revision in this catalog; list revisions with `kverr history` or pass a release tag like v0.5.0.\n"),
     (["diff", "v0.1.0", "v9"], 1, "kverr: version 'v9' is not a revision in this catalog; list revisions with `kverr history` or pass a release tag like v0.5.0.\n"),
     (["diff", "v0.1.0", "0.5"], 1, "kverr: version '0.5' is not a revision in this catalog; did you mean v0.5.0? (`kverr history` lists them all)\n")],
    ids=["show-unknown", "search-nothing", "search-both", "search-bad-release", "diff-bad-rev", "diff-near-release"],
)  # fmt: skip
def test_bad_input_is_one_line_with_the_next_step(catalog, monkeypatch, args, code, message):
    monkeypatch.setenv("KVERR_CATALOG", str(catalog))
    res = CliRunner().invoke(app, args)
    assert (res.exit_code, res.stderr) == (code, message)


def test_catalog_that_is_a_small_other_file_is_named_so(tmp_path):
    other = tmp_path / "errors.jsonl"
    other.write_text("{}\n")
    res = CliRunner().invoke(app, ["explain", "x", "--catalog", str(other)])
    assert res.exit_code == 2
    assert res.stderr == (f"kverr: {other} is not a kverr catalog (not a DuckDB file); pass --catalog"
                          " a file written by `kverr load` or `kverr build --catalog`.\n")  # fmt: skip
    assert "kverr load DATASET_DIR --catalog" not in res.stderr  # that would replace the file


def test_a_release_both_projects_name_is_ranged_in_the_records_own_project(shared_release):
    """vLLM names releases v0.2.0 and v0.3.0 too: a record's releases are ranged in its own
    project's order, never one release shown both among its releases and as missing."""
    with open_catalog(shared_release) as cat:
        (m,) = cat.explain("ValueError: Our check failed at v0.2.0.", project="sglang")
        lines = card.card(m, Term(), cat.release_orders())
    (releases,) = [line for line in lines if line.startswith("Releases")]
    assert releases.split(None, 1)[1] == "v0.1.0 … v0.3.0 · 3 releases"
    assert not any(line.strip().startswith("not in") for line in lines)
