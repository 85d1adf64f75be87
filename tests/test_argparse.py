"""argparse's own errors: records derived from each revision's add_argument
declarations (records/argparse_records.py), answered from the releases the catalog holds
(catalog/argparse_answers.py) in the terminal card, `--json`, the site and the API.

The fixtures are real git repositories made in a temp dir from our own code
(tests/argparse_fixture.py): an SGLang-shaped server-args module over three tags, where
`torch_sdpa` is renamed `torch_native`, a flag is removed and another added, and a vLLM-shaped
EngineArgs whose flags take their kwargs from Literal annotations in another module.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import pytest
from argparse_fixture import SA, build_both, make_repo, make_vllm_repo
from kverr.catalog import load_datasets, open_catalog
from kverr.catalog.argparse_answers import is_own, program_of
from kverr.feeds.api import create_app
from kverr.feeds.site import export_site
from sampling import sample, sweep
from test_hostile_text import KB, RATIO, _cpu, _fill
from typer.testing import CliRunner

from kverr import pipeline
from kverr.cli import app

GOLDEN = Path(__file__).resolve().parent / "golden" / "argparse"
TORCH = (
    "sglang: error: argument --attention-backend: invalid choice: 'torch_sdpa'"
    " (choose from 'triton', 'torch_native', 'flashinfer', 'fa3')"
)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("argparse")
    sg = make_repo(root / "sglang-repo")
    vl = make_vllm_repo(root / "vllm-repo")
    build_both(root, sg, vl)
    load_datasets([root / "sglang"], root / "sglang.duckdb")
    load_datasets([root / "sglang", root / "vllm"], root / "both.duckdb")
    return {"root": root, "sglang": root / "sglang", "vllm": root / "vllm"}


@pytest.fixture(scope="module")
def cat(built):
    with open_catalog(built["root"] / "sglang.duckdb") as c:
        yield c


@pytest.fixture(scope="module")
def both(built):
    with open_catalog(built["root"] / "both.duckdb") as c:
        yield c


def _records(ds: Path) -> list[dict]:
    return [json.loads(line)["record"] for line in (ds / "records.jsonl").open()]


def _answer(cat, text: str):
    matches = cat.explain(text)
    assert len(matches) == 1, [m.record["id"] for m in matches]
    (m,) = matches
    assert m.record["kind"] == "argparse" and m.argparse is not None
    return m


# ---------------------------------------------------------------- the records


def test_records_golden(built):
    """The argparse records and the flag history of the fixture history, one per line (sorted
    keys), reviewed as a diff: KVERR_REGEN=1 pytest tests/test_argparse.py rewrites them."""
    recs = [r for r in _records(built["sglang"]) if r["kind"] == "argparse"]
    texts = {
        "records.jsonl": "".join(json.dumps(r, sort_keys=True) + "\n" for r in recs),
        "flaghistory.jsonl": (built["sglang"] / "flaghistory.jsonl").read_text(encoding="utf-8"),
    }
    for name, text in texts.items():
        golden = GOLDEN / name
        if os.environ.get("KVERR_REGEN"):
            golden.parent.mkdir(parents=True, exist_ok=True)
            golden.write_text(text, encoding="utf-8")
        assert text == golden.read_text(encoding="utf-8"), name


def test_every_pattern_compiles_in_re2(built):
    """A pattern RE2 cannot compile (a repeat count over 1000) loses the linear-time path that
    hostile pastes need: every form's pattern stays within RE2's limits."""
    import re2

    recs = [
        r for r in _records(built["sglang"]) + _records(built["vllm"]) if r["kind"] == "argparse"
    ]
    assert {r["argparse"]["form"] for r in recs} >= {"invalid-choice", "unrecognized"}
    for r in recs:
        re2.compile(r["messagePattern"])  # raises re2.error past RE2's limits


def test_one_record_per_flag_and_form_that_applies(built):
    forms = {
        (r["argparse"]["flag"], r["argparse"]["form"])
        for r in _records(built["sglang"])
        if r["kind"] == "argparse"
    }
    assert forms == {
        ("--attention-backend", "invalid-choice"),
        ("--attention-backend", "expected-argument"),
        ("--tp-size", "invalid-value"),  # int
        ("--tp-size", "expected-argument"),
        ("--mem-fraction", "invalid-value"),  # float
        ("--mem-fraction", "expected-argument"),
        ("--cuda-graph-bs", "invalid-value"),
        ("--cuda-graph-bs", "expected-argument"),  # nargs +: "at least one"
        ("--json-args", "invalid-value"),  # json.loads: "invalid loads value"
        ("--json-args", "expected-argument"),
        ("--name", "expected-argument"),  # str converts anything: no invalid-value
        ("--kt-amx-method", "expected-argument"),  # added in v0.2.0: the generic record says so
        ("--old-flag", "unrecognized"),  # removed in v0.2.0 (a switch: no value forms)
        (None, "unrecognized"),  # the project's one record for any other option
        (None, "ambiguous"),  # ... for an abbreviation that starts several options
        (None, "required"),  # ... for a required argument left out
    }  # --lora (nargs ?) and --enable-x (store_true) never print a value error


def test_ids_stay_when_choices_and_defaults_change(built, tmp_path):
    """The id hashes kind, form and flag: a build of v0.1.0 alone (other choices, no renamed
    value) gives the same ids as the whole history."""
    one = pipeline.build(
        pipeline.BuildSpec(
            out=tmp_path / "one",
            source=pipeline.GitSource(built["root"] / "sglang-repo", revs=["v0.1.0"]),
            cache=tmp_path / "c.sqlite",
        )
    )
    ids = {
        (r["argparse"]["flag"], r["argparse"]["form"]): r["id"]
        for ds in (one.out, built["sglang"])
        for r in _records(ds)
        if r["kind"] == "argparse" and r["argparse"]["form"] != "unrecognized"
    }
    old = {(r["argparse"]["flag"], r["argparse"]["form"]): r["id"] for r in _records(one.out)}
    assert all(ids[k] == v for k, v in old.items() if k in ids)
    assert (
        old[("--attention-backend", "invalid-choice")]
        == ids[("--attention-backend", "invalid-choice")]
    )


def test_adding_a_release_folds_only_it_and_gives_the_same_history(built, tmp_path):
    """The fold's state is cached: a build of v0.1.0..v0.2.0, then of every tag with the same
    cache, restores the first two and folds v0.3.0 alone, to the same flag history and records
    as a build from scratch."""
    repo, cache = built["root"] / "sglang-repo", tmp_path / "c.sqlite"
    pipeline.build(
        pipeline.BuildSpec(
            out=tmp_path / "a",
            source=pipeline.GitSource(repo, revs=["v0.1.0", "v0.2.0"]),
            cache=cache,
        )
    )
    more = pipeline.build(
        pipeline.BuildSpec(
            out=tmp_path / "b", source=pipeline.GitSource(repo, tags="v*"), cache=cache
        )
    )
    assert more.stats["revisions_restored"] == 2
    for name in ("flaghistory.jsonl", "records.jsonl", "occurrences.jsonl"):
        assert (tmp_path / "b" / name).read_bytes() == (built["sglang"] / name).read_bytes(), name


def test_occurrences_are_the_releases_each_record_applies_to(cat):
    by_form = {
        (m.record["argparse"]["flag"], m.record["argparse"]["form"]): cat.releases_of(
            m.record["id"]
        )
        for m in (cat.record_match(r["id"]) for r in cat.records())
        if m.record["kind"] == "argparse"
    }
    assert by_form[("--old-flag", "unrecognized")] == ["v0.2.0", "v0.3.0"]  # where it is absent
    assert by_form[(None, "unrecognized")] == ["v0.1.0", "v0.2.0", "v0.3.0"]
    assert by_form[("--kt-amx-method", "expected-argument")] == ["v0.2.0", "v0.3.0"]
    assert by_form[("--attention-backend", "invalid-choice")] == ["v0.1.0", "v0.2.0", "v0.3.0"]


def test_flag_history_is_per_flag_spans_over_revision_ords(built):
    lines = [json.loads(x) for x in (built["sglang"] / "flaghistory.jsonl").open()]
    backend = [x for x in lines if x["name"] == "--attention-backend"]
    assert [(x["from"], x["to"], x["choices"]) for x in backend] == [
        (0, 0, ["triton", "torch_sdpa", "flashinfer"]),
        (1, 2, ["triton", "torch_native", "flashinfer", "fa3"]),
    ]
    tp = [(x["from"], x["to"], x["default"]) for x in lines if x["name"] == "--tp-size"]
    assert tp == [(0, 1, "1"), (2, 2, "2")]  # lines shifting in v0.3.0 split nothing
    manifest = json.loads((built["sglang"] / "manifest.json").read_text())
    assert manifest["counts"]["flagHistory"] == len(lines)
    assert manifest["counts"]["argparse"] == 16  # with the generic ambiguous and required records


# ---------------------------------------------------------------- answers: a table


ANSWERS = [
    # (pasted text, flag, form, the answer's sentences)
    (TORCH, "--attention-backend", "invalid-choice", [
        "'torch_sdpa' was a choice of --attention-backend in v0.1.0; from v0.2.0 on it is not"
        " (renamed to torch_native?).",
        "The choices argparse listed are exactly those of v0.2.0, v0.3.0.",
        "Your release accepts: triton, torch_native, flashinfer, fa3.",
        "Did you mean torch_native?",
    ]),
    ("launch_server.py: error: argument --attention-backend: invalid choice: 'fa3' (choose from"
     " 'triton', 'torch_sdpa', 'flashinfer')", "--attention-backend", "invalid-choice", [
        "'fa3' is a choice of --attention-backend from v0.2.0 on: upgrade, or choose a value"
        " your release accepts.",
        "The choices argparse listed are exactly those of v0.1.0.",
        "Your release accepts: triton, torch_sdpa, flashinfer.",
    ]),
    ("error: argument --attention-backend: invalid choice: 'xformers' (choose from 'triton', ...)",
     "--attention-backend", "invalid-choice", [
        "'xformers' is not a choice of --attention-backend in any SGLang release in this catalog"
        " (v0.1.0 … v0.3.0).",
        "The newest release (v0.3.0) accepts: triton, torch_native, flashinfer, fa3.",
    ]),
    ("argument --tensor-parallel-size/--tp-size: invalid int value: 'two'", "--tp-size",
     "invalid-value", [
        "--tp-size takes an integer (default 2 in v0.3.0; default 1 in v0.1.0, v0.2.0): 'two'"
        " is not one.",
    ]),
    ("launch_server.py: error: argument --mem-fraction: invalid float value: 'high'",
     "--mem-fraction", "invalid-value", ["--mem-fraction takes a number (default 0.9): 'high' is not one."]),
    ("error: argument --tensor-parallel-size/--tp-size: expected one argument", "--tp-size",
     "expected-argument", [
        "--tp-size takes one value (an integer; default 2 in v0.3.0; default 1 in v0.1.0,"
        " v0.2.0), and none followed it.",
        "Write the value right after it, or leave --tp-size out to keep its default; a value that"
        " starts with '-' is written --tp-size=VALUE.",
    ]),
    ("error: argument --cuda-graph-bs: expected at least one argument", "--cuda-graph-bs",
     "expected-argument", [
        "--cuda-graph-bs takes one or more values (an integer), and none followed it.",
        "Write the value right after it, or leave --cuda-graph-bs out to keep its default; a"
        " value that starts with '-' is written --cuda-graph-bs=VALUE.",
    ]),
    ("argument --attention-backend: expected one argument", "--attention-backend",
     "expected-argument", [
        "--attention-backend takes one value (text; default None), and none followed it.",
        "Write the value right after it, or leave --attention-backend out to keep its default; a"
        " value that starts with '-' is written --attention-backend=VALUE.",
        "It accepts: triton, torch_native, flashinfer, fa3.",
    ]),
    ("launch_server.py: error: unrecognized arguments: --kt-amx-method AMXINT4", None,
     "unrecognized", ["--kt-amx-method exists from v0.2.0 on (v0.2.0, v0.3.0): upgrade, or leave it out."]),
    ("error: unrecognized arguments: --old-flag", "--old-flag", "unrecognized",
     ["--old-flag exists in v0.1.0 only (removed in v0.2.0)."]),
    ("error: unrecognized arguments: --tp-sizee 2", None, "unrecognized",
     ["No SGLang release in this catalog has --tp-sizee; did you mean --tp-size?"]),
    ("unrecognized arguments: --tp-size 4 --old-flag --kt-amx-methd x", "--old-flag", "unrecognized", [
        "Every SGLang release in this catalog has --tp-size (v0.1.0 … v0.3.0): this error comes"
        " from another parser (another program or command), or from a release older than v0.1.0.",
        "--old-flag exists in v0.1.0 only (removed in v0.2.0).",
        "No SGLang release in this catalog has --kt-amx-methd; did you mean --kt-amx-method?",
    ]),
    # a log prefix and the usage line around it, as a terminal shows them
    ("[2026-04-07 10:05:08] usage: launch_server.py [-h] [--tp-size TP_SIZE]\n"
     "launch_server.py: error: argument --tensor-parallel-size/--tp-size: invalid int value: 'x'",
     "--tp-size", "invalid-value", [
        "--tp-size takes an integer (default 2 in v0.3.0; default 1 in v0.1.0, v0.2.0): 'x' is"
        " not one.",
    ]),
]  # fmt: skip


@pytest.mark.parametrize(("text", "flag", "form", "sentences"), ANSWERS)
def test_answers(cat, text, flag, form, sentences):
    m = _answer(cat, text)
    assert (m.record["argparse"]["flag"], m.argparse["form"]) == (flag, form)
    assert m.argparse["text"] == sentences


NO_ANSWER = [
    "pip: error: unrecognized arguments: --tp-sizee",  # another program's parser
    "torchrun: error: argument --tensor-parallel-size/--tp-size: expected one argument",
    "vllm serve: error: argument --attention-backend: invalid choice: 'x' (choose from 'a')",
    "error: unrecognized arguments: --user",  # nothing of SGLang's is near it
    "argument --lora: expected one argument",  # nargs "?": argparse never says so
    "argument --enable-x: expected one argument",  # a switch takes no value
    "argument --name: invalid str value: 'x'",  # str converts anything
    "argument --backend: invalid choice: 'x' (choose from 'a', 'b')",  # no such flag
    "argument --tp-size: expected one argument",  # argparse names both option strings
    "argument --attention-backend: invalid choices: 'x'",  # not argparse's words
    "unrecognized argument: --old-flag",
]


@pytest.mark.parametrize("text", NO_ANSWER)
def test_near_misses_get_no_answer(cat, text):
    assert cat.explain(text) == []


@pytest.mark.parametrize(
    ("before", "program"),
    [
        ("sglang: error: ", "sglang"),
        ("usage: launch_server.py [-h] launch_server.py: error: ", "[-h] launch_server.py"),
        ("vllm serve: error: ", "vllm serve"),
        ("error: ", None),
        ("", None),
        ("ERROR:root: something: ", None),
    ],
)
def test_program_of(before, program):
    assert program_of(before) == program


def test_own_programs():
    programs = ["launch_server.py", "sglang", "sglang serve"]
    assert is_own(None, programs) and is_own("/opt/bin/sglang", programs)
    assert is_own("[-h] launch_server.py", programs) and is_own("sglang serve", programs)
    assert not is_own("pip", programs) and not is_own("vllm serve", programs)


def test_a_per_flag_record_shadows_the_generic_one(cat):
    (m,) = cat.explain("error: unrecognized arguments: --name x --old-flag")
    assert m.record["argparse"] == {"flag": "--old-flag", "form": "unrecognized"}
    assert m.revisions == ("v0.2.0", "v0.3.0")  # the releases it applies to: without the flag
    assert m.values == {}  # the text in front and around is the answer's, not the card's
    assert [o["option"] for o in m.argparse["options"]] == ["--name", "--old-flag"]


def test_version_restricts_to_that_release(cat):
    """In v0.1.0 --old-flag exists: its unrecognized record does not apply there, and the
    generic one says where it exists."""
    (m,) = cat.explain("error: unrecognized arguments: --old-flag", version="v0.1.0")
    assert m.record["argparse"]["flag"] is None
    assert m.argparse["options"][0]["releases"] == ["v0.1.0"]


# ---------------------------------------------------------------- vLLM's shape, two projects


def test_vllm_choices_come_from_literal_annotations(built):
    lines = {
        json.loads(x)["name"]: json.loads(x) for x in (built["vllm"] / "flaghistory.jsonl").open()
    }
    assert lines["--runner"]["choices"] == ["auto", "embed", "generate"]  # alias of an alias
    assert lines["--attention-backend"]["choices"] == ["flash_attn", "triton", "None"]
    assert lines["--enable-prefix-caching"]["action"] == "argparse.BooleanOptionalAction"
    # optional: the fixture defines no optional_type, so what it would print is unknown
    assert lines["--max-num-seqs"]["type"] == "optional_type(int)"
    assert lines["--max-num-seqs"]["invalid"] is None
    assert lines["--tensor-parallel-size"]["options"] == ["--tensor-parallel-size", "-tp"]
    forms = {
        (r["argparse"]["flag"], r["argparse"]["form"])
        for r in _records(built["vllm"])
        if r["kind"] == "argparse"
    }
    assert ("--enable-prefix-caching", "expected-argument") not in forms  # --x / --no-x
    assert ("--tensor-parallel-size", "invalid-value") in forms
    assert ("--max-num-seqs", "invalid-value") not in forms


def test_vllm_answer_over_commits(both):
    m = _answer(
        both,
        "vllm serve: error: argument --runner: invalid choice: 'pooling'"
        " (choose from 'auto', 'embed', 'generate')",
    )
    assert m.project["name"] == "vllm"
    first, second = (r.sha[:10] for r in both.revisions(project="vllm"))
    assert m.argparse["text"][0] == (
        f"'pooling' was a choice of --runner in {first}; from {second} on it is not (renamed to embed?)."
    )
    assert m.argparse["yourReleases"] == [second]


@pytest.mark.parametrize(
    ("program", "projects"),
    [("sglang: error: ", {"sglang"}), ("vllm serve: error: ", {"vllm"}), ("", {"sglang", "vllm"})],
)
def test_the_program_name_picks_the_project(both, program, projects):
    text = f"{program}argument --attention-backend: invalid choice: 'x' (choose from 'a', 'b')"
    assert {m.project["name"] for m in both.explain(text)} == projects


def test_the_project_that_knows_the_name_answers(both):
    (m,) = both.explain("error: unrecognized arguments: --runer auto")
    assert m.project["name"] == "vllm"
    assert m.argparse["options"][0]["closest"] == ["--runner"]


# ---------------------------------------------------------------- terminal, --json, site, API


@pytest.fixture
def run(built, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("KVERR_CATALOG", str(built["root"] / "sglang.duckdb"))
    return lambda *args: CliRunner().invoke(app, ["explain", *args])


def test_terminal_card(run, built):
    res = run(TORCH)
    assert res.exit_code == 0, res.output
    golden = GOLDEN / "card_invalid_choice.txt"
    if os.environ.get("KVERR_REGEN"):
        golden.write_text(res.stdout, encoding="utf-8")
    assert res.stdout == golden.read_text(encoding="utf-8")
    lines = res.stdout.splitlines()
    # the option before and after, each a whole line of its own
    assert lines[lines.index("  Before:") + 1] == "--attention-backend torch_sdpa"
    assert lines[lines.index("  After:") + 1] == "--attention-backend torch_native"


def test_json_has_the_answer_and_its_releases(run):
    res = run(TORCH, "--json")
    assert res.exit_code == 0, res.output
    (m,) = json.loads(res.stdout)["matches"]
    a = m["argparse"]
    assert (a["form"], a["flag"], a["program"], a["value"]) == (
        "invalid-choice", "--attention-backend", "sglang", "torch_sdpa"
    )  # fmt: skip
    assert a["choices"] == [
        {"releases": ["v0.2.0", "v0.3.0"], "range": "v0.2.0, v0.3.0",
         "choices": ["triton", "torch_native", "flashinfer", "fa3"]},
        {"releases": ["v0.1.0"], "range": "v0.1.0", "choices": ["triton", "torch_sdpa", "flashinfer"]},
    ]  # fmt: skip
    assert a["acceptedIn"] == ["v0.1.0"] and a["renamedTo"] == "torch_native"
    assert m["releases"] == ["v0.1.0", "v0.2.0", "v0.3.0"]
    assert m["values"] == {
        "value": "'torch_sdpa'",
        "choices": "'triton', 'torch_native', 'flashinfer', 'fa3'",
    }


def test_markdown_answer(cat):
    from kverr.present.markdown import match as markdown

    (m,) = cat.explain(TORCH)
    text = markdown(m, cat.release_orders())
    assert "- Did you mean torch\\_native?" in text
    assert "- Choices: v0.1.0: triton, torch\\_sdpa, flashinfer" in text


def test_site_flag_page_shows_choices_per_release(cat, tmp_path):
    export_site(cat, tmp_path / "site")
    page = (tmp_path / "site" / "flags" / "attention-backend.html").read_text(encoding="utf-8")
    assert "<h3>Choices and types in each release</h3>" in page
    newest = page.index('<td data-label="Releases">v0.2.0, v0.3.0</td>')
    oldest = page.index('<td data-label="Releases">v0.1.0</td>')
    assert newest < oldest  # newest first
    assert "<code>torch_sdpa</code>" in page[oldest:] and "<code>fa3</code>" in page[newest:oldest]
    # the argparse record's own page carries the same table
    (m,) = cat.explain(TORCH)
    from kverr.feeds.site import page_of

    error = (tmp_path / "site" / page_of(m.record)).read_text(encoding="utf-8")
    assert '<section id="per-release"><h2>In each release</h2>' in error
    assert "<code>torch_native</code>" in error
    # a release page lists what changed; the parser's errors carried over are counted only
    release = (tmp_path / "site" / "releases" / "v0.3.0.html").read_text(encoding="utf-8")
    assert "And 16 argparse errors (an invalid choice, value or missing value of a flag)" in release
    assert "unrecognized-old-flag" not in release.split('id="carried"')[-1]


@pytest.fixture(scope="module")
def base_url(cat, serve):
    with serve(create_app(cat, body_timeout=1.0)) as url:
        yield url


def test_api_explain_and_flag_over_http(base_url, cat):
    with httpx.Client(base_url=base_url, timeout=15) as client:
        r = client.post("/explain", content=TORCH)
        assert r.status_code == 200, r.text
        (m,) = r.json()["matches"]
        assert m == cat.explain(TORCH)[0].to_dict()  # the same JSON as `kverr explain --json`
        assert m["argparse"]["renamedTo"] == "torch_native"
        r = client.post("/explain", content="pip: error: unrecognized arguments: --tp-sizee")
        assert r.status_code == 200 and r.json()["matches"] == []
        r = client.get("/flags/--attention-backend")
        assert r.status_code == 200, r.text
        history = r.json()["history"]
    assert [(h["releases"], h["choices"]) for h in history] == [
        (["v0.1.0"], ["triton", "torch_sdpa", "flashinfer"]),
        (["v0.2.0", "v0.3.0"], ["triton", "torch_native", "flashinfer", "fa3"]),
    ]
    assert {h["file"] for h in history} == {SA}


# ---------------------------------------------------------------- hostile pastes

HOSTILE = {
    "unrecognized list without end": lambda n: "unrecognized arguments: " + _fill("--x ", n),
    "unrecognized list of known options": lambda n: (
        "unrecognized arguments: " + _fill("--old-flag --tp-sizee ", n)
    ),
    "argument prefixes repeated": lambda n: _fill("argument --tensor-parallel-size/--tp-size: ", n),
    "error prefixes repeated": lambda n: (
        _fill("sglang: error: ", n) + "unrecognized arguments: --a"
    ),
    "a long program name": lambda n: "x" * n + ": error: unrecognized arguments: --old-flag",
    "choices without a close": lambda n: (
        "argument --attention-backend: invalid choice: 'x' (choose from " + _fill("'triton', ", n)
    ),
}


@pytest.mark.parametrize(
    "shape", sample(sorted(HOSTILE), ("unrecognized list without end", "choices without a close"))
)
def test_hostile_argparse_text_is_linear(cat, shape):
    """1 KB -> 10 KB -> 100 KB: each tenfold step well under a quadratic's hundredfold, against
    plain prose of the same size explained in the same test (tests/test_hostile_text.py)."""
    make = HOSTILE[shape]
    prose = "the quick brown fox jumps over the lazy dog and "
    old, cat.budget = cat.budget, 60.0
    try:
        costs, floors = [], []
        for n in (1 * KB, 10 * KB, 100 * KB):
            costs.append(_cpu(cat.explain, make(n)))
            floors.append(_cpu(cat.explain, _fill(prose, n)))
    finally:
        cat.budget = old
    for small, big, floor in zip(costs, costs[1:], floors, strict=False):
        assert big <= RATIO * max(small, floor), (shape, costs, floors)


# ---------------------------------------------------------------- what the extractor reads


def test_declarations_keep_what_argparse_prints():
    from kverr.extractor import extract_file

    from kverr.ftypes import SourceFile

    src = (
        "import argparse\nfrom typing import Literal\n"
        'Mode = Literal["a", 2, Other]\n'
        "Plain = 3\n\n"
        "def add(parser, kwargs):\n"
        '    parser.add_argument("--tensor-parallel-size", "-tp", type=int,\n'
        '                        help="TP.")\n'
        '    parser.add_argument("--bs", type=int, nargs="+")\n'
        '    parser.add_argument("--dtype", **kwargs["dtype"])\n'
        "    BACKENDS = ['triton', 'fa3']  # a list the function builds before using it\n"
        '    parser.add_argument("--attention-backend", choices=BACKENDS)\n'
    )
    fx = extract_file(SourceFile(SA, src, "b"))
    decls = {d.name: d for d in fx.flags}
    tp = decls["--tensor-parallel-size"]
    assert (tp.options, tp.line, tp.end_line, tp.nargs) == (
        ("--tensor-parallel-size", "-tp"),
        7,
        8,
        None,
    )
    assert decls["--bs"].nargs == "+"
    assert decls["--dtype"].kwargs == "kwargs['dtype']"
    assert decls["--attention-backend"].choices == ("triton", "fa3")
    assert fx.literals == (("Mode", ("'a'", "2", "Other")),)


@pytest.mark.parametrize(
    ("annotation", "facts"),
    [
        ("Mode", {"type": "str", "choices": ["auto", "x", "y"], "action": None, "nargs": None}),
        ("Mode | None", {"type": "str", "choices": ["auto", "x", "y", "None"], "action": None, "nargs": None}),
        ("Mode | str", {"type": "str", "choices": None, "action": None, "nargs": None}),  # metavar
        ("Ranks", {"type": "int", "choices": ["1", "8", "16"], "action": None, "nargs": None}),
        ("bool", {"type": None, "choices": None, "action": "argparse.BooleanOptionalAction", "nargs": None}),
        ("bool | str | None", {"type": "str", "choices": None, "action": None, "nargs": "?"}),
        ("int", {"type": "int", "choices": None, "action": None, "nargs": None}),
        ("int | None", {"type": "optional_type(int)", "choices": None, "action": None, "nargs": None}),
        ("list[int]", {"type": "int", "choices": None, "action": None, "nargs": "+"}),
        ("dict[str, Any]", {"type": "parse_type(json.loads)", "choices": None, "action": None, "nargs": None}),
        ("SkipValidation[bool]", {"type": None, "choices": None, "action": "argparse.BooleanOptionalAction", "nargs": None}),
        ("Unseen", {"type": "str", "choices": None, "action": None, "nargs": None}),  # another module's
        ("not ) valid", None),
    ],
)  # fmt: skip
def test_annotation_facts(annotation, facts):
    from kverr.extractor.flags import annotation_facts

    aliases = {"Inner": ("'x'", "'y'"), "Mode": ("'auto'", "Inner"), "Ranks": ("16", "1", "8")}
    assert annotation_facts(annotation, aliases) == facts


def test_scan_of_a_log_answers_too(cat):
    lines = ["[2026-04-07 10:05:08] starting"] * 500 + [TORCH] + ["done"] * 500
    (m,) = cat.scan(lines)
    assert m.line == 501 and m.argparse["renamedTo"] == "torch_native"
    assert cat.scan(["pip: error: unrecognized arguments: --tp-sizee"] * 3) == []


@pytest.mark.parametrize(
    ("option", "close"),
    [
        ("--tp-sizee", ["--tp-size"]),
        ("--kt-amx-methd", ["--kt-amx-method"]),
        ("--user", []),  # not `--use-ray`, nor `--ep` (its dashes made it look close)
        ("-tp", []),
    ],
)
def test_close_options(option, close):
    from kverr.catalog.argparse_answers import NameIndex, _close_options

    names = ["--tp-size", "--kt-amx-method", "--use-ray", "--ep", "--tensor-parallel-size"]
    assert _close_options(option, NameIndex.of_options(names)) == close


@pytest.mark.parametrize(
    "actions, want",
    [
        ([("store_true", "bool")], ""),
        ([("store_true", "bool"), ("DeprecatedAction", None)], ""),  # a shim: the switch decides
        ([(None, "int")], " 1"),
        ([(None, "float")], " 0.5"),
        ([(None, "str")], " VALUE"),
        ([("SomeAction", None)], " VALUE"),  # arity unknown: a value, as argparse may want one
    ],
)  # fmt: skip
def test_a_removed_flags_before_line_gives_it_what_it_took(actions, want):
    from kverr.records.argparse_records import _removed_value

    spans = [{"action": a, "type": t, "options": ["--x"]} for a, t in actions]  # as in flaghistory
    assert _removed_value(spans) == want


def test_an_answer_asked_again_is_the_same_and_its_own(cat):
    """The revision sets' names and text are remembered per catalog (a server answers the same
    flags again and again): a second answer equals the first, and changing one answer's lists
    changes no later one."""
    for text, *_ in ANSWERS:
        first = _answer(cat, text).argparse
        kept = json.loads(json.dumps(first))
        for value in first.values():
            if isinstance(value, list):
                value.append("changed")
            for row in value if isinstance(value, list) else ():
                if isinstance(row, dict) and isinstance(row.get("releases"), list):
                    row["releases"].append("changed")
        assert _answer(cat, text).argparse == kept


@sweep(60)
def test_close_matches_is_difflibs_list(every):
    # the fast bound must never change an answer: difflib's own function is the reference,
    # over option-like names, near misses, anagrams (same characters, other order), repeats
    # and the empty string, at each cutoff the answers use
    import difflib
    import random

    from kverr.catalog.argparse_answers import NameIndex, close_matches

    rnd = random.Random(5)
    names = [
        "tp-size", "pp-size", "ep-size", "dp-size", "enable-mtp", "enable-dp-attention",
        "page-size", "mem-fraction-static", "kv-cache-dtype", "attention-backend", "", "aaaa",
        "speculative-algorithm", "speculative-draft-model-path", "chunked-prefill-size",
    ]  # fmt: skip
    names += ["".join(rnd.sample("abcdefgh-", rnd.randint(1, 9))) for _ in range(300)]
    names += [
        "".join(rnd.choice("abcdefgh-") for _ in range(rnd.randint(10, 45))) for _ in range(200)
    ]
    words = ["tp-szie", "enable-mpt", "pagesize", "kv-cache-type", "", "a", "ezis-pt", "aaaa"]
    words += [
        "".join(rnd.choice("abcdefgh-") for _ in range(rnd.randint(0, 10))) for _ in range(200)
    ]
    unique = list(dict.fromkeys(names))
    index = NameIndex({x: x for x in unique})  # (the names by length, tried in a window)
    words += ["x" * k for k in range(0, 40, 3)] + [n + n[:3] for n in unique[:40]]
    for word in words[::every]:
        for n, cutoff in ((3, 0.5), (1, 0.4), (3, 0.75), (1, 0.0), (2, 1.0), (3, 0.9), (2, 0.1)):
            assert close_matches(word, names, n, cutoff) == difflib.get_close_matches(
                word, names, n=n, cutoff=cutoff
            ), (word, n, cutoff)
            assert index.close(word, n, cutoff) == difflib.get_close_matches(
                word, unique, n=n, cutoff=cutoff
            ), (word, n, cutoff)
