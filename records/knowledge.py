"""The knowledge fields of a record, one plain function per field, all derived from the code.

Inputs are what the extractor saw: the guards on the path (read as flag facts by
`conditions.py`), the flags' declarations (help, default, choices), the comment above the site,
the enclosing docstring and the message itself. A field the code says nothing about stays
empty ("" / [] / None): no boilerplate.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from kverr.records.conditions import (
    Atom,
    Reading,
    cli_arg,
    dest_of,
    earlier_checks,
    join_words,
    parse,
    phrase,
    readings,
    show_value,
)

from kverr.ftypes import FlagDecl, Profile, Site


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


def _named(flag: str | None, text: str) -> bool:
    return bool(flag) and re.search(re.escape(flag) + r"(?![\w-])", text) is not None


def facts_for(
    site: Site,
    decls: dict[str, FlagDecl] | None = None,
    pattern: str = "",
    siblings: Sequence[Site] = (),
    profile: Profile | None = None,
) -> Facts:
    if profile is None:
        from kverr.profile import default_profile

        profile = default_profile()
    literal = " ".join(p.text or "" for p in site.template.parts if p.is_literal)
    return Facts(
        site=site,
        message=site.template.display(),
        literal=" ".join(literal.split()),
        readings=tuple(readings(site, earlier_checks(site, siblings), profile)),
        decls=decls or {},  # shared, read-only: one map per build
        pattern=pattern,
        profile=profile,
    )


def _in_files(path: str, globs: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(path, g) for g in globs)


# ------------------------------------------------------------------ prose helpers


def _prose(text: str | None) -> str:
    """A comment or docstring paragraph as one line of prose, without tool pragmas."""
    if not text:
        return ""
    keep = []
    for line in text.splitlines():
        s = line.strip().lstrip("#").strip()
        if re.match(r"(noqa|type:|pragma|fmt:|pylint|TODO\b|FIXME\b|XXX\b)", s) or _is_code(s):
            continue
        keep.append(s)
    out = " ".join(" ".join(keep).split())
    if out and out[-1] not in ".!?:)":
        out += "."
    return out


def _is_code(line: str) -> bool:
    """A commented-out statement (`self.x = True`), which is not prose for a user."""
    if not re.search(r"[=()\[\]]", line):
        return False
    try:
        ast.parse(line)
    except SyntaxError:
        return False
    return True


def _first_paragraph(doc: str | None) -> str:
    if not doc:
        return ""
    return _prose(re.split(r"\n\s*\n", doc.strip(), maxsplit=1)[0])


def _sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.;!?])\s+(?=[A-Za-z`'\"-])|;\s*", text)
    return [p.strip() for p in parts if p.strip()]


def _choices(flag: str | None, decls: dict[str, FlagDecl]) -> tuple[str, ...] | None:
    d = decls.get(flag or "")
    return d.choices if d and d.choices else None


def _default(flag: str, decls: dict[str, FlagDecl]) -> object:
    d = decls.get(flag)
    if d is None or d.default is None:
        return None
    try:
        return ast.literal_eval(d.default)
    except (ValueError, SyntaxError):
        return None


# ------------------------------------------------------------------ the fields


def documentation(f: Facts) -> str:
    """Why the check exists: the comment above the site and the message's own explanation
    (a `because`/`since`/`, as` clause, the text after a colon, a sentence that explains);
    the enclosing docstring's summary only when neither says anything."""
    parts = [_prose(f.site.comment)] if _says_why(f.site.comment) else []
    for reason in message_reasons(f):
        if not any(_restates(reason, p) for p in parts):
            parts.append(reason)
    if not parts:
        parts.append(_first_paragraph(f.site.docstring))
    return " ".join(p for p in parts if p)


def _restates(text: str, earlier: str) -> bool:
    """Most of the content words of `text` are already in `earlier` (the comment said it)."""
    words = {w for w in re.findall(r"[\w/-]{4,}", text.lower())}
    seen = {w for w in re.findall(r"[\w/-]{4,}", earlier.lower())}
    return bool(words) and len(words & seen) / len(words) >= 0.5


def _says_why(comment: str | None) -> bool:
    """A comment worth showing a user: a sentence, not a section label ("# Other platforms
    backends"), a bare link or a note to the developers."""
    text = _prose(comment)
    words = re.sub(r"https?://\S+", "", text).split()
    if len(words) < 5:
        return False
    return not re.match(r"(take care|handle|todo|fixme|hack|note to self)\b", text, re.I)


_REASON = re.compile(r"(?:,\s*as|\bsince|\bbecause(?! of)|\bas(?= it\b))\s+(?P<why>[^.;,]+)", re.I)
# Sentences of a message that are advice (solutions), the action taken, or a list of values:
# not explanations.
_NOT_WHY = re.compile(
    r"(please|you can|you should|you may|try|consider|use|set|pass|setting|disabling|enabling|"
    r"using|ignoring|switching|falling|forcing|does|do|will|must|expected|got)\b",
    re.I,
)


def _explains(text: str) -> bool:
    """A sentence that can stand alone as an explanation: no runtime value, no list of
    allowed values or conditions, not advice or the action taken."""
    if "{" in text or len(text.split()) < 5 or not text[:1].isalpha() or _NOT_WHY.match(text):
        return False
    return "==" not in text and text.count("'") < 4 and ": " not in text[:40].rstrip(":")


def message_reasons(f: Facts) -> list[str]:
    """Explanations the message itself gives, as sentences without runtime values."""
    out = []
    sentences = _sentences(f.message)
    for m in _REASON.finditer(f.message):
        why = m.group("why").strip()
        if len(why.split()) >= 5 and "{" not in why:
            out.append(why[0].upper() + why[1:].rstrip(" .") + ".")
    head, sep, tail = f.message.partition(": ")
    if sep and len(head.split()) > 2 and _explains(tail.strip()):  # "AMD/ROCm: ..." is a label
        out.append(tail.strip()[0].upper() + tail.strip()[1:].rstrip(" .") + ".")
    for s in sentences[1:]:
        if _explains(s) and not _IMPERATIVE.match(s):
            out.append(s.rstrip(" .") + ".")
    return list(dict.fromkeys(out))


def trigger_scenarios(f: Facts) -> str:
    """The launch that reaches the site, in words: the model, the flags, the platform, then
    any other condition; and the earlier checks of the validator it already passed."""
    atoms = _last_per_flag(list(dict.fromkeys(f.context + f.direct)))
    with_ = [
        phrase(a) for a in atoms if a.positive or (a.flag and a.op not in ("unset", "is None"))
    ]
    without = [a.flag for a in atoms if a.flag and a.op in ("unset", "is None")]
    exprs = [a for a in atoms if a.flag is None]
    # An inner architecture test refines the outer one ("a NemotronH model" within "a hybrid
    # model"): the innermost that holds says it best.
    models = [a for a in exprs if a.topic == "model"]
    picked = [a for a in models if a.holds][-1:] or models[-1:]
    model = [phrase(a) for a in picked]
    where = [phrase(a) for a in exprs if a.topic in ("platform", "hardware")]
    when = [phrase(a) for a in exprs if a.topic not in ("model", "platform", "hardware")]
    if not (with_ or without or exprs):
        return ""
    bits = ["Launching"]
    if model:
        bits.append(" and ".join(model))
    flags = []
    if with_:
        flags.append("with " + join_words(with_))
    if without:
        flags.append("without " + join_words(without))
    if flags:
        bits.append(" and ".join(flags))
    if where:
        bits.append(" and ".join(where))
    text = " ".join(bits)
    if when:
        text += (", when " if flags or model or where else " when ") + join_words(when)
    text += "."
    passed = [phrase(a) for a in dict.fromkeys(f.passed)]
    if passed:
        text += (
            " The earlier checks of this validator already passed, so the launch also has "
            f"{join_words(passed)}."
        )
    return text


def _last_per_flag(atoms: list[Atom]) -> list[Atom]:
    """Drop a fact that a later one about the same flag implies or refines
    (`--x set` then `--x > 4`; `--x other than a` then `--x=b`)."""
    out = []
    for i, a in enumerate(atoms):
        later = [b for b in atoms[i + 1 :] if a.flag and b.flag == a.flag]
        if any(b.op == "==" for b in later) or (a.positive and later):
            continue
        out.append(a)
    return out


def common_situations(f: Facts) -> str:
    """The launch a user is in when this shows up, told with what each flag is for (its
    declared help); empty when no flag involved declares help."""
    atoms = list(dict.fromkeys(f.context + f.direct))
    without = [a.flag for a in atoms if a.flag and a.op in ("unset", "is None")]
    using = [a.flag for a in atoms if a.flag and a.flag not in without]
    using += [fl for a in atoms if a.flag is None for fl in a.flags]
    if not (using or without):
        using = list(f.site.flags)
    using = [fl for fl in dict.fromkeys(using) if fl not in without]
    if not any(_help(fl, f.decls) for fl in (*using, *without)):
        return ""
    models = [a for a in atoms if a.flag is None and a.topic == "model" and a.holds]
    text = "Seen when launching"
    if models:
        text += " " + phrase(models[-1])
    if using:
        text += " with " + join_words([_with_help(fl, f.decls) for fl in using])
    if without:
        text += (
            (" but" if using else "")
            + " without "
            + join_words([_with_help(fl, f.decls) for fl in dict.fromkeys(without)])
        )
    return text + "."


def _help(flag: str, decls: dict[str, FlagDecl]) -> str:
    """The first sentence of a flag's help, as a lower-case clause."""
    d = decls.get(flag)
    if not d or not d.help:
        return ""
    text = re.sub(r"^[fr]?['\"]", "", d.help.strip())  # an f-string help kept its prefix
    text = _prose(re.split(r"(?<=[\w)])\.\s+(?=[A-Z])", text, maxsplit=1)[0]).rstrip(".")
    if text[:1].isupper() and not text[1:2].isupper():
        text = text[0].lower() + text[1:]
    return text


def _with_help(flag: str, decls: dict[str, FlagDecl]) -> str:
    text = _help(flag, decls)
    return f"{flag} ({text})" if text else flag


_IMPERATIVE = re.compile(
    r"^(?:please\s+|you can\s+|you should\s+|you need to\s+)?(pass|use|set|run|remove|drop|"
    r"disable|enable|install|unset|try|specify|add|choose|consider|increase|decrease|reduce|"
    r"upgrade|switch|provide|make sure|change|update|export|lower|turn|select|rebuild|reinstall|"
    r"downgrade|check|verify|ensure|point|explicitly|override)\b",
    re.I,
)


def solutions(f: Facts) -> list[str]:
    """Fixes: imperative sentences of the message, then the negation of the direct condition,
    then giving up the validator's own feature."""
    out: list[str] = []
    notice = f.site.severity in ("warning", "info") and "deprecat" not in f.literal.lower()
    for s in _advice_sentences(f.message):
        # A notice often says what the code itself does ("Disable X for model Y"): only a
        # sentence that names a flag or asks the user ("Please ...") is advice there.
        if notice and not (
            re.search(r"(^|\s)--\w", s) or re.match(r"(please|consider|try)\b", s, re.I)
        ):
            continue
        if _IMPERATIVE.match(s) and "{" not in s:  # "set it to one of {CHOICES}" shows no values
            s = re.sub(r"^(please|you can|you should|you need to)\s+", "", s, flags=re.I).rstrip(
                ". "
            )
            out.append(s[0].upper() + s[1:])
    missing = _missing_path(f)
    if missing:
        out.append(f"Point {missing[0]} at an existing {missing[1]}")
    using = [phrase(a) for a in f.context if a.positive]
    for atom in f.direct:
        fix = _fix_words(atom, f.decls)
        if notice and atom.flag is None and atom.topic:
            continue  # "Run on ROCm" is no advice for a notice that merely says what it picked
        if fix and missing and atom.op == "set":
            continue  # removing the path flag is not the fix for a wrong path
        if fix:
            if atom.op == "set" and using:
                fix += " when using " + join_words(using)
            out.append(fix)
    for atom in f.context:
        if atom.op == "set":
            out.append(f"Remove {atom.flag} if the deployment can do without it")
        elif atom.positive:
            out.append(_fix_words(atom, f.decls))
    return list(dict.fromkeys(out))


def _fix_words(atom: Atom, decls: dict[str, FlagDecl]) -> str:
    flag, v = atom.flag, atom.value
    if flag is None:
        return _probe_fix(atom)
    choices = _choices(flag, decls)
    # A long choice list is noise in a sentence; preventionTips lists it in full.
    allowed = f" (declared choices: {', '.join(choices)})" if choices and len(choices) <= 6 else ""
    words = {
        "set": lambda: f"Remove {flag}",
        "unset": lambda: f"Add {flag}",
        "==": lambda: f"Use a {flag} value other than {show_value(v)}{allowed}",
        "!=": lambda: f"Set {flag}={show_value(v)}",
        "in": lambda: f"Set {flag} to a value other than {_list(v)}{allowed}",
        "not in": lambda: f"Set {flag} to one of {_list(v)}",
        ">": lambda: f"Set {flag} to {show_value(v)} or less",
        ">=": lambda: f"Set {flag} below {show_value(v)}",
        "<": lambda: f"Set {flag} to {show_value(v)} or more",
        "<=": lambda: f"Set {flag} above {show_value(v)}",
        "is None": lambda: f"Set {flag}",
        "is not None": lambda: f"Leave {flag} unset",
    }.get(atom.op)
    return words() if words else ""


def _probe_fix(atom: Atom) -> str:
    """The fix for a condition that is not one flag fact: make its negation true, in words."""
    goal = phrase(atom.negated())
    if atom.topic == "flags":
        return f"Launch with {goal}"
    if atom.topic in ("platform", "hardware"):
        return f"Run {goal}" if goal.startswith("on ") else ""
    if atom.topic in ("package", "env"):
        return f"Make sure {goal}"
    if atom.topic or not atom.flags:
        return ""  # the model, a file (handled apart) or code that reads no flag
    return f"Change {join_words(list(atom.flags))} so that {goal}"


def _advice_sentences(message: str) -> list[str]:
    """Sentences and clauses of a message that may be advice: ", please ..." and
    "..., try to use ..." start one too, and so does a sentence glued on without a space."""
    text = re.sub(r"\.(?=[A-Z][a-z])", ". ", message)
    parts = []
    for s in _sentences(text):
        parts.extend(
            p.strip()
            for p in re.split(r",\s*(?=(?:please|try|you can|you should)\b)", s, flags=re.I)
        )
    return [p for p in parts if p]


def _list(values: tuple) -> str:
    return ", ".join(show_value(x) for x in values)


def example_fix(f: Facts) -> str:
    """`# before` a launch command that reaches the site, `# after` the same command with the
    direct condition negated (else an enclosing one); empty when no flag-level fix is known."""
    chosen: dict[str, str] = {}  # flag -> fragment; a later fact about a flag refines it
    for atom in f.context + f.passed + f.direct:
        arg = _arg_for(atom, f.decls) if atom.flag else None
        if arg and atom.flag:
            chosen.pop(atom.flag, None)
            chosen[atom.flag] = arg
    missing = _missing_path(f)
    if missing:
        flag, what = missing
        chosen.pop(flag, None)
        before = [*chosen.values(), f"{flag}=/no/such/{what}"]
        after = [*chosen.values(), f"{flag}=/path/to/existing/{what}"]
        return _fix_text(before, after, f.profile)
    before = list(chosen.values())
    if not before:
        return ""
    targets = [a for a in reversed(f.direct) if a.flag] + [a for a in reversed(f.context) if a.flag]
    # The message's own advice picks the flag to change ("Please set --x when ..."); a fix
    # that must invent a value for a flag with many choices comes last.
    advice = [s for s in _advice_sentences(f.message) if _IMPERATIVE.match(s)]
    first = re.search(r"--[a-z0-9][\w-]*", advice[0]) if advice else None  # the verb's object
    targets.sort(
        key=lambda a: (
            not (first and a.flag == first.group(0).rstrip("-")),
            a.op in ("unset", "is None") and len(_choices(a.flag, f.decls) or ()) > 3,
        )
    )
    for target in targets:
        after = [a for a in before if not _is_arg_of(a, target.flag)]
        fixed = _arg_for(target.negated(), f.decls, fixing=True)
        if fixed:
            after.append(fixed)
        elif not _dropping_works(target.negated(), f.decls):
            continue
        if after != before:
            return _fix_text(before, after, f.profile)
    return ""


def _fix_text(before: list[str], after: list[str], profile: Profile) -> str:
    """Two full launch commands (the profile's launch template), so the fix can be pasted as
    is; a fix that sets the model's own flag (`--model-path`) drops the template's."""
    head = _launch_head(profile.launch, profile.model, tuple(before))
    return f"# before\n{' '.join([head, *before])}\n# after\n{' '.join([head, *after])}"


def _launch_head(launch: str, model: str, before: tuple[str, ...]) -> str:
    words = launch.split()
    at = words.index("{model}") if "{model}" in words else -1
    flag = words[at - 1] if at > 0 and words[at - 1].startswith("-") else None
    if flag and any(_is_arg_of(a, flag) for a in before):
        words = words[: at - 1] + words[at + 1 :]
    return " ".join(words).replace("{model}", model)


def _missing_path(f: Facts) -> tuple[str, str] | None:
    """(flag, "file" | "directory" | "path") when the direct guard is a failed existence check
    of the path a flag names (`not os.path.isfile(self.ssl_keyfile)`)."""
    for a in f.direct:
        if a.flag is None and a.topic == "file" and not a.holds and len(a.flags) == 1:
            what = a.says[0].rsplit(" ", 1)[-1]
            return a.flags[0], what
    return None


def _is_arg_of(arg: str, flag: str | None) -> bool:
    return arg == flag or arg.startswith(f"{flag}=")


def _arg_for(atom: Atom, decls: dict[str, FlagDecl], *, fixing: bool = False) -> str | None:
    """A command-line fragment making the atom true (None: leave the flag out)."""
    flag = atom.flag
    if flag is None:
        return None
    choices = _choices(flag, decls)
    default = _default(flag, decls)
    if atom.op in ("unset", "is None"):
        return None  # achieved by leaving the flag out
    if atom.op in ("set", "is not None"):
        # `x is not None` is how code tests a flag that takes a value, even when undeclared here;
        # so is a config field (`--speculative-config.method`): it is always given a value.
        takes = _takes_value(decls.get(flag)) or (
            (atom.op == "is not None" or "." in flag) and flag not in decls
        )
        return f"{flag}={sample_value(flag, decls)}" if takes else flag
    if atom.op in ("!=", "not in"):
        banned = atom.value if atom.op == "not in" else (atom.value,)
        if default is not None and default not in banned and not isinstance(default, bool):
            # Spelled out even when it is the default: the reader sees the value that works.
            return f"{flag}={show_value(default)}"
        return cli_arg(flag, atom.op, atom.value, choices=choices)
    return cli_arg(flag, atom.op, atom.value, choices=choices)


def _dropping_works(atom: Atom, decls: dict[str, FlagDecl]) -> bool:
    """Whether leaving the flag out makes `atom` (a negated condition) true: its default must."""
    if atom.op in ("unset", "is None"):
        return True
    if atom.op in ("!=", "not in"):
        d = decls.get(atom.flag or "")
        if d is None:
            return True  # undeclared here: assume the default is harmless
        default = _default(atom.flag or "", decls)
        if default is None and d.default != "None":
            return False  # a computed default may well be the banned value
        banned = atom.value if atom.op == "not in" else (atom.value,)
        return default not in banned
    return False


def _takes_value(decl: FlagDecl | None) -> bool:
    """A flag declared with a value (not a store_true switch), so `--x` alone is not enough."""
    if decl is None or (decl.action or "").startswith(("store_", "argparse.BooleanOptional")):
        return False
    if decl.action and "BooleanOptional" in decl.action:
        return False
    kind = (decl.type or "").replace("Optional[", "").strip("]")
    if _BOOL_OR_NONE.fullmatch(kind):
        return False  # `bool | None`: a switch (`--x` / `--no-x`), never `--x=X`
    return bool(decl.choices) or (bool(kind) and kind not in ("bool", "'bool'"))


_BOOL_OR_NONE = re.compile(r"['\"]?(?:bool \| None|None \| bool|Union\[bool, None\])['\"]?")


def sample_value(flag: str, decls: dict[str, FlagDecl]) -> str:
    """A realistic value for a flag that takes one: a declared choice, the default or 1 for
    numbers, a path for path-like flags, else the argparse metavar (the flag's dest in capitals)."""
    d = decls.get(flag)
    if d and d.choices:
        return d.choices[0]
    kind = (d.type if d else "") or ""
    default = _default(flag, decls)
    if "int" in kind or "float" in kind:
        ok = isinstance(default, (int, float)) and not isinstance(default, bool) and default > 0
        return show_value(default) if ok else "1"
    helptext = ((d.help if d else "") or "").lower()
    if re.search(r"(file|path|dir|certs?)$", flag) or re.search(
        r"\b(path (to|of)|file path)\b", helptext
    ):
        is_dir = flag.endswith("dir") or re.search(r"\bdirectory\b", helptext)
        # Named after the flag, so two path flags in one command stay apart.
        return "/path/to/" + flag.lstrip("-") + ("/" if is_dir else "")
    return dest_of(flag).rpartition(".")[2].upper()


def handling_strategy(f: Facts, background: str, validation: str | None) -> str:
    if f.site.severity in ("warning", "info"):
        return "acknowledge"
    if background == "internal-invariant":
        return "report-bug"
    if background == "missing-package":
        return "dependency-install"
    if background in (
        "hardware-unsupported",
        "platform-unsupported",
        "environment",
        "missing-file",
    ):
        return "environment-check"
    if validation:
        return "validation"
    return "configuration-change"


def validation_code(f: Facts) -> str | None:
    """A pre-flight check over parsed `args` reproducing the guards, when they only read flags."""
    if f.site.severity not in ("error", "critical"):
        return None
    terms = []
    for r in f.readings:
        if r.guard.kind == "passed":
            # An earlier check of the validator is an alternative, not a path condition: had it
            # failed, the launch would have stopped there with its own error. The pre-flight
            # check of this error tests only this error's own path (the trigger text still
            # mentions the earlier checks).
            continue
        expr = _args_expr(r.guard.test, r)
        if expr is None:
            return None
        terms.append(expr if r.guard.holds else _negate(expr))
    if not terms:
        return None
    cond = terms[0] if len(terms) == 1 else "(\n    " + "\n    and ".join(terms) + "\n)"
    head = "import os\n\n" if "os.path." in cond else ""
    return f"{head}if {cond}:\n    raise SystemExit({_check_message(f)})"


def _check_message(f: Facts) -> str:
    """The message as a Python literal; an f-string over `args` when every runtime value in it
    is a flag, so the check prints what the program would."""
    if not f.message:
        return repr(f"{f.site.error_class or 'error'} at {f.site.file}")
    dests = {dest_of(fl) for fl in f.site.flags}
    out = []
    for part in f.site.template.parts:
        if part.is_literal:
            out.append((part.text or "").replace("{", "{{").replace("}", "}}"))
            continue
        node = parse(part.expr or "")
        if node is None:
            return repr(f.message)
        expr = ast.unparse(_ToArgs(dests).visit(node))
        if not all(
            _is_args_attr(n) or isinstance(n, ast.Name) and n.id == "args"
            for n in ast.walk(parse(expr))
            if isinstance(n, (ast.Name, ast.Attribute))
        ):
            return repr(f.message)
        conv = f"!{part.conversion}" if part.conversion in ("r", "s", "a") else ""
        spec = (
            f":{part.format_spec}"
            if part.format_spec and not part.format_spec.startswith("%")
            else ""
        )
        out.append("{" + expr + conv + spec + "}")
    body = "".join(out)
    if body == f.message.replace("{", "{{").replace("}", "}}"):
        return repr(f.message)
    literal = repr(body)
    return "f" + literal


_SAFE_CALLS = {"len", "isinstance", "min", "max", "abs"}
_SAFE_NAMES = {"args", "list", "dict", "str", "int", "float", "tuple", "bool", "set", "os"}
_SAFE_METHODS = {"startswith", "endswith", "lower", "upper", "strip"}
_OS_PATH = {"isfile", "isdir", "exists"}


def _args_expr(test: str, r: Reading) -> str | None:
    """The guard over parsed `args`, or None when it reads anything but flags (a platform
    probe, a model attribute, a local variable). Calls are limited to a few pure builtins,
    string methods on a flag and `os.path` existence checks, so the check runs anywhere."""
    node = parse(test)
    if node is None:
        return None
    dests = {dest_of(a.flag) for a in r.atoms if a.flag} | {
        dest_of(fl) for a in r.atoms for fl in a.flags
    }
    dests |= {dest_of(fl) for fl in r.guard.flags}
    node = _ToArgs(dests).visit(node)
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id not in _SAFE_NAMES:
            return None
        if isinstance(n, ast.Call) and not _safe_call(n.func):
            return None
        if isinstance(n, (ast.Subscript, ast.Lambda, ast.NamedExpr, ast.Await)):
            return None
        if isinstance(n, ast.Attribute) and not (_is_args_attr(n) or _safe_call_target(n)):
            return None
    return ast.unparse(node)


def _is_args_attr(n: ast.expr) -> bool:
    return isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "args"


def _safe_call(func: ast.expr) -> bool:
    if isinstance(func, ast.Name):
        return func.id in _SAFE_CALLS
    return _safe_call_target(func)


def _safe_call_target(n: ast.expr) -> bool:
    """`args.x.startswith`, `os.path.isfile` (and the `os.path` in it)."""
    if not isinstance(n, ast.Attribute):
        return False
    if n.attr in _SAFE_METHODS and _is_args_attr(n.value):
        return True
    if n.attr == "path" and isinstance(n.value, ast.Name) and n.value.id == "os":
        return True
    return (
        n.attr in _OS_PATH
        and isinstance(n.value, ast.Attribute)
        and n.value.attr == "path"
        and isinstance(n.value.value, ast.Name)
        and n.value.value.id == "os"
    )


class _ToArgs(ast.NodeTransformer):
    def __init__(self, dests: set[str]) -> None:
        self.dests = dests

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if node.attr in self.dests:
            return ast.Attribute(
                value=ast.Name(id="args", ctx=ast.Load()), attr=node.attr, ctx=ast.Load()
            )
        return self.generic_visit(node)


_INVERSE = {
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot,
    ast.IsNot: ast.Is, ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE, ast.LtE: ast.Gt,
}  # fmt: skip


def _negate(expr: str) -> str:
    """`not expr`, written the way a person would: `x == 1` -> `x != 1`, `not x` -> `x`."""
    node = parse(expr)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return ast.unparse(node.operand)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        node.ops = [_INVERSE[type(node.ops[0])]()]
        return ast.unparse(node)
    if isinstance(node, (ast.Attribute, ast.Name)):
        return f"not {expr}"
    return f"not ({expr})"


def type_guard(f: Facts) -> str | None:
    """The isinstance check the direct condition performs, over parsed `args`."""
    for r in f.readings:
        if r.role != "direct" or "isinstance(" not in r.guard.test:
            continue
        node = parse(r.guard.test)
        for n in ast.walk(node) if node is not None else ():
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Name)
                and n.func.id == "isinstance"
            ):
                dests = {dest_of(fl) for fl in (*r.guard.flags, *f.site.flags)}
                return ast.unparse(_ToArgs(dests).visit(n))
    return None


def try_catch_pattern(f: Facts) -> str | None:
    """How a program launching the project catches this error: the profile's import and the
    call that runs the checks (`[knowledge.catch]`), for raises in the files that call reaches."""
    site, profile = f.site, f.profile
    if site.kind != "raise" or not site.error_class or not f.pattern or not profile.catch_call:
        return None
    if not _in_files(site.file, profile.catch_files):
        return None
    handle = next(iter(solutions(f)), "adjust the launch arguments")
    head = f"import re\n\n{profile.catch_import}\n\n" if profile.catch_import else "import re\n\n"
    call = "".join(f"    {line}\n" for line in profile.catch_call.splitlines())
    return (
        f"{head}try:\n{call}"
        f"except {site.error_class} as exc:\n"
        f"    if not re.search({f.pattern!r}, str(exc)):\n"
        "        raise\n"
        f"    ...  # {handle}"
    )


def prevention_tips(f: Facts, background: str, validation: str | None = None) -> list[str]:
    tips = []
    flags_on = [a.flag for a in f.context + f.direct if a.flag and a.positive]
    if background == "unsupported-config-combination" and len(flags_on) >= 2:
        tips.append(f"Do not put {join_words(list(dict.fromkeys(flags_on)))} in one launch profile")
    for a in f.direct:
        ch = _choices(a.flag, f.decls)
        if ch:
            tips.append(f"Only pass declared values to {a.flag}: {', '.join(ch)}")
    if background == "deprecated-option":
        tips.append(
            f"Update launch scripts when upgrading {f.profile.product}; deprecated options are "
            "removed later"
        )
    if f.site.kind != "assert" and validation:
        tips.append("Run the validationCode check over your arguments before launching")
    return list(dict.fromkeys(tips))


_TOPICS = (
    ("hisparse", r"hisparse"),
    ("kv-cache", r"kv[-_ ]?cache"),
    ("radix-cache", r"radix"),
    ("hierarchical-cache", r"hierarchical[-_ ]cache|hicache"),
    ("lmcache", r"lmcache"),
    ("cuda-graph", r"cuda[-_ ]graph"),
    ("speculative-decoding", r"speculative|eagle|dspark|\bdraft"),
    ("disaggregation", r"disaggregation|\bpd\b"),
    ("attention-backend", r"attention[-_ ]backend|prefill[-_ ]backend|decode[-_ ]backend"),
    ("quantization", r"quantiz|\bfp8|fp4|mxfp8|\bint[48]\b|\bawq\b|gptq"),
    ("lora", r"\blora"),
    ("moe", r"\bmoe\b|expert"),
    ("parallelism", r"\b(tp|pp|dp|ep|cp|dcp|attn-cp)[-_]size|parallel"),
    ("memory", r"mem[-_]fraction|unified[-_]memory|memory"),
    ("multimodal", r"multimodal|vision|\bimage"),
    ("embedding", r"embedding"),
    ("chunked-prefill", r"chunked[-_]prefill"),
    ("scheduling", r"schedul|priority"),
    ("mamba", r"mamba"),
    ("sparse-attention", r"sparse"),
    ("tokenizer", r"tokenizer"),
    ("grammar", r"grammar"),
    ("sampling", r"sampling"),
)


def tags(f: Facts, repo: str) -> list[str]:
    main = [a.flag or " ".join(a.flags) for a in f.context + f.direct]
    text = (" ".join(main) + " " + f.literal).lower()
    out = []
    name = repo.rsplit("/", 1)[-1].lower()
    if re.fullmatch(r"[a-z0-9][a-z0-9.+_-]*", name):
        out.append(name)
    out.extend(tag for tag, rx in _TOPICS if re.search(rx, text))
    out.extend(tag for tag, globs in f.profile.file_tags if _in_files(f.site.file, globs))
    return list(dict.fromkeys(out))


_BACKGROUND = (
    ("deprecated-option", r"deprecat|renamed|will be removed|no longer supported"),
    (
        "missing-package",
        r"pip install|not installed|no module named|please install|install \w+ to|"
        r"check (the )?\w+ install|failed to import|could not import|importerror",
    ),
    (
        "hardware-unsupported",
        r"\bsm ?\d{2,3}|blackwell|hopper|ampere|compute capability|\b[abh]100\b|\bh[12]00\b|"
        r"\bb200\b",
    ),
    (
        "platform-unsupported",
        r"\b(rocm|hip|npu|xpu|mps|musa|hpu|ascend|non-cuda)\b|\bcpu\b(?! memory)|platforms?\b|"
        r"only supports? cuda|on cuda devices",
    ),
    ("hardware-unsupported", r"\bgpus?\b(?! memory)"),
    (
        "model-unsupported",
        r"\b(this|the) model\b|\bmodels? only\b|support\w* [\w /-]{0,40}\bmodels?\b|"
        r"for \{model_arch\}|\{model_arch\} does not|for \w+For(CausalLM|ConditionalGeneration)",
    ),
    (
        "unsupported-config-combination",
        r"mutually exclusive|incompatible|not (yet )?compatible|cannot be (used|combined|enabled) "
        r"(together|at the same time|with)|not (yet )?supported (with|together|when)|"
        r"does not (currently )?support --|conflicts? with|only one of|has no effect without",
    ),
    (
        "missing-dependency-flag",
        r"requires? --|must be (set|enabled|specified|provided) (when|with|if)|"
        r"only (be )?(supported|used|valid|available) (when|with|if)|needs? --|"
        r"should be used with|requires? .{0,40}to be (set|enabled)|"
        r"please (enable|set) .{0,60} when (setting|using)|is required (for|when)",
    ),
    (
        "out-of-range",
        r"\brange\b|between|greater than|less than|at least|at most|\bpositive|non-negative|"
        r"\bexceed|too (large|small|big|many|few)|divisible|multiple of",
    ),
)
_MISSING_FILE = re.compile(
    r"(file|path|directory|dir)\b[^.]{0,40}\b(not found|does not exist|not exist)", re.I
)


@functools.lru_cache(maxsize=16)
def _env_re(prefixes: tuple[str, ...]) -> re.Pattern[str]:
    """A message naming one of the profile's environment variables (`APP_X`) is about the
    environment."""
    names = "|".join(re.escape(p) for p in prefixes)
    return re.compile((rf"\b({names})_[A-Z0-9_]+\b|" if names else "") + "environment variable")


_INTERNAL = re.compile(
    r"must (run|be called) (after|before)|should not happen|unreachable|\bbug\b|internal error",
    re.I,
)
_ADJUSTED = re.compile(
    r"disabl|enabl|set to|setting|automatically|adjust|overrid|fall(ing)? ?back|forc|reset|ignor|"
    r"changed? to|changing|switch|defaults? to|\bdefault\b|will use|using|\buse \S+ as\b|"
    r"turned (on|off)",
    re.I,
)
# A notice that these words describe is about a cause or an advice, not about a setting changed.
_NOT_SUPPORTED = re.compile(
    r"not (yet )?supported|does not support|doesn't support|only supports?|unsupported|"
    r"has no effect|you should|compatibility issues",
    re.I,
)
# What a guard probing the machine says about the cause, when the message does not say it.
_TOPIC_BACKGROUND = {
    "package": "missing-package",
    "file": "missing-file",
    "platform": "platform-unsupported",
    "hardware": "hardware-unsupported",
    "env": "environment",
    "model": "model-unsupported",
}


def background_tag(f: Facts) -> str:
    """The closed cause classification (enum in record.schema.json), first rule that fits.

    Order: what the message says about a cause outside the launch arguments (deprecation,
    a missing package, a code invariant); for a notice, whether it reports a setting changed
    for the user; then the message's own words; then what the guards probe (the platform,
    the GPU, a package, a file); then the shape of the flag conditions.
    """
    site = f.site
    low = f.literal.lower()
    notice = site.severity in ("warning", "info")
    if site.template.is_empty:
        return "internal-invariant"
    for tag, rx in _BACKGROUND[:2]:
        if re.search(rx, low):
            return tag
    if _guard_topic(f, failing=True) == "package" or any(
        r.guard.kind == "try" and "ImportError" in r.guard.test for r in f.readings
    ):
        return "missing-package"
    if _INTERNAL.search(f.literal):
        return "internal-invariant"
    if _MISSING_FILE.search(f.literal) or _guard_topic(f, failing=True) == "file":
        return "missing-file"
    if notice and _ADJUSTED.search(f.literal) and not _NOT_SUPPORTED.search(f.literal):
        return "auto-adjusted"
    for tag, rx in _BACKGROUND[2:]:
        if re.search(rx, low):
            return tag
        if tag == "model-unsupported" and re.search(
            r"\{model_arch\}[^{]* not (yet )?supported|\{model_arch\} does not support", f.message
        ):
            return tag  # the architecture is the runtime value: only the template shows it
    if _env_re(f.profile.env_prefixes).search(f.literal):
        return "environment"
    topic = _guard_topic(f)
    if topic in ("package", "file"):
        topic = ""  # a probe that succeeded ("fastlib is installed") is no missing package
    if topic in _TOPIC_BACKGROUND and not (notice and topic == "model"):
        return _TOPIC_BACKGROUND[topic]
    if notice:
        return "auto-adjusted" if _ADJUSTED.search(f.literal) else "advisory"
    if re.search(
        r"invalid|unknown|unsupported|not supported|not a valid|one of|expect|got|must be|"
        r"should be|only supports?|cannot|can't|must contain|not allowed|does not support|"
        r"doesn't support",
        low,
    ):
        return "invalid-value"
    if any(a.flag and a.op in (">", ">=", "<", "<=") for a in f.direct):
        return "out-of-range"
    direct_flags = [a.flag for a in f.direct if a.flag]
    if len(set(direct_flags + [a.flag for a in f.context if a.flag])) >= 2:
        return "unsupported-config-combination"
    if direct_flags:
        return "invalid-value"
    return "other"


def _guard_topic(f: Facts, *, failing: bool = False) -> str:
    """The topic of the direct guard's probe of something besides flags (`failing`: only a
    probe that failed, e.g. `not is_flashinfer_available()`)."""
    for r in f.readings:
        if r.role != "direct":
            continue  # an enclosing `if is_npu():` frames many checks; the direct one is the cause
        for a in r.atoms:
            if a.flag is None and a.topic in _TOPIC_BACKGROUND and not (failing and a.holds):
                return a.topic
    return ""


_ERROR_TYPE = {
    "deprecated-option": "deprecation",
    "missing-package": "dependency",
    "hardware-unsupported": "compatibility",
    "platform-unsupported": "compatibility",
    "model-unsupported": "compatibility",
    "internal-invariant": "internal",
    "environment": "environment",
    "auto-adjusted": "adjustment",
    "missing-file": "environment",
    "advisory": "advisory",
}


def error_type(background: str) -> str:
    return _ERROR_TYPE.get(background, "validation")


def knowledge_fields(f: Facts, repo: str) -> dict[str, object]:
    """All knowledge fields of one record."""
    background = background_tag(f)
    validation = validation_code(f)
    return {
        "documentation": documentation(f),
        "triggerScenarios": trigger_scenarios(f),
        "commonSituations": common_situations(f),
        "solutions": solutions(f),
        "exampleFix": example_fix(f),
        "handlingStrategy": handling_strategy(f, background, validation),
        "validationCode": validation,
        "typeGuard": type_guard(f),
        "tryCatchPattern": try_catch_pattern(f),
        "preventionTips": prevention_tips(f, background, validation),
        "tags": tags(f, repo),
        "backgroundTag": background,
        "errorType": error_type(background),
    }
