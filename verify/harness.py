"""The parent side of the sandbox: one child process per revision, one command line per run.

    with Harness(spec, repo=..., sha=..., workdir=...) as h:
        outcome = h.run(["--tp-size", "3"], {}, Target(file, "ServerArgs.check_server_args", 6112))

The child is started on the first run (a build whose runs all come from the cache starts none).
Each run has a time limit in the child (an alarm) and in the parent (a read deadline): a child
that does not answer in time is killed and the next run starts a fresh one.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kverr.extractor import sources
from kverr.verify.spec import VerifySpec

HARNESS_VERSION = "1"  # bump when what a run means changes (part of every cache key)
START_TIMEOUT = 60.0  # seconds for the child to read and load the revision's modules


@dataclass(frozen=True)
class Target:
    """The record's site: the run stops after the validation step that reaches its function."""

    file: str
    function: str | None
    line: int
    end_line: int = 0
    # "" : stop after the statement that reaches `function`; "parse": after the parser (an
    # argparse record's check); "end": through every phase (a launch that must go through)
    until: str = ""


@dataclass(frozen=True)
class Log:
    level: str
    message: str
    file: str
    line: int


@dataclass(frozen=True)
class Outcome:
    """What one run of the revision's own validation did.

    status: passed | raised | undecidable (a stub decided a branch) | parse-error (argparse
    rejected the command line) | timeout | unreachable (no validation step reaches the
    function) | unavailable (the revision's modules do not load in the sandbox) | error (the
    harness failed)."""

    status: str
    exc_class: str = ""
    message: str = ""
    file: str = ""
    line: int = 0
    function: str = ""
    logs: tuple[Log, ...] = ()
    reason: str = ""
    stop: str = ""  # "__post_init__ up to line 758: self._handle_ssl_validation()"
    # The record's function as the run went: {"entered", "lines", "guards": {line: {"value",
    # "names"}}} for the guards the run was asked to watch (see child._Watch).
    trace: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def guard(self, line: int) -> dict[str, Any] | None:
        """The watched guard at `line` as the run evaluated it, or None (not reached)."""
        return self.trace.get("guards", {}).get(str(line))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status}
        for key in ("exc_class", "message", "file", "line", "function", "reason", "stop", "trace"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        if self.logs:
            out["logs"] = [[g.level, g.message, g.file, g.line] for g in self.logs]
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Outcome:
        logs = tuple(Log(*g) for g in data.get("logs", ()))
        return cls(**{**{k: v for k, v in data.items() if k != "logs"}, "logs": logs})

    @classmethod
    def from_child(cls, data: Mapping[str, Any]) -> Outcome:
        exc = data.get("exc") or {}
        logs = tuple(
            Log(g["level"], g["message"], g["file"], int(g["line"])) for g in data.get("logs", ())
        )
        return cls(
            status=data.get("status", "error"),
            exc_class=exc.get("class", ""),
            message=exc.get("message", ""),
            file=exc.get("file", ""),
            line=int(exc.get("line", 0) or 0),
            function=exc.get("function", ""),
            logs=logs,
            reason=data.get("reason", ""),
            stop=data.get("stop", ""),
            trace=data.get("trace") or {},
        )


@dataclass
class Harness:
    """The sandbox of one platform profile (see the module docstring), pointed at one revision
    at a time (`retarget`). `overrides`: path -> text of files that are in no commit (a
    snapshot revision's files from disk)."""

    spec: VerifySpec
    repo: str
    sha: str | None
    workdir: Path
    platform: str | None = None
    model: str | None = None
    overrides: Mapping[str, str] = field(default_factory=dict)
    timeout: float = 5.0
    info: dict[str, Any] = field(default_factory=dict)
    runs: int = 0
    seconds: float = 0.0  # time spent in runs and start-up (the bench reads it)
    child_ms: dict[str, float] = field(default_factory=lambda: {"load": 0.0, "run": 0.0})
    _proc: subprocess.Popen[str] | None = None
    _fields: Any = None  # the solver's attribute map the child holds
    _loaded: tuple | None = None  # the revision the child has loaded
    _broken: dict[tuple, dict[str, Any]] = field(default_factory=dict)  # revisions that fail
    _dir: Path | None = None
    _next: int = 0

    def __enter__(self) -> Harness:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def platform_name(self) -> str:
        return self.spec.platform(self.platform).name

    def run(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        target: Target,
        watch: Sequence[Mapping[str, Any]] = (),
        model: Mapping[str, Any] | None = None,
        files: Sequence[str] | Mapping[str, str] = (),
        fields: Mapping[str, Any] | None = None,
    ) -> Outcome:
        """One run. `watch`: guards of the target function to evaluate where the code does,
        {"line", "test"} plus {"want", "fields"} to ask for values that give the other truth
        value (see solve.py); `model`: attributes of the model's hf_config to override (and
        "profile": another model profile); `files`: relative paths that exist during the run,
        or {path: text} to write first (a config file); `fields`: attribute -> option, for the
        solver (sent to the child once, not with every guard)."""
        started = time.monotonic()
        try:
            return self._run(argv, env, target, watch, model or {}, files, fields)
        finally:
            self.seconds += time.monotonic() - started

    def _run(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        target: Target,
        watch: Sequence[Mapping[str, Any]],
        model: Mapping[str, Any],
        files: Sequence[str] | Mapping[str, str],
        fields: Mapping[str, Any] | None = None,
    ) -> Outcome:
        if not self._start():
            return Outcome(
                "unavailable", reason=self.info.get("reason", "the sandbox did not start")
            )
        assert self._proc is not None and self._proc.stdin is not None
        self._next += 1
        job = {
            "id": self._next,
            "argv": [*self.spec.base_args, *argv],
            "env": dict(env),
            "target": {
                "file": target.file,
                "function": target.function,
                "line": target.line,
                "until": target.until,
            },
            "timeout": self.timeout,
            "watch": [dict(w) for w in watch],
            "model": dict(model),
            "files": dict(files) if isinstance(files, Mapping) else list(files),
        }
        if fields is not None and fields is not self._fields:
            job["fields"] = dict(fields)
            self._fields = fields
        self.runs += 1
        try:
            self._proc.stdin.write(json.dumps(job) + "\n")
            self._proc.stdin.flush()
            line = self._read_line(self.timeout + 5.0)
        except (BrokenPipeError, OSError):
            line = None
        if line is None:
            self._kill()  # the next run starts a fresh child and loads the revision again
            self._fields = None
            return Outcome("timeout", reason=f"the sandbox did not answer within {self.timeout} s")
        data = json.loads(line)
        self.child_ms["run"] += data.get("ms", 0.0)
        return Outcome.from_child(data)

    def retarget(self, sha: str | None, overrides: Mapping[str, str] | None = None) -> None:
        """Point the sandbox at another revision; the running child loads it on the next run
        (one child serves a whole build: no new process, no new imports per revision)."""
        self.sha, self.overrides = sha, dict(overrides or {})

    def _key(self) -> tuple[str | None, tuple[str, ...]]:
        return self.sha, tuple(sorted(self.overrides))

    def _start(self) -> bool:
        """The child running with the current revision loaded (False: it does not load)."""
        key = self._key()
        if key in self._broken:
            self.info = self._broken[key]
            return False  # the revision does not load: no point in trying again per run
        if self._proc is None or self._proc.poll() is not None:
            self._spawn()
        elif self._loaded == key:
            return True
        assert self._proc is not None and self._proc.stdin is not None
        self._fields = None  # a new world has no attribute map yet
        try:
            self._proc.stdin.write(json.dumps(self._setup()) + "\n")
            self._proc.stdin.flush()
            line = self._read_line(START_TIMEOUT)
        except (BrokenPipeError, OSError):
            line = None
        self.info = json.loads(line) if line else {"ready": False, "reason": self._died()}
        self.child_ms["load"] += self.info.get("ms", 0.0)
        if not self.info.get("ready"):
            self._broken[key] = self.info
            if line is None:
                self._kill()
            self._loaded = None
            return False
        self._loaded = key
        return True

    def _spawn(self) -> None:
        self._kill()
        self._dir = Path(tempfile.mkdtemp(prefix="kverr-verify-", dir=self.workdir))
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self._dir),
            "TMPDIR": str(self._dir),
            "LANG": "C.UTF-8",
        }
        if os.environ.get("KVERR_VERIFY_DEBUG"):
            env["KVERR_VERIFY_DEBUG"] = "1"
        # One hash seed for every child: a check that prints a set (`list(allowed)`) must read
        # the same in each run, or a rebuild solves a different fix. So not -I, which would
        # ignore PYTHONHASHSEED: the environment above is ours alone, -s leaves the user's site
        # out and -P (3.11+) keeps the work dir, where a launch writes its files, off sys.path.
        env["PYTHONHASHSEED"] = "0"
        safe_path = ["-P"] if sys.version_info >= (3, 11) else []
        self._proc = subprocess.Popen(
            [sys.executable, "-s", *safe_path, "-B", "-m", "kverr.verify.child"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=open(self._dir / "stderr.txt", "w"),  # noqa: SIM115 - the child owns it
            cwd=self._dir,
            env=env,
            text=True,
            encoding="utf-8",
        )
        self._loaded = None

    def _setup(self) -> dict[str, Any]:
        spec = self.spec
        prefix = f"{spec.source_root}/{spec.package}".strip("/")
        files = (
            dict(sources.list_files(self.repo, self.sha, [f"{prefix}/**/*.py"])) if self.sha else {}
        )
        return {
            "repo": str(self.repo),
            "sha": self.sha,
            "files": files,
            "probe_object": next(iter(files.values()), None),
            "overrides": dict(self.overrides),
            "workdir": str(self._dir),
            "spec": {
                "source_root": spec.source_root,
                "package": spec.package,
                "main_module": spec.main_module,
                "modules": list(spec.modules),
                "args_class": spec.args_class,
                "add_args": spec.add_args,
                "from_args": spec.from_args,
                "phases": list(spec.phases),
                "model_factory": spec.model_factory,
                "substitutes": dict(spec.substitutes),
                "models": {name: m.to_json() for name, m in spec.models.items()},
                "argv": spec.argv.to_json() if spec.argv else None,
            },
            "platform": spec.platform(self.platform).to_json(),
            "model": spec.model(self.model).to_json(),
            "model_path": _model_path(spec.base_args),
        }

    def _read_line(self, timeout: float) -> str | None:
        assert self._proc is not None and self._proc.stdout is not None
        ready, _, _ = select.select([self._proc.stdout], [], [], timeout)
        if not ready:
            return None
        line = self._proc.stdout.readline()
        return line or None

    def _died(self) -> str:
        tail = ""
        if self._dir is not None and (self._dir / "stderr.txt").exists():
            lines = (self._dir / "stderr.txt").read_text(errors="replace").strip().splitlines()
            tail = lines[-1] if lines else ""
        return f"the sandbox process exited ({tail or 'no message'})"

    def _kill(self) -> None:
        self._loaded = None
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait()
            for stream in (self._proc.stdin, self._proc.stdout):
                if stream:
                    stream.close()
            self._proc = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def close(self) -> None:
        if self._proc is not None and self._proc.stdin is not None:
            try:
                self._proc.stdin.close()
                self._proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._kill()


def _model_path(base_args: Sequence[str]) -> str:
    """The value after the first option of `base_args` (`--model-path MODEL_PATH`)."""
    args = list(base_args)
    return args[1] if len(args) >= 2 and not args[1].startswith("-") else ""
