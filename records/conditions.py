"""Guard conditions read as flag facts: `cfg.enable_hisparse` holding -> "--enable-hisparse is set".

The knowledge fields (trigger, fix, solutions, validationCode) all start from the same reading
of a site's guards, done here once with the stdlib `ast` (guard tests are short expressions).
An attribute read counts as a flag when the extractor listed that flag for the guard or the
site; its receiver does not matter (`self.x`, `cfg.x`, `resolved_view(args).x`).
"""

from __future__ import annotations

import ast
import bisect
import copy
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kverr.extractor.context import callee_name
from kverr.extractor.pysource import NOT_LITERAL, expr_or_none, literal
from kverr.records.identity import profile_or_default
from kverr.records.names import (
    attr_flag,
    env_name,
    is_none,
    item_names,
    name_flags,
    notes,
    resolve,
    value_flags,
)

from kverr.ftypes import FlagDecl, Guard, Profile, Site
from kverr.relations import listed, relation

_NEGATE = {
    "set": "unset", "unset": "set", "==": "!=", "!=": "==", "in": "not in", "not in": "in",
    ">": "<=", "<=": ">", ">=": "<", "<": ">=", "is None": "is not None", "is not None": "is None",
}  # fmt: skip
_CMP = {
    ast.Eq: "==", ast.NotEq: "!=", ast.In: "in", ast.NotIn: "not in", ast.Gt: ">",
    ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<=",
}  # fmt: skip
_FLIP = {">": "<", "<": ">", ">=": "<=", "<=": ">=", "==": "==", "!=": "!="}
POSITIVE_OPS = ("set", "==", "in", "is not None")


@dataclass(frozen=True)
class Atom:
    """One fact that holds on the path to a site."""

    flag: str | None  # "--enable-hisparse"; None for a condition that is not about one flag
    op: str  # set | unset | == | != | in | not in | > | >= | < | <= | is None | is not None | expr
    value: Any = None  # literal compared with (a tuple for in / not in)
    text: str = ""  # op == "expr": the source of the condition; holds says which way
    holds: bool = True
    flags: tuple[str, ...] = ()  # flags an "expr" atom reads
    # op == "expr": plain words for the condition when it holds / fails, and what it is about
    # ("model", "platform", "hardware", "package", "env", "file", "flags" or "" for raw code).
    # Not part of equality: two atoms with the same text are the same fact.
    says: tuple[str, str] = field(default=("", ""), compare=False)
    topic: str = field(default="", compare=False)
    # How the code reaches `flag` when it reads it through a local: "falling back to --kernel".
    via: str = field(default="", compare=False)
    # op == "expr" over `a or b` / `a and b`, each part read alone: (is it `or`, the parts as
    # the code writes them); `either` gives those one of which holds.
    parts: tuple[bool, tuple[Atom, ...]] = field(default=(False, ()), compare=False)

    def either(self) -> tuple[Atom, ...]:
        """The conditions one of which holds when this one does: the parts of `a or b`
        holding, of `a and b` failing (turned round); () when it is no such choice."""
        any_of, parts = self.parts
        if not parts or any_of != self.holds:
            return ()
        return parts if any_of else tuple(p.negated() for p in parts)

    @property
    def positive(self) -> bool:
        return self.flag is not None and self.op in POSITIVE_OPS

    @property
    def only_given(self) -> bool:
        """`--x set` / `--x is not None`: that the option is there, nothing about its value."""
        return self.op in ("set", "is not None")

    def negated(self) -> Atom:
        if self.op == "expr":
            return replace(self, holds=not self.holds)
        return Atom(self.flag, _NEGATE[self.op], self.value, via=self.via)


@dataclass(frozen=True)
class Reading:
    """A guard (or an assert's own test) read as atoms."""

    guard: Guard
    atoms: tuple[Atom, ...]
    role: str  # "direct" | "enclosing" | "gate" (an early exit before the site)


def dest_of(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


class Attrs(dict):
    """attribute name -> flag, for the flags the extractor saw, with the project profile whose
    probe words describe the other conditions. A config field's flag
    (`--speculative-config.method`) is read as its last attribute (`method`)."""

    profile: Profile | None = None
    loop_items: frozenset[str] = frozenset()  # names holding one item of their flag (`op`)


def flag_attrs(
    flags: tuple[str, ...],
    names: dict[str, str] | None = None,
    profile: Profile | None = None,
    items: Iterable[str] = (),
) -> Attrs:
    """attribute name -> flag; `names` adds bare names that hold a flag (a local, a parameter:
    records/names.py), keyed "=name"; `items` are those among them that hold one item of it
    (shown `--x[i]`)."""
    out = Attrs((dest_of(f).rpartition(".")[2], f) for f in flags)
    out.update({"=" + k: v for k, v in (names or {}).items()})
    out.profile = profile
    out.loop_items = frozenset(items)
    return out


def atoms_of(test: str, holds: bool, attrs: dict[str, str]) -> tuple[Atom, ...]:
    node = expr_or_none(test)
    if node is None:
        return (Atom(None, "expr", text=test, holds=holds),)
    return tuple(_atoms(node, holds, attrs))


def _atoms(node: ast.expr, holds: bool, attrs: dict[str, str]) -> list[Atom]:
    if isinstance(node, ast.Constant):
        return []  # `if False:` / a resolved constant says nothing about the launch
    if isinstance(node, ast.NamedExpr):
        return _atoms(node.value, holds, attrs)  # `if x := self.x:` tests the value it binds
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _atoms(node.operand, not holds, attrs)
    if isinstance(node, ast.BoolOp):
        # A part the engine settles for every launch (`model_config is not None and ...`)
        # leaves the others: true in a conjunction, false in a disjunction.
        neutral = isinstance(node.op, ast.And)
        built = [_is_built(v, attrs) for v in node.values]
        rest = [v for v, b in zip(node.values, built, strict=True) if b is not neutral]
        if len(rest) < len(node.values) and not any(b is (not neutral) for b in built):
            if not rest:
                return []
            node = rest[0] if len(rest) == 1 else ast.BoolOp(op=node.op, values=rest)
            return _atoms(node, holds, attrs)
        # A conjunction that holds (or a disjunction that fails) splits into independent facts.
        if isinstance(node.op, ast.And) == holds:
            return [a for v in node.values for a in _atoms(v, holds, attrs)]
        return [_opaque(node, holds, attrs)]
    if holds == _is_built(node, attrs):
        return []  # `self.model_config is not None`: the engine builds it for every launch
    flag = _flag_of(node, attrs)
    if flag:
        return [Atom(flag, "set" if holds else "unset")]
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        atom = _compare(node.left, node.ops[0], node.comparators[0], attrs)
        if atom is not None:
            return [atom if holds else atom.negated()]
    return [_opaque(node, holds, attrs)]


def _is_built(node: ast.expr, attrs: dict[str, str]) -> bool | None:
    """True for a test that an object the engine builds for every launch is there (the
    profile's `built`: `model_config`, `model_config is not None`), False for its negation,
    None for any other test."""
    built = profile_or_default(getattr(attrs, "profile", None)).built
    positive = True
    if (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], (ast.Is, ast.IsNot))
        and is_none(node.comparators[0])
    ):
        positive, node = isinstance(node.ops[0], ast.IsNot), node.left
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
    return positive if name in built else None


def _compare(left: ast.expr, op: ast.cmpop, right: ast.expr, attrs: dict[str, str]) -> Atom | None:
    if (
        isinstance(op, (ast.Is, ast.IsNot))
        and isinstance(right, ast.Constant)
        and right.value is True
    ):
        # `x is True` reads as `x == True` (below). Not `x is False`: a switch whose default
        # is None (the code decides) is neither given nor off.
        op = ast.Eq() if isinstance(op, ast.Is) else ast.NotEq()
    if isinstance(op, (ast.Is, ast.IsNot)):
        flag = _flag_of(left, attrs)
        if flag and isinstance(right, ast.Constant) and right.value is None:
            return Atom(flag, "is None" if isinstance(op, ast.Is) else "is not None")
        return None
    name = _CMP.get(type(op))
    if name is None:
        return None
    left, right = _case_folded(left), _case_folded(right)
    flag, value = _flag_of(left, attrs), _literal(right)
    if flag is None and name in _FLIP:  # `1 < cfg.x` reads as `cfg.x > 1`
        flag, value, name = _flag_of(right, attrs), _literal(left), _FLIP[name]
    if flag is None or value is NOT_LITERAL:
        return None
    if value is True and name in ("==", "!="):
        # `x == True` is the switch given, `x != True` left out (or turned off): a launch's
        # words, where "--x=True" is no command line for a switch
        return Atom(flag, "set" if name == "==" else "unset")
    if name in ("in", "not in"):
        if not isinstance(value, (tuple, list, set, frozenset)) or not value:
            return None  # (`x in ()` is no fact about a value: said as code)
        value = (
            tuple(sorted(value, key=repr)) if isinstance(value, (set, frozenset)) else tuple(value)
        )
    return Atom(flag, name, value)


def _case_folded(node: ast.expr) -> ast.expr:
    """`x.lower()` / `x.upper()` / `x.strip()` as `x`: the check compares the option's own
    word, only made case-blind (`--tokenizer-mode.lower() not in ['auto', 'slow']`)."""
    if (
        isinstance(node, ast.Call)
        and not node.args
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("lower", "upper", "strip")
    ):
        return node.func.value
    return node


def _flag_of(node: ast.expr, attrs: dict[str, str]) -> str | None:
    if isinstance(node, ast.Attribute) and (flag := attr_flag(node, attrs)):
        return flag
    if isinstance(node, ast.Name) and "=" + node.id in attrs:
        # (one item of a flag's list is no fact about the flag: its test reads as code)
        return None if node.id in getattr(attrs, "loop_items", ()) else attrs["=" + node.id]
    chain = _fallback(node, attrs)
    return chain[0] if chain else None


def _fallback(node: ast.expr, attrs: dict[str, str]) -> list[str]:
    """`a or b` / `a if a is not None else b` / `a if a else b` over flags: [a, b] (the flag
    that decides when set comes first); [] for anything else."""
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
        parts = [_flag_of(v, attrs) for v in node.values]
    elif isinstance(node, ast.IfExp):
        test = node.test
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            ok = isinstance(test.ops[0], ast.IsNot) and is_none(test.comparators[0])
            test = test.left if ok else test
        same = ast.dump(test) == ast.dump(node.body)
        parts = [_flag_of(node.body, attrs), _flag_of(node.orelse, attrs)] if same else [None]
    else:
        return []
    return [p for p in parts if p] if all(parts) else []


def _literal(node: ast.expr) -> Any:
    """The literal a flag is compared with, made hashable (atoms are deduplicated as keys)."""
    value = literal(_launch_word(node))
    if isinstance(value, list):
        value = tuple(value)
    try:
        hash(value)
    except TypeError:
        return NOT_LITERAL
    return value


# A torch dtype an option is compared with, once the code has read the option's word into it:
# `--dtype == torch.float32` is about the launch's `--dtype float32` (enum members likewise).
_DTYPE = re.compile(r"b?float\d*(?:_\w+)?|half|u?int\d+")


def _launch_word(node: ast.expr) -> ast.expr:
    """`torch.float32` as "float32", an enum's member (`CUDAGraphMode.NONE`) as "NONE": the
    word a launch gives the option, where the code compares what it made of it."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return type(node)([_launch_word(e) for e in node.elts])  # type: ignore[call-arg]
    if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)):
        return node
    owner, member = node.value.id, node.attr
    if owner == "torch" and _DTYPE.fullmatch(member):
        return ast.Constant(member)
    if owner.lstrip("_")[:1].isupper() and _MEMBER.fullmatch(member):
        return ast.Constant(member)
    return node


_MEMBER = re.compile(r"[A-Z][A-Z0-9_]*")


def _opaque(node: ast.expr, holds: bool, attrs: dict[str, str]) -> Atom:
    seen = []
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute):
            seen.append(attr_flag(n, attrs))
        elif isinstance(n, ast.Name):
            seen.append(attrs.get("=" + n.id))
    said = describe(node, attrs)
    parts: tuple[bool, tuple[Atom, ...]] = (False, ())
    if isinstance(node, ast.BoolOp) and said is not None:
        each = [_atoms(v, True, attrs) for v in node.values]
        if all(len(e) == 1 for e in each):
            parts = (isinstance(node.op, ast.Or), tuple(e[0] for e in each))
    shown = _AsFlags(attrs).visit(copy.deepcopy(node))  # the caller's tree stays as parsed
    text = ast.unparse(shown)
    if said is None:
        # (a comparison of options: "--tp-size is not a multiple of --dp-size")
        related = [" is ".join(relation(text, holds)) for holds in (True, False)]
        said = (*related, "") if all(related) else _as_code(shown)
    return Atom(
        None,
        "expr",
        text=text,
        holds=holds,
        flags=tuple(dict.fromkeys(filter(None, seen))),
        says=(said[0], said[1]),
        topic=said[2],
        parts=parts,
    )


# ------------------------------------------------------------------ plain words for code

Said = tuple[str, str, str]  # (words when the condition holds, when it fails, topic)

_SM_NAMES = {"75": "Turing", "80": "Ampere", "86": "Ampere", "89": "Ada", "90": "Hopper",
             "100": "Blackwell", "103": "Blackwell", "120": "RTX Blackwell"}  # fmt: skip
_ARCH_NAMES = ("model_arch", "arch", "architecture", "architectures", "model_archs")


def describe(node: ast.expr, attrs: dict[str, str]) -> Said | None:
    """Plain words for a condition that is not a simple flag fact, or None to show the code.

    Guards of argument checks mostly probe the platform (`is_hip()`: the profile's
    `[knowledge.platforms]`), the GPU (`is_sm100_supported()`, `[knowledge.hardware]`), an
    installed package (`is_flashinfer_available()`), an environment variable
    (`envs.X.get()`), a path a flag names (`os.path.isfile(self.x)`) or the model
    architecture (`model_arch in [...]`); each reads better as words than as code.
    """
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = describe(node.operand, attrs)
        return (inner[1], inner[0], inner[2]) if inner else None
    if isinstance(node, ast.BoolOp):
        return _describe_boolop(node, attrs)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        return _describe_compare(node.left, node.ops[0], node.comparators[0]) or _contains(
            node, attrs
        )
    if isinstance(node, ast.Compare) and len(node.ops) == 2:
        return _interval(node, attrs)
    if isinstance(node, ast.Call):
        return _describe_call(node, attrs)
    if isinstance(node, ast.Name):
        return _describe_probe(node.id, (), attrs)
    if isinstance(node, ast.Attribute):  # `get_platform().is_cuda`, `envs.APP_USE_V2`
        env = env_name(node)
        if env:
            return f"{env} is enabled", f"{env} is not enabled", "env"
        return _describe_probe(node.attr, (), attrs)
    return None


def _describe_boolop(node: ast.BoolOp, attrs: dict[str, str]) -> Said | None:
    parts = []
    for v in node.values:
        flag_atoms = _atoms(v, True, attrs)
        if len(flag_atoms) == 1 and flag_atoms[0].flag:
            yes, no = phrase(flag_atoms[0]), phrase(flag_atoms[0].negated())
            parts.append((yes, no, "flags"))
            continue
        said = describe(v, attrs)
        if said is None:
            return None
        parts.append(said)
    topics = {p[2] for p in parts}
    topic = topics.pop() if len(topics) == 1 else "mixed"
    yes, no = [p[0] for p in parts], [p[1] for p in parts]
    if isinstance(node.op, ast.And):  # not (a and b) == not a or not b
        return join_words(yes), either_words(no), topic
    return either_words(yes), join_words(no), topic


def either_words(items: list[str]) -> str:
    return ("either " if len(items) > 1 else "") + listed(items, " or ")


def _describe_compare(left: ast.expr, op: ast.cmpop, right: ast.expr) -> Said | None:
    gpu = _capability(left, op, right) or _cpu(left, op, right)
    if gpu:
        return gpu
    env, bound = env_name(left), literal(right)
    if env and type(op) in _ORDER and isinstance(bound, (int, float)) and bound is not True:
        yes, no = _ORDER[type(op)]  # (`envs.APP_DP_SIZE > 1`: "APP_DP_SIZE > 1")
        return f"{env} {yes} {bound}", f"{env} {no} {bound}", "env"
    positive = isinstance(op, (ast.In, ast.Eq))
    if not (positive or isinstance(op, (ast.NotIn, ast.NotEq, ast.Is, ast.IsNot))):
        return None
    if _is_arch(left) or _is_arch(right):
        names = [v for v in (_strings(right) if _is_arch(left) else _strings(left)) or ()]
        if not names:
            return None
        if len(names) <= 3:  # (not "A, B or 1 other architectures")
            said = (
                f"{_an(names[0])} {or_list(tuple(names))} model",
                f"a model other than {or_list(tuple(names))}",
                "model",
            )
        else:
            some = f"{names[0]}, {names[1]} or {len(names) - 2} other architectures"
            said = (f"a model such as {some}", f"a model other than {some}", "model")
        return said if positive else (said[1], said[0], "model")
    env = env_name(left)
    if env and isinstance(op, (ast.Is, ast.IsNot)) and is_none(right):
        said = (f"{env} is not set", f"{env} is set", "env")
        return said if isinstance(op, ast.Is) else (said[1], said[0], "env")
    value = literal(right)
    if env and isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(value, (str, int)):
        said = (f"{env}={value}", f"{env} is not {value}", "env")
        return said if positive else (said[1], said[0], "env")
    if env and isinstance(op, (ast.In, ast.NotIn)) and _strings(right):
        values = tuple(_strings(right) or ())
        said = (f"{env} is {or_list(values)}", f"{env} is not {or_list(values)}", "env")
        return said if positive else (said[1], said[0], "env")
    if isinstance(op, (ast.In, ast.NotIn)) and env_name(right) and isinstance(literal(left), str):
        # `"expandable_segments:True" in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")`
        var, text = env_name(right), literal(left)
        said = (f"{var} contains {text}", f"{var} does not contain {text}", "env")
        return said if positive else (said[1], said[0], "env")
    if (
        isinstance(op, (ast.In, ast.NotIn))
        and _is_environ(right)
        and isinstance(literal(left), str)
    ):
        said = (f"{literal(left)} is set", f"{literal(left)} is not set", "env")
        return said if positive else (said[1], said[0], "env")
    return None


def _cpu(left: ast.expr, op: ast.cmpop, right: ast.expr) -> Said | None:
    """`get_cpu_architecture() in (CpuArchEnum.POWERPC, CpuArchEnum.RISCV)`: the CPU, named by
    the members the code lists ("on a POWERPC or RISCV CPU")."""
    if not (isinstance(left, ast.Call) and callee_name(left.func) == "get_cpu_architecture"):
        return None
    items = right.elts if isinstance(right, (ast.Tuple, ast.List, ast.Set)) else [right]
    names = [e.attr for e in items if isinstance(e, ast.Attribute)]
    if not names or len(names) != len(items) or not isinstance(op, _MEMBERSHIP):
        return None
    article = "an" if names[0][:1] in "AEIOU" else "a"  # (RISCV is "risk-five": no initialism)
    where = f"on {article} {or_list(tuple(names))} CPU"
    said = (where, "not " + where, "platform")
    return said if isinstance(op, (ast.In, ast.Eq)) else (said[1], said[0], "platform")


_MEMBERSHIP = (ast.In, ast.NotIn, ast.Eq, ast.NotEq)

_ORDER = {ast.Gt: (">", "<="), ast.GtE: (">=", "<"), ast.Lt: ("<", ">="), ast.LtE: ("<=", ">")}


def _is_environ(node: ast.expr) -> bool:
    """`os.environ`."""
    return isinstance(node, ast.Attribute) and node.attr == "environ"


def _interval(node: ast.Compare, attrs: dict[str, str]) -> Said | None:
    """`0 < x <= 1.0` over an option: "--x within (0, 1.0]" / "--x outside (0, 1.0]"."""
    low, high = literal(node.left), literal(node.comparators[1])
    flag = _flag_of(node.comparators[0], attrs)
    lt = (ast.Lt, ast.LtE)
    if not (flag and all(isinstance(op, lt) for op in node.ops)):
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high)):
        return None
    opened = "(" if isinstance(node.ops[0], ast.Lt) else "["
    closed = ")" if isinstance(node.ops[1], ast.Lt) else "]"
    shown = f"{opened}{show_value(low)}, {show_value(high)}{closed}"
    return f"{flag} within {shown}", f"{flag} outside {shown}", "flags"


def _contains(node: ast.Compare, attrs: dict[str, str]) -> Said | None:
    """`'gemma-2' in x.lower()` over an option: "--x contains gemma-2"."""
    op, text = node.ops[0], literal(node.left)
    flag = _flag_of(_case_folded(node.comparators[0]), attrs)
    if not (flag and isinstance(text, str) and isinstance(op, (ast.In, ast.NotIn))):
        return None
    shown = text if re.fullmatch(r"\w[\w.+-]*", text) else repr(text)  # (`' '`: a space)
    # (no "flags" topic: "Launch with --x contains y" is no fix; the words are the goal)
    said = (f"{flag} contains {shown}", f"{flag} does not contain {shown}", "")
    return said if isinstance(op, ast.In) else (said[1], said[0], "")


def _capability(left: ast.expr, op: ast.cmpop, right: ast.expr) -> Said | None:
    """`get_device_capability() == (7, 5)` (or `< (8, 0)`): the GPU generation, in words."""
    value = literal(right)
    if not (
        isinstance(left, ast.Call)
        and callee_name(left.func) == "get_device_capability"
        and isinstance(value, tuple)
        and len(value) == 2
        and all(isinstance(v, int) for v in value)
    ):
        return None
    sm = f"{value[0]}{value[1]}"
    gpu = f"an SM{sm} ({_SM_NAMES[sm]}) GPU" if sm in _SM_NAMES else f"an SM{sm} GPU"
    said = {
        ast.Eq: (f"on {gpu}", f"not on {gpu}"),
        ast.NotEq: (f"not on {gpu}", f"on {gpu}"),
        ast.GtE: (f"on {gpu} or newer", f"on a GPU older than SM{sm}"),
        ast.Lt: (f"on a GPU older than SM{sm}", f"on {gpu} or newer"),
    }
    words = said.get(type(op))
    return (*words, "hardware") if words else None


def _an(word: str) -> str:
    # an initialism is read letter by letter: "an MLA model", "an MoE model" ("a MiMoV2Flash")
    if word[:2].isupper() or (len(word) <= 4 and word[:1].isupper() and not word[1:].islower()):
        return "an" if word[0] in "AEFHILMNORSX" else "a"
    return "an" if word[:1].lower() in "aeio" else "a"


def _is_arch(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in _ARCH_NAMES
    if isinstance(node, ast.Attribute):
        return node.attr in _ARCH_NAMES
    if isinstance(node, ast.BoolOp):  # `(hf_config.architectures or [])`
        return any(_is_arch(v) for v in node.values)
    if isinstance(node, ast.Subscript):  # `architectures[0]`
        return _is_arch(node.value)
    return False


def _strings(node: ast.expr) -> list[str] | None:
    value = literal(node)
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple, set, frozenset)) and all(isinstance(v, str) for v in value):
        return sorted(value) if isinstance(value, (set, frozenset)) else list(value)
    return None


def _describe_call(node: ast.Call, attrs: dict[str, str]) -> Said | None:
    name = callee_name(node.func) or ""
    func = node.func
    # getattr(hf_config, "is_encoder_decoder", False): the attribute it reads
    if name == "getattr" and len(node.args) >= 2 and isinstance(literal(node.args[1]), str):
        return _describe_probe(literal(node.args[1]), (), attrs)  # type: ignore[arg-type]
    # envs.X.get() / envs.X.is_set()
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute):
        var = func.value.attr
        if var.isupper() and name == "get":
            return f"{var} is enabled", f"{var} is not enabled", "env"
        if var.isupper() and name == "is_set":
            return f"{var} is set", f"{var} is not set", "env"
    # envs.is_set("X")
    envs = isinstance(func, ast.Attribute) and getattr(func.value, "id", None) == "envs"
    if name == "is_set" and envs and node.args:
        var = literal(node.args[0])
        if isinstance(var, str):
            return f"{var} is set", f"{var} is not set", "env"
    if name in ("get_bool_env_var", "get_int_env_var") and node.args:
        var = node.args[0]
        if isinstance(var, ast.Constant) and isinstance(var.value, str):
            return f"{var.value} is enabled", f"{var.value} is not enabled", "env"
    probed = _path_probe(node, attrs)
    if probed:
        flag, what = probed
        if what == "parent":
            return (
                f"{flag} is a path in an existing directory",
                f"{flag} is not a path in an existing directory",
                "file",
            )
        return (
            f"{flag} names an existing {what}",
            f"{flag} does not name an existing {what}",
            "file",
        )
    if name == "is_available" and "cuda" in ast.unparse(func):
        return "a CUDA GPU is visible", "no CUDA GPU is visible", "env"
    told = _self_test(node, attrs)
    if told:
        return told
    if name in ("startswith", "endswith") and isinstance(func, ast.Attribute) and node.args:
        flag = _flag_of(func.value, attrs)
        arg = node.args[0]
        if flag and isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            verb = "starting" if name == "startswith" else "ending"
            return f"{flag} {verb} with {arg.value}", f"{flag} not {verb} with {arg.value}", "flags"
    return _describe_probe(name, node.args, attrs)


# A test an option's value answers about itself, named for what it asks:
# `cudagraph_mode.has_full_cudagraphs()`, `spec_config.use_eagle()`.
_SELF_TEST = re.compile(r"(is|has|requires|supports|uses?)_([a-z]\w*)")
_SELF_VERBS = {
    "is": ("is", "is not"),
    "has": ("has", "does not have"),
    "requires": ("requires", "does not require"),
    "supports": ("supports", "does not support"),
    "uses": ("uses", "does not use"),
    "use": ("uses", "does not use"),
}


def _self_test(node: ast.Call, attrs: dict[str, str]) -> Said | None:
    """`--x.has_full_cudagraphs()`: a test without arguments that an option's value (an enum
    member, a config) answers about itself, in the words of its name ("--x has full
    cudagraphs"). The name is all a reader of the message has too: what it computes lives in
    another class."""
    func = node.func
    if node.args or node.keywords or not isinstance(func, ast.Attribute):
        return None
    m = _SELF_TEST.fullmatch(func.attr)
    flag = _flag_of(func.value, attrs) if m else None
    if not m or not flag:
        return None
    yes, no = _SELF_VERBS[m[1]]
    what = m[2].replace("_", " ")
    # (no "flags" topic: "Launch with --x has y" is no fix; the words are the goal)
    return f"{flag} {yes} {what}", f"{flag} {no} {what}", ""


_PATH_TESTS = {"isfile": "file", "is_file": "file", "isdir": "directory", "is_dir": "directory"}


def _path_probe(node: ast.Call, attrs: dict[str, str]) -> tuple[str, str] | None:
    """(flag, what) for a test of the path a flag names: `os.path.isfile(self.x)`,
    `Path(self.x).is_file()` (what: file, directory, path), or of the directory it is in,
    `Path(self.x).parent.is_dir()`, `os.path.isdir(os.path.dirname(self.x))` (what: parent)."""
    func = node.func
    name = callee_name(func) or ""
    what = _PATH_TESTS.get(name, "path" if name == "exists" else "")
    if not what:
        return None
    if node.args:  # os.path.isfile(p)
        arg = node.args[0]
    elif isinstance(func, ast.Attribute) and not node.keywords:  # Path(p).is_file()
        arg = func.value
        if isinstance(arg, ast.Attribute) and arg.attr == "parent":
            arg, what = arg.value, "parent"
        if not (isinstance(arg, ast.Call) and callee_name(arg.func) == "Path" and arg.args):
            return None
        arg = arg.args[0]
    else:
        return None
    if isinstance(arg, ast.Call) and callee_name(arg.func) == "dirname" and arg.args:
        arg, what = arg.args[0], "parent"
    flag = _AsFlags(attrs).visit(copy.deepcopy(arg))
    if isinstance(flag, ast.Name) and flag.id.startswith("--"):
        return flag.id, what
    return None


def _describe_probe(name: str, args, attrs: dict[str, str]) -> Said | None:
    """A platform, GPU or package probe by its name: `is_hip`, `is_sm100_supported`, ..."""
    platforms, hardware, models = _probes(getattr(attrs, "profile", None))
    if name in models:  # `model_config.is_multimodal_model`: the kind of model served
        kind = models[name]
        return f"{_an(kind)} {kind} model", f"a model that is not {kind}", "model"
    if name in platforms:
        where = platforms[name]
        return f"on {where}", f"not on {where}", "platform"
    m = re.fullmatch(r"is_sm(\d+)(?:_supported)?", name)
    if m:
        sm = m.group(1)
        where = f"an SM{sm} ({_SM_NAMES[sm]}) GPU" if sm in _SM_NAMES else f"an SM{sm} GPU"
        return f"on {where}", f"not on {where}", "hardware"
    if name in hardware:
        where = _with_argument(hardware[name], args)
        return (f"on {where}", f"not on {where}", "hardware") if where else None
    m = re.fullmatch(r"(?:is_)?(\w+?)_(?:is_)?available", name)
    if m and not args:
        pkg = m.group(1)
        return f"{pkg} is installed", f"{pkg} is not installed", "package"
    return None


@functools.lru_cache(maxsize=16)
def _probes(profile: Profile | None) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    profile = profile_or_default(profile)
    return dict(profile.platforms), dict(profile.hardware), dict(profile.models)


def _with_argument(words: str, args) -> str | None:
    """`an SM{0} GPU` with the probe's first argument, when it is a literal (else None)."""
    if "{0}" not in words:
        return words
    if not args or not isinstance(args[0], ast.Constant) or isinstance(args[0].value, bool):
        return None
    return words.replace("{0}", str(args[0].value))


class _AsFlags(ast.NodeTransformer):
    """Show a flag read as the flag itself: `resolved_view(args).x_y` -> `--x-y`."""

    def __init__(self, attrs: dict[str, str]) -> None:
        self.attrs = attrs

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        flag = attr_flag(node, self.attrs)
        if flag:
            return ast.Name(id=flag, ctx=ast.Load())
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        flag = self.attrs.get("=" + node.id)
        if not flag:
            return node
        shown = ast.Name(id=flag, ctx=ast.Load())
        if node.id in getattr(self.attrs, "loop_items", ()):  # one item of the list: any of them
            return ast.Subscript(shown, ast.Name(id="i", ctx=ast.Load()), ctx=ast.Load())
        return shown


# ------------------------------------------------------------------ the site's path


# Earlier checks are looked for among the MAX_LOOKBACK sites just before a site, and at most
# MAX_EARLIER are kept. Without a bound the work is quadratic in the checks of one function
# (800 raises on one flag took 26 s). The shipped projects' launch-argument code needs at most 11
# checks within the 57 sites before any site, so real records are the same with the bound.
MAX_EARLIER = 64
MAX_LOOKBACK = 256


def earlier_checks(site: Site, siblings: Sequence[Site]) -> tuple[Guard, ...]:
    """Checks that must have passed for control to reach `site`, read off the sites before it.

    An earlier `if <test>: raise ...` on the same path (its other guards are a prefix of
    ours) means `<test>` was false here; an earlier `assert <cond>` means `<cond>` held. The
    extractor reports only `return`-style early exits as guards, so these come from siblings.
    Bounded per site (MAX_LOOKBACK, MAX_EARLIER), so a function's cost is linear in its sites.
    """
    own = {(g.test, g.holds) for g in site.guards}
    ordered = _in_line_order(siblings)
    end = bisect.bisect_left(ordered, site.line, key=lambda t: t.line)
    picked: list[tuple[int, Guard]] = []  # (position in `ordered`, check), nearest first
    looked = 0
    for k in range(end - 1, -1, -1):
        if looked >= MAX_LOOKBACK or len(picked) >= MAX_EARLIER:
            break
        t = ordered[k]
        if t.file != site.file or t.function != site.function:
            continue
        looked += 1
        g = _check_passed(t, site, own)
        if g is not None and (g.test, g.holds) not in own:
            picked.append((k, g))
    out: dict[tuple[str, bool], Guard] = {}
    for _, g in sorted(picked, key=lambda p: p[0]):  # source order: the first of equal tests wins
        out.setdefault((g.test, g.holds), g)
    return tuple(out.values())


def _check_passed(t: Site, site: Site, own: set[tuple[str, bool]]) -> Guard | None:
    """What the earlier site `t` says held on the way to `site`, or None."""
    theirs = tuple(g for g in t.guards if g.kind != "assert")
    if t.kind == "assert" and t.condition and _is_prefix(theirs, site.guards):
        flags = tuple(f for g in t.guards if g.kind == "assert" for f in g.flags)
        return Guard(test=t.condition, holds=True, kind="passed", line=t.line, flags=flags)
    if t.kind in ("raise", "exit") and theirs and theirs[-1].kind in ("if", "elif"):
        d = theirs[-1]
        if not d.holds or (d.test, True) in own or not _is_prefix(theirs[:-1], site.guards):
            return None
        return Guard(test=d.test, holds=False, kind="passed", line=d.line, flags=tuple(d.flags))
    return None


# The sites of the function last asked about, sorted by line. build_records asks once per site
# with the same list object for every site of a function: sorting once per function keeps the
# whole pass O(n log n), where sorting per site would be quadratic again.
_sorted_for: tuple[Sequence[Site], list[Site]] | None = None


def _in_line_order(siblings: Sequence[Site]) -> list[Site]:
    global _sorted_for
    if _sorted_for is None or _sorted_for[0] is not siblings:
        _sorted_for = (siblings, sorted(siblings, key=lambda t: t.line))
    return _sorted_for[1]


def _is_prefix(short: Sequence[Guard], long: Sequence[Guard]) -> bool:
    key = lambda g: (g.test, g.holds, g.kind)  # noqa: E731
    return len(short) <= len(long) and [key(g) for g in short] == [
        key(g) for g in long[: len(short)]
    ]


def _dropped_sibling(g: Guard, site_flags: tuple[str, ...] = ()) -> bool:
    """An earlier `if`/`elif` test of the chain, false on the way to the branch of the site.

    In a long `if model_arch in [...]: ... elif "X" in model_arch: ...` chain the branch's
    own test says what matters ("a NemotronH model"); that the ten tests above it failed adds
    nothing a user can act on. Kept: sibling tests made only of flag reads (a user can
    change those, and `--x other than 0, 1 or 2` says which branch this is), and the `else`
    test (the only thing saying which branch this is). `site_flags`: the flags the site names
    (its message's `--log-level`), which the sibling tests may read as its dest.
    """
    if g.kind != "elif" or g.holds:
        return False
    flags = tuple(dict.fromkeys(g.flags + site_flags))
    if not flags:
        return True
    node = expr_or_none(g.test)
    if node is None:
        return True
    attrs = flag_attrs(flags)
    parts = node.values if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And) else [node]
    return any(a.flag is None for p in parts for a in _atoms(p, True, attrs))


def readings(
    site: Site, passed: Sequence[Guard] = (), profile: Profile | None = None
) -> list[Reading]:
    """Every guard on the path to the site as atoms, outermost first, the direct one last.

    The direct condition is an assert's own test (it failed), else the innermost enclosing
    if/elif/else/while/match. Early exits before the site (`if not x: return`, earlier
    `if y: raise`) are gates: checks the launch has already passed.
    """
    own = [g for g in site.guards if g.kind != "assert"]
    if site.kind == "assert" and site.condition:
        # The extractor lists an assert's own test last (kind "assert", holds False); take it
        # from `condition` so a hand-built Site reads the same.
        direct = Guard(test=site.condition, holds=False, kind="assert", line=site.line)
        flags = tuple(f for g in site.guards if g.kind == "assert" for f in g.flags)
        direct = Guard(direct.test, False, "assert", site.line, flags)
    else:
        direct = None
    # Resolved first: a sibling test over a local the site's bindings name
    # (`elif pooling_type in (...)`, bound by `if pooling_type := self.pooling_type`) is a
    # flag read, kept like any other.
    own = [_resolved(g, site) for g in own]
    own = [
        g
        for i, g in enumerate(own)
        if not _dropped_sibling(g, site.flags)
        # An `else` of a test that reads no flag says little once deeper tests follow.
        and not (
            g.kind == "else" and not g.flags and any(h.kind != "early-exit" for h in own[i + 1 :])
        )
    ]
    # In an argparse Action every site runs because its flag was given.
    given = [b.flags for b in site.bindings if b.kind == "action" and b.flags]
    own = [
        _resolved(Guard(" or ".join(f"args.{dest_of(f)}" for f in fl), True, "action", 0, fl), site)
        for fl in given
    ] + own
    # (each guard resolved once: a second pass would substitute into what the first put in)
    all_guards = sorted((*own, *(_resolved(g, site) for g in passed)), key=lambda g: g.line)
    direct = _resolved(direct, site) if direct is not None else None
    names = list(site.flags) + [f for g in all_guards for f in g.flags]
    flags = tuple(dict.fromkeys(names + list(direct.flags if direct else ())))
    attrs = flag_attrs(flags, name_flags(site), profile, item_names(site))
    out: list[Reading] = []
    for g in all_guards:
        role = "gate" if g.kind in ("early-exit", "try", "passed") else "enclosing"
        out.append(Reading(g, _noted(atoms_of(g.test, g.holds, attrs), site, g), role))
    if direct is not None:
        atoms = _noted(atoms_of(direct.test, False, attrs), site, direct)
        out.append(Reading(direct, atoms, "direct"))
    elif any(r.role == "enclosing" for r in out):
        for i in range(len(out) - 1, -1, -1):
            if out[i].role == "enclosing":
                out[i] = Reading(out[i].guard, out[i].atoms, "direct")
                break
    else:
        # No if around the site: the early exit just before it is its test (`if
        # self.sleep_mode: return` then `raise` is `if not self.sleep_mode: raise`).
        for i in range(len(out) - 1, -1, -1):
            if out[i].guard.kind == "early-exit" and out[i].atoms:
                out[i] = Reading(out[i].guard, out[i].atoms, "direct")
                break
    return _chain_values(out)


def as_declared(out: Sequence[Reading], decls: Mapping[str, FlagDecl]) -> list[Reading]:
    """The readings with each value an option is compared with spelled as the option declares
    it: an enum's member (`MambaBackendEnum.TRITON`, read "TRITON") is the choice `triton`."""

    def spelled(a: Atom) -> Atom:
        decl = decls.get(a.flag or "")
        choices = {str(c).lower(): c for c in (decl.choices or ())} if decl else {}
        if not choices:
            return a
        one = lambda v: choices.get(v.lower(), v) if isinstance(v, str) else v  # noqa: E731
        value = tuple(map(one, a.value)) if isinstance(a.value, tuple) else one(a.value)
        return a if value == a.value else replace(a, value=value)

    return [replace(r, atoms=_given_empty(tuple(map(spelled, r.atoms)), decls)) for r in out]


def _given_empty(atoms: tuple[Atom, ...], decls: Mapping[str, FlagDecl]) -> tuple[Atom, ...]:
    """`x is not None and not x` in one test: the option given empty, one fact (`--x=""`
    for text, `--x=0` for a number), not "given" beside "left out"."""
    for a in atoms:
        if a.op != "is not None" or not a.holds:
            continue
        off = next((b for b in atoms if b.flag == a.flag and b.op == "unset"), None)
        decl = decls.get(a.flag or "")
        kind = (decl.type or "str") if decl else ""
        if off is None or not decl or "list" in kind.lower() or decl.action:
            continue
        empty = 0 if kind.replace("| None", "").strip() in ("int", "float") else ""
        fact = Atom(a.flag, "==", empty)
        return tuple(fact if b is a else b for b in atoms if b is not off)
    return atoms


def _chain_values(out: list[Reading]) -> list[Reading]:
    """An if/elif chain's `else` over one option's values (`== 0` ... `elif == 3` ... else)
    fires for every value but those: its direct fact is `--x not in (0, 1, 2, 3)`, not
    `--x != 3` with three more facts beside it."""
    if not out or out[-1].role != "direct" or len(out[-1].atoms) != 1:
        return out
    last = out[-1].atoms[0]
    if last.op not in ("!=", "not in") or not last.flag:
        return out
    siblings = [
        r
        for r in out[:-1]
        if r.role == "enclosing" and r.guard.kind == "elif" and not r.guard.holds
        and len(r.atoms) == 1 and r.atoms[0].flag == last.flag
        and r.atoms[0].op in ("!=", "not in")
    ]  # fmt: skip
    if not siblings:
        return out
    values = tuple(
        dict.fromkeys(
            v
            for a in [*(r.atoms[0] for r in siblings), last]
            for v in (a.value if a.op == "not in" else (a.value,))
        )
    )
    merged = replace(last, op="not in", value=values)
    kept = [r for r in out[:-1] if not any(r is s for s in siblings)]
    return [*kept, Reading(out[-1].guard, (merged,), "direct")]


def _resolved(g: Guard, site: Site) -> Guard:
    """The guard with the names its site's bindings know for sure replaced (records/names.py)."""
    test = resolve(g.test, g.line, site)
    if test == g.test:
        return g
    flags = tuple(dict.fromkeys(g.flags + value_flags(g.test, g.line, site)))
    return replace(g, test=test, flags=flags)


def _noted(atoms: tuple[Atom, ...], site: Site, g: Guard) -> tuple[Atom, ...]:
    said = {**_chain_notes(g.test), **notes(site, g.test)}
    return tuple(replace(a, via=said[a.flag]) if a.flag in said else a for a in atoms)


def _chain_notes(test: str) -> dict[str, str]:
    """flag -> "falling back to --b" for each `a or b`-style fallback chain in the test."""
    node = expr_or_none(test)
    out: dict[str, str] = {}
    for n in ast.walk(node) if node is not None else ():
        chain = _fallback(n, _ANY_ATTR) if isinstance(n, (ast.BoolOp, ast.IfExp)) else []
        if len(chain) > 1:
            out.setdefault(chain[0], "falling back to " + " and ".join(chain[1:]))
    return out


class _AnyAttr(dict):
    """Every attribute read counts as a flag (for spotting fallback chains in resolved tests)."""

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and not key.startswith("=")

    def __getitem__(self, key: str) -> str:
        return "--" + key.replace("_", "-")


_ANY_ATTR = _AnyAttr()


# ------------------------------------------------------------------ rendering


def show_value(value: Any) -> str:
    if isinstance(value, str):
        return value or '""'  # (the empty string, as a command line writes it)
    if isinstance(value, tuple):  # list literals were made tuples only to be hashable
        return "[" + ", ".join(repr(v) for v in value) + "]"
    return repr(value)


def cli_arg(
    flag: str, op: str, value: Any = None, *, choices: tuple[str, ...] | None = None
) -> str | None:
    """The command-line fragment that makes `flag op value` true, or None when unknown."""
    if op == "set":
        return flag
    if op in ("==", "in"):
        v = value[0] if op == "in" else value
        if v is True:
            return flag
        if v is False or v is None:
            return None
        return f"{flag}={show_value(v)}"
    if (
        op in (">", ">=", "<", "<=")
        and isinstance(value, (int, float))
        and not isinstance(value, bool)
    ):
        step = {">": 1, ">=": 0, "<": -1, "<=": 0}[op]
        return f"{flag}={show_value(value + step)}"
    if op == "is not None":
        return f"{flag}={choices[0]}" if choices else f"{flag}=<value>"
    if op in ("!=", "not in") and choices:
        banned = value if op == "not in" else (value,)
        for c in choices:  # (a None among the choices is leaving the option out: no word)
            if c not in {show_value(b) for b in banned} and c not in (None, "None"):
                return f"{flag}={c}"
    return None


def phrase(atom: Atom) -> str:
    """Plain words for an atom: `--x=1`, `--x set to a or b`, `` `expr` is false ``."""
    if atom.flag is None:
        words = atom.says[0 if atom.holds else 1]
        code = re.sub(r"\b(?:self|cfg)\.", "", atom.text)  # code no parser read: calls stay calls
        return words or f"`{code}` is {'true' if atom.holds else 'false'}"
    if atom.via:
        return f"{phrase(replace(atom, via=''))} ({atom.via})"
    f, v = atom.flag, atom.value
    if atom.op == "set":
        return f
    if atom.op == "unset":
        return f"{f} off"
    if atom.op == "==":
        return f if v is True else f"{f}={show_value(v)}"
    if atom.op == "!=":
        return f"{f} other than {show_value(v)}"
    if atom.op == "in":
        return f"{f}={show_value(v[0])}" if len(v) == 1 else f"{f} set to {or_list(v)}"
    if atom.op == "not in":
        return f"{f} not {or_list(v)}"
    if atom.op == "is None":
        return f"{f} unset"
    if atom.op == "is not None":
        return f"{f} set"
    return f"{f} {atom.op} {show_value(v)}"


def _as_code(node: ast.expr) -> Said:
    """A condition no words describe, as code a reader takes in: `x` is set / `code` is true.
    The receiver goes (`self.x` -> `x`), a call without arguments reads as its name, sets as
    tuples, and long list literals keep their first items, so nothing is cut mid-token."""
    node = _AsCode().visit(copy.deepcopy(node))
    if (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], (ast.Is, ast.IsNot))
        and is_none(node.comparators[0])
    ):
        left = _code(node.left)
        yes, no = f"`{left}` is unset", f"`{left}` is set"
        return (yes, no, "") if isinstance(node.ops[0], ast.Is) else (no, yes, "")
    code = _code(node)
    return f"`{code}` is true", f"`{code}` is false", ""


def _code(node: ast.expr) -> str:
    text = ast.unparse(node)
    if len(text) > 90:
        text = ast.unparse(_Elide().visit(node)).replace("'…'", "…")
    return text


_RECEIVERS = ("self", "cfg", "args", "server_args")


class _AsCode(ast.NodeTransformer):
    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.value, ast.Name) and node.value.id in _RECEIVERS:
            return ast.Name(id=node.attr, ctx=ast.Load())
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        args = node.args
        if (
            isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(args) in (2, 3)
            and isinstance(args[1], ast.Constant)
            and isinstance(args[1].value, str)
            and args[1].value.isidentifier()
        ):  # getattr(cfg, "x", None) reads cfg.x
            return self.visit_Attribute(
                ast.Attribute(value=args[0], attr=args[1].value, ctx=ast.Load())
            )
        return node  # a call stays a call: `path.is_file` would read as the method itself

    def visit_Set(self, node: ast.Set) -> ast.AST:
        self.generic_visit(node)
        return ast.Tuple(elts=node.elts, ctx=ast.Load())

    def visit_NamedExpr(self, node: ast.NamedExpr) -> ast.AST:
        return self.visit(node.value)  # `(x := self.x)` tests the value

    def visit_Dict(self, node: ast.Dict) -> ast.AST:
        return ast.Name(id="a_mapping", ctx=ast.Load())

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        return ast.Name(id="a_formatted_string", ctx=ast.Load())


class _Elide(ast.NodeTransformer):
    """`x in [a, b, c, d, e]` -> `x in [a, b, …]` (the caller turns the quoted '…' bare)."""

    def _shorten(self, node):
        self.generic_visit(node)
        if len(node.elts) > 3:
            node.elts = [*node.elts[:2], ast.Constant("…")]
        return node

    visit_List = visit_Tuple = visit_Set = _shorten


def or_list(values: tuple) -> str:
    return listed([show_value(v) for v in values] or ["no value"], " or ")


def join_words(items: list[str]) -> str:
    return listed(items, " and ")
