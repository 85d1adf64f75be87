"""The import world of the child process: the revision's own modules, everything else stubbed.

Three kinds of module exist in the sandbox:

- **loaded** (`server_args.py`, `environ.py`, the arg-groups modules): executed for real from
  the revision's git objects, under their repository path as file name, so a traceback frame
  names the file and line a record was extracted from.
- **lazy** (any other module of the package, e.g. `sglang.srt.utils.common`): never executed
  as a whole. A name imported from it is answered by the platform profile when the profile
  knows it (`is_cuda()`), else by running just the top-level statement that defines it
  (`CHUNK_SIZE = 64`, `def nullable_str(...)`), its own free names resolved the same way on
  first use. A name nothing defines is a Stub.
- **stub** (torch, transformers, anything outside the standard library): a Stub module.

Standard-library modules import normally, and so do the packages the spec names `real` (a
validation library the configs are built with); `substitutes` maps a third-party module to a
standard one with the same API for what validation uses (orjson -> json).
"""

from __future__ import annotations
import __future__

import ast
import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import sysconfig
import types
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from kverr.verify.sandbox import stubs
from kverr.verify.sandbox.steps import targets_of

_LAZY_ANNOTATIONS = __future__.annotations.compiler_flag
_DEBUG = bool(os.environ.get("KVERR_VERIFY_DEBUG"))  # print why a definition became a stub


class SourceTree:
    """The package's files at one revision: module name -> path, text read on demand."""

    def __init__(self, root: str, files: Mapping[str, str], read: Callable[[str], str]) -> None:
        self.root = root.strip("/")  # "python": where module paths start in the repository
        self.files = dict(files)  # path -> anything (a blob id); presence is what matters
        # every folder above a file (a package without an __init__.py is a namespace package)
        self.dirs = {p.rsplit("/", n)[0] for p in self.files for n in range(1, p.count("/") + 1)}
        self._read = read
        self._texts: dict[str, str] = {}
        self._trees: dict[str, ast.Module] = {}

    def base(self, module: str) -> str:
        base = module.replace(".", "/")
        return f"{self.root}/{base}" if self.root else base

    def locate(self, module: str) -> tuple[str | None, bool] | None:
        """(source path or None, is_package) for a module of the tree, None when absent."""
        base = self.base(module)
        if base + ".py" in self.files:
            return base + ".py", False
        if base + "/__init__.py" in self.files:
            return base + "/__init__.py", True
        if base in self.dirs:
            return None, True  # a namespace package
        return None

    def text(self, path: str) -> str:
        if path not in self._texts:
            hit = _PARSED.get(self._blob(path))
            self._texts[path] = hit[0] if hit else self._read(path)
        return self._texts[path]

    def tree(self, path: str) -> ast.Module:
        """The parsed module, once: the loader compiles it and the step planner reads it."""
        if path not in self._trees:
            blob = self._blob(path)
            hit = _PARSED.get(blob)
            if hit is not None and hit[1] is not None:
                _PARSED.move_to_end(blob)
                self._trees[path] = hit[1]
            else:
                self._trees[path] = ast.parse(self.text(path), path)
                _remember(blob, self.text(path), self._trees[path])
        return self._trees[path]

    def _blob(self, path: str) -> str:
        """The file's blob id, the key of the parses a child keeps across revisions ("" for a
        file from disk, which is never shared)."""
        blob = self.files.get(path)
        return blob if isinstance(blob, str) and blob not in ("override", "disk") else ""


# blob -> (text, tree), across the revisions one child serves: most of a package's modules are
# the same blob from one commit to the next, and parsing them again was most of a load. The
# trees are never changed (compile and the step planner only read them). Bounded: a build over
# the whole history reads a thousand server_args.py blobs.
_PARSED: OrderedDict[str, tuple[str, ast.Module | None]] = OrderedDict()
PARSED_LIMIT = 96


_CODES: dict[tuple[str, str], Any] = {}  # (blob, name) -> a lazy definition's code
CODES_LIMIT = 4096


def _remember(blob: str, text: str, tree: ast.Module | None) -> None:
    if not blob:
        return
    _PARSED[blob] = (text, tree)
    _PARSED.move_to_end(blob)
    while len(_PARSED) > PARSED_LIMIT:
        _PARSED.popitem(last=False)


class StubModule(types.ModuleType):
    """A module the sandbox does not load: every attribute is the profile's answer or a Stub."""

    def __getattr__(self, name: str) -> Any:
        return stubs.attribute(self.__name__, name)


class Substitute(types.ModuleType):
    """A third-party module stood in for by a standard one (orjson -> json)."""

    def __init__(self, name: str, real: types.ModuleType) -> None:
        super().__init__(name)
        self._real = real

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return getattr(self._real, name)


class _Namespace(dict):
    """The globals of a lazy module's definitions: a free name is defined on first lookup.

    A function defined here looks its globals up through `__missing__` (CPython reads a dict
    subclass's globals with a subscript), so a helper's own helpers are defined only if it runs.
    KeyError for a name the module does not define lets builtins answer."""

    def __init__(self, module: LazyModule) -> None:
        super().__init__()
        self.module = module

    def __missing__(self, name: str) -> Any:
        value = self.module._define(name)
        if value is stubs._MISSING:
            raise KeyError(name)
        return value


class LazyModule(types.ModuleType):
    """A module of the package that is never executed as a whole (see the module docstring)."""

    def __init__(self, name: str, tree: SourceTree, path: str | None, is_package: bool) -> None:
        super().__init__(name)
        self.__file__ = path
        if is_package:
            self.__path__ = []
        self.__package__ = name if is_package else name.rpartition(".")[0]
        self._tree, self._path = tree, path
        self._index: dict[str, ast.stmt] | None = None
        self._stars: list[ast.ImportFrom] = []
        self._ns = _Namespace(self)
        self._ns.update(__name__=name, __package__=self.__package__, __file__=path)
        self._busy: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__") and not self.defines(name):
            raise AttributeError(name)  # protocols probe; `__version__` is a definition
        sub = f"{self.__name__}.{name}"
        if self._tree.locate(sub) is not None:
            return importlib.import_module(sub)  # `from pkg import submodule`
        value = self._define(name)
        if value is stubs._MISSING:
            value = stubs.Stub(sub)
        setattr(self, name, value)
        return value

    def defines(self, name: str) -> bool:
        return name in self._indexed() or stubs.answer_for(f"{self.__name__}.{name}") is not (
            stubs._MISSING
        )

    def _indexed(self) -> dict[str, ast.stmt]:
        if self._index is None:
            self._index = {}
            if self._path is not None:
                try:
                    tree = self._tree.tree(self._path)
                except (SyntaxError, ValueError):
                    tree = ast.Module(body=[], type_ignores=[])
                for stmt in tree.body:
                    for name in _binds(stmt):
                        self._index[name] = stmt  # the last binding wins, as at run time
                    if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
                        self._stars.append(stmt)
        return self._index

    def _define(self, name: str) -> Any:
        """The value of top-level `name`: the profile's answer, else its defining statement
        run alone, else a star import's; _MISSING when nothing defines it."""
        if name in dict.keys(self._ns):
            return dict.__getitem__(self._ns, name)
        hit = stubs.answer_for(f"{self.__name__}.{name}")
        if hit is not stubs._MISSING:
            dict.__setitem__(self._ns, name, hit)
            return hit
        stmt = self._indexed().get(name)
        if stmt is None:
            return self._from_stars(name)
        if name in self._busy:
            return stubs.Stub(f"{self.__name__}.{name}")  # a definition that needs itself
        self._busy.add(name)
        noted = len(stubs.NOTES)
        try:
            # Class bodies and module-level expressions look names up in the dict itself (no
            # __missing__): what they read at definition time is defined first.
            for needed in _eager_names(stmt):
                if needed != name and needed in self._indexed():
                    self._define(needed)
            # Annotations stay strings: `x: Type[StubbedBase] = ...` must not evaluate a stub.
            code = self._code(name, stmt)
            exec(code, self._ns)  # noqa: S102 - the revision's own definition, in the sandbox
        except (Exception, stubs.Undecidable) as exc:
            if _DEBUG:
                import traceback

                traceback.print_exception(exc, file=sys.stderr)
            # A definition that cannot run is a stub (what the run does with it decides), not
            # an undecided run by itself.
            del stubs.NOTES[noted:]
            dict.__setitem__(self._ns, name, stubs.Stub(f"{self.__name__}.{name}"))
        finally:
            self._busy.discard(name)
        if name not in dict.keys(self._ns):
            dict.__setitem__(self._ns, name, stubs.Stub(f"{self.__name__}.{name}"))
        return dict.__getitem__(self._ns, name)

    def _code(self, name: str, stmt: ast.stmt) -> Any:
        """The defining statement compiled, once per blob and name across revisions."""
        key = (self._tree._blob(self._path), name) if self._path else ("", name)
        code = _CODES.get(key) if key[0] else None
        if code is None:
            module = ast.Module(body=[stmt], type_ignores=[])
            code = compile(module, self._path or "?", "exec", flags=_LAZY_ANNOTATIONS)
            if key[0]:
                _CODES[key] = code
                while len(_CODES) > CODES_LIMIT:
                    _CODES.pop(next(iter(_CODES)))
        return code

    def _from_stars(self, name: str) -> Any:
        for stmt in self._stars:
            target = _absolute(stmt, self.__package__ or "")
            try:
                mod = importlib.import_module(target)
            except Exception:
                continue
            if isinstance(mod, LazyModule) and mod.defines(name):
                return getattr(mod, name)
        return stubs._MISSING


def _eager_names(stmt: ast.stmt) -> list[str]:
    """Names a statement reads when it runs (not those its functions read when called)."""
    out: list[str] = []
    todo: list[ast.AST] = [stmt]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(node.args.defaults)
            todo.extend(d for d in node.args.kw_defaults if d is not None)
            if not isinstance(node, ast.Lambda):
                todo.extend(node.decorator_list)
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            out.append(node.id)
        todo.extend(ast.iter_child_nodes(node))
    return list(dict.fromkeys(out))


def _absolute(stmt: ast.ImportFrom, package: str) -> str:
    if not stmt.level:
        return stmt.module or ""
    parts = package.split(".")
    base = ".".join(parts[: len(parts) - stmt.level + 1])
    return f"{base}.{stmt.module}" if stmt.module else base


def _binds(stmt: ast.stmt) -> list[str]:
    """Top-level names a statement binds (what a lazy module can define from it); an `if` or
    a `try` binds what its branches do (`try: from ._version import __version__ except …:
    __version__ = "dev"`), and runs whole."""
    if isinstance(stmt, (ast.If, ast.Try)):
        branches = [stmt.body, stmt.orelse]
        if isinstance(stmt, ast.Try):
            branches += [h.body for h in stmt.handlers] + [stmt.finalbody]
        return [name for body in branches for s in body for name in _binds(s)]
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [stmt.name]
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in stmt.names if a.name != "*"]
    if isinstance(stmt, ast.AnnAssign) and stmt.value is None:
        return []  # `x: int` declares a name, binds nothing
    return [n.id for t in targets_of(stmt) for n in ast.walk(t) if isinstance(n, ast.Name)]


_STDLIB = [p for p in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]} if p]
_FOUND: dict[str, bool] = {}


def _standard(top: str) -> bool:
    """A standard-library module: named as one, or a private module of its folders that the
    list leaves out (`_sysconfigdata_…`, which `sysconfig` imports by a computed name)."""
    if top in sys.stdlib_module_names or top in sys.builtin_module_names:
        return True
    if not top.startswith("_"):
        return False
    if top not in _FOUND:
        _FOUND[top] = importlib.machinery.PathFinder.find_spec(top, _STDLIB) is not None
    return _FOUND[top]


class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Decides, per imported name, which of the three kinds of module it gets."""

    def __init__(
        self,
        tree: SourceTree,
        package: str,
        loaded: Mapping[str, str],
        substitutes: Mapping[str, str],
        absent: frozenset[str] = frozenset(),
        real: frozenset[str] = frozenset(),
    ) -> None:
        self.tree, self.package = tree, package
        self.loaded = dict(loaded)  # module name -> repository path, executed for real
        self.substitutes = dict(substitutes)
        self.real = real  # third-party packages the interpreter imports as installed
        # packages (or a package's module: "flashinfer.mamba") the platform profile says are
        # not installed
        self.absent = absent

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        top = fullname.partition(".")[0]
        if fullname in self.loaded:
            origin = self.loaded[fullname]
            return importlib.machinery.ModuleSpec(
                fullname, self, origin=origin, is_package=origin.endswith("/__init__.py")
            )
        if any(fullname == a or fullname.startswith(a + ".") for a in self.absent):
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        if top in self.real and top != self.package:
            return None
        if top != self.package and top in self.substitutes:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=False)
        if top != self.package and _standard(top):
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: Any) -> types.ModuleType | None:
        name = spec.name
        top = name.partition(".")[0]
        if name in self.loaded:
            return None  # a plain module, executed below
        if top in self.substitutes and top != self.package:
            return Substitute(name, importlib.import_module(self.substitutes[top]))
        if top == self.package:
            where = self.tree.locate(name)
            if where is not None:
                return LazyModule(name, self.tree, where[0], where[1])
        return StubModule(name)

    def exec_module(self, module: types.ModuleType) -> None:
        name = module.__name__
        if name in self.loaded:
            path = self.loaded[name]
            module.__file__ = path
            if path.endswith("/__init__.py"):
                module.__path__ = []  # its submodules are found by this finder, by name
            # dont_inherit: this file's `from __future__ import annotations` is not the
            # module's (a validated class reads its annotations as objects)
            code = compile(self.tree.tree(path), path, "exec", dont_inherit=True)
            exec(code, module.__dict__)  # noqa: S102 - the revision's own module, sandboxed
        elif isinstance(module, StubModule):
            module.__path__ = []
