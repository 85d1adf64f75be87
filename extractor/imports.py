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

import ast
import dataclasses
import functools
import posixpath
from collections.abc import Callable, Sequence

from kverr.extractor.bindings import constant
from kverr.extractor.context import mutated_names, scope_constants
from kverr.extractor.pysource import expr_or_none, module_or_none
from kverr.extractor.templates import formatted, merge_literals

from kverr.errors import SourceError
from kverr.ftypes import Binding, FileExtraction, Part, Site, Template

Read = Callable[[str], "str | None"]  # repository path -> text at the revision, None: absent


def resolve_imports(exts: Sequence[FileExtraction], read: Read) -> list[FileExtraction]:
    """The extractions with each resolvable "import" binding turned into a "constant", and a
    message part that is such a constant (or one item of it: `ERRORS["PP"]`) folded into the
    template's text, as the extractor folds a module's own constants."""
    values: dict[tuple[str, str], object] = {}

    def value(b: Binding, importer: str) -> object:
        key = (importer, b.value or "")
        if key not in values:
            values[key] = _value(importer, b.value or "", read)
        return values[key]

    out = []
    for ext in exts:
        if not any(b.kind == "import" for s in ext.sites for b in s.bindings):
            out.append(ext)
            continue
        sites = tuple(_resolved(s, functools.partial(value, importer=s.file)) for s in ext.sites)
        out.append(dataclasses.replace(ext, sites=sites))
    return out


def _resolved(site: Site, value: Callable[[Binding], object]) -> Site:
    imports = {b.name: b for b in site.bindings if b.kind == "import"}
    if not imports:
        return site
    bindings = tuple(
        (_binding(b, value(b)) or b) if b.kind == "import" else b for b in site.bindings
    )
    parts = [_folded(p, imports, value) for p in site.template.parts]
    return dataclasses.replace(site, bindings=bindings, template=Template(merge_literals(parts)))


def _binding(b: Binding, v: object) -> Binding | None:
    return None if v is _MISSING else constant(b.name, v)


def _folded(part: Part, imports: dict[str, Binding], value: Callable[[Binding], object]) -> Part:
    """A placeholder for an imported constant, or an item of one, as the text it prints (a
    message that is such a name alone is a dynamic part: the extractor could not read it)."""
    node = None if part.is_literal else expr_or_none(part.expr or "")
    key: object = _MISSING
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        node, key = node.value, node.slice.value
    if not (isinstance(node, ast.Name) and node.id in imports):
        return part
    v = value(imports[node.id])
    if key is not _MISSING:
        try:
            v = v[key]  # type: ignore[index]
        except (KeyError, IndexError, TypeError):
            return part
    text = None if v is _MISSING else formatted(v, part.conversion, part.format_spec)
    # the name stays on the part: identity keys read the template as the extractor saw it
    return part if text is None else Part(text=text, expr=part.expr)


_MISSING = object()


def _value(importer: str, target: str, read: Read) -> object:
    """The value `module:NAME` is bound to once, at the revision `read` reads; else _MISSING."""
    module, _, attr = target.partition(":")
    for path in _candidates(importer, module):
        text = read(path)
        if text is None:
            continue
        tree = module_or_none(text)
        if tree is None:
            return _MISSING
        return scope_constants(tree.body, {}, mutated_names(tree)).get(attr, _MISSING)
    return _MISSING


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
