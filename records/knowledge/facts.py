"""What the field functions read about one site, computed once: `Facts`, and the flags'
declared choices and defaults.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from kverr.extractor.pysource import NOT_LITERAL, literal
from kverr.records.conditions import (
    Atom,
    Reading,
    as_declared,
    dest_of,
    earlier_checks,
    readings,
    show_value,
)
from kverr.records.identity import profile_or_default
from kverr.records.knowledge.docs import common_values, usage

from kverr.ftypes import Assignment, Docs, FlagDecl, Profile, Site


@dataclass(frozen=True)
class Facts:
    """Everything the field functions read, computed once per site."""

    site: Site
    message: str  # Template.display()
    literal: str  # the message's literal text only (placeholders dropped)
    readings: tuple[Reading, ...]
    decls: dict[str, FlagDecl] = field(default_factory=dict)
    pattern: str = ""
    profile: Profile = field(default=None)  # type: ignore[assignment]  # facts_for sets it
    docs: Docs | None = None  # the revision's documentation (records/knowledge/docs.py)
    # what the class's phases assign before the check (extractor/phases.py), in run order
    earlier: tuple[Assignment, ...] = ()

    @property
    def direct(self) -> tuple[Atom, ...]:
        return tuple(a for r in self.readings if r.role == "direct" for a in r.atoms)

    @property
    def context(self) -> tuple[Atom, ...]:
        """Facts the site needs besides the direct test: enclosing ifs, and gates on a flag the
        message names (the validator's own switch, e.g. `if not cfg.feature: return`)."""
        out = []
        for r in self.readings:
            if r.role == "enclosing":
                out.extend(a for a in r.atoms if a.flag or a.op == "expr")
            elif r.role == "gate":
                out.extend(a for a in r.atoms if a.positive and _named(a.flag, self.literal))
        return tuple(out)

    @property
    def passed(self) -> tuple[Atom, ...]:
        """Earlier checks the launch already passed, as the positive flag facts they imply.
        With the profile's `earlier_checks = "related"` (validators that check unrelated
        features one after another), only checks about a flag this site's own conditions read."""
        own: set[str] | None = None
        if self.profile.earlier_checks == "related":
            mine = self.direct + self.context
            own = {a.flag for a in mine if a.flag} | {fl for a in mine for fl in a.flags}
        return tuple(
            a
            for r in self.readings
            if r.role == "gate"
            for a in r.atoms
            if a.positive
            and not _named(a.flag, self.literal)
            and (own is None or r.guard.kind != "passed" or a.flag in own)
        )

    @property
    def exits(self) -> tuple[Atom, ...]:
        """What the early exits on the way ask of a launch that reaches the site: `if self.x
        is None: return` that --x is set, `if self.sleep_mode: return` that it is left out;
        a variable, the platform or the model they test too (code they test is left out: any
        launch may pass it)."""
        passed = self.passed
        return tuple(
            a
            for r in self.readings
            if r.role == "gate" and r.guard.kind == "early-exit"
            for a in r.atoms
            if a in passed
            or (a.flag and a.op in ("unset", "is None"))
            or (a.flag is None and a.topic in ("env", "platform", "hardware", "model"))
        )

    @property
    def handled(self) -> str:
        """The exception the site's except clause catches ("ValueError"), "" outside one: that
        failure (a port taken, a file missing) fires it; the launch's options only lead there."""
        caught = [g.test.removeprefix("except ") for g in self.site.guards if g.kind == "try"]
        return " or ".join(caught[-1].strip("()").split(", ")) if caught else ""

    @property
    def served(self) -> bool:
        """Whether the check runs for each request the server takes, not at launch (the
        profile's `request_checks`: the input validation of a tokenizer manager, an OpenAI
        server or the engine's generate call)."""
        function = (self.site.function or "").rpartition(".")[2]
        return any(
            in_files(self.site.file, (path,)) and in_files(function, names)
            for path, names in self.profile.request_checks
        )


def _named(flag: str | None, text: str) -> bool:
    return bool(flag) and re.search(re.escape(flag) + r"(?![\w-])", text) is not None


def facts_for(
    site: Site,
    decls: dict[str, FlagDecl] | None = None,
    pattern: str = "",
    siblings: Sequence[Site] = (),
    profile: Profile | None = None,
    docs: Docs | None = None,
    earlier: tuple[Assignment, ...] = (),
) -> Facts:
    profile = profile_or_default(profile)
    literal = " ".join(p.text or "" for p in site.template.parts if p.is_literal)
    decls = _without_reassigned(decls or {}, site)  # shared, read-only: one map per build
    return Facts(
        site=site,
        message=site.template.display(),
        literal=" ".join(literal.split()),
        readings=tuple(as_declared(readings(site, earlier_checks(site, siblings), profile), decls)),
        decls=decls,
        pattern=pattern,
        profile=profile,
        docs=docs,
        earlier=earlier,
    )


def in_files(path: str, globs: Sequence[str]) -> bool:
    """Whether a site's file is one of the profile's globs (fnmatch, case-sensitive)."""
    import fnmatch

    return any(fnmatch.fnmatchcase(path, g) for g in globs)


def _without_reassigned(decls: dict[str, FlagDecl], site: Site) -> dict[str, FlagDecl]:
    """A flag the function assigns before the site holds the value the code gave it, not its
    declared default: forget that default for this site (copying the map only then)."""
    again = [f for b in site.bindings if b.kind == "assigned" for f in b.flags if f in decls]
    if not again:
        return decls
    return {**decls, **{f: replace(decls[f], default=None) for f in again}}


def meets_default(atom: Atom, decls: dict[str, FlagDecl]) -> bool:
    """The flag's declared default already makes `atom` true: a launch gets there without
    passing the flag, so a command line needs no fragment for it."""
    d = decls.get(atom.flag or "")
    if d is None or d.default is None or atom.via:
        return False  # unknown, or read through a fallback chain: spell the value out
    value = literal(d.default)
    if value is NOT_LITERAL:
        return False
    if value is None and atom.op not in ("is None", "unset"):
        # None is "not given": the server-args code often picks a value for it before the
        # check runs (an attention backend, a quantization read off the model).
        return False
    return holds_for(atom, value)


def holds_for(atom: Atom, value: object) -> bool:
    """Whether the flag fact `atom` is true when its flag has `value`."""
    v = atom.value
    try:
        return {
            "set": lambda: bool(value),
            "unset": lambda: not value,
            "is None": lambda: value is None,
            "is not None": lambda: value is not None,
            "==": lambda: value == v,
            "!=": lambda: value != v,
            "in": lambda: value in v,
            "not in": lambda: value not in v,
            ">": lambda: value > v,
            ">=": lambda: value >= v,
            "<": lambda: value < v,
            "<=": lambda: value <= v,
        }.get(atom.op, lambda: False)()
    except TypeError:  # None > 1: the comparison itself would fail, so it does not hold
        return False


def _choices(flag: str | None, decls: dict[str, FlagDecl]) -> tuple[str, ...] | None:
    d = decls.get(flag or "")
    return d.choices if d and d.choices else None


def flag_default(flag: str, decls: dict[str, FlagDecl]) -> object:
    d = decls.get(flag)
    if d is None or d.default is None:
        return None
    value = literal(d.default)
    return None if value is NOT_LITERAL else value


def known_default(flag: str, decls: dict[str, FlagDecl]) -> object:
    """The declared default where it says what the check reads; None when there is none, it
    is no literal, or it is None or "": "not given", which the code often resolves before
    the check (an attention backend picked for the model, a config's
    --enable-chunked-prefill)."""
    value = flag_default(flag, decls)
    return None if value == "" else value


def takes_value(decl: FlagDecl | None) -> bool:
    """A flag declared with a value (not a store_true switch), so `--x` alone is not enough."""
    if decl is None or (decl.action or "").startswith(("store_", "argparse.BooleanOptional")):
        return False
    if decl.action and "BooleanOptional" in decl.action:
        return False
    kind = (decl.type or "").replace("Optional[", "").strip("]")
    if _BOOL_OR_NONE.fullmatch(kind) or is_switch(decl):
        return False  # `bool | None`: a switch (`--x` / `--no-x`), never `--x=X`
    return bool(decl.choices) or (bool(kind) and kind not in ("bool", "'bool'"))


def takes_list(decl: FlagDecl | None) -> bool:
    """A flag that takes several words (`--numa-bind-nodes 0 0 1 1`: nargs, or a list type)."""
    if decl is None:
        return False
    many = decl.nargs in ("+", "*") or ((decl.nargs or "").isdigit() and decl.nargs != "1")
    return many or bool(re.search(r"\b(?:list|List|tuple|Tuple)\[", decl.type or ""))


def is_json(decl: FlagDecl | None) -> bool:
    """A flag whose value is JSON text (`type=json.loads`): `--x '{"image": 1}'`."""
    kind = ((decl.type if decl else "") or "").lower()
    return "json" in kind or kind.endswith("loads")


_BRACES = re.compile(r"\{[^{}]{0,200}\}")


def json_example(helptext: str | None) -> str | None:
    """The first JSON object the help text shows (`e.g. '{"image": 1, "video": 1}'`)."""
    for m in _BRACES.finditer(helptext or ""):
        try:
            value = json.loads(m.group(0))
        except ValueError:
            continue
        if isinstance(value, dict):
            return json.dumps(value)
    return None


def is_switch(decl: FlagDecl | None) -> bool:
    """A field typed bool under wrappers (`SkipValidation[bool]`, `Optional[bool]`)."""
    words = set(_WORDS.findall(decl.type or "")) if decl else set()
    return words - {"None", "Optional", "Union", "SkipValidation"} == {"bool"}


_WORDS = re.compile(r"[A-Za-z_]\w*")
_BOOL_OR_NONE = re.compile(r"['\"]?(?:bool \| None|None \| bool|Union\[bool, None\])['\"]?")


# A word the help text shows as a value: quoted ('cuda', "auto", `fa3`) or named as an example
# ("e.g., --disaggregation-ib-device mlx5_0", "such as LowConfidence"). JSON shown in braces is
# left out first: its quoted words are keys, not values.
_QUOTED_WORD = re.compile(r"""(?<![\w'"`])['"`]([\w.:/@+-]{1,40})['"`](?![\w'"`])""")
_EXAMPLE = re.compile(
    r"\b(?:e\.g\.|for example|such as|for instance)[,:]?\s+['\"`]?(?:--[a-z0-9-]{1,60}[ =])?"
    r"['\"`]?([\w.:/@+,-]{1,60})",
    re.I,
)
_BRACED = re.compile(r"\{[^{}]{0,400}\}")
# An example named in prose is a value only when it does not read as a plain word ("e.g., for
# forwarding", "for example, setting it to 2").
_PLAIN_WORD = re.compile(r"[a-z]+")


def help_examples(helptext: str | None) -> tuple[str, ...]:
    """The values a flag's help text shows, in its order ("The device to use ('cuda', 'xpu',
    'npu')" -> cuda, xpu, npu): what a user reading `--help` would type."""
    text = _BRACED.sub(" ", helptext or "")
    found = []
    quoted = [(m.start(1), m.group(1)) for m in _QUOTED_WORD.finditer(text)]
    named = [(m.start(1), m.group(1).rstrip(".,;:)")) for m in _EXAMPLE.finditer(text)]
    for _, word in sorted([*quoted, *[(i, w) for i, w in named if not _PLAIN_WORD.fullmatch(w)]]):
        if word and not word.startswith("-") and any(c.isalnum() for c in word):
            found.append(word.rstrip(".,;:"))
    return tuple(dict.fromkeys(found))


def sample_value(flag: str, decls: dict[str, FlagDecl], docs: Docs | None = None) -> str:
    """A realistic value for a flag that takes one: the declared choice the revision's own
    launches use most (else the first), for numbers the default, else what those launches or
    the help text use, a value its help text shows, its default, a path for path-like flags,
    else the argparse metavar (the flag's dest in capitals)."""
    d = decls.get(flag)
    used = common_values(usage(flag, decls, docs)) if docs is not None else []
    if d and d.choices:
        return next((v for v in used if v in d.choices), d.choices[0])
    kind = (d.type if d else "") or ""
    default = flag_default(flag, decls)
    if is_json(d):
        return json_example(d.help if d else None) or "{}"
    if "int" in kind or "float" in kind:
        ok = isinstance(default, (int, float)) and not isinstance(default, bool) and default > 0
        if ok:
            return show_value(default)
        numbers = [w for w in (*used, *help_examples(d.help if d else None)) if _positive(w)]
        return numbers[0] if numbers else ("30000" if flag.endswith("-port") else "1")
    own = re.search(
        re.escape(flag) + r"[ =]['\"`]?([\w.:/@+,-]{1,60})", (d.help if d else "") or ""
    )
    if own and not own.group(1).startswith("-"):
        return own.group(1).rstrip(".,;:")  # the help's own example of the flag
    shown = help_examples(d.help if d else None)
    if shown:
        return shown[0]
    if isinstance(default, str) and default.strip():
        return default  # what the option holds when left out is a value it takes
    if re.search(r"-(ip|host)$", flag):
        return "192.168.0.2"  # an address of the local network, like the help texts' own
    if re.search(r"-urls?$", flag):
        return "http://192.168.0.2:30000"
    helptext = ((d.help if d else "") or "").lower()
    if re.search(r"(files?|paths?|dir|certs?)$", flag) or re.search(
        r"\b(path (to|of)|file path)\b", helptext
    ):
        is_dir = flag.endswith("dir") or re.search(r"\bdirectory\b", helptext)
        # Named after the flag, so two path flags in one command stay apart; a config
        # option's field by the field (`/path/to/torch_profiler_dir/`, not the whole option).
        return "/path/to/" + flag.lstrip("-").rpartition(".")[2] + ("/" if is_dir else "")
    return metavar(flag)


def typical(flag: str, decls: dict[str, FlagDecl], docs: Docs | None = None) -> list[int | float]:
    """Numbers a deployment gives the flag: the values the revision's own launches use most
    (docs, tests), then those its help text shows; never a made-up boundary."""
    d = decls.get(flag)
    kind = ((d.type if d else "") or "").lower()
    if "int" not in kind and "float" not in kind:
        return []
    words = [*common_values(usage(flag, decls, docs)), *help_examples(d.help if d else None)]
    out: list[int | float] = []
    for w in words:
        try:
            out.append(int(w) if "int" in kind else float(w))
        except ValueError:
            continue
    return list(dict.fromkeys(x for x in out if x > 0))


def _positive(word: str) -> bool:
    try:
        return float(word) > 0
    except ValueError:
        return False


def metavar(flag: str) -> str:
    """What `sample_value` falls back to when nothing names a value: argparse's metavar (the
    dest in capitals), a word the user must replace before the command runs."""
    return dest_of(flag).rpartition(".")[2].upper()


def invented(arg: str) -> bool:
    """`--x-config=X_CONFIG`: a command-line fragment whose value is the flag's metavar, not a
    value anything in the code or its help names."""
    flag, eq, value = arg.partition("=")
    return bool(eq) and flag.startswith("-") and value == metavar(flag)
