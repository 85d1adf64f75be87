"""What the terminal can take: colour, clickable links, a width to wrap prose at, a pager,
and nothing that steers it: `escape_terminal` shows every control character of a string from a
paste, a record, a repository or a file name as a visible escape, before kverr's own styling
and links are added.

The views (kverr/render.py) build plain lines and ask a `Term` to style them, so one code
path prints a coloured card on a terminal and plain, unwrapped text into a pipe, a file or a
CI log (NO_COLOR, TERM=dumb and `--plain` ask for the same). Long output on a terminal goes
through a pager, as git does: KVERR_PAGER, else PAGER, else `less` (with LESS=FRX unless set:
quit when it fits on one screen, keep colours, leave the text on screen). `--no-pager`, or
KVERR_PAGER=cat, turns it off.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from typing import IO, TypeVar

# What steers a terminal or reorders what it shows: the C0 controls but newline and tab (ESC,
# BEL, backspace, CR...), DEL, the C1 controls U+0080-U+009F (a VT terminal reads U+009B as
# CSI and U+009D as OSC, as it reads ESC [ and ESC ]), and the bidirectional controls.
_BIDI = r"\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f" + _BIDI + "]")
# What json.dumps(ensure_ascii=False) leaves raw of those (it escapes the C0 controls itself).
_JSON_RAW = re.compile(r"[\x7f-\x9f" + _BIDI + "]")

T = TypeVar("T")


def escape_terminal(text: str) -> str:
    """`text` with each control character shown as an escape: `\\x1b`, `\\u009b`, `\\u202e`.
    For every string from a paste, a record, a repository or a file name; kverr's own styling
    and links go around the result. Idempotent: what it returns has no control left."""
    return _CONTROLS.sub(_shown, text)


def _shown(m: re.Match[str]) -> str:
    n = ord(m.group())
    return f"\\x{n:02x}" if n < 0x80 else f"\\u{n:04x}"


def escape_json(text: str) -> str:
    """JSON text from json.dumps(..., ensure_ascii=False) with DEL, the C1 and the bidirectional
    controls as \\uXXXX escapes too: the same data, nothing a terminal acts on. (Outside
    strings JSON text is ASCII, so every such character is inside a string.)"""
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def escape_data(value: T) -> T:
    """escape_terminal over every string in `value`: dicts (keys too), lists, tuples and
    dataclass instances (a Match, a Diff), copied; anything else as it is."""
    kind = type(value)
    if kind is str:
        return _CONTROLS.sub(_shown, value)  # type: ignore[return-value, arg-type]
    if kind is dict:
        return {escape_data(k): escape_data(v) for k, v in value.items()}  # type: ignore[attr-defined, return-value]
    if kind is list or kind is tuple:
        return kind(escape_data(v) for v in value)  # type: ignore[call-arg, attr-defined]
    if kind in _SCALARS:
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {
            f.name: escape_data(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init
        }
        return dataclasses.replace(value, **fields)
    if isinstance(value, str):  # a str subclass (an enum's value...)
        return escape_terminal(value)  # type: ignore[return-value]
    return value


_SCALARS = frozenset({int, float, bool, type(None)})


# SGR codes by name: the few styles the views use.
_SGR = {
    "bold": "1",
    "dim": "2",
    "italic": "3",
    "underline": "4",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "blue": "34",
    "magenta": "35",
    "cyan": "36",
    "on-red": "41",
    "white": "37",
}

# Terminals known to draw OSC 8 hyperlinks (the env var each one sets). Others print the
# escape as nothing or, worse, as garbage, so links are opt-in by detection; the full URL is
# printed as text either way, which most terminals make clickable on their own.
_LINK_TERMS = ("iTerm.app", "WezTerm", "vscode", "Hyper", "ghostty", "Tabby", "rio")
_LINKABLE = re.compile(r"https://[\x21-\x7e]+")


@dataclass(frozen=True)
class Term:
    """How to print for one output stream. The default is plain text: no colour, no links,
    no wrapping (what a pipe, a file or a test gets)."""

    color: bool = False
    links: bool = False
    width: int | None = None  # wrap prose at this many columns; None: never wrap
    tty: bool = False

    def style(self, text: str, *names: str) -> str:
        if not self.color or not names or not text:
            return text
        codes = ";".join(_SGR[n] for n in names)
        return f"\x1b[{codes}m{text}\x1b[0m"

    def link(self, text: str, url: str | None) -> str:
        """`text` as a clickable OSC 8 hyperlink to `url` where the terminal draws them; only
        a plain https URL is linked (one with a control character would end the escape)."""
        if not self.links or not url or not _LINKABLE.fullmatch(url):
            return text
        return f"\x1b]8;;{url}\x1b\\{text}\x1b]8;;\x1b\\"

    def wrap(self, text: str, indent: int = 0) -> list[str]:
        """Prose as lines: wrapped at the width on a terminal, never elsewhere. Every line but
        the first is indented by `indent` (the first follows a label of that width)."""
        pad = " " * indent
        out = text.splitlines() or [""]
        if self.width is not None and self.width - indent >= 20:
            fit = dict(width=self.width - indent, break_long_words=False, break_on_hyphens=False)
            out = [line for para in out for line in textwrap.wrap(para, **fit) or [""]]
        return [out[0]] + [pad + line for line in out[1:]]


PLAIN = Term()


def detect(*, plain: bool = False) -> Term:
    """The Term for stdout: colour, links and wrapping only on a terminal, and never with
    --plain, NO_COLOR (any value) or TERM=dumb."""
    tty = _isatty(sys.stdout)
    env = os.environ
    if plain or not tty or "NO_COLOR" in env or env.get("TERM") == "dumb":
        return Term(tty=tty)
    return Term(color=True, links=_links(env), width=shutil.get_terminal_size().columns, tty=True)


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed or not a real file
        return False


def _links(env: os._Environ[str] | dict[str, str]) -> bool:
    forced = env.get("FORCE_HYPERLINK")
    if forced is not None:  # the convention of supports-hyperlinks: 1 on, 0 off
        return forced.strip() not in ("", "0")
    if env.get("TERM_PROGRAM") in _LINK_TERMS or env.get("KITTY_WINDOW_ID"):
        return True
    if env.get("WT_SESSION") or env.get("KONSOLE_VERSION"):
        return True
    vte = env.get("VTE_VERSION", "")
    return vte.isdigit() and int(vte) >= 5000  # GNOME Terminal, Tilix, ...


# ---------------------------------------------------------------- the pager


def pager_command(env: os._Environ[str] | dict[str, str] | None = None) -> str | None:
    """The pager to run, as git picks one; None when paging is off (empty or `cat`)."""
    env = os.environ if env is None else env
    for name in ("KVERR_PAGER", "PAGER"):
        if name in env:
            cmd = env[name].strip()
            return None if cmd in ("", "cat") else cmd
    return "less"


def emit(text: str, term: Term, *, pager: bool = True) -> None:
    """Print `text` (lines, no trailing newline needed). On a terminal, text taller than the
    screen goes through the pager unless `pager` is False; a pager that cannot start is
    skipped, never an error."""
    if not text.endswith("\n"):
        text += "\n"
    cmd = pager_command() if pager and term.tty else None
    if cmd and text.count("\n") >= shutil.get_terminal_size().lines:
        if _page(text, cmd):
            return
    sys.stdout.write(text)
    sys.stdout.flush()


def _page(text: str, cmd: str) -> bool:
    env = dict(os.environ)
    env.setdefault("LESS", "FRX")  # git's defaults: see the module doc
    env.setdefault("LV", "-c")
    try:
        proc = subprocess.Popen(cmd, shell=True, stdin=subprocess.PIPE, env=env)  # noqa: S602 - a user's own pager setting, as git runs it
    except OSError:
        return False
    try:
        assert proc.stdin is not None
        proc.stdin.write(text.encode("utf-8", "replace"))
        proc.stdin.close()
    except BrokenPipeError:  # the user quit the pager before the end: fine
        pass
    while True:
        try:
            proc.wait()
            break
        except KeyboardInterrupt:  # Ctrl-C belongs to the pager while it runs (as with git)
            continue
    return proc.returncode != 127  # 127: the shell did not find the pager
