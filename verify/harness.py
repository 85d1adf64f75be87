"""The parent side of the sandbox: one child process per revision, one command line per run.

    with Harness(spec, repo=..., sha=..., workdir=...) as h:
        outcome = h.run(["--tp-size", "3"], {}, Target(file, "ServerArgs.check_server_args", 6112))

The child is started on the first run (a build whose runs all come from the cache starts none),
confined by the OS (verify/confine.py) unless the build trusts the repository. Jobs and answers
are frames on a pair of pipes of their own (verify/sandbox/channel.py). Each run has a time limit in the
child (an alarm) and in the parent (a deadline on the whole answer): a child that does not
answer in time, or answers with anything but a frame, is killed with its process group and the
next run starts a fresh one.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kverr.extractor import sources
from kverr.verify import confine
from kverr.verify.sandbox.channel import ChannelError, Late, Reader, send
from kverr.verify.spec import VerifySpec

from kverr.errors import SourceError
from kverr.ftypes import with_base

HARNESS_VERSION = "2"  # bump when what a run means changes (part of every cache key)
START_TIMEOUT = 60.0  # seconds for the child to read and load the revision's modules
SETUP_PIPE = 1 << 20  # bytes of the job pipe: a setup frame (the package's file list) fits
# CPU seconds of runs after which a child is replaced between revisions, well before its
# RLIMIT_CPU (confine.Limits) would end it in the middle of a run.
RECYCLE_CPU = confine.Limits().cpu_seconds / 2


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
        """The outcome a child sent; ValueError when its shape is not an outcome's (the
        child runs the repository's code, so nothing it says is taken on trust)."""
        exc = _shaped(data.get("exc") or {}, dict, "exc")
        logs = tuple(
            Log(str(g["level"]), str(g["message"]), str(g["file"]), int(g["line"]))
            for g in _shaped(data.get("logs", []), list, "logs")
        )
        status = data.get("status", "error")
        if status not in _STATUSES:
            raise ValueError(f"unknown status {str(status)[:40]!r}")
        return cls(
            status=status,
            exc_class=str(exc.get("class", "")),
            message=str(exc.get("message", "")),
            file=str(exc.get("file", "")),
            line=int(exc.get("line", 0) or 0),
            function=str(exc.get("function", "")),
            logs=logs,
            reason=str(data.get("reason", "")),
            stop=str(data.get("stop", "")),
            trace=_shaped(data.get("trace") or {}, dict, "trace"),
        )


_STATUSES = frozenset(
    "passed raised undecidable parse-error timeout unreachable unavailable error".split()
)


def _shaped(value: Any, kind: type, name: str) -> Any:
    if not isinstance(value, kind):
        raise ValueError(f"{name} is a {type(value).__name__}, not a {kind.__name__}")
    return value


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
    overrides: Mapping[str, str] = field(default_factory=dict)
    timeout: float = 5.0
    info: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0  # time spent in runs and start-up (the bench reads it)
    child_ms: dict[str, float] = field(default_factory=lambda: {"load": 0.0, "run": 0.0})
    trust_repo: bool = False  # run the child unconfined (the user vouches for the repository)
    # (folder, prefix): the package's files read from a folder instead of git objects (an
    # installed package, a checkout), each under `prefix` as in the repository
    disk: tuple[str, str] | None = None
    _proc: subprocess.Popen[bytes] | None = None
    _to_child: int = -1  # the job pipe's write end
    _from_child: Reader | None = None  # the answer pipe's read end
    _cpu: float = 0.0  # CPU seconds the current child reported
    _fields: Any = None  # the solver's attribute map the child holds
    _loaded: tuple | None = None  # the revision the child has loaded
    _pending: tuple | None = None  # the revision whose setup went out, its answer not yet read
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
            if not self.start():
                return Outcome(
                    "unavailable", reason=self.info.get("reason", "the sandbox did not start")
                )
            self._next += 1
            job = {
                "id": self._next,
                "argv": with_base(self.spec.base_args, argv),
                "env": dict(env),
                "target": {k: getattr(target, k) for k in ("file", "function", "line", "until")},
                "timeout": self.timeout,
                "watch": [dict(w) for w in watch],
                "model": dict(model or {}),
                "files": dict(files) if isinstance(files, Mapping) else list(files),
            }
            if fields is not None and fields is not self._fields:
                job["fields"] = dict(fields)
                self._fields = fields
            try:
                data = self._ask(job, self.wall_deadline())
                out = Outcome.from_child(data)
            except Late:
                self._kill()  # the next run starts a fresh child and loads the revision again
                return Outcome(
                    "timeout",
                    reason=f"the sandbox did not answer within {self.wall_deadline():g} s",
                )
            except (ChannelError, OSError, TypeError, ValueError, KeyError, AttributeError) as exc:
                self._kill()
                return Outcome("error", reason=f"harness: the sandbox's answer is unusable ({exc})")
            self.child_ms["run"] += _number(data.get("ms"))
            self._cpu = max(self._cpu, _number(data.get("cpu")))
            return out
        finally:
            self.seconds += time.monotonic() - started

    def wall_deadline(self) -> float:
        """Wall seconds a run may take before the child is killed: the child stops itself
        after `timeout` CPU seconds, which a loaded machine stretches (a quarter of a core is
        four times as long), and a run that sleeps uses none."""
        return 4 * self.timeout + 5.0

    def _ask(self, message: dict[str, Any] | None, timeout: float) -> dict[str, Any]:
        """Send one frame (None: it went out before, see start_soon) and read the answer
        within `timeout` seconds."""
        assert self._proc is not None and self._from_child is not None
        deadline = time.monotonic() + timeout
        try:
            if message is not None:
                send(self._to_child, message, timeout)
            return self._from_child.read(deadline - time.monotonic())
        except Late:
            raise
        except (ChannelError, BrokenPipeError) as exc:
            try:  # a closed channel is usually a child that died: its last words say why
                self._proc.wait(timeout=1)
            except subprocess.TimeoutExpired:
                raise ChannelError(str(exc)) from None
            raise ChannelError(self._died()) from None

    def retarget(self, sha: str | None, overrides: Mapping[str, str] | None = None) -> None:
        """Point the sandbox at another revision; the running child loads it on the next run
        (one child serves a whole build: no new process, no new imports per revision)."""
        self.sha, self.overrides = sha, dict(overrides or {})

    def _key(self) -> tuple[str | None, tuple[str, ...]]:
        return self.sha, tuple(sorted(self.overrides))

    def start_soon(self) -> None:
        """Start the child and send it the revision now, without waiting for it to load: the
        caller works meanwhile, and the first run reads the child's answer (`kverr check`
        reads its caches while the sandbox loads the release)."""
        key = self._key()
        if key in self._broken or key in (self._loaded, self._pending):
            return
        if not self.trust_repo and confine.unavailable() is not None:
            return  # the first run says why
        if self._proc is None or self._proc.poll() is not None:
            self._spawn()
        elif self._pending is not None:
            return  # another revision is still loading; start() settles it
        try:
            send(self._to_child, self._setup(), START_TIMEOUT)
        except (ChannelError, OSError):
            self._kill()  # the first run starts a fresh child and says what went wrong
            return
        self._pending, self._fields = key, None

    def start(self) -> bool:
        """The child running with the current revision loaded (False: it does not load)."""
        key = self._key()
        if key in self._broken:
            self.info = self._broken[key]
            return False  # the revision does not load: no point in trying again per run
        if self._proc is not None and self._loaded != key and self._cpu > RECYCLE_CPU:
            self._kill()  # a fresh child before this one nears its CPU limit (module doc)
        if not self.trust_repo and confine.unavailable() is not None:
            self.info = {"ready": False, "reason": f"no sandbox: {confine.unavailable()}"}
            return False
        fresh = self._proc is None or self._proc.poll() is not None
        if fresh:
            self._spawn()
        elif self._loaded == key:
            return True
        self._fields = None  # a new world has no attribute map yet
        try:
            if self._pending is not None and self._pending != key:
                self._ask(None, START_TIMEOUT)  # the answer for a revision no longer wanted
                self._pending = None
            setup = None if self._pending == key else self._setup()
            self._pending = None
            self.info = self._ask(setup, START_TIMEOUT)
        except (ChannelError, OSError) as exc:
            reason = f"did not load within {START_TIMEOUT:g} s" if isinstance(exc, Late) else exc
            self.info = {"ready": False, "reason": f"the sandbox process failed: {reason}"}
            self._kill()
        self.child_ms["load"] += _number(self.info.get("ms"))
        if self.info.get("ready") is not True:
            if not fresh and "MemoryError" in str(self.info.get("reason")):
                # A child keeps the parses of earlier revisions: out of memory there says
                # nothing of this revision, and which revisions came before depends on the
                # run cache's hits.
                self._kill()
                return self.start()
            self.info["reason"] = str(self.info.get("reason", "the revision did not load"))
            self._broken[key] = self.info
            self._loaded = None
            return False
        self._loaded = key
        return True

    def _spawn(self) -> None:
        self._kill()
        self._dir = Path(tempfile.mkdtemp(prefix="kverr-verify-", dir=self.workdir))
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "GIT_CONFIG_NOSYSTEM": "1",
        }
        if os.environ.get("KVERR_VERIFY_DEBUG"):
            env["KVERR_VERIFY_DEBUG"] = "1"
        # One hash seed for every child: a check that prints a set (`list(allowed)`) must read
        # the same in each run, or a rebuild solves a different fix. So not -I, which would
        # ignore PYTHONHASHSEED: the environment is ours alone, -s leaves the user's site out
        # and -P (3.11+) keeps the work dir, where a launch writes its files, off sys.path.
        env["PYTHONHASHSEED"] = "0"
        env["PYTHONPATH"] = confine.kverr_root()
        jobs_r, jobs_w = os.pipe()
        answers_r, answers_w = os.pipe()
        try:  # room for the whole setup frame, so start_soon never waits for the child
            fcntl.fcntl(jobs_w, fcntl.F_SETPIPE_SZ, SETUP_PIPE)
        except (AttributeError, OSError):
            pass  # not Linux, or over the system's pipe-max-size: send waits, as before
        keep, seccomp = [jobs_r, answers_w], None  # the descriptors the child gets
        safe_path = ["-P"] if sys.version_info >= (3, 11) else []
        argv = [sys.executable, "-s", *safe_path, "-B", "-m", "kverr.verify.sandbox.child"]
        argv += ["--fds", f"{jobs_r},{answers_w}"]
        if self.trust_repo:
            work = str(self._dir)
            env.update(PATH=os.environ.get("PATH", env["PATH"]), HOME=work, TMPDIR=work)
            cmd = argv
        else:  # bubblewrap itself gets no more of our environment than the child does
            work = confine.SCRATCH
            program = confine.seccomp_filter()
            if program is not None:
                seccomp = os.memfd_create("kverr-seccomp", 0)
                os.write(seccomp, program)
                os.lseek(seccomp, 0, os.SEEK_SET)
                keep.append(seccomp)
            reads = _repo_paths(self.repo) if self.repo else []
            reads += [self.disk[0]] if self.disk else []
            reads += _bytecode(env)
            cmd = confine.command(argv, reads=reads, env=env, seccomp_fd=seccomp)
            env = {"PATH": env["PATH"], "LANG": env["LANG"]}
        with open(self._dir / "stderr.txt", "wb") as stderr:  # the child's rlimit caps it
            self._proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                cwd=self._dir,
                env=env,
                pass_fds=keep,
                start_new_session=True,  # one process group: _kill ends it whole
            )
        for fd in keep:
            os.close(fd)
        self._to_child, self._from_child = jobs_w, Reader(answers_r)
        self._work, self._cpu, self._loaded = work, 0.0, None

    def _setup(self) -> dict[str, Any]:
        spec = self.spec
        prefix = f"{spec.source_root}/{spec.package}".strip("/")
        if self.disk is not None:
            files = _disk_files(self.disk, spec)
        elif self.sha:
            files = dict(sources.list_files(self.repo, self.sha, [f"{prefix}/**/*.py"]))
        else:
            files = {}
        return {
            "repo": os.path.abspath(self.repo) if self.repo else "",
            # the child's git reads, as every git call of kverr's: read-only (extractor/sources.py)
            "git": sources.git_command(os.path.abspath(self.repo or "."), "cat-file", "--batch"),
            "git_env": sources.GIT_ENV,
            "disk": {"root": self.disk[0], "prefix": self.disk[1]} if self.disk else None,
            "sha": self.sha,
            "files": files,
            "probe_object": next(iter(files.values()), None) if self.sha else None,
            "overrides": dict(self.overrides),
            "workdir": self._work,
            "spec": {
                **{name: getattr(spec, name) for name in _SPEC_SENT},
                "models": {name: m.to_json() for name, m in spec.models.items()},
                "argv": spec.argv.to_json() if spec.argv else None,
            },
            "platform": spec.platform(self.platform).to_json(),
            "model": spec.model().to_json(),
            "model_path": _model_path(spec.base_args),
        }

    def _died(self) -> str:
        tail = ""
        if self._dir is not None and (self._dir / "stderr.txt").exists():
            with open(self._dir / "stderr.txt", "rb") as f:
                f.seek(max(0, os.fstat(f.fileno()).st_size - 4096))
                lines = f.read().decode("utf-8", "replace").strip().splitlines()
            tail = lines[-1][:400] if lines else ""
        return f"the sandbox process exited ({tail or 'no message'})"

    def _kill(self) -> None:
        self._loaded = self._pending = None
        if self._proc is not None:
            try:  # the whole group: whatever the revision started goes with it
                os.killpg(self._proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self._proc.wait()
            self._proc = None
        if self._to_child >= 0:
            os.close(self._to_child)
            self._to_child = -1
        if self._from_child is not None:
            os.close(self._from_child.fd)
            self._from_child = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def close(self) -> None:
        # A child still loading a revision nobody asked a run of (start_soon, every run
        # answered from a cache) would finish loading before it saw the end of its jobs.
        if self._proc is not None and self._to_child >= 0 and self._pending is None:
            os.close(self._to_child)  # end of jobs: the child exits on its own
            self._to_child = -1
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self._kill()


# The spec's fields the child reads as they are (lists and tables as JSON has them); "launch":
# how a reason names the launch command.
_SPEC_SENT = (
    "source_root package main_module modules args_class add_args from_args phases model_factory"
    " substitutes real parser positional wrappers follow validators launch registries"
).split()


def _number(value: Any) -> float:
    """A figure the child reports, 0 when it is not a number (the child is not trusted)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def package_dir(disk: tuple[str, str], spec: VerifySpec) -> Path:
    """The package's folder in a release read from disk: `disk[1]` is where the folder stands
    in the repository's layout ("python" for site-packages, "" for a checkout)."""
    prefix = f"{spec.source_root}/{spec.package}".strip("/")
    at = disk[1].strip("/")
    return Path(disk[0]) / (prefix[len(at) :].strip("/") if prefix.startswith(at) else prefix)


def _disk_files(disk: tuple[str, str], spec: VerifySpec) -> dict[str, str]:
    """virtual path -> "disk" for each .py file of the package in the folder."""
    root, at = Path(disk[0]), disk[1].strip("/")
    out = {}
    for path in sorted(package_dir(disk, spec).rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        out[f"{at}/{rel}" if at else rel] = "disk"
    return out


def _bytecode(env: dict[str, str]) -> list[str]:
    """Where the child finds the bytecode of the code it may read when the user keeps bytecode
    apart (PYTHONPYCACHEPREFIX): those folders of the prefix alone, read-only, and the prefix
    named in `env`. Compiling kverr's modules was a good part of a child's start."""
    prefix = sys.pycache_prefix
    if not prefix:
        return []
    found = [
        folder
        for path in confine.python_paths()  # the folders it binds
        if os.path.isdir(folder := os.path.join(prefix, path.lstrip("/")))
    ]
    if found:
        env["PYTHONPYCACHEPREFIX"] = prefix
    return found


def _repo_paths(repo: str) -> list[str]:
    """The repository and its git dirs (a worktree's or a `.git` file's point elsewhere)."""
    paths = [os.path.abspath(repo)]
    for flag in ("--absolute-git-dir", "--git-common-dir"):
        try:
            found = sources.git(repo, "rev-parse", flag).decode("utf-8", "surrogateescape")
        except SourceError:
            continue
        paths.append(os.path.abspath(os.path.join(repo, found.strip())))
    return paths


def _model_path(base_args: Sequence[str]) -> str:
    """The model `base_args` name: the value after their first option (`--model-path
    MODEL_PATH`), or their first word when it is no option (`vllm serve MODEL`)."""
    args = list(base_args)
    if args and not args[0].startswith("-"):
        return args[0]
    return args[1] if len(args) >= 2 and not args[1].startswith("-") else ""
