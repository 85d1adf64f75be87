"""The fix search for checks decided at argv time: what a launch's config file can get wrong.

A check of the argv stage (verify/sandbox/argv.py: the config merger) reads the words of the command
line and the file they name, not the options' values, so the launches core.py builds from
conditions on options never reach it. Here the search tries a fixed family of launches around
the spec's config option ([verify.argv] config_option, config_name, config_example), each a
mistake a user makes with a config file, paired with its repair. The revision's own check is
still the judge: a member counts only when its before raises (or logs) exactly the record and
its after passes the argv stage and the parser.

    member (the mistake)                 before                          after
    --config with no file after it       --config                        --config config.yaml
    two --config files                   --config config.yaml --config   --config config.yaml
                                           extra.yaml
    a config file named config.json      --config config.json            --config config.yaml
    a config file that does not exist    --config /no/such/config.yaml   --config config.yaml
    a config file holding a list         [{"tp-size": 1}]                {"tp-size": 1}
    a config file that does not read     {"tp-size": 1                   {"tp-size": 1}
    a config file setting --x (an        {"tp-size": 1, "x": v}          --x v on the command
      option of an action it cannot set)                                 line, else x left out

Every "after" names a written config.yaml holding the spec's example (`{"tp-size": 1}`).
A file's text is JSON (YAML reads it as the same mapping; the sandbox's yaml is json_yaml.py),
and the example fix shows it written first: `echo '{"tp-size": 1}' > config.yaml && ...`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import PurePosixPath
from typing import Any

from kverr.records.knowledge.facts import sample_value
from kverr.verify.harness import Outcome, Target
from kverr.verify.sandbox.solve import as_number
from kverr.verify.search.core import Runner
from kverr.verify.spec import ArgvStage
from kverr.verify.verdict import Expect, Verdict, fires, passes, verified, what_happened

from kverr.ftypes import FixChange, FlagDecl, Launch

# Actions a config file plainly expresses (a value, a switch): no example of an option it
# cannot set.
_PLAIN_ACTIONS = {"_StoreAction", "_StoreTrueAction", "_HelpAction", "_VersionAction"}
MAX_UNSETTABLE = 4  # options of other actions tried for "an option it cannot set"


@dataclass(frozen=True)
class Member:
    """One mistake: the launch that makes it and its repairs, most useful first."""

    what: str  # "two --config files", for the reason text
    before: Launch
    repairs: tuple[tuple[Launch, FixChange], ...]
    # Only the first repair is this member's answer; a later one (leaving the option out of
    # the file) is kept while another member may still do better (move its option instead).
    first_only: bool = False


class ConfigSearch:
    def __init__(
        self,
        run: Runner,
        stage: ArgvStage,
        options: Mapping[str, Mapping[str, Any]],
        decls: Mapping[str, FlagDecl],
        platform: str = "",
        command: tuple[str, tuple[str, ...]] = ("", ()),
    ) -> None:
        self._run, self.platform, self.command = run, platform, command
        self.options, self.decls = options, dict(decls)
        self.option, self.name = stage.config_option, stage.config_name
        # The example's keys that are options of this revision's parser (an old one may lack
        # them): what every written file holds.
        self.example = {k: v for k, v in stage.config_example.items() if f"--{k}" in options}

    def find(self, expect: Expect, target: Target) -> Verdict:
        runs = 0
        fired: tuple[Member, Outcome] | None = None  # raised it, no repair passed
        fallback: Verdict | None = None  # verified by a repair ranked below a member's first
        last: Outcome | None = None
        members = list(self.members())
        for member in members:
            last = self._run(member.before, target, ())
            runs += 1
            if not fires(last, expect):
                continue
            for i, (after, change) in enumerate(member.repairs):
                result = self._run(after, target, ())
                runs += 1
                if passes(result, expect):
                    found = verified(member.before, after, change, self.command,
                                     platform=self.platform, runs=runs)  # fmt: skip
                    if i == 0 or not member.first_only:
                        return found
                    fallback = fallback or found
                    break
            else:
                fired = fired or (member, result)
        if fallback is not None:
            return replace(fallback, runs=runs)
        if fired is not None:
            member, result = fired
            reason = (
                f"{member.what} raised it, but none of its {len(member.repairs)} repairs "
                f"passed; the first {what_happened(result)}"
            )
            return Verdict("unverified", reason, self.platform, runs=runs)
        said = what_happened(last) if last is not None else "was never run"
        kinds = "; ".join(dict.fromkeys(m.what for m in members))
        reason = (
            f"none of {len(members)} {self.option} launches raised it ({kinds}); the last {said}"
        )
        return Verdict("unverified", reason, self.platform, runs=runs)

    # ------------------------------------------------------------ the family

    def _launch(self, *args: tuple[str, Any], texts: Mapping[str, Any] | None = None) -> Launch:
        written = tuple(
            (path, t if isinstance(t, str) else _json(t)) for path, t in (texts or {}).items()
        )
        return Launch(args=tuple(args), texts=written)

    def _good(self, *extra: tuple[str, Any]) -> Launch:
        """The config option pointing at a written file that holds the example."""
        return self._launch((self.option, self.name), *extra, texts={self.name: self.example})

    def _fix(self, note: str, *edits: tuple[str, str, str | None]) -> FixChange:
        """A repair: `note` is its solution text (verdict.py shows it as the first solution)."""
        return FixChange((("set", self.option, self.name), *edits), "config", note)

    def members(self) -> Iterator[Member]:
        opt, name, ex = self.option, self.name, _json(self.example)
        suffix = PurePosixPath(name).suffix or ".yaml"
        kind = suffix.lstrip(".").upper()
        wrong = str(PurePosixPath(name).with_suffix(".json" if suffix != ".json" else ".txt"))
        good = self._good()
        table = [
            (f"{opt} with no file after it", self._launch((opt, None)),
             f"Name the config file after {opt}: {opt} {name}"),
            (f"two {opt} files",
             self._launch((opt, name), (opt, f"extra{suffix}"), texts={name: self.example}),
             f"Pass {opt} once: merge the files into {name} and point {opt} at it"),
            (f"a config file named {wrong}", self._launch((opt, wrong), texts={wrong: self.example}),
             f"Rename the config file to end in {suffix}: {opt} {name}"),
            ("a config file that does not exist", self._launch((opt, f"/no/such/{name}")),
             f"Point {opt} at an existing {kind} file: {opt} {name}"),
            ("a config file holding a list",
             self._launch((opt, name), texts={name: [self.example]}),
             f"Write {name} as one mapping of option names to values (`{ex}`), not a list"),
            ("a config file that does not read", self._launch((opt, name), texts={name: ex[:-1]}),
             f"Fix the syntax of {name}: it must read as {kind} (`{ex}`)"),
        ]  # fmt: skip
        for what, before, note in table:
            yield Member(what, before, ((good, self._fix(note)),))
        yield from self._unsettable()

    def _unsettable(self) -> Iterator[Member]:
        """A config file setting an option of an action it cannot express: one option per
        action, those that are not deprecated first (an example a user may copy), in the
        parser's order. The repair moves it to the command line, else leaves it out."""
        seen: dict[str, tuple[bool, int, Mapping[str, Any]]] = {}
        actions: set[str] = set()
        for i, (flag, info) in enumerate(self.options.items()):
            action = str(info.get("action", ""))
            names = info.get("names") or [flag]
            if action in _PLAIN_ACTIONS or action in actions or self.option in names:
                continue
            if flag != names[0] or not flag.startswith("--"):
                continue
            actions.add(action)
            text = f"{action} {(self.decls.get(flag) or FlagDecl(flag, '')).help or ''}"
            seen[flag] = ("deprecat" in text.lower(), i, info)
        ranked = sorted(seen.items(), key=lambda kv: kv[1][:2])[:MAX_UNSETTABLE]
        for flag, (_, _, info) in ranked:
            key = flag[2:]
            value, cli = self._value(flag, info)
            before = self._launch((self.option, self.name),
                                  texts={self.name: {**self.example, key: value}})  # fmt: skip
            moved = self._fix(f"Move {key} out of {self.name} and pass {flag} on the command line",
                              ("set", flag, _word(cli)))  # fmt: skip
            left_out = self._fix(f"Remove {key} from {self.name}")
            repairs = ((self._good((flag, cli)), moved), (self._good(), left_out))
            yield Member(f"a config file setting {flag}", before, repairs, first_only=True)

    def _value(self, flag: str, info: Mapping[str, Any]) -> tuple[Any, Any]:
        """(the value in the file, the command line's value) for an option."""
        if info.get("switch"):
            return True, None
        word = sample_value(flag, self.decls)
        if info.get("list"):
            return [word], (word,)
        return as_number(word), word  # as a YAML file would hold it


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _word(cli: Any) -> str | None:
    return " ".join(cli) if isinstance(cli, tuple) else cli
