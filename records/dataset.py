"""The dataset directory (docs/CONTRACTS.md "Dataset directory"): write it, read it back.

Every file is UTF-8 JSON with sorted keys and its lines in a fixed order, so a rebuild of the
same input is byte-identical; each file is written to a temp file beside it and moved into place
with os.replace, so a crash never leaves half a file. Reading validates every record line and
names file:line on the first problem.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from kverr.records import EPOCH, flag_map

from kverr import io
from kverr.errors import DatasetError, SchemaError
from kverr.ftypes import Dataset, FlagDecl, Revision

__all__ = ["Dataset", "read_dataset", "write_dataset"]


def _line(obj: Any) -> str:
    return _visible(json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":")))


_SURROGATE = re.compile("[\ud800-\udfff]")


def _visible(text: str, slash: str = "\\\\") -> str:
    """JSON text whose lone surrogates (a file name that was not UTF-8, a `"\\ud800"` escape
    in a string the code declares) are written as their visible escape, `\\udcff`: UTF-8
    cannot hold them, and a file must never be left unwritten for one name. `slash`: one
    backslash in plain text, two in JSON."""
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(lambda m: f"{slash}u{ord(m.group()):04x}", text)


def _jsonl(rows: Iterable[Any]) -> Iterator[str]:
    return (_line(r) + "\n" for r in rows)


def write_dataset(
    out_dir: str | os.PathLike[str],
    *,
    records: Sequence[dict],
    revisions: Sequence[Revision],
    occurrences: Sequence[dict],
    flags: Sequence[FlagDecl],
    lineage: Sequence[dict],
    manifest: dict,
    flag_history: Sequence[dict] = (),
    revision_files: Sequence[Sequence[tuple[str, str]]] = (),
) -> None:
    """Write the dataset files into `out_dir` (created if needed), each atomically.

    `revision_files`: each revision's file set as (path, blob id), in the order of
    `revisions`; a release's (a tagged commit's) and the newest commit's are written, so a
    source fetched later can be checked to be that commit's (verify/release.py).

    `records` are schema-v2 records (or ready dataset lines); each becomes
    `{"datasetVersion": manifest["datasetVersion"], "record": ...}`. `revisions` are oldest first.
    """
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatasetError(
            f"cannot create dataset directory {out} ({exc.strerror}); choose another --out."
        ) from None
    version = str(manifest.get("datasetVersion") or EPOCH)
    lines = [
        r if "record" in r and "datasetVersion" in r else {"datasetVersion": version, "record": r}
        for r in records
    ]
    lines.sort(key=lambda ln: ln["record"]["id"])
    rev_rows = [
        {"sha": r.sha, "date": r.date, "tags": list(r.tags), "subject": r.subject, "ord": i}
        for i, r in enumerate(revisions)
    ]
    for i, files in enumerate(revision_files):
        if i < len(rev_rows) and revisions[i].sha and (revisions[i].tags or i == len(rev_rows) - 1):
            rev_rows[i]["files"] = dict(sorted(files))
    ord_of = {r.sha: i for i, r in enumerate(revisions)}
    occ = sorted(
        (as_span(o, ord_of) for o in occurrences),
        key=lambda o: (o["id"], o["from"], o["to"], o.get("file") or ""),
    )
    newest = flag_map([flags])  # later (newer) declarations win
    flag_rows = [_plain_flag(newest[name]) for name in sorted(newest)]
    lin = sorted(lineage, key=lambda x: (x["id"], x.get("previousId") or "", x.get("sha") or ""))
    history = sorted(flag_history, key=lambda x: (x["name"], x["from"]))
    full_manifest = {"schemaVersion": 2, **manifest, "datasetVersion": version}
    files = {
        "records.jsonl": _jsonl(lines),
        "revisions.jsonl": _jsonl(rev_rows),
        "occurrences.jsonl": _jsonl(occ),
        "flags.jsonl": _jsonl(flag_rows),
        "flaghistory.jsonl": _jsonl(history),
        "lineage.jsonl": _jsonl(lin),
        "manifest.json": _visible(
            json.dumps(full_manifest, sort_keys=True, indent=2, ensure_ascii=False)
        )
        + "\n",
    }
    for name, text in files.items():
        io.write_atomic(out / name, text)


def as_span(row: dict, ord_of: dict[str | None, int]) -> dict:
    """An occurrence line as a span `{"id", "file", "function", "guard", "from", "to", "lines"}`
    (revision ords, inclusive; `lines[i]` is the line at ord `from + i`). A one-revision line
    `{"id", "sha", "file", "line", ...}` (hand-made datasets) becomes the span of that revision."""
    if "from" in row:
        return row
    ord_ = ord_of.get(row.get("sha"), -1)
    span = {k: v for k, v in row.items() if k not in ("sha", "line")}
    span.setdefault("function", None)
    span.setdefault("guard", "")
    return {**span, "from": ord_, "to": ord_, "lines": [row.get("line")]}


_NO_TAGS = (
    "none (a revision is named by its commit: the short sha, e.g. for `--release`, and its "
    "date, as `kverr history` lists them)"
)


def _product(manifest: dict) -> str:
    profile = manifest.get("profile")
    return str(profile.get("product")) if isinstance(profile, dict) else str(manifest["project"])


def readme_text(manifest: dict, revisions: Sequence[Revision]) -> str:
    """README.md of a dataset directory, written from its manifest by every build, so it stays
    true when the dataset is regenerated (the cache counts are left out: byte-identical rebuilds)."""
    import shlex

    prov = manifest.get("provenance") or {}
    if isinstance(prov, str):
        prov = {"summary": prov, "snapshots": []}
    commits = [r for r in revisions if r.sha]
    tags = [t for r in commits for t in r.tags]
    counts = manifest.get("counts") or {}
    out = [
        "# kverr dataset",
        "",
        "Written by `kverr build`; regenerate it with the command below rather than editing it.",
        "",
        f"- kverr version: {manifest.get('toolVersion')} (records: schema v{manifest.get('schemaVersion', 2)})",
        f"- dataset version: {manifest.get('datasetVersion')}",
        f"- links (githubUrl) point at: {manifest.get('repository') or 'none (directory build)'}",
        *(
            [f"- project: {_product(manifest)} (profile `{manifest['project']}`)"]
            if manifest.get("project")
            else []
        ),
        f"- file set: {', '.join(f'`{g}`' for g in manifest.get('fileSet') or [])}",
        f"- {counts.get('records', 0)} records, {counts.get('flags', 0)} flags, "
        f"{counts.get('revisions', len(revisions))} revisions",
        "",
        "## How it was produced",
        "",
        "```sh",
        shlex.join(manifest.get("command") or ["kverr", "build"]),
        "```",
        "",
        prov.get("summary", "") + ".",
        "",
    ]
    if commits:
        out += [
            f"{len(commits)} git revision(s): {commits[0].sha} ({commits[0].date}) to "
            f"{commits[-1].sha} ({commits[-1].date}); release tags: {', '.join(tags) or _NO_TAGS}.",
            "",
        ]
    for snap in prov.get("snapshots") or []:
        out += [
            f"Snapshot revision `{snap['label']}` (dated {snap['date']}, sha null): `{snap['path']}`"
            f" (blob {snap['blob']}) placed at `{snap['repoPath']}` over the newest git revision."
            " These files are in no commit of the repository: records whose newest form comes"
            " from them have `analyzedSha: null`, `githubUrl: null` and `analyzedAt` = that date.",
            "",
        ]
    return _visible("\n".join(out), "\\")


def _plain_flag(decl: FlagDecl) -> dict[str, Any]:
    row = dataclasses.asdict(decl)
    for key in ("choices", "options"):
        if row.get(key) is not None:
            row[key] = list(row[key])
    return row


# ------------------------------------------------------------------ reading


def read_dataset(directory: str | os.PathLike[str]) -> Dataset:
    """Read and validate a dataset directory; DatasetError names file:line on the first problem."""
    from kverr.records.pattern import check_pattern
    from kverr.schema import validate_line

    root = Path(directory)
    if not (root / "records.jsonl").is_file():
        raise DatasetError(
            f"{root} is not a kverr dataset (no records.jsonl); build one with `kverr build ... --out {root}`."
        )
    manifest = io.read_manifest(root)
    records = []
    seen: set[str] = set()
    for where, obj in _rows(root / "records.jsonl"):
        try:
            validate_line(obj)
            check_pattern(obj["record"]["messagePattern"], who=f"record {obj['record']['id']}")
        except SchemaError as exc:
            raise DatasetError(f"{where}: {exc}") from None
        rid = obj["record"]["id"]
        if rid in seen:
            raise DatasetError(f"{where}: record {rid} appears twice; keep one line per id.")
        seen.add(rid)
        records.append(obj["record"])
    revisions = tuple(
        Revision(
            sha=r.get("sha"),
            date=r.get("date"),
            tags=tuple(r.get("tags") or ()),
            subject=r.get("subject"),
        )
        for _, r in sorted(
            _rows(root / "revisions.jsonl", optional=True), key=lambda wr: wr[1].get("ord", 0)
        )
    )
    flags = tuple(_flag(where, r) for where, r in _rows(root / "flags.jsonl", optional=True))
    ord_of = {r.sha: i for i, r in enumerate(revisions)}
    return Dataset(
        records=tuple(records),
        revisions=revisions,
        occurrences=tuple(
            as_span(_need(where, r, ("id", "file")), ord_of)
            for where, r in _rows(root / "occurrences.jsonl", optional=True)
        ),
        flags=flags,
        lineage=tuple(
            _need(where, r, ("id", "previousId", "sha"))
            for where, r in _rows(root / "lineage.jsonl", optional=True)
        ),
        manifest=manifest,
        flag_history=tuple(
            _need(where, r, ("name", "from", "to"))
            for where, r in _rows(root / "flaghistory.jsonl", optional=True)
        ),
    )


def _rows(path: Path, *, optional: bool = False) -> list[tuple[str, dict]]:
    return list(io.iter_objects(path, optional=optional))


def _need(where: str, row: dict, keys: tuple[str, ...]) -> dict:
    missing = [k for k in keys if k not in row]
    if missing:
        raise DatasetError(
            f"{where}: missing {', '.join(missing)}; fix that line or rebuild the dataset."
        )
    return row


_FLAG_FIELDS = {f.name for f in dataclasses.fields(FlagDecl)}


def _flag(where: str, row: dict) -> FlagDecl:
    _need(where, row, ("name", "dest"))
    unknown = sorted(set(row) - _FLAG_FIELDS)
    if unknown:
        raise DatasetError(
            f"{where}: unknown flag field {', '.join(unknown)}; fix that line or rebuild the dataset."
        )
    lists = {k: tuple(row[k]) for k in ("choices", "options") if row.get(k) is not None}
    return FlagDecl(**{**row, **lists})
