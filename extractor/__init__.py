"""kverr.extractor: every raise / assert / logging / warnings / exit site of a Python source,
with its message template, guards, flags and context (see docs/CONTRACTS.md)."""

from __future__ import annotations

import hashlib

from kverr.extractor.render import render
from kverr.extractor.run import EXTRACTOR_VERSION, extract_file, extract_files
from kverr.extractor.templates import (
    TemplateContext,
    TemplateError,
    template_for,
    template_for_or_raise,
    templates_for,
)

from kverr.ftypes import ExtractRules, Site, SourceFile


def extract(text: str, path: str = "t.py", rules: ExtractRules | None = None) -> tuple[Site, ...]:
    """The one-line test harness: the sites of `text` as if it were the file `path`."""
    data = text.encode("utf-8", "surrogatepass")
    blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    (fx,) = extract_files([SourceFile(path=path, text=text, blob=blob)], rules=rules)
    return fx.sites


__all__ = [
    "EXTRACTOR_VERSION",
    "TemplateContext",
    "TemplateError",
    "extract",
    "extract_file",
    "extract_files",
    "render",
    "template_for",
    "template_for_or_raise",
    "templates_for",
]
