"""The extractor's second pass, which needs no parser: a file's sites put back together from
its units' cached sites, and their flags linked against the flags the whole file set declares
(a build whose every function is cached runs only this, and never imports libcst)."""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Iterable, Sequence

from kverr.extractor.flags import FlagTable, param_flag
from kverr.extractor.scope import launch_sites, named_flags
from kverr.extractor.sources import matches_any

from kverr.ftypes import (
    NAMING_BINDINGS,
    Binding,
    ExtractRules,
    FileExtraction,
    FlagDecl,
    Site,
    SourceFile,
    moved,
)


def filter_flags(
    fx: FileExtraction, decls: Sequence[FlagDecl], rules: ExtractRules | None = None
) -> FileExtraction:
    """Map `--attr` names to declared flags and drop the rest; keep all when nothing is declared.

    A flag the file's own messages name literally (`"--foo-bar requires ..."`) is kept too: an
    arg-groups module can be newer than the server_args.py it is read with (a snapshot), and its
    message text is then the best evidence that `cfg.foo_bar` is a launch flag. A read on a
    config object (`--cache-config.enable-prefix-caching`) becomes the flag that fills that
    field, or the field of the config's JSON option (flags.FlagTable).

    A site that reads no flag takes those its message names (scope.named_flags), else those of
    the `if` tests its function is called under, else the options whose declared type is the
    class it is in (`_owned`). A file on the `rules`' launch path keeps only the sites
    scope.launch_sites keeps."""
    launch = bool(rules and rules.launch_path) and matches_any(fx.source.path, rules.launch_path)
    if not decls and not launch:
        return fx
    table, dests, typed = _table(decls)
    named = {
        d: "--" + d.replace("_", "-")
        for d in (() if launch else _named_in_messages(fx))
        if d not in table.by_dest
    }
    if named:  # this file's own messages add flags: a table of its own
        table = dataclasses.replace(table, by_dest={**table.by_dest, **named})
    kept: dict[tuple[str, ...], tuple[str, ...]] = {}  # a block's guards share their flags
    owners = _held(fx.source, typed) if typed and not launch else {}

    fills = rules.code_fills if rules else ()

    def keep(flags: tuple[str, ...]) -> tuple[str, ...]:
        hit = kept.get(flags)
        if hit is None:
            names = (table.resolve(_filled(f[2:].replace("-", "_"), fills)) for f in flags)
            hit = kept[flags] = tuple(dict.fromkeys(n for n in names if n))
        return hit

    sites = []
    for s in fx.sites:
        bindings = _kept_bindings(s.bindings, keep, dests)
        named = [f for b in bindings if b.kind in NAMING_BINDINGS for f in b.flags]
        flags = tuple(dict.fromkeys((*keep(s.flags), *named)))
        if not flags and not launch:
            # a check that reads no flag where its message names one ("This model does not
            # support `--runner generate`", "`lora_extra_vocab_size` is deprecated"): the
            # option the user meets it through; else the flags its method is called under
            flags = named_flags(s, table) or keep(s.reached) or _owned(s, owners)
        guards = tuple(_with_flags(g, keep(g.flags)) for g in s.guards)
        if flags == s.flags and guards == s.guards and bindings == s.bindings:
            sites.append(s)  # (most sites: a revision's link then costs no copies)
        else:
            sites.append(dataclasses.replace(s, flags=flags, guards=guards, bindings=bindings))
    if launch:
        sites = launch_sites(sites, table, rules.env_prefixes)
    return dataclasses.replace(fx, sites=tuple(sites), flags=table.reachable(fx.flags))


def _filled(dest: str, fills: Sequence[tuple[str, str]]) -> str:
    """A raw read through a config field the code fills (the profile's `code_fills`), as a read
    of the config it is filled with: `engine_config.draft_config.target_model_config.
    max_model_len` -> `model_config.max_model_len` for `draft_config.target_model_config =
    model_config`; the field itself -> `model_config`, which no option sets whole."""
    for path, view in fills:
        at = ("." + dest + ".").find("." + path + ".")
        if at >= 0:  # (the filled field itself is the config: no option of its own)
            return view + dest[at + len(path) :]
    return dest


_Typed = dict[str, tuple[str, ...]]  # a class's name -> the options declared of its type
_TABLES: dict[tuple, tuple[FlagTable, list[str], _Typed]] = {}  # see _table


def _table(decls: Sequence[FlagDecl]) -> tuple[FlagTable, list[str], _Typed]:
    """The FlagTable of `decls`, their plain dests and the classes their types name (`--mamba-
    backend: MambaBackendEnum`, `--quantization-config: dict | QuantizationConfigArgs | None`),
    built once while the declarations stay the same: a backfill links every file of a
    thousand revisions against nearly the same few hundred declarations (lines aside, which
    none depends on). Keep them as they are: they are shared."""
    key = tuple((d.dest, d.name, d.default, d.arg_dest, d.type) for d in decls)
    hit = _TABLES.get(key)
    if hit is None:
        if len(_TABLES) >= 64:
            _TABLES.clear()
        table = FlagTable.of(decls)
        dests = list(dict.fromkeys(d.dest for d in decls if "." not in d.dest))
        typed: dict[str, list[str]] = {}
        for d in decls:
            if "." not in d.dest and table.by_dest.get(d.dest) == d.name:
                for word in dict.fromkeys(_CLASS_WORD.findall(d.type or "")):
                    typed.setdefault(word, []).append(d.name)
        hit = _TABLES[key] = (table, dests, {k: tuple(v) for k, v in typed.items()})
    return hit


_CLASS_WORD = re.compile(r"\b[A-Z]\w*")  # (a class is CamelCase; `str`, `int` name no class)


def _held(source: SourceFile, typed: _Typed) -> dict[str, _Held]:
    """This file's classes that an option holds, by the option's declared type: the options,
    and the names the class's body uses; a metaclass stands for the classes it makes
    (`class E(Enum, metaclass=M)`)."""
    out: dict[str, _Held] = {}
    for klass, (made, names) in _classes(source).items():
        options = [o for n in (klass, *made) for o in typed.get(n, ())]
        if options:
            out[klass] = _Held(tuple(dict.fromkeys(options)), names)
    return out


@dataclasses.dataclass(frozen=True)
class _Held:
    options: tuple[str, ...]  # the options whose type is the class
    names: frozenset[str]  # the names its body uses (the module's functions it calls)


_CLASSES: dict[str, dict[str, tuple[tuple[str, ...], frozenset[str]]]] = {}  # by blob


def _classes(source: SourceFile) -> dict[str, tuple[tuple[str, ...], frozenset[str]]]:
    """A file's top-level classes: name -> (the classes it is the metaclass of, the names its
    body uses), read once per blob (every revision links the file again). None are read
    from a file loaded without its text (a pass that reads only the flags declared)."""
    if not source.text:
        return {}
    hit = _CLASSES.get(source.blob)
    if hit is None:
        if len(_CLASSES) >= 4096:
            _CLASSES.clear()
        text = source.text
        made: dict[str, list[str]] = {}
        for klass, meta in _METACLASS.findall(text):
            made.setdefault(meta, []).append(klass)
        hit = {}
        for m in _CLASS.finditer(text):
            # (read in place, up to the next line back at the module's level: each character
            # of the file is read once, however many classes it holds)
            limit = min(len(text), m.end() + _MAX_BODY)
            out = _OUTDENT.search(text, m.end(), limit)
            names = _NAME.findall(text, m.end(), out.start() if out else limit)
            hit[m.group(1)] = (tuple(made.get(m.group(1), ())), frozenset(names))
        _CLASSES[source.blob] = hit
    return hit


_CLASS = re.compile(r"^class\s+(\w+)", re.M)
_METACLASS = re.compile(r"^class\s+(\w+)\([^)\n]{0,400}\bmetaclass=(\w+)", re.M)
_NAME = re.compile(r"\b[A-Za-z_]\w*\b")
_OUTDENT = re.compile(r"\n(?=[^\s#)])")  # the first line back at the module's level
_MAX_BODY = 200_000  # characters of a class body read


def _owned(site: Site, owners: dict[str, _Held]) -> tuple[str, ...]:
    """The options holding the class a check is in (a validator of an option's own type, an
    enum's lookup), for a site that reads no flag; for a module function's check, the class
    that calls it, when one such class does (a validator's helper)."""
    klass, dot, _ = (site.function or "").partition(".")
    if dot:
        return owners[klass].options if klass in owners else ()
    held = [h for h in owners.values() if klass and klass in h.names]
    return held[0].options if len(held) == 1 else ()


def _with_flags(item, flags: tuple[str, ...]):
    return item if flags == item.flags else dataclasses.replace(item, flags=flags)


def _kept_bindings(
    bindings: Sequence[Binding], keep: Callable[[tuple[str, ...]], tuple[str, ...]], dests
) -> tuple[Binding, ...]:
    """Bindings whose flags are declared; a local unpacked from a helper call gets the flags its
    name points at (guess_flags) now that every declared flag is known."""
    out = []
    for b in bindings:
        if b.kind in ("assigned", "sets") and not keep(b.flags[:1]):
            continue  # the attribute assigned is no flag
        flags = keep(b.flags)
        if b.kind == "param" and not flags:  # what its callers pass is no flag: its name may be
            flags = keep(param_flag(b.name))
        if b.kind == "local" and not b.flags and (b.value or "").endswith("]"):
            guessed = guess_flags(b.name, b.value or "", dests)
            flags = keep(tuple("--" + d.replace("_", "-") for d in guessed))
        if flags or b.kind in ("constant", "import"):
            out.append(_with_flags(b, flags))
    return tuple(out)


_FLAG_IN_TEXT = re.compile(r"(?<![\w-])--([a-z0-9][a-z0-9-]*[a-z0-9])")


def _named_in_messages(fx: FileExtraction) -> set[str]:
    """Dests of the `--flags` written in the literal text of this file's messages."""
    return {
        m.group(1).replace("-", "_")
        for s in fx.sites
        for p in s.template.parts
        if p.text
        for m in _FLAG_IN_TEXT.finditer(p.text)
    }


def sites_of_units(path: str, units: Iterable[tuple[Sequence[Site], int]]) -> tuple[Site, ...]:
    """A file's sites from its units' cached sites (as `extract_raw` stores them: lines
    relative to the unit, no file) and each unit's first line, in `extract_raw`'s order."""
    sites = [restamp(s, path, start) for found, start in units for s in found]
    sites.sort(key=site_order)
    return tuple(sites)


def site_order(site: Site) -> tuple[int, int, int]:
    """The order of a file's sites (a stable sort: ties keep the order of their units)."""
    return (site.line, site.col, site.variant)


def restamp(site: Site, path: str, start: int) -> Site:
    """Shift a site's lines by `start`: -unit.start makes them unit-relative, +unit.start back."""
    delta = start
    return moved(
        site,
        file=path,
        line=site.line + delta,
        end_line=site.end_line + delta,
        guards=tuple(moved(g, line=g.line + delta) for g in site.guards),
        # an assignment's line moves with the function: records compare it with the site's
        # and the guards' lines, so a function cached from another position must not keep it
        bindings=tuple(moved(b, line=b.line + delta) if b.line else b for b in site.bindings),
    )


# ---------------------------------------------------------------- a name's flags, by its words

_WORD = re.compile(r"[a-z0-9]+")
_SHORT = {"attn": "attention", "tp": "tensor", "dp": "data", "pp": "pipeline", "ep": "expert"}


@functools.lru_cache(maxsize=8192)
def _words(name: str) -> frozenset[str]:
    out = set()
    for w in _WORD.findall(name.lower()):
        w = _SHORT.get(w, w)
        out.add(w[:-1] if len(w) > 3 and w.endswith("s") else w)
    return frozenset(out)


def guess_flags(name: str, call: str, dests: Sequence[str]) -> tuple[str, ...]:
    """Flags a local unpacked from a helper call over the launch arguments most likely holds,
    by the words of its name and the helper's: `prefill_backend` from
    `attention_backends_of(args)` -> (prefill_attention_backend, attention_backend), the
    best match first. Only flags all of whose words appear there, and at least one of the
    local's own words; nothing when no flag shares the local's words."""
    own = _words(name) - {"get", "of", "str"}
    callee = re.match(r"[\w.]+", call)
    pool = own | _words(callee.group(0) if callee else "")
    scored = []
    for dest in dests:
        words = _words(dest)
        if words and words <= pool and words & own:
            scored.append((-len(words & own), len(words), dest))
    scored.sort()
    if not scored or -scored[0][0] < min(2, len(own)):
        return ()
    return tuple(d for _, _, d in scored)
