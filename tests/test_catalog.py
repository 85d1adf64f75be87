"""The DuckDB catalog: loading a dataset atomically, opening it, lookups, bad catalogs.

Also home of the hand-written fixture dataset the matcher and explain tests share
(`FIXTURE_RECORDS`, `build_catalog`): records imitate SGLang's message shapes in our own words.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import duckdb
import pytest
import synth
from kverr.catalog import load_dataset, open_catalog, store

from kverr.errors import CatalogError, DatasetError, NotFound

SHA_OLD, SHA_NEW = "a" * 40, "b" * 40
INT = r"[-+]?[0-9][0-9_,]{0,30}"
NUM = r"[-+]?(?:[0-9][0-9_,]{0,30}(?:\.[0-9]{0,20})?(?:[eE][-+]?[0-9]{1,4})?|inf|nan)%?"

ASSERT_SOURCE = """\
    def _handle_page_size(self):
        cfg = self._resolved()
        # Paged kernels index whole pages only.
        assert cfg.page_size % 16 == 0
        return cfg"""

R = synth.make_record
FIXTURE_RECORDS = [
    R("55a1000000000001", "--ssl-keyfile requires --ssl-certfile.",
      r"--ssl-keyfile requires --ssl-certfile\."),
    R("55b1000000000002", "--ssl-certfile requires --ssl-keyfile.",
      r"--ssl-certfile requires --ssl-keyfile\."),
    R("7d10000000000003", "tp_size={self.tp_size} must be divisible by pp_size={self.pp_size}",
      rf"tp_size=(?P<v0>{INT}) must be divisible by pp_size=(?P<v1>{INT})",
      placeholders=["self.tp_size", "self.pp_size"], flags=["--tp-size", "--pp-size"]),
    R("ab10000000000004", "Unsupported attention backend {backend} for model {model_path}; choose another backend.",
      r"Unsupported attention backend (?P<v0>.{1,256}?) for model (?P<v1>.{0,256}?); choose another backend\.",
      placeholders=["backend", "model_path"], flags=["--attention-backend"]),
    R("d1c0000000000005", "Invalid --json-model-override-args {overrides}: expected a JSON object.",
      r"Invalid --json-model-override-args (?P<v0>.{1,256}?): expected a JSON object\.",
      placeholders=["overrides"]),
    R("fa70000000000006", "--mem-fraction-static must be in (0, 1], got {value}",
      rf"--mem-fraction-static must be in \(0, 1\], got (?P<v0>{NUM})", placeholders=["value"]),
    R("0de0000000000007", "Overlap schedule is disabled because --disable-radix-cache is set; throughput may drop.",
      r"Overlap schedule is disabled because --disable-radix-cache is set; throughput may drop\.",
      kind="log", error_class=None, severity="warning"),
    R("a5e0000000000008", "", "", kind="assert", error_class="AssertionError",
      source=ASSERT_SOURCE, source_start=200, line=203),
    R("5de0000000000009", "Speculative decoding with {algo} requires --speculative-eagle-topk 1, got {topk}",
      r"Speculative decoding with (?P<v0>.{0,256}?) requires --speculative-eagle-topk 1, got (?P<v1>.{0,256})",
      kind="assert", error_class="AssertionError", placeholders=["algo", "topk"]),
    R("0ff1000000000010", "--kv-offload-budget is incompatible with --enable-streaming-prefill: the streaming prefill path pins the whole KV window on device, which leaves nothing to offload.",
      r"--kv-offload-budget is incompatible with --enable-streaming-prefill: the streaming prefill path pins the whole KV window on device, which leaves nothing to offload\.",
      severity="critical"),
    R("0ff2000000000011", "--kv-offload-budget is incompatible with --enable-lora-hotswap: hot-swapped adapters allocate from the same pool and cannot be evicted.",
      r"--kv-offload-budget is incompatible with --enable-lora-hotswap: hot-swapped adapters allocate from the same pool and cannot be evicted\."),
    R("9a10000000000012", "Quantization method {method} is not supported.",
      r"Quantization method (?P<v0>.{1,256}) is not supported\.", placeholders=["method"]),
    R("9a20000000000013", "Quantization method 'fp4' is not supported.",
      r"Quantization method 'fp4' is not supported\."),
    R("c4a0000000000014", "Chunked prefill size {size} must be a multiple of the page size {page}",
      r"Chunked prefill size (?P<v0>.{0,256}?) must be a multiple of the page size (?P<v1>.{0,256})",
      placeholders=["size", "page"]),
    R("d15c000000000015", "Disaggregation mode {mode} needs a transfer backend in {backends}.",
      r"Disaggregation mode (?P<v0>.{1,256}?) needs a transfer backend in (?P<v1>.{0,256})\.",
      placeholders=["mode", "backends"]),
]  # fmt: skip
FIXTURE_RECORDS.append(
    # the source itself colours this warning: the pattern carries the escape codes
    R("c010000000000016", "\x1b[31mKV cache pool is full; lower --max-running-requests.\x1b[0m",
      "\x1b\\[31mKV cache pool is full; lower --max-running-requests\\.\x1b\\[0m",
      kind="log", error_class=None, severity="warning")
)  # fmt: skip
REVISIONS = [
    {
        "sha": SHA_OLD,
        "date": "2026-01-01T00:00:00Z",
        "tags": ["v0.4.0"],
        "subject": "old",
        "ord": 0,
    },
    {
        "sha": SHA_NEW,
        "date": "2026-03-01T00:00:00Z",
        "tags": ["v0.5.0"],
        "subject": "new",
        "ord": 1,
    },
]
ONLY_NEW = {"55b1000000000002"}
ONLY_OLD = {"0ff2000000000011"}
FLAGS = [
    {"name": "--tp-size", "dest": "tp_size", "help": "Tensor parallel size.", "default": "1", "choices": None,
     "type": "int", "action": None, "file": "python/sglang/srt/server_args.py", "line": 10},
    {"name": "--attention-backend", "dest": "attention_backend", "help": "Attention kernels.", "default": "None",
     "choices": ["fa3", "flashinfer", "triton"], "type": "str", "action": None,
     "file": "python/sglang/srt/server_args.py", "line": 11},
]  # fmt: skip


def occurrences(records: list[dict]) -> list[dict]:
    out = []
    for rev in REVISIONS:
        for r in records:
            if (rev["sha"] == SHA_OLD and r["id"] in ONLY_NEW) or (
                rev["sha"] == SHA_NEW and r["id"] in ONLY_OLD
            ):
                continue
            out.append(
                {"id": r["id"], "sha": rev["sha"], "file": r["filePath"], "line": r["lineNumber"]}
            )
    return out


def build_catalog(tmp: Path, records: list[dict] | None = None) -> Path:
    """Write the fixture dataset under `tmp` and load it; returns the catalog path."""
    records = FIXTURE_RECORDS if records is None else records
    ds = synth.write_files(
        tmp / "dataset", records, revisions=REVISIONS, occurrences=occurrences(records), flags=FLAGS
    )
    load_dataset(ds, tmp / "catalog.duckdb")
    return tmp / "catalog.duckdb"


@pytest.fixture(scope="module")
def catalog_file(tmp_path_factory) -> Path:
    return build_catalog(tmp_path_factory.mktemp("catalog"))


@pytest.fixture
def cat(catalog_file):
    with open_catalog(catalog_file) as c:
        yield c


# ---------------------------------------------------------------- lookups


def test_get_returns_the_full_record(cat):
    assert cat.get("7d10000000000003") == FIXTURE_RECORDS[2]
    assert cat.get("0000000000000000") is None


def test_each_get_is_the_callers_own_copy(cat):
    """Records are kept decoded; a caller that changes its copy (a list, a nested dict) changes
    no other caller's, nor what the catalog answers next."""
    first = cat.get("7d10000000000003")
    for value in first.values():
        if isinstance(value, list):
            value.append("changed")
        elif isinstance(value, dict):
            value["changed"] = True
    first["errorMessage"] = "changed"
    assert cat.get("7d10000000000003") == FIXTURE_RECORDS[2]
    assert cat.get("7d10000000000003") is not cat.get("7d10000000000003")


def test_records_respect_version(cat):
    all_ids = {r["id"] for r in cat.records()}
    assert all_ids == {r["id"] for r in FIXTURE_RECORDS}
    assert {r["id"] for r in cat.records(version="v0.4.0")} == all_ids - ONLY_NEW
    assert {r["id"] for r in cat.records(version="bbbbbbb")} == all_ids - ONLY_OLD


def test_flags_carry_choices_and_records(cat):
    flag = cat.flag("--attention-backend")
    assert flag["choices"] == ["fa3", "flashinfer", "triton"]
    assert flag["records"] == ["ab10000000000004"]
    assert [f["name"] for f in cat.flags()] == ["--attention-backend", "--tp-size"]
    assert cat.flag("--nope") is None


def test_revisions_and_where_a_record_exists(cat):
    assert [r.tags for r in cat.revisions()] == [("v0.4.0",), ("v0.5.0",)]
    assert [r.sha for r in cat.revisions_of("55b1000000000002")] == [SHA_NEW]
    assert cat.resolve_version("v0.4.0").sha == SHA_OLD
    assert cat.resolve_version("aaaa").sha == SHA_OLD


@pytest.mark.parametrize("rev", ["v9.9.9", "abc", "cccc"])
def test_unknown_version_is_not_found(cat, rev):
    with pytest.raises(NotFound, match=rf"version '{rev}'"):
        cat.resolve_version(rev)


def test_tables_follow_the_contract(catalog_file):
    con = duckdb.connect(str(catalog_file), read_only=True)
    tables = {
        r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
    }
    assert {
        "records",
        "anchors",
        "flags",
        "record_flags",
        "revisions",
        "occurrences",
        "lineage",
        "meta",
    } <= tables
    # every record with a usable pattern has exactly one anchor; the message-less assert has none
    anchored = dict(con.execute("SELECT id, token FROM anchors").fetchall())
    assert "a5e0000000000008" not in anchored
    assert anchored["55a1000000000001"] in {"ssl-keyfile", "ssl-certfile", "requires"}
    con.close()


@pytest.mark.slow  # 300 synthetic records loaded with the index in small rows (stress)
def test_a_large_index_is_stored_in_chunks_and_read_back_whole(tmp_path, monkeypatch):
    """The index's JSON text is written as several `meta` rows (one large value cost DuckDB
    a few copies of it at once: the peak of a 100,000-record load) and joined at open."""
    from kverr.catalog import matcher

    ds = synth.write_files(tmp_path / "ds", synth.synthetic_records(300))
    monkeypatch.setattr(store, "INDEX_CHUNK", 1000)
    load_dataset(ds, tmp_path / "c.duckdb")
    con = duckdb.connect(str(tmp_path / "c.duckdb"), read_only=True)
    sql = "SELECT key FROM meta WHERE key LIKE 'index%' ORDER BY key"
    keys = [k for (k,) in con.execute(sql).fetchall()]
    rebuilt = matcher.Index(con)
    con.close()
    assert len(keys) > 10 and keys == [f"index.{n:04d}" for n in range(len(keys))]
    with open_catalog(tmp_path / "c.duckdb") as c:
        assert c.index.ids == rebuilt.ids and c.index.by_token == rebuilt.by_token
        assert c.explain("ValueError: " + synth.synthetic_records(300)[7]["errorMessage"])


def test_the_stored_index_is_the_one_the_tables_give(catalog_file):
    """The loader stores the matcher's index in `meta` (no process rebuilds it); it must be
    exactly what the records and anchors tables give, and an older catalog without it still
    opens (the index is then read from the tables)."""
    from kverr.catalog import matcher

    con = duckdb.connect(str(catalog_file), read_only=True)
    stored = json.loads(
        store.index_text(dict(con.execute("SELECT key, value FROM meta").fetchall()))
    )
    rebuilt = matcher.Index(con)
    con.close()
    with open_catalog(catalog_file) as c:
        idx = c.index
        for name in ("ids", "pattern", "severity", "last_ord", "project", "by_token"):
            assert getattr(idx, name) == getattr(rebuilt, name) == stored[name], name
        assert idx.pos == rebuilt.pos and "55a1000000000001" in idx.pos
        assert any(idx.pos["55a1000000000001"] in ids for ids in idx.by_token.values())


# ---------------------------------------------------------------- loading


def test_load_is_deterministic_and_leaves_no_temp_files(tmp_path):
    path = build_catalog(tmp_path)
    first = _dump(path)
    load_dataset(tmp_path / "dataset", path)
    assert _dump(path) == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["catalog.duckdb", "dataset"]


def _dump(path: Path) -> list:
    con = duckdb.connect(str(path), read_only=True)
    out = [
        con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall()
        for t in ("records", "anchors", "terms", "occurrences")
    ]
    con.close()
    return out


def test_unsafe_pattern_is_skipped_with_a_warning(tmp_path):
    bad = [
        synth.make_record("bad0000000000001", "nested", r"(a+)+b nested"),
        synth.make_record("bad0000000000002", "broken", r"broken (unclosed"),
        synth.make_record("bad0000000000003", "lookahead", r"look(?=ahead)"),
        synth.make_record("bad0000000000004", "backref", r"(?P<v0>x)(?P=v0) backref"),
    ]
    ds = synth.write_files(tmp_path / "ds", FIXTURE_RECORDS[:2] + bad)
    report = load_dataset(ds, tmp_path / "c.duckdb")
    assert (report.records, report.usable) == (6, 2)
    warnings = report.warnings
    assert [w.split(":")[0] for w in warnings] == [f"record {r['id']}" for r in bad]
    assert "nests quantifiers" in warnings[0] and "does not compile" in warnings[1]
    with open_catalog(tmp_path / "c.duckdb") as c:
        assert c.get("bad0000000000002")["messagePattern"] == "broken (unclosed"  # kept, not lost
        assert c.explain("broken (unclosed") == []
        assert [m.record["id"] for m in c.explain("--ssl-keyfile requires --ssl-certfile.")] == [
            "55a1000000000001"
        ]


@pytest.mark.parametrize(
    "setup, message",
    [
        (lambda d: None, "is not a directory"),
        (lambda d: d.mkdir(), "manifest.json is missing"),
        (lambda d: (d.mkdir(), (d / "manifest.json").write_text("{")), "manifest.json is not valid JSON"),
        (lambda d: (d.mkdir(), (d / "manifest.json").write_text("{}")), "records.jsonl is missing"),
        (lambda d: (d.mkdir(), (d / "manifest.json").write_text("{}"), (d / "records.jsonl").write_text("{\n")), r"records.jsonl:1 is not valid JSON"),
        (lambda d: (d.mkdir(), (d / "manifest.json").write_text("{}"), (d / "records.jsonl").write_text('{"record": {}}\n')), r"records.jsonl:1 has no record with an id"),
    ],
)  # fmt: skip
def test_bad_dataset_names_the_file(tmp_path, setup, message):
    ds = tmp_path / "ds"
    setup(ds)
    with pytest.raises(DatasetError, match=message):
        load_dataset(ds, tmp_path / "c.duckdb")
    assert not (tmp_path / "c.duckdb").exists()


# ---------------------------------------------------------------- opening


def test_missing_catalog_names_the_fix(tmp_path):
    with pytest.raises(
        CatalogError, match=r"does not exist; build it with `kverr load DATASET_DIR --catalog"
    ):
        open_catalog(tmp_path / "nope.duckdb")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", r"catalog .* is damaged \(.*\); rebuild it with `kverr load"),
        (b"\x00garbage" * 100, r"is not a kverr catalog \(not a DuckDB file\); pass --catalog"),
        (b"SQLite format 3\x00" + b"\x00" * 4000, r"is not a kverr catalog \(not a DuckDB file\)"),
    ],
)
def test_corrupt_catalog_names_the_fix(tmp_path, content, message):
    path = tmp_path / "bad.duckdb"
    path.write_bytes(content)
    with pytest.raises(CatalogError, match=message):
        open_catalog(path)


def test_foreign_duckdb_file_is_rejected(tmp_path):
    path = tmp_path / "other.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE x(a INTEGER)")
    con.close()
    # Not ours: `kverr load` over it would destroy someone's database, so no rebuild hint.
    with pytest.raises(CatalogError, match="a DuckDB database without kverr's tables") as exc:
        open_catalog(path)
    assert "kverr load DATASET_DIR" not in str(exc.value)


def test_env_var_selects_the_catalog(catalog_file, monkeypatch):
    monkeypatch.setenv("KVERR_CATALOG", str(catalog_file))
    with open_catalog() as c:
        assert c.path == catalog_file


def test_concurrent_readers(catalog_file):
    with open_catalog(catalog_file) as a, open_catalog(catalog_file) as b:
        assert a.get("55a1000000000001") == b.get("55a1000000000001")


# ---------------------------------------------------------------- the packaged default


def _packaged(tmp_path: Path, monkeypatch, with_dataset: bool) -> Path:
    root = tmp_path / "pkg"
    if with_dataset:
        synth.write_files(root / "sglang", FIXTURE_RECORDS)
    monkeypatch.setattr(store, "packaged_dataset_dir", lambda: root)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("KVERR_CATALOG", raising=False)
    return root


def test_default_catalog_is_built_once_into_the_cache(tmp_path, monkeypatch):
    _packaged(tmp_path, monkeypatch, with_dataset=True)
    with open_catalog() as c:
        first = c.path
        assert c.get("55a1000000000001")
    assert first.parent == tmp_path / "cache" / "kverr"
    stamp = first.stat().st_mtime_ns
    with open_catalog() as c:
        assert c.path == first and first.stat().st_mtime_ns == stamp


def test_a_new_packaged_dataset_gets_a_catalog_beside_the_old_one(tmp_path, monkeypatch):
    """Another kverr (a checkout's `python -m kverr` beside an installed one) may still use
    the old catalog: it stays, and switching back costs no build."""
    root = _packaged(tmp_path, monkeypatch, with_dataset=True)
    with open_catalog() as c:
        old = c.path
    manifest = root / "sglang" / "manifest.json"  # an upgrade ships another dataset
    text = manifest.read_text(encoding="utf-8")
    manifest.write_text(text + " ", encoding="utf-8")
    with open_catalog() as c:
        assert c.path != old and c.get("55a1000000000001")
    assert sorted(p.name for p in old.parent.glob("packaged-*.duckdb")) == sorted(
        [old.name, c.path.name]
    )
    manifest.write_text(text, encoding="utf-8")
    with open_catalog() as c:
        assert c.path == old


def test_default_catalog_without_packaged_dataset(tmp_path, monkeypatch):
    _packaged(tmp_path, monkeypatch, with_dataset=False)
    with pytest.raises(CatalogError, match=r"no packaged dataset at .*pass --catalog FILE"):
        open_catalog()


def _race(args) -> int:
    ds, target = args
    load_dataset(ds, target)
    with open_catalog(target) as c:
        return sum(1 for _ in c.records())


@pytest.mark.slow  # several processes load one catalog at once (a process race)
def test_racing_builders_leave_a_whole_catalog(tmp_path):
    ds = synth.write_files(tmp_path / "ds", FIXTURE_RECORDS)
    target = tmp_path / "cache" / "c.duckdb"
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        counts = pool.map(_race, [(ds, target)] * 4)
    assert counts == [len(FIXTURE_RECORDS)] * 4
    assert os.listdir(target.parent) == ["c.duckdb"]


def test_dataset_line_format_is_what_records_jsonl_holds(tmp_path):
    ds = synth.write_files(tmp_path / "ds", FIXTURE_RECORDS[:1])
    line = json.loads((ds / "records.jsonl").read_text().splitlines()[0])
    assert sorted(line) == ["datasetVersion", "record"]


@pytest.mark.parametrize(
    ("present", "expected"),
    [
        ({0, 1, 2}, ["v1", "v2", "2222222222"]),  # tags, then the untagged newest commit
        ({2}, ["2222222222"]),  # only on main: users running main still see where
        ({0, 1, 2, 3}, ["v1", "v2", "2222222222", "seed"]),  # a snapshot label counts as a release
        ({1}, ["v2"]),
    ],
)
def test_releases_name_tags_and_the_newest_untagged_commit(present, expected):
    from kverr.catalog.store import _releases

    revisions = [
        {"ord": 0, "sha": "0" * 40, "tags": ["v1"]},
        {"ord": 1, "sha": "1" * 40, "tags": ["v2"]},
        {"ord": 2, "sha": "2" * 40, "tags": []},
        {"ord": 3, "sha": None, "tags": ["seed"]},
    ]
    occs = [{"id": "r", "from": n, "to": n} for n in present]
    assert _releases(occs, revisions) == {"r": expected}


@pytest.mark.parametrize(
    ("key", "found"),
    [
        ("55a1000000000001", "55a1000000000001"),  # the id
        ("55A1000000000001 ", "55a1000000000001"),  # case and spaces forgiven
        ("55a100", "55a1000000000001"),  # a unique prefix of 6+ hex characters
        ("55a1", None),  # too short to be sure
        ("0ff", None),
        ("0ff1000", "0ff1000000000010"),
        ("0ff", None),
        ("zzzzzz", None),
    ],
)
def test_find_id_by_id_prefix_or_slug(catalog_file, key, found):
    with open_catalog(catalog_file) as cat:
        assert cat.find_id(key) == found
        slug = cat.get("55a1000000000001")["slug"]
        assert cat.find_id(slug) == "55a1000000000001"


@pytest.mark.parametrize("q", ["ssl-certfile", "--ssl-certfile", "ssl_certfile"])
def test_search_for_a_flag_lists_the_records_involving_it_first(catalog_file, q):
    with open_catalog(catalog_file) as cat:
        involved = {r["id"] for r in cat.records() if "--ssl-certfile" in r["flags"]}
        got = [m.record["id"] for m in cat.search(q)]
    assert involved and set(got[: len(involved)]) == involved


def test_no_connection_draws_duckdbs_progress_bar(catalog_file, capfd):
    """DuckDB draws a progress bar on stdout for a query past 2 s (a 100,000-record load's
    index query ran that long, and the bar landed in bench_scale's parsed output): every
    connection kverr opens turns it off, as it would also land inside `--json`."""
    from kverr.catalog import store

    con = store.connect_read_only(catalog_file)
    try:
        assert con.execute("SELECT current_setting('enable_progress_bar')").fetchone() == (False,)
    finally:
        con.close()
    assert capfd.readouterr().out == ""
