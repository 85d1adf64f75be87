"""The fix search on the fixture project, end to end: records built from the fixture's own
server_args.py, each verified by running that revision's check (table of expected outcomes)."""

from __future__ import annotations

import pytest
from kverr.extractor import extract_files, sources
from kverr.records import build_records
from kverr.records.conditions import Atom
from kverr.verify.step import Session, verify_revision
from kverr.verify.verdict import Verdict
from verify_fixture import ARGS, fake_repo, fake_spec

pytestmark = pytest.mark.sandbox  # runs a revision's code (tests/conftest.py)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("search")
    g, sha = fake_repo(root / "repo")
    rev, files = sources.read_git(g.root, sha, [ARGS])
    exts = extract_files(files)
    records = build_records(exts, rev)
    cache: dict[str, str] = {}
    session = Session(fake_spec(), str(g.root), root, cache=cache)
    verdicts = verify_revision(exts, records, session, rev, files=[(f.path, f.blob) for f in files])
    session.close()
    by_message = {r["errorMessage"]: (r, verdicts[r["id"]]) for r in records}
    return by_message, (exts, records, rev, files, g, cache, root)


def verdict_for(built, prefix: str):
    by_message, _ = built
    hits = [v for m, v in by_message.items() if m.startswith(prefix)]
    assert len(hits) == 1, f"{prefix!r} names {len(hits)} records"
    return hits[0]


CASES = [
    # message prefix, status, text the before line has, text the after line has
    ("tp_size must be divisible", "verified", "--moe-dp-size 2", "--moe-dp-size 2 --tp-size 2"),
    # An arithmetic guard solved with the constant it names (FLA_CHUNK_SIZE is 64).
    ("page_size must divide", "verified", "--page-size 3", "--page-size 64"),
    # The message's own advice, "(fa3/fa4)", names the value of the involved flag.
    ("--prefill-only currently", "verified", "--prefill-only --attention-backend triton",
     "--prefill-only --attention-backend fa3"),
    # An environment variable the check reads becomes a prefix of the command.
    ("--enable-foo needs", "verified", "--enable-foo", "FAKE_ALLOW_FOO=1 python -m fakesrv.launch"),
    # A later phase (check_server_args) runs after the whole __post_init__.
    ("tp_size must be at most 8", "verified", "--tp-size 9", "--tp-size 8"),
    # A warning: the before logs it, the after chooses explicitly and it goes away.
    ("Attention backend not set", "verified", "--model-path MODEL_PATH\n", "--attention-backend fa3"),
    # The earlier check (--ssl-keyfile needs --ssl-certfile) is carried into the before.
    ("SSL key file not found", "verified", "--ssl-certfile", "--ssl-keyfile ssl-keyfile.pem"),
    # The platform profile answers the file system (its InfiniBand devices), and the error's
    # own list of available devices gives the value.
    ("Invalid IB device", "verified", "--ib-device", "--ib-device mlx5_0"),
    # Reached on the profile without InfiniBand; the fix gives the device flag up.
    ("InfiniBand sysfs path not found", "verified", "--ib-device", "MODEL_PATH\n"),
    # A notice only giving the feature up would silence: no fix, said so.
    ("Slow mode is on", "unverified", None, None),
    # Not part of validation: nothing to verify, said so.
    ("ports are chosen at launch", "not-applicable", None, None),
    # A stub decides the branch: never called verified.
    ("not enough free memory", "unverified", None, None),
]  # fmt: skip


@pytest.mark.parametrize(("prefix", "status", "before", "after"), CASES, ids=[c[0] for c in CASES])
def test_each_record_gets_the_verdict_its_check_gives(built, prefix, status, before, after) -> None:
    record, verdict = verdict_for(built, prefix)
    v = verdict.verification
    assert v["status"] == status, v
    assert v["platform"] == ("noib" if "sysfs" in prefix else "sm90")
    assert v["revision"] and set(v) == {
        "status", "platform", "revision", "reason"
    }  # fmt: skip
    if status != "verified":
        assert v["reason"]
        assert verdict.example_fix is None and verdict.keep_fix is False  # advice only
        return
    fix = verdict.example_fix
    head, _, tail = fix.partition("# after\n")
    assert before in head + "\n", fix
    assert after in tail + "\n", fix
    assert verdict.solution and not v["reason"]


def test_unverified_reasons_say_what_the_check_did(built) -> None:
    _, v = verdict_for(built, "Slow mode is on")
    assert v.verification["reason"].startswith("only giving the feature up would silence")
    _, v = verdict_for(built, "not enough free memory")
    assert "could not be decided" in v.verification["reason"]
    assert "torch.cuda.mem_get_info()" in v.verification["reason"]
    _, v = verdict_for(built, "ports are chosen")
    assert "PortArgs.init_new is not reached" in v.verification["reason"]


def test_a_verdict_replaces_the_fix_and_never_keeps_a_rejected_one(built) -> None:
    record, verdict = verdict_for(built, "page_size must divide")
    out = verdict.apply(record)
    assert out["exampleFix"] == verdict.example_fix
    assert out["solutions"][0] == "Launch with --page-size 64"
    assert out["verification"]["status"] == "verified"
    rejected = Verdict("unverified", "no", "sm90", "r").apply(
        {**record, "exampleFix": "# before\nx\n# after\ny", "solutions": ["Remove --page-size"]}
    )
    assert rejected["exampleFix"] == "" and rejected["solutions"] == ["Remove --page-size"]


def test_a_rebuild_answers_every_run_from_the_cache(built) -> None:
    _, (exts, records, rev, files, g, cache, root) = built
    assert cache
    session = Session(fake_spec(), str(g.root), root, cache=cache)
    again = verify_revision(exts, records, session, rev, files=[(f.path, f.blob) for f in files])
    session.close()
    assert session.stats["runs"] == 0 and session.stats["cached"] > 0
    by_message, _ = built
    assert {r["id"]: v.verification for r, v in by_message.values()} == {
        rid: v.verification for rid, v in again.items()
    }


def test_two_workers_give_the_same_verdicts(built) -> None:
    by_message, (exts, records, rev, files, g, cache, root) = built
    session = Session(fake_spec(), str(g.root), root, cache={}, workers=2)
    two = verify_revision(exts, records, session, rev, files=[(f.path, f.blob) for f in files])
    session.close()
    assert len({key[1] for key in session._harnesses} | {0, 1}) == 2
    assert {r["id"]: (v.verification, v.example_fix) for r, v in by_message.values()} == {
        rid: (v.verification, v.example_fix) for rid, v in two.items()
    }


_MIN, _MAX = "--x-config.lookup_min", "--x-config.lookup_max"


@pytest.mark.parametrize(
    ("atoms", "dead"),
    [
        # `elif min is None: ... elif max is None: if min is None: raise`
        ([Atom(_MIN, "is not None"), Atom(_MAX, "is None"), Atom(_MIN, "is None")], _MIN),
        # `if min is None and max is None: ... elif min is None: if max is None: raise`
        ([Atom(None, "expr", text=f"{_MIN} is None and {_MAX} is None", holds=False,
               flags=(_MIN, _MAX)), Atom(_MIN, "is None"), Atom(_MAX, "is None")], _MIN),
        # the same compound with one side unknown says nothing
        ([Atom(None, "expr", text=f"{_MIN} is None and {_MAX} is None", holds=False,
               flags=(_MIN, _MAX)), Atom(_MIN, "is None")], ""),
        # `not x` (empty) next to `x is not None` is a path: an empty list is given
        ([Atom(_MIN, "is not None"), Atom(_MIN, "unset")], ""),
        # a compound test of values, not of None-ness, is not evaluated
        ([Atom(None, "expr", text=f"{_MIN} > {_MAX}", holds=True, flags=(_MIN, _MAX)),
          Atom(_MIN, "is None"), Atom(_MAX, "is None")], ""),
    ],
)  # fmt: skip
def test_a_path_that_needs_an_option_both_given_and_left_out_is_dead(
    atoms: list, dead: str
) -> None:
    from kverr.verify.search.where import contradiction

    assert contradiction(atoms) == dead


@pytest.mark.parametrize(
    ("text", "holds", "kind", "said"),
    [
        ("isinstance(--max-model-len, int)", False, "int", "gives --max-model-len as an integer"),
        ("isinstance(--max-model-len, int)", False, "int | None", "gives --max-model-len as an integer"),
        # the test holding is a launch like any other
        ("isinstance(--max-model-len, int)", True, "int", ""),
        # an option of several types may be given as another one
        ("isinstance(--max-model-len, str)", False, "AttentionBackendEnum | str | None", ""),
        ("isinstance(--max-model-len, int)", False, "str", ""),
    ],
)  # fmt: skip
def test_a_path_that_needs_an_option_of_another_type_than_the_parser_gives_is_dead(
    text: str, holds: bool, kind: str, said: str
) -> None:
    from kverr.verify.search.where import typed_away

    from kverr.ftypes import FlagDecl

    decls = {"--max-model-len": FlagDecl("--max-model-len", "max_model_len", type=kind)}
    atom = Atom(None, "expr", text=text, holds=holds, flags=("--max-model-len",))
    assert (said in typed_away([atom], decls)) and bool(said) == bool(typed_away([atom], decls))


@pytest.mark.parametrize(
    ("atom", "default", "said"),
    [
        # `if backend not in ("ray", "mp", None)`: the parser's choices are ray and mp
        (Atom("--backend", "not in", ("ray", "mp", None)), None, "--backend takes only ray or mp"),
        # left out it is None, which the set does not hold: a launch without it fires
        (Atom("--backend", "not in", ("ray", "mp")), None, ""),
        # ... unless its default is a declared choice
        (Atom("--backend", "not in", ("ray", "mp")), "mp", "--backend takes only ray or mp"),
        (Atom("--backend", "!=", "ray"), "ray", ""),
        (Atom("--backend", "in", ("ray", "mp")), None, ""),
    ],
)  # fmt: skip
def test_a_path_that_needs_an_option_outside_all_its_choices_is_dead(atom, default, said) -> None:
    from kverr.verify.search.where import choices_accepted

    from kverr.ftypes import FlagDecl

    decls = {"--backend": FlagDecl("--backend", "backend", choices=("ray", "mp"), default=default)}
    assert choices_accepted([atom], decls) == said
