"""Candidate launches for the fix search: a "before" that reaches the check, and the changes
that may fix it, most trusted first. Nothing here is shown to a user until the search has run
the revision's own check on it. Read off a record's facts (records.knowledge).

Sources of a change, in the order they are tried (FixChange.source):

- advice   the message's own words: "please use --x y", "requires --x", "remove --x",
           "one of [a, b]", values of an involved flag it names ("(fa3/fa4)")
- allowed  a value the check accepts: the other values of a membership guard, the flag's
           declared choices, its default, the boundary of a comparison
- env      an environment variable the check reads (`APP_X=1`)
- feature  turning an enclosing condition around (another value of the feature's option)
- remove   leaving out a feature flag the check is about: last, it gives the feature up

Values come from the flag declarations, which the verify step replaces with what the revision's
own parser declares (choices, default, switch or not) before asking.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable
from dataclasses import replace

from kverr.extractor.pysource import NOT_LITERAL, literal
from kverr.records.conditions import Atom, atoms_of, phrase, show_value
from kverr.records.knowledge import notices
from kverr.records.knowledge.facts import Facts, flag_default, holds_for, meets_default, typical
from kverr.records.knowledge.fixes import sample_value
from kverr.records.knowledge.text import unglued
from kverr.verify.search.reading import parse_test
from kverr.verify.search.typed import TYPO

from kverr.ftypes import Docs, FixChange, FlagDecl, Launch

_FLAG = re.compile(r"--[a-z0-9][a-z0-9-]*[a-z0-9]")
_ENV_NAME = re.compile(r"\b([A-Z][A-Z0-9]*_[A-Z0-9_]+)\b")
# "please use --x y", "set --x to y", "--x=y": an option and the value right after it.
_OPTION_VALUE = re.compile(r"(--[a-z0-9][a-z0-9-]*[a-z0-9])(?:[ =]|\s+to\s+)['\"`]?([\w.:/-]+)")
_INSTEAD = re.compile(r"\binstead\b", re.I)
_DROP_VERBS = re.compile(r"\b(remove|disable|drop|unset|do not (use|set|pass)|don't (use|set))\b")
_NEEDS = re.compile(r"\b(requires?|needs?|without|together with|along with)\b", re.I)
_LIST = re.compile(
    r"(?:one of|among|choose from|supports? only|only supports?)\s*[\[{(]([^\]})]*)[\]})]"
)


def is_switch(flag: str, decls: dict[str, FlagDecl]) -> bool:
    """A flag given alone (`--x`): declared store_true/store_false/store_const."""
    d = decls.get(flag)
    return d is not None and (d.action or "").startswith("store_") and d.action != "store"


def value_ok(flag: str, value: str, decls: dict[str, FlagDecl]) -> bool:
    """A word the message puts after a flag is its value only when the flag's declaration
    says so: one of its choices, or a number for a numeric flag ("requires --x is set" has
    no value in it)."""
    d = decls.get(flag)
    if d is None:
        return False
    if d.choices:
        return value in d.choices
    kind = (d.type or "").lower()
    if "int" in kind:
        return re.fullmatch(r"-?\d+", value) is not None
    if "float" in kind:
        return re.fullmatch(r"-?\d+(\.\d+)?", value) is not None
    return False


def set_option(launch: Launch, flag: str, value: str | None, decls: dict[str, FlagDecl]) -> Launch:
    """`launch` with `flag` set, in place when it is there already (its aliases dropped, so
    `--tp-size` replaces `--tensor-parallel-size`)."""
    same = _aliases(flag, decls)
    if any(o in same for o, _ in launch.args):
        args, done = [], False
        for o, v in launch.args:
            if o not in same:
                args.append((o, v))
            elif not done:
                args.append((flag, value))
                done = True
        return replace(launch, args=tuple(args))
    return replace(launch, args=(*launch.args, (flag, value)))


def drop_option(launch: Launch, flag: str, decls: dict[str, FlagDecl]) -> Launch:
    same = _aliases(flag, decls)
    args = tuple((o, v) for o, v in launch.args if o not in same)
    return replace(launch, args=args)


def _aliases(flag: str, decls: dict[str, FlagDecl]) -> set[str]:
    d = decls.get(flag)
    if d is None:
        return {flag}
    key = d.arg_dest or d.dest
    return {flag} | {n for n, o in decls.items() if (o.arg_dest or o.dest) == key}


def apply(launch: Launch, change: FixChange, decls: dict[str, FlagDecl]) -> Launch:
    for op, name, value in change.edits:
        if op == "set":
            launch = set_option(launch, name, value, decls)
        elif op == "drop":
            launch = drop_option(launch, name, decls)
        elif op == "env":
            env = tuple((k, v) for k, v in launch.env if k != name)
            if value is not None:
                env = (*env, (name, value))
            launch = replace(launch, env=env)
        elif op == "file":
            launch = replace(launch, files=(*launch.files, name))
        elif op == "model":  # ("model", "profile", name) or ("model", attribute, value)
            model = tuple((k, v) for k, v in launch.model if k != name)
            item = value if name == "profile" else (value,)
            launch = replace(launch, model=(*model, (name, item)))
    return launch


# ---------------------------------------------------------------- the before


def make_hold(
    launch: Launch, atom: Atom, decls: dict[str, FlagDecl], docs: Docs | None = None
) -> Launch:
    """`launch` changed so that `atom` holds, when a command line can do it; a flag whose
    declared default already makes it hold is left out (`--pp-size 1` says nothing)."""
    if (
        atom.flag
        and meets_default(atom, decls)
        and not any(o in _aliases(atom.flag, decls) for o, _ in launch.args)
    ):
        return launch
    for change in _holding(atom, decls, launch, docs):
        return apply(launch, change, decls)
    return launch


def before(atoms: Iterable[Atom], decls: dict[str, FlagDecl], docs: Docs | None = None) -> Launch:
    """The launch under which `atoms` hold, each made to hold in turn (make_hold). When that
    leaves the launch empty, which may never call the check's function, a compound condition
    is made to hold through one part of it (_holding_part): a way in for the run's solver."""
    atoms = list(atoms)
    launch = Launch()
    for atom in atoms:
        launch = make_hold(launch, atom, decls, docs)
    if launch != Launch():
        return launch
    for atom in atoms:
        if atom.flag is None:
            for change in _holding_part(atom, decls, launch, docs)[:1]:
                launch = apply(launch, change, decls)
    return launch


def _holding(
    atom: Atom, decls: dict[str, FlagDecl], launch: Launch, docs: Docs | None = None
) -> list[FixChange]:
    """Ways to make `atom` hold, best first."""
    flag, op, v = atom.flag, atom.op, atom.value
    item = _item_fact(atom) if flag is None else None
    if item is not None:
        # one item of a list option (`--x[i] <= 0`): a list holding one such item (leaving
        # the option out gives no item at all); the value is typed as the list (typed.py)
        return [c for c in _holding(item, decls, launch, docs) if c.edits[0][0] == "set"]
    if flag is None:
        return _holding_expr(atom)
    switch = is_switch(flag, decls)
    default = flag_default(flag, decls)
    out: list[tuple[str, str, str | None]] = []
    if op in ("unset", "is None"):
        out.append(("drop", flag, None))
    elif op in ("set", "is not None"):
        out.append(
            ("set", flag, None) if switch else ("set", flag, sample_value(flag, decls, docs))
        )
    elif op in ("==", "in"):
        values = (v,) if op == "==" else tuple(v)
        # Leaving the flag out comes first when that is one of the values (`x in (NGRAM,
        # None)`): an earlier check the launch passed never turns a feature on.
        if not launch.has(flag):  # (a value the user chose is changed to a near one instead)
            values = sorted(values, key=lambda x: not (x is False or x is None or x == default))
        for x in values:
            if x is True:
                out.append(("set", flag, None if switch else "true"))
            elif x is False or x is None or (x == default and not launch.has(flag)):
                out.append(("drop", flag, None))
            else:
                out.append(("set", flag, show_value(x)))
    elif op in ("!=", "not in"):
        banned = {show_value(b) for b in ((v,) if op == "!=" else v)}
        if default is not None and show_value(default) not in banned and not switch:
            out.append(("drop", flag, None))  # the default already holds
        for value in _domain(flag, decls):
            if value not in banned:
                out.append(("set", flag, value))
        if default is not None and "." in flag and TYPO not in banned:
            # The default is banned too, and the parser takes any text for a JSON option's
            # field, whatever values the field declares: "other" reaches the check the way a
            # typo does. (A field left None may reach it as it is.)
            out.append(("set", flag, TYPO))
    elif op in (">", ">=", "<", "<=") and isinstance(v, (int, float)) and not isinstance(v, bool):
        # What a maintainer would write: the default when it holds, a value the help or the
        # project's own launches use, and only then the boundary (`> 0` -> 1).
        if holds_for(atom, default) and default is not None:
            out.append(("drop", flag, None))
        for x in typical(flag, decls, docs):
            if holds_for(atom, x):
                out.append(("set", flag, show_value(x)))
        step = {">": 1, ">=": 0, "<": -1, "<=": 0}[op]
        out.append(("set", flag, show_value(v + step)))
    return [FixChange((e,), "allowed") for e in dict.fromkeys(out)]


_ITEM = re.compile(r"(--[\w.-]+)\[i\] (==|!=|<=|>=|<|>|not in|in) (.+)")


def _item_fact(atom: Atom) -> Atom | None:
    """`--x[i] <= 0` (an expression over one item of a list option, records/conditions.py)
    as the fact about that item which makes `atom` hold: `--x <= 0` (or its negation)."""
    m = _ITEM.fullmatch(atom.text)
    value = literal(m.group(3)) if m else NOT_LITERAL
    if m is None or value is NOT_LITERAL:
        return None
    fact = Atom(m.group(1), m.group(2), tuple(value) if m.group(2).endswith("in") else value)
    return fact if atom.holds else fact.negated()


def _holding_expr(atom: Atom) -> list[FixChange]:
    """A condition that is not one flag fact, when a launch can still make it hold: an
    environment variable, the model's architecture, a path that does (not) exist."""
    want = atom.holds
    if atom.topic == "env":
        name = env_name(atom.text)
        node = parse_test(atom.text)
        value = "1"
        if (
            isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.In, ast.NotIn))
            and isinstance(literal(node.left), str)
        ):  # fmt: skip
            # `"expandable_segments:True" in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")`
            value, want = literal(node.left), want == isinstance(node.ops[0], ast.In)
        if name:
            return [FixChange((("env", name, value if want else None),), "env")]
    if atom.topic == "model":
        arch = _architecture(atom.text, want)
        if arch:
            return [FixChange((("model", "architectures", arch),), "model")]
    if atom.topic == "file" and len(atom.flags) == 1:
        flag = atom.flags[0]
        if not want:
            return [FixChange((("set", flag, f"/no/such/{flag.lstrip('-')}"),), "allowed")]
        if ".parent" in atom.text or "dirname(" in atom.text:
            # a path to write to: one in the working directory (whose dirname is ".")
            return [FixChange((("set", flag, "./" + flag.lstrip("-")),), "allowed")]
        name = flag.lstrip("-") + (".pem" if "ssl" in flag else "")
        return [FixChange((("set", flag, name), ("file", name, None)), "allowed")]
    return []


def _holding_part(
    atom: Atom, decls: dict[str, FlagDecl], launch: Launch, docs: Docs | None
) -> list[FixChange]:
    """A compound condition over options made to hold through one part of it: the first
    side of `a or b` (or of a failing `a and b`), the first link of a chain `0 <= x <= 1`
    (failing: that link failing), `isinstance(x, str)` as x given at all, and `x.upper() ==
    "NAME"` as x given NAME."""
    text, attrs = atom.text, {}
    for i, flag in enumerate(sorted(atom.flags, key=len, reverse=True)):
        text = text.replace(flag, f"_flag{i}")  # the atom's text shows options as themselves
        attrs[f"=_flag{i}"] = flag
    node = parse_test(text) if atom.flags else None
    if node is None:
        return []
    want = atom.holds
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        node, want = node.operand, not want
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) == want:
        node = node.values[0]
    elif isinstance(node, ast.Compare) and len(node.ops) > 1:
        # holding, the first link (the run's solver rights the others); failing, the upper
        # bound, the one users cross (`not 0 <= p <= 1`: p 2 more often than -1)
        sides = [node.left, *node.comparators]
        i = 0 if want else len(node.ops) - 1
        node = ast.Compare(sides[i], [node.ops[i]], [sides[i + 1]])
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "isinstance"
        and len(node.args) == 2
        and want
    ):
        flag = _attr_flag(node.args[0], attrs)
        if not flag:
            return []
        value = sample_value(flag, decls, docs)
        if "." in flag and _names_str(node.args[1]) and not isinstance(_json(value), str):
            value = TYPO  # a JSON option's field is text only when it is no JSON value
        return [FixChange((("set", flag, value),), "allowed")]
    # (`x.upper() == "XFORMERS"`: atoms_of reads the option's own word, case-blind)
    for part in atoms_of(ast.unparse(node), want, attrs):
        if part.flag:
            return _holding(part, decls, launch, docs)
    return []


def _names_str(node: ast.expr) -> bool:
    """`str`, or a tuple of types that holds it (`isinstance(x, (str, Path))`)."""
    if isinstance(node, ast.Tuple):
        return any(_names_str(e) for e in node.elts)
    return isinstance(node, ast.Name) and node.id == "str"


def _json(text: str | None) -> object:
    try:
        return json.loads(text or "")
    except ValueError:
        return text


def _attr_flag(node: ast.expr, attrs: dict[str, str]) -> str | None:
    return attrs.get("=" + node.id) if isinstance(node, ast.Name) else None


def env_name(text: str) -> str | None:
    """`envs.APP_X.get()` / `get_bool_env_var("APP_X")` -> "APP_X"."""
    m = _ENV_NAME.search(text)
    return m.group(1) if m else None


def _architecture(text: str, want: bool) -> str | None:
    """An architecture name under which `model_arch in [...]` (or `"X" in model_arch`) is
    `want`: the first one listed, or a name containing the fragment tested."""
    node = parse_test(text)
    if not isinstance(node, ast.Compare) or len(node.ops) != 1:
        return None
    left, right = node.left, node.comparators[0]
    op = node.ops[0]
    if not want:
        # `model_arch not in [...]` failing is `model_arch in [...]` holding; any other
        # condition failing wants an architecture listed nowhere, which the profile has.
        if isinstance(op, (ast.NotIn, ast.NotEq)):
            flipped = ast.Compare(left, [ast.In() if isinstance(op, ast.NotIn) else ast.Eq()],
                                  [right])  # fmt: skip
            return _architecture(ast.unparse(flipped), True)
        return None
    if isinstance(op, ast.In):
        values = literal(right)
        if isinstance(values, (list, tuple, set, frozenset)) and values:
            first = sorted(values)[0] if isinstance(values, (set, frozenset)) else values[0]
            return first if isinstance(first, str) else None
        fragment = literal(left)
        if isinstance(fragment, str):
            return (
                fragment
                if fragment.endswith(("ForCausalLM", "Model"))
                else f"{fragment}ForCausalLM"
            )
    if isinstance(op, ast.Eq):
        value = literal(right)
        return value if isinstance(value, str) else None
    return None


def _domain(flag: str, decls: dict[str, FlagDecl]) -> list[str]:
    """Values worth trying for a flag: its choices, else a few numbers, else its default."""
    d = decls.get(flag)
    if d is None:
        return []
    if d.choices:
        return [c for c in d.choices if c not in ("None", "")]
    kind = (d.type or "").lower()
    if "int" in kind:
        return ["1", "2", "4", "8", "0"]
    if "float" in kind:
        return ["0.5", "1.0", "0.0"]
    default = flag_default(flag, decls)
    return [show_value(default)] if isinstance(default, str) and default else []


# ---------------------------------------------------------------- the changes


def changes(f: Facts, decls: dict[str, FlagDecl], before: Launch) -> list[FixChange]:
    """Changes to `before` that may make the check pass, most trusted first."""
    out: list[FixChange] = []
    # A notice's own choice (`--max-running-requests 48`) before the advice's bare option,
    # whose value would be made up.
    out += _made_explicit(f, decls)
    out += advice(f, decls, before)
    for atom in f.direct:
        out += _negations(atom, decls, before, f.docs)
    for atom in f.context:
        out += [
            c if c.source == "remove" else FixChange(c.edits, "feature", c.note)
            for c in _negations(atom, decls, before, f.docs)
        ]
    return _ranked(unique(c for c in out if apply(before, c, decls) != before))


def _made_explicit(f: Facts, decls: dict[str, FlagDecl]) -> list[FixChange]:
    """A notice's own choice made on the command line (`--ep-dispatch-algorithm static`
    where the code sets it to static when it is left out): the notice's fix, as trusted as
    its advice."""
    if not notices.is_notice(f):
        return []
    out = []
    for flag, value, atom in notices.choosable(f):
        lit = literal(value)
        if lit is True and is_switch(flag, decls):
            edit: tuple[str, str, str | None] = ("set", flag, None)
        elif lit in (False, None) and atom.positive:
            edit = ("drop", flag, None)
        elif notices.showable(lit) and lit is not True:
            edit = ("set", flag, show_value(lit))
        else:
            continue
        out.append(FixChange((edit,), "advice", f"what {f.profile.product} picks itself"))
    return out


# "feature": turns an enclosing condition around, i.e. launches without the feature the
# check is about, by another value than removing its flag.
_RANK = {"advice": 0, "solve": 1, "allowed": 2, "env": 3, "model": 4, "feature": 5, "remove": 6}


def _ranked(found: list[FixChange]) -> list[FixChange]:
    """Removing a feature flag only last; within a source, the order found."""
    return sorted(found, key=lambda c: (c.source == "remove", _RANK.get(c.source, 5)))


def unique(found: Iterable[FixChange]) -> list[FixChange]:
    """Each change once, in the order first found, under its most trusted source (a value
    the advice and the solver both give counts as advice)."""
    best: dict[tuple, FixChange] = {}
    for c in found:
        kept = best.get(c.edits)
        if kept is None or _RANK.get(c.source, 9) < _RANK.get(kept.source, 9):
            best[c.edits] = c if kept is None else FixChange(c.edits, c.source, kept.note)
    return list(best.values())


def _negations(
    atom: Atom, decls: dict[str, FlagDecl], before: Launch, docs: Docs | None = None
) -> list[FixChange]:
    """Ways to make `atom` fail: the check's own condition turned around."""
    neg = atom.negated()
    found = _holding(neg, decls, before, docs)
    out = []
    for c in found:
        (op, name, _), *_ = c.edits
        # Dropping a flag the launch sets, or unsetting an environment switch it needs,
        # gives the feature up: tried last. A number back at a default that passes gives
        # nothing up (`--max-loras-per-batch 0` -> its default 8).
        back = op == "drop" and _numeric_default(name, decls)
        gives_up = (op == "drop" and before.has(name) and not back) or (
            op == "env" and c.edits[0][2] is None
        )
        out.append(FixChange(c.edits, "remove" if gives_up else c.source, phrase(neg)))
    return out


def _numeric_default(flag: str, decls: dict[str, FlagDecl]) -> bool:
    value = flag_default(flag, decls)
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def advice(f: Facts, decls: dict[str, FlagDecl], before: Launch) -> list[FixChange]:
    """What the message itself tells the user to do, as edits of known options."""
    out: list[FixChange] = []
    involved = _involved(f, before)
    for sentence in _advice_parts(f.message):
        low = _FLAG.sub("", sentence.lower())  # "--disable-x" is a flag, not a verb
        drop = _DROP_VERBS.search(low) is not None
        for m in _OPTION_VALUE.finditer(sentence):
            flag, value = m.group(1), m.group(2).rstrip(".,;")
            if not drop and value_ok(flag, value, decls) and not is_switch(flag, decls):
                out.append(FixChange((("set", flag, value),), "advice", sentence))
                if _INSTEAD.search(sentence):
                    # "Please use --prefill-attention-backend fa4 instead": the value moves
                    # from the option the launch gave it to the one the message names.
                    out += [
                        FixChange((("drop", o, None), ("set", flag, value)), "advice", sentence)
                        for o, v in before.args
                        if v == value and o not in _aliases(flag, decls)
                    ]
        for flag in _FLAG.findall(sentence):
            if flag not in decls:
                continue
            if drop:
                out.append(FixChange((("drop", flag, None),), "remove", sentence))
            elif is_switch(flag, decls):
                out.append(FixChange((("set", flag, None),), "advice", sentence))
            elif not before.has(flag):
                out.append(
                    FixChange(
                        (("set", flag, sample_value(flag, decls, f.docs)),), "advice", sentence
                    )
                )
        # "requires --a and --b", "has no effect without --a and --b": both, in one change.
        needed = [
            fl
            for fl in _FLAG.findall(sentence.partition(_NEEDS.search(sentence).group(0))[2])
            if fl in decls and not before.has(fl)
        ] if _NEEDS.search(sentence) else []  # fmt: skip
        if len(needed) > 1 and not drop:
            edits = tuple(
                ("set", fl, None if is_switch(fl, decls) else sample_value(fl, decls, f.docs))
                for fl in needed
            )
            out.append(FixChange(edits, "advice", sentence))
        for name in _ENV_NAME.findall(sentence):
            if name.startswith(tuple(p + "_" for p in f.profile.own_env_prefixes)) and re.search(
                rf"{name}\s*=\s*(1|true)", sentence, re.I
            ):
                out.append(FixChange((("env", name, "1"),), "advice", sentence))
    # Values the message lists ("one of [...]", "(fa3/fa4)") for a flag the check is about,
    # the flags the launch itself sets first (changing the user's own choice), each value for
    # every flag before the next value.
    involved = sorted(involved, key=lambda fl: not before.has(fl))
    for value in _listed_values(f.message):
        for flag in involved:
            if value_ok(flag, value, decls) and before.value(flag) != value:
                out.append(FixChange((("set", flag, value),), "advice", f"{flag} {value}"))
    return out


def _involved(f: Facts, before: Launch) -> list[str]:
    """Flags the check reads, direct ones first, then the launch's own."""
    flags = [a.flag for a in f.direct if a.flag] + [fl for a in f.direct for fl in a.flags]
    flags += [a.flag for a in f.context if a.flag] + list(f.site.flags)
    flags += [o for o, _ in before.args]
    return list(dict.fromkeys(flags))


def _listed_values(message: str) -> list[str]:
    out: list[str] = []
    for m in _LIST.finditer(message):
        out += [w.strip(" '\"`") for w in re.split(r"[,|/]| or ", m.group(1))]
    for m in re.finditer(r"\(([\w.-]+(?:/[\w.-]+)+)\)", message):  # "(fa3/fa4)"
        out += m.group(1).split("/")
    for m in re.finditer(
        r"(?:use|set to|requires?|with)\s+['\"`]?([a-z0-9_.-]+)['\"`]?", message, re.I
    ):
        out.append(m.group(1))
    return [v for v in dict.fromkeys(out) if v and "{" not in v]


def _advice_parts(message: str) -> list[str]:
    text = unglued(message)
    parts = re.split(
        r"(?<=[.;!?])\s+|,\s*(?=(?:please|try|you can|you should)\b)", text, flags=re.I
    )
    return [p.strip() for p in parts if p and p.strip()]
