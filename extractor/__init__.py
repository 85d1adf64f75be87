"""kverr.extractor: every raise / assert / logging / warnings / exit site of a Python source,
with its message template, guards, flags and context (see docs/CONTRACTS.md)."""

from __future__ import annotations

import hashlib
import importlib
from typing import Any

from kverr.extractor.render import render

from kverr.ftypes import ExtractRules, Site, SourceFile

# Imported on first use (libcst comes with them): a build whose every blob is cached, and
# anything that only needs `kverr.extractor.sources`, never loads the parser.
_LAZY = {
    "extract_file": "run",
    "extract_files": "run",
    "TemplateContext": "templates",
    "TemplateError": "templates",
    "template_for": "templates",
    "template_for_or_raise": "templates",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    globals()[name] = value
    return value


def extract(text: str, path: str = "t.py", rules: ExtractRules | None = None) -> tuple[Site, ...]:
    """The one-line test harness: the sites of `text` as if it were the file `path`."""
    from kverr.extractor.run import extract_files

    data = text.encode("utf-8", "surrogatepass")
    blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    (fx,) = extract_files([SourceFile(path=path, text=text, blob=blob)], rules=rules)
    return fx.sites


__all__ = [
    "TemplateContext",
    "TemplateError",
    "extract",
    "extract_file",
    "extract_files",
    "render",
    "template_for",
    "template_for_or_raise",
]
