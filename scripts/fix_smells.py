"""Suspicious verified fixes in a built dataset: what a maintainer would frown at even though
the check passed the after line.

    python scripts/fix_smells.py DATASET_DIR [--git MIRROR] [--list] [--json]

Each verified `exampleFix` is read as two option lists (before, after) and checked for:

  foreign value      a free-text option set to a word that is none of its known values (its
                     help's examples, what the code compares it with, its default, the
                     words of the check's function no other option is compared with) but a
                     choice of a different option (`--device flashinfer`) or a model
                     architecture name
  unknown value      a free-text option with two known values or more set to none of them,
                     nor to a word of the same shape (`--device main`; `mlx5_9` beside
                     mlx5_0 is a device that is not there, on purpose); paths, numbers and
                     JSON are not judged
  placeholder value  a value that reads as a stand-in: the option's dest in capitals
                     (`DEVICE`), the search's filler words (`x`, `xfoox`), `<value>`, or a
                     missing path (`/no/such/...`) left in the after line
  unread option      an option in both lines with the same value that the check does not
                     read: not the record's function up to the site, the methods it calls
                     there, the conditions taken on the way to its call and the arguments
                     it is called with, the record's own flags, nor an option a
                     raise/assert of the args class relates to one of those
                     (`tp_size % dp_size` explains `--tp-size 2` beside `--dp-size 2`)
  default value      an option in both lines set to its declared default (`--pp-size 1`)
  duplicated option  one option (or two aliases of it) twice in one line
  long before        a before line with more than LONG options besides --model-path

With --git, the record's function is read from its revision in the mirror (the record's
`verification.revision`); without it, from the record's own sourceCode window.
Run it on a dataset before and after a change to verify/ or records/knowledge/ and compare.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kverr.extractor.pysource import module_or_none

from kverr import io

LONG = 6
SMELLS = (
    "foreign value",
    "unknown value",
    "placeholder value",
    "unread option",
    "default value",
    "duplicated option",
    "long before",
)
_QUOTED = re.compile(r"""['"`]([\w.:/@+-]{1,32})['"`]""")
_ARCH = re.compile(r"(For(CausalLM|ConditionalGeneration)|Model)$")
_FILLER = re.compile(r"x|x.+x|<[^>]*>|VALUE")
_SELF = re.compile(r"\bself\.(\w+)")
_CALLED = re.compile(r"\bself\.(\w+)\(")


@dataclass(frozen=True)
class Flag:
    name: str
    dest: str  # the attribute the option sets (what the code reads)
    key: str  # what aliases share (argparse's dest when it differs)
    choices: tuple[str, ...]
    default: str | None
    examples: tuple[str, ...]  # its help text's examples (records.knowledge.facts)
    text: bool  # a free-text option: no choices, not a number, a path or JSON


def load_flags(dataset: Path) -> dict[str, Flag]:
    from kverr.records.knowledge.facts import help_examples

    out = {}
    for _, d in io.iter_objects(dataset / "flags.jsonl"):
        kind = (d.get("type") or "").lower()
        name = d["name"]
        out[name] = Flag(
            name,
            d["dest"],
            d.get("arg_dest") or d["dest"],
            tuple(d.get("choices") or ()),
            _plain(d.get("default")),
            help_examples(d.get("help")),
            not d.get("choices")
            and not any(k in kind for k in ("int", "float", "json", "loads", "bool"))
            and not _PATHLIKE.search(name),
        )
    return out


_PATHLIKE = re.compile(r"(path|file|dir|url|urls|certs?|addr|host|ip|config|template)$")


def options(command: str, everything: bool = False) -> list[tuple[str, tuple[str, ...]]]:
    """`--x a b --y` -> [("--x", ("a", "b")), ("--y", ())]; the launch prefix and
    environment assignments are skipped, and --model-path unless `everything`."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    out: list[tuple[str, list[str]]] = []
    for w in words:
        if w.startswith("--"):
            name, eq, value = w.partition("=")
            out.append((name, [value] if eq else []))
        elif out:
            out[-1][1].append(w)
    return [(n, tuple(v)) for n, v in out if everything or n != "--model-path"]


def fix_lines(fix: str) -> tuple[str, str] | None:
    lines = (fix or "").splitlines()
    if len(lines) != 4 or lines[0] != "# before" or lines[2] != "# after":
        return None
    return lines[1], lines[3]


# ---------------------------------------------------------------- what the check reads


class Sources:
    """The record's file at its revision, from a mirror, and what the smells read off it
    (each text analysed once)."""

    def __init__(self, mirror: str | None, args_class: str) -> None:
        self.mirror, self.args_class = mirror, args_class
        self._texts: dict[tuple[str, str], str | None] = {}
        self._facts: dict[str, Facts] = {}

    def text(self, rev: str, path: str) -> str | None:
        if not self.mirror or not rev:
            return None
        if (rev, path) not in self._texts:
            done = subprocess.run(
                ["git", "-C", self.mirror, "show", f"{rev}:{path}"],
                capture_output=True,
                text=True,
                check=False,
            )
            self._texts[(rev, path)] = done.stdout if done.returncode == 0 else None
        return self._texts[(rev, path)]

    def facts(self, text: str) -> Facts:
        key = str(hash(text))
        if key not in self._facts:
            self._facts[key] = Facts.of(text, self.args_class)
        return self._facts[key]


@dataclass
class Facts:
    """What one source text says, for the smells."""

    tree: ast.Module | None
    reads: dict[str, frozenset[str]]  # method -> attributes it reads (reading.method_reads)
    compared: dict[str, tuple[str, ...]]  # attribute -> strings compared with (values.py)
    checks: list[set[str]]  # attributes each raise/assert of the args class reads

    @staticmethod
    def of(text: str, args_class: str) -> Facts:
        from kverr.verify.search import reading, values

        tree = module_or_none(text)
        if tree is None:
            return Facts(None, {}, {}, [])
        return Facts(
            tree,
            reading.method_reads(text, args_class),
            values.compared_values(text, args_class),
            _checks(tree, args_class),
        )


def _checks(tree: ast.Module, args_class: str) -> list[set[str]]:
    """For each raise/assert of the args class whose test relates options to each other
    (`self.tp_size % self.dp_size == 0`, `self.a <= self.b`): the attributes it reads. An
    option such a check reads beside one this check reads is its requirement."""
    out: list[set[str]] = []

    def note(test: ast.expr) -> None:
        related = [
            n
            for n in ast.walk(test)
            if isinstance(n, (ast.BinOp, ast.Compare)) and len(_attrs_of([n])) >= 2
        ]
        if related:
            out.append(_attrs_of(related))

    def walk(body: list[ast.stmt], tests: tuple[ast.expr, ...]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.Assert):
                note(stmt.test)
            elif isinstance(stmt, ast.Raise) and tests:
                note(tests[-1])
            for field, more in (("body", True), ("orelse", False)):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    extra = (stmt.test,) if isinstance(stmt, ast.If) else ()
                    walk(inner, tests + extra if more or extra else tests)
            for handler in getattr(stmt, "handlers", ()):
                walk(handler.body, tests)

    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == args_class:
            walk(node.body, ())
    return [s for s in out if s]


def _attrs_of(nodes: Iterable[ast.AST]) -> set[str]:
    return {
        n.attr
        for node in nodes
        for n in ast.walk(node)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
    }


def _function_node(tree: ast.Module, qualname: str) -> ast.AST | None:
    def find(body: Iterable[ast.stmt], rest: list[str]) -> ast.AST | None:
        for node in body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.name == rest[0]:
                    return node if len(rest) == 1 else find(node.body, rest[1:])
        return None

    return find(tree.body, qualname.split("."))


@dataclass
class Read:
    """What the record's check reads (see the module doc) and the words of its function."""

    attrs: set[str]
    facts: Facts | None = None
    words: tuple[str, ...] = ()  # the function's short strings (reading.words_of)
    owners: dict[str, list[str]] | None = None  # word -> attributes compared with it


def read_attrs(rec: dict, function: str | None, sources: Sources) -> Read:
    """The attributes the record's check reads on the way to its site (see the module doc),
    and the facts of its file when the mirror has it."""
    from kverr.verify.search import reading, values

    rev = (rec.get("verification") or {}).get("revision") or ""
    text = sources.text(rev, rec["filePath"]) if function else None
    facts = sources.facts(text) if text else None
    node = _function_node(facts.tree, function) if facts and facts.tree and function else None
    if node is None or text is None or facts is None:
        return Read(set(_SELF.findall(rec.get("sourceCode") or "")), facts)
    end = rec.get("sourceCodeEnd") or node.end_lineno
    body = "\n".join(text.splitlines()[node.lineno - 1 : end])
    attrs = set(_SELF.findall(body))
    tests = [body]
    for _, ifs, passed in reading.call_sites(text, function):
        tests += [test for _, test, holds in ifs if holds]
        tests += list(passed.values())  # what the caller passes (`self._check(self.ib)`)
        attrs |= {a for t in tests[1:] for a in _SELF.findall(t)}
    for t in tests:
        for m in _CALLED.findall(t):
            attrs |= facts.reads.get(m, frozenset())
    # One step through the args class's checks that relate options: an option another check
    # relates to one this check reads (the earlier check it had to pass).
    attrs |= {a for check in facts.checks if check & attrs for a in check}
    words = reading.words_of(text, function)
    return Read(attrs, facts, words, values.owners(text, function))


# ---------------------------------------------------------------- the smells


def smells_of(
    rec: dict,
    flags: dict[str, Flag],
    read: Read | None,
    foreign: dict[str, set[str]],
) -> dict[str, list[str]]:
    """smell -> what in the record's fix shows it ("--device flashinfer")."""
    found: dict[str, list[str]] = {}
    pair = fix_lines(rec.get("exampleFix") or "")
    if pair is None:
        return found
    before, after = options(pair[0]), options(pair[1])
    compared = read.facts.compared if read and read.facts else {}
    reads = read.attrs if read else None
    owners = (read.owners or {}) if read else {}

    def mine(dest: str) -> set[str]:
        """The function's words not compared with another option (`rule == "tse"`)."""
        return {w for w in (read.words if read else ()) if dest in owners.get(w, [dest])}

    def add(smell: str, what: str) -> None:
        if what not in found.get(smell, []):
            found.setdefault(smell, []).append(what)

    for line, opts in (("before", before), ("after", after)):
        whole = options(pair[0] if line == "before" else pair[1], everything=True)
        dests = Counter(flags[n].key if n in flags else n for n, _ in whole)
        for dest, n in dests.items():
            if n > 1:
                add("duplicated option", f"{line}: {dest} x{n}")
        for name, values in opts:
            f = flags.get(name)
            if f is None:
                continue
            documented = {*f.examples, *compared.get(f.dest, ()), f.default or ""} - {""}
            known = documented | mine(f.dest)
            # A list written as one word ("mlx5_0,mlx5_1"): its items, and their shapes
            # (mlx5_9 names a device that is not there, on purpose).
            items = {i for k in documented for i in k.split(",") if i}
            shapes = {_DIGITS.sub("#", i) for i in items}
            for v in values:
                shown = f"{name} {v}"
                if f.text and v and v not in known and not _NUMBER.fullmatch(v):
                    if foreign.get(v, set()) - {f.dest} or _ARCH.search(v):
                        add("foreign value", shown)
                    elif (
                        len(items) >= 2
                        and not _FILLER.fullmatch(v)
                        and v != f.dest.upper()
                        and not v.startswith(("/", ".", "{", "["))
                        and not all(_DIGITS.sub("#", i) in shapes for i in v.split(",") if i)
                    ):
                        add("unknown value", shown)
                if v not in f.choices and (
                    _FILLER.fullmatch(v)
                    or v == f.dest.upper()
                    or (line == "after" and v.startswith("/no/such"))
                ):
                    add("placeholder value", shown)
    if len(before) > LONG:
        add("long before", f"{len(before)} options")
    kept = set(before) & set(after)
    own = set(rec.get("flags") or ())
    for name, values in sorted(kept):
        f = flags.get(name)
        if f is None:
            continue
        shown = " ".join((name, *values))
        if f.default is not None and values == (f.default,):
            add("default value", shown)
        if reads is not None and name not in own and f.dest not in reads:
            add("unread option", shown)
    return found


_NUMBER = re.compile(r"-?\d+(\.\d+)?")
_DIGITS = re.compile(r"\d+")


def _plain(default: str | None) -> str | None:
    try:
        value = ast.literal_eval(default) if default else None
    except (ValueError, SyntaxError):
        return None
    if isinstance(value, bool):
        return None  # a switch: given alone, never with its default as a word
    return str(value) if value is not None else None


def functions_of(dataset: Path) -> dict[str, str | None]:
    """record id -> its function in the newest span."""
    out: dict[str, tuple[int, str | None]] = {}
    for _, o in io.iter_objects(dataset / "occurrences.jsonl", optional=True):
        to = o.get("to", 0)
        if o["id"] not in out or to >= out[o["id"]][0]:
            out[o["id"]] = (to, o.get("function"))
    return {k: v for k, (_, v) in out.items()}


def audit(dataset: Path, mirror: str | None = None) -> dict:
    from kverr.verify.spec import spec_for

    records = [obj["record"] for _, obj in io.iter_objects(dataset / "records.jsonl")]
    flags = load_flags(dataset)
    foreign: dict[str, set[str]] = {}
    for f in flags.values():
        for c in f.choices:
            foreign.setdefault(c, set()).add(f.dest)
    functions = functions_of(dataset)
    sources = Sources(mirror, spec_for().args_class)
    verified = [
        r
        for r in records
        if (r.get("verification") or {}).get("status") == "verified" and r.get("exampleFix")
    ]
    per: dict[str, dict[str, list[str]]] = {}
    for rec in verified:
        found = smells_of(rec, flags, read_attrs(rec, functions.get(rec["id"]), sources), foreign)
        if found:
            per[rec["id"]] = found
    counts = {s: sum(s in f for f in per.values()) for s in SMELLS}
    return {"verified": len(verified), "smelly": len(per), "counts": counts, "records": per}


def main(argv: list[str]) -> int:
    args = list(argv)
    mirror = None
    if "--git" in args:
        i = args.index("--git")
        if i + 1 >= len(args):
            print("--git needs the path of a mirror (a bare clone is fine)", file=sys.stderr)
            return 2
        mirror = args[i + 1]
        del args[i : i + 2]
    paths = [a for a in args if not a.startswith("--")]
    if len(paths) != 1 or not (Path(paths[0]) / "records.jsonl").is_file():
        print(
            "usage: fix_smells.py DATASET_DIR [--git MIRROR] [--list] [--json]"
            " (DATASET_DIR holds records.jsonl and flags.jsonl from `kverr build`)",
            file=sys.stderr,
        )
        return 2
    result = audit(Path(paths[0]), mirror)
    if "--json" in args:
        print(json.dumps(result, indent=2, sort_keys=True))
        return 0
    print(f"verified fixes: {result['verified']}; with a smell: {result['smelly']}")
    for smell, n in result["counts"].items():
        print(f"  {smell:<18} {n:4d}")
    if "--list" in args:
        for rid, found in sorted(result["records"].items()):
            shown = "; ".join(f"{s}: {', '.join(w)}" for s, w in found.items())
            print(f"{rid}  {shown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
