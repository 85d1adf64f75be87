"""Project profiles: the shipped ones load, a bad one fails with one line naming file and key."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kverr.cli import app
from kverr.errors import ProfileError
from kverr.profile import as_tables, builtin_names, load_profile, parse_profile

ROOT = Path(__file__).resolve().parents[1]

MINIMAL = """
name = "acme"
product = "Acme"
repository = "acme/engine"
files = ["engine/args.py"]

[launch]
command = "acme run {model}"
model = "MODEL"

[extract]
log_methods = { warning = "warning" }
flag_classes = ["*Args"]
"""


def test_shipped_profiles_load() -> None:
    assert builtin_names() == ["sglang", "vllm"]
    sglang, vllm = load_profile("sglang"), load_profile("vllm")
    assert load_profile(None) == sglang  # the default project
    assert sglang.launch_command() == "python -m sglang.launch_server --model-path MODEL_PATH"
    assert vllm.launch_command() == "vllm serve MODEL"
    assert dict(vllm.extract.log_methods)["warning_once"] == "warning"
    assert "warning_once" not in dict(sglang.extract.log_methods)
    assert sglang.id_namespace == "" and vllm.id_namespace == "vllm"
    assert sglang.verify is not None and vllm.verify is not None  # each carries its [verify]


def test_a_profile_file_by_path(tmp_path: Path) -> None:
    path = tmp_path / "acme.toml"
    path.write_text(MINIMAL, encoding="utf-8")
    p = load_profile(str(path))
    assert (p.name, p.repository, p.files) == ("acme", "acme/engine", ("engine/args.py",))
    assert p.earlier_checks == "all" and p.log_prefixes == ()
    # the TOML shape round-trips through the manifest form
    assert parse_profile(_toml(as_tables(p))) == p
    for name in builtin_names():
        shipped = load_profile(name)
        assert parse_profile(_toml(as_tables(shipped))) == shipped


def test_verify_tables_are_kept_as_data() -> None:
    """The verify step's spec rides along: [verify] and its named platform / model profiles."""
    text = MINIMAL + (
        '\n[verify]\nmain_module = "engine.args"\ndefault_platform = "cuda-sm90"\n'
        "\n[platform.cuda-sm90.probes]\nis_cuda = true\n"
    )
    tables = as_tables(parse_profile(text))
    assert tables["verify"] == {"main_module": "engine.args", "default_platform": "cuda-sm90"}
    assert tables["platform"] == {"cuda-sm90": {"probes": {"is_cuda": True}}}
    with pytest.raises(ProfileError, match=r"belong to a \[verify\] table"):
        parse_profile(MINIMAL + "\n[platform.x]\ny = 1\n")


def test_advice_rules_round_trip_and_leave_the_build_alone() -> None:
    """[advice] is read by explain alone: it rides in the tables, and the build's cache keys
    (the fingerprint) do not change with it."""
    text = MINIMAL + (
        '\n[advice]\nderived = { seq_len = "--max-len" }\nraised_by = { pool = ["--a", "--b"] }\n'
    )
    p = parse_profile(text)
    assert p.advice.derived == (("seq_len", "--max-len"),)
    assert parse_profile(_toml(as_tables(p))) == p
    assert p.fingerprint() == parse_profile(MINIMAL).fingerprint()


@pytest.mark.parametrize(
    ("edit", "error"),
    [
        (lambda t: t + "\n[lanch]\nx = 1\n", r"unknown key 'lanch'"),
        (lambda t: t.replace('product = "Acme"', 'product = "Acme"\nprodcut = "x"'), "prodcut"),
        (lambda t: t.replace("acme run {model}", "acme run"), r"must contain \{model\}"),
        (lambda t: t.replace('"warning" }', '"loud" }'), r"log_methods\.warning = 'loud'"),
        (lambda t: t.replace('repository = "acme/engine"', 'repository = "x"'), "owner/name"),
        (lambda t: t.replace("[extract]", "[extracts]"), r"\[extract\] table is missing"),
        (lambda t: t + "\n[explain]\nlog_prefixes = ['(a+)+b']\n", "nests quantifiers"),
        (lambda t: t + "\n[explain]\nlog_prefixes = ['\\\\d+ ']\n", "without a bound"),
        (lambda t: t + "\n[explain]\nlog_prefixes = ['(?P<who>x) ']\n", "groups other than"),
        (lambda t: t + "\n[explain]\nlog_suffixes = ['.{0,9}x']\n", "literal characters"),
        # empty before a "[": a timestamped line would then open no record (prefilter.log_cuts)
        (lambda t: t + "\n[explain]\nlog_prefixes = ['\\B']\n", "empty prefix at the start"),
        (lambda t: t + "\n[knowledge]\nearlier_checks = 'some'\n", "earlier_checks"),
        (lambda t: t + "\nname2 = [", "not valid TOML"),
        (lambda t: t + "\n[advice]\nderived = { seq_len = 'seq-len' }\n", "advice.derived"),
        (lambda t: t + "\n[advice]\ncaveats = { seq_len = 'x' }\n", "advice.caveats"),
        (lambda t: t + "\n[advice]\nderive = {}\n", "unknown key 'advice.derive'"),
        (lambda t: t + "\n[advice]\nraised_by = { pool = ['x'] }\n", "advice.raised_by"),
        (lambda t: t + "\n[knowledge.catch]\nfiles = 3\n", "knowledge.catch.files"),
        (lambda t: t + "\n[knowledge]\nfile_tags = { a = 3 }\n", "knowledge.file_tags"),
    ],
)
def test_bad_profiles_say_what_and_where(tmp_path: Path, edit, error: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(edit(MINIMAL), encoding="utf-8")
    with pytest.raises(ProfileError, match=error) as info:
        load_profile(str(path))
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_unknown_profile_names_the_choices() -> None:
    with pytest.raises(ProfileError, match=r"neither a shipped profile \(sglang, vllm\)"):
        load_profile("nope")


def test_cli_bad_profile_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("raise ValueError('boom here')\n")
    result = CliRunner().invoke(
        app, ["build", str(tmp_path / "src"), "--profile", "nope", "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2
    assert result.output.startswith("kverr: profile nope is neither a shipped profile")
    assert result.output.count("\n") == 1


def test_no_product_literal_in_the_stages() -> None:
    """Project specifics live in profiles/: a stage that names a product is a smell."""
    offenders = []
    for folder in ("extractor", "records", "catalog", "pipeline"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                low = line.lower()
                if "sglang" in low or "vllm" in low or "sgl-project" in low:
                    offenders.append(f"{path.relative_to(ROOT)}:{no}: {line.strip()}")
    assert not offenders, "product names in stage code:\n" + "\n".join(offenders)


def _toml(tables: dict) -> str:
    """A tiny TOML writer for the shapes profiles use (strings, lists, nested tables)."""
    import json

    def value(v) -> str:
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{json.dumps(k)} = {value(x)}" for k, x in v.items()) + " }"
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return json.dumps(v)

    top = [f"{k} = {value(v)}" for k, v in tables.items() if not isinstance(v, dict)]
    rest = [
        f"[{k}]\n" + "\n".join(f"{json.dumps(kk)} = {value(vv)}" for kk, vv in v.items())
        for k, v in tables.items()
        if isinstance(v, dict)
    ]
    return "\n".join(top) + "\n\n" + "\n\n".join(rest) + "\n"
