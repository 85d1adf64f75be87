"""Damaged catalogs, cache folders kverr cannot write, and `load` refusing what it must not read
or replace: one line and exit 2 (or a rebuild with a warning), never a traceback.

Real DuckDB files damaged the ways disks and cut-short copies do (`synth.damage`), real
folders, the real CLI (CliRunner, plus real subprocesses for `serve`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import pytest
import synth
from kverr.catalog import history, load_dataset, open_catalog, store
from test_catalog import FIXTURE_RECORDS, build_catalog
from typer.testing import CliRunner

from kverr.cli import app
from kverr.errors import CatalogError

LINE = "ValueError: --ssl-keyfile requires --ssl-certfile."


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    return build_catalog(tmp_path_factory.mktemp("good"))


def copy(good: Path, tmp_path: Path, name: str = "c.duckdb") -> Path:
    return Path(shutil.copy(good, tmp_path / name))


def explain(*args: str, env: dict | None = None):
    return CliRunner().invoke(app, ["explain", *args], env=env)


def one_line(res) -> str:
    """The single stderr line of a failed command (and no traceback anywhere)."""
    assert "Traceback" not in res.output, res.output
    lines = res.stderr.splitlines()
    assert len(lines) == 1, res.stderr
    return lines[0]


# ---------------------------------------------------------------- a damaged catalog file


@pytest.mark.parametrize(
    ("how", "table", "reason"),
    [
        ("truncate", "records", "truncated: "),  # seen at open, from the header's block count
        ("blocks", "records", "Corrupt database file"),  # seen by the first query reading them
        ("blocks", "terms", "Corrupt database file"),  # seen only by a fuzzy (BM25) lookup
    ],
)
def test_damaged_catalog_is_one_line_and_exit_2(good, tmp_path, how, table, reason):
    path = synth.damage(copy(good, tmp_path), how, table)
    text = LINE if table == "records" else "Unsupported attention backend"
    res = explain(text, "--catalog", str(path))
    line = one_line(res)
    assert res.exit_code == 2  # 1 would say "no match"
    assert line.startswith(f"kverr: catalog {path} is damaged ({reason}")
    assert line.endswith(f"; rebuild it with `kverr load DATASET_DIR --catalog {path}`.")


def test_a_stored_index_not_whole_is_damage_in_one_line(good, tmp_path):
    """The matcher index is stored in rows joined at open (store.index_text): a row cut or
    lost by hand is a damaged catalog, said in one line, not a JSON traceback."""
    path = copy(good, tmp_path)
    con = duckdb.connect(str(path))
    con.execute("UPDATE meta SET value = left(value, 100) WHERE key = 'index.0000'")
    con.close()
    res = explain(LINE, "--catalog", str(path))
    assert res.exit_code == 2
    assert one_line(res).startswith(
        f"kverr: catalog {path} is damaged (its stored matcher index is not whole)"
    )


def _everything(cat) -> list:
    """Every way the library reads a catalog (each must let no duckdb.Error out)."""
    return [
        lambda: cat.explain(LINE),
        lambda: cat.explain("Unsupported attention backend"),
        lambda: cat.scan([LINE]),
        lambda: cat.search("ssl certfile"),
        lambda: cat.find_id("55a1000000000001"),
        lambda: cat.get("55a1000000000001"),
        lambda: list(cat.records()),
        lambda: cat.flag("--tp-size"),
        lambda: cat.flags(),
        lambda: cat.revisions(),
        lambda: cat.revisions_of("55a1000000000001"),
        lambda: cat.resolve_version("v0.5.0"),
        lambda: cat.ping(),
        lambda: cat.verify(),
        lambda: history.history(cat, "55a1000000000001"),
    ]


@pytest.mark.parametrize("i", range(len(_everything(None))))
def test_no_duckdb_error_escapes_any_query(good, i):
    """Damage can surface on any query, so the boundary is the connection itself: with its
    DuckDB connection gone, every read still raises CatalogError, never duckdb.Error."""
    cat = open_catalog(good)
    try:
        cat.con._root.close()  # every DuckDB call now fails, as on an invalidated database
        with pytest.raises(CatalogError, match=r"is damaged \(.*\); rebuild it with"):
            _everything(cat)[i]()
    finally:
        cat.close()


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b'{"message": "my notes"}\n' * 10, "not a DuckDB file"),
        (b"SQLite format 3\x00" + b"\x00" * 4000, "not a DuckDB file"),
        (None, "a DuckDB database without kverr's tables"),
    ],
    ids=["jsonl", "sqlite", "other-duckdb"],
)
def test_a_file_that_is_not_a_catalog_gets_no_load_hint(tmp_path, content, expected):
    """`kverr load ... --catalog errors.jsonl` would replace the user's file: never suggest it."""
    path = tmp_path / "errors.jsonl"
    if content is None:
        con = duckdb.connect(str(path))
        con.execute("CREATE TABLE notes(a INTEGER)")
        con.close()
    else:
        path.write_bytes(content)
    before = path.read_bytes()
    res = explain(LINE, "--catalog", str(path))
    assert res.exit_code == 2
    assert one_line(res) == (
        f"kverr: {path} is not a kverr catalog ({expected}); pass --catalog a file written by"
        " `kverr load` or `kverr build --catalog`."
    )
    assert "kverr load DATASET_DIR" not in res.stderr and path.read_bytes() == before


def test_a_directory_as_catalog(tmp_path):
    res = explain(LINE, "--catalog", str(tmp_path))
    assert res.exit_code == 2 and "is a directory, not a catalog" in one_line(res)


# ---------------------------------------------------------------- the cached default catalog


@pytest.fixture
def packaged(tmp_path, monkeypatch) -> Path:
    """A packaged dataset of our fixture records, a cache in tmp_path, and a private temp dir."""
    synth.write_files(tmp_path / "pkg" / "sglang", FIXTURE_RECORDS)
    monkeypatch.setattr(store, "packaged_dataset_dir", lambda: tmp_path / "pkg")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("KVERR_CATALOG", raising=False)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    return tmp_path


def cached(packaged: Path) -> Path:
    (path,) = (packaged / "cache" / "kverr").glob("packaged-*.duckdb")
    return path


def test_truncated_default_catalog_is_rebuilt_with_a_warning(packaged):
    assert explain(LINE).exit_code == 0  # first use builds it
    path = synth.damage(cached(packaged), "truncate")
    res = explain(LINE)
    assert res.exit_code == 0, res.output
    assert one_line(res).startswith(
        f"kverr: warning: the cached catalog {path} was damaged (truncated: "
    )
    assert res.stderr.rstrip().endswith("rebuilding it from the packaged dataset.")
    res = explain(LINE)  # whole again: no warning
    assert (res.exit_code, res.stderr) == (0, "")


def test_default_catalog_damaged_late_is_removed_and_rebuilt_next_run(packaged):
    assert explain(LINE).exit_code == 0
    path = synth.damage(cached(packaged), "blocks", "records")  # opens fine, fails on a query
    res = explain(LINE)
    assert res.exit_code == 2
    line = one_line(res)
    assert line.startswith(f"kverr: the cached catalog {path} is damaged (Corrupt database file")
    assert line.endswith(
        "; it has been removed, and the next run rebuilds it from the packaged dataset: run the"
        " command again."
    )
    assert not path.exists()
    res = explain(LINE)
    assert (res.exit_code, res.stderr) == (0, "") and cached(packaged).is_file()


def test_cache_path_under_a_file_falls_back_to_a_private_temp_dir(packaged, monkeypatch):
    (packaged / "file").write_text("not a directory\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(packaged / "file"))
    res = explain(LINE)
    assert res.exit_code == 0, res.output
    line = one_line(res)
    uid = os.getuid()
    fallback = packaged / "tmp" / f"kverr-{uid}"
    assert line.startswith(
        f"kverr: warning: cannot write the catalog cache {packaged / 'file' / 'kverr'} ("
    )
    assert f"using {fallback}/packaged-" in line and line.endswith(
        "set XDG_CACHE_HOME to a writable directory to keep it."
    )
    assert (fallback.stat().st_mode & 0o777) == 0o700
    assert len(list(fallback.glob("packaged-*.duckdb"))) == 1


def test_no_writable_place_for_the_default_catalog_is_one_line(packaged, monkeypatch):
    (packaged / "file").write_text("not a directory\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(packaged / "file"))
    monkeypatch.setattr(tempfile, "tempdir", str(packaged / "file"))
    res = explain(LINE)
    assert res.exit_code == 2
    line = one_line(res)
    assert line.startswith(
        f"kverr: cannot build the packaged catalog: neither the cache {packaged / 'file' / 'kverr'}"
    )
    assert line.endswith("set XDG_CACHE_HOME to a writable directory or pass --catalog FILE.")


@pytest.fixture
def read_only_dir(tmp_path):
    """A directory this process cannot write: mode 0555, or immutable when we are root."""
    path = tmp_path / "ro"
    path.mkdir()
    path.chmod(0o555)
    immutable = False
    if os.geteuid() == 0:  # root writes through 0555
        immutable = subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode == 0
    try:
        try:
            (path / "probe").write_text("x")
            pytest.skip("cannot make a read-only directory here (root without chattr)")
        except OSError:
            pass
        yield path
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(path)], check=True)
        path.chmod(0o755)


def test_read_only_cache_falls_back_with_a_warning(packaged, monkeypatch, read_only_dir):
    monkeypatch.setenv("XDG_CACHE_HOME", str(read_only_dir.parent))
    (read_only_dir.parent / "kverr").symlink_to(read_only_dir)  # $XDG_CACHE_HOME/kverr is read-only
    res = explain(LINE)
    assert res.exit_code == 0, res.output
    assert one_line(res).startswith(
        f"kverr: warning: cannot write the catalog cache {read_only_dir.parent / 'kverr'} ("
    )


# ---------------------------------------------------------------- load


@pytest.mark.parametrize(
    ("version", "ok"),
    [(2, True), (None, True), (3, False), (99, False), ("2", False), (2.5, False)],
)
def test_load_checks_the_manifest_schema_version(tmp_path, version, ok):
    ds = synth.write_files(tmp_path / "ds", FIXTURE_RECORDS[:2])
    manifest = json.loads((ds / "manifest.json").read_text())
    if version is None:
        del manifest["schemaVersion"]  # hand-made datasets predate the field: read as 2
    else:
        manifest["schemaVersion"] = version
    (ds / "manifest.json").write_text(json.dumps(manifest))
    res = CliRunner().invoke(app, ["load", str(ds), "--catalog", str(tmp_path / "c.duckdb")])
    if ok:
        assert res.exit_code == 0, res.output
        return
    assert res.exit_code == 2 and not (tmp_path / "c.duckdb").exists()
    assert one_line(res) == (
        f"kverr: {ds / 'manifest.json'} has schemaVersion {version!r}, which kverr 0.1.0 cannot"
        " read (it reads 2); rebuild the dataset with this kverr's `kverr build`, or upgrade kverr."
    )


def test_load_into_a_directory_is_one_line(tmp_path):
    ds = synth.write_files(tmp_path / "ds", FIXTURE_RECORDS[:2])
    (tmp_path / "out").mkdir()
    res = CliRunner().invoke(app, ["load", str(ds), "--catalog", str(tmp_path / "out")])
    assert res.exit_code == 2
    assert one_line(res) == (
        f"kverr: {tmp_path / 'out'} is a directory; pass a catalog file path such as"
        f" {tmp_path / 'out' / 'kverr.duckdb'}."
    )


def test_load_never_replaces_a_file_that_is_not_a_catalog(tmp_path):
    ds = synth.write_files(tmp_path / "ds", FIXTURE_RECORDS[:2])
    notes = tmp_path / "errors.jsonl"
    notes.write_text('{"message": "my notes"}\n')
    res = CliRunner().invoke(app, ["load", str(ds), "--catalog", str(notes)])
    assert res.exit_code == 2
    assert one_line(res) == (
        f"kverr: {notes} exists and is not a kverr catalog (not a DuckDB file); `kverr load`"
        " does not replace other files: pass a new --catalog path."
    )
    assert notes.read_text() == '{"message": "my notes"}\n'


@pytest.mark.parametrize("how", ["truncate", "blocks", "empty"])
def test_load_rebuilds_a_damaged_catalog_in_place(good, tmp_path, how):
    path = copy(good, tmp_path)
    if how == "empty":
        path.write_bytes(b"")
    else:
        synth.damage(path, how)
    ds = synth.write_files(tmp_path / "ds", FIXTURE_RECORDS)
    load_dataset(ds, path)
    with open_catalog(path) as cat:
        assert cat.verify() == len(FIXTURE_RECORDS)


# ---------------------------------------------------------------- serve


@pytest.mark.parametrize("workers", ["1", pytest.param("2", marks=pytest.mark.slow)])  # processes
@pytest.mark.parametrize(("how", "table"), [("truncate", "records"), ("blocks", "terms")])
def test_serve_refuses_a_damaged_catalog(good, tmp_path, how, table, workers):
    """`terms` is read by no start-up query: only the full read before listening finds it."""
    path = synth.damage(copy(good, tmp_path), how, table)
    cmd = [sys.executable, "-m", "kverr", "serve", "--port", "0", "--workers", workers]
    done = subprocess.run(
        [*cmd, "--catalog", str(path)], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"kverr: catalog {path} is damaged (")


@pytest.mark.slow  # eight processes each building the whole packaged catalog
def test_eight_processes_racing_on_a_cold_cache_all_answer(tmp_path):
    """What held before must hold with self-healing: 8 `kverr explain` at once on an empty
    cache each build or find a whole catalog, with no warning (none is judged damaged)."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "KVERR_CATALOG": ""}
    line = "ValueError: --ssl-keyfile requires --ssl-certfile to be specified as well."
    cmd = [sys.executable, "-m", "kverr", "explain", line, "--json"]
    procs = [
        subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(8)
    ]
    results = [(p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    assert [(code, err) for code, _, err in results] == [(0, b"")] * 8
    assert len({out for _, out, _ in results}) == 1
    left = sorted(p.name for p in (tmp_path / "cache" / "kverr").iterdir())  # no temp file
    assert len(left) == 2 and left[0].endswith(".duckdb") and left[1] == "packaged-keys.json"
