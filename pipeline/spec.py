"""What one build builds: a frozen spec, checked when it is made, that the CLI, the tests and
the benchmarks hand to `pipeline.build`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kverr.errors import SourceError

if TYPE_CHECKING:
    from kverr.ftypes import Profile


@dataclass(frozen=True)
class GitSource:
    """Revisions of a git repository (bare is fine; nothing is checked out): `revs` and `A..B`
    ranges, the tags matching `tags`, with `touching` every commit that changed the file set.
    `snapshots` (`PATH=REPO_PATH`) place files from disk over the newest revision as one more,
    labelled `snapshot_label` and dated `snapshot_date`."""

    repo: Path
    revs: Sequence[str] = ()
    tags: str | None = None
    touching: bool = False
    snapshots: Sequence[str] = ()
    snapshot_label: str = "snapshot"
    snapshot_date: str | None = None

    def __post_init__(self) -> None:
        if self.snapshots and not self.snapshot_date:
            raise SourceError("--snapshot needs --snapshot-date ISO (e.g. 2026-08-28T05:10:05Z).")


@dataclass(frozen=True)
class BuildSpec:
    """`source`: a directory or .py file, or a GitSource. `globs`: the file set (default: the
    profile's); `profile`: a Profile, a shipped profile's name or a TOML path. `verify` runs
    each record's fix through its revision's own check on the `platform` profile, confined by
    the OS (`trust_repo`: unconfined where no sandbox can be made). `cache`: the extraction
    cache (default: beside `catalog`, else `out`); `command`: the manifest's."""

    out: Path
    source: Path | GitSource
    catalog: Path | None = None
    globs: Sequence[str] | None = None
    jobs: int = 1
    repo_name: str | None = None
    overlay: Path | None = None
    cache: Path | None = None
    dataset_version: str | None = None
    profile: Profile | str | Path | None = None
    verify: bool = False
    platform: str | None = None
    trust_repo: bool = False
    command: Sequence[str] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if self.verify and self.git is None:
            raise SourceError("--verify runs each revision's own code from git; add --git REPO.")
        if self.jobs < 1:
            raise SourceError(f"--jobs {self.jobs}: pass 1 or more processes.")

    @property
    def git(self) -> GitSource | None:
        return self.source if isinstance(self.source, GitSource) else None

    @classmethod
    def from_targets(
        cls, targets: Sequence[str] | None, *, git: Path | None = None,
        revs: Sequence[str] | None = (), tags: str | None = None, touching: bool = False,
        snapshots: Sequence[str] | None = (), snapshot_label: str = "snapshot",
        snapshot_date: str | None = None, **options,
    ) -> BuildSpec:  # fmt: skip
        """`kverr build`'s command line: with --git the positionals are revisions and ranges;
        without, one PATH (a bare repository PATH is read as git, the further positionals as
        its revisions). `options`: the other fields."""
        targets, revs, snapshots = targets or (), revs or (), snapshots or ()
        if git is None and targets and is_bare_repo(Path(targets[0])):
            git, targets = Path(targets[0]), targets[1:]
        if git is not None:
            source = GitSource(
                Path(git), (*targets, *revs), tags, touching, snapshots, snapshot_label,
                snapshot_date,
            )  # fmt: skip
            return cls(source=source, **options)
        if not targets:
            raise SourceError("nothing to build; pass a directory or .py file, or --git REPO.")
        if snapshots:
            raise SourceError("--snapshot places files over a git revision; add --git REPO.")
        if len(targets) > 1 or revs:
            raise SourceError(
                f"{targets[0]} is read as a directory, so revisions make no sense; add --git {targets[0]} to build revisions."
            )
        return cls(source=Path(targets[0]), **options)


def is_bare_repo(path: Path) -> bool:
    return path.is_dir() and (path / "HEAD").is_file() and (path / "objects").is_dir()
