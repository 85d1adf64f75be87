"""Values a user recognises for options without declared choices: what the code compares an
option with, its help text's examples, a list written as one word; and no option the check
does not need. End to end on the third fixture project (verify_fixture_values.py), then the
readings one by one."""

from __future__ import annotations

import ast

import pytest
from kverr.extractor import extract_files, sources
from kverr.records import build_records
from kverr.records.knowledge.facts import help_examples, sample_value
from kverr.verify.sandbox import compared
from kverr.verify.search import values
from kverr.verify.search.fields import fields_of
from kverr.verify.step import Session, verify_revision
from verify_fixture_values import ARGS, SERVER_ARGS, values_repo, values_spec

from kverr.ftypes import FlagDecl

pytestmark = pytest.mark.sandbox  # runs a revision's code (tests/conftest.py)

DEVICES = ("cuda", "xpu", "npu", "cpu")


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("values")
    g, sha = values_repo(root / "repo")
    rev, files = sources.read_git(g.root, sha, [ARGS])
    exts = extract_files(files)
    records = build_records(exts, rev)
    session = Session(values_spec(), str(g.root), root, cache={})
    out = verify_revision(exts, records, session, rev, files=[(f.path, f.blob) for f in files])
    session.close()
    return {r["errorMessage"]: out[r["id"]] for r in records}


def lines(verdicts, prefix: str) -> tuple[str, str]:
    hits = [v for m, v in verdicts.items() if m.startswith(prefix)]
    assert len(hits) == 1, f"{prefix!r} names {len(hits)} records"
    (v,) = hits
    assert v.verification["status"] == "verified", v.verification
    before, after = v.example_fix.split("# after\n")
    return before.removeprefix("# before\n").strip() + " ", after.strip() + " "


def options(line: str) -> dict[str, str]:
    words = line.split()
    return {w: (words[i + 1] if i + 1 < len(words) else "") for i, w in enumerate(words)
            if w.startswith("--")}  # fmt: skip


CASES = [
    # prefix, what the before has, what the after has, options neither line may have
    # A member of the collection the option is looked up in, which only the running code
    # holds (`x in RETIRED_LOADERS`, built from other words).
    ("The weight loader was retired", ["--loader sharded_v0"], [], []),
    # The device the check wants turned around: one the help lists, not a word the function
    # compares another option with ("NEXTN").
    ("Ngram speculative decoding", ["--speculative-algorithm NGRAM", "--device xpu "],
     ["--device cuda "], []),
    # A reset that fills in an option the user left out (`if self.device is None`) adds
    # nothing to the launch, nor does a branch the model kind already rules out.
    ("page_size {self.page_size} must be at most 64", ["--mamba-strategy extra_buffer",
     "--page-size 65"], ["--page-size 64"], ["--device"]),
    ("flashinfer linear attention needs", ["--mamba-strategy no_buffer"],
     ["--mamba-strategy extra_buffer"], ["--device"]),
    # A reset of two options in one `if`: the one the launch sets counts.
    ("Please enable dp attention", ["--enable-dp-lm-head", "--dp-size 2"], [], ["--device"]),
    # A list written as one word: an item that is not there, then one that is.
    ("Invalid IB devices specified", ["--ib-devices mlx5_9 "], ["--ib-devices mlx5_0"], []),
    # ... and an item twice.
    ("Duplicate IB devices specified", ["--ib-devices mlx5_0,mlx5_0 "], ["--ib-devices mlx5_0"],
     []),
    # A name the help text gives as an example.
    ("Diffusion LLM inference needs", ["--dllm-algorithm LowConfidence", "--page-size 2"],
     ["--page-size 1"], ["--device"]),
    # The value the code compares the option with.
    ("Dynamic loading is not supported on NPU", ["--load-mode dynamic", "--device npu"], [], []),
]  # fmt: skip


@pytest.mark.parametrize(("prefix", "before", "after", "never"), CASES, ids=[c[0] for c in CASES])
def test_each_fix_uses_values_a_user_recognises(verdicts, prefix, before, after, never) -> None:
    b, a = lines(verdicts, prefix)
    for word in before:
        assert word in b, (word, b)
    for word in after:
        assert word in a, (word, a)
    for option in never:
        assert option not in b and option not in a, (option, b, a)
    device = options(b).get("--device") or options(a).get("--device")
    assert device in (None, *DEVICES), (b, a)


def test_no_free_text_value_is_another_options_word(verdicts) -> None:
    """Across every verified fix: a free-text option never holds a choice of another option
    or a string the function compares something else with."""
    foreign = {"EAGLE", "NEXTN", "NGRAM", "triton", "flashinfer", "fa3", "extra_buffer",
               "no_buffer", "auto", "plain", "llama", "hybrid"}  # fmt: skip
    free = ("--device", "--ib-devices", "--dllm-algorithm", "--load-mode")
    for v in verdicts.values():
        if v.verification["status"] != "verified":
            continue
        for line in v.example_fix.splitlines()[1::2]:
            for option, value in options(line).items():
                if option in free:
                    assert value not in foreign, line


def test_a_test_no_value_turns_is_not_applicable_at_once(tmp_path) -> None:
    """The parser's choices rule the check out: the search says so after one run, without
    trying other values the path accepts (those are for a test reading what no option sets)."""
    g, sha = values_repo(tmp_path / "repo")
    rev, files = sources.read_git(g.root, sha, [ARGS])
    exts = extract_files(files)
    (rec,) = [r for r in build_records(exts, rev) if r["errorMessage"].startswith("--chunk-size")]
    session = Session(values_spec(), str(g.root), tmp_path, cache={})
    v = verify_revision(exts, [rec], session, rev, files=[(f.path, f.blob) for f in files])
    session.close()
    v = v[rec["id"]]
    assert v.verification["status"] == "not-applicable", v.verification
    assert v.runs == 1, v.runs


# ---------------------------------------------------------------- the readings


def test_compared_values_are_the_strings_an_attribute_is_compared_with() -> None:
    found = values.compared_values(SERVER_ARGS, "ServerArgs")
    assert found["device"] == ("cpu", "cuda", "npu")  # != "cpu", startswith, == "npu"
    assert found["load_mode"] == ("static", "dynamic")  # the Literal first, then "dynamic"
    assert "flashinfer" not in found.get("device", ())
    assert found["speculative_algorithm"] == ("NEXTN", "NGRAM")


COMPARED = [
    # guard, attribute, values, fragments
    ('self.device == "npu"', "device", ["npu"], []),
    ('"npu" == self.device', "device", ["npu"], []),
    ('self.device in ("cuda", "xpu")', "device", ["cuda", "xpu"], []),
    ('not self.device.startswith("cuda")', "device", ["cuda"], []),
    ('self.device.lower() != "cpu"', "device", ["cpu"], []),
    ('":" in self.addr', "addr", [], [":"]),
    ('self.kind == "llama" and self.device != "cpu"', "device", ["cpu"], []),
    ('self.kind == "llama" and self.device != "cpu"', "kind", ["llama"], []),
    ('self.backend == "flashinfer" and self.device is None', "device", [], []),
]


@pytest.mark.parametrize(("guard", "attr", "want", "fragments"), COMPARED)
def test_compared_in_one_guard(guard, attr, want, fragments) -> None:
    assert compared.compared_in(ast.parse(guard, mode="eval"), attr) == (want, fragments)


def test_separators_and_listed_words() -> None:
    tree = ast.parse('len([d for d in self.ib.split(",") if d]) == 0', mode="eval")
    assert compared.separators(tree, "ib") == [","]
    assert compared.separators(tree, "other") == []
    assert compared.listed(["mlx5_0,mlx5_1"], ",") == [
        "mlx5_0", "mlx5_1", "mlx5_0,mlx5_0", "mlx5_9"
    ]  # fmt: skip
    assert compared.listed(["eth"], ",") == ["eth", "eth,eth", "eth_9"]
    assert compared.listed([], ",") == []


HELP = [
    ("The device to use ('cuda', 'xpu', 'npu'). Defaults to auto-detection.", ("cuda", "xpu", "npu")),
    ("The diffusion LLM algorithm, such as LowConfidence.", ("LowConfidence",)),
    ("accepts one device (e.g., --ib-device mlx5_0) or several (e.g., --ib-device mlx5_0,mlx5_1)",
     ("mlx5_0", "mlx5_0,mlx5_1")),
    ("The host address, e.g. 192.168.0.2:25000.", ("192.168.0.2:25000",)),
    # prose after "e.g." and "for example" is no value; nor are JSON keys or a lone symbol
    ("Export metrics to a file (e.g. for forwarding to external systems).", ()),
    ("For example, setting it to 2 will use GPU 0,2,4.", ()),
    ('Adapters as JSON: {"lora_name": str, "lora_path": str}', ()),
    ("a string starting with a leading '@' and a file", ()),
    ("Target(s): 'stdout' and/or a directory, e.g., '--log-target stdout /my/path'.", ("stdout",)),
    ("The model's weights; don't use it.", ()),
    (None, ()),
]  # fmt: skip


@pytest.mark.parametrize(("text", "want"), HELP)
def test_help_examples(text, want) -> None:
    assert help_examples(text) == want


def test_sample_value_prefers_the_help_texts_example() -> None:
    decls = {
        "--dllm-algorithm": FlagDecl(name="--dllm-algorithm", dest="dllm_algorithm", type="str",
                                     help="The diffusion LLM algorithm, such as LowConfidence."),
        "--served-name": FlagDecl(name="--served-name", dest="served_name", type="str"),
    }  # fmt: skip
    assert sample_value("--dllm-algorithm", decls) == "LowConfidence"
    assert sample_value("--served-name", decls) == "SERVED_NAME"
    more = {
        "--seed-ip": FlagDecl(name="--seed-ip", dest="seed_ip", type="str"),
        "--seed-port": FlagDecl(name="--seed-port", dest="seed_port", type="int"),
        "--lora-paths": FlagDecl(name="--lora-paths", dest="lora_paths", type="str"),
    }
    assert sample_value("--seed-ip", more) == "192.168.0.2"
    assert sample_value("--seed-port", more) == "30000"
    assert sample_value("--lora-paths", more) == "/path/to/lora-paths"
    shown = {
        "--labels": FlagDecl(name="--labels", dest="labels", type="str",
                             help="Labels allowed, e.g. '--labels label1 label2' is allowed."),
        "--encoder-urls": FlagDecl(name="--encoder-urls", dest="encoder_urls", type="str"),
        "--labels-header": FlagDecl(name="--labels-header", dest="labels_header", type="str",
                                    default="'x-labels'"),
    }  # fmt: skip
    assert sample_value("--labels", shown) == "label1"
    assert sample_value("--encoder-urls", shown) == "http://192.168.0.2:30000"
    assert sample_value("--labels-header", shown) == "x-labels"


def test_fields_tell_the_solver_a_free_text_options_values() -> None:
    decls = {
        "--device": FlagDecl(name="--device", dest="device", type="str", default="None",
                             help="The device to use ('cuda', 'xpu')."),
        "--backend": FlagDecl(name="--backend", dest="backend", type="str",
                              choices=("triton", "fa3"), default="'triton'"),
        "--mode": FlagDecl(name="--mode", dest="mode", type="str", default="'auto'"),
    }  # fmt: skip
    fields = fields_of(decls, {"mode": ["eager"]}, {"device": ("cpu", "cuda"), "mode": ("lazy",)})
    assert fields["device"]["values"] == ["cuda", "xpu", "cpu"]
    assert fields["device"]["sample"] == "cuda"
    assert fields["mode"]["values"] == ["lazy", "eager", "auto"]
    assert "values" not in fields["backend"]  # its choices are its values
