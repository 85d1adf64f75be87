"""Values that make a guard come out the way the search needs (runs in the child).

When the run reaches a watched guard, the child evaluates it where the code does. If the
search asked for another truth value, the guard is evaluated again with some launch options'
attributes (or environment variables it reads) replaced, one at a time, then two; the first
assignments that give the wanted value, and keep every guard of the path that holds now
holding (`keep`), go back as candidate changes (`--tp-size 2 --moe-dp-size 2`, `--page-size
64`, `SGLANG_X=2`). The revision's own state is used throughout (values set by earlier steps,
FLA_CHUNK_SIZE, locals), and the harness still runs every candidate: nothing found here is
trusted by itself.
"""

from __future__ import annotations

import ast
import builtins
import itertools
import os
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from kverr.verify.sandbox import derive, stubs
from kverr.verify.sandbox.compared import compared_in, listed, others_words, separators
from kverr.verify.sandbox.steps import self_attr

_NUMBERS = (1, 2, 4, 8, 3, 16, 32, 64, 0, -1)
MAX_FOUND = 4
MAX_PER_NAME = 2  # solutions per option: a guard over two options offers both
MAX_TRIES = 1500  # evaluations per guard: a bound on time whatever the domains
ENV = "env:"  # an environment variable in a solution: ["env:SGLANG_X", "2"]
LOCAL = "local:"  # a local of the frame that holds an option's words (an Action's `values`)
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_UNSET = object()


def raises(thunk: Any, caught: Any) -> bool:
    """Whether `thunk()` raises one of `caught`: the guard of an `except` clause, "the try
    body raises" (search/core.py writes it as `__kverr_raises__(lambda: (...), (E, ...))`)."""
    try:
        thunk()
    except caught:
        return True
    return False


def solve(
    tree: ast.Expression,
    scope: dict[str, Any],
    want: bool,
    fields: Mapping[str, dict[str, Any]],
    extra: Sequence[str] = (),
    words: Sequence[str] = (),
    near: bool = False,
    keep: Sequence[ast.Expression] = (),
    owners: Mapping[str, Sequence[str]] | None = None,
    aliases: Mapping[str, str] | None = None,
) -> list[list[list[Any]]]:
    """Assignments [[option, value], ...] under which the guard evaluates to `want`.

    scope: the frame's globals and locals (with `self`); fields: attribute -> {"flag",
    "switch", "choices", "int", "list", "item"} for the attributes a launch option sets;
    keep: guards of the path (compiled to hold) that an assignment must not turn around;
    owners: word -> the attributes the function compares it with (values.owners);
    aliases: local -> the attribute it holds (a field validator's argument)."""
    aliases = aliases or {}
    # Values derived from options are read as what they derive from (derive.py), so that
    # `world_size > 8` is solved by the options whose product it is.
    options = {*fields, *(k[5:] for k in aliases if k.startswith("self."))}
    options |= {k.rpartition(".")[2] for k in fields if "." in k}  # a JSON option's fields
    tree = derive.expand(tree, scope, options) or tree
    obj = scope.get("self")
    has_obj = obj is not None and hasattr(obj, "__dict__")
    found_attrs = [*_self_attrs(tree), *extra]  # extra: what methods the guard calls read
    variables: list[tuple[str, list[Any]]] = []
    constants = _constants(tree, scope, obj if has_obj else None)
    strings = list(dict.fromkeys([*_strings(tree), *words]))  # words: the function's own

    containers = _containers(tree, scope)

    def domain(expr: Any, attr: str, current: Any) -> list[Any]:
        """The values to try for the option behind `attr`, as `expr` reads it."""
        mine = _mine(strings, expr, attr, owners)
        base = _domain(current, fields[attr], constants, mine, near, _own(expr, attr))
        found = [*_members(fields[attr], current, containers), *base]
        return [v for i, v in enumerate(found) if v != current and v not in found[:i]]

    for a in found_attrs:  # a config's own field that is an option of its own (`--x-config.a`)
        key = aliases.get(f"self.{a}")
        if a not in fields and key in fields:
            fields = {**fields, a: fields[key]}
    if has_obj:
        for a in dict.fromkeys(found_attrs):
            if a in fields and hasattr(obj, a):
                variables.append((a, domain(tree, a, getattr(obj, a))))
    # An option's value held by another object (a config built from the options copies them
    # by name: `parallel_config.tensor_parallel_size`), or by a local of its name or of a
    # name the search says stands for it (a validator's `value`): the same option's values.
    held = _held(tree, scope, fields, aliases)
    for key, (_, attr, current) in held.items():
        fields = {**fields, key: fields[attr]}
        variables.append((key, domain(tree, attr, current)))
    action = _action_option(scope, fields)
    if action is not None and _reads(tree, "values"):
        # An argparse Action's __call__: its option's words arrive as `values`, and the
        # guard's strings are what it compares them with.
        attr, field = action
        own = (_strings(tree), [], [])
        variables.append(
            (LOCAL + "values", _domain(scope["values"], field, constants, strings, near, own))
        )
        fields = {**fields, LOCAL + "values": field}
    for name in dict.fromkeys([*_env_names(tree, scope), *derive.env_reads(tree, scope)]):
        variables.append((ENV + name, _env_domain(name, _strings(tree), constants)))
    if not variables:
        return []
    code = compile(tree, "<guard>", "eval")
    keeps = [(k, compile(k, "<keep>", "eval")) for k in keep]
    keeps = [(k, c) for k, c in keeps if _value(c, scope, obj, {}) is True]  # what holds now
    # Options only a kept guard reads may change along with one the guard reads, so that
    # the earlier check still passes (`--page-size 3` wants `--mamba-track-interval 3` too).
    seen = {name for name, _ in variables}
    partners: list[tuple[str, list[Any]]] = []
    if has_obj:
        for k, _ in keeps:
            for a in _self_attrs(k):
                if a in fields and a not in seen and hasattr(obj, a):
                    seen.add(a)
                    partners.append((a, domain(k, a, getattr(obj, a))))
    found: list[list[list[Any]]] = []
    tries = 0
    per_option = MAX_PER_NAME if len(variables) > 1 else MAX_FOUND
    for size in (1, 2):
        combos = list(itertools.combinations(variables, size))
        if size == 2:
            combos += [(v, p) for v in variables for p in partners]
        for combo in combos:
            per_name = 0
            for values in itertools.product(*(domain for _, domain in combo)):
                tries += 1
                if tries > MAX_TRIES:
                    return found
                changed = {name: v for (name, _), v in zip(combo, values, strict=True)}
                if _value(code, scope, obj, changed) is not want:
                    continue
                if any(_value(c, scope, obj, changed) is not True for _, c in keeps):
                    continue
                found.append([[_flag(name, fields), v] for name, v in changed.items()])
                per_name += 1
                if len(found) >= MAX_FOUND:
                    return found
                if size == 1 and per_name >= per_option:
                    break
        if found:
            return found  # changing one option beats changing two
    return found


def exhausted(
    tree: ast.Expression,
    fields: Mapping[str, dict[str, Any]],
    frame_locals: Sequence[str],
    extra: Sequence[str] = (),
    aliases: Mapping[str, str] | None = None,
    scope: Mapping[str, Any] | None = None,
) -> bool:
    """Whether `solve` tried every value the guard can see: it reads options only through
    `self.x` (no local, no method of the object, no environment variable), each a switch or an
    option with choices whose every value, and every literal the validation code assigns it,
    were tried. An answer of no assignment then means no command line gives the guard the
    wanted value. `aliases`: `self.x` -> the option it is (a JSON option's field)."""
    attrs = _self_attrs(tree)
    aliases = aliases or {}
    fields = {
        **{a: fields[k] for a in attrs if (k := aliases.get(f"self.{a}")) in fields},
        **fields,
    }
    if not attrs or extra or _env_names(tree, scope):
        return False
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    if names & (set(frame_locals) - {"self"}):
        return False  # a local may hold anything another path gives it
    if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) for n in ast.walk(tree)):
        return False  # `self.m()` or `x.get()`: values the solver does not vary
    if any(not _pure(n.func.id, scope or {}) for n in ast.walk(tree)
           if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)):  # fmt: skip
        return False  # `is_torch_newer("2.9")`: the machine's answer, which a launch does not set
    size = 1
    for a in attrs:
        f = fields.get(a)
        if f is None or f.get("list") or f.get("assigned") is None or not f.get("default"):
            return False
        if not (f.get("switch") or f.get("choices")):
            return False
        size *= 2 if f.get("switch") else len(f["choices"]) + len(f.get("assigned") or ()) + 2
    return len(attrs) <= 2 and size <= MAX_TRIES


def _pure(name: str, scope: Mapping[str, Any]) -> bool:
    """A function of Python's own (`len`, `get_args`): its answer depends on its arguments
    alone, never on the machine the project's helpers may ask."""
    obj = scope.get(name, getattr(builtins, name, None))
    module = str(getattr(obj, "__module__", None) or "")
    return module == "builtins" or module.partition(".")[0] in sys.stdlib_module_names


def _mine(
    strings: list[str],
    tree: ast.AST,
    attr: str,
    owners: Mapping[str, Sequence[str]] | None = None,
) -> list[str]:
    """The guard's and function's strings less those the guard or the function compares
    another attribute with (`self.a == "x" and len(self.items) > 2` offers "x" to a alone)."""
    others = others_words(tree, attr)
    owners = owners or {}
    return [s for s in strings if s not in others and attr in owners.get(s, (attr,))]


def _own(tree: ast.AST, attr: str) -> tuple[list[str], list[str], list[str]]:
    """What the guard itself says about a free-text attribute: the strings it compares it
    with, the fragments it looks for in it, the separators it splits it by."""
    here, fragments = compared_in(tree, attr)
    return here, fragments, separators(tree, attr)


def _flag(name: str, fields: Mapping[str, dict[str, Any]]) -> str:
    if name.startswith(HELD):
        return fields[_HOLDERS[name][3]]["flag"]
    return name if name.startswith(ENV) else fields[name]["flag"]


def _action_option(
    scope: dict[str, Any], fields: Mapping[str, dict[str, Any]]
) -> tuple[str, dict[str, Any]] | None:
    """(attribute, field) of the option whose argparse Action is running in this frame."""
    obj = scope.get("self")
    dest = getattr(obj, "dest", None) if "values" in scope and "namespace" in scope else None
    if not isinstance(dest, str) or dest not in fields:
        return None
    return dest, {**fields[dest], "list": isinstance(scope["values"], list)}


def _reads(tree: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(tree))


HELD = "held:"  # another object's attribute in a solution's key: "held:parallel_config.tp"
# the current solve's held keys: (holder, its attribute, current value, the option's field)
_HOLDERS: dict[str, tuple[Any, str, Any, str]] = {}


def _held(
    tree: ast.AST, scope: dict[str, Any], fields: Mapping[str, Any], aliases: Mapping[str, str]
) -> dict[str, tuple[Any, str, Any]]:
    """key -> (holder, the option's field, current value) for each option value the guard
    reads off an object other than `self` (a name or a chain of attributes, never a call)
    whose own attributes hold it, by the option's name (`parallel_config.tensor_parallel_size`)
    or as a JSON option's field (`self.compilation_config.pass_config.enable_sp` is the field
    `compilation_config.pass_config.enable_sp`), and LOCAL keys for a local named like an
    option or aliased to one."""
    _HOLDERS.clear()
    out: dict[str, tuple[Any, str, Any]] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and n.id != "self" and n.id in scope:
            named = aliases.get(n.id)  # (a JSON option's field first, known by its dest)
            attr = (
                aliases.get(f"self.{named}", named) if named else (n.id if n.id in fields else "")
            )
            if attr in fields and _data(scope[n.id]):
                out[LOCAL + n.id] = (None, attr, scope[n.id])
        if not isinstance(n, ast.Attribute) or not derive.chain(n.value):
            continue
        # a JSON option's own field (`self.compilation_config.x` is --compilation-config.x)
        # before an option of the same name (`--x`) that a config copies by name
        field = _dotted(n, fields) or (n.attr if n.attr in fields else "")
        if not field:
            try:  # a config's field built from an option of another name (reading.copied)
                kind = type(eval(compile(ast.Expression(n.value), "<of>", "eval"), scope))  # noqa: S307
            except BaseException:  # noqa: BLE001 - no object there
                continue
            field = aliases.get(f"{kind.__name__}.{n.attr}", "")
            if field not in fields:
                continue
        if isinstance(n.value, ast.Name) and n.value.id == "self":
            continue
        try:
            holder = eval(compile(ast.Expression(n.value), "<holder>", "eval"), scope)  # noqa: S307
            own = holder.__dict__
        except BaseException:  # noqa: BLE001 - no object there, or one without attributes
            continue
        if type(holder).__name__ == "Facts" or isinstance(holder, type):
            continue  # a model profile's object, or a class's default, is no option
        if n.attr not in own or not _data(own[n.attr]):
            continue
        key = f"{HELD}{ast.unparse(n.value)}.{n.attr}"
        _HOLDERS[key] = (holder, n.attr, own[n.attr], field)
        out[key] = (holder, field, own[n.attr])
    return out


def _dotted(node: ast.Attribute, fields: Mapping[str, Any]) -> str:
    """The JSON option field a chain ends in (`x.compilation_config.mode` ->
    "compilation_config.mode"), or ""."""
    parts = ast.unparse(node).split(".")
    for i in range(len(parts) - 1):
        if (path := ".".join(parts[i:])) in fields:
            return path
    return ""


def _containers(tree: ast.AST, scope: dict[str, Any]) -> list[list[str]]:
    """Collections of words the guard reads (a constant list, a registry's keys, a class's
    list of names): their members are values an option compared with them may take."""
    out: list[list[str]] = []
    for n in ast.walk(tree):
        if not isinstance(n, (ast.Name, ast.Attribute)) or not derive.chain(n):
            continue
        try:
            value = eval(compile(ast.Expression(n), "<container>", "eval"), scope)  # noqa: S307
        except Exception:  # nothing there (a local of the frame, a name the stubs lack)
            continue
        if type(value) in (list, tuple, set, frozenset, dict) and 0 < len(value) <= 64:
            items = list(value)
            if all(type(v) is str for v in items) and items not in out:
                out.append(items if type(value) in (list, tuple) else sorted(items))
    return out


def _members(field: Mapping[str, Any], current: Any, containers: list[list[str]]) -> list[Any]:
    """Values the collections a guard reads offer an option: for a list of words, each whole
    collection (every item the guard looks for); for free text, each member (`x in
    KNOWN_NAMES`). An option with choices, a number, a switch or JSON has its own values."""
    if field.get("list") and field.get("item") not in ("int", "float"):
        return [list(c) for c in containers]
    typed = any(field.get(k) for k in ("choices", "int", "float", "switch", "json", "list"))
    if typed or not (current is None or type(current) is str):
        return []
    return [w for c in containers for w in c]


def _self_attrs(tree: ast.AST) -> list[str]:
    return list(dict.fromkeys(a for n in ast.walk(tree) if (a := self_attr(n))))


def _env_names(tree: ast.AST, scope: Mapping[str, Any] | None = None) -> list[str]:
    """Environment variables the guard reads: `os.environ.get("X")`, `os.getenv("X")`,
    `get_bool_env_var("X")`, `envs.X.get()`: a name in capitals with an underscore, as a
    string argument of a call or subscript, or an attribute that is called through; and
    `envs.X`, read off a module (one that answers its attributes from the environment)."""
    out: list[str] = []
    for n in ast.walk(tree):
        if (
            isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name)
            and stubs.is_module((scope or {}).get(n.value.id))
        ):
            out.append(n.attr)
        if isinstance(n, ast.Call):
            for arg in n.args[:1]:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    out.append(arg.value)
            f = n.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Attribute):
                out.append(f.value.attr)  # envs.X.get()
        elif isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant):
            if isinstance(n.slice.value, str):
                out.append(n.slice.value)  # os.environ["X"]
    return [x for x in dict.fromkeys(out) if _ENV_NAME.fullmatch(x)]


def _env_domain(name: str, strings: list[str], constants: Sequence[int] = ()) -> list[Any]:
    """Values worth trying for an environment variable: the guard's own short strings ("1",
    "2"), then the usual switches, then the numbers around those the guard compares with
    (`envs.VLLM_DP_SIZE > 1`: 2), then unset (None)."""
    values = [s for s in strings if 0 < len(s) <= 16 and not _ENV_NAME.fullmatch(s)]
    values += ["1", "true", "0", "false"]
    values += [str(c + k) for c in constants if abs(c) < 1 << 20 for k in (1, -1)]
    values.append(None)
    current = os.environ.get(name)
    return [v for v in dict.fromkeys(values) if v != current]


def _constants(tree: ast.AST, scope: dict[str, Any], obj: Any) -> list[int]:
    """Numbers the guard mentions or reads: literals, module constants (FLA_CHUNK_SIZE),
    other attributes' values, and what a side of a comparison comes to
    (`get_config(self.model).max_position_embeddings`)."""
    out: list[int] = []
    sides = {
        id(side)
        for n in ast.walk(tree)
        if isinstance(n, ast.Compare)
        for side in (n.left, *n.comparators)
        if isinstance(side, (ast.Attribute, ast.Call, ast.Subscript, ast.BinOp))
    }
    for n in ast.walk(tree):
        value: Any = None
        if isinstance(n, ast.Constant):
            value = n.value
        elif isinstance(n, ast.Name):
            value = scope.get(n.id)
        elif self_attr(n) and obj is not None:
            value = obj.__dict__.get(n.attr)
        elif id(n) in sides:
            value = _side(n, scope)
        if type(value) is float and value.is_integer() and abs(value) < 2**53:
            value = int(value)  # a length derived as a float (`min(inf, 32768)`)
        if type(value) is int:
            out.append(value)
    return out


def _side(node: ast.expr, scope: dict[str, Any]) -> Any:
    """A side of a comparison as the run has it right now (None when it does not evaluate)."""
    noted = len(stubs.NOTES)
    try:
        return eval(compile(ast.Expression(node), "<side>", "eval"), scope)  # noqa: S307
    except BaseException:  # noqa: BLE001 - a side that does not evaluate names no number
        return None
    finally:
        del stubs.NOTES[noted:]


def _numbers(current: Any, constants: list[int]) -> list[int]:
    """The numbers the guard itself names first (the other side of a comparison, a constant
    such as FLA_CHUNK_SIZE), then the nearest to the current value; positive before zero and
    negative, which are rarely what a user means."""
    here = current if type(current) is int else 1
    named = [c for c in dict.fromkeys(constants) if c > 0 and c != current]
    rest = [*_NUMBERS, *(c * 2 for c in constants if c > 0)]
    rest = sorted(dict.fromkeys(v for v in rest if v not in named and v != current),
                  key=lambda v: (v <= 0, abs(v - here), v))  # fmt: skip
    return named + rest


def _strings(tree: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and type(n.value) is str]


def _domain(
    current: Any,
    field: Mapping[str, Any],
    constants: list[int],
    strings: list[str],
    near: bool = False,
    own: tuple[Sequence[str], Sequence[str], Sequence[str]] = ((), (), ()),
) -> list[Any]:
    """Values worth trying for one attribute: the other truth value of a switch, the other
    choices, a few numbers around the guard's own (ints and floats); for free text, the
    strings the guard compares this attribute with (`own`: values, fragments looked for in
    it), then the values the option is known to take (its help's examples, what the code
    compares it with elsewhere: verify/search/values.py) and its sample value; a value the guard
    splits into a list, those values' items repeated or with a stranger among them. Never the
    guard's or the function's other strings: those are other options' words (`--device
    flashinfer`)."""
    if field.get("switch"):
        return [not current] if type(current) is bool else [True, False]
    if field.get("json"):
        return _objects(current, strings)
    if field.get("list"):
        # Items the guard compares it with, the option's known values and its sample first;
        # a bare symbol ("=", ":") is a part of an item, never an item.
        # (A sample that is only the option's name in capitals is no item anyone writes.)
        numeric = field.get("item") in ("int", "float")
        usable = field.get("sample") not in (None, _metavar(field)) and not numeric
        sample = [field["sample"]] if usable else []
        # ("all" in self.modules: for a list, what `in` looks for is an item.)
        words = [*own[0], *own[1], *field.get("values", ()), *sample, *strings]
        words = list(dict.fromkeys(words))
        lists = _lists(current, words, near, field.get("choices") or (), field.get("item"),
                       constants)  # fmt: skip
        if numeric:
            # the parsed list holds numbers: its items compared as numbers (`node < 0`)
            return [[as_number(w) for w in v] for v in lists]
        return lists
    if field.get("choices"):
        # The parser's choices, then what the validation code itself assigns the attribute.
        values = [*field["choices"], *field.get("default", ()), *(field.get("assigned") or ())]
        return [c for c in dict.fromkeys(values) if c != current and plain_value(c)]
    if field.get("int") or type(current) is int:
        numbers = _numbers(current, constants)
        sample = field.get("sample")
        if current is None and isinstance(sample, str) and sample.isdigit():
            # An option left out takes what a user would write first (a port: 30000).
            numbers = [int(sample), *(n for n in numbers if n != int(sample))]
        if near:
            # A fix takes what a deployment would write (a value the code or the help uses,
            # a number the guard names, the default) before the guard's boundary (`> 0` -> 1).
            typical = [v for v in field.get("typical", ()) if type(v) is int and v != current]
            named = [c for c in dict.fromkeys(constants) if c > 1 and c != current]
            default = [v for v in field.get("default", ()) if type(v) is int and v > 0]
            liked = [v for v in (*typical, *named, *default) if v != current]
            numbers = list(dict.fromkeys([*liked, *numbers]))
            if default and all(type(v) is int and v > 0 for v in field.get("default", ())):
                # A size or count (its default is positive) is never fixed by 0 or -1, which
                # pass a `> 1` check only by saying nothing a deployment means.
                numbers = [v for v in numbers if v > 0 or v in constants]
        return numbers
    if type(current) is float or field.get("float"):
        values = [0.5, 1.0, 0.0, 2.0, -1.0, 0.25, *map(float, constants)]
        return [v for v in dict.fromkeys(values) if v != current]
    if current is None or type(current) is str:
        here, fragments, seps = own
        known = [*here, *field.get("values", ())]
        # A part the guard looks for inside the value (`":" in addr`): a known value that
        # holds it, else a bare word around it.
        holding = [v for s in fragments for v in known if s and s in v]
        holding += [f"x{s}x" for s in fragments if s and not any(s in v for v in known)]
        for sep in seps:
            holding += listed([*known, field.get("sample") or ""], sep)
        # Then the option's name in capitals: some other value, as `--help` names it. ""
        # is how a command line empties a string option that has a default; None leaves the
        # option out (tried as a removal, last).
        found = [*known, *holding, field.get("sample"), _metavar(field), "", None]
        return [v for v in dict.fromkeys(found) if v != current and (v is None or type(v) is str)]
    return []


_WORDS = ("1", "2", "0", "-1", "0.5", "x")


def _metavar(field: Mapping[str, Any]) -> str:
    """The option's name in capitals (`--eplb-algorithm` -> EPLB_ALGORITHM)."""
    return str(field.get("flag", "")).lstrip("-").replace("-", "_").upper()


def plain_value(value: Any) -> bool:
    return type(value) in (str, int, float, bool) or value is None


def _data(value: Any) -> bool:
    """A plain value or a list of them (a validator's `value` of a list option)."""
    return plain_value(value) or (type(value) in (list, tuple) and all(map(plain_value, value)))


def _objects(current: Any, strings: list[str]) -> list[Any]:
    """JSON objects for an option parsed as JSON: one with a key nothing expects, the empty
    one, one per word of the guard, the current one with a key added or removed."""
    base = dict(current) if isinstance(current, dict) else {}
    words = [w for w in strings if w and w.isidentifier()][:6]
    out: list[Any] = [{"x": 1}, {}, *({w: 1} for w in words)]
    out += [{**base, "x": 1}, *({k: v for k, v in base.items() if k != drop} for drop in base)]
    unique: dict[str, Any] = {}
    for v in out:
        if v != current:
            unique.setdefault(repr(v), v)
    return list(unique.values())


def _items(strings: list[str], choices: Sequence[Any], item: str | None) -> list[str]:
    """Words a list option's items can be: its choices (the guard's own first), numbers for
    a list of numbers, else the guard's words and a few plain ones."""
    if choices:
        named = [s for s in strings if s in choices]
        return list(dict.fromkeys([*named, *(str(c) for c in choices)]))
    if item in ("int", "float"):
        numeric = [s for s in strings if re.fullmatch(r"-?\d+(\.\d+)?", s)]
        return list(dict.fromkeys([*numeric, "1", "2", "3", "4", "0", "-1"]))
    joined = [a + b for a in strings for b in strings if 0 < len(a) <= 2 and 0 < len(b) <= 2]
    # an empty word last: a list of names may hold one by mistake (`--x ''`)
    return list(dict.fromkeys([*filter(_word, strings), *joined[:4], *_WORDS, ""]))


def as_number(word: str) -> Any:
    """A word as a number when it reads as one (a list item, a config file's value), else
    the word itself."""
    try:
        return int(word)
    except ValueError:
        try:
            return float(word)
        except ValueError:
            return word


def _word(s: str) -> bool:
    """An item by itself: a bare symbol ("=", ":") is only ever part of one."""
    return any(c.isalnum() for c in s)


def _lists(
    current: Any,
    strings: list[str],
    near: bool = False,
    choices: Sequence[Any] = (),
    item: str | None = None,
    constants: Sequence[int] = (),
) -> list[list[str]]:
    """Lists one edit away from the current one (an item replaced, added or dropped), and
    fresh ones that start with a word the guard tests (`["tse", "1", "2", "3"]`), two different
    items, and lists as long as a number the guard reads, plus one (`len(x) <= 8`); with `near`
    (a fix, not a way in) the one-edit ones first."""
    base = [str(v) for v in current] if isinstance(current, (list, tuple)) else []
    words = _items(strings, choices, item)
    # a list of choices or numbers starts with one of its own items, never another word
    own = choices or item in ("int", "float")
    heads = [s for s in strings if s in words] if own else list(filter(_word, strings))
    edits: list[list[str]] = []
    if len(base) > 1:
        # an item dropped first, the last first: the list as the user wrote it, less the
        # item the check counts twice or refuses (`["all", "all"]` -> `["all"]`)
        edits += [[*base[:i], *base[i + 1 :]] for i in reversed(range(len(base)))]
    for i in range(len(base)):
        edits += [[*base[:i], w, *base[i + 1 :]] for w in words]
    edits += [[*base, w] for w in words]
    if base:
        edits.append(base[:-1])
    out: list[list[str]] = [*edits] if near else []
    out.append([])
    # Shortest first across words: a guard that wants "not tse" tries every other word before
    # longer lists of one word, so two chained guards settle in a step or two.
    out += [[s] for s in heads]
    if choices or item in ("int", "float"):
        out += [[w] for w in words]
        out += [[a, b] for a in (heads or words)[:3] for b in words if b != a]
    else:
        out += [[s, "1"] for s in heads]
        out += [[s, "1", "2", "3"] for s in heads]
    for n in sorted({c + k for c in constants if 0 < c <= 16 for k in (0, 1)} | {4}):
        out.append([words[i % len(words)] if choices else _nth(i, item) for i in range(n)])
    if not near:
        out += edits
    unique: dict[tuple[str, ...], list[str]] = {}
    for v in out:
        if v != base:
            unique.setdefault(tuple(v), v)
    return list(unique.values())


def _nth(i: int, item: str | None) -> str:
    """The i-th item of a long list: distinct numbers, or distinct names."""
    return str(i + 1) if item in ("int", "float") else f"x{i + 1}"


def _value(code: Any, scope: dict[str, Any], obj: Any, changed: dict[str, Any]) -> bool | None:
    """The guard with some attributes (and environment variables) changed in place, then put
    back (cheaper than a copy of an object with hundreds of fields, and methods of the object
    see the change)."""
    held = {k: v for k, v in changed.items() if k.startswith(HELD)}
    if held:  # another object's attribute: set on it, the rest as below
        holder, attr, _, _ = _HOLDERS[next(iter(held))]
        key = next(iter(held))
        saved_held = holder.__dict__.get(attr, _UNSET)
        holder.__dict__[attr] = held[key]
        try:
            rest = {k: v for k, v in changed.items() if k != key}
            return _value(code, scope, obj, rest)
        finally:
            if saved_held is _UNSET:
                holder.__dict__.pop(attr, None)
            else:
                holder.__dict__[attr] = saved_held
    attrs = {k: v for k, v in changed.items() if not k.startswith((ENV, LOCAL))}
    env = {k[len(ENV) :]: v for k, v in changed.items() if k.startswith(ENV)}
    local = {k[len(LOCAL) :]: v for k, v in changed.items() if k.startswith(LOCAL)}
    saved_local = {name: scope.get(name, _UNSET) for name in local}
    scope.update(local)
    saved = {attr: obj.__dict__[attr] for attr in attrs if attr in obj.__dict__} if attrs else {}
    saved_env = {name: os.environ.get(name, _UNSET) for name in env}
    noted = len(stubs.NOTES)
    try:
        if attrs:
            obj.__dict__.update(attrs)
        _put_env(env, None)
        return bool(eval(code, scope))  # noqa: S307 - the revision's guard, in the sandbox
    except BaseException:  # noqa: BLE001 - an assignment the guard cannot take offers nothing
        return None
    finally:
        for attr in attrs:
            obj.__dict__.pop(attr, None)
        if saved:
            obj.__dict__.update(saved)
        _put_env(saved_env, _UNSET)
        for name, v in saved_local.items():
            if v is _UNSET:
                scope.pop(name, None)
            else:
                scope[name] = v
        del stubs.NOTES[noted:]


def _put_env(values: Mapping[str, Any], absent: object) -> None:
    """Each variable set to its value, or unset where the value is `absent`."""
    for name, v in values.items():
        if v is absent:
            os.environ.pop(name, None)
        else:
            os.environ[name] = str(v)
