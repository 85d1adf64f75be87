"""A small hand-made dataset in the exact CONTRACTS.md format, shared by the feeds and API tests.

The messages imitate the shapes of SGLang's server-args checks (flags in the text, placeholders,
a message-less assert, a warning, an edited message with lineage) without copying any of them.
One record carries hostile HTML so the site and the API must escape everything they print.
No tests live here; conftest.py builds the catalog (`feeds_catalog`) from it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

REPO = "sgl-project/sglang"
FILE = "python/sglang/srt/server_args.py"
SHAS = ["a1" * 20, "b2" * 20, "c3" * 20]
DATASET_VERSION = "2026-04-24T08:00:00.000Z"

REVISIONS = [
    {
        "sha": SHAS[0],
        "date": "2025-01-10T10:00:00Z",
        "tags": ["v0.4.0"],
        "subject": "Release v0.4.0",
        "ord": 0,
    },
    {
        "sha": SHAS[1],
        "date": "2025-06-01T10:00:00Z",
        "tags": ["v0.5.0"],
        "subject": "Release v0.5.0",
        "ord": 1,
    },
    {
        "sha": SHAS[2],
        "date": "2026-04-24T08:00:00Z",
        "tags": [],
        "subject": "Tidy server args",
        "ord": 2,
    },
]

XSS = '<script>alert("xss")</script><img src=x onerror=alert(1)>'


def _id(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def _record(key: str, message: str, pattern: str, line: int, **extra) -> dict:
    rid = _id(key)
    source = extra.pop("source", f"        if bad:\n            raise ValueError(f{message!r})")
    start = line - 1
    rec = {
        "id": rid,
        "repo": REPO,
        "slug": (extra.pop("slug_base", key) + "-" + rid[:6]),
        "errorCode": None,
        "errorMessage": message,
        "messagePattern": pattern,
        "errorType": "validation",
        "errorClass": "ValueError",
        "httpStatus": None,
        "severity": "error",
        "filePath": FILE,
        "lineNumber": line,
        "sourceCode": source,
        "sourceCodeStart": start,
        "sourceCodeEnd": start + source.count("\n"),
        "githubUrl": f"https://github.com/{REPO}/blob/{SHAS[2]}/{FILE}#L{start}-L{start + source.count(chr(10))}",
        "documentation": None,
        "triggerScenarios": None,
        "commonSituations": None,
        "solutions": [],
        "exampleFix": None,
        "handlingStrategy": "validation",
        "validationCode": None,
        "typeGuard": None,
        "tryCatchPattern": None,
        "preventionTips": [],
        "tags": ["sglang", "server-args"],
        "backgroundTag": "invalid-argument-value",
        "analyzedSha": SHAS[2],
        "analyzedAt": DATASET_VERSION,
        "schemaVersion": 2,
        "kind": "raise",
        "flags": [],
        "placeholders": [],
        "previousId": None,
    }
    rec.update(extra)
    return rec


def _records() -> list[dict]:
    old = _record(
        "page-size-old",
        "--page-size should be power of 2",
        r"--page-size should be power of 2",
        310,
        flags=["--page-size"],
        tags=["sglang", "server-args", "paging"],
    )
    page = _record(
        "page-size-power",
        "--page-size must be a power of two, got {self.page_size}.",
        r"--page-size must be a power of two, got (?P<v0>[^\n]{1,200}?)\.",
        412,
        flags=["--page-size"],
        placeholders=["self.page_size"],
        previousId=old["id"],
        documentation="The paged KV cache allocates memory in pages whose token count must be a power of two.",
        triggerScenarios="Launching with --page-size 48 or any value that is not 1, 2, 4, 8, ...",
        commonSituations="Copying a page size tuned for another engine.",
        solutions=["Use --page-size 32 or 64", "Drop --page-size to take the default"],
        exampleFix="# before\n--page-size 48\n# after\n--page-size 64",
        preventionTips=["Keep page sizes a power of two"],
        tags=["sglang", "server-args", "paging"],
    )
    dtype = _record(
        "kv-dtype-backend",
        "--kv-cache-dtype {self.kv_cache_dtype!r} is not supported with --attention-backend {self.attention_backend!r}.",
        r"--kv-cache-dtype (?P<v0>[^\n]{1,200}?) is not supported with --attention-backend (?P<v1>[^\n]{1,200}?)\.",
        905,
        flags=["--kv-cache-dtype", "--attention-backend"],
        placeholders=["self.kv_cache_dtype", "self.attention_backend"],
        documentation="FP8 KV caches need an attention kernel that reads quantised keys and values.",
        solutions=["Switch --attention-backend to flashinfer", "Use --kv-cache-dtype auto"],
        exampleFix="# before\n--kv-cache-dtype fp8_e5m2 --attention-backend triton\n# after\n--kv-cache-dtype fp8_e5m2 --attention-backend flashinfer",
        tags=["sglang", "server-args", "kv-cache", "quantization"],
        backgroundTag="unsupported-config-combination",
    )
    radix = _record(
        "radix-offload",
        "Disabling radix cache because --enable-streaming-offload is set.",
        r"Disabling radix cache because --enable-streaming-offload is set\.",
        1210,
        kind="log",
        errorClass=None,
        severity="warning",
        errorType="configuration",
        flags=["--enable-streaming-offload", "--disable-radix-cache"],
        documentation="Streaming offload moves finished KV pages off the GPU, which the radix tree cannot track.",
        tags=["sglang", "server-args", "kv-cache"],
        source='        if self.enable_streaming_offload:\n            logger.warning("Disabling radix cache because --enable-streaming-offload is set.")\n            self.disable_radix_cache = True',
    )
    bare = _record(
        "assert-tp-pp",
        "",
        "",
        1502,
        kind="assert",
        errorClass="AssertionError",
        flags=["--tp-size", "--pp-size"],
        documentation="The tensor-parallel size has to split evenly over the pipeline stages.",
        source="        # tensor parallel ranks must split over the stages\n        assert self.tp_size % self.pp_size == 0",
        tags=["sglang", "server-args", "parallelism"],
    )
    hostile = _record(
        "chat-template-missing",
        "Invalid --chat-template <path> {self.chat_template}: file not found & not a builtin name.",
        r"Invalid --chat-template <path> (?P<v0>[^\n]{1,200}?): file not found & not a builtin name\.",
        1777,
        flags=["--chat-template"],
        placeholders=["self.chat_template"],
        documentation=f"Escape check: {XSS} must show as text.",
        triggerScenarios=f"Passing a template path that does not exist. {XSS}",
        solutions=[f"Check the path {XSS}"],
        exampleFix=f"# before\n--chat-template {XSS}\n# after\n--chat-template chatml",
        tags=["sglang", "chat-template", "<b>bold&tag</b>"],
    )
    return sorted([old, page, dtype, radix, bare, hostile], key=lambda r: r["id"])


RECORDS = _records()
BY_KEY = {r["slug"].rsplit("-", 1)[0]: r for r in RECORDS}

FLAGS = [
    {
        "name": "--attention-backend",
        "dest": "attention_backend",
        "help": "Attention kernel.",
        "default": "None",
        "choices": ["fa3", "flashinfer", "triton"],
        "type": "str",
        "action": None,
        "file": FILE,
        "line": 120,
    },
    {
        "name": "--chat-template",
        "dest": "chat_template",
        "help": "Builtin name or path of a <jinja> template.",
        "default": "None",
        "choices": None,
        "type": "str",
        "action": None,
        "file": FILE,
        "line": 121,
    },
    {
        "name": "--disable-radix-cache",
        "dest": "disable_radix_cache",
        "help": "Turn off prefix caching.",
        "default": "False",
        "choices": None,
        "type": None,
        "action": "store_true",
        "file": FILE,
        "line": 122,
    },
    {
        "name": "--enable-streaming-offload",
        "dest": "enable_streaming_offload",
        "help": "Offload finished KV pages.",
        "default": "False",
        "choices": None,
        "type": None,
        "action": "store_true",
        "file": FILE,
        "line": 123,
    },
    {
        "name": "--kv-cache-dtype",
        "dest": "kv_cache_dtype",
        "help": "Data type of the KV cache.",
        "default": "'auto'",
        "choices": ["auto", "fp8_e5m2", "fp8_e4m3"],
        "type": "str",
        "action": None,
        "file": FILE,
        "line": 124,
    },
    {
        "name": "--page-size",
        "dest": "page_size",
        "help": "Tokens per KV cache page.",
        "default": "1",
        "choices": None,
        "type": "int",
        "action": None,
        "file": FILE,
        "line": 125,
    },
    {
        "name": "--pp-size",
        "dest": "pp_size",
        "help": "Pipeline parallel size.",
        "default": "1",
        "choices": None,
        "type": "int",
        "action": None,
        "file": FILE,
        "line": 126,
    },
    {
        "name": "--tp-size",
        "dest": "tp_size",
        "help": "Tensor parallel size.",
        "default": "1",
        "choices": None,
        "type": "int",
        "action": None,
        "file": FILE,
        "line": 127,
    },
]


def _present(rec: dict, ord_: int) -> bool:
    """The old page-size text lives only in v0.4.0; the dtype check arrives after v0.5.0; the
    radix warning is in every revision."""
    if rec["slug"].startswith("page-size-old"):
        return ord_ == 0
    if rec["slug"].startswith("kv-dtype"):
        return ord_ == 2
    if rec["slug"].startswith("radix-offload"):
        return True
    return ord_ >= 1


def _occurrences() -> list[dict]:
    return [
        {"id": rec["id"], "sha": rev["sha"], "file": FILE, "line": rec["lineNumber"]}
        for rev in REVISIONS
        for rec in RECORDS
        if _present(rec, rev["ord"])
    ]


def _dump(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows), encoding="utf-8")


def write_feeds_dataset(out: Path) -> Path:
    """Write the six dataset files of CONTRACTS.md for the hand-made records; return `out`."""
    out.mkdir(parents=True, exist_ok=True)
    _dump(
        out / "records.jsonl", [{"datasetVersion": DATASET_VERSION, "record": r} for r in RECORDS]
    )
    _dump(out / "revisions.jsonl", REVISIONS)
    _dump(out / "occurrences.jsonl", _occurrences())
    _dump(out / "flags.jsonl", FLAGS)
    lineage = [
        {
            "id": BY_KEY["page-size-power"]["id"],
            "previousId": BY_KEY["page-size-old"]["id"],
            "sha": SHAS[1],
        }
    ]
    _dump(out / "lineage.jsonl", lineage)
    severities: dict[str, int] = {}
    for r in RECORDS:
        severities[r["severity"]] = severities.get(r["severity"], 0) + 1
    manifest = {
        "tool": "kverr",
        "toolVersion": "0.1.0",
        "schemaVersion": 2,
        "repository": REPO,
        "revisions": SHAS,
        "fileSet": [FILE],
        "files": [FILE],
        "counts": {
            "records": len(RECORDS),
            "sites": len(RECORDS),
            "flags": len(FLAGS),
            "failures": 0,
            **severities,
        },
        "command": ["kverr", "build", "--fixture"],
        "datasetVersion": DATASET_VERSION,
        "provenance": "hand-made feeds test dataset",
    }
    (out / "manifest.json").write_text(
        json.dumps(manifest, sort_keys=True, indent=2) + "\n", encoding="utf-8"
    )
    return out
