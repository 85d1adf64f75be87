"""The user's own launch through a revision's own checks, and the smallest change to *that*
launch that passes them all (`kverr check`, and the personal fix of `kverr explain`).

1. **Read it as the parser does** (`resolve`): the words the user typed, with the revision's
   option table (verify/sandbox/child.py's `options`): argparse's abbreviations (`--tp` for
   `--tp-size`) and aliases named once, a logged dictionary's dests turned into options,
   and of a logged dump of every field, only what differs from the parser's default.
2. **Run it** (`run`) through the parser and every validation phase (Target until="end"),
   with the model it names (config.json of a local path, else a table of known models, else
   the spec's default model, and the checks that read it say so).
3. **Fix it** (`fix`): the candidate changes of the check that fired (the fix search's own,
   verify/search/core.py), plus values near the user's own for each option the check reads
   (divisors and multiples of the numbers in the message, the next power of two). Each
   "after" must pass every phase, not only this check. Candidates are tried in the order a
   user wants them: never a feature the user did not ask for, a changed option they set
   before an added one, fewer options, values closer to their own.
4. **Every error, in order** (`check`): a launch with several mistakes gets a fix for the
   first, then the next error under that fix, up to MAX_ERRORS.
5. **A check no run reaches** (`with_record_fix`): a launch-path record's check runs as the
   server starts (the GPU's memory, the loaded model), so the user's launch gets the change
   the record's own example makes, checked against every argument check instead. The build
   runs the example's own two lines the same way (`example_through_argument_checks`).
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kverr.records.pattern import pattern_for
from kverr.verify.harness import Log, Outcome, Target
from kverr.verify.parsing import fix_of
from kverr.verify.search import candidates
from kverr.verify.search.changes import describe
from kverr.verify.step import Bench, expect_of
from kverr.verify.verdict import fires, steady

from kverr.argforms import abbreviated
from kverr.ftypes import POSITIONAL, FixChange, Launch, Site

MAX_TRIES = 24  # full runs spent on one error's fix
MAX_ERRORS = 5  # errors followed one after the other in one launch
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])")


# ---------------------------------------------------------------- 1. read it


@dataclass(frozen=True)
class Resolved:
    """The user's launch in the revision's own option names."""

    launch: Launch
    unknown: tuple[str, ...] = ()  # options this revision's parser does not have
    spelled: tuple[tuple[str, str], ...] = ()  # (as typed, as the parser names it)


def resolve(
    words: Sequence[str] = (),
    *,
    values: Sequence[tuple[str, Any]] = (),
    every_field: bool = False,
    env: Sequence[tuple[str, str]] = (),
    options: Mapping[str, Mapping[str, Any]],
) -> Resolved:
    """`words` as typed (a command line), or `values` by dest (a logged dictionary; with
    `every_field`, a dump of every field whose defaults are left out)."""
    names = _canonical(options)
    args: list[tuple[str, Any]] = []
    unknown: list[str] = []
    spelled: list[tuple[str, str]] = []
    if words:
        i = 0
        while i < len(words):
            word = words[i]
            i += 1
            if not word.startswith("-") or word == "-":
                if not args:  # before any option: the command's own word (`vllm serve MODEL`)
                    args.append((POSITIONAL, word))
                continue
            typed, eq, inline = word.partition("=")
            name = abbreviated(typed, {n: id(opt) for n, opt in options.items()})
            if name is None:
                owner = _json_owner(typed, options)
                if owner is None:
                    unknown.append(typed)
                    continue
                # `--speculative-config.method=medusa`: one field of a JSON option, as the
                # parser of such options reads it (a field with no value is true)
                field = f"{names[owner]}.{typed.partition('.')[2]}"
                if eq:
                    args.append((field, inline))
                elif i < len(words) and not words[i].startswith("-"):
                    args.append((field, words[i]))
                    i += 1
                else:
                    args.append((field, "true"))
                continue
            # The user's own spelling of an option stays (`--tp-size`, not its first alias);
            # an abbreviation is written out, as the parser reads it.
            opt, canonical = options[name], name
            if typed != canonical:
                spelled.append((typed, canonical))
            if opt.get("switch"):
                args.append((canonical, None))
            elif eq:
                args.append((canonical, inline))
            elif opt.get("list"):
                taken = []
                while i < len(words) and not words[i].startswith("--"):
                    taken.append(words[i])
                    i += 1
                args.append((canonical, tuple(taken)))
            elif i < len(words):
                args.append((canonical, words[i]))
                i += 1
    by_dest = {opt["dest"]: name for name, opt in options.items() if name.startswith("--")}
    for dest, value in values:
        name = by_dest.get(dest)
        if name is None:
            continue  # a field no option sets (vLLM's `model_tag` is the positional)
        opt = options[name]
        if every_field and ("default" in opt and opt["default"] == value):
            continue
        word = _word(value, opt)
        if word is not _LEFT_OUT:
            args.append((names[name], word))
    return Resolved(Launch(args=tuple(args), env=tuple(env)), tuple(unknown), tuple(spelled))


_LEFT_OUT = object()


def _json_owner(typed: str, options: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The JSON option whose field `typed` names (`--speculative-config.method` ->
    --speculative-config), or None."""
    base, dot, key = typed.partition(".")
    if not dot or not key:
        return None
    owner = abbreviated(base, {n: id(opt) for n, opt in options.items()})
    return owner if owner is not None and options[owner].get("json") else None


def _word(value: Any, opt: Mapping[str, Any]) -> Any:
    """A logged value as the command line word(s) that give it."""
    if value is None or value is False:
        return _LEFT_OUT
    if value is True:
        return None if opt.get("switch") else "true"
    if isinstance(value, (list, tuple)):
        return tuple(str(v) for v in value) if value else _LEFT_OUT
    if isinstance(value, dict):
        return json.dumps(value)
    return str(value)


def _canonical(options: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Option string -> the name a fix uses for it: its first long name (aliases of one
    action share it, so `--tp` and `--tensor-parallel-size` become one option)."""
    out = {}
    for name, opt in options.items():
        longs = [n for n in opt.get("names", [name]) if n.startswith("--")] or [name]
        out[name] = longs[0]
    return out


def close_options(typed: str, options: Iterable[str]) -> list[str]:
    """Options of this revision spelled like `typed` ("did you mean")."""
    return difflib.get_close_matches(typed, [o for o in options if o.startswith("--")], 3, 0.75)


# ---------------------------------------------------------------- 2. run it


@dataclass(frozen=True)
class Ran:
    """One run of a whole launch through the revision's parser and every phase."""

    outcome: Outcome
    site: Site | None = None  # the raise/assert statement that fired, when it is one of ours
    site_id: str = ""
    notices: tuple[Log, ...] = ()  # what the checks logged: the values they changed silently

    @property
    def passed(self) -> bool:
        return self.outcome.status == "passed"


def run(bench: Bench, launch: Launch) -> Ran:
    out = bench.runner()(launch, whole_launch(bench))
    site, rid = bench.site_at(out.file, out.line) if out.status == "raised" else (None, "")
    return Ran(out, site, rid, tuple(g for g in out.logs if _notice(g)))


# An info line that says the release changed or chose a value for the user
_CHANGED = re.compile(
    r"\b(?:reset to|is reset|set to|changed? to|adjust(?:ed|ing)? to|overrid\w*|automatically"
    r"|fall(?:ing|s)? back|instead of|to avoid)\b",
    re.I,
)


def _notice(g: Log) -> bool:
    """A log line worth a user's attention before launch: a warning or error, or an info line
    saying the release changed a value."""
    return g.level in ("warning", "error", "critical") or (
        g.level == "info" and _CHANGED.search(g.message) is not None
    )


def whole_launch(bench: Bench) -> Target:
    return Target(bench.session.spec.main_path, None, 0, until="end")


# ---------------------------------------------------------------- 3. fix it


@dataclass(frozen=True)
class YourFix:
    """The smallest change to the user's launch that passes every phase."""

    before: Launch
    after: Launch
    change: FixChange
    runs: int

    @property
    def changed(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(name for _, name, _ in self.change.edits))

    def words(self) -> str:
        return describe(self.change)


@dataclass(frozen=True)
class NoFix:
    reason: str
    runs: int = 0


def fix(
    bench: Bench, launch: Launch, ran: Ran, keep: Sequence[str] = (), fixed: Sequence[str] = ()
) -> YourFix | NoFix:
    """The first candidate change, in the order a user wants them, whose launch passes every
    phase of the revision (module doc); none that changes an option of `fixed`."""
    if ran.site is None:
        return NoFix("the error was raised outside the checks kverr reads")
    site = ran.site
    f = bench.facts[id(site)]
    expect = expect_of(site, {"messagePattern": pattern_for(site.template)})
    search = bench.searcher()
    target = Target(site.file, site.function, site.line, site.end_line)
    found = search.fixes(f, target, launch, None)
    mine = _near_values(f, launch, ran.outcome.message, bench)
    needed = _needed(f, ran.outcome.message, bench, launch)
    ordered = order(_unique([*mine, *found]), launch, bench, keep, needed, ran.outcome.message)
    ordered = [c for c in ordered if not any(n in fixed for _, n, _ in c.edits)]
    runs = search.runs
    whole = whole_launch(bench)
    for change in ordered[:MAX_TRIES]:
        after = candidates.apply(launch, change, bench.decls)
        if after == launch:
            continue
        out = bench.runner()(after, whole)
        runs += 1
        if out.status == "passed" and not fires(out, expect):
            return YourFix(launch, after, change, runs)
    return NoFix(
        f"none of {min(len(ordered), MAX_TRIES)} changes to this launch passes every check"
        if ordered
        else "no change of this launch's options undoes the check",
        runs,
    )


def _unique(changes: Iterable[FixChange]) -> list[FixChange]:
    seen, out = set(), []
    for c in changes:
        if c.edits not in seen:
            seen.add(c.edits)
            out.append(c)
    return out


def order(
    changes: Sequence[FixChange],
    launch: Launch,
    bench: Bench,
    keep: Sequence[str] = (),
    needed: Iterable[str] = (),
    message: str = "",
) -> list[FixChange]:
    """The changes a user would accept, best first:

    - none turns on a feature they did not ask for (a switch, or an option whose default is
      off) unless the check asks for that option (`needed`: the message names it, or the
      failing guard tests whether it is set), and none touches the model;
    - a change that gives up an option they set comes last, unless its value was no value
      at all (0 or less: leaving it out restores the release's own choice);
    - the hardware they have (`keep`: the profile's `hardware_options`) stays;
    - a changed option they set comes before an added one (an environment variable counts
      as added);
    - an option the message names comes first (the one whose printed value is wrong);
    - fewer options; values closer to their own."""
    options = bench.info.get("options", {})
    needed = _aliases_of(needed, options)
    hardware = _aliases_of(keep, options)

    def turns_on(op: str, name: str) -> bool:
        if op != "set" or launch.has(name) or name in needed:
            return False
        opt = options.get(name, {})
        return bool(opt.get("switch")) or opt.get("default") in (None, False, "")

    kept = [
        c
        for c in changes
        if not any(turns_on(op, n) or op in ("model", "file") for op, n, _ in c.edits)
    ]

    def key(c: FixChange) -> tuple:
        names = {n for _, n, _ in c.edits}
        dropped = sum(
            1
            for op, n, _ in c.edits
            if op == "drop" and launch.has(n) and not _no_value(launch.value(n))
        )
        added = sum(1 for op, n, _ in c.edits if not launch.has(n) and op != "drop")
        added += sum(1 for op, n, v in c.edits if op == "env" and dict(launch.env).get(n) != v)
        named = any(_named(n, message, options) for n in names)
        return (dropped, bool(names & hardware), added, not named, len(names), _distance(c, launch))

    return sorted(kept, key=key)


def _no_value(value: Any) -> bool:
    """A user's value that sets nothing: 0 or a negative number ("no limit", "auto")."""
    n = _number(value)
    return n is not None and n <= 0


def _named(option: str, message: str, options: Mapping[str, Any]) -> bool:
    """The message names the option, by one of its spellings or by its dest."""
    if not message:
        return False
    opt = options.get(option, {})
    words = {*opt.get("names", (option,)), opt.get("dest", "")}
    return any(w and re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", message) for w in words)


def _needed(f: Any, message: str, bench: Bench, launch: Launch) -> set[str]:
    """Options the check asks for: named by its message, or tested for being set by the
    guard that fires (`if self.x is None`, `if not self.x`), or a field of a JSON option the
    launch sets that the guard compares (`record_shapes` needs `profiler == "torch"`)."""
    options = bench.info.get("options", {})
    out = {n for n in options if n.startswith("--") and _named(n, message, options)}
    for r in f.readings:
        if r.role != "direct":
            continue
        for atom in r.atoms:
            if atom.flag and atom.op in ("unset", "is None", "set", "is not None"):
                out.add(atom.flag)
            elif atom.flag and "." in atom.flag:
                owner = atom.flag.partition(".")[0]
                if any(o == owner or o.startswith(owner + ".") for o, _ in launch.args):
                    out.add(atom.flag)
    return out


def _aliases_of(names: Iterable[str], options: Mapping[str, Any]) -> set[str]:
    """`names` with every other spelling of the same options (`--tp` of `--tp-size`)."""
    out = set(names)
    for name in names:
        out.update(options.get(name, {}).get("names", ()))
    return out


def _distance(change: FixChange, launch: Launch) -> float:
    """How far the change moves the user's numbers (log scale): 8 -> 4 is nearer than 8 -> 1;
    leaving out a value that set nothing (0, -1) is a small move."""
    total = 0.0
    for op, name, value in change.edits:
        old = launch.value(name)
        a, b = _number(old), _number(value)
        if op == "drop" and _no_value(old):
            total += 0.3
        elif op == "set" and a is not None and b is not None:
            if a <= 0 or b <= 0:
                total += 1.0 + abs(b - a) / (abs(a) + abs(b) + 1)
            else:
                total += abs(math.log(b / a))
        elif op == "set" and old is not None:
            total += 1.0
    return total


def _number(value: Any) -> float | None:
    try:
        return float(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _near_values(f: Any, launch: Launch, message: str, bench: Bench) -> list[FixChange]:
    """For each numeric option the user set that the check reads: values near theirs that
    the numbers in the message suggest (its divisors and multiples), the powers of two
    around it, and for a fraction given as a percentage (85 for 0.85), that fraction."""
    options = bench.info.get("options", {})
    read = _aliases_of(_flags_read(f), options)
    numbers = [float(n) for n in _NUMBER.findall(message)]
    out = []
    for name, value in launch.args:
        v = _number(value)
        if name not in read or v is None or v <= 0:
            continue
        default = options.get(name, {}).get("default")
        if isinstance(default, float) and 0 < default <= 1 and v > 1:
            out.append(FixChange((("set", name, f"{v / 100:g}"),), "yours"))
        if v != int(v):
            continue
        v = int(v)
        near = {2 ** round(math.log2(v)) // 2, 2 ** round(math.log2(v)) * 2, v - 1, v + 1}
        for n in numbers:
            if n == int(n) and n > 0:
                n = int(n)
                near.update(d for d in _divisors(n) if d != v)
                near.update(m for m in (n * (v // n), n * (v // n + 1)) if m > 0)
        for c in sorted(near, key=lambda c: (abs(math.log(c / v)) if c > 0 else 99, c)):
            if c > 0 and c != v:
                out.append(FixChange((("set", name, str(c)),), "yours"))
    return out


def _divisors(n: int) -> list[int]:
    if n > 1 << 20:
        return []
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted({*small, *(n // d for d in small)})


def _flags_read(f: Any) -> set[str]:
    """The options the site reads: its guards' atoms and the flags of its message."""
    found = set(f.site.flags)
    for r in f.readings:
        for atom in r.atoms:
            found.update(filter(None, (atom.flag, *atom.flags)))
    return found


# What argparse says when it refuses a value: the option, the value, what it would take.
_CHOICE = re.compile(
    r"argument (?P<opt>--[\w-]{1,80})[^:]{0,200}: invalid choice: '(?P<value>[^'\n]{0,200})'"
    r" \(choose from (?P<choices>[^)\n]{0,4000})\)"
)
_TYPE = re.compile(
    r"argument (?P<opt>--[\w-]{1,80})[^:]{0,200}: invalid (?P<type>\w{1,40}) value:"
    r" '(?P<value>[^'\n]{0,200})'"
)


def parser_fix(bench: Bench, launch: Launch, said: str) -> YourFix | NoFix:
    """The fix of a value the release's parser refused: the choice nearest to what the user
    typed, or the number they meant in the type the option takes; the first that the parser
    takes (a later check, if any, is the next error of `check`)."""
    changes: list[FixChange] = []
    if m := _CHOICE.search(said):
        choices = re.findall(r"'([^'\n]{0,200})'", m["choices"])
        near = difflib.get_close_matches(m["value"], choices, n=4, cutoff=0.0)
        changes = [FixChange((("set", m["opt"], c),), "parser") for c in near]
    elif (m := _TYPE.search(said)) and m["type"] == "int" and _number(m["value"]) is not None:
        value = round(float(m["value"]))
        changes = [FixChange((("set", m["opt"], str(value)),), "parser")]
    runs = 0
    for change in changes:
        name = change.edits[0][1]
        typed = next((o for o, _ in launch.args if _same(o, name, bench)), name)
        change = FixChange(tuple((op, typed, v) for op, _, v in change.edits), change.source)
        after = candidates.apply(launch, change, bench.decls)
        runs += 1
        if run(bench, after).outcome.status != "parse-error":  # past the parser: the next
            return YourFix(launch, after, change, runs)  # error, if any, is the next step's
    return NoFix(f"the parser refused the launch ({said}); no value it lists passes", runs)


def _same(a: str, b: str, bench: Bench) -> bool:
    """Two spellings of one option of this release."""
    opt = bench.info.get("options", {}).get(a, {})
    return a == b or b in opt.get("names", ())


# ---------------------------------------------------------------- 4. every error


@dataclass(frozen=True)
class Step:
    """One error of the launch, and the fix that gets past it."""

    ran: Ran
    fix: YourFix | NoFix | None = None


@dataclass(frozen=True)
class Checked:
    launch: Launch
    steps: tuple[Step, ...] = ()
    final: Launch | None = None  # the launch with every fix applied, when they all passed
    notices: tuple[Log, ...] = field(default=())

    @property
    def passed(self) -> bool:
        return bool(self.steps) and self.steps[-1].ran.passed

    @property
    def errors(self) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if not s.ran.passed)


def check(
    bench: Bench, launch: Launch, keep: Sequence[str] = (), fixed: Sequence[str] = ()
) -> Checked:
    """Every error the launch runs into, each with the fix that gets past it (module doc);
    no fix changes an option of `fixed`."""
    steps: list[Step] = []
    current = launch
    for _ in range(MAX_ERRORS):
        ran = run(bench, current)
        if ran.passed or ran.outcome.status not in ("raised", "parse-error"):
            steps.append(Step(ran))
            break
        if ran.outcome.status == "parse-error":
            got = parser_fix(bench, current, ran.outcome.reason)
        else:
            got = fix(bench, current, ran, keep, fixed)
        steps.append(Step(ran, got))
        if not isinstance(got, YourFix):
            break
        current = got.after
    last = steps[-1].ran
    final = current if last.passed and current != launch else None
    return Checked(launch, tuple(steps), final, last.notices if last.passed else ())


# ---------------------------------------------------------------- 5. a check no run reaches


def with_record_fix(bench: Bench, launch: Launch, example_fix: str) -> Launch | None:
    """`launch` changed as the record's example fix changes its own launch (the options it
    drops, adds or sets anew), when `launch` is the one the example starts from (it sets each
    option of the example's before, and each option the fix changes to the before's value) and
    the change passes every argument check of the revision; else None. Both lines of the
    example are read as the parser reads the user's launch (`resolve`), in the same names."""
    example = _example(bench, example_fix)
    if example is None:
        return None
    before, after = example
    if any(not launch.has(o) for o, _ in before.args):
        return None  # another launch than the example's: its fix is not this one's
    edits = [("drop", o, None) for o, _ in before.args if not after.has(o)]
    for o, v in after.args:
        if before.value(o, _NONE) != v:
            if before.has(o) and launch.value(o) != before.value(o):
                return None  # the fix moves a value this launch does not have
            edits.append(("set", o, v))
    fixed = candidates.apply(launch, FixChange(tuple(edits), "record"), bench.decls)
    return fixed if fixed != launch and run(bench, fixed).passed else None


_NONE = object()


def _example(bench: Bench, example_fix: str) -> tuple[Launch, Launch] | None:
    """The record's example (`# before`/`# after`) as two launches in the revision's own
    option names (`resolve`); None when it is no example of this revision's command, or sets
    an option this revision does not have."""
    fix = fix_of(example_fix, Launch().command(*bench.command()))
    if fix is None:
        return None
    options = bench.info["options"]
    before, after = (resolve(words, options=options) for words in (fix.before, fix.after))
    if before.unknown or after.unknown:
        return None
    return before.launch, after.launch


@dataclass(frozen=True)
class ArgumentChecked:
    """A launch-path record's example, both lines run through every argument check of the
    revision (the check itself runs as the server starts, where no run before a launch goes):
    the example as it stands or with what those checks require added, or why neither."""

    example_fix: str | None  # None: the example fails them and no change gets it through
    said: str


def example_through_argument_checks(bench: Bench, example_fix: str) -> ArgumentChecked | None:
    """The record's example (`# before`/`# after`) checked as `kverr check` checks a user's
    launch; None when it is no example of this revision's command and options."""
    example = _example(bench, example_fix)
    if example is None:
        return None
    before, after = example
    # the options the example is about stay: a repair adds what the checks require
    mine = [o for o, _ in after.args if before.value(o, _NONE) != after.value(o)]
    mine += [o for o, _ in before.args if not after.has(o)]
    lines = []
    for side, launch in (("before", before), ("after", after)):
        got = check(bench, launch, fixed=tuple(mine))
        if got.passed:
            lines.append(got.final or launch)
            continue
        stopped = got.errors[0].ran if got.errors else got.steps[-1].ran
        first = stopped.outcome
        if first.status != "parse-error" and (first.status != "raised" or stopped.site is None):
            # a run that could not decide, or an error no check of ours raised (a stand-in's
            # TypeError), says nothing of the example
            return None
        said = steady(first.message or first.reason or first.status)
        return ArgumentChecked(
            None, f"its example's {side} line stops at another of this release's argument "
            f"checks first ({said[:160]}), and no change of it gets through them all"
        )  # fmt: skip
    if lines[0] == lines[1]:
        return ArgumentChecked(
            None, "what this release's argument checks require of its example undoes its fix"
        )
    if (lines[0], lines[1]) == (before, after):
        return ArgumentChecked(
            example_fix, "both lines of its example pass this release's argument checks"
        )
    shown = f"# before\n{lines[0].command(*bench.command())}\n# after\n{lines[1].command(*bench.command())}"
    return ArgumentChecked(
        shown, "its example carries what this release's argument checks require of both lines"
    )
