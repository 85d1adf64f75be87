"""imports: constants a check imports from another module, read at the same revision.

`from pkg.layers.attention.fla.chunk_delta_h import CHUNK_SIZE as FLA_CHUNK_SIZE` makes
`FLA_CHUNK_SIZE % page_size` a fact about 64. The extractor sees one file and records
Binding("FLA_CHUNK_SIZE", "import", "pkg.layers.attention.fla.chunk_delta_h:CHUNK_SIZE");
here the module is read from the same commit (git objects, no checkout) and, when the name is
bound there once to a literal, the binding becomes a "constant" the records show by value.
Modules outside the repository, names computed at runtime, and directory builds (no commit
to read from) stay unresolved: the records then show the name, as before.
"""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Callable, Sequence

from kverr.extractor.bindings import constant
from kverr.extractor.context import mutated_names, scope_constants
from kverr.extractor.pysource import module_or_none

from kverr.errors import SourceError
from kverr.ftypes import Binding, FileExtraction

Read = Callable[[str], "str | None"]  # repository path -> text at the revision, None: absent


def resolve_imports(exts: Sequence[FileExtraction], read: Read) -> list[FileExtraction]:
    """The extractions with each resolvable "import" binding turned into a "constant"."""
    values: dict[tuple[str, str], Binding | None] = {}

    def resolved(b: Binding, importer: str) -> Binding | None:
        key = (importer, b.value or "")
        if key not in values:
            values[key] = _constant(b.name, importer, b.value or "", read)
        return values[key]

    out = []
    for ext in exts:
        if not any(b.kind == "import" for s in ext.sites for b in s.bindings):
            out.append(ext)
            continue
        sites = tuple(
            dataclasses.replace(
                s,
                bindings=tuple(
                    (resolved(b, s.file) or b) if b.kind == "import" else b for b in s.bindings
                ),
            )
            for s in ext.sites
        )
        out.append(dataclasses.replace(ext, sites=sites))
    return out


def _constant(name: str, importer: str, target: str, read: Read) -> Binding | None:
    module, _, attr = target.partition(":")
    for path in _candidates(importer, module):
        text = read(path)
        if text is None:
            continue
        tree = module_or_none(text)
        if tree is None:
            return None
        consts = scope_constants(tree.body, {}, mutated_names(tree))
        return constant(name, consts[attr]) if attr in consts else None
    return None


def _candidates(importer: str, module: str) -> list[str]:
    """Repository paths that may hold `module`, imported from the file `importer`."""
    if module.startswith("."):
        level = len(module) - len(module.lstrip("."))
        base = posixpath.dirname(importer)
        for _ in range(level - 1):
            base = posixpath.dirname(base)
        rel = module.lstrip(".").replace(".", "/")
        stem = posixpath.join(base, rel) if rel else base
    else:
        # The package's root is where its top-level name sits in the importer's path
        # (`python/pkg/srt/server_args.py` importing `pkg.x` -> `python/`).
        parts = importer.split("/")
        top = module.split(".")[0]
        root = parts[: parts.index(top)] if top in parts[:-1] else []
        stem = posixpath.join(*root, *module.split("."))
    return [f"{stem}.py", f"{stem}/__init__.py"]


def git_reader(read_object: Callable[[str], bytes], sha: str) -> Read:
    """A Read over one commit's tree (`sha:path` objects of `git cat-file --batch`)."""

    def read(path: str) -> str | None:
        try:
            return read_object(f"{sha}:{path}").decode("utf-8", "replace")
        except SourceError:
            return None

    return read
