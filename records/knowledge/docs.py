"""What the project's own documentation says about a check's flags, read as data.

The build reads the profile's `[docs]` files at each revision (pipeline/docs.py) and hands their
text here; nothing in this module opens a file or runs git.

    read_file(path, text, markers)   one file -> DocFile (the build caches it per blob)

- A Markdown page: each row of an arguments table (`` | `--x`<br>`--y` | what it is | ... | ``)
  and each prose sentence that names a flag, under the anchor of its section; launches in its
  code blocks.
- A Python page (a config module): each class field's docstring (`x: int = 1` then a string),
  which is what the project renders as that option's documentation.
- A launch file: the launch commands it runs (a line naming the launch command, in a script,
  a workflow, a notebook or a code block), and in a Python test the runs of lines holding
  option strings (`"--tp", "2", "--enable-dp-attention"`).

Then per check, over the flags it reads: `about` (what the flag is, from the docs), `rules`
(sentences of the docs that state a rule about those flags), `usage` (how the launches use a
flag: with which options, values and models) and `link` (the page a record's "Learn more" opens).
"""

from __future__ import annotations

import ast
import functools
import json
import re
import shlex
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from kverr.extractor.context import callee_name, is_docstring
from kverr.extractor.pysource import module_or_none
from kverr.records.conditions import join_words, or_list

from kverr.argforms import abbreviated
from kverr.ftypes import DocFile, DocLaunch, DocNote, Docs, FlagDecl

_OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9_.-]*[a-z0-9]")
_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_TAG = re.compile(
    r"</?(?:br|p|div|span|sup|sub|b|i|em|strong|code|a|img|details|summary)\b[^>]{0,200}>", re.I
)
_EMPHASIS = re.compile(r"(\*\*|__)(.+?)\1")
# (a list item, `- "none": ...` after a sentence or the colon that opens the list, starts one
# of its own)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(]|- )|(?<=:)\s+(?=- )")
_MAX_SENTENCE = 400
_MAX_FILE = 2_000_000  # characters of one file read (a generated dump is no documentation)


def read_file(
    path: str,
    text: str,
    markers: Sequence[str] = (),
    *,
    page: bool = False,
    shows: bool = True,
    calls: Sequence[str] = (),
) -> DocFile:
    """One documentation or launch file as notes and launches; `markers` are the words a
    launch command line holds (the profile's launch modules and executables); `calls` the
    calls that launch with keyword options in Python (`LLM(...)`); `page`: a Python file
    is a documentation page, not only a launch file: its notes are read (a Markdown file's
    tables and prose, a Python file's fields' docstrings); `shows`: it is a file whose
    launches count (a config module read for its docstrings holds the checks' own messages,
    whose option strings are no launch)."""
    text = text[:_MAX_FILE]
    notes: Sequence[DocNote] = ()
    launches: Sequence[DocLaunch] = ()
    if path.endswith(".md"):
        notes, launches = _markdown(path, text, markers)
    elif path.endswith(".ipynb"):
        launches = _notebook(path, text, markers)
    elif path.endswith(".py"):
        notes = _fields(path, text) if page else ()
        launches = (*_python_launches(path, text, markers), *_call_launches(path, text, calls))
        launches = launches if shows else ()
    else:
        launches = _command_lines(path, text.splitlines(), markers)
    return DocFile(path, tuple(notes) if page else (), tuple(launches) if shows else ())


# ---------------------------------------------------------------- Markdown


def slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, punctuation dropped, spaces
    to hyphens."""
    text = _LINK.sub(r"\1", heading).replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def flag_slug(option: str) -> str:
    """The anchor an mkdocs page gives a heading that is an option (Python-Markdown's
    default: punctuation dropped, runs of spaces and hyphens to one hyphen)."""
    text = re.sub(r"[^\w\s-]", "", option).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _plain(text: str) -> str:
    """Markdown inline text as prose: links by their words, no tags or emphasis marks (code
    spans keep their backticks: a reader sees the option as code)."""
    text = re.sub(r"<br\s*/?>", " ", text, flags=re.I)
    text = _LINK.sub(r"\1", text)
    text = re.sub(
        r"^(>\s*)+(\[!\w+\]\s*)?((note|tip|warning|important)\s*:\s*)?", "", text, flags=re.I
    )
    text = _TAG.sub("", text)
    text = _EMPHASIS.sub(r"\2", text)
    return " ".join(text.split())


def _markdown(
    path: str, text: str, markers: Sequence[str]
) -> tuple[tuple[DocNote, ...], tuple[DocLaunch, ...]]:
    notes: list[DocNote] = []
    launches: list[DocLaunch] = []
    heading, anchor = "", ""
    header: list[str] | None = None  # the cells of the table being read
    seen: Counter[str] = Counter()
    fenced: list[str] | None = None
    para: list[str] = []
    lines = text.splitlines()

    def flush() -> None:
        if para:
            notes.extend(_prose(" ".join(para), path, anchor, heading))
            para.clear()

    for line in lines:
        if _FENCE.match(line):
            if fenced is None:
                flush()
                fenced = []
            else:
                launches.extend(_command_lines(path, fenced, markers))
                fenced = None
            continue
        if fenced is not None:
            fenced.append(line)
            continue
        m = _HEADING.match(line)
        if m:
            flush()
            header = None
            heading = _plain(m.group(2))
            base = slug(m.group(2))
            anchor = base if not seen[base] else f"{base}-{seen[base]}"
            seen[base] += 1
            continue
        stripped = line.strip()
        if stripped.startswith("|"):
            flush()
            header = header or _cells(stripped)  # a table's first row heads it
            row = _table_row(stripped, _described(header), path, anchor, heading)
            if row is not None:
                notes.append(row)
            continue
        header = None
        if not stripped or re.match(r"([-*+]|\d+\.)\s", stripped):
            flush()  # a list item starts a paragraph of its own
        if stripped:
            para.append(re.sub(r"^([-*+]|\d+\.)\s+", "", stripped))
    flush()
    return tuple(notes), tuple(launches)


def _cells(row: str) -> list[str]:
    """A table row's cells; a `|` inside a code span is not a border."""
    cells, cur, code = [], [], False
    for ch in row.strip().strip("|"):
        if ch == "`":
            code = not code
        if ch == "|" and not code:
            cells.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    cells.append("".join(cur).strip())
    return cells


def _described(header: list[str]) -> int:
    """The column of a table that describes its options: the one headed so ("Description",
    "Usage"), else the second (`| Argument | Type / Default | Description |` puts it third)
    unless its heading says it holds something else; -1 for none (`| Argument | Defaults |
    Options | A2 | A3 |`, a platform's support matrix, says what is supported, not what each
    option is)."""
    words = ("descr", "usage", "meaning", "purpose", "explanation")
    named = next((i for i, h in enumerate(header) if h.lower().startswith(words)), None)
    if named is not None:
        return named
    other = ("default", "option", "choice", "value", "type", "required", "support")
    return -1 if len(header) < 2 or header[1].lower().startswith(other) else 1


def _table_row(row: str, column: int, path: str, anchor: str, heading: str) -> DocNote | None:
    """An arguments table's row (`` | `--x`<br>`--y` | description | default | options | ``)."""
    cells = _cells(row)
    if column < 1 or len(cells) <= column or set(cells[0]) <= set("-: "):
        return None
    names = tuple(dict.fromkeys(re.findall(r"`(-{1,2}[a-z][\w.-]*)`", cells[0])))
    options = [n for n in names if n.startswith("--")]
    text = _plain(cells[column])
    if not options or not text:
        return None
    return DocNote(names, text, path, anchor, heading, "table")


def _prose(paragraph: str, path: str, anchor: str, heading: str) -> list[DocNote]:
    text = _plain(paragraph)
    out = []
    for sentence in _SENTENCE_END.split(text):
        flags = tuple(dict.fromkeys(_OPTION.findall(sentence)))
        if flags and len(sentence) <= _MAX_SENTENCE and not sentence.rstrip().endswith(":"):
            out.append(DocNote(flags, sentence.strip(), path, anchor, heading, "prose"))
    return out


# ---------------------------------------------------------------- Python


def _fields(path: str, text: str) -> tuple[DocNote, ...]:
    """Each class field's docstring (`name: T = v` followed by a string literal)."""
    tree = module_or_none(text)
    if tree is None:
        return ()
    out = []
    for cls in ast.walk(tree):
        if not isinstance(cls, ast.ClassDef):
            continue
        body = cls.body
        for stmt, nxt in zip(body, body[1:], strict=False):
            name = _target(stmt)
            if name and is_docstring(nxt):
                doc = " ".join(nxt.value.value.split())
                if doc:
                    out.append(DocNote((name,), doc, path, "", cls.name, "field"))
    return tuple(out)


def _target(stmt: ast.stmt) -> str | None:
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return stmt.target.id
    if (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
    ):
        return stmt.targets[0].id
    return None


_STRING = re.compile(r"\"([^\"\\\n]{0,300})\"|'([^'\\\n]{0,300})'")
_OPTION_STRING = re.compile(r"[\"']--[a-z][a-z0-9-]*[a-z0-9](?:[= ][^\"'\n]{0,200})?[\"']")


def _python_launches(path: str, text: str, markers: Sequence[str]) -> tuple[DocLaunch, ...]:
    """A test's launches: runs of nearby lines holding option strings, read as one argument
    list each (`other_args=["--tp", "2", "--enable-dp-attention"]`), and command lines in
    strings that name the launch command."""
    out = list(_command_lines(path, text.splitlines(), markers))
    if not _OPTION_STRING.search(text):
        return tuple(out)
    run: list[str] = []
    last = -10
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not _OPTION_STRING.search(line) or any(m in line for m in markers):
            continue
        if line.lstrip().startswith("#"):
            continue  # a launch commented out ("TODO: fix this and re-enable it") runs nowhere
        if i - last > 2 and run:
            out.extend(_launch(run, path))
            run = []
        run += [a or b for a, b in _STRING.findall(line)]
        last = i
    if run:
        out.extend(_launch(run, path))
    return tuple(out)


def _call_launches(path: str, text: str, calls: Sequence[str]) -> list[DocLaunch]:
    """A test's launches through the engine's Python entry points (`calls`): each keyword
    with a literal value as the option of its name (`tensor_parallel_size=2` ->
    `--tensor-parallel-size=2`, `enforce_eager=True` -> `--enforce-eager`, False -> the
    `--no-` form, a dict as its JSON), the model from `model=` or the first argument; a
    module-level string constant stands for its value."""
    if not calls or not any(c + "(" in text for c in calls):
        return []
    tree = module_or_none(text)
    if tree is None:
        return []
    consts = {
        t.id: n.value.value
        for n in tree.body
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
        for t in n.targets
        if isinstance(t, ast.Name) and isinstance(n.value.value, str)
    }

    def value(node: ast.expr) -> object:
        if isinstance(node, ast.Name) and node.id in consts:
            return consts[node.id]
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None

    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and callee_name(node.func) in calls):
            continue
        model = value(node.args[0]) if node.args else None
        args = []
        for kw in node.keywords:
            v = value(kw.value) if kw.arg else None
            if v is None:
                continue
            name = "--" + kw.arg.replace("_", "-")  # type: ignore[union-attr]
            if kw.arg == "model":
                model = v
            elif v is True:
                args.append(name)
            elif v is False:
                args.append("--no-" + name[2:])
            elif isinstance(v, (int, float, str)):
                args.append(f"{name}={v}")
            elif isinstance(v, dict):
                args.append(f"{name}={json.dumps(v, default=str)}")
        model = model if isinstance(model, str) else ""
        if args or model:
            out.append(DocLaunch(tuple(args), _model_word(model), path))
    return out


_OPTION_LIKE = re.compile(r"-(?![\d.])")  # "-1" and "-.5" are values, "-v" an option


def given_options(words: list[str]) -> list[tuple[str, str | None]] | None:
    """(option, its value; None for a switch) of a launch's words: `--x v`, `--x=v`, `--x`;
    None when a word that looks like an option reads as none (`-x`)."""
    found = _launch(words, "")
    args = found[0].args if found else ()
    if len(args) != sum(1 for w in words for t in w.split() if _OPTION_LIKE.match(t)):
        return None
    return [(name, value if eq else None) for name, eq, value in (a.partition("=") for a in args)]


def _launch(words: list[str], path: str, model: str = "") -> list[DocLaunch]:
    tokens = [t for w in words for t in w.split()]
    args: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.startswith("--") and _OPTION.fullmatch(tok.split("=", 1)[0]):
            if "=" in tok:
                args.append(tok)
            elif i + 1 < len(tokens) and not _OPTION_LIKE.match(tokens[i + 1]):
                args.append(f"{tok}={tokens[i + 1]}")
                i += 1
            else:
                args.append(tok)
        i += 1
    for a in args:
        name, _, value = a.partition("=")
        if name in ("--model-path", "--model") and value:
            model = model or value
    return [DocLaunch(tuple(args), _model_word(model), path)] if args else []


def _command_lines(path: str, lines: Sequence[str], markers: Sequence[str]) -> list[DocLaunch]:
    """The launch command lines among `lines` (continuations joined): the words after the
    marker, up to the end of the line or of the string holding it."""
    if not markers:
        return []
    out: list[DocLaunch] = []
    joined: list[str] = []
    cur = ""
    for line in lines:
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1] + " "
            continue
        joined.append(cur + line)
        cur = ""
    if cur:
        joined.append(cur)
    for line in joined:
        for marker in markers:
            at = line.find(marker)
            if at < 0:
                continue
            quote = line[at - 1] if at > 0 and line[at - 1] in "\"'" else None
            rest = line[at + len(marker) :]
            before = line[:at]
            if quote is None:
                q = re.search(r"[\"']([^\"']*)$", before)
                quote = before[q.start()] if q else None
            if quote and quote in rest:
                rest = rest[: rest.index(quote)]
            words = shell_words(rest.split("#", 1)[0] if quote is None else rest)
            model = ""
            if marker.endswith(" serve") and words and not words[0].startswith("-"):
                model, words = words[0], words[1:]
            out.extend(_launch(words, path, model))
            break
    return out


def shell_words(text: str) -> list[str]:
    """A command line's words as a shell splits them; an unclosed quote splits at spaces."""
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _notebook(path: str, text: str, markers: Sequence[str]) -> tuple[DocLaunch, ...]:
    try:
        cells = json.loads(text).get("cells", [])
    except (ValueError, AttributeError):
        return ()
    out: list[DocLaunch] = []
    for cell in cells if isinstance(cells, list) else []:
        source = cell.get("source") if isinstance(cell, dict) else None
        if isinstance(source, list):
            source = "".join(s for s in source if isinstance(s, str))
        if isinstance(source, str):
            out += _command_lines(path, source.splitlines(), markers)
    return tuple(out)


_SIZE = re.compile(
    r"-(\d+(\.\d+)?[bBmMkKtT]|\d{4}|instruct|chat|base|it|fp8|awq|gptq|int4|hf)\b.*$", re.I
)


def _model_word(model: str) -> str:
    """A model family from a model id ("deepseek-ai/DeepSeek-V3-0324" -> "DeepSeek-V3");
    "" for a placeholder or a variable."""
    name = model.strip().strip("\"'").rstrip("/").rpartition("/")[2]
    if not re.fullmatch(r"[A-Za-z][\w.-]{1,80}", name) or name.isupper() or "$" in model:
        return ""
    family = _SIZE.sub("", name)
    if (
        len(family) < 3
        or family.isupper()
        or re.fullmatch(r"[a-z]+", family)
        or re.match(r"(your|my|path|example|some|the)[-_]", family, re.I)
    ):
        return ""  # a placeholder ("MODEL", "model") or a plain word, not a model's name
    return family


# ---------------------------------------------------------------- reading a check's flags


@dataclass(frozen=True)
class Usage:
    """How the launches of a revision's docs, tests and CI use one flag."""

    launches: int
    together: tuple[tuple[str, int], ...]  # other flags set in those launches, most often first
    values: tuple[tuple[str, int], ...]  # values it is given there, most often first
    models: tuple[tuple[str, int], ...]  # model families served there


class _Index:
    """Lookups over one revision's Docs, built once per Docs object."""

    def __init__(self, docs: Docs) -> None:
        self.table: dict[str, DocNote] = {}
        self.prose: dict[str, list[DocNote]] = {}
        self.fields: dict[tuple[str, str], DocNote] = {}
        self.field_names: dict[str, list[DocNote]] = {}
        self.launches: list[DocLaunch] = []
        # The arguments page (the most table rows) first: a feature page's own small table
        # ("| `--attention-backend` | string; default: fa3 |") does not say what a flag is.
        rows = Counter(f.path for f in docs.files for n in f.notes if n.kind == "table")
        for f in sorted(docs.files, key=lambda f: -rows[f.path]):
            for n in f.notes:
                if n.kind == "table":
                    for name in n.flags:
                        self.table.setdefault(name, n)
                elif n.kind == "field":
                    self.fields.setdefault((n.heading, n.flags[0]), n)
                    self.field_names.setdefault(n.flags[0], []).append(n)
                else:
                    for name in n.flags:
                        self.prose.setdefault(name, []).append(n)
            self.launches += f.launches
        self.common = self._common()

    def _common(self) -> set[str]:
        """Options in more than a sixth of the launches (a port, the model, the host): they go
        with everything, so they say nothing about one flag."""
        counts = Counter(a.split("=", 1)[0] for la in self.launches for a in set(la.args))
        return {o for o, n in counts.items() if n * 10 > len(self.launches) >= 12}


@functools.lru_cache(maxsize=4)
def _index(docs: Docs) -> _Index:
    return _Index(docs)


def names(flag: str, decls: dict[str, FlagDecl]) -> tuple[str, ...]:
    """The option strings a flag is declared with (`--tp-size`, `--tensor-parallel-size`)."""
    d = decls.get(flag)
    return tuple(dict.fromkeys([flag, *((d.options or ()) if d else ())]))


class _Options:
    """A revision's option strings -> the flags they name, a launch's short form (`--tp` for
    `--tp-size`) read as the parser reads it (kverr.argforms.abbreviated)."""

    def __init__(self, decls: dict[str, FlagDecl]) -> None:
        self.decls = decls
        self.exact = {o: name for name in decls for o in names(name, decls)}
        self._read: dict[str, str | None] = {}  # (a revision's launches repeat their words)

    def owner(self, typed: str) -> str | None:
        if typed not in self._read:
            found = abbreviated(typed, self.exact)
            self._read[typed] = self.exact[found] if found else None
        return self._read[typed]


_OPTIONS: list[_Options] = []  # (the last revision's: launches are read flag by flag)


def _options(decls: dict[str, FlagDecl]) -> _Options:
    if not _OPTIONS or _OPTIONS[0].decls is not decls:
        _OPTIONS[:] = [_Options(decls)]
    return _OPTIONS[0]


def about(flag: str, decls: dict[str, FlagDecl], docs: Docs | None) -> DocNote | None:
    """The docs' own entry for a flag: its arguments-table row, else its config field's
    docstring (the class its default names, `ModelConfig.max_model_len`, else the one class
    that has a field of that name)."""
    if docs is None:
        return None
    idx = _index(docs)
    for name in names(flag, decls):
        if name in idx.table:
            return idx.table[name]
    d = decls.get(flag)
    attr = (d.dest if d else flag.lstrip("-").replace("-", "_")).rpartition(".")[2]
    m = re.fullmatch(r"(\w+)\.(\w+)", (d.default or "") if d else "")
    if m and (m.group(1), m.group(2)) in idx.fields:
        return idx.fields[(m.group(1), m.group(2))]
    found = idx.field_names.get(attr, [])
    return found[0] if len({n.heading for n in found}) == 1 else None


_RULE = re.compile(
    r"\b(must|should|(?<!-)only(?!-)|requires?|required|needs?|cannot|can ?not|not (be )?(supported|"
    r"compatible|allowed)|incompatible|conflicts?|divisible|multiple of|equal to|at least|at "
    r"most|greater than|less than|no larger|no more|exceed|ignored|has no effect|mutually)\b",
    re.I,
)


def rules(
    flags: Sequence[str],
    words: set[str],
    decls: dict[str, FlagDecl],
    docs: Docs | None,
    within: Sequence[str] = (),
    *,
    ties: set[str],
) -> list[DocNote]:
    """Sentences of the docs that state a rule about these flags (must, only, requires,
    divisible, ...) and share at least two content words with `words` (the check's message
    and its other options) besides the words of the options they name, one of them a word of
    `ties` (the message's and the other options' words that are no word of the option
    described: "If users set the `model` param, the speculative method is detected" shares
    only "speculative", "model" and "type" with an Eagle3 check of
    --speculative-config.method, no tie to the check; "the tp size must be a multiple of the
    dp size" is tied to a dp-attention check by "tp"): the flags' table rows past their first
    sentence, and prose naming them. With `within` (every option the check reads), a sentence
    that also names another option is left out: it states the rule of another check ("with
    `--page-size > 1` and `--speculative-eagle-topk > 1`, only flashinfer" is no reason for a
    page-size check that never reads the top-k)."""
    if docs is None:
        return []
    idx = _index(docs)
    out: list[DocNote] = []
    for flag in flags:
        row = about(flag, decls, docs)
        if row is not None:
            out += [
                DocNote(row.flags, s, row.path, row.anchor, row.heading, row.kind)
                for s in _standalone(sentences(row.text))[1:]
            ]
        for name in names(flag, decls):
            out += idx.prose.get(name, [])
    keep = []
    for n in dict.fromkeys(out):
        own = content_words(" ".join(n.flags))
        if n.text.rstrip().endswith(":"):
            continue  # (it opens a list or a block the note does not hold)
        # (words too common in option names alone, "model" and "type", tie it to no check)
        shared = (content_words(n.text) - own) & words
        if _RULE.search(n.text) and len(shared) >= 2 and (shared - _GENERIC) & ties:
            if not within or _names_only(n, within, decls):
                keep.append(n)
    return keep


def _standalone(said: list[str]) -> list[str]:
    """An entry's sentences less those that are one of a list of values (`- "align": only
    cache ...` says what that value does) and what follows such an item about it ("This is the
    default behavior ..."); past the entry's own words, a pronoun is the option itself."""
    out = said[:1]
    for before, s in zip(said, said[1:], strict=False):
        if s.startswith("- ") or s.endswith(":") or (before.startswith("- ") and _PRONOUN.match(s)):
            continue  # (one ending in a colon opens a list or a block: alone it says nothing)
        out.append(s)
    return out


_PRONOUN = re.compile(r"(?:this|that|it|they|these|those)\b", re.I)


def _names_only(note: DocNote, flags: Sequence[str], decls: dict[str, FlagDecl]) -> bool:
    """Whether every option of the project `note` names is one of `flags` (by any of its
    option strings, a launch's short form of one, or the option a config field of `flags`
    belongs to). A field's docstring names its field bare (`num_speculative_tokens`): no
    option string, so nothing to compare."""
    opts = _options(decls)
    # (an option of another tool, `numactl --physcpubind`, is no option of the project's)
    named = {opts.owner(o) for o in (*note.flags, *_OPTION.findall(note.text))} - {None}
    mine = set(flags) | {fl.partition(".")[0] for fl in flags}
    return named <= mine


def usage(
    flag: str, decls: dict[str, FlagDecl], docs: Docs | None, value: str | None = None
) -> Usage | None:
    """How the revision's launches use `flag` (given `value`, when one is named); None when
    none sets it. A JSON option's field (`--speculative-config.method`) counts where the
    launch writes the option's JSON with that field."""
    if docs is None:
        return None
    found = []
    for la in _index(docs).launches:
        got = _values(la, flag, decls)
        if got and (value is None or value in got):
            found.append((la, got))
    if not found:
        return None
    return _tally(found, {flag}, decls, docs)


def launches(docs: Docs) -> list[DocLaunch]:
    """Every launch of the revision's docs, tests and CI, in file order."""
    return _index(docs).launches


def given(la: DocLaunch, flag: str, decls: dict[str, FlagDecl]) -> str | None:
    """The value the launch gives `flag` ("" for a switch; the last, when given twice), None
    when it does not set it."""
    got = _values(la, flag, decls)
    return got[-1] if got else None


def _values(la: DocLaunch, flag: str, decls: dict[str, FlagDecl]) -> list[str]:
    opts = _options(decls)
    parent, dot, field = flag.partition(".")
    out = []
    for arg in la.args:
        name, _, value = arg.partition("=")
        owner = opts.owner(name) or name
        if owner == flag:
            out.append(value)
        elif dot and owner == parent and value:
            got = _json_field(value, field)
            if got is not None:
                out.append(got)
    return out


def met_by(
    found: Sequence[DocLaunch],
    flags: set[str],
    decls: dict[str, FlagDecl],
    docs: Docs,
    verb: tuple[str, str],
    what: str,
) -> str:
    """Launches, in one sentence: "In this release's docs and tests, 3 launches hit it
    (benchmark/README.md, test/test_x.py), most often with --dp-size, serving DeepSeek-V3."
    `verb`: its singular and plural ("hits", "hit"); `what` follows it (" it on an SM100
    (Blackwell) GPU", " with --enable-dp-attention"); `flags`: the ones `what` names, which
    the options they go with leave out."""
    used = _tally([(la, []) for la in found], flags, decls, docs)
    paths = list(dict.fromkeys(la.path for la in found))
    more = f" and {len(paths) - 2} more files" if len(paths) > 3 else ""  # (not "1 more files")
    shown = ", ".join(paths if not more else paths[:2]) + more
    count = f"one launch {verb[0]}" if used.launches == 1 else f"{used.launches} launches {verb[1]}"
    return f"In this release's docs and tests, {count}{what} ({shown}){_company(used)}."


def _tally(
    found: Sequence[tuple[DocLaunch, list[str]]],
    flags: set[str],
    decls: dict[str, FlagDecl],
    docs: Docs,
) -> Usage:
    """What goes with `flags` in these launches: the values they give them, the other options
    set (all but the ones every launch sets), the models served."""
    idx = _index(docs)
    opts = _options(decls)
    canon = opts.exact
    words = {w for flag in flags for w in re.split(r"[-_.]", flag.lstrip("-"))}
    own = {canon.get(n, n) for flag in flags for n in names(flag.partition(".")[0], decls)}
    together: Counter[str] = Counter()
    values: Counter[str] = Counter()
    models: Counter[str] = Counter()
    for la, got in found:
        # (a value that is a word of the option's name is a placeholder: "backend")
        values.update(g for g in got if _usable_value(g) and g not in words)
        others = set()
        for a in la.args:
            name = a.partition("=")[0]
            owner = opts.owner(name)
            if name in idx.common or owner is None or owner in own:
                continue
            others.add(owner)
        together.update(others)
        if la.model:
            models[la.model] += 1

    def ranked(c: Counter[str]) -> tuple[tuple[str, int], ...]:
        return tuple(sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))  # ties by name

    return Usage(len(found), ranked(together), ranked(values), ranked(models))


def _json_field(text: str, field: str) -> str | None:
    """A JSON option's field as written in a launch (`{"method": "ngram"}` -> ngram)."""
    try:
        held = json.loads(text)
    except ValueError:
        return None
    got = held.get(field) if isinstance(held, dict) else None
    return str(got) if isinstance(got, (str, int, float)) and not isinstance(got, bool) else None


def _usable_value(value: str) -> bool:
    """A value written out, not a shell variable, a placeholder or a template."""
    if not value or len(value) > 80 or re.fullmatch(r"\[[A-Za-z_]\w*\]", value):
        return False  # ([a_list_variable] names what goes there, it is no value)
    return not (unresolved(value) or re.search(r"[<>{}]|^[A-Z_]{3,}$", value))


def unresolved(value: str) -> bool:
    """A launch's word that stands for a value the page does not give: what a shell expands
    (`"$MAX_NUM_SEQS"`), `<size>` or an f-string's `{MODEL_PATH}`."""
    return "$" in value or bool(re.fullmatch(r"<[^<>]*>|\{\w*\}", value))


def link(flag: str, decls: dict[str, FlagDecl], docs: Docs | None) -> str | None:
    """The page a reader opens to learn more about `flag`: a page about it (its name in a
    heading, or three or more sentences naming it), else its arguments-table section, else
    the project's generated page for it."""
    if docs is None or not docs.url:
        return _flag_url(flag, docs)
    idx = _index(docs)
    mine = names(flag, decls)
    prose = [n for name in mine for n in idx.prose.get(name, [])]
    by_page = Counter(n.path for n in prose)
    titled = [n for n in prose if any(name in n.heading for name in mine)]
    if titled:
        return page_url(docs, titled[0].path, titled[0].anchor)
    # A feature page: it names the flag three times or more, and its file name shares a word
    # with the flag (speculative_decoding.md and --speculative-algorithm), so a page that
    # only shows the flag in its commands (a platform's) is not taken for its documentation.
    flag_words = set(re.split(r"[-_.]", flag.lstrip("-"))) - _GENERIC
    for path, count in by_page.most_common():
        page_words = set(re.split(r"[-_./]", path.rsplit("/", 1)[-1].rsplit(".", 1)[0]))
        if count >= 3 and flag_words & page_words - _STOP:
            return page_url(docs, path, "")
    row = about(flag, decls, docs)
    if row is not None and row.kind == "table":
        return page_url(docs, row.path, row.anchor)
    return _flag_url(flag, docs) or (
        page_url(docs, row.path, row.anchor) if row is not None else None
    )


def _flag_url(flag: str, docs: Docs | None) -> str | None:
    """The generated page's entry for the option (a JSON option's field: the option's)."""
    if docs is None or not docs.flag_url:
        return None
    return docs.flag_url.replace("{flag_anchor}", flag_slug(flag.split(".", 1)[0]))


def page_url(docs: Docs, path: str, anchor: str) -> str:
    url = docs.url.replace("{path}", path).replace("{anchor}", anchor)
    return url[:-1] if url.endswith("#") else url


# ---------------------------------------------------------------- prose helpers


def sentences(text: str) -> list[str]:
    """Sentences of a description, not cut at an abbreviation."""
    return [unheld(p).strip() for p in _SENTENCE_END.split(held(text)) if p.strip()]


# An abbreviation's period ends no sentence: "e.g. x", and before a word in lower case, a
# short one ("Min. batch size cannot be greater than max. batch size").
_ABBREVIATION = re.compile(
    r"\b((?:e\.g|i\.e|etc|vs)\.)\s+|\b((?:min|max|approx|avg|incl|no|num)\.)\s+(?=[a-z])",
    re.I,
)


def held(text: str) -> str:
    """`text` with the space after each abbreviation held (\x01), so no sentence split takes it;
    `unheld` gives the space back."""
    return _ABBREVIATION.sub(lambda m: (m.group(1) or m.group(2)) + "\x01", text)


def unheld(text: str) -> str:
    return text.replace("\x01", " ")


# Words of option names too common to tie a page to one option.
_GENERIC = {"enable", "disable", "max", "min", "num", "size", "path", "mode", "backend", "type",
            "use", "config", "model", "server", "tokens", "level"}  # fmt: skip
# (two-letter function words too: "to" and "of" made a pipeline page's sentence about chunk
# sizes "share two words" with a page-size check)
_STOP = {"this", "that", "with", "when", "only", "must", "should", "will", "have", "from", "into",
         "than", "then", "also", "used", "uses", "using", "does", "not", "the", "and", "for",
         "are", "can", "set", "if", "be", "is", "it", "its", "you", "your", "more", "default",
         "to", "of", "or", "in", "on", "at", "by", "as", "an", "so", "no", "do", "we"}  # fmt: skip


def content_words(text: str) -> set[str]:
    out = set()
    for w in re.findall(r"[a-z0-9]{2,}", text.lower().replace("_", " ").replace("-", " ")):
        # (a plural in -ies is its -y word: "entries" and "entry" are one word)
        if len(w) > 4 and w.endswith("ies"):
            w = w[:-3] + "y"
        elif len(w) > 4 and w.endswith("s"):
            w = w[:-1]
        if w not in _STOP:
            out.add(w)
    return out


def seen_in_launches(used: Usage | None, shown: str, *, values: bool = True) -> str:
    """How the revision's launches use an option, in one sentence: "In this release's docs and
    tests, --enable-dp-attention is set in 179 launches (as ...), most often with
    --moe-a2a-backend and --dp-size, serving DeepSeek-V3." `shown`: the option as named there
    (with the value a check tests); `values`: say the values given. "" when fewer than two
    launches set it, or nothing goes with it."""
    if used is None or used.launches < 2:
        return ""
    given = [v for v, _ in used.values][:3] if values else []
    company = _company(used)
    if not (company or given):
        return ""
    text = f"In this release's docs and tests, {shown} is set in {used.launches} launches"
    if given:
        text += f" (as {or_list(tuple(given))})"
    return text + company + "."


def _company(used: Usage) -> str:
    """ ", most often with --dp-size and --tp-size, serving DeepSeek-V3": the options set in a
    quarter or more of the launches (two at least), and the models they serve."""
    others = [o for o, n in used.together if n >= 2 and n * 4 >= used.launches][:3]
    models = [m for m, _ in used.models][:3]
    text = f", most often with {join_words(others)}" if others else ""
    return text + (f", serving {join_words(models)}" if models else "")


def common_values(usage: Usage | None) -> list[str]:
    """The values the launches give a flag, most often first."""
    return [v for v, _ in usage.values] if usage is not None else []
