"""The user's own launch, read from what they paste: a command line, or the arguments a
server logs about itself before it validates them.

    read_launches(text, profiles) -> [PastedLaunch, ...]

Three forms, each declared per project in its profile's `[launch]` table:

- **a command line**: `python -m sglang.launch_server ...` (any `python`, `python3`,
  `/opt/venv/bin/python3.11`, behind `uv run`), `sglang serve ...`, `vllm serve MODEL ...`,
  after a shell prompt (`$ `, `# `, `user@host:~$ `), inside a Markdown fence, with `VAR=value`
  prefixes and backslash continuations; lines that go on with indented `--options` after a
  launch line are part of it too (issues often drop the backslashes);
- **a logged dictionary** (`non-default args: {'tensor_parallel_size': 4, ...}`): the options
  the user set, by dest;
- **a logged constructor** (`server_args=ServerArgs(model_path='...', tp_size=4, ...)`): every
  field, defaults included; which of them the user set is decided later, against that
  release's parser defaults.

Pasted text is hostile: each line is looked at once (a launch's lines are joined once), a
launch is cut at MAX_CHARS and a logged literal is parsed only when it is short and shallow
enough for `ast.literal_eval` to be safe. Memory does not grow with the paste beyond the
launches found, at most MAX_LAUNCHES of them.
"""

from __future__ import annotations

import ast
import re
import shlex
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kverr.errors import QueryError

MAX_CHARS = 16_384  # characters of one launch (a command line or a logged literal)
MAX_LAUNCHES = 16  # launches kept from one paste
MAX_DEPTH = 20  # brackets a logged literal may nest

_ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}=\S*\Z")
# What stands before a command in a paste: a fence's language tag is its own line; prompts
# (`$ `, `# `, `> `, `(venv) user@host:~/x$ `) and list markers (`- `) come before the words.
_PROMPT = re.compile(
    r"\A[ \t]{0,16}(?:\([^()\n]{0,64}\)[ \t]{0,4})?(?:[\w.@:~/-]{0,128}[$#>%][ \t]+|[-*][ \t]+)"
)
_PYTHON = re.compile(r"(?:\S{0,256}/)?python(?:\d+(?:\.\d+)?)?\Z")
_UNTIL_LITERAL = 4096  # characters before a logged literal's start the marker may stand


@dataclass(frozen=True)
class PastedLaunch:
    """One launch found in a paste, its words as the user gave them."""

    project: str  # the profile whose launch it is ("sglang", "vllm")
    form: str  # "command" | "dict" (options by dest, as set) | "fields" (every field)
    words: tuple[str, ...] = ()  # "command": the words after the program, as typed
    values: tuple[tuple[str, Any], ...] = ()  # "dict" / "fields": (dest, value) in order
    env: tuple[tuple[str, str], ...] = ()  # VAR=value words before the program
    program: str = ""  # "python -m sglang.launch_server", "vllm serve"
    line: int = 0  # 1-based input line where it starts

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"project": self.project, "form": self.form, "line": self.line}
        if self.program:
            out["program"] = self.program
        if self.words:
            out["argv"] = list(self.words)
        if self.values:
            out["values"] = {dest: value for dest, value in self.values}
        if self.env:
            out["env"] = dict(self.env)
        return out


@dataclass(frozen=True)
class LaunchForms:
    """A project's declared launch forms (its profile's `[launch]` table)."""

    project: str
    modules: tuple[str, ...] = ()  # `python -m MODULE`
    executables: tuple[str, ...] = ()  # "sglang serve", "vllm serve": words that start one
    dumps: tuple[str, ...] = ()  # "non-default args:", "server_args=": a logged literal follows


def read_launches(text: str, forms: Sequence[LaunchForms]) -> list[PastedLaunch]:
    """Every launch in `text`, in the order they start (module doc)."""
    lines = text.splitlines()
    found: list[PastedLaunch] = []
    i = 0
    while i < len(lines) and len(found) < MAX_LAUNCHES:
        launch, used = _command_at(lines, i, forms) or _dump_at(lines, i, forms) or (None, 1)
        if launch is not None:
            found.append(launch)
        i += used
    return found


# ---------------------------------------------------------------- command lines


def _command_at(
    lines: Sequence[str], i: int, forms: Sequence[LaunchForms]
) -> tuple[PastedLaunch, int] | None:
    if not any(_mentions(lines[i], f) for f in forms):
        return None  # the cheap test first: most lines of a log name no launch
    text, used = _joined(lines, i)
    words = _words(_PROMPT.sub("", text, count=1))
    if words is None:
        return None
    for start in range(len(words)):
        if _PROSE.search(words[start]):
            return None  # "[Bug]: vllm serve crashes": a title or a label, not a command
        for f in forms:
            program, rest = _program_at(words, start, f)
            if program and _launch_like(rest):
                env = _env_before(words[:start])
                launch = PastedLaunch(
                    f.project, "command", tuple(rest), env=env, program=program, line=i + 1
                )
                return launch, used
    return None


# A word no command has before its program: a label (`Error:`), a bracketed tag (`[Bug]`).
_PROSE = re.compile(r"\A\[|:\Z")
_MODEL_LIKE = re.compile(r"[/.:_\d-]")


def _launch_like(rest: Sequence[str]) -> bool:
    """Words after a program that read as its arguments: an option first, or a model name
    (`org/name`, `./path`, `llama-3`), not a word of prose (`crashes with ...`)."""
    return not rest or rest[0].startswith("-") or bool(_MODEL_LIKE.search(rest[0]))


def _mentions(line: str, f: LaunchForms) -> bool:
    return any(m in line for m in f.modules) or any(e.split()[0] in line for e in f.executables)


def _joined(lines: Sequence[str], i: int) -> tuple[str, int]:
    """The launch's text from line i on: backslash continuations joined, and indented lines
    of options after it (a paste that lost its backslashes); (text, lines used)."""
    parts = [lines[i][:MAX_CHARS].rstrip()]
    size = len(parts[0])
    j = i + 1
    while j < len(lines) and size < MAX_CHARS:
        nxt = lines[j]
        if parts[-1].endswith("\\"):
            parts[-1] = parts[-1][:-1]
        elif not (nxt[:1] in (" ", "\t") and nxt.lstrip().startswith("-")):
            break
        if nxt.strip().startswith("```"):
            break
        parts.append(nxt.strip())
        size += len(nxt)
        j += 1
    if parts[-1].endswith("\\"):
        parts[-1] = parts[-1][:-1]
    return " ".join(parts)[:MAX_CHARS], j - i


def _words(text: str) -> list[str] | None:
    """Shell words, or None when they do not split (an unclosed quote in prose)."""
    text = text.strip().strip("`")
    try:
        return shlex.split(text, comments=False, posix=True)
    except ValueError:
        return None


def _program_at(words: Sequence[str], at: int, f: LaunchForms) -> tuple[str, Sequence[str]]:
    """("python -m mod" | "vllm serve", the words after it) when a launch starts at `at`."""
    word = words[at]
    if _PYTHON.match(word):
        j = at + 1
        while j < len(words) and words[j] in ("-u", "-O", "-B", "-s", "-E", "-I", "-P"):
            j += 1
        if j + 1 < len(words) and words[j] == "-m" and words[j + 1] in f.modules:
            return f"python -m {words[j + 1]}", words[j + 2 :]
        return "", ()
    for exe in f.executables:
        parts = exe.split()
        name = word.rsplit("/", 1)[-1]
        if name == parts[0] and list(words[at + 1 : at + len(parts)]) == parts[1:]:
            return exe, words[at + len(parts) :]
    return "", ()


def _env_before(words: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """The `VAR=value` words right before the program (after `env`, `sudo -E` and the like)."""
    env: list[tuple[str, str]] = []
    for word in reversed(words):
        if not _ENV.match(word):
            break
        name, _, value = word.partition("=")
        env.append((name, value))
    return tuple(reversed(env))


# ---------------------------------------------------------------- logged literals


def _dump_at(
    lines: Sequence[str], i: int, forms: Sequence[LaunchForms]
) -> tuple[PastedLaunch, int] | None:
    line = lines[i]
    for f in forms:
        for marker in f.dumps:
            at = line.find(marker, 0, _UNTIL_LITERAL + len(marker))
            if at < 0:
                continue
            literal = line[at + len(marker) :].strip()[:MAX_CHARS]
            parsed = _literal(literal) if literal else None
            if parsed is not None:
                form, values = parsed
                return PastedLaunch(f.project, form, values=values, line=i + 1), 1
    return None


def _literal(text: str) -> tuple[str, tuple[tuple[str, Any], ...]] | None:
    """("dict", ...) for `{'dest': value, ...}`, ("fields", ...) for `Name(dest=value, ...)`;
    None for anything else. Each value is parsed on its own (`ast.literal_eval`, once it is
    known short and shallow), so one that is no literal (`<object at 0x7f>`) is left out,
    never guessed, and the others stay."""
    if text.startswith("{"):
        form, body, sep = "dict", text[1:], ":"
    elif _CALL.match(text):
        form, body, sep = "fields", text[text.index("(") + 1 :], "="
    else:
        return None
    pairs = []
    for item in _top_level(body):
        key, found, value = item.partition(sep)
        key = _value(key.strip()) if form == "dict" else key.strip()
        if not found or not isinstance(key, str) or not key.isidentifier():
            continue
        parsed = _value(value.strip())
        if parsed is not _SKIP:
            pairs.append((key, parsed))
    return (form, tuple(pairs)) if pairs else None


_CALL = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,64}\(")
_SKIP = object()  # a value that is no literal: left out


def _top_level(body: str) -> list[str]:
    """The comma-separated items of `body` up to its closing bracket, split where no quote
    or bracket is open: one pass over the characters."""
    items: list[str] = []
    start, depth, quote, escaped = 0, 0, "", False
    for at, ch in enumerate(body):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            if depth == 0:
                items.append(body[start:at])
                return items
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(body[start:at])
            start = at + 1
    return items  # never closed: the paste was cut; what came whole still counts


def _value(text: str) -> Any:
    if not text or len(text) > 4096 or _depth(text) > MAX_DEPTH:
        return _SKIP
    try:
        return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _SKIP


def _depth(text: str) -> int:
    """The deepest bracket nesting of `text`, counted as characters (strings included)."""
    depth = deepest = 0
    for ch in text:
        if ch in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in ")]}":
            depth -= 1
    return deepest


MAX_INPUT = 1 << 20  # bytes read from --file or stdin: a launch script, a log, an issue


def read_input(path: str) -> str:
    """The text of `path` ('-': stdin), its first MAX_INPUT bytes; QueryError names it when
    it cannot be read."""
    try:
        if path == "-":
            data = sys.stdin.buffer.read(MAX_INPUT)
        else:
            with open(path, "rb") as f:
                data = f.read(MAX_INPUT)
    except OSError as exc:
        raise QueryError(f"cannot read {path} ({exc.strerror}); pass a readable file.") from None
    return data.decode("utf-8", "replace")


def forms_of(profiles: Iterable[Any]) -> list[LaunchForms]:
    """The launch forms of each profile (kverr.profile.Profile)."""
    return [
        LaunchForms(p.name, tuple(p.launch_modules), tuple(p.launch_executables), tuple(p.dumps))
        for p in profiles
    ]
