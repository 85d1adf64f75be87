"""Exports onto a disk that fills up: every format fails in one line that names the output
and says to free space, exits non-zero, and leaves the earlier export exactly as it was, with
no temp file or folder beside it.

Two real ways to run out of room, each in a child process: a file size limit (RLIMIT_FSIZE,
with SIGXFSZ ignored so the write fails with EFBIG), and a real full file system (a small
tmpfs in a user and mount namespace of its own, filled to the last byte: ENOSPC).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import synth
from kverr.catalog import load_dataset
from sampling import sample

OUTS = {"site": "site", "markdown": "md", "jsonl": "errors.jsonl", "parquet": "errors.parquet"}

# Run in the child: export once (the earlier output), take away the room, export again.
CHILD = textwrap.dedent(
    """
    import hashlib, json, os, resource, signal, subprocess, sys
    from pathlib import Path

    mode, fmt, disk, name, catalog = sys.argv[1:6]
    disk = Path(disk)
    out = disk / name

    def export(**kw):
        return subprocess.run([sys.executable, "-m", "kverr", "export", fmt, str(out),
                               "--catalog", catalog], capture_output=True, text=True, **kw)

    def tree():
        files = [out] if out.is_file() else sorted(p for p in out.rglob("*") if p.is_file())
        return {str(p.relative_to(disk)): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in files}

    first = export()
    assert first.returncode == 0, first.stderr
    before = tree()
    if mode == "rlimit":
        # half the largest file of the earlier export: the same export cannot fit
        limit = max(Path(disk / p).stat().st_size for p in before) // 2
        def room():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        second = export(preexec_fn=room)
    else:
        filler = disk / "filler"
        with open(filler, "wb", buffering=0) as fh:
            for size in (65536, 1):  # to the last byte
                try:
                    while fh.write(b"\\0" * size):
                        pass
                except OSError:
                    pass
        second = export()
        filler.unlink()
    print(json.dumps({"rc": second.returncode, "stderr": second.stderr, "stdout": second.stdout,
                      "same": tree() == before, "entries": sorted(os.listdir(disk))}))
    """
)


@pytest.fixture(scope="module")
def catalog(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("disk")
    ds = synth.write_files(tmp / "ds", synth.synthetic_records(60))
    load_dataset(ds, tmp / "c.duckdb")
    return tmp / "c.duckdb"


def _run(argv: list[str], tmp_path: Path) -> dict:
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    res = subprocess.run(
        [*argv[:-5], sys.executable, str(script), *argv[-5:]],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


def _tmpfs_prefix(disk: Path) -> list[str]:
    """A command prefix that runs the rest in a namespace where `disk` is a 16 MB tmpfs."""
    unshare = shutil.which("unshare")
    if unshare is None or sys.platform != "linux":
        pytest.skip("needs util-linux's unshare on Linux for a tmpfs of its own")
    probe = subprocess.run(
        [unshare, "--user", "--map-root-user", "--mount", "sh", "-c",
         f"mount -t tmpfs -o size=16m tmpfs {disk}"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    if probe.returncode != 0:
        pytest.skip(f"user namespaces cannot mount a tmpfs here: {probe.stderr.strip()}")
    mount = f'mount -t tmpfs -o size=16m tmpfs {disk} && exec "$@"'
    return [unshare, "--user", "--map-root-user", "--mount", "sh", "-c", mount, "sh"]


# the default run fills the disk one way for a folder and a file export, -m slow every way
@pytest.mark.parametrize("fmt", sample(list(OUTS), ("site", "jsonl")))
@pytest.mark.parametrize("how", ["rlimit", pytest.param("tmpfs", marks=pytest.mark.slow)])
def test_a_full_disk_is_one_line_and_keeps_the_earlier_export(catalog, tmp_path, fmt, how):
    disk = tmp_path / "disk"
    disk.mkdir()
    prefix = _tmpfs_prefix(disk) if how == "tmpfs" else []
    got = _run([*prefix, how, fmt, str(disk), OUTS[fmt], str(catalog)], tmp_path)
    out = disk / OUTS[fmt]
    assert got["rc"] == 2, got
    assert "Traceback" not in got["stderr"], got["stderr"]
    (line,) = got["stderr"].splitlines()
    why = "File too large" if how == "rlimit" else "No space left on device"
    assert line.startswith(f"kverr: cannot write {out} ({why}); free space on "), line
    assert got["same"], "the earlier export was changed"
    assert got["entries"] == [OUTS[fmt]], "a temp file or folder was left beside the output"
