"""argparse answers: what a matched argparse record (records/argparse_records.py) says about
the values pasted with it, computed from the flag history the catalog holds (the flag_history
table: each flag's declaration over the revisions), for the releases it holds.

    invalid-choice     the choices of each release; whether the value was a choice in another
                       release (and which: renamed or removed, or only newer ones have it); the
                       release(s) whose choices are exactly the ones argparse listed
    invalid-value      the flag's type and default in each release
    expected-argument  how many values it takes, of which type, its default
    unrecognized       for each option in the list: the releases that have it, else the closest
                       option names any release has

An argparse error names the program in front of it (`launch_server.py: error: ...`): one that
is not the project's (`pip: error: ...`) is another program's error and gets no answer, nor
does an unknown option none of whose names kverr can say anything about.
"""

from __future__ import annotations

import bisect
import difflib
import functools
import heapq
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kverr.argforms import (
    accepted_options,
    conversion,
    expected_count,
    is_switch,
    literal_default,
    takes_value,
)

MAX_OPTIONS = 20  # options of one `unrecognized arguments:` list answered
CLOSE = 0.75  # difflib ratio of a "did you mean" option name (dashes left out)


# ---------------------------------------------------------------- the program that printed it


_QUOTES = "`'\"‘’“”"


def program_of(before: str) -> str | None:
    """The program argparse named in front of the message (`prog: error: `), or None. What an
    issue title or a chat client put before it (`[Bug]: `, a quote or backtick glued to the
    name) is not part of it."""
    head = " ".join((before or "").split())
    if not head.endswith("error:"):
        return None
    head = head[: -len("error:")].rstrip()
    if not head.endswith(":"):
        return None
    head = head[:-1].rsplit(": ", 1)[-1]  # `[Bug]: acme serve` -> `acme serve`
    words = [w.strip(_QUOTES) for w in head.split()]
    words = [w for w in words if w]
    return " ".join(words[-2:]) if words else None


def is_own(program: str | None, programs: list[str]) -> bool:
    """Whether `program` (None: not named) is one of the project's: its last word, or its last
    two (`tool serve`), with any directory dropped (`/usr/bin/tool`)."""
    if program is None:
        return True
    words = [w.rsplit("/", 1)[-1].lower() for w in program.split()]
    own = {p.lower() for p in programs}
    return words[-1] in own or " ".join(words[-2:]) in own


# ---------------------------------------------------------------- one project's flag history


@dataclass
class History:
    """One project's revisions and flag declarations, read once per catalog. Option strings
    keep the runs of revisions that accept them (a few per option), not a set per revision:
    a project of 1,700 commits and 1,000 options stays small."""

    revisions: list[dict]
    declared: dict[str, list[list]] = field(default_factory=dict)  # flag -> its stored rows
    runs: dict[str, list[list[int]]] = field(default_factory=dict)  # option -> [from, to]s

    def __post_init__(self) -> None:
        self.ords = [r["ord"] for r in self.revisions]
        self._pos = {n: i for i, n in enumerate(self.ords)}
        # releases proper: tagged commits (a snapshot's label names no release)
        self._tagged = [i for i, r in enumerate(self.revisions) if r.get("tags") and r.get("sha")]
        self._rev = {r["ord"]: r for r in self.revisions}
        self.newest_git = max((r["ord"] for r in self.revisions if r.get("sha")), default=None)
        # what its revisions are called: releases when tagged, else revisions (commits)
        self.unit = "release" if any(r.get("tags") for r in self.revisions) else "revision"
        # names() and text() of the revision sets answers ask for, by set: a long-lived server
        # answers the same flags' declarations again and again, and each call sorted and
        # walked up to every revision (most of an answer's cost). The sets come from the
        # catalog's declarations (a flag's runs, a choice's, an option's), so they are few;
        # MEMO bounds them anyway.
        self._names: dict[frozenset[int], tuple[str, ...]] = {}
        self._texts: dict[frozenset[int], str] = {}
        self._by_first: dict[int, list[str]] | None = None
        self.everything = frozenset(self.ords)
        self._options: NameIndex | None = None  # every option any revision accepts
        self._new_options: dict[int, NameIndex] = {}  # new_in(ord) as a NameIndex
        self._groups: dict[tuple[str, str], list[tuple[Any, frozenset[int]]]] = {}
        self._spans: dict[str, list[dict]] = {}

    def spans(self, flag: str) -> list[dict]:
        """The flag's declarations (dicts of SPAN_COLUMNS), oldest first: made from its stored
        rows when first asked for, as an answer reads one or two flags of a thousand."""
        got = self._spans.get(flag)
        if got is None:
            got = self._spans[flag] = [_span(r) for r in self.declared.get(flag, ())]
        return got

    def accepted(self, option: str) -> set[int]:
        """The revisions whose parser accepts `option`."""
        return {n for lo, hi in self.runs.get(option, ()) for n in range(lo, hi + 1)}

    def first(self, option: str) -> int | None:
        return min((lo for lo, _ in self.runs.get(option, ())), default=None)

    def groups(self, what: str, flag: str, spans: list[dict], key) -> list:
        """`_groups(spans, key)` of one flag's spans, made once per flag and `what`."""
        return _memo(self._groups, (what, flag), lambda: _groups(spans, key))

    def new_in(self, ord_: int) -> list[str]:
        """The options first accepted in revision `ord_` (indexed on first use)."""
        if self._by_first is None:
            self._by_first = {}
            for option in self.runs:
                self._by_first.setdefault(self.first(option), []).append(option)
        return self._by_first.get(ord_, [])

    def options(self) -> NameIndex:
        """Every option any revision accepts, ready for "did you mean" (`_close_options`)."""
        if self._options is None:
            self._options = NameIndex.of_options(sorted(self.runs))
        return self._options

    def new_options(self, ord_: int) -> NameIndex:
        """`new_in(ord_)` ready for "did you mean" (a renamed option's new name)."""
        return _memo(self._new_options, ord_, lambda: NameIndex.of_options(self.new_in(ord_)))

    def after(self, ord_: int) -> int:
        """The first revision after `ord_` (there is one: `ord_` is not the newest)."""
        return self.ords[bisect.bisect_right(self.ords, ord_)]

    def at(self, ord_: int) -> str:
        """The first release holding a revision (`from v0.5.3 on`): its own first tag (or
        snapshot label), else the first tagged revision after it, else its short sha (past
        the newest release: users of main run it)."""
        rev = self._rev.get(ord_)
        if rev is None:
            return str(ord_)
        if rev.get("tags"):
            return rev["tags"][0]
        pos = self._pos.get(ord_, 0)
        k = bisect.bisect_left(self._tagged, pos)
        if k < len(self._tagged):
            return self.revisions[self._tagged[k]]["tags"][0]
        return (rev.get("sha") or "")[:10]

    def _ends(self, first: int, last: int) -> list[str]:
        """A run's first and last release (its own tags, not those beyond it); the run's own
        short shas when it holds no release."""
        lo, hi = self._pos.get(first, 0), self._pos.get(last, 0)
        inside = self._tagged[
            bisect.bisect_left(self._tagged, lo) : bisect.bisect_right(self._tagged, hi)
        ]
        if not inside:
            own = [self._rev[n] for n in (first, last)]
            shas = [(r.get("tags") or [None])[0] or (r.get("sha") or "")[:10] for r in own]
            k = bisect.bisect_left(self._tagged, lo)
            if k < len(self._tagged):  # main between two releases: the release that followed
                following = self.revisions[self._tagged[k]]["tags"][0]
                return [f"commits before {following} ({' … '.join(dict.fromkeys(shas))})"]
            return shas
        a, b = self.revisions[inside[0]]["tags"], self.revisions[inside[-1]]["tags"]
        end = b[-1]
        if last == self.newest_git and not self._rev[last].get("tags"):
            end = self._rev[last]["sha"][:10]  # past the newest release: main, which users run
        return list(dict.fromkeys([a[0], end]))

    def names(self, ords: set[int]) -> list[str]:
        """Release names of these revisions, oldest first (release_names)."""
        key = frozenset(ords)
        return list(_memo(self._names, key, lambda: tuple(self._names_of(key))))

    def _names_of(self, ords: frozenset[int]) -> list[str]:
        present = [(n, self._rev[n]) for n in sorted(ords) if n in self._rev]
        return release_names(present, self.newest_git)

    def text(self, ords: set[int]) -> str:
        """These revisions as ranges of consecutive ones: "v0.1.0 … v0.4.2, v0.5.0"."""
        key = frozenset(ords)
        return _memo(self._texts, key, lambda: self._text_of(key))

    def _text_of(self, ords: frozenset[int]) -> str:
        runs: list[list[int]] = []
        for n in sorted(o for o in ords if o in self._pos):
            if runs and self._pos[runs[-1][-1]] == self._pos[n] - 1:
                runs[-1].append(n)
            else:
                runs.append([n])
        parts = []
        for run in runs:  # its ends by name: the releases it spans, else short shas
            ends = self._ends(run[0], run[-1])
            if len(run) == 1 or len(ends) == 1:
                parts.append(ends[0])
            else:
                parts.append(f"{ends[0]}{', ' if len(run) == 2 else ' … '}{ends[1]}")
        return ", ".join(parts)


def release_names(present: list[tuple[int, dict]], newest_git: int | None) -> list[str]:
    """The names of these (ord, revision) pairs, oldest first: their tags (and snapshot
    labels), and the newest commit's short sha when it is untagged (users on main run it);
    else the short shas of the first and last commit; [] for a directory build. A match's
    `releases` (store.py) and an argparse answer's name revisions alike."""
    names: list[str] = []
    shas: list[str] = []
    for n, r in present:
        if r.get("tags"):
            names += r["tags"]
        elif n == newest_git:
            names.append(r["sha"][:10])
        if r.get("sha"):
            shas.append(r["sha"][:10])
    return list(dict.fromkeys(names or (shas[:1] + shas[-1:])))


SPAN_COLUMNS = (
    "name",
    "from",
    "to",
    "choices",
    "type",
    "default",
    "action",
    "nargs",
    "options",
    "file",
    "successor",  # the option its own help named in its place ("Please use X instead")
)


def _ords(spans) -> set[int]:
    """The revisions these spans cover (each `from`..`to`, inclusive)."""
    return {n for sp in spans for n in range(sp["from"], sp["to"] + 1)}


def _span(row: list) -> dict:
    """A stored flag_history row (`history_state`) as a dict of SPAN_COLUMNS."""
    return dict(zip(SPAN_COLUMNS, row, strict=True))


def history_state(con: Any, project: str) -> dict[str, Any]:
    """What `history` needs of the project's revisions and flag_history rows, as JSON-ready
    lists: computed once when the catalog is written (store.py keeps it in `meta`), as the two
    queries and the decoding of their JSON cost a one-shot explain of an argparse error 30 ms."""
    revisions = con.execute(
        "SELECT ord, sha, tags FROM revisions WHERE project = ? ORDER BY ord", [project]
    ).fetchall()
    spans = con.execute(
        'SELECT name, from_ord, to_ord, choices, type, "default", action, nargs, options,'
        " file, successor FROM flag_history WHERE project = ? ORDER BY name, from_ord",
        [project],
    ).fetchall()
    rows = [
        [*row[:3], json.loads(row[3]) if row[3] else None, *row[4:8],
         json.loads(row[8]) if row[8] else None, *row[9:11]]
        for row in spans
    ]  # fmt: skip
    by_name: dict[str, list[list]] = {}
    runs: dict[str, list[list[int]]] = {}
    for row in rows:  # (in name, from order: each flag's spans come oldest first)
        by_name.setdefault(row[0], []).append(row)
        for opt in accepted_options(_span(row)):
            runs.setdefault(opt, []).append([row[1], row[2]])
    return {
        "revisions": [[n, sha, json.loads(tags) if tags else []] for n, sha, tags in revisions],
        # each flag's spans as rows, made into dicts when an answer asks for that flag, and
        # each option's runs of revisions: making both for every flag at open was half the
        # cost of a one-shot explain's argparse answer
        "spans": by_name,
        "runs": runs,
    }


MEMO = 4096  # revision sets whose names and text a History remembers


def _memo(memo: dict, key: Any, make: Callable[[], Any]) -> Any:
    """memo[key], made by `make()` when missing; past MEMO entries the memo starts again."""
    got = memo.get(key)
    if got is None:
        if len(memo) >= MEMO:
            memo.clear()
        got = memo[key] = make()
    return got


def history(cat: Any, project: str) -> History:
    """The project's History, cached on the catalog (a few thousand rows at most)."""
    cache = cat._argparse_history
    if project not in cache:
        row = cat.con.execute("SELECT value FROM meta WHERE key = ?", [f"argparse:{project}"])
        found = row.fetchone()
        state = json.loads(found[0]) if found else {"revisions": [], "spans": {}, "runs": {}}
        cache[project] = History(
            [{"ord": n, "sha": sha, "tags": tags} for n, sha, tags in state["revisions"]],
            state["spans"],
            state["runs"],
        )
    return cache[project]


# ---------------------------------------------------------------- answers


def answer(cat: Any, rec: dict, values: dict[str, str], project: dict) -> dict | None:
    """The answer to an argparse record matched with `values` (its placeholders' text and the
    `before` group), or None when it is not this project's error to answer."""
    info = rec.get("argparse") or {}
    form, flag = info.get("form"), info.get("flag")
    facts = cat.project(project["name"]) if project.get("name") else {}
    program = program_of(values.get("before", ""))
    if not is_own(program, facts.get("programs") or []):
        return None
    hist = history(cat, project["name"])
    product = project.get("product") or project.get("name") or ""
    if form == "invalid-choice":
        found = _invalid_choice(hist, flag, values, product)
    elif form in ("invalid-value", "expected-argument"):
        found = _typed(hist, flag, values, product, expected=form == "expected-argument")
    elif form == "unrecognized":
        args = values.get("args") or f"{values.get('head', '')}{flag}{values.get('tail', '')}"
        others = [
            (p.get("product") or p["name"], history(cat, p["name"]))
            for p in cat.projects
            if p["name"] != project["name"]
        ]
        found = _unrecognized(hist, args, product, others) or _stray(args, program, product, facts)
    elif form == "ambiguous":
        found = _ambiguous(hist, values, product)
    elif form == "required":
        found = _required(hist, values, product, str(facts.get("launch") or ""))
    else:
        return None
    # (the option forms say whether kverr knows any name they hold; a choice or a value's
    # form always names the flag's own declaration)
    if found is None or (program is None and not found.get("known", True)):
        return None  # nothing kverr knows about these names: another program's, likely
    out: dict[str, Any] = {"form": form, "flag": flag, "program": program, **found}
    out["text"] = [s for s in out["text"] if s]
    return out


def rehome(cat: Any, rec: dict, values: dict[str, str]) -> tuple[dict, dict, dict] | None:
    """An `unrecognized arguments` line that another project's program printed, matched by a
    record of this one (its removed flag is in the list): (that project's generic record, its
    values, the project), so the line is answered for the program that printed it."""
    info = rec.get("argparse") or {}
    program = program_of(values.get("before", ""))
    if info.get("form") != "unrecognized" or not info.get("flag") or program is None:
        return None  # (each project's generic record matches the line itself)
    for facts in cat.projects:
        if facts["name"] == rec.get("project") or not is_own(program, facts.get("programs") or []):
            continue
        row = cat.con.execute(
            "SELECT id FROM records WHERE project = ? AND kind = 'argparse'"
            " AND message = 'unrecognized arguments: {args}'",
            [facts["name"]],
        ).fetchone()
        other = cat.get(row[0]) if row else None
        if other is None:
            return None
        flag = info.get("flag") or ""
        args = values.get("args") or f"{values.get('head', '')}{flag}{values.get('tail', '')}"
        project = {"name": facts["name"], "product": facts.get("product", facts["name"])}
        return other, {"before": values.get("before", ""), "args": args}, project
    return None


def _bare(value: str) -> str:
    v = value.strip()
    return v[1:-1] if len(v) > 1 and v[0] == v[-1] and v[0] in "'\"" else v


def _listed(text: str | None, closed: bool) -> list[str] | None:
    """The choices argparse listed, when the list is whole (closed, nothing cut off)."""
    if not text or not closed or "..." in text or "…" in text:
        return None
    return [_bare(c) for c in text.split(", ") if c.strip()]


def _invalid_choice(hist: History, flag: str, values: dict[str, str], product: str) -> dict:
    value = _bare(values.get("value", ""))
    shown = values.get("value", "").strip() or repr(value)  # as argparse printed it: 'x', or 4
    spans = [sp for sp in hist.spans(flag) if sp.get("choices")]
    groups = hist.groups("choices", flag, spans, lambda sp: tuple(sp["choices"]))
    accepted = _ords(sp for sp in spans if value in sp["choices"])
    newest = spans[-1] if spans else None
    listed = _listed(values.get("choices"), bool(values.get("closed")))
    # argparse lists the choices in their declared order: the same list, in the same order
    yours = _ords(sp for sp in spans if listed and sp["choices"] == listed)
    pool = listed or (newest["choices"] if newest else [])
    # a number's spelling says nothing of the number meant: no guess between 1, 8 and 16
    numbers = _NUMBER.fullmatch(value) is not None
    others = [c for c in pool if c != value]
    closest = [] if numbers else close_matches(value, others, n=3, cutoff=0.5)
    renamed = _renamed(value, spans, accepted)
    text = []
    everything = hist.everything
    # releases where the option takes any word (no fixed choices): the value passes there
    plain = [sp for sp in hist.spans(flag) if sp.get("type") in (None, "str")]
    free = _ords(sp for sp in plain if not sp.get("choices"))
    since = max(everything) if free and max(everything) in free else None
    while since is not None and since - 1 in free:  # (the newest run of such releases)
        since -= 1
    # (the newest release takes any value: the value is right there, no other to guess) --
    # unless argparse listed choices: the user's release has them, and a declaration kverr
    # read as taking any value may build its choices in code (`list(Parsers.keys())`)
    anything_newest = since is not None and not listed
    if anything_newest:
        text.append(
            f"From {hist.at(since)} on, {flag} takes any value (no fixed choices), {shown} included:"
            " upgrade, or choose a value your release accepts."
        )
    elif since is not None:
        text.append(
            f"From {hist.at(since)} on, {flag} declares no fixed list of choices (it takes any"
            " value, or builds the list in code); your release printed its own."
        )
        known = _ords(spans)  # (releases whose declaration lists its choices)
        if accepted:
            text.append(f"{shown} is a choice of {flag} in {hist.text(accepted)}.")
        elif known:
            text.append(
                f"{shown} is not a choice of {flag} in the {product} {hist.unit}s whose choices"
                f" kverr reads ({hist.text(known)})."
            )
    elif accepted:
        when = hist.text(accepted)
        declared = _ords(hist.spans(flag))
        later = {n for n in declared if n > max(accepted)}
        if later and not later <= free:  # (a later release kverr reads lacks it)
            after = hist.at(hist.after(max(accepted)))
            what = f"renamed to {renamed}" if renamed else "removed"
            text.append(
                f"{shown} was a choice of {flag} in {when}; from {after} on it is not ({what}?)."
            )
        else:
            text.append(
                f"{shown} is a choice of {flag} from {hist.at(min(accepted))} on: upgrade,"
                " or choose a value your release accepts."
            )
    else:
        text.append(
            f"{shown} is not a choice of {flag} in any {product} {hist.unit} in this catalog"
            f" ({hist.text(everything)})."
        )
    if yours:
        text.append(f"The choices argparse listed are exactly those of {hist.text(yours)}.")
    if listed:
        text.append(f"Your release accepts: {', '.join(listed)}.")
    elif newest:
        text.append(
            f"The newest {hist.unit} ({hist.at(newest['to'])}) accepts:"
            f" {', '.join(newest['choices'])}."
        )
    pick = renamed if renamed and (not listed or renamed in listed) else (closest or [None])[0]
    pick = None if anything_newest else pick
    if pick:
        text.append(f"Did you mean {pick}?")
    return {
        "value": value,
        "choices": [
            {"releases": hist.names(ords), "range": hist.text(ords), "choices": list(key)}
            for key, ords in reversed(groups)
        ],
        "acceptedIn": hist.names(accepted),
        "renamedTo": renamed,
        "closest": closest,
        "yourReleases": hist.names(yours),
        "text": text,
        "example": _example(flag, value, pick) if pick else None,
    }


def _renamed(value: str, spans: list[dict], accepted: set[int]) -> str | None:
    """The choice that took `value`'s place: new in the first declaration after the last one
    accepting it, and close to it by name."""
    if not accepted:
        return None
    last = max(accepted)
    before = next((sp for sp in spans if sp["from"] <= last <= sp["to"]), None)
    after = next((sp for sp in spans if sp["from"] > last), None)
    if before is None or after is None:
        return None
    new = [c for c in after["choices"] if c not in before["choices"]]
    close = close_matches(value, new, n=1, cutoff=0.4)
    return close[0] if close else (new[0] if len(new) == 1 else None)


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_TYPE_WORDS = {"int": "an integer", "float": "a number", "loads": "JSON text", "str": "text"}


def _typed(
    hist: History, flag: str, values: dict[str, str], product: str, *, expected: bool
) -> dict:
    spans = [sp for sp in hist.spans(flag) if sp.get("options")]
    groups = hist.groups(
        "typed", flag, spans, lambda sp: (conversion(sp) or sp.get("type") or "", sp.get("default"))
    )
    rows = [
        {"releases": hist.names(ords), "range": hist.text(ords), "type": kind or None,
         "default": default}
        for (kind, default), ords in reversed(groups)
    ]  # fmt: skip
    newest = spans[-1] if spans else {}
    kind = conversion(newest) or newest.get("type") or ""
    word = _TYPE_WORDS.get(kind, kind and f"a {kind} value")
    known = [r for r in rows if r["default"] is not None]
    # two defaults say when it changed; more are the card's "Declared" rows: the newest here
    defaults = "; ".join(
        f"default {r['default']} in {r['range']}" if len(known) > 1 else f"default {r['default']}"
        for r in known[: 2 if len(known) == 2 else 1]
    )
    text = []
    value = _bare(values.get("value", ""))
    shown = values.get("value", "").strip() or repr(value)  # as argparse printed it
    if expected:
        count = expected_count(newest) or "one"
        what = {"one": "one value", "at least one": "one or more values"}.get(
            count, f"{count} values"
        )
        detail = "; ".join(x for x in (word, defaults) if x)
        text.append(f"{flag} takes {what}{f' ({detail})' if detail else ''}, and none followed it.")
        text.append(
            f"Write the value right after it, or leave {flag} out to keep its default; a value"
            f" that starts with '-' is written {flag}=VALUE."
        )
        if newest.get("choices"):
            text.append(f"It accepts: {', '.join(newest['choices'])}.")
    else:
        text.append(
            f"{flag} takes {word or 'a value of its type'}"
            f"{f' ({defaults})' if defaults else ''}: {shown} is not one."
        )
    good = next((r["default"] for r in rows if literal_default(r["default"])), None)
    return {
        "value": value if not expected else None,
        "type": kind or None,
        "declarations": rows,
        "text": text,
        "example": _example(flag, None if expected else value, literal_default(good)),
    }


_OPTION = re.compile(r"--?[A-Za-z][\w.-]{0,120}")


def _stray(args: str, program: str | None, product: str, facts: dict) -> dict | None:
    """An `unrecognized arguments` list of values only: argparse met them where its parser
    takes no positional argument (a value whose option was left out, or the model given to
    a program that takes it as an option). Known only when the program is the project's."""
    words = args.split()[:MAX_OPTIONS]
    if not words or program is None:
        return None
    launch = facts.get("launch")
    how = f" {product} is launched as `{launch}`." if launch else ""
    text = [
        f"{words[0]} is no option, and {program} takes no positional argument there: give it"
        f" after the option it is the value of.{how}"
    ]
    return {"options": [], "known": True, "text": text, "example": {}}


def _unrecognized(
    hist: History, args: str, product: str, others: list[tuple[str, History]] = ()
) -> dict | None:
    """Each option of an `unrecognized arguments` list: the releases that have it, or when it
    went and what replaced it, or the other project of the catalog it belongs to (one engine's
    flag given to the other), or the closest names. `others`: (product, History) of those."""
    tokens = [
        t.split("=", 1)[0] for t in args.split()[:200] if _OPTION.fullmatch(t.split("=", 1)[0])
    ]
    tokens = list(dict.fromkeys(tokens))[:MAX_OPTIONS]
    if not tokens:
        return None
    everything = hist.everything
    rows, text, known = [], [], False
    for tok in tokens:
        ords = hist.accepted(tok)
        row: dict[str, Any] = {"option": tok, "releases": hist.names(ords), "closest": []}
        if ords == everything:
            known = True
            text.append(
                f"Every {product} {hist.unit} in this catalog has {tok} ({hist.text(ords)}): this"
                " error comes from another parser (another program or command), or from a"
                f" {hist.unit} older than {hist.at(min(ords))}."
            )
        elif ords:
            known = True
            first, last = min(ords), max(ords)
            if last < max(everything):
                gone = hist.after(last)
                after, renamed = hist.at(gone), _renamed_option(hist, tok, gone)
                successor = None if renamed else _successor(hist, tok, gone)
                if successor:
                    text.append(
                        f"{tok} was removed in {after} (it exists in {hist.text(ords)} only);"
                        f" use {successor} instead."
                    )
                else:
                    what = f"; renamed to {renamed}?" if renamed else ""
                    text.append(
                        f"{tok} exists in {hist.text(ords)} only (removed in {after}{what})."
                    )
                row["removedIn"], row["renamedTo"] = after, renamed
                row["successor"] = successor
                row["closest"] = [renamed or successor] if renamed or successor else []
            else:
                text.append(
                    f"{tok} exists from {hist.at(first)} on ({hist.text(ords)}): upgrade, or"
                    " leave it out."
                )
                row["addedIn"] = hist.at(first)
        else:
            row["closest"] = _close_options(tok, hist.options())
            guess = f"; did you mean {' or '.join(row['closest'])}?" if row["closest"] else "."
            text.append(f"No {product} {hist.unit} in this catalog has {tok}{guess}")
            # (another project's option says nothing of whose parser printed the line)
            known = known or bool(row["closest"])
            theirs = _theirs(hist, tok, product, others)
            if theirs:
                text.append(theirs[0])
                row["closest"] = row["closest"] or theirs[1]
        rows.append(row)
    first = rows[0]
    fix = (first["closest"] or [None])[0]
    return {
        "options": rows,
        "known": known,
        "text": text,
        "example": _example(first["option"], None, None, replace=fix),
    }


def _ambiguous(hist: History, values: dict[str, str], product: str) -> dict | None:
    """`ambiguous option: --model could match --model-impl, --model-loader-extra-config`: the
    abbreviation, each option it could be and the releases that have it."""
    option = values.get("option", "").split("=", 1)[0].strip()
    meant = [o.strip() for o in values.get("options", "").split(",")[:MAX_OPTIONS]]
    meant = [o for o in meant if _OPTION.fullmatch(o)]
    if not _OPTION.fullmatch(option) or not meant:
        return None
    rows = [{"option": o, "releases": hist.names(hist.accepted(o))} for o in meant]
    known = any(r["releases"] for r in rows)
    text = [
        f"{option} is no whole option name here, and argparse reads a shortened name only when"
        f" one option starts with it: {', '.join(meant)} all do. Write the full name of the one"
        " you meant."
    ]
    own = hist.accepted(option)
    if own:
        text.append(
            f"{option} itself is an option of {hist.text(own)}: this parser is another"
            f" command's, or a release without it."
        )
    return {
        "options": rows,
        "known": known or bool(own),
        "text": text,
        "example": _example(option, None, None, replace=f"{meant[0]} VALUE"),
    }


def _required(hist: History, values: dict[str, str], product: str, launch: str) -> dict | None:
    """`the following arguments are required: --model-path`: each argument, and the releases
    whose parser has it; a positional one (`model_tag`) is the word after the command, as the
    project's launch (`tool serve MODEL`) shows."""
    names = [a.strip() for a in values.get("arguments", "").split(",")[:MAX_OPTIONS]]
    names = [a for a in names if a and " " not in a]
    if not names:
        return None
    rows, text, known = [], [], False
    for name in names:
        ords = hist.accepted(name) if name.startswith("-") else set()
        known = known or bool(ords)
        rows.append({"option": name, "releases": hist.names(ords)})
        where = f" ({product} {hist.text(ords)})" if ords else ""
        if name.startswith("-"):
            text.append(f"Add {name} VALUE: the parser requires it{where}.")
        else:
            shown = f", as in `{launch}`" if launch else ""
            text.append(
                f"Add the {name} argument: the parser requires it, as a word after the"
                f" command with no option name before it{shown}."
            )
    first = names[0]
    after = f"{first} VALUE" if first.startswith("-") else first.upper()
    return {
        "options": rows,
        "known": known,
        "text": text,
        "example": {"before": "", "after": after},
    }


def _close_options(option: str, options: NameIndex, n: int = 3) -> list[str]:
    """Option names close to `option`, compared without their dashes (`--user` is not close
    to `--ep`: two dashes of four characters would make it so). `options`: the names, as
    `NameIndex.of_options` keeps them."""
    return [options.full[c] for c in options.close(option.lstrip("-"), n, CLOSE)]


def close_matches(word: str, possibilities: list[str], n: int, cutoff: float) -> list[str]:
    """difflib.get_close_matches(word, possibilities, n, cutoff): the same list, in the same
    order. difflib's cheap bound (quick_ratio, the characters both share) is a Python loop over
    each name, 3 ms for an unknown option against a project's thousand names; here it is one
    intersection of two sets in C (`_bag`), and SequenceMatcher runs on the few names that
    pass, as there."""
    return _closest(word, possibilities, [_bag(x) for x in possibilities], n, cutoff)


def _closest(
    word: str, names: list[str], bags: list[frozenset], n: int, cutoff: float
) -> list[str]:
    s = difflib.SequenceMatcher()
    s.set_seq2(word)
    bag, lw = _bag(word), len(word)
    found = []
    for x, bx in zip(names, bags, strict=True):
        total = lw + len(x)
        if total and (
            2.0 * min(lw, len(x)) / total < cutoff or 2.0 * len(bag & bx) / total < cutoff
        ):
            continue  # (real_quick_ratio, then quick_ratio: difflib's bounds, as it computes them)
        s.set_seq1(x)
        if (r := s.ratio()) >= cutoff:
            found.append((r, x))
    # (heapq.nlargest of (ratio, name): the order the names were tried in changes nothing)
    return [x for _, x in heapq.nlargest(n, found)]


class NameIndex:
    """Names asked for close matches again and again (a project's thousand option names, for
    every unknown option of every paste): kept in order of length with their bags, so a word
    is compared with the names whose length can pass difflib's first bound (real_quick_ratio,
    2 * min(len) / total), a window found by bisect, instead of with each of them.
    `close(word, n, cutoff)` is `close_matches(word, names, n, cutoff)`."""

    def __init__(self, full: dict[str, str]) -> None:
        self.full = full  # name compared -> the name answered (an option as written)
        self.names = sorted(full, key=len)
        self.lens = [len(x) for x in self.names]
        self.bags = [_make_bag(x) for x in self.names]

    @classmethod
    def of_options(cls, options: list[str]) -> NameIndex:
        """Option names, compared without their dashes (of two that differ only there, the
        later one is answered)."""
        return cls({name.lstrip("-"): name for name in options})

    def close(self, word: str, n: int, cutoff: float) -> list[str]:
        lw = len(word)
        lo, hi = 0, len(self.names)
        if 0 < cutoff < 2:  # 2*lx/(lw+lx) >= c below lw, 2*lw/(lw+lx) >= c above (one of slack)
            lo = bisect.bisect_left(self.lens, int(cutoff * lw / (2 - cutoff)) - 1)
            hi = bisect.bisect_right(self.lens, int(lw * (2 - cutoff) / cutoff) + 1)
        return _closest(word, self.names[lo:hi], self.bags[lo:hi], n, cutoff)


def _make_bag(text: str) -> frozenset[tuple[str, int]]:
    """The characters of `text` as a set of (character, how many came before it): the size of
    two bags' intersection is the multiset intersection difflib's quick_ratio counts."""
    seen: dict[str, int] = {}
    out = []
    for c in text:
        k = seen.get(c, 0)
        seen[c] = k + 1
        out.append((c, k))
    return frozenset(out)


# `_make_bag`, remembered (the lists `close_matches` gets repeat their names)
_bag = functools.lru_cache(maxsize=1 << 14)(_make_bag)


def _renamed_option(hist: History, option: str, gone: int) -> str | None:
    """The option that took `option`'s place: first accepted in the revision that dropped it,
    and close to it by name (`--kt-amx-method` -> `--kt-method`)."""
    close = _close_options(option, hist.new_options(gone), n=1)
    return close[0] if close else None


def _theirs(
    hist: History, option: str, ours: str, others: list[tuple[str, History]]
) -> tuple[str, list[str]] | None:
    """(a sentence, the options of ours it names) when `option` is another project's: users
    carry flags from one engine to the other. Its successor there, when the other project
    replaced it, is named when ours has the same option (`--enable-reasoning`, replaced by
    `--reasoning-parser` in the other, which this one has too)."""
    for product, other in others:
        ords = other.accepted(option)
        if not ords:
            continue
        said = f"{option} is an option of {product} ({other.text(ords)})"
        last = max(ords)
        if last < max(other.everything):
            successor = _successor(other, option, other.after(last))
            name = successor.split()[0] if successor else ""
            if name and hist.accepted(name):
                return (
                    f"{said}, replaced there by {name}, which {ours} has too:"
                    f" use {successor} instead.",
                    [name],
                )
        return f"{said}, not of {ours}.", []
    return None


_SWITCH_WORDS = frozenset({"enable", "disable", "use", "no", "with", "allow"})


def _successor(hist: History, option: str, gone: int) -> str | None:
    """The option that does what a removed switch did, when the history shows one: accepted in
    the revision that dropped it, and the one option there that shares the most of its words
    besides enable/disable/use (`--enable-reasoning` -> `--reasoning-parser NAME`), with a
    placeholder for its value when it takes one. A word many options there have counts for
    less (`--speculative-model` -> `--speculative-config`, not `--model`). The option its own
    help named in its place comes first, when that revision accepts it ("Please use
    '--attention-backend flashinfer' instead")."""
    said = next((sp["successor"] for sp in reversed(hist.spans(option)) if sp.get("successor")), "")
    if said and any(lo <= gone <= hi for lo, hi in hist.runs.get(said.split()[0], ())):
        name, _, value = said.partition(" ")
        there = [sp for sp in hist.spans(name) if sp["from"] <= gone <= sp["to"]]
        choices = [str(c) for c in (there[-1].get("choices") or ())] if there else []
        if value and choices and value not in choices:
            # (a help's own typo, "--sampling-backend pytroch": the choice it meant)
            near = close_matches(value, choices, 1, CLOSE)
            said = f"{name} {near[0]}" if near else name
        return said
    words = set(option.lstrip("-").split("-")) - _SWITCH_WORDS
    if not words:
        return None
    there = [
        o
        for o, runs in hist.runs.items()
        if o != option and any(lo <= gone <= hi for lo, hi in runs)
    ]
    named = {o: set(o.lstrip("-").split("-")) for o in there}
    df = {w: sum(w in ws for ws in named.values()) for w in words}
    scored = []
    for other, ws in named.items():
        weight = sum(1 / df[w] for w in words & ws)
        if weight:
            scored.append((-weight, len(other), other))
    scored.sort()
    if not scored or (len(scored) > 1 and scored[1][0] == scored[0][0]):
        return None  # nothing shares its words, or two options do as much: no guess
    name = scored[0][2]
    spans = hist.spans(name)
    newest = spans[-1] if spans else {}
    if not newest or is_switch(newest) or not takes_value(newest):
        return name
    return f"{name} {'N' if newest.get('type') in ('int', 'float') else 'NAME'}"


def _groups(spans: list[dict], key) -> list[tuple[Any, frozenset[int]]]:
    """Spans with the same key merged, wherever they are (a declaration that changed in other
    ways in between is still the same row): one row per distinct key, oldest first by the
    newest revision it covers."""
    out: dict[Any, set[int]] = {}
    for sp in spans:
        out.setdefault(key(sp), set()).update(range(sp["from"], sp["to"] + 1))
    return sorted(((k, frozenset(v)) for k, v in out.items()), key=lambda kv: max(kv[1]))


def _example(flag: str, bad: str | None, good: str | None, *, replace: str | None = None) -> dict:
    """The pasted option as it was and as it should be: before/after argument fragments."""
    before = f"{flag} {bad}" if bad else flag
    if replace is not None:
        return {"before": before, "after": replace}
    return {"before": before, "after": f"{flag} {good}" if good else ""}


def prune(matches: list) -> list:
    """Where several projects answer one line (each project's records match the same text),
    keep the answers that know the most: of the generic `unrecognized arguments` ones, those
    naming an option some release has, else the closest names; of the `invalid choice` ones,
    those whose releases list exactly the choices argparse printed."""
    drop: set[int] = set()
    by_line: dict[Any, list] = {}
    for m in matches:
        if m.argparse:
            by_line.setdefault(m.line, []).append(m)
    for group in by_line.values():
        generic = [
            m for m in group if m.argparse["form"] == "unrecognized" and m.argparse["flag"] is None
        ]
        if len(generic) > 1:
            top = max(_knows(m) for m in generic)
            drop |= {id(m) for m in generic if _knows(m) < top}
        choice = [m for m in group if m.argparse["form"] == "invalid-choice"]
        if len(choice) > 1 and any(m.argparse["yourReleases"] for m in choice):
            drop |= {id(m) for m in choice if not m.argparse["yourReleases"]}
    return [m for m in matches if id(m) not in drop]


def _knows(m: Any) -> float:
    """2 when an option of the list exists in some release, else the best closeness."""
    best = 0.0
    for row in m.argparse["options"]:
        if row["releases"]:
            return 2.0
        for c in row["closest"]:
            best = max(best, difflib.SequenceMatcher(None, row["option"], c).ratio())
    return best
