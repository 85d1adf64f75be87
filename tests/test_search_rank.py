"""Search finds what people type: table tests over a hand-made catalog of two projects.

The words of a query are matched against each record's message, flags and meaning (BM25F,
catalog/browse.py), identifiers split into words (`max model len` finds `max_model_len`);
`--flag` takes the option, its dest name or a prefix, and ranks the records most about the
flag first. The messages are ours, in the shape of a serving engine's checks.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kverr.catalog import browse, load_datasets, open_catalog
from test_feeds_data import _record
from typer.testing import CliRunner

from kverr.cli import app
from kverr.profile import as_tables, load_profile

MANY = [f"--knob-{i}" for i in range(20)] + ["--max-model-len"]

ENGINE = {  # project "vllm"
    "ctx-over": dict(
        message="Requested max_model_len ({self.max_model_len}) is larger than the model's context window ({derived}).",
        placeholders=["self.max_model_len", "derived"],
        documentation="The model config caps the context; a longer one needs an explicit override.",
    ),
    "ctx-over-old": dict(  # the same message at another site, gone by the last revision
        message="Requested max_model_len ({self.max_model_len}) is larger than the model's context window ({derived}).",
        placeholders=["self.max_model_len", "derived"],
        last=0,
    ),
    "spec-len": dict(
        message="speculative_max_model_len={spec} cannot exceed draft_max_model_len={draft}",
        placeholders=["spec", "draft"],
    ),
    "parser-len": dict(
        message="argument --max-model-len: invalid int value: {value!r}",
        placeholders=["value"],
        flags=["--max-model-len"],
    ),
    "window-many": dict(
        message="Sliding window attention cannot be combined with chunked prefill.",
        flags=MANY,
    ),
    "batch-below": dict(
        message="max_num_batched_tokens ({a}) is smaller than max_model_len ({b}).",
        placeholders=["a", "b"],
        flags=["--max-num-batched-tokens"],
    ),
    "dtype": dict(message="Unknown dtype: {dtype}", placeholders=["dtype"], flags=["--dtype"]),
    "meaning-only": dict(
        message="Context window exceeded while scheduling.",
        documentation="Lower --max-model-len or shorten the prompt.",
    ),
}
SERVER = {  # project "sglang"
    "page-power": dict(
        message="--page-size must be a power of two, got {self.page_size}.",
        placeholders=["self.page_size"],
        flags=["--page-size"],
    ),
    "ctx-length": dict(
        message="--context-length {n} is larger than the model's position embeddings.",
        placeholders=["n"],
        flags=["--context-length"],
    ),
}
KEYS = {key: _record(key, spec["message"], "", 100 + i)["id"]
        for i, (key, spec) in enumerate([*ENGINE.items(), *SERVER.items()])}  # fmt: skip


def _write(out: Path, project: str, specs: dict, first_line: int) -> Path:
    """A dataset of two revisions: every record in the last one but those with `last=0`."""
    out.mkdir(parents=True)
    shas = [project[0] * 40, project[1] * 40]
    recs = []
    for i, (key, spec) in enumerate(specs.items()):
        spec = dict(spec)
        message = spec.pop("message")
        spec.pop("last", None)
        rec = _record(key, message, "", first_line + i, **spec)
        recs.append({**rec, "project": project})
    occurrences = [
        {"id": r["id"], "sha": sha, "file": r["filePath"], "line": r["lineNumber"]}
        for r, key in zip(recs, specs, strict=True)
        for n, sha in enumerate(shas)
        if n <= specs[key].get("last", 1)
    ]
    files = {
        "records.jsonl": [{"datasetVersion": "2026-05-01T00:00:00.000Z", "record": r} for r in recs],
        "revisions.jsonl": [
            {"sha": sha, "date": f"2026-0{n + 1}-01T00:00:00Z", "tags": [f"{project[0]}{n}.0"], "subject": "s", "ord": n}
            for n, sha in enumerate(shas)
        ],
        "occurrences.jsonl": occurrences,
        "flags.jsonl": [],
        "lineage.jsonl": [],
    }  # fmt: skip
    for name, rows in files.items():
        (out / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    manifest = {
        "tool": "kverr", "toolVersion": "0.1.0", "schemaVersion": 2, "revisions": shas,
        "datasetVersion": "2026-05-01T00:00:00.000Z", "counts": {"records": len(recs)},
        "profile": as_tables(load_profile(project)),
    }  # fmt: skip
    (out / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return out


@pytest.fixture(scope="module")
def catalog_path(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("search")
    path = root / "both.duckdb"
    load_datasets(
        [
            _write(root / "vllm", "vllm", ENGINE, 100),
            _write(root / "sglang", "sglang", SERVER, 500),
        ],
        path,
    )
    return path


@pytest.fixture(scope="module")
def cat(catalog_path, tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:  # the index's cache file in the test's folder
        mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg")))
        with open_catalog(catalog_path) as c:
            yield c


def _keys(matches) -> list[str]:
    by_id = {v: k for k, v in KEYS.items()}
    return [by_id[m.record["id"]] for m in matches]


# ---------------------------------------------------------------- words


@pytest.mark.parametrize(
    ("query", "project", "first", "before", "after"),
    [
        # typed as words, as the identifier, as the option: the same records lead
        ("max model len", "vllm", {"ctx-over", "parser-len"}, "ctx-over", "spec-len"),
        ("max_model_len", "vllm", {"ctx-over", "parser-len"}, "ctx-over", "spec-len"),
        ("max model len", None, {"ctx-over", "parser-len"}, "batch-below", "meaning-only"),
        # a near miss asked for by name leads
        ("speculative max model len", "vllm", {"spec-len"}, "spec-len", "ctx-over"),
        # the meaning counts, below a message that says it
        ("shorten the prompt", "vllm", {"meaning-only"}, "meaning-only", None),
        ("context window", "vllm", {"ctx-over", "meaning-only"}, "ctx-over", "window-many"),
        ("page size power of two", None, {"page-power"}, "page-power", None),
        # a flag typed as a query: its records first
        ("--dtype", None, {"dtype"}, "dtype", None),
    ],
    ids=["words", "identifier", "every-project", "near-miss", "meaning", "two-words", "prose",
         "flag-query"],
)  # fmt: skip
def test_search_ranks_what_people_type(cat, query, project, first, before, after):
    got = _keys(cat.search(query, project=project))
    assert set(got[: len(first)]) == first, got
    if after is not None:
        assert after in got and got.index(before) < got.index(after), got


def test_duplicate_messages_rank_newest_first(cat):
    got = _keys(cat.search("requested max model len larger than context window"))
    assert got[:2] == ["ctx-over", "ctx-over-old"], got


@pytest.mark.parametrize("query", ["zebra quartz", "", "   ", "-- _"])
def test_search_with_nothing_in_common_is_empty(cat, query):
    assert cat.search(query) == []


def test_scores_are_fractions_best_first(cat):
    scores = [m.score for m in cat.search("max model len")]
    assert scores == sorted(scores, reverse=True) and 0 < scores[-1] <= scores[0] <= 1.0


# ---------------------------------------------------------------- --flag


@pytest.mark.parametrize(
    "spelling", ["max-model-len", "--max-model-len", "max_model_len", "MAX_MODEL_LEN"]
)
def test_flag_by_option_or_dest_name(cat, spelling):
    got = _keys(cat.search_flag(spelling)[0])
    # the message that spells it and involves only it, then messages that spell it (the one
    # gone from the last revision after), then the check on 21 flags; never the speculative
    # option whose name merely contains it
    assert got == ["parser-len", "ctx-over", "batch-below", "ctx-over-old", "window-many"], got


def test_flag_by_prefix(cat):
    got = _keys(cat.search_flag("max-model")[0])
    assert set(got) == {"parser-len", "ctx-over", "ctx-over-old", "batch-below", "window-many"}
    assert got[-1] == "window-many"


@pytest.mark.parametrize(("flag", "want"), [("dtype", ["dtype"]), ("--page-size", ["page-power"]),
                                            ("no-such-flag", [])])  # fmt: skip
def test_flag_table(cat, flag, want):
    matches, total = cat.search_flag(flag)
    assert _keys(matches) == want and total == len(want)


def test_flag_filters_by_release_and_project(cat):
    newest = cat.search_flag("max-model-len", version="v1.0", project="vllm")[0]
    assert "ctx-over-old" not in _keys(newest) and "ctx-over" in _keys(newest)
    assert cat.search_flag("max-model-len", project="sglang") == ([], 0)


@pytest.mark.parametrize(
    ("text", "names"),
    [("set --max-model-len", ["max_model_len"]), ("self.page_size", ["page_size"]),
     ("--dtype", ["dtype"]), ("Unknown dtype", []), ("got -1", [])],
)  # fmt: skip
def test_spelled_options(text, names):
    assert browse.spelled(text) == names


# ---------------------------------------------------------------- the command


def test_cli_shows_a_project_column_for_several_projects(catalog_path, cache, monkeypatch):
    monkeypatch.setenv("KVERR_CATALOG", str(catalog_path))
    both = CliRunner().invoke(app, ["search", "larger", "than", "the", "model"])
    lines = both.stdout.splitlines()
    assert both.exit_code == 0 and {line.split()[0] for line in lines[:-1]} == {"vllm", "sglang"}
    one = CliRunner().invoke(app, ["search", "larger", "than", "--project", "sglang"])
    assert one.stdout.splitlines()[0].startswith(KEYS["ctx-length"]), one.stdout


def test_cli_flag_lists_the_record_that_only_spells_it(catalog_path, cache, monkeypatch):
    monkeypatch.setenv("KVERR_CATALOG", str(catalog_path))
    res = CliRunner().invoke(app, ["search", "--flag", "max_model_len", "--json"])
    doc = json.loads(res.stdout)
    assert res.exit_code == 0 and doc["flag"] == "--max-model-len" and doc["total"] == 5
    assert KEYS["ctx-over"] in [m["record"]["id"] for m in doc["matches"]]


# ---------------------------------------------------------------- the index's cache file


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "kverr" / "search"


def _fresh_index(path: Path) -> browse.Index:
    with open_catalog(path) as c:
        return browse.load(c.con, c.path)


def _same(a: browse.Index, b: browse.Index) -> bool:
    return (a.ids, a.last_ord, a.flags, a.named, a.postings, a.docs, a.weights) == (
        b.ids, b.last_ord, b.flags, b.named, b.postings, b.docs, b.weights)  # fmt: skip


def test_the_index_is_built_once_then_read_from_the_cache(catalog_path, cache):
    built = _fresh_index(catalog_path)
    (file,) = cache.glob("*.idx")
    again = _fresh_index(catalog_path)
    assert _same(built, again) and list(cache.glob("*.idx")) == [file]
    assert browse.rank(again, "max model len") == browse.rank(built, "max model len")


@pytest.mark.parametrize("damage", [b"", b"not an index", None], ids=["empty", "junk", "cut"])
def test_a_damaged_cache_is_built_again(catalog_path, cache, damage):
    built = _fresh_index(catalog_path)
    (file,) = cache.glob("*.idx")
    file.write_bytes(file.read_bytes()[:-5] if damage is None else damage)
    assert _same(_fresh_index(catalog_path), built)
    assert _same(browse._read(file.read_bytes()), built)  # and written whole again


def test_a_replaced_catalog_gets_its_own_index(catalog_path, cache, tmp_path):
    _fresh_index(catalog_path)
    copy = tmp_path / "copy.duckdb"
    copy.write_bytes(catalog_path.read_bytes())
    _fresh_index(copy)
    assert len(list(cache.glob("*.idx"))) == 2


def test_an_unwritable_cache_still_searches(catalog_path, tmp_path, monkeypatch):
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    with open_catalog(catalog_path) as c:
        assert set(_keys(c.search("max model len"))[:2]) == {"ctx-over", "parser-len"}
