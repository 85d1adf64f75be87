"""write: the manifest, and every dataset file written into a temp dir, then swapped in, so
Ctrl-C never leaves a half-written dataset (the cache keeps the finished work for the re-run).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from kverr.pipeline.assemble import Assembled
from kverr.pipeline.plan import Plan

from kverr import io
from kverr.errors import DatasetError
from kverr.ftypes import Revision


def check_out(out: Path) -> None:
    """Never overwrite something that is not a kverr dataset (never lose data)."""
    if out.exists() and (
        not out.is_dir() or (any(out.iterdir()) and not (out / "manifest.json").exists())
    ):
        raise DatasetError(
            f"{out} exists and is not a kverr dataset directory; pass a new or empty --out."
        )


def make_manifest(
    plan: Plan, globs: Sequence[str], a: Assembled, stats: dict[str, int], command: Sequence[str]
) -> dict:
    from kverr import __version__
    from kverr.profile import as_tables

    severities = Counter(rec.get("severity", "") for rec in a.records)
    return {
        "tool": "kverr",
        "toolVersion": __version__,
        "schemaVersion": 2,
        "repository": plan.repository,
        "revisions": [r.sha for r in plan.revisions],
        "fileSet": list(globs),
        "files": a.files,
        "counts": {
            "records": len(a.records),
            "sites": a.sites,
            "flags": len(a.flags),
            "failures": len(a.failures),
            "revisions": len(plan.revisions),
            "occurrences": len(a.occurrences),
            "lineage": len(a.lineage),
            "flagHistory": len(a.flag_history),
            "argparse": sum(1 for r in a.records if r.get("kind") == "argparse"),
            "blobs": stats["blobs"],
            "severity": dict(sorted(severities.items())),
        },
        # Cache use differs between a first build and a rebuild: the only part of the dataset
        # directory that is not byte-identical across rebuilds of the same input.
        "build": {k: v for k, v in stats.items() if k not in ("revisions", "blobs")},
        "command": list(command),
        "datasetVersion": a.dataset_version,
        "provenance": _provenance(plan),
        # the project, and the profile it was built with (its TOML tables): the catalog takes
        # the product name, launch command and log forms from here
        "project": plan.profile.name,
        "profile": as_tables(plan.profile),
    }


def _provenance(plan: Plan) -> dict:
    """Where the revisions came from: a sentence, and each snapshot file (files from disk that
    are in no commit, so a reader can tell reconstructed code from upstream history)."""
    commits = [r for r in plan.revisions if r.sha]
    if not commits:
        return {"summary": "kverr build of a source directory", "snapshots": []}
    first, last = commits[0], commits[-1]
    text = (
        f"kverr build of {len(commits)} git revision(s) from {first.sha[:12]} ({first.date})"
        f" to {last.sha[:12]} ({last.date})"
    )
    for label in dict.fromkeys(s["label"] for s in plan.snapshots):
        files = [s for s in plan.snapshots if s["label"] == label]
        text += (
            f", then snapshot {label!r} ({files[0]['date']}): {len(files)} file(s) from disk placed"
            f" over {last.sha[:12]}, in no commit of the repository"
        )
    return {"summary": text, "snapshots": [dict(s) for s in plan.snapshots]}


def write_out(
    out: Path,
    revisions: list[Revision],
    a: Assembled,
    manifest: dict,
    files: Sequence[Sequence[tuple[str, str]]] = (),
) -> None:
    """Write the dataset into a sibling temp dir, then swap it in: an interrupt or a crash leaves
    either the old dataset or the new one, never a mix."""
    from kverr.records.dataset import readme_text, write_dataset

    with io.replacing_dir(out.resolve()) as tmp:
        write_dataset(
            tmp,
            records=a.records,
            revisions=revisions,
            occurrences=a.occurrences,
            flags=a.flags,
            lineage=a.lineage,
            manifest=manifest,
            flag_history=a.flag_history,
            revision_files=files,
        )
        (tmp / "README.md").write_text(readme_text(manifest, revisions), encoding="utf-8")
