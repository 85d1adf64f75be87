"""Fixes: the advice in words (`solutions`, `preventionTips`) and two full launch commands
(`exampleFix`), before and after.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from kverr.extractor.pysource import expr_or_none
from kverr.records.conditions import (
    Atom,
    cli_arg,
    join_words,
    or_list,
    phrase,
    show_value,
)
from kverr.records.knowledge import notices
from kverr.records.knowledge.facts import (
    Facts,
    _choices,
    flag_default,
    holds_for,
    invented,
    is_switch,
    meets_default,
    sample_value,
    takes_value,
    typical,
)
from kverr.records.knowledge.text import _IMPERATIVE, _advice_sentences, capitalised

from kverr.ftypes import Docs, FlagDecl, Profile
from kverr.relations import relation_words

_RECOMMENDS = re.compile(r"\b(it is|we)\s+(strongly\s+)?recommend(ed)?\b", re.I)
_NAMES_FLAG = re.compile(r"(^|[\s`'\"(])--\w")


def solutions(f: Facts) -> list[str]:
    """Fixes: imperative sentences of the message, then the negation of the direct condition,
    then giving up the validator's own feature."""
    out = message_advice(f)
    if notices.is_notice(f):
        # Expected behaviour: only the message's advice and making the code's choice yourself;
        # never giving up a flag the launch asked for.
        found = list(dict.fromkeys(out + notices.solutions(f)))
        return found or [s for s in (notices.nothing_to_change(f),) if s]
    missing = _missing_path(f)
    if missing:
        out.append(f"Point {missing[0]} at an existing {missing[1]}")
    using = [phrase(a) for a in f.context if a.positive]
    for atom in f.direct:
        fix = fix_words(atom, f.decls)
        if fix and missing and atom.op == "set":
            continue  # removing the path flag is not the fix for a wrong path
        if fix:
            if atom.op == "set" and using:
                fix += " when using " + join_words(using)
            out.append(fix)
    for atom in f.context:
        if f.served:
            break  # a request's own values fail it: giving up the launch's feature is no fix
        if atom.op == "set":
            out.append(give_up_words(atom.flag))
        elif atom.positive:
            out.append(fix_words(atom, f.decls))
    return list(dict.fromkeys(out))


def message_advice(f: Facts) -> list[str]:
    """The message's own advice: its imperative sentences, and a sentence recommending
    something about a flag."""
    out: list[str] = []
    notice = notices.is_notice(f)
    for s in _advice_sentences(f.message):
        # A notice often says what the code itself does ("Disable X for model Y"): only a
        # sentence that names a flag or asks the user ("Please ...") is advice there.
        if notice and not (_NAMES_FLAG.search(s) or re.match(r"(please|consider|try)\b", s, re.I)):
            continue
        if _IMPERATIVE.match(s) and "{" not in s:  # "set it to one of {CHOICES}" shows no values
            s = re.sub(r"^(please|you can|you should|you need to)\s+", "", s, flags=re.I).rstrip(
                ". "
            )
            out.append(capitalised(s))
        elif _RECOMMENDS.search(s) and _NAMES_FLAG.search(s) and "{" not in s:
            # "If you want X, it is recommended not using `--y`": the message's advice as said
            out.append(capitalised(s.rstrip(". ")))
    return out


def give_up_words(flag: str | None) -> str:
    """The solution that gives up the feature an enclosing condition is about."""
    return f"Remove {flag} if the deployment can do without it"


def fix_words(atom: Atom, decls: dict[str, FlagDecl]) -> str:
    """The solution that turns the check's own condition `atom` around, in words."""
    flag, v = atom.flag, atom.value
    if flag is None:
        return _probe_fix(atom)
    choices = _choices(flag, decls)
    # A long choice list is noise in a sentence; preventionTips lists it in full.
    allowed = f" (declared choices: {', '.join(choices)})" if choices and len(choices) <= 6 else ""
    if atom.op == "unset" and _truthy_default(flag, decls):
        default = show_value(flag_default(flag, decls))
        return f"Give {flag} a non-empty value, or leave it out for its default ({default})"
    words = {
        "set": lambda: f"Remove {flag}",
        "unset": lambda: f"Add {flag}",
        "==": lambda: f"Use a {flag} value other than {show_value(v)}{allowed}",
        "!=": lambda: f"Set {flag}={show_value(v)}",
        "in": lambda: f"Set {flag} to a value other than {_list(v)}{allowed}",
        "not in": lambda: f"Set {flag} to {'one of ' if len(v) > 1 else ''}{_list(v)}",
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
    kept = _keep_expr(atom.text, not atom.holds)  # ("keep --tp-size a multiple of --dp-size")
    if kept:
        made = kept.removeprefix("keep ").replace(" below ", " less than ")
        return "Make " + made.replace(" above ", " greater than ")
    if len(atom.flags) == 1 and goal.startswith(atom.flags[0] + " "):
        goal = "it" + goal.removeprefix(atom.flags[0])  # "so that it does not contain ' '"
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


def report_it(f: Facts) -> str:
    """The one advice for a check the code promises never to reach."""
    return (
        f"Report it to the {f.profile.product} project with the full launch command: the "
        "message says the code settles this before the check, so no launch option is known "
        "to cause it"
    )


def example_fix(f: Facts) -> str:
    """`# before` a launch command that reaches the site, `# after` the same command with the
    direct condition negated (else an enclosing one); empty when no flag-level fix is known."""
    if f.served and not any(a.flag for a in f.direct):
        return ""  # a request's own values fail it: no launch to change
    chosen: dict[str, str] = {}  # flag -> fragment; a later fact about a flag refines it
    reached = False  # some flag fact holds at its default: a bare launch gets there
    for atom in f.context + f.passed + f.direct:
        if atom.flag and meets_default(atom, f.decls):
            chosen.pop(atom.flag, None)  # the default already does it: no fragment
            reached = True
            continue
        arg = _arg_for(atom, f.decls, docs=f.docs) if atom.flag else None
        if arg and atom.flag:
            chosen.pop(atom.flag, None)
            chosen[atom.flag] = arg
    if _misses(chosen, f):
        return ""  # the before line would not reach the check: no example is better than that
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
        fixed = _arg_for(target.negated(), f.decls, fixing=True, docs=f.docs)
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


def _misses(chosen: dict[str, str], f: Facts) -> bool:
    """Whether a condition in code the launch must meet names another value of an option the
    before line sets: `backend_str == "fa3"` on the path while the line says
    `--attention-backend=triton` (the code reads the option through a local the extractor
    does not follow, so only the value the code names reaches the check)."""
    for atom in (*f.context, *f.direct):
        if atom.op != "expr" or atom.flag or atom.topic:
            continue
        wanted = _named_values(atom)
        for flag, arg in chosen.items():
            choices = _choices(flag, f.decls) or ()
            given = arg.partition("=")[2]
            if given and given in choices and wanted & set(choices) and given not in wanted:
                return True
    return False


def _named_values(atom: Atom) -> set[str]:
    """The strings a code condition that holds tests for equality: `x == "fa3"`, `x in
    ("fa3", "fa4")` (nothing for a condition that fails or another comparison)."""
    node = expr_or_none(atom.text)
    if node is None:
        return set()
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
        return set()
    op, right = node.ops[0], node.comparators[0]
    if not ((isinstance(op, ast.Eq) and atom.holds) or (isinstance(op, ast.NotEq) and not atom.holds)
            or (isinstance(op, ast.In) and atom.holds)):  # fmt: skip
        return set()
    values = right.elts if isinstance(right, (ast.Tuple, ast.List, ast.Set)) else [right]
    return {v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str)}


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


def _arg_for(
    atom: Atom, decls: dict[str, FlagDecl], *, fixing: bool = False, docs: Docs | None = None
) -> str | None:
    """A command-line fragment making the atom true (None: leave the flag out)."""
    arg = _arg(atom, decls, fixing, docs)
    if arg is not None and atom.flag and "." in atom.flag and arg == atom.flag:
        return f"{arg}=true"  # a JSON option's field is never a bare switch: it takes a value
    return arg


def _arg(
    atom: Atom, decls: dict[str, FlagDecl], fixing: bool, docs: Docs | None = None
) -> str | None:
    flag = atom.flag
    if flag is None:
        return None
    choices = _choices(flag, decls)
    default = flag_default(flag, decls)
    if atom.op in ("unset", "is None"):
        if atom.op == "unset" and _truthy_default(flag, decls):
            return _falsy_arg(flag, decls)  # leaving it out keeps the default, which is truthy
        return None  # achieved by leaving the flag out
    if fixing and meets_default(atom, decls) and atom.only_given:
        return None  # the default already does it: drop the flag
    if atom.only_given:
        # `x is not None` is how code tests a flag that takes a value, even when undeclared here;
        # so is a config field (`--speculative-config.method`): it is always given a value.
        takes = takes_value(decls.get(flag)) or (
            (atom.op == "is not None" or "." in flag) and flag not in decls
        )
        if "." in flag and is_switch(decls.get(flag)):
            return f"{flag}=true"
        return f"{flag}={sample_value(flag, decls, docs)}" if takes else flag
    if atom.op in ("!=", "not in"):
        banned = atom.value if atom.op == "not in" else (atom.value,)
        if default is not None and default not in banned and not isinstance(default, bool):
            # Spelled out even when it is the default: the reader sees the value that works.
            return f"{flag}={show_value(default)}"
        return cli_arg(flag, atom.op, atom.value, choices=choices)
    if atom.op in (">", ">=", "<", "<="):
        # a value deployments use (the project's launches, the help) before the boundary
        liked = next((x for x in typical(flag, decls, docs) if holds_for(atom, x)), None)
        if liked is not None:
            return f"{flag}={show_value(liked)}"
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
        default = flag_default(atom.flag or "", decls)
        if default is None and d.default != "None":
            return False  # a computed default may well be the banned value
        banned = atom.value if atom.op == "not in" else (atom.value,)
        return default not in banned
    return False


def _truthy_default(flag: str, decls: dict[str, FlagDecl]) -> bool:
    return bool(flag_default(flag, decls))


def _falsy_arg(flag: str, decls: dict[str, FlagDecl]) -> str | None:
    """The fragment that gives a flag with a truthy default a falsy value: `--no-x` for a
    BooleanOptionalAction, an empty string, a zero; None when the command line cannot."""
    d, default = decls.get(flag), flag_default(flag, decls)
    if d is not None and "BooleanOptional" in (d.action or ""):
        return "--no-" + flag.removeprefix("--")
    if isinstance(default, str):
        return f"{flag}=''"
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        return f"{flag}=0"
    return None


def prevention_tips(f: Facts, background: str) -> list[str]:
    """Tips that keep the error from happening: the rule the check enforces, stated in flags
    ("Keep --tp-size a multiple of --dp-size when --enable-dp-attention is set"); for a
    deprecation, the option that replaces it. The build adds the `kverr check` tip once the
    fix is known (records.knowledge.after)."""
    tips = []
    rule = invariant(f)
    if rule:
        tips.append(rule)
    if background == "deprecated-option":
        old, new = replacement(f.message, f.site.flags)
        if old and new:
            tips.append(f"Replace {old} with {new} in launch scripts and config files")
    return tips


def invariant(f: Facts) -> str:
    """The rule an error's check enforces, as what to keep true and when; "" for a notice,
    or when the condition is not about flags a user sets."""
    if f.site.severity not in ("error", "critical"):
        return ""
    direct = [a for a in f.direct if a.flag or a.flags]
    if not direct:
        return ""
    primary = direct[-1]
    keep = keep_words(primary.negated())
    if not keep:
        return ""
    # (a condition on the option the tip sets is the tip's own: "set --x to a when --x is
    # set"; state a user cannot set, such as `model_config` being there, is no condition to
    # keep, but what the model's config holds is one)
    others = [
        a
        for a in (*f.context, *(a for a in f.direct if a is not primary))
        if a.flag is None or a.flag != primary.flag
    ]
    when = [_when(a) for a in others if a.flag or a.flags or a.topic or "hf_config" in a.text]
    when = [w for w in dict.fromkeys(when) if w]
    text = capitalised(keep)
    return f"{text} when {join_words(when)}" if when else text


def _when(a: Atom) -> str:
    if a.flag is None:
        return f"serving {phrase(a)}" if a.topic == "model" and a.holds else phrase(a)
    if a.only_given:
        return f"{a.flag} is set"
    if a.op in ("unset", "is None"):
        return f"{a.flag} is not given"
    return phrase(a)


def keep_words(atom: Atom) -> str:
    """What to keep true so that `atom` holds, in flags: "leave --x out", "keep --x at most
    4", "keep --tp-size a multiple of --dp-size"; "" when it is not about flags."""
    flag, v = atom.flag, atom.value
    if flag is None:
        return _keep_expr(atom.text, atom.holds) if atom.flags else ""
    if atom.op == "==":
        if v is True:
            return f"pass {flag}"
        if v is False or v is None:
            return f"leave {flag} out"
        return f"set {flag} to {show_value(v)}"
    words = {
        "unset": f"leave {flag} out",
        "set": f"pass {flag}",
        "!=": f"keep {flag} other than {show_value(v)}",
        "in": f"set {flag} to {or_list(v)}" if isinstance(v, tuple) else "",
        "not in": f"keep {flag} other than {or_list(v)}" if isinstance(v, tuple) else "",
        ">": f"keep {flag} above {show_value(v)}",
        ">=": f"keep {flag} at least {show_value(v)}",
        "<": f"keep {flag} below {show_value(v)}",
        "<=": f"keep {flag} at most {show_value(v)}",
        "is None": f"leave {flag} unset",
        "is not None": f"pass {flag}",
    }
    return words.get(atom.op, "")


def _keep_expr(text: str, holds: bool) -> str:
    """A comparison over flags as what to keep: `--tp-size % --dp-size == 0` holding ->
    "keep --tp-size a multiple of --dp-size"; `a > b` failing -> "keep a at most b"."""
    said = relation_words(text, holds)
    return f"keep {said}" if said else ""


_REPLACED = re.compile(
    r"\b(?:use|replaced by|renamed to|in favou?r of|switch to|instead of it,? use)\s+[`'\"]?"
    r"(--[a-z][a-z0-9-]*[a-z0-9]|[A-Z][A-Z0-9]*_[A-Z0-9_]+)",
    re.I,
)


def replacement(message: str, flags: Sequence[str]) -> tuple[str, str]:
    """(old, new) of a deprecation message: the option it names as the successor ("please
    use --new instead"), and the deprecated one (the first other option or variable it
    names, else the check's first flag); ("", "") when it names no successor."""
    m = _REPLACED.search(message)
    if m is None:
        return "", ""
    new = m.group(1)
    named = [w for w in re.findall(r"--[a-z][a-z0-9-]*[a-z0-9]|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b",
                                   message) if w != new]  # fmt: skip
    old = named[0] if named else next((fl for fl in flags if fl != new), "")
    return old, new
