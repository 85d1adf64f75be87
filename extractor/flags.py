"""CLI flags: what the source declares (dataclass fields, `add_argument`) and how an attribute
read on the server-args object maps to a `--flag`."""

from __future__ import annotations

import ast
import dataclasses

from kverr.extractor.context import ModuleContext, const_eval, is_args_class

from kverr.ftypes import FlagDecl


def dest_to_flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def flag_decls(tree: ast.Module, ctx: ModuleContext, path: str) -> tuple[FlagDecl, ...]:
    """Every declared flag: dataclass field and add_argument merged per dest, first-seen order."""
    fields: dict[str, FlagDecl] = {}
    args: dict[str, FlagDecl] = {}
    aliases: dict[str, tuple[str, str]] = {}  # alias dest -> (add_argument dest, option string)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and is_args_class(node):
            for decl in _field_decls(node, path):
                fields.setdefault(decl.dest, decl)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "add_argument":
                decl = _argument_decl(node, ctx, path)
                if decl is not None:
                    args.setdefault(decl.dest, decl)
                    for option in _options(node):
                        aliases.setdefault(
                            option.lstrip("-").replace("-", "_"), (decl.dest, option)
                        )
    # `--tensor-parallel-size/--tp-size` stores into tensor_parallel_size while the dataclass
    # field is tp_size: the field's spelling among the options joins the two.
    merged_into: dict[str, str] = {}
    for dest in fields:
        if dest not in args and dest in aliases and aliases[dest][0] not in fields:
            arg_dest, option = aliases[dest]
            args[dest] = dataclasses.replace(
                args[arg_dest], name=option, dest=dest, arg_dest=arg_dest
            )
            merged_into[arg_dest] = dest
    order = list(fields) + [d for d in args if d not in fields and d not in merged_into]
    return tuple(_merge(fields.get(d), args.get(d)) for d in order)


def _options(call: ast.Call) -> list[str]:
    return [
        a.value
        for a in call.args
        if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("-")
    ]


def _src(node: ast.AST | None) -> str | None:
    """Source text of a declaration part; ast.unparse is stable and needs no file text."""
    return None if node is None else ast.unparse(node)


def _field_decls(cls: ast.ClassDef, path: str) -> list[FlagDecl]:
    out = []
    for stmt in cls.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        ann = _src(stmt.annotation) or ""
        if "ClassVar" in ann or stmt.target.id.startswith("_"):
            continue
        default, help_text = _src(stmt.value), None
        if isinstance(stmt.value, ast.Call) and _callee(stmt.value.func) == "field":
            kw = {k.arg: k.value for k in stmt.value.keywords if k.arg}
            default = _src(kw.get("default")) or (
                f"{_src(kw['default_factory'])}()" if "default_factory" in kw else None
            )
            meta = kw.get("metadata")
            if isinstance(meta, ast.Dict):
                for k, v in zip(meta.keys, meta.values, strict=True):
                    if isinstance(k, ast.Constant) and k.value == "help":
                        h = const_eval(v, {})
                        help_text = h if isinstance(h, str) else _src(v)
        dest = stmt.target.id
        out.append(
            FlagDecl(
                name=dest_to_flag(dest),
                dest=dest,
                help=help_text,
                default=default,
                type=ann,
                file=path,
                line=stmt.lineno,
            )
        )
    return out


def _callee(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _argument_decl(call: ast.Call, ctx: ModuleContext, path: str) -> FlagDecl | None:
    names = _options(call)
    if not names:
        return None  # positional argument or computed name: not a --flag
    long = next((n for n in names if n.startswith("--")), names[0])
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    dest = const_eval(kw["dest"], {}) if "dest" in kw else long.lstrip("-").replace("-", "_")
    if not isinstance(dest, str):
        return None
    help_value = const_eval(kw["help"], ctx.constants) if "help" in kw else None
    # choices: the literal a name was first bound to, even when plugins extend it later
    choices = const_eval(kw["choices"], ctx.literals) if "choices" in kw else None
    action = const_eval(kw["action"], {}) if "action" in kw else None
    return FlagDecl(
        name=long,
        dest=dest,
        help=help_value if isinstance(help_value, str) else _src(kw.get("help")),
        default=_src(kw.get("default")),
        choices=tuple(str(c) for c in choices)
        if isinstance(choices, (list, tuple)) or (isinstance(choices, dict))
        else None,
        type=_src(kw.get("type")),
        action=action if isinstance(action, str) else _src(kw.get("action")),
        file=path,
        line=call.lineno,
    )


def _merge(field_decl: FlagDecl | None, arg_decl: FlagDecl | None) -> FlagDecl:
    """Field + add_argument for one dest: the option spelling, help, type and action of
    add_argument win; the dataclass default wins over add_argument's usual `ServerArgs.x`."""
    if field_decl is None or arg_decl is None:
        decl = field_decl or arg_decl
        assert decl is not None
        return decl
    merged = {}
    for f in dataclasses.fields(FlagDecl):
        a, b = getattr(arg_decl, f.name), getattr(field_decl, f.name)
        merged[f.name] = a if a not in (None, "") else b
    default = arg_decl.default
    if default is None or default.endswith("." + arg_decl.dest):
        merged["default"] = field_decl.default
    return FlagDecl(**merged)
