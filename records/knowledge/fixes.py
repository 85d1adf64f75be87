"""Fixes: the advice in words (`solutions`, `preventionTips`) and two full launch commands
(`exampleFix`), before and after.
"""

from __future__ import annotations

import re

from kverr.records.conditions import (
    Atom,
    cli_arg,
    join_words,
    phrase,
    show_value,
)
from kverr.records.knowledge import notices
from kverr.records.knowledge.facts import (
    Facts,
    _choices,
    _default,
    _takes_value,
    invented,
    is_switch,
    meets_default,
    sample_value,
)
from kverr.records.knowledge.text import _IMPERATIVE, _advice_sentences

from kverr.ftypes import FlagDecl, Profile


def solutions(f: Facts) -> list[str]:
    """Fixes: imperative sentences of the message, then the negation of the direct condition,
    then giving up the validator's own feature."""
    out: list[str] = []
    notice = notices.is_notice(f)
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
    if notice:
        # Expected behaviour: only the message's advice and making the code's choice yourself;
        # never giving up a flag the launch asked for.
        return list(dict.fromkeys(out + notices.solutions(f))) or [notices.nothing_to_change(f)]
    missing = _missing_path(f)
    if missing:
        out.append(f"Point {missing[0]} at an existing {missing[1]}")
    using = [phrase(a) for a in f.context if a.positive]
    for atom in f.direct:
        fix = _fix_words(atom, f.decls)
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
    if atom.op == "unset" and _truthy_default(flag, decls):
        default = show_value(_default(flag, decls))
        return f"Give {flag} a non-empty value, or leave it out for its default ({default})"
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
        # What the launch needs; "not on ROCm" is no advice (the other platforms are many).
        return f"Needs {goal.removeprefix('on ')}" if goal.startswith("on ") else ""
    if atom.topic == "package":
        # Installing is advice; uninstalling a package that works never is.
        pkg = re.fullmatch(r"(\S+) is installed", goal)
        return f"Install {pkg.group(1)}" if pkg else ""
    if atom.topic == "env":
        return _env_fix(goal)
    if atom.topic or not atom.flags or "{" in goal:
        return ""  # the model, a file (handled apart), code that reads no flag, or a set literal
    return f"Change {join_words(list(atom.flags))} so that {goal}"


def _env_fix(goal: str) -> str:
    """`APP_X is enabled` -> Set APP_X=1; `... is not enabled` / `is not set` -> Unset it."""
    m = re.fullmatch(r"(\w+) is (not )?(enabled|set)", goal)
    if m is None:
        return f"Make sure {goal}"
    name, negative, how = m.groups()
    if negative:
        return f"Unset {name}"
    return f"Set {name}=1" if how == "enabled" else f"Set {name}"


def _list(values: tuple) -> str:
    return ", ".join(show_value(x) for x in values)


def example_fix(f: Facts) -> str:
    """`# before` a launch command that reaches the site, `# after` the same command with the
    direct condition negated (else an enclosing one); empty when no flag-level fix is known."""
    chosen: dict[str, str] = {}  # flag -> fragment; a later fact about a flag refines it
    reached = False  # some flag fact holds at its default: a bare launch gets there
    for atom in f.context + f.passed + f.direct:
        if atom.flag and meets_default(atom, f.decls):
            chosen.pop(atom.flag, None)  # the default already does it: no fragment
            reached = True
            continue
        arg = _arg_for(atom, f.decls) if atom.flag else None
        if arg and atom.flag:
            chosen.pop(atom.flag, None)
            chosen[atom.flag] = arg
    if notices.is_notice(f):
        before = list(chosen.values())
        after = notices.example_after(f, before)
        return (_fix_text(before, after, f.profile) or "") if after is not None else ""
    missing = _missing_path(f)
    if missing:
        flag, what = missing
        chosen.pop(flag, None)
        before = [*chosen.values(), f"{flag}=/no/such/{what}"]
        after = [*chosen.values(), f"{flag}=/path/to/existing/{what}"]
        return _fix_text(before, after, f.profile) or ""
    before = list(chosen.values())
    if not before and not reached:
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
            text = _fix_text(before, after, f.profile)
            if text is None:
                continue  # this flag's value would be made up: another target may not need one
            return text
    return ""


def _fix_text(before: list[str], after: list[str], profile: Profile) -> str | None:
    """Two full launch commands (the profile's launch template), so the fix can be pasted as
    is; a fix that sets the model's own flag (`--model-path`) drops the template's.

    None when a project no verifier runs (no verify spec) would show a made-up value
    (`--x-config=X_CONFIG`): such a command is shown unverified as it is, and the user can run
    neither side of it; the solutions' words stand alone then. (With a spec the verify step
    puts values from the revision's own code in, or drops the fix.)"""
    head = _launch_head(profile.launch, profile.model, tuple(before))
    before, after = _implied(before), _implied(after)
    if not profile.verifiable() and (
        before == after
        # the launch's own model word (`MODEL`) is a name the reader picks anyway
        or any(invented(a) and not a.endswith("=" + profile.model) for a in (*before, *after))
    ):
        return None
    return f"# before\n{' '.join([head, *before])}\n# after\n{' '.join([head, *after])}"


def _implied(args: list[str]) -> list[str]:
    """Drop `--x-config=X_CONFIG` when `--x-config.field=v` is there: a field sets the option
    (a placeholder beside it would be read as the option's JSON and fail)."""
    fields = {a.split(".", 1)[0] for a in args if a.startswith("--") and "." in a.split("=", 1)[0]}
    return [a for a in args if a.split("=", 1)[0] not in fields]


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
    arg = _arg(atom, decls, fixing)
    if arg is not None and atom.flag and "." in atom.flag and arg == atom.flag:
        return f"{arg}=true"  # a JSON option's field is never a bare switch: it takes a value
    return arg


def _arg(atom: Atom, decls: dict[str, FlagDecl], fixing: bool) -> str | None:
    flag = atom.flag
    if flag is None:
        return None
    choices = _choices(flag, decls)
    default = _default(flag, decls)
    if atom.op in ("unset", "is None"):
        if atom.op == "unset" and _truthy_default(flag, decls):
            return _falsy_arg(flag, decls)  # leaving it out keeps the default, which is truthy
        return None  # achieved by leaving the flag out
    if fixing and meets_default(atom, decls) and atom.op in ("set", "is not None"):
        return None  # the default already does it: drop the flag
    if atom.op in ("set", "is not None"):
        # `x is not None` is how code tests a flag that takes a value, even when undeclared here;
        # so is a config field (`--speculative-config.method`): it is always given a value.
        takes = _takes_value(decls.get(flag)) or (
            (atom.op == "is not None" or "." in flag) and flag not in decls
        )
        if "." in flag and is_switch(decls.get(flag)):
            return f"{flag}=true"
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
    if meets_default(atom, decls):
        return True
    if atom.op == "unset" and _truthy_default(atom.flag or "", decls):
        return False
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


def _truthy_default(flag: str, decls: dict[str, FlagDecl]) -> bool:
    return bool(_default(flag, decls))


def _falsy_arg(flag: str, decls: dict[str, FlagDecl]) -> str | None:
    """The fragment that gives a flag with a truthy default a falsy value: `--no-x` for a
    BooleanOptionalAction, an empty string, a zero; None when the command line cannot."""
    d, default = decls.get(flag), _default(flag, decls)
    if d is not None and "BooleanOptional" in (d.action or ""):
        return "--no-" + flag.removeprefix("--")
    if isinstance(default, str):
        return f"{flag}=''"
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        return f"{flag}=0"
    return None


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
