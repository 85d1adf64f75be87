"""Search for the fix of one record, with the revision's own check as the judge.

1. **Reach the check.** Start from the launch the record's conditions describe (each fact on
   the path made to hold by verify/search/candidates.py.make_hold) and run it. If an earlier
   check fires first, carry its requirement into the launch (that check's own candidate
   changes) and run again; if the check did not fire, the run's watch says which guard on the
   path came out wrong, with values that make it right (solve.py); parse errors name the
   argument to change.
2. **Fix it.** Try the candidate changes in order (the message's advice, values the check
   accepts, solved values, environment variables, removing the feature flag last); the first
   one whose "after" passes the same steps is the verified fix: being tried in that order, it
   is also the smallest that verifies.

Every run goes through `runner`, so a cache can answer repeats (a rebuild starts no child).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from kverr.records.conditions import Atom, Reading, atoms_of, dest_of, show_value
from kverr.records.knowledge.facts import Facts, flag_default, holds_for
from kverr.records.knowledge.fixes import fix_words, give_up_words, sample_value
from kverr.verify.harness import Outcome, Target
from kverr.verify.search import candidates, notice, reading, typed, values
from kverr.verify.search.changes import (
    breaks,
    describe,
    is_metavar,
    rank,
    solved_edit,
    undoes,
)
from kverr.verify.search.fields import fields_of
from kverr.verify.search.told import chosen, told
from kverr.verify.search.where import (
    MISSING_FACT,
    about_model,
    choices_accepted,
    contradiction,
    model_label,
    reads_model,
    typed_away,
    words_pattern,
)
from kverr.verify.verdict import NO_LAUNCH, Expect, Verdict, fires, passes, verified, what_happened

from kverr.ftypes import FixChange, FlagDecl, Guard, Launch

Runner = Callable[[Launch, Target, Sequence[Mapping[str, Any]]], Outcome]
Neighbour = Callable[[str, int], Facts | None]  # (file, line) -> the facts of the site there

MAX_REACH = 8  # runs spent getting the before to fire
MAX_BRANCHES = 2  # other repairs of an earlier check kept to come back to
MAX_CHOICES = 6  # declared choices of an option run one by one for its record's words
MAX_AFTERS = 16  # candidate fixes tried
MAX_AFTER_REPAIRS = 3  # further checks a fix may have to satisfy
# A fix that passes only once later checks are satisfied too is kept while this many more
# candidates are tried for one that passes as it is (`--page-size 256` over `--page-size 1`
# and the `--mamba-track-interval 3` it then needs)
PLAIN_TRIES = 3
MAX_RUNS = 60  # runs of the check per record, whatever the search still has to try


_PREDICATE = re.compile(r"(--[\w-]+)\.(\w+)\(\)")


def class_dest(cls: str, json_classes: Mapping[str, str]) -> str:
    """The option whose keys a config class's fields are: the parser says so for a class it
    builds (`MambaConfig` -> mamba_config); a dict option is named after its class."""
    return json_classes.get(cls) or re.sub(r"(?<!^)(?=[A-Z])", "_", cls).lower()


class _OutOfRuns(Exception):  # noqa: N818 - control flow inside the search
    """The record's run budget is spent."""


_WATCHED = ("if", "elif", "else", "early-exit", "while", "assert", "passed", "try")
# Search._steps' other readings of a function: (source text, function, *rest) -> the reading
_READS: dict[str, Callable[..., Any]] = {
    "sites": reading.call_sites,
    "words": reading.words_of,
    "owners": values.owners,
    "try": reading.try_test,
    "text": reading.function_text,
    "aliases": reading.validated,
}


class Search:
    def __init__(
        self,
        runners: Runner | Mapping[str, Runner],
        decls: Mapping[str, FlagDecl],
        neighbour: Neighbour = lambda file, line: None,
        source: Callable[[str], str] = lambda file: "",
        args_class: str = "",
        models: Sequence[str] | Mapping[str, Mapping[str, Any]] = (),
        differs: Mapping[str, Sequence[str]] | None = None,
        ways_in: Callable[[str, str | None], list[tuple[str, int, str, bool]]] | None = None,
        main: str = "",
        json_classes: Mapping[str, str] | None = None,
        command: tuple[str, tuple[str, ...]] = ("", ()),
        predicates: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        # Platform profile -> runner, the default first; a bare runner is one unnamed platform.
        self.runners = dict(runners) if isinstance(runners, Mapping) else {"": runners}
        self.default_platform = next(iter(self.runners))
        self._run, self.platform = self.runners[self.default_platform], self.default_platform
        self.decls = dict(decls)
        self.fields = fields_of(self.decls)
        self.neighbour, self.source, self.args_class = neighbour, source, args_class
        self.models = list(models)  # model profiles after the default, tried in this order
        # Each profile's hf_config (and "config.x": its model config): a check that reads an
        # attribute the default model lacks is tried on a model that declares it.
        self.profiles: dict[str, Mapping[str, Any]] = {
            name: models[name] if isinstance(models, Mapping) else {} for name in self.models
        }
        # Platform -> what it answers differently from the default one (probe names, paths,
        # packages): another profile is tried only for a check whose code reads one of them.
        self.differs = {
            name: words_pattern(words) for name, words in (differs or {}).items() if words
        }
        self._memo: dict[tuple[str, ...], Any] = {}
        self.runs = 0  # runs of the check the current search spent (find() starts it anew)
        self._site = 0  # which call site of the record's function the search goes through
        self.attrs = {d.dest: name for name, d in self.decls.items()}
        # (file, function) -> tests of the validation steps that decide whether a step
        # reaching the function builds anything (`XConfig(...) if self.enable_x else None`)
        self.ways_in = ways_in or (lambda file, function: [])
        self.main = main  # the args class's file: what it builds its configs from
        # a config class -> the JSON option the parser builds it from (`MambaConfig` ->
        # mamba_config): a check of that class reads the option's fields
        self.json_classes = dict(json_classes or {})
        self.command = command  # the launch command and its base options: a fix's two lines
        # a JSON option -> its class's methods that only return a test of its fields
        # (`--speculative-config` -> use_eagle -> `self.method in (...)`), reading.predicates
        self.predicates = dict(predicates or {})

    def _copied(self, function: str | None) -> dict[str, str]:
        """`self.field` (in the record's own class) and `Class.field` (any config the guard
        reads off another object) -> the option a config's field is built from under another
        name (reading.copied)."""
        found = reading.copied(self.source(self.main), self.args_class) if self.main else {}
        owner = (function or "").partition(".")[0]
        out = {f"{cls}.{k}": v for cls, fields in found.items() for k, v in fields.items()
               if v in self.fields}  # fmt: skip
        out.update({f"self.{key}": k for key, k in self._keys(self.json_classes.get(owner))})
        out.update({f"self.{k}": v for k, v in found.get(owner, {}).items() if v in self.fields})
        return out

    def unfolded(self, atoms: Sequence[Atom]) -> list[Atom]:
        """Atoms with a call of a JSON option's predicate (`--speculative-config.use_eagle()`)
        read as the test it returns, over that option's keys (`--speculative-config.method in
        ('eagle', ...)`): facts a launch can make hold."""
        out: list[Atom] = []
        for atom in atoms:
            m = _PREDICATE.fullmatch(atom.text) if atom.op == "expr" else None
            test = m and self.predicates.get(m[1], {}).get(m[2])
            decl = self.decls.get(m[1]) if m else None
            if not test or decl is None:
                out.append(atom)
                continue
            attrs = {key: self.fields[k]["flag"] for key, k in self._keys(decl.dest)}
            out.extend(atoms_of(test, atom.holds, attrs))
        return out

    def _keys(self, dest: str | None) -> list[tuple[str, str]]:
        """A JSON option's fields by key (`method`, `speculative_config.method`); none for
        no option."""
        prefix = f"{dest}."
        return [(k[len(prefix) :], k) for k in self.fields if dest and k.startswith(prefix)]

    def _steps(self, what: str, file: str, function: str | None, *rest: Any) -> Any:
        """reading.<what> over the file's source, memoised per function."""
        key = (what, file, function or "", str(self._site), *map(str, rest))
        if key not in self._memo:
            text = self.source(file)
            if what == "params":
                sites = reading.call_sites(text, function)
                if sites:
                    self._memo[key] = sites[min(int(rest[0]), len(sites) - 1)][2]
                else:
                    self._memo[key] = reading.parameters(text, function)
            elif what == "inline":
                params = self._steps("params", file, function, self._site)
                self._memo[key] = reading.inline_locals(
                    text, function, *rest, tuple(sorted(params.items()))
                )
            else:
                self._memo[key] = _READS[what](text, function, *rest)
        return self._memo[key]

    def _reads_any(self, f: Facts, platform: str) -> bool:
        """The record's function, or the guards on the way to it, read something `platform`
        answers differently (always, when the search was given no such list)."""
        pattern = self.differs.get(platform)
        if pattern is None:
            return not self.differs
        site = f.site
        text = self._steps("text", site.file, site.function)
        guards = " ".join(r.guard.test for r in (*f.readings, *self.callers(f)[1]))
        return bool(pattern.search(text) or pattern.search(guards))

    def callers(self, f: Facts) -> tuple[str | None, list[Reading]]:
        """The caller of the record's function (at the call site being tried) and the guards
        on the way to that call, read as atoms like the site's own (conditions.atoms_of)."""
        sites = self._steps("sites", f.site.file, f.site.function)
        if not sites:
            return None, []
        caller, guards, _ = sites[min(self._site, len(sites) - 1)]
        attrs = dict(self.attrs)
        owner = (f.site.function or "").partition(".")[0]
        dest = class_dest(owner, self.json_classes)
        if owner:  # a config class built from a JSON option: its fields are that option's keys
            attrs.update({key: self.fields[k]["flag"] for key, k in self._keys(dest)})
        out = []
        for line, test, holds in guards:
            g = Guard(test=test, holds=holds, kind="if", line=line)
            out.append(Reading(g, atoms_of(test, holds, attrs), "enclosing"))
        return caller, out

    def run(
        self, launch: Launch, target: Target, watch: Sequence[Mapping[str, Any]] = ()
    ) -> Outcome:
        if self.runs >= MAX_RUNS:
            raise _OutOfRuns()
        self.runs += 1
        return self._run(launch, target, watch)

    # ------------------------------------------------------------ the whole search

    def find(self, f: Facts, expect: Expect) -> Verdict:
        """Reach the check, then fix it, within MAX_RUNS runs of the check (the same for every
        build, so the result is too)."""
        self.runs = 0
        self._site = 0
        self._launches: dict[int, Launch] = {}  # id(outcome) -> the launch it ran
        try:
            return self._find(f, expect)
        except _OutOfRuns:
            return Verdict(
                "unverified",
                f"no verified fix within {MAX_RUNS} runs of the check",
                platform=self.platform,
                runs=self.runs,
            )

    def _find(self, f: Facts, expect: Expect) -> Verdict:
        """On another platform profile when the first one cannot reach the check (a check
        about ROCm is reached on a ROCm profile)."""
        site = f.site
        target = Target(site.file, site.function, site.line, site.end_line)
        first: Verdict | None = None
        for platform, run in self.runners.items():
            if platform != self.default_platform and not self._reads_any(f, platform):
                continue  # the code never reads what this profile answers differently
            self._run, self.platform = run, platform
            before, out = self.reach(f, expect, target)
            if before is not None:
                return self._fix(f, expect, target, before, out)
            found = self._unreachable(f, out) or self._dead(f) or self._not_reached(out)
            first = first or found
            if found.status == "not-applicable":
                break
            # every other profile whose answers this code reads is tried (_reads_any above):
            # a check can read the machine off the guards (`self.device_type = ...device_type`)
        assert first is not None
        return replace(first, runs=self.runs, platform=self.default_platform)

    def _fix(
        self, f: Facts, expect: Expect, target: Target, before: Launch, fired: Outcome | None = None
    ) -> Verdict:
        tried: list[tuple[FixChange, Outcome]] = []
        said = told(fired, before, expect.pattern) if fired is not None else []
        if fired is not None and expect.logs:
            said += chosen(fired, expect, self.decls)
        changes = [*said, *self.fixes(f, target, before, fired)]
        if expect.logs:
            # A notice is expected behaviour: its fix chooses explicitly or completes what the
            # launch left out, it never gives the feature up (verify/search/notice.py).
            changes = notice.ordered(
                [
                    c
                    for c in changes
                    if c.source not in ("remove", "feature")
                    and not undoes(c, before)
                    and not notice.gives_up(c, f, before, self.decls)
                    # nor serves another model (`--model-path`): a notice about the model
                    # describes what serving it takes
                    and not any(n in self.command[1] for _, n, _ in c.edits)
                ],
                before,
            )
        held: Verdict | None = None  # the first fix that passed only with repairs
        plain_left = PLAIN_TRIES
        for change in changes:
            if all(op == "model" for op, _, _ in change.edits):
                continue  # the model is what MODEL_PATH names, not a change of the command line
            if held is not None:
                plain_left -= 1
                if plain_left < 0:
                    break
                if change.source in ("remove", "feature") or undoes(change, before):
                    continue  # (giving the feature up is no better than what it needs)
            change = typed.change(change, self.decls)
            own = {name for _, name, _ in change.edits}
            after = self._apply(before, change)
            result = self.run(after, target)
            repairs = 0
            back: tuple[FixChange, Launch, Outcome] | None = None
            taken: set[Launch] = set()
            for _ in range(MAX_AFTER_REPAIRS if held is None else 0):
                if passes(result, expect):
                    break
                if result.status == "undecidable" and back is not None:
                    # The repair led where the sandbox cannot judge (a module path that is no
                    # module): back to the check it repaired, for its next repair.
                    change, after, result = back
                elif result.status != "raised":
                    break
                # The fix moved the failure to another check: carry that one's requirement
                # into the after too, without undoing the fix or dropping what the user set.
                repaired = self._after_repair(f, before, change, after, result, taken)
                if repaired is None:
                    break
                back = (change, after, result)
                change, after = repaired
                taken.add(after)
                repairs += 1
                result = self.run(after, target)
            if passes(result, expect):
                shown, change = self._carried_before(before, change, own, target, expect)
                found = self._same_model(expect, target, shown, after, change)
                if found is not None and not repairs:
                    return self._judged(found, f, expect, target, before)
                held = held or found
            tried.append((change, result))
            if len(tried) >= MAX_AFTERS:
                break
        if held is not None:
            return self._judged(held, f, expect, target, before)
        if not tried and expect.logs:
            reason = "only giving the feature up would silence this notice, which is no fix"
        elif not tried:
            reason = "no candidate change of the launch undoes this check's condition"
        else:
            change, result = tried[0]
            reason = (
                f"none of {len(tried)} candidate fixes passed; the first, "
                f"{describe(change)}, {_fell_short(result, expect)}"
            )
        return Verdict("unverified", reason, self.platform, runs=self.runs)

    def _judged(
        self, found: Verdict, f: Facts, expect: Expect, target: Target, before: Launch
    ) -> Verdict:
        """A verified fix with the choices and solutions the runs judge (below)."""
        return replace(
            found,
            choices=self._judged_choices(f, expect, target, before),
            refuted=self._refuted(f, expect, target, before),
        )

    def _judged_choices(
        self, f: Facts, expect: Expect, target: Target, before: Launch
    ) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(option, the declared choices that pass) for each option the check refuses some
        values of (`x in (A, B)`, `x == A`): each other choice run in the before's place. The
        record's "a value other than A" becomes those values, where the code may rewrite one
        of the others into a refused one (SGLang's NEXTN becomes EAGLE)."""
        out = []
        for atom in (*f.direct, *f.context):
            decl = self.decls.get(atom.flag or "")
            if decl is None or atom.op not in ("in", "==") or not decl.choices:
                continue
            refused = {show_value(v) for v in (atom.value if atom.op == "in" else (atom.value,))}
            others = [c for c in decl.choices if show_value(c) not in refused]
            if not others or len(others) > MAX_CHOICES or not before.has(atom.flag):
                continue
            ok = []
            for choice in others:
                edit = FixChange((("set", atom.flag, show_value(choice)),), "allowed")
                if passes(self.run(self._apply(before, edit), target), expect):
                    ok.append(show_value(choice))
            out.append((atom.flag, tuple(ok)))
        return tuple(out)

    def _refuted(self, f: Facts, expect: Expect, target: Target, before: Launch) -> tuple[str, ...]:
        """The record's solutions that runs refute: "Set --x to 1 or less" where the before
        line already had it so; "Leave --x unset" / "Remove --x" (records/knowledge/fixes.py)
        for an option of the check's own test whose leaving out still fires it: the code
        fills in a value of its own that fails the same way (SGLang's default attention
        backend)."""
        out = []
        for atom in f.direct:
            # "Set --x to 1 or less" where the before line already gave --x 1 (or left it at
            # a default of 1) and still fired: the code read another value there
            # (`else: self.dp = envs.VLLM_DP_SIZE`), so the words cannot fix it. No run.
            number = isinstance(atom.value, (int, float)) and not isinstance(atom.value, bool)
            if atom.flag and atom.op in (">", ">=", "<", "<=") and number:
                value = _launch_number(before, atom.flag, self.decls)
                if value is not None and not holds_for(atom, value):
                    out.append(fix_words(atom, self.decls))
        for atom, direct in [*((a, True) for a in f.direct), *((a, False) for a in f.context)]:
            if atom.op not in ("is not None", "set") or not atom.flag or not before.has(atom.flag):
                continue
            dropped = self._apply(before, FixChange((("drop", atom.flag, None),), "remove"))
            if not fires(self.run(dropped, target), expect):
                continue
            # (the words fixes.solutions gives the check's own option, and a feature's)
            give_up = atom.op == "set" and not direct
            out.append(give_up_words(atom.flag) if give_up else fix_words(atom, self.decls))
        return tuple(dict.fromkeys(out))

    def _same_model(
        self, expect: Expect, target: Target, before: Launch, after: Launch, change: FixChange
    ) -> Verdict | None:
        """The verified fix, with before and after on the same model: a model the after had
        to switch to (a check further on wants a Qwen model) is the model of the before too,
        which must still fire there; None when it does not."""
        model = tuple(e for e in change.edits if e[0] == "model")
        if model:
            change = FixChange(tuple(e for e in change.edits if e[0] != "model"), change.source,
                               change.note)  # fmt: skip
            if not change.edits:
                return None
            before = candidates.apply(before, FixChange(model, "model"), self.decls)
            if not fires(self.run(before, target), expect):
                return None
        label = model_label(before, self.profiles)
        return verified(before, after, change, self.command, platform=self.platform,
                        model=label, runs=self.runs)  # fmt: skip

    def _after_repair(
        self,
        f: Facts,
        before: Launch,
        change: FixChange,
        after: Launch,
        result: Outcome,
        taken: set[Launch] = frozenset(),  # type: ignore[assignment]
    ) -> tuple[FixChange, Launch] | None:
        """The fix `change` with what the check it moved the failure to requires, and the
        after that gives: the first repair that leads to a launch not in `taken`."""
        # What the new error itself lists ("Available devices: ['mlx5_0', ...]") refines the
        # option the fix set.
        own = {name for _, name, _ in change.edits}
        for offer in told(result, after):
            if {n for _, n, _ in offer.edits} <= own:
                carried = self._carried(change, offer, after)
                if carried[1] not in taken:
                    return carried
        other = self.neighbour(result.file, result.line)
        if other is None or _same_site(other, f):
            return None
        for rep in self._repairs_of(other, after):
            rep = typed.change(rep, self.decls)
            names = {name for _, name, _ in rep.edits}
            # The fix's own options may be refined (a path that exists), never undone.
            if rep.source == "remove" or undoes(rep, after):
                continue
            if names & own and any(op not in ("set", "file") for op, _, _ in rep.edits):
                continue
            if breaks(rep, [a.negated() for a in f.direct if a.flag in own]):
                continue  # "refining" the fix's option back to where the check fires
            if any(op == "drop" and before.has(n) for op, n, _ in rep.edits):
                continue
            carried = self._carried(change, rep, after)
            if carried[1] not in taken:
                return carried
        if reads_model(other):
            # The fix moved the failure to a check about the model ("Number of experts in the
            # model must be greater than 0 when expert parallelism is enabled"): the fix is
            # for another kind of model, which the before must then fire on too (_same_model).
            for rep in self.other_models(after, words=result.message)[:1]:
                kept = tuple(e for e in change.edits if e[0] != "model")
                return FixChange(kept + rep.edits, change.source, change.note), self._apply(
                    after, rep
                )
        return None

    def _carried_before(
        self, before: Launch, change: FixChange, own: set[str], target: Target, expect: Expect
    ) -> tuple[Launch, FixChange]:
        """What the after added for later checks (`--enable-expert-parallel
        --tensor-parallel-size 2` for the EPLB checks past the one fixed), carried into the
        before too when it still fires there: the example's two lines then differ by the fix
        alone, on a launch whose other options are sound. `own`: the fix's options."""
        extra = tuple(e for e in change.edits if e[1] not in own and e[0] in ("set", "file"))
        if not extra:
            return before, change
        wider = self._apply(before, FixChange(extra, "allowed"))
        if wider == before or not fires(self.run(wider, target), expect):
            return before, change
        kept = tuple(e for e in change.edits if e not in extra)
        return wider, FixChange(kept, change.source, change.note)

    def _repairs_of(self, other: Facts, after: Launch) -> Iterator[FixChange]:
        """The changes that satisfy the check a fix moved the failure to: its candidate fixes,
        then what its own guards, run on the after, solve for (`tensor_parallel_size *
        data_parallel_size <= 1`: --tensor-parallel-size 2), asked only when no candidate
        served."""
        yield from rank(candidates.changes(other, self.decls, after), after)
        yield from self._solve_neighbour(other, after)

    def _carried(
        self, change: FixChange, rep: FixChange, after: Launch
    ) -> tuple[FixChange, Launch]:
        """`change` with `rep`'s edits in place of its own of the same options, and `after`
        with `rep` applied."""
        names = {name for _, name, _ in rep.edits}
        kept = tuple(e for e in change.edits if e[1] not in names)
        return FixChange(kept + rep.edits, change.source, change.note), self._apply(after, rep)

    def _unreachable(self, f: Facts, out: Outcome | None) -> Verdict | None:
        """Not applicable when the check's own condition cannot come out the way that fires
        it for any value a command line can give: the run reached it, and the solver tried
        every value of the options it reads (their choices, and what the validation code
        assigns them) without one that turns it (watch.py's "exhausted")."""
        bound = declared_bound(f, out)
        if bound:
            return Verdict("not-applicable", bound, runs=self.runs, no_launch=True)
        if out is None or out.status not in ("passed", "raised"):
            return None  # a check that fired after the guard leaves its answer standing
        held = self._held_by(f)
        for r in f.readings:
            if r.role != "direct":
                continue
            g = out.guard(r.guard.line)
            filled = self._filled_in(r, g, self._launches.get(id(out)))
            if filled:
                return Verdict("not-applicable", filled, runs=self.runs, no_launch=True)
            if g and g.get("exhausted") and g.get("value") is not None:
                given = self._given_by_caller(f, r.guard.test)
                if given:
                    return Verdict("unverified", given, runs=self.runs)
                attrs = dict.fromkeys(
                    a
                    for name in re.findall(r"\bself\.(\w+)", r.guard.test)
                    if (a := held.get(f"self.{name}", name)) in self.fields
                )
                held = "; ".join(self._values_held(a) for a in attrs)
                return Verdict(
                    "not-applicable",
                    f"{NO_LAUNCH}: every value {held} leaves "
                    f"`{r.guard.test}` {'false' if r.guard.holds else 'true'}",
                    runs=self.runs,
                    no_launch=True,
                )
        return None

    def _dead(self, f: Facts) -> Verdict | None:
        """Not applicable when no launch reached the check and the branches on the way to it
        need an option both given and left out (where.contradiction), of another type than
        the parser gives it (where.typed_away), or outside every choice it declares
        (where.choices_accepted)."""
        atoms = [*f.passed, *f.context, *f.direct]
        flag = contradiction(atoms)
        why = f"the branches on the way to it need {flag} both given and left out" if flag else ""
        why = why or typed_away(atoms, self.decls) or choices_accepted(atoms, self.decls)
        if not why:
            return None
        return Verdict("not-applicable", f"{NO_LAUNCH}: {why}", runs=self.runs, no_launch=True)

    def _filled_in(self, r: Reading, g: Mapping[str, Any] | None, launch: Launch | None) -> str:
        """Why a check that fires only when an option is None is reached by no command line
        ("" when it may be): the launch left the option out (its parser default is None), and
        the code had filled it in by the time the check read it, so leaving it out (or giving
        None) fills it in too, and any other value is not None (`assert self.max_num_seqs is
        not None, "max_num_seqs must be set by this point"`)."""
        tree = reading.parse_test(r.guard.test)
        if launch is None or not g or g.get("value") is None or g["value"] == r.guard.holds:
            return ""
        if not (isinstance(tree, ast.Compare) and len(tree.ops) == 1):
            return ""
        op, right, left = tree.ops[0], tree.comparators[0], tree.left
        if not (isinstance(right, ast.Constant) and right.value is None):
            return ""
        if not isinstance(op, (ast.Is, ast.IsNot)) or isinstance(op, ast.Is) != r.guard.holds:
            return ""  # it fires on a value that is there, not on None
        attr = left.attr if isinstance(left, ast.Attribute) else ""
        field = self.fields.get(attr)
        if field is None or field.get("default") != [None]:
            return ""
        if any(self.decls[o].dest == attr for o, _ in launch.args if o in self.decls):
            return ""
        held = next((v for k, v in g.get("names", {}).items() if k.endswith(f".{attr}")), None)
        shown = f" (it held {_brief(held)} here)" if held is not None else ""
        return (
            f"{NO_LAUNCH}: the code fills in {field['flag']} before this check "
            f"when a launch leaves it out{shown}, and a value a command line gives is never None"
        )

    def _given_by_caller(self, f: Facts, test: str) -> str:
        """Why exhausting the options proves nothing ("" when it does): the guard reads a
        parameter of the check's function that no call in the source passes, so the command
        that launches the validation passes it (`create_engine_config(headless=...)`), and the
        test launches ran it with its default only."""
        site = f.site
        if self._steps("sites", site.file, site.function):
            return ""
        params = self._steps("params", site.file, site.function, 0)
        tree = reading.parse_test(test)
        names = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} & set(params)
                       if tree is not None else ())  # fmt: skip
        if not names:
            return ""
        name = names[0]
        return (
            f"the check depends on `{name}`, which the launch command itself passes to "
            f"{site.function}, not an option a command line sets; kverr's test launches "
            f"ran it with {name}={params[name]} only"
        )

    def _values_held(self, attr: str) -> str:
        """ "--x can hold (the parser's choices a, b; validation sets c)"."""
        f = self.fields[attr]
        if f.get("switch"):
            return f"{f['flag']} can hold (on or off)"
        text = f"{f['flag']} can hold (the parser's choices {', '.join(map(str, f['choices']))}"
        extra = [v for v in [*f.get("default", ()), *(f.get("assigned") or ())]
                 if v not in f["choices"]]  # fmt: skip
        if extra:
            text += f"; otherwise {', '.join(map(repr, dict.fromkeys(extra)))}"
        return text + ")"

    def _not_reached(self, out: Outcome | None) -> Verdict:
        if out is not None and out.status == "unreachable":
            return Verdict("not-applicable", out.reason, runs=self.runs, unreached=True)
        if out is None:
            why = "no launch was tried"
        elif out.status == "undecidable":
            why = f"the check could not be decided: it reads {out.reason}"
        elif out.status == "unavailable":
            why = f"the revision's code does not load: {out.reason}"
        else:
            why = f"no launch built from the check's conditions reached it: the last one {what_happened(out)}"
        return Verdict("unverified", why, runs=self.runs)

    # ------------------------------------------------------------ 1. reach the check

    def watch(self, f: Facts, *, flip_all: bool = False) -> list[dict[str, Any]]:
        """The guards on the path, each with the truth value that reaches the site (or, with
        `flip_all`, the value that turns it around). Locals in a test are replaced by what
        they were assigned, so that the solver's changed attributes reach them."""
        out = []
        site = f.site
        words = list(self._steps("words", site.file, site.function))
        owners = self._steps("owners", site.file, site.function)
        aliases = {
            **self._copied(site.function),
            **self._steps("aliases", site.file, site.function),
            **self._handed(site),
            **self._held_by(f),
        }
        path: list[str] = []  # the guards so far, each as it holds on the way to the site
        for r in f.readings:
            g = r.guard
            test = self._test(site.file, site.function, g)
            if test is None:
                continue
            # Earlier checks stay passed: turning one around only moves the failure there. An
            # early exit (`if x is None: return`) turned around skips the check: a feature fix;
            # so does a try body that no longer raises (the except clause's condition).
            turn = r.role in ("direct", "enclosing") or g.kind in ("early-exit", "try")
            want = g.holds != (flip_all and turn)
            item = self._item(g.line, test, want, site.file)
            if path:
                item["keep"] = list(path)  # a value that turns an earlier guard is no answer
            path.append(test if g.holds else f"not ({test})")
            if flip_all:
                item["near"] = True  # a fix: values one edit away from the launch's first
            elif turn:
                # Where it already holds the way that reaches the site, the same run also
                # finds the values that turn it around: the fix's candidates, no extra run.
                item["flip"] = True
            if words and not out:
                item["words"] = words  # once per run: the child shares them with every guard
            if owners:
                item["owners"] = owners  # a word compared with one option is offered it alone
            out.append(item)
        if not flip_all:
            # The sibling tests of an if/elif chain that the words leave out (`rule == "tse"`
            # must be false to reach the `elif rule == "custom"` branch) still decide the path.
            seen = {w["line"] for w in out}
            for g in site.guards:
                if g.kind in ("elif", "else", "if") and g.line not in seen:
                    if (test := self._test(site.file, site.function, g)) is None:
                        continue
                    out.append(self._item(g.line, test, g.holds, site.file))
                    seen.add(g.line)
            main = self.ways_in(site.file, site.function)
            for phase, line, test, want in main:  # the steps' own way to the function
                item = self._item(line, test, want, site.file)
                out.append(dict(item, function=phase, vars=[]))
            caller, readings = self.callers(f)
            for r in readings:
                test = self._steps("inline", site.file, caller, r.guard.test, r.guard.line)
                item = self._item(r.guard.line, test, r.guard.holds, site.file)
                # turned around, the way to the call gives the feature up: a fix of last
                # resort for a check that raises whenever it is called (`fixes`)
                out.append(dict(item, function=caller, flip=True))
            # An attribute the launch sets can be overwritten before the guard reads it
            # (`if self.dp_size == 1: self.enable_dp_lm_head = False`): watch those ifs too,
            # wanting them not to fire.
            read = {a for w in out for a in re.findall(r"\bself\.(\w+)", w["test"])}
            read &= set(self.fields)  # options a launch sets; derived values are not reset
            resets = reading.class_resets(self.source(site.file), self.args_class)
            seen = {(w.get("function"), w["line"]) for w in out}
            added: dict[tuple[str | None, int], dict[str, Any]] = {}
            for attr in sorted(read & set(resets)):
                for method, line, test, holds in resets[attr][:12]:
                    same = method == site.function
                    where = (None if same else method, line)
                    if where in added:  # one if resetting several options the guards read
                        added[where]["resets"].append(attr)
                        continue
                    if (same and line >= site.line) or where in seen:
                        continue
                    item = dict(self._item(line, test, not holds, site.file), resets=[attr])
                    added[where] = item if same else dict(item, function=method)
                    out.append(added[where])
                    seen.add(where)
        for w in out:
            if aliases and not w.get("function"):
                # every guard of the record's own function reads its frame through them (a
                # validator's argument is its field's value, a helper's parameter what its
                # caller passes)
                w["aliases"] = aliases
        return out

    def _handed(self, site: Any) -> dict[str, str]:
        """A parameter its caller passes an attribute of its own object (`rates` of
        `self._resolve_rates(self.n, self.rates)`, or `self.draft.max_len`) -> that
        attribute's path: the guards read it as `self.rates`, and a static helper's frame
        holds it under the parameter's name."""
        params = self._steps("params", site.file, site.function, self._site)
        return {
            name: m.group(1)
            for name, source in params.items()
            if name != "self" and (m := re.fullmatch(r"self\.(\w+(?:\.\w+)*)", str(source)))
        }

    def _test(self, file: str, function: str | None, g: Guard) -> str | None:
        """A guard's test as the watch evaluates it: locals replaced by what they were
        assigned; an except clause as "its try body raises" (reading.try_test); None when the
        watch cannot evaluate it."""
        if g.kind == "try":
            raw = self._steps("try", file, function, g.line, g.test)
        elif g.kind in _WATCHED:
            raw = _expression(g.test)
        else:
            return None
        if raw is None:
            return None
        return self._steps("inline", file, function, raw, g.line)

    def _held_by(self, f: Facts) -> dict[str, str]:
        """`self.x` -> the option it is, for a check of a config class whose fields are
        options of their own (`--speculative-config.x`): what the check's conditions read."""
        out = {}
        for r in f.readings:
            for a in r.atoms:
                for flag in (a.flag, *a.flags):
                    decl = self.decls.get(flag or "")
                    if decl is not None and "." in flag and decl.dest in self.fields:
                        out[f"self.{flag.rsplit('.', 1)[1]}"] = decl.dest
        return out

    def _item(self, line: int, test: str, want: bool, file: str) -> dict[str, Any]:
        """One watched guard; `vars`: attributes that methods it calls on self read."""
        reads = reading.method_reads(self.source(file), self.args_class)
        called = re.findall(r"\bself\.(\w+)\(", test)
        extra = sorted({a for m in called for a in reads.get(m, ()) if a in self.fields})
        return {"line": line, "test": test, "want": want, "vars": extra}

    def reach(
        self, f: Facts, expect: Expect, target: Target
    ) -> tuple[Launch | None, Outcome | None]:
        """A launch that fires the record, through each call site of its function in turn
        (a helper may be reached with the arguments that matter from one branch only)."""
        sites = max(1, len(self._steps("sites", f.site.file, f.site.function)))
        first: Outcome | None = None
        for k in range(sites):
            self._site = k
            launch, out = self._reach_one(f, expect, target)
            first = first or out
            if launch is not None:
                return launch, out
        self._site = 0
        return None, first

    def _reach_one(
        self, f: Facts, expect: Expect, target: Target
    ) -> tuple[Launch | None, Outcome | None]:
        way_in = [a for r in self.callers(f)[1] for a in r.atoms]  # the call's way first
        atoms = self.unfolded([*way_in, *dict.fromkeys(f.passed + f.exits), *f.context, *f.direct])
        launch = candidates.before(atoms, self.decls)
        launch = typed.launch(launch, self.decls)
        watch = self.watch(f)
        seen: set[Launch] = set()
        out: Outcome | None = None
        self._others: list[Launch] | None = None  # other accepted values' launches (_closer)
        self._branches: list[Launch] = []  # launches to come back to (_closer), last first
        for _ in range(MAX_REACH):
            seen.add(launch)
            out = self.run(launch, target, watch)
            self._launches[id(out)] = launch
            if fires(out, expect):
                return launch, out
            nxt = self._closer(f, launch, out, seen, watch, target)
            while nxt is None and self._branches:
                nxt = self._branches.pop()
                nxt = None if nxt in seen else nxt
            if nxt is None:
                return None, out
            launch = nxt
        return None, out

    def _stuck(self, f: Facts, out: Outcome) -> bool:
        """The run evaluated the record's direct test, wrong, and the solver found no values
        for it."""
        for r in f.readings:
            g = out.guard(r.guard.line) if r.role == "direct" else None
            if g and g.get("value") is not None and g.get("value") != r.guard.holds:
                # exhausted: every value a command line can give leaves it so (not applicable)
                return not g.get("solutions") and not g.get("exhausted")
        return False

    def _accepted(
        self, f: Facts, launch: Launch, target: Target, watch: Sequence[Mapping[str, Any]]
    ) -> list[FixChange]:
        """Other values of the options that the guards of the record's function before its
        test read, each keeping every guard of the path as it is: one more run, watching
        those guards for "others" (watch.py)."""
        own = [
            w
            for w in watch
            if not w.get("function") and not w.get("resets") and w["line"] < f.site.line
        ]
        path = {id(w): w["test"] if w["want"] else f"not ({w['test']})" for w in own}
        asked = []
        for w in own:
            item = {k: v for k, v in w.items() if k not in ("flip", "keep", "words")}
            item["others"] = True
            item["keep"] = [t for i, t in path.items() if i != id(w)]
            asked.append(item)
        if not asked:
            return []
        words = next((w["words"] for w in watch if "words" in w), None)
        if words:
            asked[0]["words"] = words
        out = self.run(launch, target, asked)
        guards = out.trace.get("guards", {})
        found = [
            self._solved(solution)
            for _, g in sorted(guards.items(), key=lambda kv: int(kv[0]))
            for solution in g.get("others", [])
        ]
        # Another value of what the user set, never one more option or one given up; the
        # option's name in capitals last.
        kept = [
            c
            for c in found
            if all(op == "set" and launch.has(n) for op, n, _ in c.edits) and not undoes(c, launch)
        ]
        return sorted(kept, key=is_metavar)

    def _closer(
        self,
        f: Facts,
        launch: Launch,
        out: Outcome,
        seen: set[Launch],
        watch: Sequence[Mapping[str, Any]] = (),
        target: Target | None = None,
    ) -> Launch | None:
        """The next launch to try after `out`, or None when there is nothing left to try."""
        options: list[FixChange] = []
        if out.status == "raised":
            # An earlier check fired first: carry its requirement into the launch, from the
            # run's own values (the watched guards) or that check's candidate fixes; adding
            # an option before changing one the launch set, and undoing one (dropping it,
            # emptying it) last.
            options = self._guard_repairs(out, launch, watch)
            other = self.neighbour(out.file, out.line)

            def gives_up(c: FixChange) -> bool:  # undoes the launch or the record's own facts
                return undoes(c, launch) or breaks(c, (*f.context, *f.direct))

            if other is not None and not _same_site(other, f):
                options += rank(candidates.changes(other, self.decls, launch), launch)
                if sum(not gives_up(c) for c in options) < 2:
                    # Nothing short of undoing the launch (`--nnodes 1` for "world_size=1 must
                    # be divisible by nnodes=2", where the record needs nnodes > 1), or one
                    # way only, which may lead nowhere (a module path the sandbox cannot
                    # import): ask that check's own guards, where they run, for values that
                    # turn it around (a connector among those registered).
                    options += self._solve_neighbour(other, launch)
                if reads_model(other):
                    # The earlier check is about the model (`is_deepseek_nsa(hf_config)`):
                    # the record's check may be about another kind of model too.
                    options += self.other_models(launch)

            options.sort(
                key=lambda c: (
                    gives_up(c),
                    undoes(c, launch),
                    any(launch.has(n) for _, n, _ in c.edits),
                    len(c.edits),
                )
            )
        elif out.status == "parse-error":
            options = self._parse_repairs(out.reason)
        elif out.status == "passed":
            options = self._guard_repairs(out, launch, watch)
            if all(self._apply(launch, c) in seen for c in options):
                options += self._way_in(f, launch)
        elif out.status == "undecidable" and (m := MISSING_FACT.search(out.reason)):
            # The check read what the model profile does not declare (an Exaone config's
            # sliding_window_pattern): a profile that declares it describes that model.
            options = self.other_models(launch, ("config." if m.group(1) else "") + m.group(2))
        if out.status == "passed" and target is not None and self._stuck(f, out):
            # The run reached the check's own test, which came out wrong with nothing to
            # right it: it reads what no option sets directly (a local list built from
            # `--mooncake-ib-device`). Other values the guards on the way accept for an option
            # the launch sets may still turn it (`mlx5_9`, a device that is not there); asked
            # once per reach.
            if self._others is None:
                self._others = [
                    self._apply(launch, c) for c in self._accepted(f, launch, target, watch)
                ]
            while self._others:
                nxt = self._others.pop(0)
                if nxt not in seen:
                    return nxt
        if out.status == "passed" and about_model(out, watch):
            # No option makes the path hold and a guard reads the model: the check may be
            # about another kind of model.
            options += self.other_models(launch)
        unseen = [
            n for n in dict.fromkeys(self._apply(launch, c) for c in options) if n not in seen
        ]
        if out.status == "raised":
            # The earlier check's other repairs, to come back to when the one taken leads to
            # a launch that passes (an ngram draft where the check needs a draft model)
            self._branches += reversed(unseen[1 : 1 + MAX_BRANCHES])
        return unseen[0] if unseen else None

    def _apply(self, launch: Launch, change: FixChange) -> Launch:
        """`launch` changed, each JSON field it sets given a value of its kind (typed.py)."""
        after = candidates.apply(launch, typed.change(change, self.decls), self.decls)
        return typed.launch(after, self.decls)

    def other_models(self, launch: Launch, attribute: str = "", words: str = "") -> list[FixChange]:
        """Switches to the other model profiles (those declaring `attribute`, when given),
        those that `words` speak of first: by the profile's name ("Non-MoE models") or its
        config's attribute names ("Number of experts" -> num_experts)."""
        current = dict(launch.model).get("profile")
        said = set(re.findall(r"[a-z]+", words.lower()))

        def spoken(name: str) -> int:
            own = {w for k in self.profiles[name] for w in k.lower().split("_") if len(w) > 3}
            return -(2 * (name.lower() in said) + len(own & said))

        return [
            FixChange((("model", "profile", name),), "model")
            for name in sorted(self.models, key=spoken if said else lambda n: 0)
            if name != current and (not attribute or attribute in self.profiles[name])
        ]

    def _solve_neighbour(self, other: Facts, launch: Launch) -> list[FixChange]:
        site = other.site
        watch = []
        for r in other.readings:
            g = r.guard
            raw = _expression(g.test)
            if r.role not in ("direct", "enclosing") or raw is None:
                continue
            test = self._steps("inline", site.file, site.function, raw, g.line)
            want = (not g.holds) if r.role == "direct" else g.holds
            watch.append(dict(self._item(g.line, test, want, site.file), function=site.function))
        if not watch:
            return []
        target = Target(site.file, site.function, site.line, site.end_line)
        return self._guard_repairs(self.run(launch, target, watch))

    def _guard_repairs(
        self, out: Outcome, launch: Launch | None = None, watch: Sequence[Mapping[str, Any]] = ()
    ) -> list[FixChange]:
        """Watched guards that came out wrong, in path order, as the changes that right them;
        a change that leaves alone every option a guard that came out right reads first
        (tp_size % (dp_size * cp_size) wants --dp-size 2, not a --tp-size that breaks the
        tp_size % cp_size check just passed).

        A reset (an `if` that assigns an option before the check reads it) counts only when
        the launch sets that option: otherwise it fills in a value the user did not give
        (`if self.device is None: self.device = get_device()`), and turning it around would
        add an option the check never asked for."""
        guards = dict(out.trace.get("guards", {}))
        if launch is not None:
            given = {self.decls[o].dest for o, _ in launch.args if o in self.decls}
            for w in watch:
                if w.get("resets") and not set(w["resets"]) & given:
                    guards.pop(str(w["line"]), None)
        right = {
            self.fields[attr]["flag"]
            for g in guards.values()
            if g.get("value") is not None and "solutions" not in g
            for name in g.get("names", {})
            if name.startswith("self.") and (attr := name[5:]) in self.fields
        }
        found = [self._solved(s) for g in guards.values() for s in g.get("solutions", [])]
        return sorted(found, key=lambda c: any(n in right for _, n, _ in c.edits))

    def _way_in(self, f: Facts, launch: Launch) -> list[FixChange]:
        """A check of a JSON option's config class that the guards' values did not reach:
        a field of that option the check reads, given a value of its kind. The parser builds
        the option's object from its defaults while it is made, before any step is watched,
        and pydantic validates a field only when given: the launch has to give the option
        for its checks to run where the watch sees them (`--compilation-config.custom_ops`).
        An option copied into the field sets it only after the object was built (`--enable-x`
        into `mamba_config.enable_x`), and its __post_init__ does not run again.

        An option the code builds its object from only when given (`--speculative-config`,
        a plain JSON mapping the engine turns into SpeculativeConfig) is given empty, `{}`:
        the object is then built with every field at its default, which is what a check of
        a field left unset (`num_speculative_tokens is None`) needs."""
        owner = (f.site.function or "").partition(".")[0]
        held = dict(self._keys(self.json_classes.get(owner)))
        read = re.findall(r"\bself\.(\w+)", " ".join(g.test for g in f.site.guards))
        fields = [self.fields[held[a]]["flag"] for a in read if a in held]
        parsed = set(self.json_classes.values())  # (an option the parser itself declares)
        given = [
            FixChange((("set", flag, sample_value(flag, self.decls, f.docs)),), "allowed")
            for flag in dict.fromkeys([*f.site.flags, *fields])
            if typed.is_field(d := self.decls.get(flag))
            and d.dest.partition(".")[0] in parsed
            and not launch.has(flag)
        ][:1]
        option = "--" + class_dest(owner, self.json_classes).replace("_", "-") if owner else ""
        built_later = option in self.decls and option not in {
            "--" + d.replace("_", "-") for d in parsed
        }
        if (
            given
            or not built_later
            or any(o == option or o.startswith(option + ".") for o, _ in launch.args)
        ):
            return given
        return [FixChange((("set", option, "{}"),), "allowed")]

    def _solved(self, solution: list, source: str = "solve", note: str = "") -> FixChange:
        """A solver's assignment [[option, value], ...] (solve.py) as a change of the launch."""
        return FixChange(
            tuple(solved_edit(flag, value, self.decls) for flag, value in solution), source, note
        )

    def _parse_repairs(self, reason: str) -> list[FixChange]:
        """argparse rejected a value: its own message names the argument and the choices."""
        m = re.search(r"argument ([-\w/]+)", reason)
        if not m:
            return []
        flag = next((f for f in m.group(1).split("/") if f in self.decls), None)
        if flag is None:
            return []
        choices = re.findall(r"'([^']*)'", reason.partition("choose from")[2])
        if choices:
            return [FixChange((("set", flag, c),), "allowed") for c in choices[:3]]
        return [FixChange((("drop", flag, None),), "remove")]

    # ------------------------------------------------------------ 2. fix it

    def fixes(
        self,
        f: Facts,
        target: Target,
        before: Launch,
        fired: Outcome | None = None,
    ) -> list[FixChange]:
        """Candidate changes in the order tried (see rank)."""
        found = candidates.changes(f, self.decls, before)
        # The values that turn each guard on the path around, the direct one first, then the
        # enclosing ones (giving the feature up): the firing run asked for them already
        # ("flip"); a run answered from an older cache is asked once more.
        flipped = fired
        if fired is None or not any("flipped" in g for g in fired.trace.get("guards", {}).values()):
            flipped = self.run(before, target, self.watch(f, flip_all=True))
        solved: list[FixChange] = []
        for r in sorted(f.readings, key=lambda r: r.role != "direct"):
            g = flipped.guard(r.guard.line) or {}
            # The direct guard turned around is the fix; so is a try body that stops raising
            # (the except clause the check sits in); an enclosing one gives the feature up.
            source = "solve" if r.role == "direct" or r.guard.kind == "try" else "feature"
            for solution in g.get("flipped", g.get("solutions", [])):
                solved.append(self._solved(solution, source, r.guard.test))
        for r in self.callers(f)[1]:  # the way to the record's function, turned around
            for solution in (flipped.guard(r.guard.line) or {}).get("flipped", []):
                solved.append(self._solved(solution, "feature", r.guard.test))
        merged = candidates.unique([*found, *solved])
        useful = [c for c in merged if candidates.apply(before, c, self.decls) != before]
        return rank(useful, before, fired.message if fired is not None else "")


# pydantic's words for a field's declared bound (`Field(gt=0)`), after the field's name
_BOUND = re.compile(
    r"(?m)^(\w+)\n\s*Input should be (greater|less) than( or equal to)? (-?\d+(?:\.\d+)?)"
)
_OPS = {
    ("greater", False): ">", ("greater", True): ">=", ("less", False): "<", ("less", True): "<=",
}  # fmt: skip


def declared_bound(f: Facts, out: Outcome | None) -> str:
    """Why no command line reaches a check that its option's own declaration shadows ("" when
    that is not so): the run stopped at pydantic's bound on the field the check tests
    (`num_speculative_tokens: int = Field(gt=0)`), and no value the bound lets through
    fires the check (`if self.num_speculative_tokens <= 0`)."""
    if out is None or out.status not in ("raised", "parse-error"):
        return ""
    m = _BOUND.search(out.message or out.reason or "")
    if m is None:
        return ""
    field, op = m.group(1), _OPS[(m.group(2), bool(m.group(3)))]
    limit = float(m.group(4))
    for a in f.direct:
        if not a.flag or dest_of(a.flag).rpartition(".")[2] != field:
            continue
        if a.op not in ("<", "<=", ">", ">=") or isinstance(a.value, bool):
            continue
        if not isinstance(a.value, (int, float)) or not disjoint(a.op, float(a.value), op, limit):
            continue
        return (
            f"{NO_LAUNCH}: {a.flag} is declared {op} {m.group(4)} (pydantic refuses any other"
            f" value before the check runs), and the check fires only when it is {a.op} {a.value}"
        )
    return ""


def _launch_number(launch: Launch, flag: str, decls: Mapping[str, FlagDecl]) -> Any:
    """What a launch gives `flag` as a number: its last word where it is one, else its
    declared default where that is; None otherwise."""
    given = [v for o, v in launch.args if o == flag]
    if given:
        word = given[-1]
        if isinstance(word, str) and re.fullmatch(r"-?\d+", word):
            return int(word)
        if isinstance(word, str) and re.fullmatch(r"-?\d+\.\d+", word):
            return float(word)
        return None
    default = flag_default(flag, dict(decls))
    return default if isinstance(default, (int, float)) else None


def _brief(value: Any) -> str:
    """A value as a reason shows it: a long list by its ends and its length."""
    if isinstance(value, (list, tuple)) and len(value) > 6:
        return f"[{', '.join(map(str, value[:3]))}, …, {value[-1]}] ({len(value)} values)"
    return str(value)


def disjoint(op_a: str, a: float, op_b: str, b: float) -> bool:
    """No number is both `x op_a a` and `x op_b b` (one bound below, the other above)."""
    if op_a in ("<", "<=") and op_b in (">", ">="):
        return a < b or (a == b and not (op_a == "<=" and op_b == ">="))
    if op_a in (">", ">=") and op_b in ("<", "<="):
        return a > b or (a == b and not (op_a == ">=" and op_b == "<="))
    return False


def _expression(test: str) -> str | None:
    """A guard's test as one expression the watch evaluates, or None: an assignment
    expression (`if kind := self.kind:`) is one only inside parentheses."""
    if reading.parse_test(test) is not None:
        return test
    return f"({test})" if reading.parse_test(f"({test})") is not None else None


def _fell_short(result: Outcome, expect: Expect) -> str:
    """What a tried fix did instead of passing, said so that it never reads "passed": a run
    that went through still reported the message (a notice logs it anyway), or passed only
    on a model the launch does not have."""
    if result.status != "passed":
        return what_happened(result)
    if passes(result, expect):
        return "passed only with another model than the launch's"
    return "still logged this message" if expect.logs else "still reported this error"


def _same_site(a: Facts, b: Facts) -> bool:
    """Whether two facts are of one site: its file and line (two files share line numbers)."""
    return (a.site.file, a.site.line) == (b.site.file, b.site.line)
