"""CLI flags: what the source declares (dataclass fields, `add_argument`) and how an attribute
read on the launch-arguments object maps to a `--flag`."""

from __future__ import annotations

import ast
import bisect
import dataclasses
import hashlib
import re
from collections.abc import Iterator, Sequence

from kverr.extractor.context import (
    IDENTIFIER,
    ModuleContext,
    callee_name,
    const_eval,
    first_line,
    glob_re,
    is_docstring,
    parameter_names,
    scope_constants,
    snake_case,
)

from kverr.ftypes import FlagDecl, moved


def dest_to_flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def param_flag(name: str) -> tuple[str, ...]:
    """The flag a parameter's own name spells, when no caller in the file says what it holds:
    a multi-word name only (`max_model_len`; `config` or `model` name too many things)."""
    return ("--" + name.replace("_", "-"),) if "_" in name.strip("_") else ()


def flag_decls(
    tree: ast.Module,
    ctx: ModuleContext,
    path: str,
    calls: Sequence[ast.Call] | None = None,
    lines: Sequence[str] | None = None,
    defs: Sequence[ast.AST] | None = None,
) -> tuple[FlagDecl, ...]:
    """Every declared flag: dataclass field and add_argument merged per dest, first-seen order.
    `calls`: the tree's calls in `ast.walk` order, when the caller walked it already; `lines`:
    the file's lines (split at Python's own line breaks), to reuse declarations read before;
    `defs`: every function of the tree (context.walk_facts), when the caller has them."""
    fields: dict[str, FlagDecl] = {}
    args: dict[str, FlagDecl] = {}
    aliases: dict[str, tuple[str, str]] = {}  # alias dest -> (add_argument dest, option string)
    config: list[FlagDecl] = []
    seen = _Seen(lines, ctx, path) if lines is not None else None
    spans: list[tuple[int, int, dict[str, FlagDecl]]] = []  # each flag class's lines, fields
    for node in tree.body:
        prefix = ctx.args_classes.get(node.name) if isinstance(node, ast.ClassDef) else None
        if prefix == "":
            own = {d.dest: d for d in _field_decls(node, path, seen)}
            spans.append((node.lineno, node.end_lineno or node.lineno, own))
            for dest, decl in own.items():
                fields.setdefault(dest, decl)
        elif prefix:
            config += _config_decls(node, path, prefix)
    local = _LocalLiterals(tree, ctx, lines, defs)
    config_class = glob_re(ctx.rules.config_classes)
    fills: list[FlagDecl] = []
    for node in ast.walk(tree) if calls is None else calls:
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Name) and node.keywords and spans:
            if config_class.match(node.func.id):
                fills += _fill_decls(node, path, spans)
        elif isinstance(node.func, ast.Attribute):
            if node.func.attr == "add_argument":
                decl = (
                    _argument_decl(node, ctx, path, local)
                    if seen is None
                    else seen.argument(node, local)
                )
                if decl is not None:
                    for option in decl.options or ():
                        aliases.setdefault(
                            option.lstrip("-").replace("-", "_"), (decl.dest, option)
                        )
                    args.setdefault(decl.dest, decl)
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
    return tuple(_merge(fields.get(d), args.get(d)) for d in order) + tuple(config + fills)


def _fill_decls(
    call: ast.Call, path: str, spans: Sequence[tuple[int, int, dict[str, FlagDecl]]]
) -> list[FlagDecl]:
    """`ModelConfig(model=self.model, cache_dtype=self.kv_cache_dtype)` inside a flag class:
    which config field each of its fields fills, as a declaration named after the flag with
    the config field's dest (`--kv-cache-dtype` at `cache_config.cache_dtype`, see `fills`).
    Before a flag class's defaults named the config fields (`kv_cache_dtype: str =
    CacheConfig.cache_dtype`), these calls are the only place that says so."""
    own = next((f for first, last, f in spans if first <= call.lineno <= last), None)
    if own is None:
        return []
    assert isinstance(call.func, ast.Name)  # (the caller checked)
    prefix = snake_case(call.func.id)
    out = []
    for k in call.keywords:
        v = k.value
        if not (k.arg and isinstance(v, ast.Attribute) and isinstance(v.value, ast.Name)):
            continue
        decl = own.get(v.attr) if v.value.id == "self" else None
        if decl is not None:
            dest = f"{prefix}.{k.arg}"
            out.append(
                FlagDecl(name=decl.name, dest=dest, file=path, line=call.lineno, arg_dest=v.attr)
            )
    return out


def fills(decl: FlagDecl) -> bool:
    """Whether `decl` says which config field a flag fills (`_fill_decls`): a config field's
    dest under a flag's own name (a config field's own declaration is `--<class>.<field>`)."""
    return "." in decl.dest and "." not in decl.name


def _options(call: ast.Call) -> list[str]:
    return [
        a.value
        for a in call.args
        if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("-")
    ]


def _src(node: ast.AST | None) -> str | None:
    """Source text of a declaration part; ast.unparse is stable and needs no file text."""
    return None if node is None else ast.unparse(node)


def _field_decls(cls: ast.ClassDef, path: str, seen: _Seen | None = None) -> list[FlagDecl]:
    out = []
    for stmt in cls.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        decl = _field_decl(stmt, path) if seen is None else seen.field(stmt)
        if decl is not None:
            out.append(decl)
    return out


def _field_decl(stmt: ast.AnnAssign, path: str) -> FlagDecl | None:
    """The flag of one annotated field (`stmt.target` is a plain name), None for a ClassVar
    or a private field."""
    assert isinstance(stmt.target, ast.Name)  # (the caller checked)
    ann = _src(stmt.annotation) or ""
    if "ClassVar" in ann or stmt.target.id.startswith("_"):
        return None
    default, help_text = _src(stmt.value), None
    if isinstance(stmt.value, ast.Call) and callee_name(stmt.value.func) == "field":
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
    return FlagDecl(
        name=dest_to_flag(dest),
        dest=dest,
        help=help_text,
        default=default,
        type=ann,
        file=path,
        line=stmt.lineno,
        end_line=stmt.end_lineno or stmt.lineno,
    )


class _LocalLiterals:
    """The literals a function binds before its add_argument calls (`ATTN_BACKENDS = [...]`
    then `choices=ATTN_BACKENDS`), over the module's: each call's innermost function, found
    once for the whole module and only when a call needs it."""

    def __init__(
        self,
        tree: ast.Module,
        ctx: ModuleContext,
        lines: Sequence[str] | None = None,
        defs: Sequence[ast.AST] | None = None,
    ) -> None:
        self.tree, self.ctx, self.lines, self.defs = tree, ctx, lines, defs
        # (first line, last line, function), by first line: a def's lines, its decorators'
        # first, hold its whole subtree and nothing else (a def is a statement: no other
        # statement shares its lines), and a nested def starts after its parent
        self.spans: list[tuple[int, int, ast.AST]] | None = None
        self.envs: dict[int, dict[str, object]] = {}
        self.texts: dict[int, str] = {}  # a function's text, by id (`may_bind`)

    def owner(self, line: int) -> ast.AST | None:
        """The innermost function whose lines hold `line`. Found by the statements alone:
        walking every node of the module (once for it, once more for each function's subtree)
        was a third of a backfill's extraction time."""
        if self.spans is None:
            defs = _defs(self.tree.body) if self.defs is None else self.defs
            spans = [(first_line(fn), fn.end_lineno or 0, fn) for fn in defs]  # type: ignore[arg-type]
            self.spans = sorted(spans, key=lambda s: s[:2])
        k = bisect.bisect_right(self.spans, line, key=lambda s: s[0])
        for _, last, fn in reversed(self.spans[:k]):  # the latest start that holds it
            if last >= line:
                return fn
        return None

    def __call__(self, call: ast.Call) -> dict[str, object]:
        fn = self.owner(call.lineno)
        if fn is None:
            return self.ctx.literals
        if id(fn) not in self.envs:
            own = scope_constants(
                fn.body,
                self.ctx.literals,
                set(),
                params=parameter_names(fn),  # type: ignore[arg-type]
            )
            self.envs[id(fn)] = {**self.ctx.literals, **own}
        return self.envs[id(fn)]

    def may_bind(self, call: ast.Call, names: Sequence[str]) -> bool:
        """Whether the function around `call` has a line that may bind one of `names` to a
        literal (`NAME = ...`, `NAME: T = ...`): a superset of what `__call__` adds to the
        module's literals, found in the function's text (the file's `lines`) without walking
        its tree."""
        assert self.lines is not None
        fn = self.owner(call.lineno)
        if fn is None:
            return False
        text = self.texts.get(id(fn))
        if text is None:
            text = self.texts[id(fn)] = _text(self.lines, fn)
        return any(_binds(text, name) for name in names)


# Declarations read from earlier revisions of a file, by all they depend on: a backfill
# reads the same few hundred fields and add_argument calls in each of a thousand revisions,
# and reading them anew was half of the module context's cost (moved to their new lines).
_SEEN: dict[tuple, tuple[FlagDecl | None, tuple[str, ...]]] = {}
_SEEN_MAX = 50_000  # declarations kept (about 1 KB each); past it, the memo starts again


class _Seen:
    """`_field_decl` and `_argument_decl` through `_SEEN`. A key is the declaration's own
    text (its lines and columns) and, for add_argument, the values of the module names that
    text mentions (a help text or choices named by a constant): the same key cannot give
    another declaration. Choices named by a list the call's own function may build
    (`_LocalLiterals`) are not in the key: such a call is read again whenever its function
    has a line that may bind one of those names.

    A call inside a function is first looked up by its place in that function and the
    function's key: its whole text and the values of the module's names, all a call's
    declaration can depend on (its own choices list included). Most revisions leave
    `add_cli_args` as it was, and then its ~380 calls cost a lookup each, not a key of their
    own (about 10 ms a revision); its choices are not built again either (about 7 ms)."""

    def __init__(self, lines: Sequence[str], ctx: ModuleContext, path: str) -> None:
        self.lines, self.ctx, self.path = lines, ctx, path
        self.functions: dict[int, tuple[str, int]] = {}  # id(function) -> key, first line
        self.module_env: str | None = None

    def field(self, stmt: ast.AnnAssign) -> FlagDecl | None:
        key = ("f", self.path, stmt.col_offset, stmt.end_col_offset, _text(self.lines, stmt))
        hit = _SEEN.get(key)
        if hit is None:
            return _remember(key, _field_decl(stmt, self.path), ())
        return _placed(hit[0], stmt)

    def argument(self, call: ast.Call, local: _LocalLiterals) -> FlagDecl | None:
        fn = local.owner(call.lineno)
        if fn is None:
            return self._call(call, local)
        fkey, top = self._function_key(fn)
        key = (
            "af",
            fkey,
            call.lineno - top,
            call.col_offset,
            (call.end_lineno or call.lineno) - top,
            call.end_col_offset,
        )
        hit = _SEEN.get(key)
        if hit is not None:
            return _placed(hit[0], call)
        return _remember(key, self._call(call, local), ())

    def _function_key(self, fn: ast.AST) -> tuple[str, int]:
        """(the key of `fn`, its first line)."""
        key = self.functions.get(id(fn))
        if key is None:
            if self.module_env is None:
                # every module constant and literal, not only those the text names: finding
                # those cost as much as the lookups this key saves
                values = (self.ctx.constants, self.ctx.literals)
                self.module_env = repr([sorted((k, repr(v)) for k, v in d.items()) for d in values])
            h = hashlib.sha256()
            text = _text(self.lines, fn)  # type: ignore[arg-type]
            for piece in (self.path, str(fn.col_offset), text, self.module_env):
                h.update(piece.encode("utf-8", "surrogatepass") + b"\0")
            key = self.functions[id(fn)] = (h.hexdigest(), first_line(fn))  # type: ignore[arg-type]
        return key

    def _env(self, text: str) -> tuple[tuple[str, str, str], ...]:
        """The values of the module's constants and literals that `text` names."""
        consts, literals = self.ctx.constants, self.ctx.literals
        return tuple(
            (w, repr(consts[w]) if w in consts else "", repr(literals[w]) if w in literals else "")
            for w in sorted(set(IDENTIFIER.findall(text)))
            if w in consts or w in literals
        )

    def _call(self, call: ast.Call, local: _LocalLiterals) -> FlagDecl | None:
        """The declaration of `call`, through its own key (class doc)."""
        text = _text(self.lines, call)
        key = ("a", self.path, call.col_offset, call.end_col_offset, text, self._env(text))
        hit = _SEEN.get(key)
        if hit is not None and not (hit[1] and local.may_bind(call, hit[1])):
            return _placed(hit[0], call)
        own: list[ast.Call] = []
        free: list[str] = []  # names the choices read that the function never binds

        def tracked(c: ast.Call) -> dict[str, object]:
            choices = next(k.value for k in c.keywords if k.arg == "choices")
            names = sorted({n.id for n in ast.walk(choices) if isinstance(n, ast.Name)})
            if not local.may_bind(c, names):
                free.extend(names)
                return self.ctx.literals  # what local(c) would give for these names
            own.append(c)
            return local(c)

        decl = _argument_decl(call, self.ctx, self.path, tracked)
        return decl if own else _remember(key, decl, tuple(free))


def _text(lines: Sequence[str], node: ast.stmt | ast.expr) -> str:
    """The whole lines of `node`."""
    return "\n".join(lines[node.lineno - 1 : node.end_lineno or node.lineno])


def _binds(text: str, name: str) -> bool:
    """Whether a statement of `text` starts `name =` or `name:` (at a line start or after
    `;`). The pattern starts with the name's own letters, so `re` skips to its occurrences:
    one that starts with `^|;`, or even with `\\b`, is tried at every position of a
    3,000-line function (1.2 ms a search, against 0.1 ms). No `\\b` is needed: the end of
    a longer name has a letter before it, which the check of what precedes refuses."""
    for m in re.finditer(rf"{re.escape(name)}[ \t]*(?:=(?!=)|:)", text):
        before = text[text.rfind("\n", 0, m.start()) + 1 : m.start()].rstrip(" \t")
        if not before or before.endswith(";"):
            return True
    return False


def _remember(key: tuple, decl: FlagDecl | None, names: tuple[str, ...]) -> FlagDecl | None:
    if len(_SEEN) >= _SEEN_MAX:
        _SEEN.clear()
    _SEEN[key] = (decl, names)
    return decl


def _placed(decl: FlagDecl | None, node: ast.stmt | ast.expr) -> FlagDecl | None:
    """A remembered declaration at `node`'s lines (an edit above it moved it)."""
    if decl is None:
        return None
    line, end = node.lineno, node.end_lineno or node.lineno
    if decl.line == line and decl.end_line == end:
        return decl
    return moved(decl, line=line, end_line=end)


def _defs(body: list) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every function defined among these statements, nested ones too, outer ones first."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(node, name, None)
            if isinstance(inner, list):
                yield from _defs(inner)
        for part in (*getattr(node, "handlers", ()), *getattr(node, "cases", ())):
            yield from _defs(part.body)  # except clauses, match cases


def _argument_decl(
    call: ast.Call, ctx: ModuleContext, path: str, local: _LocalLiterals | None = None
) -> FlagDecl | None:
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
    if "choices" in kw and not isinstance(choices, (list, tuple, dict)) and local is not None:
        choices = const_eval(kw["choices"], local(call))  # a list the function builds first
    action = const_eval(kw["action"], {}) if "action" in kw else None
    nargs = const_eval(kw["nargs"], ctx.constants) if "nargs" in kw else None
    splat = next((k.value for k in call.keywords if k.arg is None), None)
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
        options=tuple(names),
        nargs=str(nargs) if isinstance(nargs, (str, int)) else _src(kw.get("nargs")),
        end_line=call.end_lineno or call.lineno,
        kwargs=_src(splat),
    )


def _merge(field_decl: FlagDecl | None, arg_decl: FlagDecl | None) -> FlagDecl:
    """Field + add_argument for one dest: the option spelling, help, type and action of
    add_argument win; the dataclass default wins over add_argument's usual `ServerArgs.x`."""
    if field_decl is None or arg_decl is None:
        decl = field_decl or arg_decl
        assert decl is not None
        return decl
    a, b = arg_decl.__dict__, field_decl.__dict__
    merged = {k: a[k] if a[k] not in (None, "") else b[k] for k in _FIELDS}
    default = arg_decl.default
    if default is None or default.endswith("." + arg_decl.dest):
        merged["default"] = field_decl.default
    return FlagDecl(**merged)


_FIELDS = tuple(f.name for f in dataclasses.fields(FlagDecl))


# ---------------------------------------------------------------- config classes


def _config_decls(cls: ast.ClassDef, path: str, prefix: str) -> list[FlagDecl]:
    """A config class's settable fields as `--<class>.<field>` (the class in snake_case): what
    its JSON option would accept (`--speculative-config.method=ngram`). FlagTable keeps only
    those that are no flag of their own and whose class has such an option."""
    out = []
    body = cls.body
    for i, stmt in enumerate(body):
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        value = stmt.value
        if isinstance(value, ast.Call) and callee_name(value.func) == "field":
            init = next((k.value for k in value.keywords if k.arg == "init"), None)
            if isinstance(init, ast.Constant) and init.value is False:
                continue  # computed in __post_init__: no user sets it
        (decl,) = _field_decls(ast.ClassDef(name=cls.name, body=[stmt]), path) or (None,)
        if decl is None or "InitVar" in (decl.type or ""):
            continue
        after = body[i + 1] if i + 1 < len(body) else None
        if decl.help is None and is_docstring(after):  # the field's docstring, below it
            decl = dataclasses.replace(decl, help=" ".join(after.value.value.split()))
        dest = f"{prefix}.{decl.dest}"
        out.append(dataclasses.replace(decl, name=f"--{dest}", dest=dest))
    declared = {d.dest for d in out}
    for decl in _init_fields(cls, path):
        dest = f"{prefix}.{decl.dest}"
        if dest not in declared:
            out.append(dataclasses.replace(decl, name=f"--{dest}", dest=dest))
    return out


def _init_fields(cls: ast.ClassDef, path: str) -> list[FlagDecl]:
    """The fields a plain (no dataclass) config class's `__init__` keeps as given
    (`self.quantization = quantization`): what the older config classes declared instead of
    annotated fields."""
    init = next(
        (s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None
    )
    if init is None:
        return []
    a = init.args
    params = {p.arg: p for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
    out = []
    for stmt in init.body:
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) else None
        if not (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
            and isinstance(stmt.value, ast.Name)
            and stmt.value.id == target.attr
            and target.attr in params
            and not target.attr.startswith("_")
        ):
            continue
        p = params[target.attr]
        out.append(
            FlagDecl(
                name=dest_to_flag(p.arg),
                dest=p.arg,
                type=_src(p.annotation),
                file=path,
                line=stmt.lineno,
                end_line=stmt.end_lineno or stmt.lineno,
            )
        )
    return out


_FIELD_DEFAULT = re.compile(r"([A-Z]\w*)\.(\w+)|get_field\(([A-Z]\w*), '(\w+)'\)")


def config_key(name: str) -> str:
    """`LoRAConfig`, `lora_config` -> `loraconfig`: a class and the attribute holding it agree
    however the class name splits into words."""
    return name.replace("_", "").lower()


@dataclasses.dataclass
class FlagTable:
    """How a raw flag read resolves to a declared flag, for one file set.

    A read on the launch-arguments object (`--max-num-seqs`) is the flag with that dest. A read
    on a config object (`--app-config.cache-config.cache-dtype`: field `cache_dtype` of the
    config held in `cache_config`) is, in order: the flag whose dataclass default names that
    field (`kv_cache_dtype: str = CacheConfig.cache_dtype`); the flag of the field's own name,
    unless that flag fills another config's field (`--model` is ModelConfig.model, not
    SpeculativeConfig.model); the field of the config's JSON option
    (`--speculative-config.model`); else no flag. Where the flag class passes its fields to a
    config's constructor by keyword (`ModelConfig(model=self.model)`, `fills`), that says
    which flag fills which field, as a default naming the field does. A config class neither
    says anything about is, by its own field's name, that flag if nothing else claims it; as a
    field of a config with a JSON option (`PassConfig` in `CompilationConfig.pass_config`),
    that option's dotted path. Configs no flag default or option names (a model's
    `hf_config`) give no flag."""

    by_dest: dict[str, str]
    by_field: dict[tuple[str, str], str]
    foreign: set[str]
    options: dict[str, tuple[str, str]]  # config key -> (option flag, option dest)
    known: set[str]
    fields: set[tuple[str, str]]  # (config key, field) of every config field declared
    holders: dict[str, list[str]] | None = None  # see _holders
    fielded: set[str] | None = None  # see _fielded

    @classmethod
    def of(cls, decls: Sequence[FlagDecl]) -> FlagTable:
        table = cls({}, {}, set(), {}, set(), set())
        for d in decls:
            if fills(d):
                continue  # once every flag is known
            if "." in d.dest:
                view, _, name = d.dest.rpartition(".")
                table.fields.add((config_key(view), name))
                continue  # a config field: reachable() decides
            table.by_dest.setdefault(d.dest, d.name)
            table.options.setdefault(config_key(d.dest), (d.name, d.dest))
            m = _FIELD_DEFAULT.fullmatch(d.default or "")
            if m:
                klass, name = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
                table.by_field.setdefault((config_key(klass), name), d.name)
                table.known.add(config_key(klass))
                table.foreign.add(d.dest)
        for d in decls:
            flag = table.by_dest.get(d.arg_dest or "") if fills(d) else None
            if flag:
                view, _, name = d.dest.rpartition(".")
                table.by_field.setdefault((config_key(view), name), flag)
                table.known.add(config_key(view))
                table.foreign.add(d.arg_dest)
        table.known |= {k for k in table.options if k.endswith("config")}
        return table

    def resolve(self, dest: str) -> str | None:
        """The declared flag a raw read (`a_b`, `view.path.field`) stands for, or None."""
        if "." not in dest:
            return self.by_dest.get(dest)
        view, _, name = dest.rpartition(".")
        key = config_key(view.rpartition(".")[2])
        if key not in self.known:
            nested = self._nested(view, name)
            if nested or (key, name) not in self.fields or name in self.foreign:
                return nested
            if config_key(name) in self.known:
                return None  # a config it holds: what is read of that one names the flag
            return self.by_dest.get(name)
        hit = self.by_field.get((key, name))
        if hit:
            return hit
        if name in self.by_dest and name not in self.foreign:
            return self.by_dest[name]
        option = self.options.get(key)
        if option is None or (self._fielded(key) and (key, name) not in self.fields):
            return None  # (a property or method of a config whose fields are known: no key)
        return f"{option[0]}.{name}"

    def _fielded(self, key: str) -> bool:
        """Whether the file set declares fields of config `key` (its JSON option then takes
        those keys only)."""
        if self.fielded is None:
            self.fielded = {k for k, _ in self.fields}
        return key in self.fielded

    def _nested(self, view: str, name: str) -> str | None:
        """A config held by another config (`compilation_config.pass_config`) that no flag
        fills: the outer config's JSON option takes it by its dotted path
        (`--compilation-config.pass_config.fuse_attn_quant`)."""
        outer, _, inner = view.rpartition(".")
        if not outer:  # `self` of a config class: the option of a config that holds one
            outer = next((k for k in self._holders().get(inner, ()) if k in self.options), "")
        key = config_key(outer.rpartition(".")[2])
        option = self.options.get(key)
        if option is None or (key, inner) not in self.fields:
            return None  # (a model's hf_config, say: no option sets it)
        return f"{option[0]}.{inner}.{name}"

    def _holders(self) -> dict[str, list[str]]:
        """Config field -> the configs declaring it, by key (`pass_config` -> compilationconfig),
        built on first use."""
        if self.holders is None:
            self.holders = {}
            for key, field_name in sorted(self.fields):
                self.holders.setdefault(field_name, []).append(key)
        return self.holders

    def reachable(self, decls: Sequence[FlagDecl]) -> tuple[FlagDecl, ...]:
        """`decls` with each config field renamed after its JSON option, or dropped when it is
        a flag of its own or its config has no option."""
        out = []
        for d in decls:
            if "." not in d.dest:
                out.append(d)
                continue
            view, _, name = d.dest.rpartition(".")
            key = config_key(view)
            option = self.options.get(key)
            if option is None or fills(d) or (key, name) in self.by_field:
                continue
            if name in self.by_dest and name not in self.foreign:
                continue
            out.append(
                dataclasses.replace(d, name=f"{option[0]}.{name}", dest=f"{option[1]}.{name}")
            )
        return tuple(out)


# ---------------------------------------------------------------- Literal aliases


def literal_aliases(tree: ast.Module) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Module-level `Name = Literal[...]` (or `Name: TypeAlias = Literal[...]`) as (name,
    members): a member is a literal value's repr, or the name of another alias, resolved over
    the whole file set by whoever needs the values (kverr.argforms.annotation_facts)."""
    out = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name):
            members = literal_members(value)
            if members is not None:
                out.append((target.id, members))
    return tuple(out)


def literal_members(node: ast.expr) -> tuple[str, ...] | None:
    """`Literal["a", 1, Other]` -> ("'a'", "1", "Other"); None for anything else."""
    if not (isinstance(node, ast.Subscript) and callee_name(node.value) == "Literal"):
        return None
    items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    out = []
    for item in items:
        if isinstance(item, ast.Constant) and isinstance(item.value, (str, int, float, bool)):
            out.append(repr(item.value))
        elif isinstance(item, (ast.Name, ast.Attribute)):
            out.append(callee_name(item) or "")
        else:
            return None
    return tuple(out)


def annotation_facts(annotation: str, aliases: dict[str, tuple[str, ...]]) -> dict | None:
    """What argparse declares for a field whose add_argument takes its keyword arguments from
    the field's annotation (a profile's `argument_kwargs = "annotation"`), as a get_kwargs helper
    derives them: `{"type", "choices", "action", "nargs"}` (type: the conversion argparse calls,
    None when a failure is reported in other words), or None when the annotation does not parse.

    bool -> a --x/--no-x switch (bool | str: an optional value); Literal (or an alias of one in
    `aliases`) -> its values as choices, sorted, "None" added when None is allowed (none when
    str is allowed too); list/set/tuple -> one or more values; int, float -> that conversion;
    dict -> `parse_type(json.loads)` (`union_dict_and_str` when text or a class is allowed
    too); anything else -> text. When None is allowed, a conversion is wrapped in
    `optional_type(...)`; what those helpers print is the revision's (extractor.converters)."""
    try:
        node = ast.parse(annotation, mode="eval").body
    except (SyntaxError, ValueError):
        return None
    hints = _hints(node, aliases, set())
    names = {h for h in hints if not h.startswith("=")}
    values = [h[1:] for h in hints if h.startswith("=")]
    optional = "None" in names
    facts: dict = {"type": "str", "choices": None, "action": None, "nargs": None}
    if names - {"None"} == {"bool", "str"}:
        facts["nargs"] = "?"
    elif "bool" in names:
        return {**facts, "type": None, "action": "argparse.BooleanOptionalAction"}
    elif values:
        literal = [ast.literal_eval(v) for v in values]
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in literal)
        facts["type"] = "int" if numbers and all(isinstance(v, int) for v in literal) else "str"
        if "str" not in names:
            facts["choices"] = [str(v) for v in sorted(literal, key=lambda v: (str(type(v)), v))]
    elif names & {"list", "set", "tuple"}:
        facts["nargs"] = "+"
        facts["type"] = next((t for t in ("int", "float") if t in names), "str")
    elif "int" in names or "float" in names:
        facts["type"] = "int" if "int" in names else "float"
    elif "dict" in names:  # JSON, through the project's own helpers (extractor.converters)
        other = names - {"dict", "None", "list", "set", "tuple", "int", "float", "bool"}
        if any(n[:1].isupper() for n in other):
            facts["type"] = None  # a class beside it may be a dataclass its library validates
        else:
            facts["type"] = "union_dict_and_str" if other else "parse_type(json.loads)"
    if optional and facts["type"] not in (None, "str"):
        facts["type"] = f"optional_type({facts['type']})"  # "" and "None" give None
    if optional and facts["choices"]:
        facts["choices"] = [*facts["choices"], "None"]
    return facts


def _hints(node: ast.expr, aliases: dict[str, tuple[str, ...]], seen: set[str]) -> set[str]:
    """The members of a type annotation's unions: type names, and literal values as "=repr"."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _hints(node.left, aliases, seen) | _hints(node.right, aliases, seen)
    if isinstance(node, ast.Constant) and node.value is None:
        return {"None"}
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a quoted annotation
        try:
            return _hints(ast.parse(node.value, mode="eval").body, aliases, seen)
        except (SyntaxError, ValueError):
            return set()
    if isinstance(node, ast.Subscript):
        head = callee_name(node.value) or ""
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head in ("Optional", "Union"):
            out = {"None"} if head == "Optional" else set()
            for item in items:
                out |= _hints(item, aliases, seen)
            return out
        if head == "Annotated":
            return _hints(items[0], aliases, seen)
        if head == "Literal":
            return _alias_values(literal_members(node) or (), aliases, seen)
        if head.lower() in ("list", "set", "tuple"):
            elems = set().union(*(_hints(i, aliases, seen) for i in items))
            return {head.lower()} | {e for e in elems if e in ("int", "float")}
        if head.lower() in ("dict", "type"):
            return {head.lower()}
        return _hints(items[0], aliases, seen)  # a wrapper such as SkipValidation[bool]
    name = callee_name(node) or ""
    if name in aliases and name not in seen:
        return _alias_values(aliases[name], aliases, seen | {name})
    return {name}


def _alias_values(members, aliases, seen) -> set[str]:
    out: set[str] = set()
    for m in members:
        if m[:1] in "'\"" or m[:1].isdigit() or m[:1] == "-" or m in ("True", "False"):
            out.add("=" + m)
        elif m in aliases and m not in seen:
            out |= _alias_values(aliases[m], aliases, seen | {m})
        else:
            out.add(m)  # an alias kverr cannot see (outside the file set): no values
    return out
