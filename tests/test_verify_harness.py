"""The sandbox runs a revision's own validation from git objects: the fixture project's
ServerArgs, parsed by its own parser, its __post_init__ steps cut after the record's step."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from kverr.verify.harness import Harness, Outcome, Target
from kverr.verify.verdict import Expect, fires, passes
from verify_fixture import ARGS, SERVER_ARGS, fake_repo, fake_spec, line_of

pytestmark = pytest.mark.sandbox  # runs a revision's code (tests/conftest.py)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("verify")
    g, sha = fake_repo(root / "repo")
    return g.root, sha


@pytest.fixture(scope="module")
def harness(project, tmp_path_factory):
    repo, sha = project
    work = tmp_path_factory.mktemp("work")
    with Harness(fake_spec(), repo=str(repo), sha=sha, workdir=work, timeout=2.0) as h:
        yield h


def at(function: str, needle: str) -> Target:
    line = line_of(needle)
    return Target(ARGS, f"ServerArgs.{function}", line, line)


SSL = at("_handle_ssl", "requires --ssl-certfile")
PARALLEL = at("_handle_parallel", "assert self.tp_size % self.moe_dp_size")
PAGE = at("_handle_page_size", 'raise ValueError(f"page_size must divide')
FA4 = at("_handle_backend", "requires an SM100 GPU")
FOO = at("_handle_misc", "needs FAKE_ALLOW_FOO")
CHECK = at("check_server_args", "tp_size must be at most 8")


def test_the_revision_loads_and_reports_its_parser(harness: Harness) -> None:
    harness.run([], {}, SSL)
    assert harness.info["ready"] is True
    assert harness.info["phases"] == ["__post_init__", "check_server_args"]
    # The real parser's Namespace names: --moe-dp-size stores into moe_data_parallel_size.
    assert harness.info["options"]["--moe-dp-size"]["dest"] == "moe_data_parallel_size"
    assert harness.info["options"]["--attention-backend"]["choices"] == [
        "fa3",
        "fa4",
        "triton",
        "flashinfer",
    ]
    assert harness.info["options"]["--prefill-only"]["switch"] is True


def test_before_raises_exactly_the_record_and_after_passes(harness: Harness) -> None:
    expect = Expect(
        "assert", "AssertionError", "tp_size must be divisible", ARGS, *[PARALLEL.line] * 2
    )
    before = harness.run(["--tp-size", "3", "--moe-dp-size", "2"], {}, PARALLEL)
    assert before.status == "raised" and before.exc_class == "AssertionError"
    assert before.line == PARALLEL.line and fires(before, expect)
    after = harness.run(["--tp-size", "2", "--moe-dp-size", "2"], {}, PARALLEL)
    assert after.status == "passed" and passes(after, expect)
    # The run stops after the step that reaches the record's function: later steps never run.
    assert "_handle_parallel" in after.stop


def test_an_earlier_check_fires_first_and_says_where(harness: Harness) -> None:
    out = harness.run(
        ["--ssl-keyfile", "/no/such/file"], {}, at("_handle_ssl", "SSL key file not found")
    )
    assert out.status == "raised" and out.line == SSL.line
    assert "requires --ssl-certfile" in out.message


def test_a_constant_of_a_heavy_module_is_read_from_its_source(harness: Harness) -> None:
    # chunk.py imports torch and triton and decorates a kernel; only `CHUNK_SIZE = 64` runs.
    out = harness.run(["--page-size", "48"], {}, PAGE)
    assert out.status == "raised" and out.message == "page_size must divide 64, got 48"
    assert harness.run(["--page-size", "64"], {}, PAGE).status == "passed"


def test_platform_profiles_answer_the_probes(project, tmp_path: Path) -> None:
    repo, sha = project
    for name, status in (("sm90", "raised"), ("sm100", "passed")):
        with Harness(fake_spec(), repo=str(repo), sha=sha, workdir=tmp_path, platform=name) as h:
            out = h.run(["--attention-backend", "fa4"], {}, FA4)
            assert out.status == status, (name, out)


def test_a_stub_that_decides_a_branch_is_undecidable(project, tmp_path: Path) -> None:
    repo, sha = project
    # With no profile answer, get_device_sm() unpacks a stubbed torch call: nothing to decide on.
    with Harness(fake_spec(), repo=str(repo), sha=sha, workdir=tmp_path, platform="bare") as h:
        out = h.run([], {}, FA4)
    assert out.status == "undecidable"
    assert "torch.cuda.get_device_capability()" in out.reason


def test_stub_comparisons_and_swallowed_ones_are_undecidable(harness: Harness) -> None:
    out = harness.run(["--probe-torch"], {}, FOO)
    assert out.status == "undecidable" and "torch.cuda.mem_get_info()" in out.reason
    # The code's own `except BaseException: pass` cannot hide it.
    out = harness.run(["--swallow"], {}, FOO)
    assert out.status == "undecidable" and "torch.cuda.device_count()" in out.reason


def test_environment_variables_reach_the_code_and_never_leak(harness: Harness, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_ALLOW_FOO", "1")  # the parent's environment is not the child's
    assert harness.run(["--enable-foo"], {}, FOO).status == "raised"
    assert harness.run(["--enable-foo"], {"FAKE_ALLOW_FOO": "1"}, FOO).status == "passed"
    assert harness.run(["--enable-foo"], {}, FOO).status == "raised"


def test_warnings_are_captured_with_their_line(harness: Harness) -> None:
    out = harness.run([], {}, FA4)
    assert out.status == "passed"
    assert [(g.level, g.message) for g in out.logs] == [
        ("warning", "Attention backend not set; using fa3.")
    ]
    assert out.logs[0].line == line_of('logger.warning(f"Attention backend not set')


def test_parse_errors_argparse_actions_and_unreachable_functions(harness: Harness) -> None:
    out = harness.run(["--attention-backend", "fa9"], {}, SSL)
    assert out.status == "parse-error" and "invalid choice: 'fa9'" in out.reason
    action = Target(ARGS, "LoRAPathAction.__call__", line_of('assert "=" in value'))
    out = harness.run(["--lora-paths", "adapter"], {}, action)
    assert out.status == "raised" and out.exc_class == "AssertionError"
    assert harness.run(["--lora-paths", "a=/x"], {}, action).status == "passed"
    out = harness.run([], {}, Target(ARGS, "PortArgs.init_new", line_of("ports are chosen")))
    assert out.status == "unreachable" and "PortArgs.init_new" in out.reason


def test_a_later_phase_runs_after_the_whole_post_init(harness: Harness) -> None:
    out = harness.run(["--tp-size", "16"], {}, CHECK)
    assert out.status == "raised" and out.line == CHECK.line
    assert harness.run(["--tp-size", "8"], {}, CHECK).status == "passed"


def test_no_network_and_no_writes_outside_the_work_dir(harness: Harness) -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = str(listener.getsockname()[1])
        out = harness.run(["--phone-home"], {"FAKE_PORT": port}, FOO)
        listener.settimeout(0.2)
        with pytest.raises(TimeoutError):
            listener.accept()  # nothing came through
    assert out.status == "raised" and out.exc_class in ("OSError", "ConnectionRefusedError")
    out = harness.run(["--write-outside"], {}, FOO)
    assert out.status == "raised" and out.exc_class in ("PermissionError", "FileNotFoundError")
    assert not Path("/tmp/kverr-verify-must-not-exist").exists()


def test_a_run_over_its_time_limit_is_a_timeout_and_the_next_run_works(harness: Harness) -> None:
    out = harness.run(["--hang"], {}, FOO)
    # the child stops itself on CPU time (a loaded machine changes nothing), keeping the child
    assert out.status == "timeout" and out.reason.endswith("s of CPU"), out
    assert harness.run([], {}, FOO).status == "passed"


def test_a_revision_that_does_not_load_is_unavailable(tmp_path: Path) -> None:
    g, sha = fake_repo(tmp_path / "repo", **{ARGS.replace("/", "__"): "def broken(:\n"})
    with Harness(fake_spec(), repo=str(g.root), sha=sha, workdir=tmp_path) as h:
        out = h.run([], {}, SSL)
        assert out.status == "unavailable" and "SyntaxError" in out.reason
        assert h.run([], {}, SSL).status == "unavailable"  # no retry per run


def test_a_revision_that_fails_as_it_loads_says_where_in_its_own_code(tmp_path: Path) -> None:
    # the line of the revision's file, never one of kverr's or the interpreter's
    g, sha = fake_repo(tmp_path / "repo", **{ARGS.replace("/", "__"): "x = 1\nraise RuntimeError('no GPU here')\n"})  # fmt: skip
    with Harness(fake_spec(), repo=str(g.root), sha=sha, workdir=tmp_path) as h:
        out = h.run([], {}, SSL)
    assert out.status == "unavailable", out
    assert out.reason.endswith(f"RuntimeError: no GPU here at {ARGS.rsplit('/', 1)[1]}:2"), (
        out.reason
    )


def test_outcomes_round_trip_through_json() -> None:
    out = Outcome("raised", "ValueError", "bad", ARGS, 3, "f", reason="", stop="x")
    assert Outcome.from_json(out.to_json()) == out


def test_one_child_serves_revision_after_revision(tmp_path: Path) -> None:
    g, first = fake_repo(tmp_path / "repo")
    changed = SERVER_ARGS.replace("tp_size must be at most 8", "tp_size must be at most 4")
    changed = changed.replace("self.tp_size <= 8", "self.tp_size <= 4")
    second = g.commit("tighter", {ARGS: changed})
    broken = g.commit("broken", {ARGS: "def broken(:\n"})
    with Harness(fake_spec(), repo=str(g.root), sha=first, workdir=tmp_path) as h:
        assert h.run(["--tp-size", "6"], {}, CHECK).status == "passed"
        pid = h._proc.pid
        h.retarget(second)
        out = h.run(["--tp-size", "6"], {}, CHECK)
        assert out.status == "raised" and out.message == "tp_size must be at most 4"
        h.retarget(broken)
        assert h.run([], {}, CHECK).status == "unavailable"
        h.retarget(first)  # the broken revision left nothing behind
        assert h.run(["--tp-size", "6"], {}, CHECK).status == "passed"
        assert h._proc.pid == pid  # the same process all along


def test_every_child_iterates_a_set_in_the_same_order(project, tmp_path: Path) -> None:
    # A message that prints a set (`list(allowed_modalities)`) must read the same in every
    # child, or a rebuild's solved fix changes: the children run with one fixed hash seed.
    words = [f"w{i}" for i in range(12)]
    needle = 'raise ValueError(f"page_size must divide'
    source = SERVER_ARGS.replace(
        needle, f'raise ValueError(f"allowed: {{list({set(words)!r})}}")\n            {needle}'
    )
    root = tmp_path / "repo"
    g, sha = fake_repo(root, **{ARGS.replace("/", "__"): source})
    target = Target(ARGS, "ServerArgs._handle_page_size", line_of("allowed:", source), 0)
    seen = set()
    for n in range(3):
        (tmp_path / f"w{n}").mkdir()
        with Harness(fake_spec(), repo=str(g.root), sha=sha, workdir=tmp_path / f"w{n}") as h:
            out = h.run(["--page-size", "48"], {}, target)
        assert out.status == "raised" and out.message.startswith("allowed: ")
        seen.add(out.message)
    assert len(seen) == 1


def test_a_class_over_stubbed_bases_keeps_the_arguments_it_passes_on() -> None:
    from kverr.verify.sandbox.stubs import Stub, StubbedBase

    class Draft(Stub("transformers.PretrainedConfig")):  # type: ignore[misc]
        def __init__(self, method: str, **kwargs: object) -> None:
            self.method = method
            super().__init__(**kwargs)

    draft = Draft("eagle", model_type="eagle", vocab_size=8)
    assert (draft.method, draft.model_type, draft.vocab_size) == ("eagle", "eagle", 8)
    assert isinstance(draft, StubbedBase)

    class Two(Stub("a.A"), Stub("b.B")):  # type: ignore[misc]  # two stubs: no duplicate base
        pass

    assert Two(x=1).x == 1  # type: ignore[attr-defined]

    class Mixed(dict, Stub("a.A")):  # type: ignore[misc]  # a real base keeps its own __init__
        pass

    assert Mixed.__mro__ == (Mixed, dict, object)


def test_a_value_longer_than_the_patterns_groups_still_fires_the_record() -> None:
    """ "Must be one of [...]" lists forty methods: more than a placeholder's bounded group
    takes. The run's message holds the template's literal text in order: it is the record."""
    from kverr.records.pattern import MAX_VALUE

    expect = Expect(
        "raise", "ValueError", r"Unknown method: (?P<v0>.{0,256}?)\. Must be one of (?P<v1>.{0,256})\.",
        "vllm/config/model.py", 10, 12, literals=("Unknown method:", ". Must be one of", "."),
    )  # fmt: skip
    listed = str([f"method_{i}" for i in range(40)])
    assert len(listed) > MAX_VALUE
    message = f"Unknown method: foo. Must be one of {listed}."
    assert fires(Outcome("raised", "ValueError", message, "vllm/config/model.py", 11), expect)
    other = Outcome("raised", "ValueError", f"Unknown dtype: {listed}.", "vllm/config/model.py", 11)
    assert not fires(other, expect)


@pytest.mark.parametrize(
    ("test", "arg", "answer"),
    [
        ("at_least", 89, False),  # an A100 has no FP8
        ("at_least", (8, 0), True),
        ("at_least", 80, True),
        ("equal", 80, True),
        ("equal", (9, 0), False),
        ("family", 86, True),  # an 8.x GPU
        ("family", 100, False),
    ],
)
def test_a_capability_probe_compares_with_its_argument(test, arg, answer) -> None:
    # an SM80 box, asked as the platform's own has_device_capability, is_device_capability
    # and is_device_capability_family are (a constant answered every argument alike)
    from kverr.verify.sandbox.child import decode
    from kverr.verify.sandbox.stubs import _result

    probe = decode({"capability": [8, 0], "test": test}, {})
    assert _result(probe, (arg,)) is answer
