"""What each shipped profile covers, from the shipped datasets: per file glob of its file set
(the server-args files) and of its launch path, how many records the dataset holds and how
many of them name a flag.

    python scripts/coverage.py [DATASET_DIR ...]   (default: the packaged datasets)

docs/maintainers.md shows its output (scripts/render_docs.py keeps it current), so the table
follows the data: a build that adds launch-path records changes it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kverr.catalog import store
from kverr.extractor.sources import matches_any

from kverr import io
from kverr.profile import load_profile


def records_of(dataset: Path) -> list[dict]:
    return [obj["record"] for _, obj in io.iter_objects(dataset / "records.jsonl")]


def table(dataset: Path) -> list[str]:
    records = records_of(dataset)
    name = records[0]["project"] if records else dataset.name
    profile = load_profile(name)
    scoped = [r for r in records if r.get("scope") == "launch-path"]
    rest = [r for r in records if r.get("scope") != "launch-path"]
    width = max(len(g) for g in (*profile.files, *profile.launch_path))
    out = [f"{profile.product} (profile {name}; {len(records):,} records in {dataset.name}/)"]
    out += [f"  {line}" for line in _provenance(dataset)]
    for title, globs, recs in (
        ("server-args files", profile.files, rest),
        ("launch path", profile.launch_path, scoped),
    ):
        out.append(f"  {title:<{width}}  records  name a flag")
        n_all = n_flag = 0
        for glob in globs:
            mine = [r for r in recs if matches_any(r["filePath"], [glob])]
            flagged = sum(1 for r in mine if r.get("flags"))
            n_all, n_flag = n_all + len(mine), n_flag + flagged
            out.append(f"  {glob:<{width}}  {len(mine):>7,}  {flagged:>11,}")
        out.append(f"  {f'{title}: {len(globs)} globs':<{width}}  {n_all:>7,}  {n_flag:>11,}")
    return out


def _provenance(dataset: Path) -> list[str]:
    """What the build's manifest says: revisions, flags, and the fixes its --verify ran (none
    without a manifest)."""
    if not (dataset / "manifest.json").is_file():
        return []
    counts = io.read_manifest(dataset).get("counts") or {}
    out = [f"{counts.get('revisions', 0):,} revisions built, {counts.get('flags', 0):,} flags"]
    v = counts.get("verification") or {}
    if v:
        out.append(
            f"{(v.get('counts') or {}).get('verified', 0):,} records with a fix verified on "
            f"{v.get('platform')}; at {v.get('newest')}, {v.get('verifiedNewest', 0):,} of "
            f"{v.get('errorsNewest', 0):,} raise/assert records"
        )
        early, na = v.get("beforeStartNewest", 0), v.get("beforeStartNotApplicableNewest", 0)
        if early and early != v.get("errorsNewest"):
            # the checks a launch runs before it starts; the launch path's run on the GPU
            out.append(
                f"  of them checked before start-up: {v.get('beforeStartVerifiedNewest', 0):,}"
                f" of {early:,} ({na:,} not applicable)"
            )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("datasets", nargs="*", type=Path, help="default: the packaged datasets")
    args = ap.parse_args(argv)
    datasets = args.datasets or store.packaged_datasets()
    if not datasets:
        print("no dataset given and none packaged; pass a dataset directory.", file=sys.stderr)
        return 2
    for i, dataset in enumerate(datasets):
        if not (dataset / "records.jsonl").is_file():
            print(f"{dataset}: no records.jsonl; pass a dataset directory.", file=sys.stderr)
            return 2
        print(("\n" if i else "") + "\n".join(table(dataset)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
