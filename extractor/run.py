"""Per-file orchestration: stdlib `ast` for module context, unit boundaries and positions;
libcst only for the units that can hold a site, each parsed alone; a cache keyed by the
unit's text so unchanged functions across git revisions cost a dictionary lookup."""

from __future__ import annotations

import ast
import bisect
import hashlib
import itertools
import re
from collections.abc import Iterable, MutableMapping
from dataclasses import dataclass

import libcst as cst
from kverr.extractor import depth, skeleton
from kverr.extractor.context import (
    IDENTIFIER,
    ModuleContext,
    class_prefix,
    first_line,
    module_context,
    rules_key,
    split_lines,
)
from kverr.extractor.link import filter_flags, restamp, site_order
from kverr.extractor.visitor import SiteCollector
from kverr.extractor.walk import walk
from libcst.metadata import MetadataWrapper, PositionProvider

from kverr.ftypes import (
    ExtractRules,
    FileExtraction,
    ParseFailure,
    Site,
    SourceFile,
    from_json,
    to_json,
)

EXTRACTOR_VERSION = "4"  # part of every cache key: bump when the extraction output changes
_SITE_CALLS = {"log", "warn", "exit"}  # besides the profile's logger methods


@dataclass
class Unit:
    nodes: list[ast.stmt]
    start: int  # first line, decorators included (1-based)
    end: int
    prefix: tuple[str, ...]
    in_args_class: str | None  # see context.class_prefix
    wrapped: bool  # a method: parsed inside a stand-in `class _K:` so its indentation is legal
    stub: skeleton.Stub | None = None  # a function of an outline: `nodes` is empty


# ---------------------------------------------------------------- public


def extract_file(
    src: SourceFile,
    cache: MutableMapping[str, str] | None = None,
    rules: ExtractRules | None = None,
) -> FileExtraction:
    """Sites, flag declarations and parse failures of one file (flags filtered by its own decls).
    `rules`: the project profile's extraction rules (default: the default project's)."""
    raw = extract_raw(src, cache, rules)
    return filter_flags(raw, raw.flags, rules)


def extract_files(
    sources: Iterable[SourceFile],
    cache: MutableMapping[str, str] | None = None,
    rules: ExtractRules | None = None,
) -> list[FileExtraction]:
    """Every file; a site's flags keep only attributes the whole file set declares as flags."""
    raws = [extract_raw(s, cache, rules) for s in sources]
    decls = tuple(d for r in raws for d in r.flags)
    return [filter_flags(r, decls, rules) for r in raws]


# ---------------------------------------------------------------- one file


def extract_raw(
    src: SourceFile,
    cache: MutableMapping[str, str] | None = None,
    rules: ExtractRules | None = None,
    units: list[tuple[str, int]] | None = None,
) -> FileExtraction:
    """`extract_file` without the flag filter. With `units` (and a `cache`), the sites stay in
    the cache: the result holds none, and `units` gets (cache key, first line) of each unit
    with sites, in file order (`sites_of_units` puts them together), so a caller that keeps
    those never decodes a cached unit it has decoded before. A file only libcst parses has
    no units: its sites are returned as usual and `units` stays empty."""
    text = src.text
    bad = _not_text(src)
    if bad is not None:
        return FileExtraction(src, failures=(bad,), stats=_stats(0, 0, 0))
    try:
        lines = split_lines(text)
    except MemoryError:
        return _out_of_memory(src)
    try:
        parsed = _parse(text, lines)
    except (SyntaxError, ValueError) as exc:
        if len(text) > skeleton.WHOLE_FILE_BYTES:  # never parsed whole, by ast or libcst
            return FileExtraction(src, failures=(_failure(src, exc),), stats=_stats(0, 0, 0))
        return _newer_syntax(src, exc, rules)
    except RecursionError:  # e.g. a 20,000-term concatenation
        return _too_deep(src)
    except MemoryError:
        return _out_of_memory(src, parsing=True)
    try:
        return _extract_tree(src, parsed, cache, rules, units, lines)
    except (RecursionError, MemoryError) as exc:  # e.g. an ast walk past the interpreter's stack
        if units is not None:
            units.clear()
        return _too_deep(src) if isinstance(exc, RecursionError) else _out_of_memory(src)


def _parse(text: str, lines: list[str]) -> list:
    """[the file's tree, {}, None]; past skeleton.WHOLE_FILE_BYTES [its outline, the blanked
    functions (by node id), the facts the module context would walk the whole tree for]."""
    if len(text) > skeleton.WHOLE_FILE_BYTES:
        found = skeleton.outline(lines)
        if found is not None:
            return list(found)
    return [ast.parse(text), {}, None]


def _extract_tree(
    src: SourceFile,
    parsed: list,
    cache: MutableMapping[str, str] | None,
    rules: ExtractRules | None,
    keys: list[tuple[str, int]] | None,
    lines: list[str],
) -> FileExtraction:
    """`parsed`: what _parse gave, emptied here, so that an outline's tree can go once the
    units are known (a list, not arguments: the caller would hold those for the call)."""
    tree, stubs, facts = parsed
    parsed.clear()
    text = src.text
    ctx = module_context(tree, text, src.path, rules, lines, facts)
    sites: list[Site] = []
    units = list(_units(tree.body, lines, (), None, False, ctx))
    if stubs:  # an outline: its functions' nodes go, each unit parses its own when it must
        for unit in units:
            if len(unit.nodes) == 1 and id(unit.nodes[0]) in stubs:
                unit.stub, unit.nodes = stubs[id(unit.nodes[0])], []
        del tree, facts, stubs
    site_re = _site_regex(ctx)
    parsed = hits = 0
    failures: list[ParseFailure] = []
    for unit, may_hold in zip(units, _with_sites(units, lines, site_re), strict=True):
        if not may_hold:
            continue
        unit_text = "\n".join(lines[unit.start - 1 : unit.end])
        key = _cache_key(unit, unit_text, ctx)
        cached = cache.get(key) if cache is not None else None
        if cached is not None:
            hits += 1
            if keys is None:
                sites.extend(restamp(s, src.path, unit.start) for s in from_json(cached))
            elif cached != "[]":
                keys.append((key, unit.start))
            continue
        parsed += 1
        deep = depth.too_deep(unit_text)  # before libcst, which can segfault on deep trees
        if deep is not None:
            failures.append(_deep_failure(src.path, unit.start + deep - 1, lines))
            continue
        try:
            found = _extract_unit(unit, src.path, lines, ctx, site_re)
        except cst.ParserSyntaxError as exc:  # this Python's ast took it, libcst did not
            failures.append(_unit_failure(src.path, unit, lines, exc))
            continue
        except RecursionError:
            failures.append(_deep_failure(src.path, unit.start, lines))
            continue
        if cache is not None:
            cache[key] = to_json([restamp(s, "", -unit.start) for s in found])
        if keys is None:
            sites.extend(found)
        elif found:
            keys.append((key, unit.start))
    sites.sort(key=site_order)
    stats = _stats(len(units), parsed, hits)
    return FileExtraction(
        src, tuple(sites), ctx.flags, tuple(failures), stats, literals=ctx.literal_types
    )


def _unit_failure(path: str, unit: Unit, lines: list[str], exc: cst.ParserSyntaxError):
    line = unit.start + exc.raw_line - 1 - (1 if unit.wrapped else 0)
    source_line = lines[line - 1].rstrip() if 0 < line <= len(lines) else ""
    message = f"libcst cannot parse this (its sites are skipped): {exc.message}"
    return ParseFailure(path, line, exc.raw_column + 1, message, source_line)


def _deep_failure(path: str, line: int, lines: list[str]) -> ParseFailure:
    source_line = lines[line - 1].rstrip() if 0 < line <= len(lines) else ""
    message = f"{depth.TOO_DEEP} to parse safely (its sites are skipped); split the expression"
    return ParseFailure(path, line, 1, message, source_line)


def _too_deep(src: SourceFile) -> FileExtraction:
    """The whole file is too deep for a parser: one failure, at the first line past the limit."""
    line = depth.too_deep(src.text) or 1
    failure = _deep_failure(src.path, line, split_lines(src.text))
    return FileExtraction(src, failures=(failure,), stats=_stats(0, 0, 0))


def _out_of_memory(src: SourceFile, *, parsing: bool = False) -> FileExtraction:
    """A MemoryError: the parser's own (its stack overflows past about 2,000 nested levels)
    says the file is too deep, every time; otherwise the machine ran short this time, which
    is no property of the file: the `retry` stat tells the build not to keep the result."""
    if parsing:
        try:
            deep = depth.too_deep(src.text, depth.PARSER_STACK)
        except MemoryError:
            deep = None
        if deep is not None:
            return _too_deep(src)
    message = f"{depth.OUT_OF_MEMORY} (its sites are missing from this build only; the next build tries it again)"
    failure = ParseFailure(src.path, 1, 1, message)
    return FileExtraction(src, failures=(failure,), stats={**_stats(0, 0, 0), "retry": 1})


def _stats(units: int, parsed: int, hits: int) -> dict[str, int]:
    return {"units": units, "units_parsed": parsed, "cache_hits": hits}


def _not_text(src: SourceFile) -> ParseFailure | None:
    error = getattr(src, "error", None)  # set by sources.py for binary / non-UTF-8 bytes
    if error:
        line, col, message = (error.split(":", 2) + ["", ""])[:3]
        if line.isdigit() and col.isdigit():
            return ParseFailure(src.path, int(line), int(col), message.strip())
        return ParseFailure(src.path, 1, 1, error)
    if "\x00" in src.text:
        return ParseFailure(src.path, 1, 1, "binary file (NUL bytes), not Python source; skipped")
    bad = _ESCAPED.search(src.text)
    if bad is not None:
        pos = bad.start()
        line = src.text.count("\n", 0, pos) + 1
        col = pos - (src.text.rfind("\n", 0, pos) + 1) + 1
        return ParseFailure(src.path, line, col, "not valid UTF-8; save it as UTF-8 or skip it")
    return None


def _units(
    body: list[ast.stmt],
    lines: list[str],
    prefix: tuple[str, ...],
    in_args: str | None,
    wrapped: bool,
    ctx: ModuleContext,
):
    pending: Unit | None = None
    for node in body:
        if isinstance(node, ast.ClassDef):
            if pending:
                yield pending
                pending = None
            args = class_prefix(node.name, ctx.rules)
            yield from _units(node.body, lines, (*prefix, node.name), args, True, ctx)
            continue
        start = first_line(node)
        end = node.end_lineno or node.lineno
        if pending and start <= pending.end:  # `a; b` on one line: one unit
            pending.nodes.append(node)
            pending.end = max(pending.end, end)
            continue
        if pending:
            yield pending
        floor = pending.end if pending else 0
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            # a statement's own comment block belongs to its unit (a def's sites are inside it)
            while start - 1 > floor and lines[start - 2].lstrip().startswith("#"):
                start -= 1
        pending = Unit([node], start, end, prefix, in_args, wrapped)
    if pending:
        yield pending


def _site_regex(ctx: ModuleContext) -> re.Pattern[str]:
    """A text test that is a superset of what the libcst pass reports: running it over a unit
    (in C) is much cheaper than walking the unit's stdlib tree."""
    calls = "|".join(sorted(_SITE_CALLS | set(ctx.rules.severity())))
    names = "|".join(sorted(map(re.escape, ctx.warn_funcs | ctx.exit_funcs)))
    named = rf"|\b(?:{names})\s*\(" if names else ""
    return re.compile(rf"\b(?:raise|assert)\b|\.\s*(?:{calls})\s*\({named}")


def _with_sites(units: list[Unit], lines: list[str], site_re: re.Pattern[str]) -> list[bool]:
    """For each unit, whether `site_re` finds a match within its own lines: one scan of the
    file, not a search of each unit's text (that was ~285 searches a revision, each of a text
    joined for it). The scan looks for `site_re` without its leading `\\b`s, which lets `re`
    skip to the positions where a literal can start; each candidate is then matched with
    `site_re` itself, in place. A unit found is skipped to its end."""
    text = "\n".join(lines)
    offsets = [0, *itertools.accumulate(len(line) + 1 for line in lines)]  # line n at [n-1]
    starts = [u.start for u in units]
    found = [False] * len(units)
    scan = re.compile(site_re.pattern.replace(r"\b(?:", "(?:"))
    pos = 0
    while (m := scan.search(text, pos)) is not None:
        at = m.start()
        pos = at + 1
        exact = site_re.match(text, at)
        if exact is None:
            continue
        line = bisect.bisect_right(offsets, at)
        i = bisect.bisect_right(starts, line) - 1
        if i < 0 or line > units[i].end:
            continue  # between units (a class line, a comment before a def)
        last = bisect.bisect_right(offsets, max(exact.end() - 1, at))
        if last <= units[i].end:
            found[i] = True
            pos = max(pos, offsets[units[i].end])  # the next line after the unit
    return found


def _call_regex(ctx: ModuleContext) -> re.Pattern[str]:
    """The call half of _site_regex: raise/assert statements are sites by their own node type,
    so only a call can make a statement's expressions worth visiting."""
    return re.compile(_site_regex(ctx).pattern.replace(r"\b(?:raise|assert)\b|", "", 1))


def _own_text(stmt: ast.stmt, lines: list[str]) -> str:
    """The lines of a statement's own expressions: all of a simple statement, the header of a
    compound one (its nested statements are judged on their own)."""
    end = stmt.end_lineno or stmt.lineno
    body = getattr(stmt, "body", None)
    if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
        end = max(stmt.lineno, body[0].lineno - 1)
    return "\n".join(lines[stmt.lineno - 1 : end])


_ESCAPED = re.compile("[\udc80-\udcff]")  # bytes that were not UTF-8 (surrogateescape)


def _cache_key(unit: Unit, text: str, ctx: ModuleContext) -> str:
    """`text`: the unit's lines, as _extract_tree joined them."""
    # A superset of the names the unit reads (its class names too: an Action's flags are keyed
    # by its class): cheap and safe.
    names = set(IDENTIFIER.findall(text)) | set(unit.prefix)
    h = hashlib.sha256()
    for piece in (
        EXTRACTOR_VERSION,
        text,
        ctx.fingerprint(names),
        rules_key(ctx.rules),
        ".".join(unit.prefix),
        f"{unit.in_args_class}:{unit.wrapped}:{ctx.launch}",
    ):
        h.update(piece.encode("utf-8", "surrogatepass") + b"\0")
    return h.hexdigest()[:32]  # 128 bits: a thousand revisions' blobs list these keys


def _extract_unit(
    unit: Unit,
    path: str,
    lines: list[str],
    ctx: ModuleContext,
    site_re: re.Pattern[str],
) -> list[Site]:
    text = "\n".join(lines[unit.start - 1 : unit.end]) + "\n"
    if unit.wrapped:
        text = "class _K:\n" + text
    module = cst.parse_module(text)
    stmts: list[ast.stmt] = []
    nodes = unit.nodes if unit.stub is None else [skeleton.parse_stub(lines, unit.stub)]
    for node in nodes:
        _preorder(node, stmts)

    def position(ordinal: int, node: cst.CSTNode) -> tuple[int, int, int, int]:
        return _ast_position(stmts[ordinal], lines)

    def ast_stmt(ordinal: int) -> ast.AST | None:
        return stmts[ordinal] if 0 <= ordinal < len(stmts) else None

    call_re = _call_regex(ctx)
    busy = [bool(call_re.search(_own_text(n, lines))) for n in stmts]
    collector = SiteCollector(
        ctx,
        path,
        lines,
        position,
        ast_stmt,
        busy.__getitem__,
        prefix=unit.prefix,
        in_args_class=unit.in_args_class,
        skip_wrapper=unit.wrapped,
    )
    walk(collector, module)  # module.visit, without libcst's copy of the tree
    return collector.sites


def _preorder(node: ast.AST, out: list[ast.stmt]) -> None:
    if isinstance(node, ast.stmt):
        out.append(node)
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.expr, ast.expr_context)):
            continue  # expressions hold no statements
        _preorder(child, out)


def _ast_position(node: ast.stmt, lines: list[str]) -> tuple[int, int, int, int]:
    end_line = node.end_lineno or node.lineno
    return (
        node.lineno,
        end_line,
        _char_col(lines[node.lineno - 1], node.col_offset),
        _char_col(lines[end_line - 1], node.end_col_offset or 0),
    )


def _char_col(line: str, byte_col: int) -> int:
    """ast columns count UTF-8 bytes; Site columns count characters."""
    if line.isascii():
        return byte_col
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", "ignore"))


# ---------------------------------------------------------------- slow path


def _newer_syntax(
    src: SourceFile, exc: SyntaxError | ValueError, rules: ExtractRules | None
) -> FileExtraction:
    """This interpreter's `ast` refused the file. If libcst parses it (syntax newer than the
    running Python), extract it whole with libcst positions; else report the failure.
    A file nested past depth.MAX_DEPTH (ast refuses 200 nested brackets) never reaches libcst."""
    if depth.too_deep(src.text) is not None:
        return _too_deep(src)
    try:
        return _newer_syntax_tree(src, exc, rules)
    except RecursionError:
        return _too_deep(src)
    except MemoryError:
        return _out_of_memory(src, parsing=True)


def _newer_syntax_tree(
    src: SourceFile, exc: SyntaxError | ValueError, rules: ExtractRules | None
) -> FileExtraction:
    try:
        module = cst.parse_module(src.text)
    except (cst.ParserSyntaxError, cst.CSTValidationError):  # e.g. "a" b"b": bytes and str
        return FileExtraction(src, failures=(_failure(src, exc),), stats=_stats(0, 0, 0))
    lines = split_lines(src.text)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    ranges = wrapper.resolve(PositionProvider)
    ctx = module_context(_parsable_statements(module, ranges), src.text, src.path, rules)

    def position(ordinal: int, node: cst.CSTNode) -> tuple[int, int, int, int]:
        r = ranges[node]
        return r.start.line, r.end.line, r.start.column, r.end.column

    collector = SiteCollector(ctx, src.path, lines, position, lambda ordinal: None)
    walk(collector, wrapper.module)
    sites = sorted(collector.sites, key=lambda s: (s.line, s.col, s.variant))
    return FileExtraction(
        src, tuple(sites), ctx.flags, (), _stats(1, 1, 0), literals=ctx.literal_types
    )


def _parsable_statements(module: cst.Module, ranges) -> ast.Module:
    """Module context from the top-level statements this Python can parse on their own,
    moved to their file lines so flag declarations report where they are."""
    body: list[ast.stmt] = []
    for stmt in module.body:
        bare = stmt.with_changes(leading_lines=())
        try:
            tree = ast.parse(module.code_for_node(bare))
        except (SyntaxError, ValueError):
            continue
        ast.increment_lineno(tree, ranges[stmt].start.line - 1)
        body.extend(tree.body)
    return ast.Module(body=body, type_ignores=[])


def _failure(src: SourceFile, exc: SyntaxError | ValueError) -> ParseFailure:
    if isinstance(exc, SyntaxError):
        line = exc.lineno or 1
        lines = split_lines(src.text)
        source_line = lines[line - 1].rstrip() if 0 < line <= len(lines) else ""
        return ParseFailure(src.path, line, exc.offset or 1, exc.msg, source_line)
    return ParseFailure(src.path, 1, 1, str(exc))
