"""What to do with the user's own values: `personalize` gives each match the fix of the user's
own launch when the paste holds one (verify/preflight.py runs it through the release's
checks), and otherwise `advise`s from the values the message captured: the record's own
condition ("so that `64 % --page-size == 0` is true", written by records/knowledge) solved
for one option, with every other option at the value the message printed.

    advise(record, values) -> ["With --tp-size 4, use --dp-size 4, 2 or 1."]

A launch-path check often reads values under names no option has: the project's `[advice]`
table says which option sets one (`context_len` is --context-length) and which options a
bound grows with (the KV pool with the memory fraction), and what still limits a value
raised. Printed expressions (`len(ids)`, `GiB(free)`) are bound to their numbers, and the
message's own instruction with a value (`--dtype=half`, `APP_ALLOW_X=1`) is a line too, and so
is a record's verified fix of one option's word when the paste sets that option to the word
the fix replaces (`--attention-backend trtllm_mha` beside the SM100 check: use triton). Three
kinds of printed value say what to change by themselves: a list that names a value twice where
the check refuses repeats, a timeout that ran out, and a path the check found nothing at.

The condition is evaluated by a small interpreter over numbers (arithmetic, comparisons,
`and`/`or`/`not`, a few numeric calls); anything else in it (another call, a name that is no
option) and no advice is given. Candidate values come from the numbers at hand (their divisors
and multiples, powers of two, the captured value's neighbours), nearest to the captured value
first.
"""

from __future__ import annotations

import ast
import math
import operator
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kverr import DEFAULT_PROJECT
from kverr.profile import AdviceRules
from kverr.relations import KEYED, option_name, options_expr, stated
from kverr.relations import OPTION as _OPTION

_CONDITION = re.compile(r"so that `([^`]{1,300})` is (true|false)")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_WORD = re.compile(r"[A-Za-z_]\w{0,40}")  # a value printed as one word: `gptq`, `decoder`
_QUALIFIED = re.compile(r"(?:[A-Za-z_]\w{0,40}\.){0,3}[A-Za-z_]\w{0,40}")  # `torch.float16`
_LISTED = re.compile(r"[\[{(]([^\[\]{}()]{0,400})[\]})]")


def _number(text: Any) -> float | None:
    """The number a placeholder printed; None when it printed anything else."""
    n = _NUMBER.fullmatch(text.strip()) if isinstance(text, str) else None
    return float(n.group()) if n else None


def _plain_value(text: Any) -> float | str | None:
    """A printed number, or a value printed as one word (kept as text; `torch.float16` as the
    word a command line gives, `float16`); else None."""
    if isinstance(text, str) and _QUALIFIED.fullmatch(text.strip()):
        return text.strip().rpartition(".")[2]
    return _number(text)


def _members(text: Any) -> tuple[float | str, ...] | None:
    """The values of a printed list, set or tuple (`[torch.float16]`, `{'fa3', 'triton'}`), each
    a number or a word; None when it printed anything else."""
    m = _LISTED.fullmatch(text.strip()) if isinstance(text, str) else None
    if m is None:
        return None
    items = [_plain_value(t.strip().strip("'\"")) for t in m.group(1).split(",") if t.strip()]
    return tuple(items) if items and None not in items else None  # type: ignore[return-value]


SHOWN = 3  # values offered per option


def advise(
    record: Mapping[str, Any],
    values: Mapping[str, str],
    keep: Sequence[str] = (),
    text: str = "",
    rules: AdviceRules | None = None,
) -> list[str]:
    """Concrete values for the record's condition, from what the message captured (module doc)
    and, for an option it did not print, the value the pasted `text` gives it (`--tp 24` in a
    quoted command, `gpu_memory_utilization=0.1` in a script); a change of an option in `keep`
    (what hardware the launch has) is offered last, and fewer of it before more. `rules`: the
    project's `[advice]` (values its checks read under names no option has, and what still
    bounds a value raised)."""
    rules = rules or AdviceRules()
    dests = _dests(record, rules.derived)
    caveats = dict(rules.caveats)
    known = {**_pasted_values(dests, text), **_option_values(dests, values)}
    constants = _constants(values)
    if not known and not values:
        swapped = _swapped(record, text, []) + _no_such_path(record, values, dests, text)
        swapped += _as_the_word(record, text, rules.positional)
        return swapped + _instructions(record, values, set(dests.values()), swapped)
    out: list[tuple[bool, str]] = [
        (False, line)
        for line in [
            *_directions(record, values, known, dests, caveats),
            *_one_of(record, known),
            *_each_once(record, values, text),
            *_waited(record, values, dests),
            *_no_such_path(record, values, dests, text),
            *_as_the_word(record, text, rules.positional),
        ]
    ]
    for cond, want in _conditions(record, dests, rules.computed):
        env = {**constants, **{option_name(o): v for o, v in known.items()}}
        raised = _raised(record, cond, want, env, values, known, rules, text)
        cond, printed = _bind_printed(cond, values, dests)
        cond, converted = _bind_converted(cond, values, known)
        bound = {**constants, **printed, **converted}
        for free in dict.fromkeys(_OPTION.findall(cond)):
            line = _solve(
                cond, want, free, known, bound, fewer=free in keep, caveat=caveats.get(free)
            )
            if line and all(line != seen for _, seen in out):
                out.append((free in keep, line))
        out += [(False, line) for line in raised if all(line != seen for _, seen in out)]
    lines = [line for _, line in sorted(out, key=lambda item: item[0])]
    lines += _swapped(record, text, lines)
    return lines + _instructions(record, values, set(dests.values()), lines)


def _dests(record: Mapping[str, Any], derived: Sequence[tuple[str, str]]) -> dict[str, str]:
    """Name in the code -> the option it is: each of the record's flags by its dest
    (`tp_size`), and the profile's derived values (`context_len`) its check reads or its
    message prints."""
    out = {f.lstrip("-").replace("-", "_"): f for f in record.get("flags") or ()}
    for expr in record.get("placeholders") or ():
        # a local named after the option it holds (`task_option` for --task)
        base = re.sub(r"_(?:option|value|arg)$", "", expr)
        if base != expr and base in out:
            out.setdefault(expr, out[base])
    reads = " ".join([record.get("triggerScenarios") or "", *(record.get("placeholders") or ())])
    for name, flag in derived:
        if name not in out and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", reads):
            out[name] = flag
    return out


def _caveated(line: str, caveat: str | None) -> str:
    return f"{line} {caveat[:1].upper()}{caveat[1:]}." if caveat else line


# What a message tells the user to do with a value: "for example: --dtype=half", "set the env
# var APP_ALLOW_LONG=1", "Launch with --max-model-len {estimated}" (a value it printed)
_INSTRUCTED = re.compile(r"\b(?:use|set|setting|try|pass|launch with|for example|e\.g\.)\b", re.I)
# (a value ends where the sentence goes on: `0-31|32-63` is no `0`)
_VALUE = r"(\{[^{}]{1,120}\}|[A-Za-z0-9_]{1,40}(?:\.[A-Za-z0-9_]{1,40})?)(?=[.,;:)'\"`]*(?:\s|$))"
_SAID_OPTION = re.compile(rf"(?<![\w-])(--[a-z0-9][a-z0-9-]{{0,80}})(=| ){_VALUE}")
_SAID_ENV = re.compile(rf"(?<![\w])([A-Z][A-Z0-9]{{0,20}}_[A-Z0-9_]{{1,80}})={_VALUE}")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`'\"(])")


def _instructions(
    record: Mapping[str, Any], values: Mapping[str, str], options: set[str], said: Sequence[str]
) -> list[str]:
    """The message's own instructions with a value, a line per sentence: an option of the
    record set to a word, a number or a value the message printed (an option a line in `said`
    already offers values for is left to it), or a variable set to one. Only what follows an
    instructing word counts: "--x=4 requires Y" describes the launch, it does not fix it."""
    out = []
    for sentence in _SENTENCE_END.split(record.get("errorMessage") or ""):
        verb = _INSTRUCTED.search(sentence)
        tail = sentence[verb.start() :] if verb else ""
        items: list[tuple[int, int, str]] = []  # (start, end, what to do)
        for m in _SAID_OPTION.finditer(tail):
            flag, value = m.group(1), _said_value(m.group(3), values)
            numeric = value is not None and _NUMBER.fullmatch(value)
            if flag in options and value is not None and (m.group(2) == "=" or numeric):
                if not any(flag in line for line in said):
                    items.append((m.start(), m.end(), f"use {flag} {value}"))
        for m in _SAID_ENV.finditer(tail):
            value = _said_value(m.group(2), values)
            if value is not None:
                items.append((m.start(), m.end(), f"set {m.group(1)}={value}"))
        if not items:
            continue
        items.sort()
        between = tail[items[0][1] : items[-1][0]]
        joined = f" {'or' if ' or ' in f' {between} ' else 'and'} ".join(
            dict.fromkeys(t for _, _, t in items)
        )
        out.append(f"{joined[:1].upper()}{joined[1:]}, as the message says.")
    return list(dict.fromkeys(out))


def _said_value(text: str, values: Mapping[str, str]) -> str | None:
    """A value as the message said it: a literal, or a placeholder's printed value (a plain
    word or number only; None when the paste did not print it)."""
    if not text.startswith("{"):
        return text
    value = (values.get(text[1:-1]) or "").strip()
    return value if _NUMBER.fullmatch(value) or _WORD.fullmatch(value) else None


# "Launching when `max_model_len > derived_max_model_len` is true, ...": the trigger's clauses
_CLAUSE = re.compile(r"`([^`]{1,300})` is (true|false)")
# a name in a clause that may be an option's dest: `self.tp_size` or `tp_size`, not a call
_DEST = re.compile(r"(?<![\w.-])(?:self\.)?([a-z_][a-z0-9_]{0,80})\b(?!\s*\()")


def _conditions(
    record: Mapping[str, Any], dests: Mapping[str, str], computed: Sequence[tuple[str, str]] = ()
) -> list[tuple[str, bool]]:
    """(condition over --options, the truth value that passes the check): the record's own
    ("so that `cond` is true", "Make --a a multiple of --b": kverr.relations reads the
    words back), else each clause of its trigger wanted the other way, its
    dests written as the options that set them and the profile's `computed` names as what
    they compute (any one clause undone stops the check)."""
    exprs = {name: f"({expr})" for name, expr in computed}

    def options(clause: str) -> str:
        # (what a computed name stands for may be a derived name in turn: `context_len`)
        clause = _DEST.sub(lambda d: exprs.get(d.group(1), d.group(0)), clause)
        return _DEST.sub(lambda d: dests.get(d.group(1), d.group(0)), clause)

    solutions = record.get("solutions") or ()
    own = [
        (m.group(1), m.group(2) == "true") for s in solutions for m in [_CONDITION.search(s)] if m
    ]
    own += [said for s in solutions if s.startswith("Make ") for said in stated(s)]
    if own:
        return [(options(cond), want) for cond, want in own]
    trigger = record.get("triggerScenarios") or ""
    clauses = [(m.group(1), m.group(2) == "true") for m in _CLAUSE.finditer(trigger)]
    return [(options(cond), not holds) for cond, holds in clauses + stated(trigger)]


def _bind_printed(
    cond: str, values: Mapping[str, str], dests: Mapping[str, str]
) -> tuple[str, dict[str, float]]:
    """`len(prompt_ids) > --max-model-len` when the message printed `len(prompt_ids)`: each
    printed expression that is no plain name, as a name bound to the number printed. An
    option's dest in it reads as the option, as in the condition (`len(self.lora_paths)` is
    `len(--lora-paths)`)."""
    bound: dict[str, float] = {}
    for i, expr in enumerate(sorted(values, key=len, reverse=True)):
        n = _number(values[expr])
        if expr.isidentifier() or n is None:
            continue
        name = f"printed_{i}"
        as_options = _DEST.sub(lambda d: dests.get(d.group(1), d.group(0)), expr)
        if as_options in dests.values():
            continue  # (an option's own value: the solver's to move, not a constant)
        for spelled in dict.fromkeys([expr, as_options]):
            cond, hits = re.subn(rf"(?<![\w.]){re.escape(spelled)}(?!\w)", name, cond)
            if hits:
                bound[name] = n
    return cond, bound


# `GiB(init_snapshot.free_memory)`: a quantity printed through a function of one argument
_CONVERTED = re.compile(r"([A-Za-z_][\w.]{0,60})\(([A-Za-z_][\w.]{0,120})\)")


def _bind_converted(
    cond: str, values: Mapping[str, str], known: Mapping[str, float | str]
) -> tuple[str, dict[str, float]]:
    """`free < total * --gpu-memory-utilization` when the message printed `GiB(free)` and
    `GiB(total)`: quantities printed in one unit stand in for the raw ones the condition
    reads, when nothing else in it has a unit (no other printed value, the options it reads
    fractions): scaling both sides of a comparison alike keeps its truth."""
    units: dict[str, dict[str, float]] = {}
    for expr, text in values.items():
        m = _CONVERTED.fullmatch(expr)
        n = _number(text)
        if m and n is not None:
            units.setdefault(m.group(1), {})[m.group(2).removeprefix("self.")] = n

    def at(name: str) -> str:
        return rf"(?<![\w.])(?:self\.)?{re.escape(name)}(?!\w)"

    read = {f: {k: v for k, v in q.items() if re.search(at(k), cond)} for f, q in units.items()}
    read = {f: q for f, q in read.items() if q}
    plain = [e for e in values if e.isidentifier() and re.search(at(e), cond)]
    fractions = all(
        isinstance(known.get(o), float) and 0 < known[o] < 1 for o in _OPTION.findall(cond)
    )
    if len(read) != 1 or plain or not fractions:
        return cond, {}
    (quantities,) = read.values()
    if len(quantities) < 2:
        return cond, {}
    bound = {}
    for i, (name, value) in enumerate(quantities.items()):
        cond = re.sub(at(name), f"converted_{i}", cond)
        # back at a raw quantity's scale (GiB to bytes), where the condition's own rounding
        # (`math.ceil(total * fraction)`) moves nothing
        bound[f"converted_{i}"] = value * 2**30
    return cond, bound


# `--mem-fraction-static 0.84`, `--max-model-len=8192`, `gpu_memory_utilization=0.1`,
# `tp_size: 8`: a value the paste gives an option outside the message (a command, a script,
# a config it quotes)
_FLAG_VALUE = re.compile(r"(?:=|[ \t]+)(-?\d+(?:\.\d+)?)(?![\w.])")
_NAME_VALUE = re.compile(r"[ \t]*[=:][ \t]*(-?\d+(?:\.\d+)?)(?![\w.])")


def _pasted_values(dests: Mapping[str, str], text: str) -> dict[str, float]:
    """--option -> the number the paste last sets it to, by its own spelling or its dest;
    only the record's options."""
    found = _pasted(dests.values(), text, _FLAG_VALUE, _NAME_VALUE)
    return {flag: float(value) for flag, value in found.items()}


def _pasted(
    flags: Iterable[str], text: str, after_flag: re.Pattern[str], after_name: re.Pattern[str] | None
) -> dict[str, str]:
    """--option -> what the paste last sets it to: `after_flag` read after the option's own
    spelling, `after_name` after its dest (none: the option's spelling only)."""
    out: dict[str, str] = {}
    for flag in dict.fromkeys(flags):
        names = [(flag, after_flag)]
        if after_name is not None:
            names.append((flag[2:].replace("-", "_"), after_name))
        for name, value in names:
            at = text.rfind(name)
            while at >= 0 and flag not in out:
                end = at + len(name)
                edges = text[at - 1 : at] + text[end : end + 1]
                if not any(c.isalnum() or c in "_-" for c in edges):
                    m = value.match(text, end, end + 48)
                    if m:
                        out[flag] = m.group(1)
                at = text.rfind(name, 0, at)
    return out


# `--attention-backend trtllm_mha`, `--dtype=half`, `attention_backend="triton"`: a word the
# paste gives an option, quoted or not, where the sentence goes on after it
_WORD_END = r"([A-Za-z_][\w.-]{0,40}?)(?=[`'\".,;:)]*(?:\s|$))"
_FLAG_WORD = re.compile(rf"(?:=|[ \t]+)[`'\"]?{_WORD_END}")
_NAME_WORD = re.compile(rf"[ \t]*[=:][ \t]*[`'\"]?{_WORD_END}")


def _swapped(record: Mapping[str, Any], text: str, said: Sequence[str]) -> list[str]:
    """The record's verified fix of one option's word (`--attention-backend trtllm_mha` ->
    `triton`), when the paste sets that option to that very word: the check fired on it. Not
    for numbers, whose example values fit the example's other options rather than the user's;
    nor for an option a line in `said` already offers values for, or that the message itself
    spells with that word."""
    if (record.get("verification") or {}).get("status") != "verified":
        return []
    change = _changed(record.get("exampleFix") or "")
    if change is None:
        return []
    flag, old, new = change
    message = record.get("errorMessage") or ""
    spelt = [f"{name}{s}{old}" for name in (flag, flag[2:].replace("-", "_")) for s in (" ", "=")]
    if any(flag in line for line in said) or any(s in message for s in spelt):
        return []
    if _pasted([flag], text, _FLAG_WORD, _NAME_WORD).get(flag) != old:
        return []
    return [f"Use {flag} {new} (not {old})."]


def _changed(example_fix: str) -> tuple[str, str, str] | None:
    """(option, word before, word after) when an example fix's two launches differ in one
    option's word value and nothing else."""
    lines = example_fix.splitlines()
    if len(lines) != 4 or lines[0] != "# before" or lines[2] != "# after":
        return None
    try:
        before, after = shlex.split(lines[1]), shlex.split(lines[3])
    except ValueError:
        return None
    differ = [i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b]
    if len(before) != len(after) or len(differ) != 1 or differ[0] == 0:
        return None
    at = differ[0]
    flag, old, new = before[at - 1], before[at], after[at]
    if not flag.startswith("--") or not all(_WORD.fullmatch(w) for w in (old, new)):
        return None
    return flag, old, new


def _constants(values: Mapping[str, str]) -> dict[str, float | str]:
    """Numbers (and single words: `prompt_type` "decoder") the message printed under a plain
    name (`total_num_attention_heads`): a condition that reads one takes it as printed."""
    out: dict[str, float | str] = {}
    for expr, text in values.items():
        value = _plain_value(text) if expr.isidentifier() else None
        value = _members(text) if value is None and expr.isidentifier() else value
        if value is not None:
            out[expr] = value
    return out


# "try to increase --mem-fraction-static", "Try increasing `gpu_memory_utilization` or
# decreasing `max_model_len`": a message that says which way to move an option
_DIRECTION = re.compile(
    r"\b(increas|rais|larger|bigger|decreas|reduc|lower|smaller)\w*\s+(?:the\s+)?"
    r"[`'\"]?(--[a-z0-9-]{1,80}|[a-z][a-z0-9_]{1,80})"
    # "set --mem-fraction-static to a smaller value": the direction after the option
    r"|\bset\s+[`'\"]?(--[a-z0-9-]{1,80}|[a-z][a-z0-9_]{1,80})[`'\"]?\s+to\s+an?\s+"
    r"(smaller|larger|lower|higher|bigger)\b",
    re.IGNORECASE,
)
_UP = ("increas", "rais", "larger", "bigger", "higher")
LAUNCH_PATH_NOTE = "runs after start-up: kverr cannot confirm it before a launch"


def _directions(
    record: Mapping[str, Any],
    values: Mapping[str, str],
    known: Mapping[str, float | str],
    dests: Mapping[str, str],
    caveats: Mapping[str, str],
) -> list[str]:
    """A value one step the way the message says to move an option whose value it printed:
    a fraction by 0.05 (at most 0.95), a count to the limit the message printed beside it
    (`the estimated maximum model length is 15120`), else halved or doubled."""
    out = []
    for m in _DIRECTION.finditer(record.get("errorMessage") or ""):
        word, way = m.group(2) or m.group(3), m.group(1) or m.group(4)
        flag = word if word.startswith("--") else dests.get(word)
        now = known.get(flag)
        if isinstance(now, float):
            line = _moved(flag, now, way.lower().startswith(_UP), values)
            if line:
                line = _noted(record, line) + "."
                out.append(_caveated(line, caveats.get(flag) if line[0] == "R" else None))
    return list(dict.fromkeys(out))


# "Set --max-lora-rank to one of 8, 16, 32", "Set --page-size=1" (records/knowledge: a check
# over a set of values, or for one value)
_ONE_OF = re.compile(
    r"Set (--[a-z0-9][a-z0-9-]{0,80})(?: to one of ([^;]{1,400})|=([^\s;]{1,80}))$"
)


def _one_of(record: Mapping[str, Any], known: Mapping[str, float | str]) -> list[str]:
    """The allowed values nearest the one the message printed, the next larger number first (a
    rank of 1 where 8, 16, ... are allowed: 8): what the allowed values leave to choose."""
    out = []
    for m in (_ONE_OF.match(s) for s in record.get("solutions") or ()):
        now = known.get(m.group(1)) if m else None
        listed = (m.group(2) or m.group(3) or "").split(", ") if m else []
        allowed = [_plain_value(v) for v in listed]
        if now is None or not allowed or None in allowed or now in allowed:
            continue
        if isinstance(now, float) and all(isinstance(v, float) for v in allowed):
            allowed = sorted(allowed, key=lambda v: (v < now, abs(v - now)))  # type: ignore[operator]
        elif len(allowed) > 1:
            continue  # words: no nearest one to offer
        out.append(f"Use {m.group(1)} {_choice(allowed[:SHOWN])} (not {_shown(now)}).")
    return out


# "--chat-template does not name an existing file" (records/conditions.py): a path checked
_MISSING_PATH = re.compile(
    r"(--[a-z0-9][\w.-]{0,80}) does not name an existing (file|directory|path)"
)
_PATH_VALUE = re.compile(r"(?:=|[ \t]+)[`'\"]?([^\s`'\"]{1,400})")
_SUFFIX = re.compile(r"\.[A-Za-z0-9]{1,8}\Z")


_PATH_CHARS = re.compile(r"[\w./~+-]{1,400}")  # (what a line of advice may quote of a paste)


def _looks_like_path(value: str) -> bool:
    """A value written as a path: a slash or a file suffix, and only the characters paths are
    made of (a line of advice is prose: markup from a paste never gets into it)."""
    return _PATH_CHARS.fullmatch(value) is not None and (
        "/" in value or _SUFFIX.search(value) is not None
    )


def _no_such_path(
    record: Mapping[str, Any], values: Mapping[str, str], dests: Mapping[str, str], text: str
) -> list[str]:
    """A path the check found nothing at, as the message printed it (or the paste set it): a
    relative one is read from the directory the server starts in, so its absolute form is
    the fix to try; an absolute one must exist where the server runs."""
    out = []
    for flag, what in dict(_MISSING_PATH.findall(record.get("triggerScenarios") or "")).items():
        given = [
            v.strip().strip("'\"") for e, v in values.items() if dests.get(e.split(".")[-1]) == flag
        ]
        given += [v for f, v in _pasted([flag], text, _PATH_VALUE, None).items() if f == flag]
        # (a value without a slash or a suffix may be a name the option also takes)
        path = next((p for p in given if _looks_like_path(p)), None)
        if path is None:
            continue
        nothing = "nothing" if what == "path" else f"no {what}"
        if path.startswith(("/", "~")):
            out.append(
                f"Make {path} exist where the server runs (inside its container, if it runs in"
                f" one): {nothing} is there."
            )
        else:
            out.append(
                f"Use {flag} /absolute/path/to/{path}: {path} is a relative path, read from the"
                f" directory the server starts in, and {nothing} is there."
            )
    return out


def _as_the_word(
    record: Mapping[str, Any], text: str, positional: Sequence[tuple[str, str]]
) -> list[str]:
    """A message that asks for an option's value as the word after the command ("provide the
    model as a positional argument ... instead of via the `--model` option"), where the paste
    gives that option one: the command with that word."""
    if "positional" not in (record.get("errorMessage") or ""):
        return []
    out = []
    for flag, command in positional:
        value = _pasted([flag], text, _PATH_VALUE, None).get(flag)
        if flag in (record.get("flags") or ()) and value and _PATH_CHARS.fullmatch(value):
            out.append(
                f"Give {value} as the word after the command, without {flag}: {command} {value}"
            )
    return out


# "Watchdog timeout (self.watchdog_timeout=300)": a message that says time ran out
_TIMED_OUT = re.compile(r"\btime(?:d)?[ _-]?out\b", re.IGNORECASE)


def _waited(
    record: Mapping[str, Any], values: Mapping[str, str], dests: Mapping[str, str]
) -> list[str]:
    """A timeout that ran out, with the seconds the message printed for the option that sets
    it: that option doubled. It helps where the work it waits for is slow, not stuck; the
    line says so."""
    if record.get("kind") == "argparse" or not _TIMED_OUT.search(record.get("errorMessage") or ""):
        return []
    out = []
    for flag, now in _option_values(dests, values).items():
        if "timeout" in flag and isinstance(now, float) and now > 0:
            line = f"Raise {flag} from {_shown(now)} to {_shown(now * 2)}, if what it waits for"
            out.append(_noted(record, f"{line} is slow rather than stuck") + ".")
    return out


# `len(devices) != len(set(devices))`: a check that refuses a value named twice
_REPEATS = re.compile(
    r"len\((?:list\()?set\(([\w.-]{1,80})\)\)?\)\s*(?:!=|<|==)\s*len\(\1\)"
    r"|len\(([\w.-]{1,80})\)\s*(?:!=|>|==)\s*len\((?:list\()?set\(\2\)\)?\)"
)
_COMMA_LIST = re.compile(r"[\w.-]{1,60}(?:,[\w.-]{1,60}){1,63}")
_FLAG_LIST = re.compile(r"(?:=|[ \t]+)[`'\"]?([\w.,-]{1,400})")


def _each_once(record: Mapping[str, Any], values: Mapping[str, str], text: str) -> list[str]:
    """A comma list printed with a value in it twice, where the check refuses repeats: the
    same list with each value once, for the option the paste sets to it, else for each option
    of the record that may hold it (a helper's parameter, "whichever the caller passes")."""
    clauses = _CLAUSE.findall(record.get("triggerScenarios") or "")
    if not any(_REPEATS.search(clause) for clause, _ in clauses):
        return []
    flags = list(record.get("flags") or ())
    pasted = _pasted(flags, text, _FLAG_LIST, None)
    out = []
    for printed in values.values():
        items = printed.strip().split(",")
        once = list(dict.fromkeys(items))
        if not _COMMA_LIST.fullmatch(printed.strip()) or len(once) == len(items) or not flags:
            continue
        twice = ", ".join(dict.fromkeys(i for i in items if items.count(i) > 1))
        setting = [f for f in flags if pasted.get(f) == printed.strip()] or flags
        uses = " or ".join(f"{f} {','.join(once)}" for f in setting)
        whichever = f", whichever you set to {printed.strip()}" if len(setting) > 1 else ""
        out.append(f"Use {uses}{whichever}: each value once ({twice} is named twice).")
    return out


def _noted(record: Mapping[str, Any], line: str) -> str:
    """`line` with why kverr cannot confirm it, for a check that runs after start-up."""
    if record.get("scope") == "launch-path":
        return f"{line} (this check {LAUNCH_PATH_NOTE})"
    return line


def _moved(flag: str, now: float, up: bool, values: Mapping[str, str]) -> str | None:
    """ "Raise --x from A to B": a fraction by 0.05 (at most 0.95), a count to the limit the
    message printed beside it, else halved or doubled; None when it cannot move."""
    if 0 < now < 1:
        new = round(min(now + 0.05, 0.95) if up else now - 0.05, 2)
    else:
        limit = _limit(flag, values, now, up) or (None if up else _scaled(now, values))
        new = limit if limit is not None else (now * 2 if up else max(now // 2, 1))
    if new == now or new <= 0:
        return None
    return f"{'Raise' if up else 'Lower'} {flag} from {_shown(now)} to {_shown(new)}"


def _raised(
    record: Mapping[str, Any],
    cond: str,
    want: bool,
    env: Mapping[str, float | str],
    values: Mapping[str, str],
    known: Mapping[str, float | str],
    rules: AdviceRules,
    text: str,
) -> list[str]:
    """A value the condition reads that options raise (the profile's `raised_by`: the KV
    pool's size grows with the memory fraction), when raising it passes the check: raise
    those options, from the value the paste gives them where it does."""
    out = []
    for name, flags in rules.raised_by:
        at = re.compile(rf"(?<![\w.])(?:self\.)?{re.escape(name)}(?!\w)")
        value = _printed(values, name)
        if value is None or not at.search(cond):
            continue
        probe, printed = _bind_printed(at.sub("raised_value", cond), values, {})
        tree, here = options_expr(probe)[0], {**env, **printed}
        if tree is None or _eval(tree, {**here, "raised_value": value}) is not (not want):
            continue  # (the check does not fire at the printed value: nothing to go on)
        if _eval(tree, {**here, "raised_value": abs(value) * 4 + 1e9}) is not want:
            continue
        for flag in flags:
            now = known.get(flag, _pasted_values({"": flag}, text).get(flag))
            line = _moved(flag, now, True, values) if isinstance(now, float) else None
            line = f"{line or f'Raise {flag}'}: `{name}`, {_shown(value)} here, grows with it"
            out.append(_caveated(_noted(record, line) + ".", dict(rules.caveats).get(flag)))
    return out


def _printed(values: Mapping[str, str], name: str) -> float | None:
    """The number the message printed for `name` (or `self.name`)."""
    for expr, text in values.items():
        n = _number(text)
        if n is not None and expr.rsplit(".", 1)[-1] == name:
            return n
    return None


def evaluate(cond: str, values: Mapping[str, float | str]) -> Any:
    """The condition over options (`--tp-size % --dp-size == 0`) with these option values;
    None when it reads anything else, or fails."""
    tree = options_expr(cond, KEYED)[0]
    return None if tree is None else _eval(tree, {option_name(o): v for o, v in values.items()})


_NEEDED = {"needed", "required", "requested"}
_AVAILABLE = {"available", "free"}


def _scaled(now: float, values: Mapping[str, str]) -> float | None:
    """`now` lowered in the proportion of what the message printed as available to what is
    needed (4.25 of 4.26 GiB: a length of 100000 -> 99000), down to two significant digits;
    None without such a pair. What a length needs grows in proportion to it."""
    need = have = None
    for expr, text in values.items():
        words, n = set(re.findall(r"[a-z]+", expr.lower())), _number(text)
        if n is not None and n > 0:
            need = n if words & _NEEDED else need
            have = n if words & _AVAILABLE and not words & _NEEDED else have
    if need is None or have is None or have >= need:
        return None
    x = now * have / need
    step = 10 ** max(0, math.floor(math.log10(x)) - 1) if x >= 1 else 1
    new = math.floor(x / step) * step
    return float(new) if 0 < new < now else None


def _limit(flag: str, values: Mapping[str, str], now: float, up: bool) -> float | None:
    """A number the message printed under another name sharing the option's words, on the
    side the message says to move to (`estimated_max_len` for --max-model-len)."""
    words = set(flag.lstrip("-").split("-"))
    for expr, text in values.items():
        name = expr.rsplit(".", 1)[-1]
        v = _number(text)
        if v is None or len(words & set(name.split("_"))) < 2:
            continue
        if (v > now) if up else (0 < v < now):
            return v
    return None


def _option_values(dests: Mapping[str, str], values: Mapping[str, str]) -> dict[str, float | str]:
    """--option -> the number (or the single word: `gptq`) the message printed for it (a
    placeholder `self.tp_size` is the value of the option whose dest is tp_size)."""
    out: dict[str, float | str] = {}
    for expr, text in values.items():
        flag = dests.get(expr.rsplit(".", 1)[-1])
        value = _plain_value(text) if flag else None
        if value is not None:
            out[flag] = value
    return out


def _solve(
    text: str,
    want: bool,
    free: str,
    known: Mapping[str, float | str],
    constants: Mapping[str, float | str] | None = None,
    *,
    fewer: bool = False,
    caveat: str | None = None,
) -> str | None:
    """A line offering values of `free` that give `text` the truth value `want`; `caveat`:
    what still bounds a value above the user's, said after it."""
    others = [o for o in dict.fromkeys(_OPTION.findall(text)) if o != free]
    if any(o not in known for o in others):
        return None
    constants = constants or {}
    printed = [v for k, v in constants.items() if re.search(rf"\b{k}\b", text)]
    # an option the message did not print is solved only against numbers it did print (the
    # prompt's length for --max-model-len): without one there is nothing of the user's to use
    mine = known.get(free)  # the user's value, where the message or the paste gave it
    if mine is None and (fewer or not any(isinstance(v, float) for v in printed)):
        return None  # (a count of GPUs is not guessed from a model's numbers)
    tree = options_expr(text)[0]
    if tree is None:
        return None
    env = {**constants, **{option_name(o): known[o] for o in known}}
    if mine is not None and _eval(tree, env) == want:
        return None  # the printed values already satisfy it: nothing to say from them
    if isinstance(mine, str):  # a word (`gptq`): the words the message or the check names
        words = [w for v in printed for w in (v if isinstance(v, tuple) else (v,))]
        words += [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)]
        pool: list[float | str] = [
            v for v in dict.fromkeys(words) if isinstance(v, str) and v != mine
        ]
    else:
        numbers = [v for v in (known[o] for o in others) if isinstance(v, float)]
        numbers += [
            *map(float, _NUMBER.findall(text)),
            *(v for v in printed if isinstance(v, float)),
        ]
        # Around the user's value, else around what the message printed (the prompt's length),
        # which is then itself a value to offer ("at least the prompt's length").
        centre = mine if mine is not None else max(numbers)
        edge = _edge(tree, option_name(free), env, want, centre)
        if edge is not None:  # (a limit: its edge, then the round numbers past it)
            pool = _past(edge, centre)
        else:
            pool = list(_candidates([*numbers, centre], centre, near=mine is not None))
            if mine is None:
                pool.insert(0, centre)
        # fewer GPUs than a launch has are always at hand, more are not
        pool.sort(key=lambda c: fewer and c > centre)
    good = []
    for c in pool:
        if _eval(tree, {**env, option_name(free): c}) == want:
            good.append(c)
        if len(good) == SHOWN:
            break
    if not good:
        return None
    held = ", ".join(f"{o} {_shown(known[o])}" for o in others)
    lead = f"With {held}, use" if held else "Use"
    line = f"{lead} {free} {_choice(good)}" + ("." if mine is None else f" (not {_shown(mine)}).")
    numeric = all(isinstance(v, float) for v in good)
    raised = numeric and (mine is None or (isinstance(mine, float) and min(good) > mine))
    return _caveated(line, caveat if raised else None)


def _edge(
    tree: ast.expr, name: str, env: Mapping[str, Any], want: bool, start: float
) -> float | None:
    """Where the condition turns `want` for the option `name`, between `start` (where it does
    not hold) and zero or a far larger value, when it is a limit: order comparisons over
    arithmetic and rounding, monotone in the option (`free < total * o_gpu_memory_utilization`:
    the fraction of the device that is free). None for anything else (`%`, `==`, `in`)."""
    nodes = list(ast.walk(tree))
    if not any(isinstance(n, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for n in nodes) or any(
        isinstance(n, (ast.Eq, ast.NotEq, ast.In, ast.NotIn, ast.Mod, ast.FloorDiv)) for n in nodes
    ):
        return None

    def holds(v: float) -> bool | None:
        return _eval(tree, {**env, name: v})

    if holds(start) is not (not want):
        return None
    far = next((f for f in (0.0, abs(start) * 1e4 + 1e6) if holds(f) is want), None)
    if far is None:
        return None
    lo, hi = start, far
    for _ in range(80):  # (bisection: each step halves the interval)
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if holds(mid) is not want else (lo, mid)
    return hi


def _past(edge: float, start: float) -> list[float]:
    """Values on the passing side of a limit's `edge`, nearest first: the edge itself (a whole
    number, or a fraction to two places, as the user's value is), then round ones past it
    (powers of two; fractions in steps of 0.05)."""
    down = edge < start
    if 0 < start < 1:  # (a fraction of the device)
        first = (math.floor if down else math.ceil)(edge * 100) / 100
        step = -0.05 if down else 0.05
        base = (math.floor if down else math.ceil)(first / 0.05) * 0.05
        rest = [round(base + step * k, 2) for k in range(0, 4)]
        # (below a tenth of the device, the memory is held by something else: a smaller
        # share is no fix, freeing the device is)
        return [v for v in dict.fromkeys([first, *rest]) if 0.1 <= v <= 1]
    first = float(math.floor(edge) if down else math.ceil(edge))
    powers = [float(2**e) for e in range(0, 31)]
    rest = [p for p in (reversed(powers) if down else powers) if (p < first if down else p > first)]
    return [first, *rest]


def _candidates(numbers: Sequence[float], current: float, *, near: bool = True) -> list[float]:
    """Values worth trying, nearest to `current` first (log scale for positive numbers); `near`:
    with the current value's neighbours (it is the option's own)."""
    pool: set[float] = set()
    for n in numbers:
        if n == int(n) and 0 < n <= 1 << 20:
            k = int(n)
            pool.update(float(d) for d in _divisors(k))
            pool.update(float(k * m) for m in (2, 3, 4))
            if near and n == current:  # another number's are a limit's off-by-one
                pool.update((n - 1, n + 1))
        if 0 < n < 1:
            pool.update((round(n - 0.05, 2), round(n + 0.05, 2)))
    pool.update(float(2**e) for e in range(0, 21))
    pool.discard(current)

    def distance(c: float) -> float:
        if c > 0 and current > 0:
            return abs(math.log(c / current))
        return abs(c - current) + 100

    return sorted((c for c in pool if c >= 0), key=lambda c: (distance(c), c))


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted({*small, *(n // d for d in small)})


def _choice(values: Sequence[float | str]) -> str:
    """`8, 16 or 32`: the values offered, as one choice."""
    shown = [_shown(v) for v in values]
    return " or ".join(filter(None, [", ".join(shown[:-1]), shown[-1]]))


def _shown(v: float | str) -> str:
    if isinstance(v, str):
        return v
    return str(int(v)) if v == int(v) else f"{v:g}"


_BIN = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Mod: operator.mod,
    ast.FloorDiv: operator.floordiv,
    ast.Div: operator.truediv,
}
_CMP = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,  # (a printed list: `--dtype not in supported_dtypes`)
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: lambda a, b: a is b,  # (`--x is None`: an option left unset)
    ast.IsNot: lambda a, b: a is not b,
}


def _eval(node: ast.expr, env: Mapping[str, float]) -> Any:
    """Numbers, words, names bound in `env`, tuples, arithmetic, comparisons (`in` too),
    and/or/not; None otherwise."""
    try:
        return _ev(node, env)
    except (ZeroDivisionError, OverflowError, TypeError, ValueError, KeyError, _Unknown):
        return None


class _Unknown(Exception):
    pass


def _split(node: ast.BinOp) -> bool:
    """`--tp-size // --ep-size`: a size the code splits evenly (it checks that one divides
    the other before), not a rounding."""
    return all(isinstance(n, ast.Name) and n.id.startswith("o_") for n in (node.left, node.right))


def _is_math(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "math"


# calls a condition may make on numbers (`math.ceil(total * fraction)`), by the name called
_CALLS = {"ceil": math.ceil, "floor": math.floor, "int": int, "round": round, "abs": abs,
          "min": min, "max": max}  # fmt: skip


def _ev(node: ast.expr, env: Mapping[str, float]) -> Any:
    if isinstance(node, ast.Call) and not node.keywords:
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        if name in _CALLS and (not isinstance(f, ast.Attribute) or _is_math(f.value)):
            return _CALLS[name](*(_ev(a, env) for a in node.args))
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, type(None))):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):  # (what `in` looks through)
        return tuple(_ev(e, env) for e in node.elts)
    if isinstance(node, ast.IfExp):
        return _ev(node.body, env) if _ev(node.test, env) else _ev(node.orelse, env)
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
        left, right = _ev(node.left, env), _ev(node.right, env)
        if isinstance(node.op, ast.FloorDiv) and _split(node) and left % right:
            raise _Unknown()  # (an option split into equal parts by another must divide)
        return _BIN[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_ev(node.operand, env)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return not _ev(node.operand, env)
    if isinstance(node, ast.BoolOp):
        vals = [_ev(v, env) for v in node.values]
        return all(vals) if isinstance(node.op, ast.And) else any(vals)
    if isinstance(node, ast.Compare) and all(type(o) in _CMP for o in node.ops):
        left = _ev(node.left, env)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _ev(right_node, env)
            if not _CMP[type(op)](left, right):
                return False
            left = right
        return True
    raise _Unknown()


def personalize(
    text: str,
    matches: Sequence[Any],
    *,
    release: str | None = None,
    source: str | None = None,
) -> list[Any]:
    """`matches` (kverr.answers.Match) with `yours` or `advice` (module doc). The verify
    machinery is imported only when the paste holds a launch: an explain without one stays
    as fast as it was."""
    from dataclasses import replace

    from kverr.launch import forms_of, read_launches
    from kverr.profile import builtin_names, load_profile

    profiles = {name: load_profile(name) for name in builtin_names()}
    if matches and read_launches(text, forms_of(profiles.values())):
        from kverr.verify.preflight import personal_answers

        return personal_answers(text, matches, release=release, source=source)
    return [replace(m, advice=advice_for(m, text, profiles)) for m in matches]


def advice_for(match: Any, text: str, profiles: Mapping[str, Any]) -> tuple[str, ...]:
    """`advise` for one match (kverr.answers.Match), with its project's profile (`profiles`:
    name -> Profile): the hardware options it keeps, its `[advice]` rules."""
    name = (match.project or {}).get("name") or match.record.get("project") or DEFAULT_PROJECT
    profile = profiles.get(name)
    keep = profile.hardware_options if profile else ()
    rules = profile.advice if profile else None
    return tuple(advise(match.record, match.values, keep, text, rules))
