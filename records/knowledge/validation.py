"""Code over parsed `args`: the pre-flight check (`validationCode`), the isinstance check
(`typeGuard`) and how a launching program catches the error (`tryCatchPattern`).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from kverr.extractor.phases import negate
from kverr.extractor.pysource import NOT_LITERAL, expr_or_none, literal
from kverr.records.conditions import Reading, dest_of
from kverr.records.knowledge import earlier
from kverr.records.knowledge.facts import Facts, in_files
from kverr.records.knowledge.fixes import solutions

from kverr.ftypes import FlagDecl


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
        expr = _args_expr(r.guard.test, r, f.decls)
        if expr is None:
            return None
        # read each flag as the check does, after the phases before it (earlier.py)
        forms = earlier.steps(f, r.guard.line)[0]
        expr = earlier.substitute(expr if r.guard.holds else negate(expr), forms)
        # The parser leaves an option it has no default for at None, which a comparison or
        # arithmetic cannot take (`None > 1`): such an option is tested for being given first.
        unset = [s for s in _ordered_sides(expr) if _may_be_none(s, f.decls)]
        tested = set(terms) | set(earlier.conjuncts(expr))
        given = [_is_not_none(s) for s in unset]
        terms += [g for g in given if g not in tested]
        terms.append(expr)
    if not terms:
        return None
    if len(terms) > 1:
        # `a or b` joined by `and` would bind as `x and a or b`
        terms = [f"({t})" if _binds_looser(t) else t for t in terms]
    cond = terms[0] if len(terms) == 1 else "(\n    " + "\n    and ".join(terms) + "\n)"
    head = "import os\n\n" if "os.path." in cond else ""
    return f"{head}if {cond}:\n    raise SystemExit({_check_message(f)})"


def _check_message(f: Facts) -> str:
    """The message as a Python literal; an f-string over `args` when every runtime value in it
    is a flag, so the check prints what the program would."""
    if not f.message:
        return repr(f"{f.site.error_class or 'error'} at {f.site.file}")
    dests = _namespace(f.site.flags, f.decls)
    out = []
    for part in f.site.template.parts:
        if part.is_literal:
            out.append((part.text or "").replace("{", "{{").replace("}", "}}"))
            continue
        node = expr_or_none(part.expr or "")
        if node is None:
            return repr(f.message)
        expr = ast.unparse(_ToArgs(dests).visit(node))
        if not all(
            _is_args_attr(n) or isinstance(n, ast.Name) and n.id == "args"
            for n in ast.walk(expr_or_none(expr))
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


def _args_expr(test: str, r: Reading, decls: dict[str, FlagDecl]) -> str | None:
    """The guard over parsed `args`, or None when it reads anything but flags (a platform
    probe, a model attribute, a local variable). Calls are limited to a few pure builtins,
    string methods on a flag and `os.path` existence checks, so the check runs anywhere."""
    node = expr_or_none(test)
    if node is None:
        return None
    flags = [a.flag for a in r.atoms if a.flag] + [fl for a in r.atoms for fl in a.flags]
    node = _ToArgs(_namespace((*flags, *r.guard.flags), decls)).visit(node)
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


def _ordered_sides(expr: str) -> list[str]:
    """The values an expression orders or computes with (`<`, `>=`, `%`, `*`, ...) that read a
    flag: `args.x`, or a flag as an earlier phase left it (`(1 if args.y else args.x)`)."""
    node = expr_or_none(expr)
    out: list[str] = []
    for n in ast.walk(node) if node is not None else ():
        sides: list[ast.expr] = []
        if isinstance(n, ast.Compare) and any(
            isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in n.ops
        ):
            sides = [n.left, *n.comparators]
        elif isinstance(n, ast.Compare) and isinstance(n.ops[0], (ast.In, ast.NotIn)):
            sides = n.comparators[:1]  # `x in None` is a TypeError too
        elif isinstance(n, ast.BinOp):
            sides = [n.left, n.right]
        out += [ast.unparse(s) for s in sides if _leaves(s)]
    return list(dict.fromkeys(out))


def _binds_looser(expr: str) -> bool:
    node = expr_or_none(expr)
    return isinstance(node, (ast.IfExp, ast.Lambda, ast.NamedExpr)) or (
        isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or)
    )


def _is_not_none(side: str) -> str:
    node = ast.Compare(expr_or_none(side), [ast.IsNot()], [ast.Constant(None)])  # type: ignore[arg-type]
    return ast.unparse(node)


def _leaves(n: ast.expr) -> list[ast.expr]:
    """What a value can turn out to be: itself, or each branch of a conditional or and/or."""
    if isinstance(n, ast.IfExp):
        return _leaves(n.body) + _leaves(n.orelse)
    if isinstance(n, ast.BoolOp):
        return [leaf for v in n.values for leaf in _leaves(v)]
    return [n] if _is_args_attr(n) or isinstance(n, ast.Constant) else []


def _may_be_none(side: str, decls: dict[str, FlagDecl]) -> bool:
    """Whether the value can be None: a branch is the constant None, or an option whose
    default is None or not a literal number the parser would put there."""
    node = expr_or_none(side)
    for leaf in _leaves(node) if node is not None else ():
        if isinstance(leaf, ast.Constant):
            if leaf.value is None:
                return True
        elif _attr_may_be_none(leaf.attr, decls):  # type: ignore[attr-defined]
            return True
    return False


def _attr_may_be_none(attr: str, decls: dict[str, FlagDecl]) -> bool:
    for d in decls.values():
        if (d.arg_dest or d.dest) == attr:
            value = literal(d.default) if d.default is not None else None
            if value is NOT_LITERAL:
                return True
            return not isinstance(value, (int, float)) or isinstance(value, bool)
    return False


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


def _namespace(flags: Sequence[str | None], decls: dict[str, FlagDecl]) -> dict[str, str]:
    """attribute read in the code -> the name the real parser's Namespace holds it under
    (`moe_dp_size` -> `moe_data_parallel_size`), so the check runs on `parser.parse_args()`."""
    out = {}
    for fl in flags:
        if fl:
            d = decls.get(fl)
            out[dest_of(fl)] = (d.arg_dest if d else None) or dest_of(fl)
    return out


class _ToArgs(ast.NodeTransformer):
    def __init__(self, dests: dict[str, str]) -> None:
        self.dests = dests

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if node.attr in self.dests:
            return ast.Attribute(
                value=ast.Name(id="args", ctx=ast.Load()),
                attr=self.dests[node.attr],
                ctx=ast.Load(),
            )
        return self.generic_visit(node)


def type_guard(f: Facts) -> str | None:
    """The isinstance check the direct condition performs, over parsed `args`."""
    for r in f.readings:
        if r.role != "direct" or "isinstance(" not in r.guard.test:
            continue
        node = expr_or_none(r.guard.test)
        for n in ast.walk(node) if node is not None else ():
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Name)
                and n.func.id == "isinstance"
            ):
                dests = _namespace((*r.guard.flags, *f.site.flags), f.decls)
                return ast.unparse(_ToArgs(dests).visit(n))
    return None


def try_catch_pattern(f: Facts) -> str | None:
    """How a program launching the project catches this error: the profile's import and the
    call that runs the checks (`[knowledge.catch]`), for raises in the files that call reaches."""
    site, profile = f.site, f.profile
    if site.kind != "raise" or not site.error_class or not f.pattern or not profile.catch_call:
        return None
    if not in_files(site.file, profile.catch_files):
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
