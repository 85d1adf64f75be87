"""The packaged catalog on first use: named by content, shipped ready, kept side by side.

A fixture package (our own records in a dataset folder standing for kverr/data) and a cache
in tmp_path; real DuckDB files, a real subprocess for what the loader imports, a real
terminal (a pty) for the progress bars."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import synth
from kverr.catalog import open_catalog, store
from test_catalog import FIXTURE_RECORDS
from test_catalog_damage import LINE, explain, one_line

from kverr import progress, render

ID = "55a1000000000001"  # what LINE matches


@pytest.fixture
def package(tmp_path, monkeypatch) -> Path:
    """A packaged dataset of our fixture records (a kverr/data folder), the loader's code as
    copies beside it (an edit to the checkout during the test is another kverr), and an
    empty cache."""
    pkg = tmp_path / "pkg"
    synth.write_files(pkg / "sglang", FIXTURE_RECORDS)
    code = []
    for path in store.loader_files():
        code.append(pkg / "code" / path.parent.name / path.name)
        code[-1].parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, code[-1])
    monkeypatch.setattr(store, "loader_files", lambda: code)
    monkeypatch.setattr(store, "packaged_dataset_dir", lambda: pkg)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("KVERR_CATALOG", raising=False)
    return pkg


def opened() -> tuple[Path, int]:
    """The default catalog's path and inode (a rebuild or a new copy is a new inode)."""
    with open_catalog() as cat:
        assert cat.get(ID)
        return cat.path, cat.path.stat().st_ino


def catalogs(package: Path) -> list[str]:
    return sorted(p.name for p in (package.parent / "cache" / "kverr").glob("packaged-*.duckdb"))


# ---------------------------------------------------------------- the key


def test_files_written_again_with_the_same_content_keep_the_catalog(package, monkeypatch):
    """What `pip install` does to every file, the datasets' and the loader's: new times (and,
    copied anywhere, new inodes). The catalog is found again, not rebuilt."""
    code = store.loader_files()
    first = opened()
    later = time.time() + 3600
    for f in [*(package / "sglang").iterdir(), *code]:
        os.utime(f, (later, later))
    assert opened() == first
    moved = package.parent / "reinstalled"
    shutil.copytree(package, moved)  # the same files, written anew somewhere else
    monkeypatch.setattr(store, "packaged_dataset_dir", lambda: moved)
    monkeypatch.setattr(
        store, "loader_files", lambda: [moved / p.relative_to(package) for p in code]
    )
    assert opened() == first


def test_a_loader_that_changes_gets_a_new_catalog(package, monkeypatch):
    code = store.loader_files()
    path, _ = opened()
    with code[0].open("a", encoding="utf-8") as fh:
        fh.write("# another loader\n")
    assert opened()[0] != path


def test_a_content_change_that_keeps_size_and_mtime_gets_a_new_catalog(package):
    """records.jsonl edited (the manifest as it was), same size, its mtime put back."""
    path, _ = opened()
    records = package / "sglang" / "records.jsonl"
    st = records.stat()
    text = records.read_text(encoding="utf-8")
    assert "requires --ssl-certfile." in text
    records.write_text(text.replace("requires --ssl-certfile.", "requires --ssl-certfilE."))
    os.utime(records, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert records.stat().st_size == st.st_size
    with open_catalog() as cat:
        assert cat.path != path
        assert cat.get(ID)["errorMessage"].endswith("--ssl-certfilE.")


def test_a_load_imports_no_module_of_ours_the_key_leaves_out(tmp_path):
    """Every module of ours a load runs either is in the key (store.loader_files) or is named
    here as one that cannot change what a load writes: a new module the loader imports has to
    be placed in one list or the other."""
    not_loader = {"__init__", "catalog", "connection", "engine", "reader", "browse", "answers",
                  "errors", "progress", "synth", "ftypes", "places"}  # fmt: skip
    ds = synth.write_files(tmp_path / "ds", FIXTURE_RECORDS)
    code = (
        "import sys; from kverr.catalog import store, load_dataset;"
        f" load_dataset({str(ds)!r}, {str(tmp_path / 'c.duckdb')!r});"
        " print('\\n'.join(m.__file__ for n, m in list(sys.modules.items())"
        " if n == 'kverr' or n.startswith('kverr.')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    # (by folder and name, as content_key names them: an installed kverr and the checkout
    # the child may import from hold the same files in two places)
    keyed = {(p.parent.name, p.name) for p in store.loader_files()}
    ran = {(Path(f).parent.name, Path(f).name) for f in done.stdout.split()}
    assert {p for p in ran if p not in keyed and Path(p[1]).stem not in not_loader} == set()
    assert all(p.is_file() for p in store.loader_files())


# ---------------------------------------------------------------- side by side


def test_two_kverrs_alternating_each_keep_their_catalog(package, monkeypatch):
    """A checkout's `python -m kverr` and an installed kverr of other data, taking turns:
    each finds its own catalog every time (neither removes the other's)."""
    other = package.parent / "other"
    records = [
        *FIXTURE_RECORDS,
        synth.make_record("e0e0000000000099", "Other text.", r"Other text\."),
    ]
    synth.write_files(other / "sglang", records)
    mine = opened()
    monkeypatch.setattr(store, "packaged_dataset_dir", lambda: other)
    theirs = opened()
    assert theirs[0] != mine[0]
    for _ in range(2):
        monkeypatch.setattr(store, "packaged_dataset_dir", lambda: package)
        assert opened() == mine
        monkeypatch.setattr(store, "packaged_dataset_dir", lambda: other)
        assert opened() == theirs
    assert catalogs(package) == sorted([mine[0].name, theirs[0].name])


def test_only_catalogs_unused_for_a_month_are_removed(package):
    cache = package.parent / "cache" / "kverr"
    cache.mkdir(parents=True)
    old, recent = (
        cache / "packaged-0000000000000001.duckdb",
        cache / "packaged-0000000000000002.duckdb",
    )
    for path, days in ((old, store.CACHE_DAYS + 1), (recent, store.CACHE_DAYS - 1)):
        path.write_bytes(b"")
        when = time.time() - days * 86400
        os.utime(path, (when, when))
    path, _ = opened()  # placing a new catalog is when old ones are looked at
    assert catalogs(package) == sorted([recent.name, path.name])


def test_a_catalog_in_use_is_marked_used_once_a_day(package):
    path, _ = opened()
    when = time.time() - 2 * 86400
    os.utime(path, (when, when))
    opened()
    assert time.time() - path.stat().st_mtime < 60
    stamp = path.stat().st_mtime_ns
    opened()
    assert path.stat().st_mtime_ns == stamp  # (not written again the same day)


# ---------------------------------------------------------------- shipped ready


def test_a_shipped_catalog_is_used_without_a_build(package):
    shipped = store.ship_catalog()  # what setup.py does in the built package
    assert shipped.parent == package and shipped.name.startswith("packaged-")
    path, _ = opened()
    assert path.name == shipped.name and path.parent == package.parent / "cache" / "kverr"
    assert path.read_bytes() == shipped.read_bytes()


def test_a_damaged_shipped_catalog_is_rebuilt_from_the_datasets(package):
    """A shipped file this DuckDB cannot read (damaged, or written by a newer DuckDB): the
    copy is removed and the catalog built from the datasets, with a warning; the answer is
    the one a build gives, and the shipped file is left alone."""
    shipped = synth.damage(store.ship_catalog(), "truncate")
    size = shipped.stat().st_size
    res = explain(LINE)
    assert res.exit_code == 0, res.output
    assert one_line(res).startswith("kverr: warning: the cached catalog ")
    assert "rebuilding it from the packaged dataset." in res.stderr
    assert ID in explain(LINE, "--json").stdout
    assert explain(LINE).stderr == ""  # whole from now on
    assert shipped.stat().st_size == size


# ---------------------------------------------------------------- progress


def test_bars_show_on_the_console_given_after_the_delay_and_nested_work_joins_them():
    out = io.StringIO()
    from rich.console import Console

    console = Console(file=out, force_terminal=True, width=100)
    with render.progress_bars("kverr: building", delay=0, console=console) as report:
        report("patterns", 1, 2)
        with progress.shown_by(lambda title: render.progress_bars(title, console=console)):
            with progress.reporting("inner title") as inner:
                inner("prefilter keys", 3, 3)
    text = out.getvalue()
    assert "kverr: building" in text and "patterns" in text and "prefilter keys" in text
    assert "inner title" not in text  # one live display: the inner work adds its phase
    quick = io.StringIO()
    with render.progress_bars("never shown", console=Console(file=quick, force_terminal=True)) as r:
        r("patterns", 1, 1)  # done before SHOW_AFTER
    assert quick.getvalue() == ""


def test_nothing_is_reported_without_a_display():
    with progress.reporting("title") as report:
        report("phase", 1, 2)  # no display named: nothing to show, nothing raised
    assert progress._display is None


@pytest.mark.slow  # builds the real packaged catalog (13 s of CPU)
def test_first_use_on_a_terminal_draws_bars_on_stderr_and_keeps_stdout_clean(tmp_path):
    """The real first use, stderr a terminal and stdout a pipe: the bars and their title on
    the terminal, stdout byte for byte what a warm run prints."""
    import pty

    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "KVERR_CATALOG": ""}
    line = "ValueError: --ssl-keyfile requires --ssl-certfile to be specified as well."
    cmd = [sys.executable, "-m", "kverr", "explain", line]
    main, child = pty.openpty()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=child, cwd=tmp_path)
    os.close(child)
    shown = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        shown += chunk
    first = proc.stdout.read()
    proc.stdout.close()
    assert proc.wait(timeout=600) == 0
    os.close(main)
    warm = subprocess.run(cmd, env=env, capture_output=True, timeout=120, cwd=tmp_path)
    assert (warm.returncode, warm.stderr) == (0, b"")
    assert first == warm.stdout
    text = shown.decode("utf-8", "replace")
    # An installed wheel ships its catalog (setup.py): its first use copies it and has no
    # build to show. A checkout or an editable install builds it, under the bars.
    ask = "from kverr.catalog import store; print(any(store.packaged_dataset_dir().glob('packaged-*.duckdb')))"
    shipped = subprocess.run(
        [sys.executable, "-c", ask], env=env, capture_output=True, text=True, cwd=tmp_path, check=True
    ).stdout.strip() == "True"  # fmt: skip
    if shipped:
        assert "building the catalog" not in text
    else:
        assert "building the catalog of the packaged datasets" in text and "prefilter keys" in text
