"""Permissive stand-ins for everything the sandbox does not load for real (runs in the child).

A `Stub` answers every attribute access and call with another Stub, so the revision's code can
import torch, call `torch.cuda.device_count()` and pass the result around without any of it
existing. What a Stub can never do is *decide* something: used as a truth value, compared,
iterated, measured, hashed into a set test, turned into a number or asked its class, it raises
`Undecidable`. The harness then reports that the check read something it cannot know, instead
of guessing a branch and calling the outcome verified.

`Undecidable` derives from BaseException so that SGLang's own `except Exception:` blocks do not
swallow it; each one is also noted in `NOTES`, so even a bare `except:` cannot hide it.
"""

from __future__ import annotations

import sys
import types
from typing import Any

NOTES: list[str] = []  # every Undecidable raised during the current run, oldest first
# What the platform profile answers, by the dotted path a stub would otherwise stand for; the
# sandbox fills it. `lookup` matches the longest key that ends the path on a dot boundary, so
# "is_cuda()" answers `sglang.srt.utils.common.is_cuda` and "get_platform().is_cuda" answers
# `sglang.srt.runtime_context.get_platform().is_cuda`.
ANSWERS: dict[str, Any] = {}
_MISSING = object()


def lookup(path: str) -> Any:
    """The profile's object for `path`, or _MISSING."""
    best, found = -1, ""
    for key in ANSWERS:
        if (path == key or path.endswith("." + key)) and len(key) > best:
            best, found = len(key), key
    if best < 0:
        return _MISSING
    hit = ANSWERS[found]
    if _later(hit):
        hit = ANSWERS[found] = resolve(hit)
    return hit


def answer_for(path: str) -> Any:
    """What stands at `path`: the profile's value, a function returning the profile's value
    for `path()` (read when called: the model in use answers), or _MISSING."""
    hit = lookup(path)
    if hit is not _MISSING:
        return hit
    call = path + "()"
    if lookup(call) is _MISSING:
        return _MISSING

    def probe(*args: Any, **kwargs: Any) -> Any:
        value = lookup(call)
        if value is _MISSING:
            raise Undecidable(f"a call of `{path}`, which the model profile in use does not answer")
        return _result(value, args, kwargs)

    return probe


class Later:
    """A profile value made by the revision's own code (`"@ref:module:attr"`, `{new = …}`),
    made on first use: making it imports the revision's modules, which must see every probe
    of the platform and the model (a definition read lazily keeps what it was answered)."""

    def __init__(self, make: Any) -> None:
        self.make = make


def _later(value: Any) -> bool:
    if isinstance(value, Later):
        return True
    if isinstance(value, (list, tuple)):
        return any(_later(v) for v in value)
    if isinstance(value, dict):
        return any(_later(v) for v in value.values())
    return False


def resolve(value: Any) -> Any:
    """`value` with each Later in it made."""
    if isinstance(value, Later):
        return value.make()
    if isinstance(value, list):
        return [resolve(v) for v in value]
    if isinstance(value, tuple):
        return tuple(resolve(v) for v in value)
    if isinstance(value, dict):
        return {k: resolve(v) for k, v in value.items()}
    return value


class Echo:
    """A probe that returns its call's argument (`"@arg:0"`, `"@arg:model"` for a keyword):
    a check the platform passes through unchanged (`check_max_model_len(n)` returns n)."""

    def __init__(self, which: int | str) -> None:
        self.which = which


class Capability:
    """A probe that compares the GPU's compute capability with its call's argument, as the
    platform's own `has_device_capability(89)` / `is_device_capability(100)` /
    `is_device_capability_family(100)` do (`{capability = [8, 0], test = "at_least"}`): the
    argument is a number (89), a (major, minor) pair or an object with `to_int()`."""

    TESTS = ("at_least", "equal", "family")

    def __init__(self, major: int, minor: int, test: str) -> None:
        self.value, self.test = major * 10 + minor, test

    def answer(self, arg: Any) -> bool:
        if hasattr(arg, "to_int"):
            arg = arg.to_int()
        elif isinstance(arg, (tuple, list)) and len(arg) == 2:
            arg = int(arg[0]) * 10 + int(arg[1])
        if not isinstance(arg, int) or isinstance(arg, bool):
            raise Undecidable(f"a compute capability compared with {type(arg).__name__}")
        if self.test == "at_least":
            return self.value >= arg
        if self.test == "equal":
            return self.value == arg
        return self.value // 10 == arg // 10


def _result(value: Any, args: tuple, kwargs: dict | None = None) -> Any:
    if isinstance(value, Capability):
        return value.answer(args[0] if args else (kwargs or {}).get("capability"))
    if isinstance(value, Echo):
        if isinstance(value.which, str):
            return (kwargs or {}).get(value.which)
        return args[value.which] if len(args) > value.which else None
    if isinstance(value, tuple) and any(isinstance(v, Echo) for v in value):
        return tuple(_result(v, args, kwargs) for v in value)
    return value


class Undecidable(BaseException):  # noqa: N818 - an outcome, not a programming error
    """The code under test used a value the sandbox only stubs, in a way that decides a branch."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what
        NOTES.append(what)


class MissingFact(AttributeError):
    """A profile object (the model) was asked an attribute the profile does not declare.

    An AttributeError, so `getattr(cfg, "x", None)` and `hasattr` read it as absent, as they
    would on a real config without it (the profile declares a whole config). When it escapes a
    step, the harness reports the run as undecided."""

    def __init__(self, owner: str, name: str) -> None:
        super().__init__(f"the profile's {owner} does not declare {name!r}")


# Modules whose comparisons of a stub are bookkeeping, not a decision of the revision's code:
# the typing machinery building `Literal["auto"] | torch.dtype` (it compares a union's members),
# a validation library reading a class's annotations. The child adds the spec's real packages.
LIBRARIES: set[str] = {"typing", "typing_extensions", "types", "abc", "dataclasses", "functools"}


def _by_library(depth: int) -> bool:
    """The frame `depth` levels up belongs to one of LIBRARIES."""
    try:
        name = sys._getframe(depth + 1).f_globals.get("__name__")
    except ValueError:
        return False
    # No module name: code a library generated with exec() into a bare namespace (the
    # typing inspection's predicates); the revision's own modules always have one.
    return name is None or name.partition(".")[0] in LIBRARIES


def attribute(owner: str, name: str) -> Any:
    """`owner.name` of something stubbed (a Stub, a stub module): the profile's answer, else
    a Stub; a protocol's name (`__x__`) no answer names is absent."""
    path = f"{owner}.{name}"
    hit = answer_for(path)
    if hit is not _MISSING:
        return hit  # `torch.__version__` is a profile answer like any other
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(name)  # protocols (copy, pickle, typing) probe and move on
    return Stub(path)


def _undecidable(op: str):
    def method(self: Stub, *args: Any) -> Any:
        raise Undecidable(f"{op} `{object.__getattribute__(self, '_path')}`")

    return method


def _identity(equal: bool):
    """== / != : by identity when a library compares (see LIBRARIES), else undecidable."""
    op = "==" if equal else "!="

    def method(self: Stub, other: Any) -> Any:
        if _by_library(1):
            return (self is other) is equal
        raise Undecidable(f"{op} on `{object.__getattribute__(self, '_path')}`")

    return method


def _deferred(op: str):
    """Arithmetic on a stub gives another stub: nothing is decided until it is compared."""

    def method(self: Stub, *args: Any) -> Stub:
        return Stub(f"({object.__getattribute__(self, '_path')} {op} …)")

    return method


class Stub:
    """Stand-in for a module, class, function or value the sandbox does not load."""

    __slots__ = ("_path",)

    def __init__(self, path: str) -> None:
        object.__setattr__(self, "_path", path)

    def __getattr__(self, name: str) -> Any:
        return attribute(object.__getattribute__(self, "_path"), name)

    def __setattr__(self, name: str, value: Any) -> None:
        pass  # writing to a stub is harmless; reading it back gives a stub again

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        path = f"{object.__getattribute__(self, '_path')}()"
        hit = lookup(path)
        return Stub(path) if hit is _MISSING else _result(hit, args, kwargs)

    def __getitem__(self, key: Any) -> Stub:
        return Stub(f"{object.__getattribute__(self, '_path')}[…]")

    def __setitem__(self, key: Any, value: Any) -> None:
        pass

    def __enter__(self) -> Stub:
        return self

    def __exit__(self, *exc: Any) -> bool:
        return False

    def __mro_entries__(self, bases: tuple) -> tuple:
        # `class X(torch.nn.Module):` defines a plain class. One whose bases are all stubbed
        # (`class EAGLEConfig(PretrainedConfig)`) gets one that takes the arguments its
        # `super().__init__(**kwargs)` passes on; next to a real base, that base's own
        # __init__ stays the one called.
        if any(type(b) is not Stub for b in bases) or self is not bases[0]:
            return ()
        return (_stubbed_base(object.__getattribute__(self, "_path")),)

    def __repr__(self) -> str:
        return f"<stub {object.__getattribute__(self, '_path')}>"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)  # a message that prints a stub still prints

    def __hash__(self) -> int:
        return id(self)

    def __copy__(self) -> Stub:
        return self  # a stand-in has no state to copy (`copy.deepcopy(config)` holding one)

    def __deepcopy__(self, memo: Any) -> Stub:
        return self

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        """A stubbed type in a validated class's annotations (`dtype: str | torch.dtype`):
        any value passes, as the real type's instances would (only that library asks)."""
        from pydantic_core import core_schema

        return core_schema.any_schema()

    @property  # type: ignore[misc]
    def __class__(self):  # noqa: D105 - isinstance(stub, X) would otherwise answer False
        if _by_library(1):
            return Stub  # the typing machinery sorting annotations: a stub is no known type
        raise Undecidable(f"isinstance() of `{object.__getattribute__(self, '_path')}`")

    __bool__ = _undecidable("truth value of")
    __eq__ = _identity(True)
    __ne__ = _identity(False)
    __lt__ = _undecidable("< on")
    __le__ = _undecidable("<= on")
    __gt__ = _undecidable("> on")
    __ge__ = _undecidable(">= on")
    __contains__ = _undecidable("`in` on")
    __iter__ = _undecidable("iteration over")
    __len__ = _undecidable("len() of")
    __index__ = _undecidable("index value of")
    __int__ = _undecidable("int() of")
    __float__ = _undecidable("float() of")
    __add__ = __radd__ = _deferred("+")
    __sub__ = __rsub__ = _deferred("-")
    __mul__ = __rmul__ = _deferred("*")
    __truediv__ = __rtruediv__ = _deferred("/")
    __floordiv__ = __rfloordiv__ = _deferred("//")
    __mod__ = __rmod__ = _deferred("%")
    __pow__ = __rpow__ = _deferred("**")
    __neg__ = _deferred("-")
    __or__ = __ror__ = _deferred("|")
    __and__ = __rand__ = _deferred("&")


class StubbedBase:
    """The base of a class whose bases are all stubbed: the keyword arguments its __init__
    is given become attributes, as transformers' PretrainedConfig keeps them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        for name, value in kwargs.items():
            try:
                setattr(self, name, value)
            except (AttributeError, TypeError):
                pass  # a read-only property of the subclass keeps its own value


def _stubbed_base(path: str) -> type:
    # named after the stub, as a traceback shows it (only the first of several stubbed bases
    # gives one: __mro_entries__)
    return type(path.rsplit(".", 1)[-1] or "StubbedBase", (StubbedBase,), {"__module__": path})


def is_module(obj: Any) -> bool:
    """`obj` is a loaded module (`envs` answering from the environment). Asked of its type:
    isinstance() would ask a stub's __class__, which refuses outside a library."""
    return issubclass(type(obj), types.ModuleType)


def path_of(obj: Any) -> str | None:
    """The stubbed name behind `obj`, or None for a real object."""
    if type(obj) is Stub:
        return object.__getattribute__(obj, "_path")
    return None


class Facts:
    """A profile object with declared attributes (the model's config): an attribute the
    profile does not declare is absent (MissingFact), never a guess."""

    def __init__(self, owner: str, values: dict[str, Any], calls: dict[str, Any]) -> None:
        self._owner, self._values, self._calls = owner, values, calls

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self._values:
            value = self._values[name]
            if _later(value):
                value = self._values[name] = resolve(value)
            return value
        if name in self._calls:
            value = resolve(self._calls[name])
            return lambda *a, **k: _result(value, a, k)
        raise MissingFact(self._owner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            self._values[name] = value

    def __repr__(self) -> str:
        return f"<{self._owner} from the platform profile>"
