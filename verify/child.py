"""The verify child: one process per revision, running that revision's own validation.

    python -m kverr.verify.child        (started by verify.harness; speaks JSON lines)

First line in: the setup (repository, commit, snapshot files, spec, platform, model). The child
reads the package's files from git objects, closes the sandbox (no sockets, no programs, no
writes outside its working directory), installs the import world of `sandbox.py`, loads the
revision's modules and answers `{"ready": ...}`. Then one job per line: a command line, its
environment and the record's function; one outcome per line back.

A run parses the command line with the revision's own parser, builds the args object from the
Namespace, and runs the validation phases in order, the phase that reaches the record's
function cut right after the statement that reaches it.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import importlib
import io
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import traceback
import warnings
from pathlib import Path
from typing import Any

from kverr.extractor.sources import BlobReader, decode_source, list_files
from kverr.verify import sandbox, steps, stubs

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


# ---------------------------------------------------------------- the sandbox's walls


def _refuse(what: str):
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(f"kverr verify sandbox: {what} is disabled")

    return refuse


def close_walls(workdir: Path) -> None:
    """No network, no programs, no writes outside `workdir` (the build cache's temp dir)."""
    for name in ("socket", "create_connection", "getaddrinfo", "socketpair", "create_server"):
        setattr(socket, name, _refuse("network access"))
    subprocess.Popen = _refuse("running programs")  # type: ignore[misc,assignment]
    for name in ("system", "popen", "execv", "execve", "execvp", "spawnv", "fork", "forkpty"):
        if hasattr(os, name):
            setattr(os, name, _refuse("running programs"))
    root = str(workdir.resolve())
    real_open, real_mkdir = builtins.open, os.mkdir

    def inside(path: Any) -> bool:
        try:
            full = os.path.realpath(os.fspath(path))
        except TypeError:
            return True  # a file descriptor: already open
        return full == root or full.startswith(root + os.sep)

    def guarded_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if any(c in mode for c in "wax+") and not inside(file):
            raise PermissionError(f"kverr verify sandbox: writing {file} is disabled")
        return real_open(file, mode, *args, **kwargs)

    def guarded_mkdir(path: Any, *args: Any, **kwargs: Any) -> None:
        if not inside(path):
            raise PermissionError(f"kverr verify sandbox: creating {path} is disabled")
        real_mkdir(path, *args, **kwargs)

    builtins.open = io.open = guarded_open  # type: ignore[assignment]
    os.mkdir = guarded_mkdir  # type: ignore[assignment]
    os.chdir(workdir)


# ---------------------------------------------------------------- profile values


def decode(value: Any, refs: dict[str, Any]) -> Any:
    """A TOML profile value as the Python object the code sees (see verify/spec.py)."""
    if isinstance(value, dict) and set(value) == {"tuple"}:
        return tuple(decode(v, refs) for v in value["tuple"])
    if isinstance(value, list):
        return [decode(v, refs) for v in value]
    if isinstance(value, dict):
        return {k: decode(v, refs) for k, v in value.items()}
    if isinstance(value, str) and value.startswith("@"):
        if value == "@none":
            return None
        if value in refs:
            return refs[value]
        if value.startswith("@ref:"):
            module, _, attr = value[5:].partition(":")
            obj: Any = importlib.import_module(module)
            for part in attr.split("."):
                obj = getattr(obj, part)
            return obj
    return value


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
    def __init__(self, setup: dict[str, Any]) -> None:
        self.spec = setup["spec"]
        spec = self.spec
        repo, sha = setup["repo"], setup["sha"]
        overrides: dict[str, str] = setup.get("overrides", {})
        prefix = f"{spec['source_root']}/{spec['package']}".strip("/")
        files = dict(list_files(repo, sha, [f"{prefix}/**/*.py"])) if sha else {}
        files.update({p: "override" for p in overrides})
        reader = BlobReader(repo)
        reader.read(next(iter(files.values()), "HEAD"))  # start git before the walls close

        def read(path: str) -> str:
            if path in overrides:
                return overrides[path]
            return decode_source(path, reader.read(files[path]), files[path]).text

        self.tree = sandbox.SourceTree(spec["source_root"], files, read)
        close_walls(Path(setup["workdir"]))
        self.base_env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "TMPDIR")}
        self.base_env.update({"HOME": setup["workdir"], "TMPDIR": setup["workdir"], "LANG": "C"})
        self.loaded = self._loaded_modules()
        sys.meta_path.insert(
            0,
            sandbox.Finder(
                self.tree,
                spec["package"],
                self.loaded,
                spec.get("substitutes", {}),
                absent=frozenset(setup["platform"]["absent_packages"]),
            ),
        )
        self._answer(setup["platform"], setup["model"])
        self._model_dir(Path(setup["workdir"]), setup["model"], setup.get("model_path", ""))
        self.logs: list[dict[str, Any]] = []
        self._capture_logs()
        self.modules = {}
        for name in self.loaded:
            self.modules[name] = importlib.import_module(name)
        main = self.modules[spec["main_module"]]
        self.cls = getattr(main, spec["args_class"])
        self.main_path = self.loaded[spec["main_module"]]
        self.plan = steps.plan_steps(
            {path: self.tree.text(path) for path in self.loaded.values()},
            self.main_path,
            spec["args_class"],
            spec["phases"],
        )
        self.phase_fns = {p: self.cls.__dict__[p] for p in self.plan.phases}
        if "__post_init__" in self.phase_fns:
            self.cls.__post_init__ = lambda self: None  # run by hand, step by step
        self.cut: dict[tuple[str, int], Any] = {}
        self.parser_error = ""
        self.parsers: dict[tuple, argparse.ArgumentParser] = {}
        self.main_tree = ast.parse(self.tree.text(self.main_path))

    def _loaded_modules(self) -> dict[str, str]:
        """Module name -> path of the modules run for real, in the spec's order; a missing one
        (an old revision without arg groups) is skipped."""
        out: dict[str, str] = {}
        for pattern in self.spec["modules"]:
            if pattern.endswith(".*"):
                where = self.tree.locate(pattern[:-2])
                folder = self.tree._base(pattern[:-2]) + "/"
                if where is None:
                    continue
                for path in sorted(self.tree.files):
                    rest = path[len(folder) :]
                    if path.startswith(folder) and "/" not in rest and rest.endswith(".py"):
                        name = pattern[:-2] + "." + rest[:-3]
                        if rest != "__init__.py":
                            out[name] = path
                continue
            where = self.tree.locate(pattern)
            if where is not None and where[0] is not None:
                out[pattern] = where[0]
        return out

    def _answer(self, platform: dict[str, Any], model: dict[str, Any]) -> None:
        objects = model.get("objects", {})
        hf = stubs.Facts("model's hf_config", {}, {})
        config = stubs.Facts("model config", {"hf_config": hf}, {})
        refs = {"@model": config, "@hf_config": hf}
        stubs.ANSWERS.clear()
        for key, value in {**platform["probes"], **model["probes"]}.items():
            stubs.ANSWERS[key] = decode(value, refs)
        if self.spec.get("model_factory"):
            stubs.ANSWERS[self.spec["model_factory"]] = _Factory(config)
        # Values that name the revision's own objects resolve once the import world exists.
        for key, value in objects.get("hf_config", {}).items():
            hf._values[key] = decode(value, refs)
        for key, value in objects.get("config", {}).items():
            config._values[key] = decode(value, refs)
        for key, value in objects.get("calls", {}).items():
            config._calls[key] = decode(value, refs)

    def _model_dir(self, workdir: Path, model: dict[str, Any], name: str) -> None:
        """The model directory the launch names, relative to the working directory."""
        if not name or not model.get("files"):
            return
        folder = workdir / name
        folder.mkdir(parents=True, exist_ok=True)
        config = model.get("objects", {}).get("hf_config", {})
        for file in model["files"]:
            text = json.dumps(config) if file == "config.json" else ""
            (folder / file).write_text(text, encoding="utf-8")

    def _capture_logs(self) -> None:
        world = self

        class Capture(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                try:
                    message = record.getMessage()
                except Exception:
                    message = str(record.msg)
                world.logs.append(
                    {
                        "level": record.levelname.lower(),
                        "message": message[:MESSAGE_LIMIT],
                        "file": record.pathname,
                        "line": record.lineno,
                    }
                )

        root = logging.getLogger()
        root.handlers[:] = [Capture()]
        root.setLevel(logging.DEBUG)
        logging.disable(logging.NOTSET)

        def showwarning(message, category, filename, lineno, file=None, line=None):  # noqa: ANN001
            world.logs.append(
                {
                    "level": "warning",
                    "message": str(message)[:MESSAGE_LIMIT],
                    "file": filename,
                    "line": lineno,
                    "category": category.__name__,
                }
            )

        warnings.showwarning = showwarning
        warnings.simplefilter("always")

    # ------------------------------------------------------------ one run

    def parser(self) -> argparse.ArgumentParser:
        # Defaults can read the environment (`default=envs.X.get()`): one parser per environment.
        key = tuple(sorted(os.environ.items()))
        if key not in self.parsers:
            parser = _Parser(prog="kverr-verify", allow_abbrev=False)
            getattr(self.cls, self.spec["add_args"])(parser)
            self.parsers[key] = parser
        return self.parsers[key]

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
            }
            if action.choices is not None:
                try:
                    info["choices"] = [c for c in action.choices if _plain(c)]
                except BaseException:  # noqa: BLE001 - choices made of stubs
                    pass
            if _plain(action.default):
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
            short = ast.FunctionDef(
                name=fn.name,
                args=fn.args,
                body=fn.body[: index + 1],
                decorator_list=[],
                returns=None,
                type_comment=None,
            )
            ast.copy_location(short, fn)
            module = ast.fix_missing_locations(ast.Module(body=[short], type_ignores=[]))
            namespace: dict[str, Any] = {}
            main = self.modules[self.spec["main_module"]]
            exec(compile(module, self.main_path, "exec"), main.__dict__, namespace)  # noqa: S102
            self.cut[(phase, index)] = namespace[phase]
        return self.cut[(phase, index)]

    def run(self, job: dict[str, Any]) -> dict[str, Any]:
        target = job["target"]
        stop = self.plan.stop_for((target["file"], target["function"] or ""), target["line"])
        at_parse = stop is None and self._parse_time(target["function"] or "")
        if stop is None and not at_parse:
            return {"id": job["id"], "status": "unreachable", "reason": self._unreachable(target)}
        os.environ.clear()
        os.environ.update(self.base_env)
        os.environ.update(job.get("env", {}))
        stubs.NOTES.clear()
        self.logs.clear()
        out: dict[str, Any] = {"id": job["id"], "status": "passed"}
        signal.setitimer(signal.ITIMER_REAL, float(job.get("timeout", 5.0)))
        try:
            namespace = self.parser().parse_args(job["argv"])
            if not at_parse:
                obj = getattr(self.cls, self.spec["from_args"])(namespace)
                for phase in self.plan.phases:
                    if phase == stop.phase:
                        self.truncated(phase, stop.index)(obj)
                        break
                    self.phase_fns[phase](obj)
        except ParseFailed as exc:
            out.update(status="parse-error", reason=str(exc)[:MESSAGE_LIMIT])
        except Timeout:
            out.update(status="timeout", reason=f"ran longer than {job.get('timeout', 5.0)} s")
        except stubs.Undecidable as exc:
            out.update(status="undecidable", reason=exc.what)
        except stubs.MissingFact as exc:
            out.update(status="undecidable", reason=str(exc))
        except BaseException as exc:  # noqa: BLE001 - every exception is an outcome here
            out.update(status="raised", exc=self._where(exc))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if stubs.NOTES and out["status"] in ("passed", "raised"):
            # A decision was taken on a stub somewhere and swallowed by the code's own except.
            out.update(status="undecidable", reason=stubs.NOTES[0], swallowed=True)
        out["logs"] = [log for log in self.logs if log["file"] in self.loaded.values()]
        if stop is not None:
            out["stop"] = f"{stop.phase} up to line {stop.line}: {stop.text}"
        return out

    def _where(self, exc: BaseException) -> dict[str, Any]:
        frames = [
            (f.filename, f.lineno, f.name)
            for f in traceback.extract_tb(exc.__traceback__)
            if f.filename in self.loaded.values()
        ]
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

    def _parse_time(self, function: str) -> bool:
        """A site in an argparse Action (or a type function the parser calls)."""
        owner = function.split(".")[0]
        main = self.modules[self.spec["main_module"]]
        obj = main.__dict__.get(owner)
        return isinstance(obj, type) and issubclass(obj, argparse.Action)

    def _unreachable(self, target: dict[str, Any]) -> str:
        phases = " and ".join(f"{self.spec['args_class']}.{p}" for p in self.plan.phases)
        if not phases:
            want = ", ".join(self.spec["phases"])
            return f"this revision's {self.spec['args_class']} has none of {want}"
        return f"{target['function'] or 'module-level code'} is not reached from {phases}"


def _plain(value: Any) -> bool:
    if type(value) in (str, int, float, bool, type(None)):
        return True
    if type(value) in (list, tuple):
        return all(_plain(v) for v in value)
    return False


def main() -> int:
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # the revision's prints must not corrupt the protocol
    sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
    signal.signal(signal.SIGALRM, _on_alarm)
    setup = json.loads(sys.stdin.readline())
    try:
        world = World(setup)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent as data
        last = traceback.extract_tb(exc.__traceback__)[-1:]
        where = f" at {last[0].filename}:{last[0].lineno}" if last else ""
        reason = f"{type(exc).__name__}: {exc}"[:400] + where
        proto.write(json.dumps({"ready": False, "reason": reason}) + "\n")
        proto.flush()
        return 0
    try:
        options = world.options()
    except BaseException as exc:  # noqa: BLE001 - a parser that cannot be built is data too
        options = {}
        world.parser_error = f"{type(exc).__name__}: {exc}"[:400]
    info = {
        "ready": True,
        "phases": list(world.plan.phases),
        "missing": list(world.plan.missing),
        "steps": len(world.plan.steps),
        "loaded": world.loaded,
        "options": options,
        "parser_error": world.parser_error,
    }
    proto.write(json.dumps(info) + "\n")
    proto.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        try:
            out = world.run(job)
        except BaseException as exc:  # noqa: BLE001 - the harness itself failed on this job
            out = {"id": job.get("id"), "status": "error", "reason": f"{type(exc).__name__}: {exc}"}
        proto.write(json.dumps(out, default=repr) + "\n")
        proto.flush()
    return 0


def _on_alarm(signum: int, frame: Any) -> None:
    raise Timeout()


if __name__ == "__main__":
    raise SystemExit(main())
