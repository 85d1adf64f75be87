"""What an option that takes JSON holds, and what each of its fields takes (runs in the child).

A JSON option's type function parses JSON text (`json.loads`), or validates it into a class of
the revision's (a config dataclass, `TypeAdapter(XConfig).validate_json`). That class's fields
are what the dotted options set (`--x-config.mode 3`), and each field's annotation, resolved by
the revision's own typing, says what it takes: a switch (`true`/`false`), a whole or a real
number, a list, one of some values (a `Literal`, an `Enum`), or JSON again. The parent puts
these on the dotted options (stage.parser_decls), so a candidate launch gives each field a
value its parser accepts instead of a placeholder it rejects.

Pure stdlib: `typing`, `dataclasses`, `enum`, `inspect`.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
import types
import typing
from typing import Any

_DEPTH = 4  # wrappers around a type function (`optional_type(parse_type(json.loads))`)
_LISTS = (list, tuple, set, frozenset)


def json_option(kind: Any) -> tuple[type | None, dict[str, dict[str, Any]]] | None:
    """None when `kind` (an argparse type) does not parse JSON; else the class it validates
    into (None for plain JSON data) and that class's fields, each described (`describe`)."""
    if not callable(kind):
        return None
    cls, loads = _behind(kind, _DEPTH, set())
    if cls is not None:
        return cls, fields_of(cls)
    if loads:
        return None, {}
    try:  # a type function that picks JSON by the text's shape (`{...}` or a plain word)
        value = kind("{}")
    except BaseException:  # noqa: BLE001 - a type function that refuses "{}" takes no JSON
        return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return type(value), fields_of(type(value))
    return (None, {}) if isinstance(value, dict) else None


def _behind(fn: Any, depth: int, seen: set[int]) -> tuple[type | None, bool]:
    """(the dataclass `fn` validates into, whether it ends in `json.loads`), read from what
    the function closes over and its default arguments (`cls=dataclass_cls`)."""
    if id(fn) in seen or depth < 0:
        return None, False
    seen.add(id(fn))
    if getattr(fn, "__name__", "") == "loads" and "json" in str(getattr(fn, "__module__", "")):
        return None, True
    held: list[Any] = []
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            held.append(cell.cell_contents)
        except ValueError:  # an empty cell
            continue
    held += list(getattr(fn, "__defaults__", None) or ())
    held += list((getattr(fn, "__kwdefaults__", None) or {}).values())
    loads = False
    for value in held:
        if isinstance(value, type) and dataclasses.is_dataclass(value):
            return value, True
        if isinstance(value, (types.FunctionType, types.BuiltinFunctionType)):
            cls, inner = _behind(value, depth - 1, seen)
            if cls is not None:
                return cls, True
            loads = loads or inner
    return None, loads


def fields_of(cls: type, depth: int = 2) -> dict[str, dict[str, Any]]:
    """field name -> what it takes, for every field of the dataclass `cls`; a field that is a
    dataclass of its own adds its fields too, as dotted names (`pass_config.enable_sp`)."""
    hints = _hints(cls)
    out: dict[str, dict[str, Any]] = {}
    for f in dataclasses.fields(cls):
        hint = hints.get(f.name, f.type)
        if isinstance(hint, str):
            continue  # an annotation the revision's typing could not resolve says nothing
        try:
            out[f.name] = describe(hint)
            inner = _dataclass_in(hint)
            if inner is not None and depth > 1:
                out.update({f"{f.name}.{k}": v for k, v in fields_of(inner, depth - 1).items()})
        except BaseException:  # noqa: BLE001 - a stubbed type in the annotation
            continue
    return {k: v for k, v in out.items() if v}


def _hints(cls: type) -> dict[str, Any]:
    """Each field's annotation resolved by the revision's own typing; one at a time when the
    class's do not resolve all together (a field naming what the sandbox stubbed, or a name
    imported only for type checkers, leaves the others' `Literal` choices readable)."""
    try:
        return typing.get_type_hints(cls, include_extras=True)
    except BaseException:  # noqa: BLE001 - an annotation naming what the sandbox stubbed
        pass
    module = sys.modules.get(cls.__module__)
    scope = dict(vars(module)) if module is not None else {}
    own = dict(vars(cls))
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        try:
            out[f.name] = eval(f.type, scope, own) if isinstance(f.type, str) else f.type  # noqa: S307 - the revision's own annotation, in the sandbox child
        except BaseException:  # noqa: BLE001 - this field's annotation says nothing usable
            continue
    return out


def _dataclass_in(hint: Any) -> type | None:
    """The dataclass an annotation names (`PassConfig`, `PassConfig | None`), or None."""
    for arg in (hint, *typing.get_args(hint)):
        if isinstance(arg, type) and dataclasses.is_dataclass(arg):
            return arg
    return None


def describe(hint: Any) -> dict[str, Any]:
    """{"type": "bool" | "int" | "float" | "str" | "list[X]" | "json", "choices": [...]}, as far
    as the annotation says; {} when it says nothing usable."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        return describe(args[0])
    if origin in (typing.Union, types.UnionType):
        parts = [describe(a) for a in args if a is not type(None)]
        parts = [p for p in parts if p]
        choices = [c for p in parts for c in p.get("choices", ())]
        if parts and all("choices" in p for p in parts):
            return {"type": parts[0]["type"], "choices": list(dict.fromkeys(choices))}
        # `int | str`: the first plain kind the value can take (a list, JSON, a number)
        return next((p for p in parts if "choices" not in p), parts[0] if parts else {})
    if origin is typing.Literal:
        values = [a for a in args if type(a) in (str, int, float, bool)]
        return {"type": type(values[0]).__name__, "choices": values} if values else {}
    if hint is bool:
        return {"type": "bool", "choices": [True, False]}
    if hint in (int, float, str):
        return {"type": hint.__name__}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _enum(hint)
    if origin in _LISTS or hint in _LISTS:
        inner = args[0] if args else str
        if typing.get_origin(inner) in (typing.Union, types.UnionType):
            # `list[int | str]`: each item one of the kinds (a word is an item too)
            kinds = [describe(a).get("type") for a in typing.get_args(inner) if a is not type(None)]
            return {"type": f"list[{' | '.join(dict.fromkeys(k for k in kinds if k))}]"}
        item = describe(inner)
        return {"type": f"list[{item.get('type', 'str')}]"}
    if origin is dict or hint is dict or dataclasses.is_dataclass(hint):
        return {"type": "json"}
    return {}


def _enum(cls: type[enum.Enum]) -> dict[str, Any]:
    """An Enum's members by value when their values are plain (`IntEnum`), else by name."""
    values = [m.value for m in cls]
    if values and all(type(v) in (str, int) for v in values):
        return {"type": type(values[0]).__name__, "choices": values}
    return {"type": "str", "choices": [m.name for m in cls]}
