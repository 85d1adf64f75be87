"""The verify child: one process per revision, running that revision's own validation.

    python -m kverr.verify.sandbox.child --fds 3,4     (started by verify.harness)

It runs confined by the OS (verify/confine.py: namespaces, a read-only view, rlimits), and
speaks in frames (verify/sandbox/channel.py) on the two descriptors named by `--fds JOBS,ANSWERS`.
First frame in: the setup (repository, commit, snapshot files, spec, platform, model). The
child reads the package's files from git objects, installs the import world of `modules.py`,
loads the revision's modules and answers `{"ready": ...}`. Then one job per frame: a command
line, its environment and the record's function; one outcome per frame back.

A run parses the command line with the revision's own parser, builds the args object from the
Namespace, and runs the validation phases in order, the phase that reaches the record's
function cut right after the statement that reaches it.
"""

from __future__ import annotations

import argparse
import ast
import gc
import importlib
import json
import logging
import os
import resource
import signal
import sys
import time
import traceback
import types
import warnings
from pathlib import Path
from typing import Any

from kverr.verify.sandbox import channel, derive, disk, fakes, kinds, modules, steps, stubs  # noqa: F401 - fakes: see decode
from kverr.verify.sandbox.argv import ArgvStage, build_stage, compiled
from kverr.verify.sandbox.blobs import Blobs, text_of
from kverr.verify.sandbox.channel import Reader
from kverr.verify.sandbox.watch import Watch, plain

MESSAGE_LIMIT = 4000  # characters of an exception or log message sent back


class ParseFailed(Exception):
    """argparse rejected the command line (its error(), which would exit)."""


class Timeout(BaseException):  # noqa: N818 - an outcome
    """The run took longer than the job's limit."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # type: ignore[override]
        raise ParseFailed(message)

    def exit(self, status: int = 0, message: str | None = None) -> Any:  # type: ignore[override]
        raise ParseFailed(message or f"exit status {status}")


# ---------------------------------------------------------------- profile values


def decode(value: Any, refs: dict[str, Any]) -> Any:
    """A TOML profile value as the Python object the code sees (see verify/spec.py)."""
    if isinstance(value, dict) and set(value) == {"tuple"}:
        return tuple(decode(v, refs) for v in value["tuple"])
    if isinstance(value, dict) and set(value) == {"new", "args"}:
        # an object of the revision's own class: {new = "module:Class", args = [9, 0]}
        make, args = decode(f"@ref:{value['new']}", refs), decode(value["args"], refs)
        return stubs.Later(lambda: stubs.resolve(make)(*stubs.resolve(args)))
    if isinstance(value, dict) and set(value) == {"capability", "test"}:
        # `has_device_capability(89)` on an SM80 GPU: {capability = [8, 0], test = "at_least"}
        (major, minor), test = value["capability"], value["test"]
        if test not in stubs.Capability.TESTS:
            raise ValueError(
                f"capability test {test!r}: one of {', '.join(stubs.Capability.TESTS)}"
            )
        return stubs.Capability(int(major), int(minor), test)
    if isinstance(value, list):
        return [decode(v, refs) for v in value]
    if isinstance(value, dict):
        return {k: decode(v, refs) for k, v in value.items()}
    if isinstance(value, str) and value.startswith("@"):
        if value == "@none":
            return None
        if value.startswith("@arg:"):
            which = value[5:]
            return stubs.Echo(int(which) if which.isdigit() else which)
        if value in refs:
            return refs[value]
        if value.startswith("@ref:"):
            return stubs.Later(lambda: _reference(value[5:]))
    return value


def _reference(where: str) -> Any:
    """`module:attr.attr` in the import world."""
    module, _, attr = where.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


class _Factory:
    """The model factory: every method (and a call) returns the model profile's config."""

    def __init__(self, model: Any) -> None:
        self._model = model

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._model

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self

    def __repr__(self) -> str:
        return "<model factory of the model profile>"


# ---------------------------------------------------------------- the world of one revision


class World:
    """One revision's import world and its runs. A child serves revision after revision: each
    setup replaces the World (close() puts the process back as it was before the first)."""

    def __init__(self, setup: dict[str, Any], reader: Blobs | None) -> None:
        self.spec = setup["spec"]
        spec = self.spec
        overrides: dict[str, str] = setup.get("overrides", {})
        files: dict[str, str] = dict(setup.get("files", {}))  # path -> blob, listed by the parent
        files.update({p: "override" for p in overrides})

        on_disk = setup.get("disk") or {}  # {"root", "prefix"}: files read from a folder

        def read(path: str) -> str:
            if path in overrides:
                return overrides[path]
            if files[path] == "disk":
                rel = path[len(on_disk["prefix"]) :].lstrip("/")
                with open(os.path.join(on_disk["root"], rel), "rb") as f:
                    return text_of(f.read())
            assert reader is not None
            return text_of(reader.read(files[path]))

        self.tree = modules.SourceTree(spec["source_root"], files, read)
        derive.TREES = lambda path: self.tree.tree(path) if path in self.tree.files else None
        derive.definition.cache_clear()
        self.base_env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "TMPDIR")}
        self.base_env.update({"HOME": setup["workdir"], "TMPDIR": setup["workdir"], "LANG": "C"})
        self.loaded = self._loaded_modules()
        for target in spec.get("substitutes", {}).values():
            importlib.import_module(target)  # before the finder: it would stub kverr's own
        real = frozenset(spec.get("real", ()))
        stubs.LIBRARIES.update(real)
        self.finder = modules.Finder(
            self.tree,
            spec["package"],
            self.loaded,
            spec.get("substitutes", {}),
            absent=frozenset(setup["platform"]["absent_packages"]),
            real=real,
        )
        sys.meta_path.insert(0, self.finder)
        self._answer(setup["platform"], setup["model"])
        self._real_os = disk.fake_paths(setup["platform"].get("paths", {}))
        self._model_dir(Path(setup["workdir"]), setup["model"], setup.get("model_path", ""))
        self.logs: list[dict[str, Any]] = []
        self._capture_logs()
        registries = set(spec.get("registries", ()))
        self.modules = {
            name: importlib.import_module(name) for name in self.loaded if name not in registries
        }
        for name in [n for n in self.loaded if n in registries]:
            try:
                self.modules[name] = importlib.import_module(name)
            except Exception:  # noqa: BLE001 - the revision's registry does not run here
                # read lazily instead, like every module the spec does not run
                del self.loaded[name]
                self.finder.loaded.pop(name, None)
                sys.modules.pop(name, None)
        main = self.modules[spec["main_module"]]
        self.cls = getattr(main, spec["args_class"])
        if spec.get("parser") and spec["parser"] not in main.__dict__:
            raise LookupError(
                f"{self.loaded[spec['main_module']]} names no {spec['parser']}, the parser the"
                " verify spec reads the command line with"
            )
        self.main_path = self.loaded[spec["main_module"]]
        self.plan = steps.plan_steps(
            {path: self.tree.text(path) for path in self.loaded.values()},
            self.main_path,
            spec["args_class"],
            spec["phases"],
            {path: self.tree.tree(path) for path in self.loaded.values()},
            follow=spec.get("follow", "self"),
            validators=spec.get("validators", ()),
            add_args=spec["add_args"],
        )
        self.phase_fns = {p: self.cls.__dict__[p] for p in self.plan.phases}
        if "__post_init__" in self.phase_fns:
            self.cls.__post_init__ = lambda self: None  # run by hand, step by step
        self.cut: dict[tuple[str, int], Any] = {}
        self.parser_error = ""
        # the config classes the parser builds from JSON options (kinds.json_option): their
        # __post_init__ and validators run while the command line is parsed
        self.parsed_classes: set[str] = set()
        self._codes: dict[str, Any] = {}
        self.fields: dict[str, Any] = {}  # attribute -> option, for the solver (sent once)
        self.parsers: dict[tuple, argparse.ArgumentParser] = {}
        # (file, function) of the loaded modules that building a parser ran
        self.builder_calls: set[tuple[str, str]] = set()
        self._parser_cls: type[argparse.ArgumentParser] | None = None
        self.main_tree = self.tree.tree(self.main_path)
        self.argv: ArgvStage | None = None
        if spec.get("argv"):
            entry = spec["argv"]["entry"]
            try:
                self.argv = build_stage(
                    {path: self.tree.tree(path) for path in self.loaded.values()},
                    self.main_path,
                    entry,
                    spec["args_class"],
                    spec["add_args"],
                    main.__dict__,
                )
            except Exception as exc:  # the revision's other checks run without it
                self.argv = ArgvStage(entry, reason=f"{entry} does not compile ({exc})"[:300])

    def close(self, baseline: set[str]) -> None:
        """Forget this revision: its finder, every module imported since `baseline` (the
        sandbox's own and the revision's), the profile's answers."""
        if self.finder in sys.meta_path:
            sys.meta_path.remove(self.finder)
        _forget(baseline)
        stubs.ANSWERS.clear()
        stubs.NOTES.clear()
        logging.getLogger().handlers[:] = []
        disk.restore(self._real_os)

    def _loaded_modules(self) -> dict[str, str]:
        """Module name -> path of the modules run for real, in the spec's order; a missing one
        (an old revision without arg groups) is skipped."""
        out: dict[str, str] = {}
        argv = (self.spec.get("argv") or {}).get("modules", ())
        for pattern in [*self.spec["modules"], *argv, *self.spec.get("registries", ())]:
            if pattern.endswith(".*"):
                where = self.tree.locate(pattern[:-2])
                folder = self.tree.base(pattern[:-2]) + "/"
                if where is None:
                    continue
                for path in sorted(self.tree.files):
                    rest = path[len(folder) :]
                    if path.startswith(folder) and "/" not in rest and rest.endswith(".py"):
                        if rest != "__init__.py":
                            out[f"{pattern[:-2]}.{rest[:-3]}"] = path
                continue
            where = self.tree.locate(pattern)
            if where is not None and where[0] is not None:
                out[pattern] = where[0]
        return out

    def _answer(self, platform: dict[str, Any], model: dict[str, Any]) -> None:
        stubs.ANSWERS.clear()
        for key, value in platform["probes"].items():
            stubs.ANSWERS[key] = decode(value, {})
        # A model profile's objects (verify/spec.py): "config" with the "calls" its methods
        # answer, holding "hf_config"; any other table an object of its own ("@name").
        self.hf = stubs.Facts("model's hf_config", {}, {})
        self.model_config = stubs.Facts("model config", {}, {})
        self.objects = {"config": self.model_config, "hf_config": self.hf}
        self.factory = _Factory(self.model_config)
        if self.spec.get("model_factory"):
            stubs.ANSWERS[self.spec["model_factory"]] = self.factory
        self.model_profiles: dict[str, Any] = {model["name"]: model}
        self.model_profiles.update(self.spec.get("models", {}))
        self.model_name = ""
        self.default_model = model["name"]
        self.use_model(model["name"])

    def use_model(self, name: str) -> None:
        """Make `name` the model of the following runs: its objects and its probes. The
        objects are the same Python objects for every model, refilled (the revision's code
        keeps what it read once: `from x import get_config`, a registry held by a module)."""
        if name == self.model_name:
            return
        profile = self.model_profiles[name]
        if self.model_name:
            for key in self.model_profiles[self.model_name].get("probes", {}):
                stubs.ANSWERS.pop(key, None)
        tables = profile.get("objects", {})
        for key in tables:
            if key not in self.objects and key != "calls":
                self.objects[key] = stubs.Facts(f"model's {key}", {}, {})
        refs = {"@model": self.model_config, **{f"@{k}": v for k, v in self.objects.items()}}
        for key, obj in self.objects.items():
            table = dict(tables.get(key, {}))
            calls = tables.get("calls", {}) if key == "config" else table.pop("calls", {})
            obj._values = {k: decode(v, refs) for k, v in table.items()}
            obj._calls = {k: decode(v, refs) for k, v in calls.items()}
        self.model_config._values["hf_config"] = self.hf
        stubs.ANSWERS.update({k: decode(v, refs) for k, v in profile.get("probes", {}).items()})
        self.model_name = name

    def _model_dir(self, workdir: Path, model: dict[str, Any], name: str) -> None:
        """The model directory the launch names, relative to the working directory."""
        if not name or not model.get("files"):
            return
        folder = workdir / name
        folder.mkdir(parents=True, exist_ok=True)
        config = dict(model.get("objects", {}).get("hf_config", {}))
        config.pop("calls", None)
        for file in model["files"]:
            text = json.dumps(config) if file == "config.json" else ""
            (folder / file).write_text(text, encoding="utf-8")

    def _capture_logs(self) -> None:
        def note(level: str, message: str, file: str, line: int, **extra: str) -> None:
            self.logs.append(
                {"level": level, "message": message[:MESSAGE_LIMIT], "file": file, "line": line}
                | extra
            )

        class Capture(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                try:
                    message = record.getMessage()
                except Exception:
                    message = str(record.msg)
                note(record.levelname.lower(), message, record.pathname, record.lineno)

        root = logging.getLogger()
        root.handlers[:] = [Capture()]
        root.setLevel(logging.DEBUG)
        logging.disable(logging.NOTSET)

        def showwarning(message, category, filename, lineno, file=None, line=None):  # noqa: ANN001
            note("warning", str(message), filename, lineno, category=category.__name__)

        warnings.showwarning = showwarning
        warnings.simplefilter("always")

    # ------------------------------------------------------------ one run

    def parser(self) -> argparse.ArgumentParser:
        # Defaults can read the environment (`default=envs.X.get()`): one parser per environment.
        key = tuple(sorted(os.environ.items()))
        if key not in self.parsers:
            parser = self._parser_class()(prog="kverr-verify", allow_abbrev=False)
            for word in self.spec.get("positional", {}):
                parser.add_argument(word, nargs="?", default=None)
            calls, loaded = self.builder_calls, set(self.loaded.values())

            def profile(frame: Any, event: str, arg: Any) -> None:
                code = frame.f_code
                if event == "call" and code.co_filename in loaded:
                    calls.add((code.co_filename, code.co_qualname.replace(".<locals>", "")))

            before = sys.getprofile()
            sys.setprofile(profile)  # what building the parser runs (`_built`)
            try:
                getattr(self.cls, self.spec["add_args"])(parser)
            finally:
                sys.setprofile(before)
            self.parsers[key] = parser
        return self.parsers[key]

    def _parser_class(self) -> type[argparse.ArgumentParser]:
        """The revision's own parser class (the spec's `parser`, as the main module names
        it), with argparse's exits turned into ParseFailed; argparse's own without one."""
        name = self.spec.get("parser") or ""
        if not name:
            return _Parser
        if self._parser_cls is None:
            main = self.modules[self.spec["main_module"]]
            base = main.__dict__[name]
            self._parser_cls = type(name, (base,), {"error": _Parser.error, "exit": _Parser.exit})
        return self._parser_cls

    def parse(self, argv: list[str]) -> argparse.Namespace:
        """The command line through the parser; each positional word's value into the option
        it stands for, as the launch command does (`vllm serve MODEL`)."""
        namespace = self.parser().parse_args(argv)
        for word, dest in self.spec.get("positional", {}).items():
            value = getattr(namespace, word, None)
            if value is not None:
                setattr(namespace, dest, value)
        return namespace

    def info(self) -> dict[str, Any]:
        try:
            options = self.options()
        except BaseException as exc:  # noqa: BLE001 - a parser that cannot be built is data too
            options = {}
            self.parser_error = f"{type(exc).__name__}: {exc}"[:400]
        argv = None
        if self.argv is not None:
            if not self.parser_error:
                self.argv.probe(self.parser())
            argv = self.argv.to_json()
        return {
            "ready": True,
            "phases": list(self.plan.phases),
            "missing": list(self.plan.missing),
            "steps": len(self.plan.steps),
            "loaded": self.loaded,
            "options": options,
            "parser_error": self.parser_error,
            "argv": argv,
        }

    def options(self) -> dict[str, dict[str, Any]]:
        """The parser's options as the revision declares them: option string -> dest, whether
        it is a switch (takes no value), its choices and its default when plain data."""
        os.environ.clear()
        os.environ.update(self.base_env)
        out: dict[str, dict[str, Any]] = {}
        for action in self.parser()._actions:
            info: dict[str, Any] = {
                "dest": action.dest,
                "switch": action.nargs == 0,
                "names": list(action.option_strings),
                "action": type(action).__name__,  # what a config file can set (configfile.py)
                "list": action.nargs in ("+", "*")
                or (type(action.nargs) is int and action.nargs > 1),
            }
            found = kinds.json_option(action.type) if action.nargs != 0 else None
            if found is not None:
                info["json"] = True  # the value is JSON text (json.loads, a config class)
                cls, fields = found
                if fields:
                    info["fields"] = fields  # what its dotted options (`--x.field`) take
                if cls is not None:  # built while the command line is parsed (_parse_time)
                    self.parsed_classes.add(cls.__qualname__)
                    info["class"] = cls.__qualname__  # its checks read the option's fields
            if action.choices is not None:
                try:
                    info["choices"] = [c for c in action.choices if plain(c)]
                except BaseException:  # noqa: BLE001 - choices made of stubs
                    pass
            if plain(action.default):
                info["default"] = action.default
            for name in action.option_strings:
                out[name] = info
        return out

    def truncated(self, phase: str, index: int) -> Any:
        """`phase` with its body cut after top-level statement `index`."""
        if (phase, index) not in self.cut:
            fn = next(
                item
                for node in self.main_tree.body
                if isinstance(node, ast.ClassDef) and node.name == self.spec["args_class"]
                for item in node.body
                if isinstance(item, ast.FunctionDef) and item.name == phase
            )
            main = self.modules[self.spec["main_module"]]
            self.cut[(phase, index)] = compiled(
                fn, fn.args, fn.body[: index + 1], self.main_path, main.__dict__
            )
        return self.cut[(phase, index)]

    def run(self, job: dict[str, Any]) -> dict[str, Any]:
        if "fields" in job:
            self.fields = job["fields"]
        target = job["target"]
        until = target.get("until", "")
        if until:  # no site to stop after: the parser alone, or the whole validation
            stop, at_parse = None, until == "parse"
        else:
            stop = self.plan.stop_for((target["file"], target["function"] or ""), target["line"])
            at_parse = stop is None and self._parse_time(target["file"], target["function"] or "")
        # A check of the argv stage (the config merger) is decided before the parser runs;
        # the run goes on through the parse, which reads the command line the stage made.
        if stop is None and self.argv is not None and not until:
            at_parse = at_parse or self.argv.reaches(target["file"], target["function"] or "")
        if stop is None and not until:
            why = self._built(target) if at_parse else self._unreachable(target)
            if why:
                return {"id": job["id"], "status": "unreachable", "reason": why}
        os.environ.clear()
        os.environ.update(self.base_env)
        os.environ.update(job.get("env", {}))
        made = disk.write_files(job.get("files", ()))
        stubs.NOTES.clear()
        self.logs.clear()
        overrides = dict(job.get("model", {}))
        self.use_model(overrides.pop("profile", None) or self.default_model)
        saved = [(obj, dict(obj._values)) for obj in self.objects.values()]
        for key, value in overrides.items():
            if key.startswith("config."):
                self.model_config._values[key[7:]] = value
            else:
                self.hf._values[key] = value
        out: dict[str, Any] = {"id": job["id"], "status": "passed"}
        main = target["function"] or ""
        names = {main} | {w.get("function") or main for w in job.get("watch", ())}
        # The function's words come once, with the first guard, and serve every guard.
        words = next((w["words"] for w in job.get("watch", ()) if "words" in w), ())
        shared = {"fields": self.fields, "words": words}
        guards = [{**shared, **w} for w in job.get("watch", ())]
        watch = Watch({n: self._code_of(n) for n in names}, main, guards)
        # CPU seconds, not wall seconds: a run's outcome (and the dataset) must not depend on
        # how loaded the machine is; the parent's wall deadline catches a run that sleeps
        signal.setitimer(signal.ITIMER_PROF, float(job.get("timeout", 5.0)))
        if watch.by_place and watch.guards:
            sys.settrace(watch.global_trace)  # only when asked: tracing costs every call
        try:
            argv = job["argv"]
            if self.argv is not None and self.argv.ready:
                argv = self.argv.run(argv, self.parser())
            namespace = self.parse(argv)
            if not at_parse:
                obj = getattr(self.cls, self.spec["from_args"])(namespace)
                for phase in self.plan.phases:
                    if stop is not None and phase == stop.phase:
                        self.truncated(phase, stop.index)(obj)
                        break
                    self.phase_fns[phase](obj)
        except ParseFailed as exc:
            inner = self._wrapped(exc)
            if inner is not None:  # a check of a config the parser builds (a JSON option)
                out.update(status="raised", exc=self._where(inner), reason=str(exc)[:400])
            else:
                out.update(status="parse-error", reason=str(exc)[:MESSAGE_LIMIT])
        except Timeout:
            out.update(
                status="timeout", reason=f"used more than {job.get('timeout', 5.0)} s of CPU"
            )
        except stubs.Undecidable as exc:
            out.update(status="undecidable", reason=exc.what)
        except stubs.MissingFact as exc:
            out.update(status="undecidable", reason=str(exc))
        except BaseException as exc:  # noqa: BLE001 - every exception is an outcome here
            out.update(status="raised", exc=self._where(exc))
        finally:
            sys.settrace(None)
            signal.setitimer(signal.ITIMER_PROF, 0)
            for obj, values in saved:  # what the run set on the model's objects
                obj._values = values
            disk.remove(made)
        if watch.by_place and watch.guards:
            out["trace"] = watch.report()
        if stubs.NOTES and out["status"] in ("passed", "raised"):
            # A decision was taken on a stub somewhere and swallowed by the code's own except.
            out.update(status="undecidable", reason=stubs.NOTES[0], swallowed=True)
        out["logs"] = [log for log in self.logs if log["file"] in self.loaded.values()]
        if stop is not None:
            out["stop"] = f"{stop.phase} up to line {stop.line}: {stop.text}"
        return out

    def _code_of(self, function: str) -> Any:
        """The code object of the record's function (a method or a module-level function of
        a loaded module), so the run can watch its lines; None when not found."""
        if function not in self._codes:
            self._codes[function] = None
            for module in self.modules.values():
                obj: Any = module
                for part in function.split("."):
                    is_owner = isinstance(obj, (type, types.ModuleType))
                    obj = getattr(obj, part, None) if is_owner else None
                code = getattr(obj, "__code__", None)
                if code is not None and code.co_filename in self.loaded.values():
                    self._codes[function] = code
                    break
        return self._codes[function]

    def _wrapped(self, exc: BaseException) -> BaseException | None:
        """The check's own error inside `exc`: through causes and contexts, and through an
        exception of a wrapper class (the spec's `wrappers`: a validation library's error,
        which keeps the check's exception in its details). None when there is no wrapper on
        the way or the error inside it was not raised by the revision's loaded modules."""
        wrappers = set(self.spec.get("wrappers", ()))
        seen: set[int] = set()
        todo: list[BaseException] = [exc]
        while todo:
            current = todo.pop(0)
            if id(current) in seen or len(seen) > 16:
                continue
            seen.add(id(current))
            if type(current).__name__ in wrappers:
                for inner in _carried(current):
                    if self._frames(inner):
                        return self._wrapped(inner) or inner
            todo += [e for e in (current.__cause__, current.__context__) if e is not None]
        return None

    def _frames(self, exc: BaseException) -> list[tuple[str, int, str]]:
        return [
            (f.filename, f.lineno, f.name)
            for f in traceback.extract_tb(exc.__traceback__)
            if f.filename in self.loaded.values()
        ]

    def _where(self, exc: BaseException) -> dict[str, Any]:
        if type(exc).__name__ in self.spec.get("wrappers", ()):
            exc = self._wrapped(exc) or exc
        frames = self._frames(exc)
        file, line, func = frames[-1] if frames else ("", 0, "")
        try:
            message = str(exc)
        except BaseException:  # noqa: BLE001 - a message made of stubs
            message = repr(exc.args)
        return {
            "class": type(exc).__name__,
            "message": message[:MESSAGE_LIMIT],
            "file": file,
            "line": line,
            "function": func,
        }

    def _parse_time(self, file: str, function: str) -> bool:
        """A site in an argparse Action, or in a function building the parser reaches (a
        type function the parser calls on an option's value)."""
        owner = function.split(".")[0]
        main = self.modules[self.spec["main_module"]]
        obj = main.__dict__.get(owner)
        if isinstance(obj, type) and issubclass(obj, argparse.Action):
            return True
        if self.plan.built_with((file, function), sorted(self.parsed_classes)):
            return True  # what building a config class a JSON option is parsed into runs
        return bool(function) and self.plan.parse_time((file, function))

    def _built(self, target: dict[str, Any]) -> str:
        """Why a check that building the parser runs is reached by no command line ("" when
        building the parser does not run it): it reads the revision's own classes, before any
        command line is read, and this revision's parser was built without it firing."""
        self.parser()
        node = (target["file"], target["function"] or "")
        if node not in self.builder_calls:
            return ""
        if self.plan.built_with(node, sorted(self.parsed_classes)):
            return ""  # a config class the parser builds a default of, and a JSON option again
        return (
            f"{target['function']} runs while `{self.spec['launch']}` builds its command-line "
            "parser from its own classes, before it reads any command line; this revision's "
            "parser builds without this error, so no command line reaches it"
        )

    def _unreachable(self, target: dict[str, Any]) -> str:
        """Why no validation step reaches the record's function, as precisely as the
        revision's own code says: whether anything calls it, which modules of the package it
        imports that this revision lacks, which options it reads that its parser lacks (a hook
        module newer than the revision it is placed over, say)."""
        phases = " and ".join(f"{self.spec['args_class']}.{p}" for p in self.plan.phases)
        if not phases:
            want = ", ".join(self.spec["phases"])
            return f"this revision's {self.spec['args_class']} has none of {want}"
        function = target["function"] or ""
        text = f"{function or 'module-level code'} is not reached from {phases}"
        if not function:
            return text
        callers = sorted(q for _, q in self.plan.callers.get((target["file"], function), ()))
        why = [f"only {', '.join(callers[:3])} calls it" if callers else "nothing calls it"]
        missing = self._missing_imports(target["file"])
        if missing:
            why.append(f"its module imports {', '.join(missing[:3])}, which this revision lacks")
        owner = function.rpartition(".")[0]
        # another class's method reads its own fields, not the parser's options
        mine = not owner or owner == self.spec["args_class"]
        unknown = self._unknown_options(target["file"], function) if mine else []
        if unknown:
            why.append(f"it reads options this revision's parser lacks ({', '.join(unknown[:4])})")
        return f"{text}: " + "; ".join(why)

    def _missing_imports(self, path: str) -> list[str]:
        """Modules of the package the file imports that are in no file of this revision."""
        package = self.spec["package"]
        out = []
        for node in ast.walk(self.tree.tree(path)):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                name = node.module
                if name.partition(".")[0] == package and self.tree.locate(name) is None:
                    out.append(name)
        return list(dict.fromkeys(out))

    def _unknown_options(self, path: str, function: str) -> list[str]:
        """Attributes the function reads on its first parameter (or on what it derives from it,
        `cfg = resolving_view(server_args)`) that are no option of this revision's parser."""
        fn = steps.definitions({path: self.tree.tree(path)}).get((path, function))
        args = getattr(fn, "args", None)
        if fn is None or args is None or not args.args:
            return []
        holders = {args.args[0].arg}
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                if any(isinstance(a, ast.Name) and a.id in holders for a in node.value.args):
                    # a view of the args (`cfg`), not what they describe (`model_config`)
                    holders |= {
                        t.id
                        for t in node.targets
                        if isinstance(t, ast.Name) and "model" not in t.id
                    }
        try:
            dests = {o["dest"] for o in self.options().values()}
        except BaseException:  # noqa: BLE001 - a parser that cannot be built names nothing
            return []
        found = [
            node.attr
            for node in ast.walk(fn)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in holders
            and node.attr not in dests
            and not hasattr(self.cls, node.attr)
        ]
        return ["--" + a.replace("_", "-") for a in dict.fromkeys(found)]


def _forget(baseline: set[str]) -> None:
    """Every module imported since `baseline` but the real third-party packages (the spec's
    `real`: what a revision imports of them is the installed package, the same for the
    next, and an extension module cannot be imported twice anyway)."""
    for name in [n for n in sys.modules if n not in baseline]:
        if name.partition(".")[0] not in stubs.LIBRARIES:
            del sys.modules[name]


def _carried(exc: BaseException) -> list[BaseException]:
    """Exceptions a wrapper keeps in its details: `exc.errors()` items' `ctx["error"]`."""
    try:
        details = exc.errors()  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - a wrapper without details carries nothing
        return []
    out = []
    for item in details if isinstance(details, list) else []:
        ctx = item.get("ctx") if isinstance(item, dict) else None
        error = ctx.get("error") if isinstance(ctx, dict) else None
        if isinstance(error, BaseException):
            out.append(error)
    return out


def main() -> int:
    jobs, answers = (int(fd) for fd in sys.argv[sys.argv.index("--fds") + 1].split(","))
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(devnull, fd)  # the revision's prints and reads never touch the frames
    signal.signal(signal.SIGPROF, _on_alarm)
    # A revision's load makes a few hundred thousand AST nodes and the child keeps the parses
    # of unchanged modules across revisions: with the default threshold, full collections
    # walking them tripled the time of some loads (as in pipeline/run.py).
    gc.set_threshold(50_000, *gc.get_threshold()[1:])
    inbox = Reader(jobs)
    first = inbox.read(None)
    # One `git cat-file` for the whole life of the child: every revision is read through it
    # (none when the files come from a folder).
    reader = Blobs(first["git"], first["git_env"]) if first.get("repo") else None
    if reader is not None:
        reader.read(first.get("probe_object") or "HEAD")
    os.chdir(first["workdir"])
    baseline = set(sys.modules)
    world: World | None = None

    def send(data: dict[str, Any]) -> None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        channel.send(answers, {**data, "cpu": round(usage.ru_utime + usage.ru_stime, 3)})

    message: dict[str, Any] | None = first
    while message is not None:
        if "spec" in message:  # a (new) revision
            if world is not None:
                world.close(baseline)
                world = None
            try:
                started = time.perf_counter()
                world = World(message, reader)
                info = world.info()
                info["ms"] = round(1000 * (time.perf_counter() - started), 2)
                send(info)
            except BaseException as exc:  # noqa: BLE001 - reported to the parent as data
                # where in the revision's own code (its modules are compiled under their
                # repository paths): a line of kverr's or of the interpreter's files is no
                # business of a dataset, and moves with each edit or Python release
                own = [t for t in traceback.extract_tb(exc.__traceback__)
                       if not os.path.isabs(t.filename)]  # fmt: skip
                where = f" at {os.path.basename(own[-1].filename)}:{own[-1].lineno}" if own else ""
                send({"ready": False, "reason": f"{type(exc).__name__}: {exc}"[:400] + where})
                _forget(baseline)
                sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, modules.Finder)]
        else:
            started = time.perf_counter()
            try:
                if world is None:
                    raise RuntimeError("no revision is loaded")
                out = world.run(message)
                out["ms"] = round(1000 * (time.perf_counter() - started), 2)
            except BaseException as exc:  # noqa: BLE001 - the harness itself failed on this job
                out = {
                    "id": message.get("id"),
                    "status": "error",
                    "reason": f"{type(exc).__name__}: {exc}",
                }
            send(out)
        try:
            message = inbox.read(None)
        except channel.ChannelError:  # the harness closed the jobs pipe: the build is done
            message = None
    return 0


def _on_alarm(signum: int, frame: Any) -> None:
    raise Timeout()


if __name__ == "__main__":
    code = main()
    # Nothing to clean up: skip the interpreter's teardown of every module the revision loaded
    # (about a second), which the parent would otherwise wait for.
    sys.stderr.flush()
    os._exit(code)
