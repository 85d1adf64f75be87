"""Every value that flows between kverr's pipeline stages, in one place.

source (directory | git revision) -> SourceFile
extractor                          -> FileExtraction (Sites, FlagDecls, ParseFailures)
records                            -> schema-v2 record dicts (JSON is their natural shape)
dataset                            -> records.jsonl + manifest.json + side tables (see docs/CONTRACTS.md)
catalog                            -> Match

All types are frozen so a stage can never mutate what an earlier stage produced.
`to_json` / `from_json` are the single serialiser for all of them (the extraction
cache and the golden files both use it).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kverr.answers import CutLines, Match, Revision  # noqa: F401

# ---------------------------------------------------------------- source

_ANSI_SGR = re.compile(r"\x1b\[[0-9;]*m")


def without_colour(text: str) -> str:
    """`text` without ANSI colour codes: what a user reads in a plain log."""
    return _ANSI_SGR.sub("", text)


@dataclass(frozen=True)
class SourceFile:
    path: str  # posix path relative to the repository (or directory) root
    text: str
    blob: str  # git blob sha, or sha1 of the bytes ("blob <n>\0" + bytes) for files on disk
    # Set when the bytes are not text (binary, not UTF-8): "line:col:message". The text is then
    # empty and extraction reports the file as a ParseFailure instead of parsing it.
    error: str | None = None


# ---------------------------------------------------------------- extractor


@dataclass(frozen=True)
class Part:
    """One piece of a message template: literal text, or a placeholder for a runtime value."""

    text: str | None = None  # literal text (None for a placeholder)
    # placeholder: source of the interpolated expression; on literal text, the imported
    # constant the build read it from (extractor/imports.py: ids keep the name)
    expr: str | None = None
    conversion: str | None = None  # "r" | "s" | "a" (f-string !r, %r ...)
    format_spec: str | None = None  # f-string/format spec, e.g. ".2f"
    dynamic: bool = False  # True: the extractor could not tell what text lands here

    @property
    def is_literal(self) -> bool:
        return self.text is not None


@dataclass(frozen=True)
class Template:
    parts: tuple[Part, ...]

    def display(self) -> str:
        """Human form used for errorMessage: placeholders shown as {expr}, colour codes
        dropped (what a user reads in a plain log; the pattern still accepts them)."""
        return "".join(
            without_colour(p.text or "") if p.is_literal else "{" + (p.expr or "...") + "}"
            for p in self.parts
        )

    @property
    def placeholders(self) -> tuple[Part, ...]:
        return tuple(p for p in self.parts if not p.is_literal)

    @property
    def is_empty(self) -> bool:
        return not self.parts


@dataclass(frozen=True)
class Guard:
    """A condition that must hold (or not) for control to reach a site."""

    test: str  # source text of the condition, whitespace-normalised
    holds: bool  # True: the test is truthy on the path to the site; False: falsy
    kind: str  # "if" | "elif" | "else" | "early-exit" | "assert" | "while" | "match" | "try"
    line: int
    flags: tuple[str, ...] = ()  # CLI flags the test reads, e.g. ("--enable-hisparse",)


@dataclass(frozen=True)
class Binding:
    """What a plain name in a site's guards or message stands for, or what the function assigns
    to a flag around the site; the records read conditions over locals as facts about flags.

    kind:
      "constant"  a name bound once to a literal; `value` is its source (`64`, `('a', 'b')`)
      "local"     a local variable; `value` is the source of the one assignment that reaches the
                  site (None when several do), `flags` the flags those assignments read. A name
                  unpacked from a call on the launch arguments has the value `<call>[i]` and the
                  flags its name points at (`prefill_backend, _ = backends_of(args)`)
      "param"     a parameter; `flags` are what the callers in the file pass, `value` the source
                  of the argument when there is one caller
      "action"    `values` in an argparse Action: `flags` are the flags declared with it
      "item"      the variable of a loop over a flag's list (`for op in self.custom_ops`): one
                  item of `flags`, not their value
      "import"    a constant imported from another module: `value` is "module:NAME" (leading
                  dots for a relative import); a build over git turns it into a "constant"
      "assigned"  `self.<name> = value` on the path before the site, unconditionally: a guard
                  after `line` reads this value, not the user's; `flags` is the flag assigned
      "sets"      `self.<name> = value` after the site in its own block: what a notice did
      "method"    a method of the launch arguments that only returns a test of them, called
                  without arguments (`self.<name>()`): `value` is the test's source, its
                  receiver `self`; `flags` the flags it reads
    """

    name: str
    kind: str
    value: str | None = None
    flags: tuple[str, ...] = ()
    line: int = 0  # "assigned" / "sets": the line of the assignment


# the kinds of Binding whose flags are flags the site reads
NAMING_BINDINGS = ("local", "param", "action", "item")


@dataclass(frozen=True)
class Assignment:
    """`self.<field> = value` in a flag class's phases that runs before a site: an earlier
    statement of the site's method, or a method the profile's phase entries (`__post_init__`)
    call before it. The check reads the field as these left it, not as the user gave it."""

    field: str  # "enable_lora"
    # source of the value when it is a constant or another field (`self.model_path`); None
    # when it is not that simple (a call's result, `+=`, inside a loop or try): past it the
    # field's value is unknown
    value: str | None
    condition: str = ""  # source of the ifs it sits in, joined by `and` ("": always runs)
    # what lets a launch past each early return (`if c: return`) of the methods that ran
    # before the site's own and stand between
    past: tuple[str, ...] = ()
    function: str = ""  # the method's qualified name
    line: int = 0


@dataclass(frozen=True)
class FlagDecl:
    """A CLI flag as the source declares it (dataclass field and/or add_argument)."""

    name: str  # "--enable-hisparse"
    dest: str  # "enable_hisparse"
    help: str | None = None
    default: str | None = None  # source text of the default, e.g. "None", "0.9", "'auto'"
    choices: tuple[str, ...] | None = None  # literal choices when resolvable
    type: str | None = None  # "int", "str", ...
    action: str | None = None  # "store_true", ...
    file: str = ""
    line: int = 0
    # The attribute the real parser's Namespace holds, when it is not `dest`: `--moe-dp-size`
    # is the field moe_dp_size, but add_argument("--moe-data-parallel-size", "--moe-dp-size")
    # stores into moe_data_parallel_size. None: the Namespace uses `dest`.
    arg_dest: str | None = None
    # add_argument's option strings in order, as argparse joins them in its errors
    # ("argument --tensor-parallel-size/--tp-size: ..."); None: no add_argument names the flag
    options: tuple[str, ...] | None = None
    nargs: str | None = None  # add_argument's nargs as written ("+", "?", "2"), when literal
    end_line: int = 0  # last line of the declaration (0: unknown)
    # source of a mapping add_argument unpacks (`**model_kwargs["dtype"]`): its type, choices
    # and action come from there (a profile's `[extract] argument_kwargs` says how)
    kwargs: str | None = None


@dataclass(frozen=True)
class Site:
    """One place where the program reports an error: raise / assert / logging call / exit."""

    kind: str  # "raise" | "assert" | "log" | "warn" | "exit" (records add "argparse")
    file: str
    line: int  # 1-based first line of the statement
    end_line: int
    col: int  # 0-based column of the statement
    end_col: int
    function: str | None  # qualified name: "ServerArgs._handle_x", "handle_x", None at module level
    error_class: str | None  # "ValueError", "AssertionError", "RuntimeWarning"; None for plain logs
    severity: str  # "critical" | "error" | "warning" | "info"
    template: Template
    snippet: str  # source of the statement itself
    guards: tuple[Guard, ...] = ()
    flags: tuple[
        str, ...
    ] = ()  # every CLI flag involved (guards + message expressions), first-seen order
    comment: str | None = None  # comment block right above the statement (without "# ")
    docstring: str | None = None  # enclosing function's docstring
    variant: int = 0  # >0 when one statement can print several texts (msg assigned in branches)
    condition: str | None = None  # assert: its own test source (what failed)
    logger_call: str | None = None  # "logger.warning", "warnings.warn", ...
    bindings: tuple[Binding, ...] = ()  # what the names in the guards/message stand for
    # the flags of the `if` tests its function is always called under (a launch-arguments
    # class's method, or a module's function): those of a site that reads none of its own
    # (extractor/link.py)
    reached: tuple[str, ...] = ()


@dataclass(frozen=True)
class ParseFailure:
    """A file that could not be read or parsed; reported, never fatal to the build."""

    path: str
    line: int
    col: int
    message: str
    source_line: str = ""

    def __str__(self) -> str:
        head = f"{self.path}:{self.line}:{self.col}: {self.message}"
        if not self.source_line:
            return head
        return f"{head}\n    {self.source_line}\n    {' ' * max(self.col - 1, 0)}^"


@dataclass(frozen=True)
class FileExtraction:
    source: SourceFile
    sites: tuple[Site, ...] = ()
    flags: tuple[FlagDecl, ...] = ()
    failures: tuple[ParseFailure, ...] = ()
    stats: dict[str, int] = field(default_factory=dict, compare=False, hash=False)
    # module-level `Name = Literal[...]` aliases: (name, members), a member being a literal
    # value's repr or the name of another alias (`Literal["auto", RunnerType]`)
    literals: tuple[tuple[str, tuple[str, ...]], ...] = ()


# ---------------------------------------------------------------- fix search (records -> verify)


@dataclass(frozen=True)
class Launch:
    """A command line as the fix search handles it: options in order, the environment, and
    what the run's model must be (hf_config overrides, e.g. its architectures)."""

    # (option, value); None: a switch; a tuple: several words (`--buckets tse 1 2 3`)
    args: tuple[tuple[str, str | tuple[str, ...] | None], ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    model: tuple[tuple[str, Any], ...] = ()
    files: tuple[str, ...] = ()  # relative paths the launch expects to exist (a key file)
    # (relative path, text): files the launch writes before it starts (a config file); the
    # command shows them as `echo '...' > path && ...`
    texts: tuple[tuple[str, str], ...] = ()

    def value(self, option: str, default: Any = None) -> Any:
        return next((v for o, v in self.args if o == option), default)

    def has(self, option: str) -> bool:
        return any(o == option for o, _ in self.args)

    def argv(self, quoted: bool = False) -> list[str]:
        """The launch's words; `quoted`: each value as the shell reads it back (`command`)."""
        out: list[str] = []
        for option, value in self.args:
            values = value if isinstance(value, tuple) else () if value is None else (value,)
            if option != POSITIONAL:
                out.append(option)
            out += [_shell_word(v) for v in values] if quoted else values
        return out

    def command(self, launch: str, base: tuple[str, ...] = ()) -> str:
        """`SGLANG_X=1 python -m pkg --a 1 --b`: the line a user pastes. A base option the
        launch sets itself (`--model-path`) is shown once, with the launch's value: the one
        the parser kept (the last wins)."""
        env = [f"{k}={v}" for k, v in self.env]
        argv = self.argv()
        kept = with_base(base, argv)
        words = [w for path, text in self.texts for w in (*_write(path, text), "&&")]
        base_words = kept[: len(kept) - len(argv)]
        words += [*env, launch, *(w if w.startswith("-") else _shell_word(w) for w in base_words)]
        return " ".join([*words, *self.argv(quoted=True)])


POSITIONAL = ""  # the "option" of a word a command takes before its options (`vllm serve MODEL`)


def with_base(base: Sequence[str], argv: Sequence[str]) -> list[str]:
    """`argv` after the arguments every launch needs (`base`), less those `argv` gives itself:
    a base option it sets (the parser keeps the last, the user's), and the base's leading
    positional words when `argv` starts with its own (`vllm serve MODEL` for the base's MODEL)."""
    mine = {w.partition("=")[0] for w in argv if w.startswith("--")}
    own_positional = bool(argv) and not argv[0].startswith("-")
    kept: list[str] = []
    skip, leading = False, True
    for word in base:
        if word.startswith("--"):
            skip, leading = word.partition("=")[0] in mine, False
        elif leading and own_positional:
            continue
        if not skip:
            kept.append(word)
    return [*kept, *argv]


def _write(path: str, text: str) -> tuple[str, ...]:
    """The shell words that write `text` into `path`: one line, so that an example fix keeps
    its shape (a before line and an after line)."""
    if "\n" not in text.rstrip("\n"):
        return ("echo", _quote(text.rstrip("\n")), ">", _shell_word(path))
    escaped = text.replace("\\", "\\\\").replace("%", "%%").replace("\n", "\\n")
    return ("printf", _quote(escaped), ">", _shell_word(path))


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def _shell_word(value: str) -> str:
    """A value as one shell word: quoted only when it must be."""
    if value and re.fullmatch(r"[\w@%+=:,./-]+", value) and not value.startswith("-"):
        return value
    return _quote(value)


@dataclass(frozen=True)
class FixChange:
    """A candidate fix: edits that turn the failing launch into one that may pass.

    edits: ("set", option, value | None) | ("drop", option, None) | ("env", NAME, value | None)
    source: where it came from, which also ranks it: advice (the message says so), allowed
    (a value the check accepts), solve (a value found by solving the guard), env, remove (drop
    a feature flag: tried last)."""

    edits: tuple[tuple[str, str, str | None], ...]
    source: str
    note: str = ""  # the advice or condition it was derived from, for the reason text


# ---------------------------------------------------------------- documentation


@dataclass(frozen=True)
class DocNote:
    """A passage of the project's own documentation about flags: a flag's row in an
    arguments table, a prose sentence naming flags, or a config field's docstring."""

    flags: tuple[str, ...]  # option strings as written ("--tp", "--tp-size"); a field: its name
    text: str  # one sentence, or a table row's whole description
    path: str  # the page (repository-relative)
    anchor: str  # the section's anchor on that page ("" at its top)
    heading: str  # the section's title; a field: its class
    kind: str  # "table" | "prose" | "field"


@dataclass(frozen=True)
class DocLaunch:
    """One launch shown by the docs, a test or CI: the options it sets, as written."""

    args: tuple[str, ...]  # "--tp=2", "--enable-dp-attention" (aliases not resolved)
    model: str  # the model it serves, "" when not written out
    path: str


@dataclass(frozen=True)
class DocFile:
    """What one documentation or launch file holds (the build caches it per blob)."""

    path: str
    notes: tuple[DocNote, ...] = ()
    launches: tuple[DocLaunch, ...] = ()


@dataclass(frozen=True, eq=False)  # compared by identity: one per revision, shared by its sites
class Docs:
    """A revision's documentation, as the knowledge fields read it (records/knowledge/docs.py)."""

    files: tuple[DocFile, ...] = ()
    url: str = ""  # a page's link, with {path} and {anchor} left to fill
    flag_url: str = ""  # a flag's own generated page, with {flag_anchor}; "" when none
    key: str = ""  # what the records built from it depend on (cache keys)


# ---------------------------------------------------------------- dataset


@dataclass(frozen=True)
class Dataset:
    """A dataset directory as read back by records.dataset.read_dataset (docs/CONTRACTS.md)."""

    records: tuple[dict[str, Any], ...] = ()  # schema-v2 records, sorted by id
    revisions: tuple[Revision, ...] = ()  # oldest first
    occurrences: tuple[
        dict[str, Any], ...
    ] = ()  # spans {"id", "file", "function", "guard", "from", "to", "lines"}
    flags: tuple[FlagDecl, ...] = ()  # sorted by name
    lineage: tuple[dict[str, Any], ...] = ()  # {"id", "previousId", "sha"}
    manifest: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    # flaghistory.jsonl: {"name", "from", "to", "choices", "type", "default", "action", "nargs",
    # "options", "file"}, one per run of revisions declaring the flag alike
    flag_history: tuple[dict[str, Any], ...] = ()

    @property
    def dataset_version(self) -> str:
        return str(self.manifest.get("datasetVersion", ""))


# ---------------------------------------------------------------- catalog


# Match, CutLines and Revision, what the catalog answers with, are defined in kverr/answers.py
# (imported at the top): `kverr explain` imports that module alone, and never generates the
# build's types.

# ---------------------------------------------------------------- project profile


def __getattr__(name: str) -> Any:
    """`Profile` and `ExtractRules` live with their loader, kverr/profile.py, and are importable
    from here too: `kverr explain` imports this module at start-up and never reads a profile,
    so it does not pay for generating those two classes."""
    if name in ("Profile", "ExtractRules"):
        from kverr import profile

        return getattr(profile, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---------------------------------------------------------------- serialiser

_TYPES = {
    cls.__name__: cls
    for cls in (
        Revision,
        SourceFile,
        Part,
        Template,
        Guard,
        Binding,
        Assignment,
        FlagDecl,
        Site,
        ParseFailure,
        FileExtraction,
        Launch,
        FixChange,
        DocNote,
        DocLaunch,
        DocFile,
    )
}


_FIELDS: dict[type, tuple[str, ...]] = {}  # field names per dataclass: asked once per class


def _fields(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


_PLAIN = (str, int, float, bool, type(None))


def to_plain(value: Any) -> Any:
    """Dataclasses -> dicts tagged with their type; tuples -> lists. Stable and JSON-ready."""
    kind = type(value)
    if kind in _PLAIN:  # most values: answered before any dataclass check
        return value
    if kind in _FIELDS or (dataclasses.is_dataclass(value) and not isinstance(value, type)):
        out: dict[str, Any] = {"__type__": kind.__name__}
        for name in _fields(kind):
            out[name] = to_plain(getattr(value, name))
        return out
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    return value


def moved(record: Any, **changes: Any) -> Any:
    """dataclasses.replace(record, **changes) for these frozen records, none of which has a
    __post_init__: a copy of its fields with `changes` set, without replace's generic walk
    over every field and __init__ call (replace was 2% of a backfill's time under cProfile,
    re-placing every cached site an edit moved, with its guards and bindings)."""
    new = object.__new__(type(record))
    fields = new.__dict__  # (frozen forbids setattr, not the instance dict)
    fields.update(record.__dict__)
    fields.update(changes)
    return new


def from_plain(value: Any) -> Any:
    if isinstance(value, dict):
        name = value.get("__type__")
        if name in _TYPES:
            cls = _TYPES[name]
            kwargs = {}
            for field_name in _fields(cls):
                if field_name in value:
                    v = from_plain(value[field_name])
                    kwargs[field_name] = tuple(v) if isinstance(v, list) else v
            return cls(**kwargs)
        return {k: from_plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_plain(v) for v in value]
    return value


def to_json(value: Any, *, indent: int | None = None) -> str:
    return json.dumps(to_plain(value), sort_keys=True, indent=indent, ensure_ascii=False)


def from_json(text: str) -> Any:
    return from_plain(json.loads(text))
