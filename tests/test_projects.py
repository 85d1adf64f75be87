"""Several projects, one kverr: a vLLM-shaped fixture built with the vllm profile, an
SGLang-shaped one with the sglang profile, both in one catalog.

The fixtures are ours (tests/golden/projects/vllm_like, SGLANG_MODULE below), written in each
project's shape; no upstream code.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import time
from pathlib import Path

import pytest
from kverr.catalog import load_datasets, normalize, open_catalog
from test_sources import Git
from typer.testing import CliRunner

from kverr import pipeline
from kverr.cli import app
from kverr.errors import DatasetError, NotFound, QueryError
from kverr.profile import load_profile
from kverr.regexsafe import parse

VLLM_LIKE = Path(__file__).resolve().parent / "golden" / "projects" / "vllm_like"
SHARED = "Batch budget is smaller than the number of sequences."

SGLANG_MODULE = f"""\
import logging

logger = logging.getLogger(__name__)


class ServerArgs:
    def _handle_batch(self):
        if self.max_running_requests > self.chunked_prefill_size:
            logger.warning("{SHARED}")
        if not self.enable_lora and self.max_loras_per_batch > 1:
            raise ValueError("--max-loras-per-batch needs --enable-lora.")
"""


def _records(out: Path) -> list[dict]:
    return [json.loads(line)["record"] for line in (out / "records.jsonl").open()]


def _by_message(records: list[dict], text: str) -> list[dict]:
    return [r for r in records if r["errorMessage"].startswith(text)]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    """Each project in a git repository of its own (no GitHub origin: links use the profile's
    repository), built with its profile and loaded into one catalog."""
    root = tmp_path_factory.mktemp("projects")
    vgit = Git(root / "vllm-repo")
    for path in sorted(VLLM_LIKE.rglob("*.py")):
        vgit.write(str(path.relative_to(VLLM_LIKE)), path.read_text(encoding="utf-8"))
    vgit.commit("engine and configs")
    sgit = Git(root / "sglang-repo")
    sgit.write("python/sglang/srt/server_args.py", SGLANG_MODULE)
    sgit.commit("server args")
    vllm = pipeline.build(
        pipeline.BuildSpec(
            out=root / "vllm", source=pipeline.GitSource(vgit.root), profile="vllm", command=["t"]
        )
    )
    sglang = pipeline.build(
        pipeline.BuildSpec(out=root / "sglang", source=pipeline.GitSource(sgit.root), command=["t"])
    )
    catalog = root / "both.duckdb"
    load_datasets([sglang.out, vllm.out], catalog)
    return {"root": root, "vllm": vllm.out, "sglang": sglang.out, "catalog": catalog}


# ---------------------------------------------------------------- building with a profile


def test_vllm_records_use_the_profile(built: dict) -> None:
    recs = _records(built["vllm"])
    assert {r["project"] for r in recs} == {"vllm"}
    assert {r["repo"] for r in recs} == {"vllm-project/vllm"}
    assert all(
        r["githubUrl"].startswith("https://github.com/vllm-project/vllm/blob/") for r in recs
    )
    manifest = json.loads((built["vllm"] / "manifest.json").read_text())
    assert (manifest["project"], manifest["repository"]) == ("vllm", "vllm-project/vllm")
    assert manifest["profile"]["launch"]["command"] == "vllm serve {model}"
    fixes = [r["exampleFix"] for r in recs if r["exampleFix"]]
    assert fixes and all(f.startswith("# before\nvllm serve MODEL") for f in fixes)
    assert not any("sglang" in json.dumps(r).lower() for r in recs)


def test_once_logging_is_extracted(built: dict) -> None:
    recs = _records(built["vllm"])
    (big,) = _by_message(recs, "max_num_seqs is very large")
    (off,) = _by_message(recs, "Chunked prefill is off")
    assert (big["kind"], big["severity"], off["severity"]) == ("log", "warning", "info")


@pytest.mark.parametrize(
    ("message", "flags"),
    [
        # a config class's field is the EngineArgs flag of the same name ...
        ("Chunked prefill must be enabled", ["--enable-chunked-prefill"]),
        (SHARED, ["--max-num-batched-tokens", "--max-num-seqs"]),
        # ... or the one whose default names it (kv_cache_dtype = CacheConfig.cache_dtype) ...
        ("fp8_e5m2 kv-cache", ["--kv-cache-dtype"]),
        # ... else a field of its JSON option; `model` here is the draft model, not --model
        ("A draft model needs", ["--speculative-config.model", "--speculative-config.method"]),
        ("Too many speculative tokens", ["--speculative-config.num_speculative_tokens"]),
    ],
)
def test_config_fields_are_named_as_the_cli_spells_them(built, message, flags) -> None:
    found = [r["flags"] for r in _by_message(_records(built["vllm"]), message)]
    assert flags in found


def test_config_fields_are_flags_with_their_docstrings(built: dict) -> None:
    decls = {d["name"]: d for d in map(json.loads, (built["vllm"] / "flags.jsonl").open()) if d}
    method = decls["--speculative-config.method"]
    assert method["help"] == "The speculative method: ngram, eagle or mtp."
    # a field EngineArgs already exposes as a flag of its own is not listed twice
    assert "--scheduler_config.max_num_seqs" not in decls and "--max-num-seqs" in decls


def test_fixes_use_the_syntax_the_cli_accepts(built: dict) -> None:
    fixes = "\n".join(r["exampleFix"] for r in _records(built["vllm"]))
    # `bool | None` is a switch, never `--enable-prefix-caching=ENABLE_PREFIX_CACHING`
    assert "--enable-prefix-caching --tensor-parallel-size=9" in fixes
    assert not re.search(r"--enable-[\w-]+=[A-Z_]+", fixes)
    assert (
        "--speculative-config.method=ngram --speculative-config.num_speculative_tokens=1" in fixes
    )
    # a JSON option's bool field takes a value: a bare `--speculative-config.disable_padding`
    # would swallow the next argument as its value
    assert "--speculative-config.disable_padding=true --speculative-config.method=eagle" in fixes


def test_earlier_checks_add_only_related_flags(built: dict, tmp_path: Path) -> None:
    """`max_num_batched_tokens must be known here` passed before the fp8/LoRA check: with
    vLLM's `earlier_checks = "related"` that says nothing about this launch."""
    (err,) = _by_message(_records(built["vllm"]), "An fp8 KV cache")
    before = err["exampleFix"].split("\n")[1]
    assert before == "vllm serve MODEL --kv-cache-dtype=fp8 --enable-lora"
    every = dataclasses.replace(load_profile("vllm"), earlier_checks="all")
    res = pipeline.build(pipeline.BuildSpec(out=tmp_path / "all", source=VLLM_LIKE, profile=every))
    (err,) = _by_message(_records(res.out), "An fp8 KV cache")
    assert "--max-num-batched-tokens" in err["exampleFix"].split("\n")[1]


def test_ids_carry_the_project(built: dict, tmp_path: Path) -> None:
    """The same site built as another project gets another id (one catalog, many projects)."""
    as_sglang = pipeline.build(
        pipeline.BuildSpec(out=tmp_path / "s", source=VLLM_LIKE, profile="sglang")
    )
    assert not {r["id"] for r in _records(built["vllm"])} & {
        r["id"] for r in _records(as_sglang.out)
    }


@pytest.mark.parametrize(
    ("profile", "repo_name", "repo"),
    [("vllm", None, "vllm-project/vllm"), ("sglang", None, "sgl-project/sglang"),
     ("vllm", "acme/engine", "acme/engine")],
)  # fmt: skip
def test_a_directory_build_is_labelled_with_its_repository(tmp_path, profile, repo_name, repo):
    """No commit, so no links; the records still name the repository (it was always SGLang's)."""
    res = pipeline.build(
        pipeline.BuildSpec(
            out=tmp_path / "o", source=VLLM_LIKE, profile=profile, repo_name=repo_name
        )
    )
    recs = _records(res.out)
    assert {r["repo"] for r in recs} == {repo} and {r["githubUrl"] for r in recs} == {None}
    assert json.loads((res.out / "manifest.json").read_text())["repository"] == repo


# ---------------------------------------------------------------- one catalog, two projects


@pytest.fixture(scope="module")
def cat(built: dict):
    with open_catalog(built["catalog"]) as c:
        yield c


def test_the_catalog_holds_both_projects(cat) -> None:
    assert [(p["name"], p["product"]) for p in cat.projects] == [
        ("sglang", "SGLang"),
        ("vllm", "vLLM"),
    ]
    assert {r.project for r in cat.revisions()} == {"sglang", "vllm"}
    assert len({r.ord for r in cat.revisions()}) == 2  # ords never collide
    with pytest.raises(NotFound, match="HEAD is ambiguous in a catalog of 2 projects"):
        cat.resolve_version("HEAD")
    head = cat.resolve_version("HEAD", project="vllm")
    assert head.project == "vllm" and cat.explain(SHARED, version="HEAD", project="vllm")


@pytest.mark.parametrize(
    ("paste", "project", "how"),
    [
        # only vLLM has this message: the message decides, whatever the prefix
        (
            "(APIServer pid=1) ValueError: LoRA needs max_num_seqs; pass --max-num-seqs.",
            "vllm",
            "message",
        ),
        ("ValueError: --max-loras-per-batch needs --enable-lora.", "sglang", "message"),
        # a message only vLLM has stays vLLM's, whatever log format carries it
        (
            "[2026-04-07 10:05:08 TP0] ValueError: LoRA needs max_num_seqs; pass --max-num-seqs.",
            "vllm",
            "message",
        ),
        # both have it: the log format decides
        (f"WARNING 05-19 11:44:32 [scheduler.py:22] {SHARED}", "vllm", "log form"),
        (
            f"(EngineCore_DP0 pid=7) WARNING 05-19 11:44:32 [cache.py:19] {SHARED}",
            "vllm",
            "log form",
        ),
        (f"[2026-04-07 10:05:08 TP0] {SHARED}", "sglang", "log form"),
        # pydantic's form around a config class's check
        (
            "  Value error, Chunked prefill must be enabled to set max_num_partial_prefills > 1."
            " [type=value_error, input_value=ArgsKwargs((), {'max_num_partial_prefills': 2}),"
            " input_type=ArgsKwargs]",
            "vllm",
            "log form",
        ),
    ],
)
def test_explain_finds_the_project_from_the_paste(cat, paste, project, how) -> None:
    matches = cat.explain(paste)
    assert matches and {m.record["project"] for m in matches} == {project}
    assert (matches[0].project["name"], matches[0].project["detectedBy"]) == (project, how)


def test_a_log_of_both_projects_reports_each_error(cat) -> None:
    """A scan keeps every error; where one line matches both projects, its log form decides."""
    log = [
        "[2026-04-07 10:05:08 TP0] ValueError: --max-loras-per-batch needs --enable-lora.",
        "(APIServer pid=1) ValueError: LoRA needs max_num_seqs; pass --max-num-seqs.",
        f"WARNING 05-19 11:44:32 [scheduler.py:22] {SHARED}",
    ] * 400  # past the paste size: scanned line by line
    found = {(m.record["project"], m.project["detectedBy"], m.line) for m in cat.scan(log)}
    assert found == {("sglang", "log form", 1), ("vllm", "message", 2), ("vllm", "log form", 3)}


def test_the_logged_file_and_line_pick_the_site(cat) -> None:
    """Two vLLM sites log the same text; `[file.py:N]` says which one printed it."""
    for file, line in (("scheduler.py", 22), ("cache.py", 19), ("config/cache.py", 19)):
        m = cat.explain(f"WARNING 05-19 11:44:32 [{file}:{line}] {SHARED}")
        assert m[0].record["filePath"].endswith(file.rsplit("/", 1)[-1])
        assert m[0].record["lineNumber"] == line


def test_project_filter(cat) -> None:
    assert cat.explain(f"[2026-04-07 10:05:08 TP0] {SHARED}", project="vllm")[0].project == {
        "name": "vllm",
        "product": "vLLM",
        "detectedBy": "--project",
    }
    assert (
        cat.explain("ValueError: --max-loras-per-batch needs --enable-lora.", project="vllm") == []
    )
    with pytest.raises(
        NotFound, match=r"project 'tgi' is not in this catalog \(it holds: sglang, vllm\)"
    ):
        cat.explain("anything", project="tgi")
    assert {r["project"] for r in cat.records(project="vllm")} == {"vllm"}
    assert cat.flag("--max-num-seqs", project="sglang") is None
    assert cat.flag("--max-num-seqs", project="vllm")["records"]


def test_cli_explain_answers_with_vllm_serve(built: dict) -> None:
    runner = CliRunner()
    env = {"COLUMNS": "120", "KVERR_CATALOG": str(built["catalog"])}
    paste = "(APIServer pid=1) ValueError: LoRA needs max_num_seqs; pass --max-num-seqs."
    res = runner.invoke(app, ["explain", paste], env=env)
    assert res.exit_code == 0, res.output
    assert "vLLM, matched by the message" in res.output and "vllm serve MODEL" in res.output
    assert "Fix not verified" in res.output
    res = runner.invoke(
        app, ["explain", f"WARNING 05-19 11:44:32 [cache.py:19] {SHARED}", "--json"], env=env
    )
    top = json.loads(res.stdout)["matches"][0]
    assert top["project"]["detectedBy"] == "log form" and top["record"]["lineNumber"] == 19
    res = runner.invoke(app, ["explain", "nothing like it", "--project", "vllm"], env=env)
    assert (res.exit_code, res.stdout) == (1, "No known vLLM error matches this text.\n")
    res = runner.invoke(app, ["explain", "x", "--project", "tgi"], env=env)
    assert res.exit_code == 2 and "it holds: sglang, vllm" in res.output


def test_loading_the_same_project_twice_is_refused(built: dict, tmp_path: Path) -> None:
    copy = tmp_path / "again"
    shutil.copytree(built["vllm"], copy)
    with pytest.raises(DatasetError, match="are both project 'vllm'; load one dataset per project"):
        load_datasets([built["vllm"], copy], tmp_path / "x.duckdb")


def test_a_bad_project_is_bad_usage(built: dict) -> None:
    from kverr.catalog.query import explain_query

    with (
        open_catalog(built["catalog"]) as c,
        pytest.raises(QueryError, match="not in this catalog"),
    ):
        explain_query(c, "x", None, project="tgi")


# ---------------------------------------------------------------- the log forms on hostile text


def test_every_shipped_log_form_has_a_bounded_cost() -> None:
    """Each form matches at a fixed place (line start, or from `rfind` of its literal start)
    and reads at most its maximum width, so a line of any length costs the same."""
    for name in ("sglang", "vllm"):
        p = load_profile(name)
        for form in (*p.log_prefixes, *p.log_suffixes):
            assert parse(form).getwidth()[1] <= 20_000, form


@pytest.mark.parametrize(
    "shape",
    [
        lambda n: " " * n,  # long runs of spaces
        lambda n: "WARNING 05-19 11:44:32 [" + "a" * n,  # a prefix that never closes
        lambda n: "(APIServer pid=1) " * (n // 18),  # repeated prefixes
        lambda n: (
            "Value error, x [type=value_error, input_value=" + "," * n
        ),  # suffix that never ends
        lambda n: "[type=a, input_value=b, input_type=c]" * (n // 40),  # many suffix starts
    ],
)
def test_cleaning_is_linear_on_adversarial_lines(shape) -> None:
    p = load_profile("vllm")
    forms = normalize.LogForms(
        prefixes=tuple(("vllm", f) for f in p.log_prefixes),
        suffixes=tuple(("vllm", f) for f in p.log_suffixes),
    )

    def cost(n: int) -> float:
        line = shape(n)
        best = float("inf")
        for _ in range(5):
            t = time.perf_counter()
            list(normalize.clean_lines([line], forms, {}))
            best = min(best, time.perf_counter() - t)
        return best

    small, large = cost(50_000), cost(400_000)
    assert large < 8 * small * 3 + 0.01  # 8x the input: linear is ~8x, quadratic ~64x


# ---------------------------------------------------------------- the API and the site


@pytest.fixture(scope="module")
def api(built: dict, serve):
    import httpx
    from kverr.feeds.api import create_app

    with (
        open_catalog(built["catalog"]) as c,
        serve(create_app(c, body_timeout=1.0)) as url,
        httpx.Client(base_url=url, timeout=15) as h,
    ):
        yield h


def test_api_filters_by_project(api) -> None:
    paste = f"[2026-04-07 10:05:08 TP0] {SHARED}"
    top = api.post("/explain", content=paste).json()["matches"][0]
    assert top["project"]["name"] == "sglang"
    top = api.post("/explain", json={"text": paste, "project": "vllm"}).json()["matches"][0]
    assert top["project"] == {
        "name": "vllm",
        "product": "vLLM",
        "detectedBy": "--project",
    }
    found = api.get("/search", params={"q": "batch budget", "project": "vllm"}).json()["matches"]
    assert found and {m["record"]["project"] for m in found} == {"vllm"}
    assert api.get("/flags/--max-num-seqs", params={"project": "vllm"}).json()["project"] == "vllm"
    assert api.get("/flags/--max-num-seqs", params={"project": "sglang"}).status_code == 404
    bad = api.get("/search", params={"q": "x", "project": "NOT A NAME"})
    assert bad.status_code == 400 and "project must be a project name" in bad.json()["error"]
    assert api.post("/explain?project=tgi", content="x").status_code == 404


VLLM_VERSION = "2026-05-19T18:44:32.000Z"  # vLLM's data rebuilt later than SGLang's


@pytest.fixture(scope="module")
def api_two_versions(built: dict, tmp_path_factory, serve):
    """The two datasets with different dataset versions, as shipped (each project is rebuilt
    on its own), served over HTTP."""
    import httpx
    from kverr.feeds.api import create_app

    root = tmp_path_factory.mktemp("versions")
    vllm = shutil.copytree(built["vllm"], root / "vllm")
    manifest = json.loads((vllm / "manifest.json").read_text())
    (vllm / "manifest.json").write_text(json.dumps({**manifest, "datasetVersion": VLLM_VERSION}))
    lines = [json.loads(x) for x in (vllm / "records.jsonl").open()]
    with (vllm / "records.jsonl").open("w") as f:
        f.writelines(json.dumps({**x, "datasetVersion": VLLM_VERSION}) + "\n" for x in lines)
    load_datasets([built["sglang"], vllm], root / "c.duckdb")
    with (
        open_catalog(root / "c.duckdb") as c,
        serve(create_app(c)) as url,
        httpx.Client(base_url=url, timeout=15) as h,
    ):
        yield h, json.loads((built["sglang"] / "manifest.json").read_text())["datasetVersion"]


def test_a_record_is_pinned_to_its_own_projects_dataset(api_two_versions) -> None:
    """`/errors/{id}?dataset=` is immutable within the record's own project's dataset: pinning
    a vLLM record to SGLang's version would cache it forever across a vLLM rebuild."""
    api, sglang_version = api_two_versions
    assert sglang_version != VLLM_VERSION
    paste = "(APIServer pid=1) ValueError: LoRA needs max_num_seqs; pass --max-num-seqs."
    rid = api.post("/explain", content=paste).json()["matches"][0]["record"]["id"]
    doc = api.get(f"/errors/{rid}").json()
    assert (doc["record"]["project"], doc["datasetVersion"]) == ("vllm", VLLM_VERSION)
    pinned = api.get(f"/errors/{rid}", params={"dataset": VLLM_VERSION})
    assert pinned.status_code == 200 and "immutable" in pinned.headers["cache-control"]
    other = api.get(f"/errors/{rid}", params={"dataset": sglang_version})
    assert other.status_code == 404 and VLLM_VERSION in other.json()["error"]
    home = api.get("/").json()
    assert [(p["name"], p["datasetVersion"]) for p in home["projects"]] == [
        ("sglang", sglang_version),
        ("vllm", VLLM_VERSION),
    ]


def test_versions_per_project(api_two_versions, built: dict) -> None:
    api, sglang_version = api_two_versions
    every = api.get("/versions").json()
    assert {r["project"] for r in every["revisions"]} == {"sglang", "vllm"}
    shas = {p: json.loads((built[p] / "revisions.jsonl").read_text())["sha"][:10]
            for p in ("sglang", "vllm")}  # fmt: skip
    # each project's newest (untagged) commit is a name `releases` holds, not only the last one
    assert every["releases"] == [shas["sglang"], shas["vllm"]]
    one = api.get("/versions", params={"project": "vllm"}).json()
    assert (one["datasetVersion"], one["releases"]) == (VLLM_VERSION, [shas["vllm"]])
    assert {r["project"] for r in one["revisions"]} == {"vllm"}
    assert [p["name"] for p in one["projects"]] == ["vllm"]
    assert api.get("/versions", params={"project": "tgi"}).status_code == 404
    for name in every["releases"]:  # each one is accepted as version=
        assert api.post(f"/explain?version={name}", content="x").status_code == 200


def _undeclared(value, schema: dict, doc: dict, where: str = "") -> list[str]:
    """Keys of an answer its OpenAPI schema does not declare (the Record is the record
    schema itself, checked by test_api_ux)."""
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name == "Record":
            return []
        schema = doc["components"]["schemas"][name]
    if isinstance(value, list) and "items" in schema:
        return [p for v in value for p in _undeclared(v, schema["items"], doc, where + "[]")]
    if not isinstance(value, dict) or "properties" not in schema:
        return []
    props = schema["properties"]
    out = [f"{where}.{k}" for k in value if k not in props]
    for k, v in value.items():
        if k in props:
            out += _undeclared(v, props[k], doc, f"{where}.{k}")
    return out


def test_every_answer_is_what_the_openapi_document_says(api_two_versions) -> None:
    """A client generated from /openapi.json sees every field: each project-aware answer's
    keys are declared (match.project, a flag's project, /versions' projects)."""
    api, _ = api_two_versions
    doc = api.get("/openapi.json").json()
    paste = "(APIServer pid=1) ValueError: LoRA needs max_num_seqs; pass --max-num-seqs."
    answers = {
        ("/explain", "post"): api.post("/explain", content=paste).json(),
        ("/search", "get"): api.get("/search", params={"q": "batch budget"}).json(),
        ("/flags/{flag}", "get"): api.get("/flags/--max-num-seqs").json(),
        ("/versions", "get"): api.get("/versions").json(),
    }
    assert answers[("/explain", "post")]["matches"][0]["project"]["name"] == "vllm"
    for (path, method), body in answers.items():
        schema = doc["paths"][path][method]["responses"]["200"]["content"]["application/json"]
        assert _undeclared(body, schema["schema"], doc) == [], path
    project = doc["paths"]["/versions"]["get"]["parameters"][0]
    assert project["name"] == "project"


def test_export_one_project(built: dict, tmp_path: Path) -> None:
    from kverr.feeds.exports import export

    msg = export("site", tmp_path / "site", built["catalog"], project="vllm")
    assert msg.startswith("wrote ")
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "vLLM launch errors" in index and "max-loras-per-batch" not in index
    export("jsonl", tmp_path / "v.jsonl", built["catalog"], project="vllm")
    rows = [json.loads(line) for line in (tmp_path / "v.jsonl").open()]
    assert rows and {r["record"]["project"] for r in rows} == {"vllm"}
    with pytest.raises(QueryError, match="parquet holds every project"):
        export("parquet", tmp_path / "p.parquet", built["catalog"], project="vllm")


def test_fixes_of_a_project_without_a_spec_say_they_are_not_verified(
    built: dict, tmp_path: Path
) -> None:
    """A profile without [verify] tables (vLLM's, less them): --verify runs nothing and every
    record says why (and never claims a verified fix)."""
    res = pipeline.build(
        pipeline.BuildSpec(
            out=tmp_path / "v",
            source=pipeline.GitSource(built["root"] / "vllm-repo"),
            profile=dataclasses.replace(load_profile("vllm"), verify=None),
            verify=True,
            command=["t"],
        )
    )
    everything = _records(res.out)
    assert {r["verification"]["status"] for r in everything} == {"unverified"}
    # argparse's own errors are not checks the verify step runs: they say so in their own words
    recs = [r for r in everything if r["kind"] != "argparse"]
    assert {r["verification"]["reason"] for r in recs} == {
        "kverr has no verify spec for vLLM yet (profile vllm has no [verify] table)"
    }
    assert res.verify.runs == 0
    # not run is not rejected: the `vllm serve` fixes stay, marked by their verification
    assert any(r["exampleFix"].startswith("# before\nvllm serve MODEL") for r in recs)


# ---------------------------------------------------------------- a site of both projects

SGLANG_KV = """\
class ServerArgs:
    kv_cache_dtype: str = "auto"

    def _handle_kv(self):
        if self.kv_cache_dtype == "fp8_e4m3" and self.enable_lora:
            raise ValueError("SGLang cannot combine an fp8_e4m3 KV cache with LoRA.")


def add_cli_args(parser):
    parser.add_argument("--kv-cache-dtype", type=str, default="auto",
                        choices=["auto", "fp8_e4m3"], help="SGLang's data type for the KV cache.")
    parser.add_argument("--enable-lora", action="store_true", help="Serve LoRA adapters.")
"""


@pytest.fixture(scope="module")
def both_site(built: dict, tmp_path_factory) -> Path:
    """The combined site of a vLLM and an SGLang dataset that both declare --kv-cache-dtype,
    each its own way."""
    from kverr.feeds.exports import export

    root = tmp_path_factory.mktemp("both-site")
    src = root / "sglang-src" / "python" / "sglang" / "srt"
    src.mkdir(parents=True)
    (src / "server_args.py").write_text(SGLANG_KV, encoding="utf-8")
    sglang = pipeline.build(
        pipeline.BuildSpec(out=root / "sglang", source=root / "sglang-src", command=["t"])
    )
    # as a dataset written before records carried `project`: its manifest says whose it is
    lines = [json.loads(x) for x in (sglang.out / "records.jsonl").open()]
    with (sglang.out / "records.jsonl").open("w") as f:
        for x in lines:
            x["record"].pop("project")
            f.write(json.dumps(x) + "\n")
    load_datasets([sglang.out, built["vllm"]], root / "c.duckdb")
    export("site", root / "site", root / "c.duckdb")
    return root / "site"


def _page(site: Path, words: str) -> str:
    title = f'<h1 class="err-title">{words}'
    (page,) = [p for p in (site / "errors").glob("*.html") if title in p.read_text("utf-8")]
    return page.read_text(encoding="utf-8")


def test_a_site_of_two_projects_keeps_each_projects_flags(both_site: Path) -> None:
    """A flag name both projects declare is described by the record's own project: an SGLang
    page never shows vLLM's help or default for it (the last declaration loaded won)."""
    sglang = _page(both_site, "SGLang cannot combine an fp8_e4m3 KV cache")
    flags = sglang.split('<section id="flags">', 1)[1].split("</section>", 1)[0]
    assert "SGLang&#x27;s data type for the KV cache." in flags and "CacheConfig" not in flags
    vllm = _page(both_site, "An fp8 KV cache cannot be combined with LoRA")
    flags = vllm.split('<section id="flags">', 1)[1].split("</section>", 1)[0]
    assert "CacheConfig.cache_dtype" in flags and "SGLang&#x27;s data type" not in flags
    # each page and row says which project it is from; related errors stay in the project
    assert '<span class="badge project">SGLang</span>' in sglang
    assert '<span class="badge project">vLLM</span>' in vllm
    related = vllm.split('<section id="related">', 1)[-1]
    assert "cannot combine an fp8_e4m3" not in related
    # the flag's page gives each project's declaration under its name
    page = (both_site / "flags" / "kv-cache-dtype.html").read_text(encoding="utf-8")
    assert page.index("<h2>SGLang</h2>") < page.index("SGLang&#x27;s data type")
    assert page.index("<h2>vLLM</h2>") < page.index("CacheConfig.cache_dtype")
    index = (both_site / "index.html").read_text(encoding="utf-8")
    assert index.count('<span class="badge project">') == index.count('<li class="err-row"')


def test_a_site_of_one_project_has_no_project_badges(built: dict, tmp_path: Path) -> None:
    from kverr.feeds.exports import export

    export("site", tmp_path / "site", built["catalog"], project="vllm")
    assert 'class="badge project"' not in (tmp_path / "site" / "index.html").read_text("utf-8")


def test_markdown_export_keeps_each_projects_flags(both_site: Path, tmp_path: Path) -> None:
    from kverr.feeds.exports import export

    export("markdown", tmp_path / "md", both_site.parent / "c.duckdb")
    pages = [p.read_text("utf-8") for p in (tmp_path / "md" / "errors").glob("*.md")]
    (sglang,) = [p for p in pages if "cannot combine an fp8_e4m3" in p]
    row = next(x for x in sglang.splitlines() if x.startswith("| `--kv-cache-dtype`"))
    assert "SGLang's data type for the KV cache." in row and "CacheConfig" not in row


NOTICE_CONFIG = """\
from dataclasses import dataclass

from vllm.logger import init_logger

logger = init_logger(__name__)


@dataclass
class SchedulerConfig:
    async_scheduling: bool | None = None
    executor_backend: str = "mp"

    def __post_init__(self):
        if self.async_scheduling is None:
            if self.executor_backend not in ("mp", "uni"):
                logger.warning_once("Async scheduling will be disabled for this backend.")
                self.async_scheduling = False
            else:
                self.async_scheduling = True
"""
NOTICE_ENGINE = """\
import argparse
from dataclasses import dataclass

from vllm.config.scheduler import SchedulerConfig
from vllm.engine.arg_utils_kwargs import get_kwargs


@dataclass
class EngineArgs:
    async_scheduling: bool | None = SchedulerConfig.async_scheduling
    executor_backend: str = SchedulerConfig.executor_backend

    @staticmethod
    def add_cli_args(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        kwargs = get_kwargs(EngineArgs)
        parser.add_argument("--async-scheduling", **kwargs["async_scheduling"])
        parser.add_argument("--executor-backend", **kwargs["executor_backend"])
        return parser
"""


def test_a_notice_turns_a_vllm_switch_off_with_its_no_form(tmp_path: Path) -> None:
    """vLLM's `bool | None` fields are BooleanOptionalAction switches: the code's choice
    `False` is `--no-async-scheduling`; `--async-scheduling=False` is refused by argparse."""
    src = tmp_path / "src" / "vllm"
    (src / "config").mkdir(parents=True)
    (src / "engine").mkdir()
    (src / "config" / "scheduler.py").write_text(NOTICE_CONFIG, encoding="utf-8")
    (src / "engine" / "arg_utils.py").write_text(NOTICE_ENGINE, encoding="utf-8")
    res = pipeline.build(
        pipeline.BuildSpec(out=tmp_path / "o", source=tmp_path / "src", profile="vllm")
    )
    (rec,) = _by_message(_records(res.out), "Async scheduling will be disabled")
    assert rec["exampleFix"].splitlines()[-1] == "vllm serve MODEL --no-async-scheduling"
    assert "=False" not in rec["exampleFix"]


def test_a_release_both_projects_tag_gets_a_page_each(shared_release, tmp_path: Path) -> None:
    """Both projects tag v0.2.0: each has its own page with its own commit and errors, and a
    record links to its own project's page."""
    from kverr.feeds.exports import export

    export("site", tmp_path / "site", shared_release)
    releases = tmp_path / "site" / "releases"
    index = (releases / "index.html").read_text(encoding="utf-8")
    assert "v0.2.0 (SGLang)" in index and "v0.2.0 (vLLM)" in index and "v0.2.5<" in index
    pages = {}
    for product in ("SGLang", "vLLM"):
        (page,) = [
            p
            for p in releases.glob("*.html")
            if f"<h1><code>v0.2.0 ({product})" in p.read_text("utf-8")
        ]
        pages[product] = page
    ours, theirs = (pages[p].read_text(encoding="utf-8") for p in ("SGLang", "vLLM"))
    assert "Our check failed" in ours and "Their check failed" not in ours
    assert "Their check failed" in theirs and "Our check failed" not in theirs
    assert "kverr diff v0.1.0 v0.2.0 --project sglang" in ours
    assert "<code>5a1" in ours and "<code>5b0" in theirs  # each project's own commit
    record = _page(tmp_path / "site", "Our check failed")
    assert f"releases/{pages['SGLang'].name}" in record and pages["vLLM"].name not in record
