"""Synthetic datasets and logs for tests and benchmarks (never for shipped data).

`write_files` writes a dataset directory in the CONTRACTS.md format with plain `json`, so the
catalog can be exercised without the extractor; `synthetic_records` grows a catalog to any size;
`launch_log` writes a realistic launch log with known errors sprinkled in. The records are the
default project's (its profile's repository, first file and tags), as a hand-made dataset of
a catalog user would be.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

DATASET_VERSION = "1970-01-01T00:00:00.000Z"


def _default_project():
    from kverr.profile import default_profile

    return default_profile()


REPO = _default_project().repository
FILE = _default_project().files[0]
TAGS = [_default_project().name, *(tag for tag, _ in _default_project().file_tags)]


def make_record(
    rid: str,
    message: str,
    pattern: str | None = None,
    *,
    kind: str = "raise",
    error_class: str | None = "ValueError",
    severity: str = "error",
    placeholders: list[str] | None = None,
    flags: list[str] | None = None,
    file: str = FILE,
    line: int = 100,
    source: str | None = None,
    source_start: int | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A schema-v2 record (plus kverr fields) with every field of the seed example."""
    if pattern is None:
        pattern = re.escape(message).replace("\\ ", " ").replace("\\-", "-")
    if source is None:
        source = f"    def _handle_{rid}(self):\n        raise {error_class or 'ValueError'}(\n            {message!r}\n        )"
        source_start = line - 1
    start = source_start if source_start is not None else line
    rec = {
        "id": rid,
        "repo": REPO,
        "slug": re.sub(r"[^a-z0-9]+", "-", message.lower()).strip("-")[:48] + "-" + rid[:6],
        "errorCode": None,
        "errorMessage": message,
        "messagePattern": pattern,
        "errorType": "validation",
        "errorClass": error_class,
        "httpStatus": None,
        "severity": severity,
        "filePath": file,
        "lineNumber": line,
        "sourceCode": source,
        "sourceCodeStart": start,
        "sourceCodeEnd": start + source.count("\n"),
        "githubUrl": f"https://github.com/{REPO}/blob/{'0' * 40}/{file}#L{line}",
        "documentation": f"Explains why '{message[:40]}' is reported.",
        "triggerScenarios": "Launching with the flags named in the message.",
        "commonSituations": "A launcher script combines options that cannot work together.",
        "solutions": ["Remove one of the conflicting flags", "Check the launcher profile"],
        "exampleFix": "# before\n--a --b\n# after\n--a",
        "handlingStrategy": "validation",
        "validationCode": None,
        "typeGuard": None,
        "tryCatchPattern": None,
        "preventionTips": ["Validate launch profiles in CI"],
        "tags": list(TAGS),
        "backgroundTag": "unsupported-config-combination",
        "analyzedSha": "0" * 40,
        "analyzedAt": DATASET_VERSION,
        "schemaVersion": 2,
        "kind": kind,
        "flags": flags or sorted(set(re.findall(r"--[a-z0-9][a-z0-9-]*", message))),
        "placeholders": placeholders or [],
        "previousId": None,
    }
    rec.update(extra)
    return rec


def write_files(
    out_dir: Path,
    records: list[dict[str, Any]],
    *,
    revisions: list[dict[str, Any]] | None = None,
    occurrences: list[dict[str, Any]] | None = None,
    flags: list[dict[str, Any]] | None = None,
    lineage: list[dict[str, Any]] | None = None,
) -> Path:
    """Write a dataset directory (records.jsonl + side tables + manifest.json)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    revisions = (
        revisions
        if revisions is not None
        else [{"sha": None, "date": None, "tags": [], "subject": None, "ord": 0}]
    )
    if occurrences is None:
        occurrences = [
            {"id": r["id"], "sha": rev["sha"], "file": r["filePath"], "line": r["lineNumber"]}
            for rev in revisions
            for r in records
        ]
    tables = {
        "records.jsonl": [
            {"datasetVersion": DATASET_VERSION, "record": r}
            for r in sorted(records, key=lambda r: r["id"])
        ],
        "revisions.jsonl": revisions,
        "occurrences.jsonl": occurrences,
        "flags.jsonl": flags or [],
        "lineage.jsonl": lineage or [],
    }
    for name, rows in tables.items():
        with (out_dir / name).open("w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n")
    manifest = {
        "tool": "kverr",
        "toolVersion": "0.1.0",
        "schemaVersion": 2,
        "repository": REPO,
        "revisions": [r["sha"] for r in revisions],
        "fileSet": [FILE],
        "files": sorted({r["filePath"] for r in records}),
        "counts": {"records": len(records)},
        "command": ["synthetic"],
        "datasetVersion": DATASET_VERSION,
        "provenance": "synthetic dataset (tests/synth.py)",
    }
    (out_dir / "manifest.json").write_text(
        json.dumps(manifest, sort_keys=True, indent=2) + "\n", encoding="utf-8"
    )
    return out_dir


# ---------------------------------------------------------------- growing a catalog

_WORDS = (
    "attention backend cache page size tokens pool scheduler prefill decode chunked radix "
    "speculative draft eagle lora adapter quantization dtype expert parallel pipeline tensor "
    "memory fraction static offload hierarchical storage sparse window sliding context rope "
    "scaling grammar constrained sampling overlap cuda graph batch torch compile kernel triton"
).split()
_TEMPLATES = (
    ("--{a}-{b}-{n} is incompatible with --{c}-{d}-{m}: the {e} path cannot use the {f} pool.", []),
    ("{A} {b} {n} requires --{c}-{d} to be set, got (?P<v0>.{{1,256}}?) instead.", ["value"]),
    (
        "--{a}-{n} must be divisible by {c} {d} size (?P<v0>[-+]?[0-9]{{1,30}}), got (?P<v1>[-+]?[0-9]{{1,30}})",
        ["x", "y"],
    ),
)


def synthetic_records(n: int, *, seed: int = 7) -> list[dict[str, Any]]:
    """`n` distinct records shaped like real ones (flags, numbers, repr values)."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        tpl, names = _TEMPLATES[i % len(_TEMPLATES)]
        w = rnd.sample(_WORDS, 6)
        fill = dict(
            a=w[0],
            b=w[1],
            c=w[2],
            d=w[3],
            e=w[4],
            f=w[5],
            A=w[0].capitalize(),
            n=f"k{i}",
            m=f"m{i}",
        )
        pat = tpl.format(**fill)
        message = re.sub(r"\(\?P<v\d>[^)]*\)", "{v}", pat)
        pattern = (
            pat.replace(".", "\\.").replace("\\.{1,256}", ".{1,256}")
            if "?P<" in pat
            else re.escape(pat).replace("\\ ", " ").replace("\\-", "-")
        )
        out.append(
            make_record(f"{i:016x}", message, pattern, placeholders=list(names), line=100 + i)
        )
    return out


# ---------------------------------------------------------------- launch logs

_INFO = (
    "server_args=ServerArgs(model_path='meta-llama/Llama-3.1-8B-Instruct', tp_size={tp}, mem_fraction_static=0.88, chunked_prefill_size=8192)",
    "Load weight begin. avail mem={mem:.2f} GB",
    "Loading safetensors checkpoint shards: {p}% Completed | {k}/4 [00:0{k}<00:00, 1.2it/s]",
    "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem={mem:.2f} GB, mem usage=15.03 GB.",
    "KV Cache is allocated. #tokens: {tok}, K size: 30.51 GB, V size: 30.51 GB",
    "Memory pool end. avail mem={mem:.2f} GB",
    "Capture cuda graph begin. This can take up to several minutes. avail mem={mem:.2f} GB",
    "Capture cuda graph bs [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128]",
    "Prefill batch. #new-seq: 1, #new-token: {tok}, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0",
    "Decode batch. #running-req: {k}, #token: {tok}, token usage: 0.01, cuda graph: True, gen throughput (token/s): {thr:.2f}, #queue-req: 0",
    'INFO:     127.0.0.1:{port} - "POST /generate HTTP/1.1" 200 OK',
    "The server is fired up and ready to roll!",
)


def launch_log(
    path: Path, lines: int, errors: list[str], *, every: int = 997, seed: int = 3
) -> int:
    """Write a launch log of `lines` lines in the `[date time TPn] message` format;
    every `every`-th line is one of `errors`. Returns how many error lines were written."""
    rnd = random.Random(seed)
    written = 0
    with Path(path).open("w", encoding="utf-8") as fh:
        for i in range(lines):
            ts = f"[2026-04-07 10:{(i // 3600) % 60:02d}:{(i // 60) % 60:02d} TP{i % 4}] "
            if errors and i % every == every - 1:
                fh.write(ts + errors[written % len(errors)] + "\n")
                written += 1
                continue
            tpl = _INFO[rnd.randrange(len(_INFO))]
            fh.write(ts + tpl.format(tp=rnd.choice((1, 2, 4, 8)), mem=rnd.uniform(5, 70), p=rnd.randrange(100),
                                     k=rnd.randrange(1, 5), tok=rnd.randrange(1, 500000), thr=rnd.uniform(10, 4000),
                                     port=rnd.randrange(30000, 60000)) + "\n")  # fmt: skip
    return written


def noise_messages(kinds: tuple[str, ...] = ("log",), severities=("info", "warning")) -> list[str]:
    """The default project's own messages outside its profile's files, rendered (data/noise.json)."""
    from kverr.catalog.store import noise_messages as shipped

    return [m["text"] for m in shipped() if m["kind"] in kinds and m["severity"] in severities]


def log_prefix(i: int) -> str:
    """The default project's logger prefix, `[2025-01-01 10:00:00 TP0] `, with the ranks varied."""
    ranks = ("TP0", "TP1", "DP0 TP0", "TP3 EP1", "TP0 PP1")[i % 5]
    return f"[2025-01-01 10:{(i // 3600) % 60:02d}:{(i // 60) % 60:02d} {ranks}] "


def realistic_log(
    path: Path, lines: int, errors: list[str], *, every: int = 997, seed: int = 3
) -> int:
    """A log of `lines` lines of the default project's real noise: its rendered INFO and WARNING messages
    (data/noise.json) and runtime lines (`launch_log`'s), each with its logger's prefix; every
    `every`-th entry is one of `errors` (which may span several lines). Returns the errors
    written."""
    rnd = random.Random(seed)
    pool = noise_messages() or ["Load weight begin."]
    runtime = [t for t in _INFO if not t.startswith("server_args=")]
    written = n = 0
    with Path(path).open("w", encoding="utf-8") as fh:
        # printed once, at launch; its `..., ...)` is a repr, not a message cut short
        fh.write(log_prefix(0) + _INFO[0].format(tp=8)[:-1] + ", disable_radix_cache=False, ...)\n")
        n = 1
        while n < lines:
            if errors and n % every == every - 1:
                text = errors[written % len(errors)]
                written += 1
            elif rnd.random() < 0.2:
                text = runtime[rnd.randrange(len(runtime))].format(
                    tp=rnd.choice((1, 2, 4, 8)), mem=rnd.uniform(5, 70), p=rnd.randrange(100),
                    k=rnd.randrange(1, 5), tok=rnd.randrange(1, 500000),
                    thr=rnd.uniform(10, 4000), port=rnd.randrange(30000, 60000),
                )  # fmt: skip
            else:
                text = pool[rnd.randrange(len(pool))]
            fh.write(log_prefix(n) + text + "\n")
            n += text.count("\n") + 1
    return written


def lines_of(path: Path) -> Iterator[str]:
    with Path(path).open(encoding="utf-8", errors="replace") as fh:
        yield from fh


def pick_catalog(arg: str | None, work: Path) -> tuple[Path, str]:
    """The catalog a benchmark runs against: the one named, else $KVERR_CATALOG or the packaged
    catalog, else a synthetic one of about a shipped dataset's size, with a label saying which."""
    from kverr.catalog import load_dataset, open_catalog

    from kverr.errors import CatalogError

    if arg:
        return Path(arg), arg
    try:
        with open_catalog() as cat:
            return cat.path, f"default ({cat.path})"
    except CatalogError:
        ds = write_files(work / "ds", synthetic_records(600))
        load_dataset(ds, work / "synthetic.duckdb")
        return work / "synthetic.duckdb", "synthetic, 600 records (no packaged dataset yet)"


def damage(path: Path, how: str, table: str = "records") -> Path:
    """Damage a catalog file the ways disks and interrupted copies do, for tests and probes:
    "truncate" keeps the first half (the header and `meta` still read, later blocks do not);
    "blocks" overwrites the data blocks that hold only `table`, so the file opens and its
    format row reads, and the damage surfaces late, on the first query that reads `table`."""
    path = Path(path)
    if how == "truncate":
        with path.open("r+b") as fh:
            fh.truncate(path.stat().st_size // 2)
        return path
    if how != "blocks":
        raise ValueError(f"unknown damage {how!r}; use 'truncate' or 'blocks'")
    from kverr.catalog.engine import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        size = con.execute("SELECT block_size FROM pragma_database_size()").fetchone()[0]
        names = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
        used = {
            name: {
                r[0]
                for r in con.execute(
                    f"SELECT block_id FROM pragma_storage_info('{name}') WHERE block_id >= 0"
                ).fetchall()
            }
            for name in names
        }
    finally:
        con.close()
    blocks = sorted(
        used.get(table, set()) - set().union(*(b for n, b in used.items() if n != table))
    )
    if not blocks:
        raise ValueError(f"{path}: no data block holds {table} alone; use a larger catalog")
    with path.open("r+b") as fh:
        for block in blocks:
            # DuckDB's data blocks start after three 4 KiB headers; each begins with a checksum.
            fh.seek(3 * 4096 + block * size + 8)
            fh.write(b"\xff" * 4096)
    return path
