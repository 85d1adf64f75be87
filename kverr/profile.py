"""Project profiles: one declarative TOML file per project, read into a frozen `Profile`.

    load_profile("vllm")            a profile shipped in kverr/profiles/
    load_profile("my/project.toml") a file of your own (same tables)
    load_profile(None)              the default project, SGLang (kverr's first)

A profile says everything about a project that kverr's stages must not hard-code: its file
set and repository, the launch command fixes are written in, logger methods, which classes'
fields are CLI flags, probes and environment prefixes, the log forms a paste carries, the
product name used in wording, and (optionally) how its checks are verified. The tables are
documented in profiles/sglang.toml and docs/CONTRACTS.md; unknown keys are errors, so a typo
never silently falls back to a default.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from kverr import DEFAULT_PROJECT, regexsafe
from kverr.errors import ProfileError
from kverr.ftypes import to_json

DEFAULT = DEFAULT_PROJECT  # the project a build or catalog without a profile belongs to
SEVERITIES = ("critical", "error", "warning", "info")
_NAME = re.compile(r"[a-z][a-z0-9_-]{0,39}")
_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_IDENT_GLOB = re.compile(r"[A-Za-z0-9_*?\[\]!.]+")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,80}")
_FILE_GLOB = re.compile(r"[A-Za-z0-9_*?./\[\]-]{1,200}")
_PATH = re.compile(r"[A-Za-z_]\w{0,80}(?:\.[A-Za-z_]\w{0,80}){1,4}")  # a dotted attribute path
_OPTION = re.compile(r"--[a-z0-9][a-z0-9-]{0,80}")
_SENTENCE = re.compile(r"[^\x00-\x1f\x7f]{1,300}")
_EXPRESSION = re.compile(r"[\w. +*/()-]{1,200}")  # arithmetic over names and --options

_SHA = r"[0-9a-f]{7,40}"
_DATE = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"

# Where each field of a Profile stands in the TOML, table by table ("" is the top level):
# (key, field, how it is read: a _Getter method and its further arguments, when as_tables writes
# it back). `extract.x` is a field of Profile.extract, `advice.x` of Profile.advice. `when`:
# "required" (and always written), "always", "set" (when not empty), "read" (another field
# writes the key). parse_profile reads it, as_tables writes it back, _KEYS is the keys it knows.
_FIELDS: dict[str, tuple[tuple[str, str, tuple[Any, ...], str], ...]] = {
    "": (
        ("name", "name", ("text",), "required"),
        ("product", "product", ("text",), "required"),
        ("repository", "repository", ("text",), "required"),
        ("files", "files", ("strings", True), "required"),
        ("launch_path", "extract.launch_path", ("strings",), "set"),
    ),
    "launch": (
        ("command", "launch", ("text",), "required"),
        ("model", "model", ("text",), "required"),
        ("modules", "launch_modules", ("strings",), "set"),
        ("executables", "launch_executables", ("strings",), "set"),
        ("dumps", "dumps", ("strings",), "set"),
        ("hardware_options", "hardware_options", ("strings",), "set"),
        ("archive", "archive", ("text", ""), "set"),
        ("since_files", "launch_since", ("strings",), "set"),
        ("before", "launch_before", ("text", ""), "set"),
    ),
    "extract": (
        ("log_methods", "extract.log_methods", ("severities",), "required"),
        ("flag_classes", "extract.flag_classes", ("idents", True), "required"),
        ("config_classes", "extract.config_classes", ("idents",), "always"),
        ("config_views", "extract.config_views", ("idents",), "always"),
        ("args_names", "extract.args_names", ("idents",), "always"),
        ("view_calls", "extract.view_calls", ("idents",), "always"),
        ("args_getters", "extract.args_getters", ("idents",), "always"),
        ("argument_kwargs", "extract.argument_kwargs", ("text", ""), "set"),
        ("phases", "extract.phases", ("idents",), "set"),
        ("launch_copies", "extract.launch_copies", ("idents",), "set"),
        ("code_fills", "extract.code_fills",
         ("mapping", _PATH, _IDENT, '"config.field" = "config_view"'), "set"),
    ),
    "identity": (
        ("namespace", "id_namespace", ("text", ""), "always"),
        ("receivers", "id_receivers", ("idents",), "always"),
        ("call_receivers", "id_call_receivers", ("idents",), "always"),
    ),
    "knowledge": (
        ("env_prefixes", "env_prefixes", ("idents",), "always"),
        ("own_env_prefixes", "own_env_prefixes", ("idents",), "always"),
        ("own_env_prefixes", "extract.env_prefixes", ("idents",), "read"),
        ("earlier_checks", "earlier_checks", ("text", "all"), "always"),
        ("file_tags", "file_tags", ("tags",), "always"),
        ("request_checks", "request_checks",
         ("options_of", _FILE_GLOB, _IDENT_GLOB, '"file glob" = ["function glob", ...]'), "always"),
        ("platforms", "platforms", ("words",), "always"),
        ("hardware", "hardware", ("words",), "always"),
        ("models", "models", ("words",), "always"),
        ("built", "built", ("idents",), "always"),
    ),
    "knowledge.catch": (
        ("import", "catch_import", ("as_text",), "always"),
        ("call", "catch_call", ("as_text",), "always"),
        ("files", "catch_files", ("as_strings",), "always"),
    ),
    "explain": (
        ("log_prefixes", "log_prefixes", ("forms", False), "always"),
        ("log_suffixes", "log_suffixes", ("forms", True), "always"),
        ("programs", "programs", ("strings",), "always"),
    ),
    "docs": (
        ("pages", "docs_pages", ("strings",), "set"),
        ("launches", "docs_launches", ("strings",), "set"),
        ("launch_calls", "docs_launch_calls", ("idents",), "set"),
        ("url", "docs_url", ("text", ""), "set"),
        ("flag_url", "docs_flag_url", ("text", ""), "set"),
    ),
    "releases": (
        ("bump", "release_bump", ("pattern",), "set"),
        ("commits", "release_commits", ("versions", _SHA), "set"),
        ("dates", "release_dates", ("versions", _DATE), "set"),
    ),
    "advice": (
        ("derived", "advice.derived", ("mapping", _IDENT, _OPTION, 'name = "--option"'), "set"),
        ("caveats", "advice.caveats",
         ("mapping", _OPTION, _SENTENCE, '"--option" = "words"'), "set"),
        ("raised_by", "advice.raised_by", ("options_of",), "set"),
        ("computed", "advice.computed",
         ("mapping", _IDENT, _EXPRESSION, 'name = "a * --option"'), "set"),
    ),
}  # fmt: skip
# what a _Getter method reads, in the TOML; the others read tables
_KIND = {
    "text": "str",
    "pattern": "str",
    "as_text": "str",
    "strings": "list",
    "idents": "list",
    "forms": "list",
    "as_strings": "list",
}
_VERIFY_TABLES = ("verify", "platform", "model")
# table -> key -> its kind; the verify step's own spec is free-form ([verify], and the named
# [platform.*] and [model.*] profiles that answer the probes its checks make)
_KEYS: dict[str, dict[str, str]] = {
    **{
        t: {key: _KIND.get(how[0], "table") for key, _, how, _ in rows}
        for t, rows in _FIELDS.items()
    },
    **{t: {} for t in _VERIFY_TABLES},
}
_KEYS["knowledge"]["catch"] = "table"  # (the one table within a table)
_REQUIRED = {
    t: keys
    for t, rows in _FIELDS.items()
    if (keys := tuple(r[0] for r in rows if r[3] == "required"))
}


@dataclass(frozen=True)
class ExtractRules:
    """How the extractor reads one project's source: its `[extract]` profile table.

    Name lists are globs (fnmatch, case-sensitive) over Python identifiers."""

    # logger method -> severity ("warning_once" -> "warning")
    log_methods: tuple[tuple[str, str], ...]
    flag_classes: tuple[str, ...]  # classes whose fields are CLI flags (`--field-name`)
    # Classes whose fields reach the CLI through a flag class's field (whose default names them,
    # `x: int = SchedulerConfig.x`) or through the class's own JSON option (`--speculative-config`,
    # written `--speculative-config.field=value`).
    config_classes: tuple[str, ...] = ()
    # attributes holding such a config object (`self.cache_config`)
    config_views: tuple[str, ...] = ()
    args_names: tuple[str, ...] = ()  # parameters that hold the args object
    # calls returning a view of the args object (`resolved_view(a)`)
    view_calls: tuple[str, ...] = ()
    # argument-less calls returning it (`get_global_server_args()`)
    args_getters: tuple[str, ...] = ()
    # The launch path (the profile's `launch_path` globs): modules the launch runs through
    # after the arguments are parsed (model runner, memory pools, workers, platforms). Only
    # their sites that name a flag, an args field or one of `env_prefixes`' variables, or
    # whose guard reads one, are kept (extractor/link.py); there the args object is also
    # recognised as an attribute (`self.server_args`, `self.cache_config`) of any object.
    launch_path: tuple[str, ...] = ()
    # Attributes that objects on the launch path keep a flag's value in, under the flag's own
    # dest (vLLM's OpenAI server copies `self.max_model_len` from the model config): a read of
    # one there is a read of that flag, whatever holds it.
    launch_copies: tuple[str, ...] = ()
    # Config fields the code fills with a config the flags built, not the user: a read through
    # one is a read of that config (`speculative_config.target_model_config` -> `model_config`:
    # its `max_model_len` is --max-model-len). config field path -> config view.
    code_fills: tuple[tuple[str, str], ...] = ()
    env_prefixes: tuple[str, ...] = ()
    # What an add_argument call that unpacks a mapping (`**kwargs["x"]`) declares: "annotation"
    # (the flag class field's type annotation decides type, choices and action, as vLLM's
    # get_kwargs derives them); "" (unknown: argparse's answers assume nothing)
    argument_kwargs: str = ""
    # Methods of a flag class that run its phases, in the order a launch calls them
    # (`__post_init__`, then `check_server_args`): what the methods they call assign runs before
    # the checks of later ones (extractor/phases.py)
    phases: tuple[str, ...] = ()

    def severity(self) -> dict[str, str]:
        return dict(self.log_methods)


@dataclass(frozen=True)
class AdviceRules:
    """What explain's advice (kverr/advice.py) needs beyond the records: the profile's
    `[advice]`. Read when a paste is answered, never by a build."""

    # a value a check reads that an option sets, under a name no option has (`context_len`:
    # --context-length, else the model's own): name -> option
    derived: tuple[tuple[str, str], ...] = ()
    # what still bounds a value the advice raises an option to: option -> sentence
    caveats: tuple[tuple[str, str], ...] = ()
    # a value a check reads that grows with options (the KV pool's size with the memory
    # fraction): name -> the options
    raised_by: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # a value a check reads that the code computed from options, under a name of its own
    # (vLLM's `requested_memory`): name -> the expression, its options as `--option`
    computed: tuple[tuple[str, str], ...] = ()
    # an option the launch command takes as a word after it instead (vLLM's `vllm serve MODEL`
    # for --model): option -> the command; from the `[verify]` table's positional and launch
    positional: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Profile:
    """One project, declared in `profiles/<name>.toml` (kverr.profile loads it); every stage
    reads what it needs from here instead of naming a product. See docs/CONTRACTS.md."""

    name: str  # "vllm": the `project` of its records
    product: str  # "vLLM": the name used in wording
    repository: str  # GitHub owner/name that githubUrl links point into
    files: tuple[str, ...]  # the file set (globs, repository-relative)
    launch: str  # launch command template with `{model}`: "vllm serve {model}"
    model: str  # what `{model}` shows in example commands: "MODEL"
    extract: ExtractRules
    # identity: SGLang's ids predate profiles and are hashed without a namespace
    id_namespace: str = ""
    id_receivers: tuple[str, ...] = ()  # receivers dropped from flag reads (`self.`, `cfg.`)
    id_call_receivers: tuple[str, ...] = ()  # ... and from calls on them (`resolved(cfg).`)
    # knowledge fields
    # `VLLM` in VLLM_X: a message naming one of these variables is about the environment
    env_prefixes: tuple[str, ...] = ()
    own_env_prefixes: tuple[str, ...] = ()  # the project's own: a fix may set one (`APP_X=1`)
    platforms: tuple[tuple[str, str], ...] = ()  # probe -> where it holds ("is_rocm" -> "ROCm")
    hardware: tuple[tuple[str, str], ...] = ()  # probe -> what it needs ("{0}": its first argument)
    models: tuple[tuple[str, str], ...] = ()  # model property -> its kind ("is_moe" -> "MoE")
    built: tuple[str, ...] = ()  # objects the engine builds for every launch (`model_config`)
    earlier_checks: str = "all"  # "all" | "related": which passed checks feed the trigger and fix
    catch_import: str = ""  # tryCatchPattern: the import, the call that runs the checks, and the
    catch_call: str = ""  # files whose raises that call reaches
    catch_files: tuple[str, ...] = ()
    file_tags: tuple[tuple[str, tuple[str, ...]], ...] = ()  # tag -> file globs
    # the checks a served request runs, not the launch: file glob -> function globs
    request_checks: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # explain: log-line forms this project prints around a message (regexes, bounded, matched
    # at the start / end of a line); named groups `file` and `line` say where it was logged
    log_prefixes: tuple[str, ...] = ()
    log_suffixes: tuple[str, ...] = ()
    # the names argparse prints as `PROG: error: ...` for this project's launch commands: an
    # argparse error another program printed (`pip: error: ...`) is not this project's
    programs: tuple[str, ...] = ()
    # how a launch of this project looks in a paste (kverr/launch.py): `python -m MODULE`, an
    # executable's words ("vllm serve"), and the markers a logged literal of its arguments
    # follows ("non-default args:")
    launch_modules: tuple[str, ...] = ()
    launch_executables: tuple[str, ...] = ()
    dumps: tuple[str, ...] = ()
    # options that say what hardware a launch has (their product is its GPU count): a fix of
    # the user's own launch, and advice from a message's values, change them last
    hardware_options: tuple[str, ...] = ()
    # where `kverr check` fetches a release's source when the user has none: a URL template
    # with {repository} and {sha} (a tar.gz of the tree at that commit)
    archive: str = ""
    # the launch command arrived with one of `launch_since` (files); a revision with none of
    # them is launched as `launch_before` (`vllm serve` came in July 2024)
    launch_since: tuple[str, ...] = ()
    launch_before: str = ""
    # the project's own documentation, read at each revision built (records/knowledge/docs.py):
    # `docs_pages` globs of pages (Markdown: argument tables and prose; Python: config fields'
    # docstrings), `docs_launches` globs of files whose launches (docs examples, tests, CI)
    # show which options are set together and with what values; `docs_url` links a page
    # ({repository}, {sha}, {release}, {path}, {anchor}), `docs_flag_url` a flag's own
    # generated page ({release}, {flag_anchor}), when the project renders one;
    # `docs_launch_calls` the calls in Python launch files that start the engine with its
    # options as keywords (`LLM(model=..., tensor_parallel_size=2)`: `--tensor-parallel-size=2`)
    docs_pages: tuple[str, ...] = ()
    docs_launches: tuple[str, ...] = ()
    docs_launch_calls: tuple[str, ...] = ()
    docs_url: str = ""
    docs_flag_url: str = ""
    # release names for a repository without release tags (a fork): a regex over commit
    # subjects whose `version` group names the release that commit made ("Bump version to
    # v0.5.0"), the upstream release commits (version -> sha) and each release's date (version
    # -> ISO date); pipeline/releases.py names the revisions built from them
    release_bump: str = ""
    release_commits: tuple[tuple[str, str], ...] = ()
    release_dates: tuple[tuple[str, str], ...] = ()
    # the verify step's spec: {"verify": ..., "platform": ..., "model": ...} (those tables, as
    # canonical JSON: what verify's VerifySpec.from_table reads); None: not verifiable yet
    verify: str | None = None
    advice: AdviceRules = AdviceRules()

    def verifiable(self) -> bool:
        """Whether a verify spec exists for this project (its [verify] tables: verify/spec.py's
        spec_for). Without one, no fix is ever run, so what the records show must be runnable
        as written."""
        return self.verify is not None

    @property
    def launch_path(self) -> tuple[str, ...]:
        """The second file set (globs): where the launch goes after its arguments parse."""
        return self.extract.launch_path

    def file_set(self) -> tuple[str, ...]:
        """What a build reads: the file set, then the launch path."""
        return self.files + tuple(g for g in self.launch_path if g not in self.files)

    def launch_command(self) -> str:
        return self.launch.replace("{model}", self.model)

    def launched_at(self, present: Callable[[str], bool]) -> Profile:
        """The profile at a revision, given which files it has: its launch command is
        `launch_before` there when none of `launch_since` exists yet."""
        if self.launch_before and not any(present(p) for p in self.launch_since):
            return replace(self, launch=self.launch_before)
        return self

    def fingerprint(self, part: str = "") -> str:
        """16 hex over the profile (`part="extract"`: over its extraction rules only), for the
        build's cache keys: what a profile changes must be rebuilt, nothing else."""
        # the advice is read by explain alone: changing it rebuilds nothing
        value = self.extract if part == "extract" else replace(self, advice=AdviceRules())
        return hashlib.sha256(to_json(value).encode()).hexdigest()[:16]


def builtin_names() -> list[str]:
    """Profiles shipped with kverr, by name."""
    return sorted(
        p.name[: -len(".toml")]
        for p in resources.files("kverr.profiles").iterdir()
        if p.name.endswith(".toml")
    )


def load_profile(spec: str | Path | None = None) -> Profile:
    """A shipped profile by name, or a TOML file by path; None: the default (SGLang)."""
    if isinstance(spec, Profile):
        return spec
    if spec is None or (isinstance(spec, str) and spec in builtin_names()):
        return _builtin(spec or DEFAULT)
    path = Path(spec)
    if not path.is_file():
        raise ProfileError(
            f"profile {spec} is neither a shipped profile ({', '.join(builtin_names())}) nor a "
            "file; pass one of those names or the path of a profile TOML."
        )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(f"cannot read profile {path} ({exc}); pass a UTF-8 TOML file.") from None
    return parse_profile(text, str(path))


@cache
def _builtin(name: str) -> Profile:
    text = resources.files("kverr.profiles").joinpath(f"{name}.toml").read_text(encoding="utf-8")
    return parse_profile(text, f"kverr/profiles/{name}.toml")


def default_profile() -> Profile:
    return _builtin(DEFAULT)


def parse_profile(text: str, where: str = "profile") -> Profile:
    """A Profile from TOML text; ProfileError names the file, the key and what is wrong."""
    try:  # Python 3.11+
        import tomllib
    except ImportError:  # pragma: no cover - Python 3.10 (pyproject pulls in tomli there)
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{where} is not valid TOML ({exc}); fix the file.") from None
    _check_tables(doc, where)
    get = _Getter(doc, where)
    got: dict[str, dict[str, Any]] = {"": {}, "extract": {}, "advice": {}}
    for table, rows in _FIELDS.items():
        for key, name, (how, *args), _ in rows:
            part, _, field = name.rpartition(".")
            got[part][field] = getattr(get, how)(table, key, *args)
    top, extract = got[""], got["extract"]
    for wrong, said in (  # the first that holds is reported
        ("{model}" not in top["launch"],
         '[launch] command must contain {model} (e.g. "vllm serve {model}").'),
        (top["launch_before"] and "{model}" not in top["launch_before"],
         "[launch] before must contain {model}, as command does."),
        (extract["argument_kwargs"] not in ("", "annotation"),
         '[extract] argument_kwargs must be "annotation" or absent.'),
        (top["earlier_checks"] not in ("all", "related"),
         '[knowledge] earlier_checks must be "all" or "related".'),
        (not _NAME.fullmatch(top["name"]),
         f"name {top['name']!r} must be lower-case letters, digits, - or _."),
        (not _REPO.fullmatch(top["repository"]),
         f"repository {top['repository']!r} must be a GitHub owner/name."),
        (("platform" in doc or "model" in doc) and "verify" not in doc,
         "[platform] and [model] tables belong to a [verify] table; add it."),
    ):  # fmt: skip
        if wrong:
            raise ProfileError(f"{where}: {said}")
    verify = {t: doc[t] for t in _VERIFY_TABLES if t in doc} if "verify" in doc else None
    return Profile(
        **top,
        extract=ExtractRules(**extract),
        advice=AdviceRules(**got["advice"], positional=_positional(verify)),
        verify=json.dumps(verify, sort_keys=True) if verify is not None else None,
    )


def _positional(verify: dict[str, Any] | None) -> tuple[tuple[str, str], ...]:
    """(--option, launch command) for each word the launch command takes as an option's
    value (`positional = { model_tag = "model" }`, `launch = "vllm serve"`)."""
    table = (verify or {}).get("verify") or {}
    words = table.get("positional") or {}
    if not isinstance(words, dict) or not isinstance(table.get("launch"), str):
        return ()
    return tuple((f"--{dest.replace('_', '-')}", table["launch"]) for dest in words.values())


def _check_tables(doc: dict[str, Any], where: str) -> None:
    """Required keys present; unknown tables and keys are errors: a typo must not silently
    fall back to a default."""
    for table, keys in _REQUIRED.items():
        here = doc if not table else doc.get(table)
        if not isinstance(here, dict):
            raise ProfileError(f"{where}: the [{table}] table is missing; add it.")
        for key in keys:
            if key not in here:
                raise ProfileError(f"{where}: {'.'.join(filter(None, (table, key)))} is missing.")
    _check_keys(doc, "", where)


def _check_keys(table: dict[str, Any], prefix: str, where: str) -> None:
    if prefix in _VERIFY_TABLES:
        return  # the verify step's own spec
    allowed = _KEYS[prefix]
    for key, value in table.items():
        full = f"{prefix}.{key}" if prefix else key
        if full in _KEYS and (not prefix or allowed.get(key) == "table"):
            if not isinstance(value, dict):
                raise ProfileError(f"{where}: {full} must be a table.")
            _check_keys(value, full, where)
            continue
        if key not in allowed:
            known = sorted(allowed) + (
                [f"[{t}]" for t in _KEYS if t and "." not in t] if not prefix else []
            )
            raise ProfileError(
                f"{where}: unknown key {full!r}; known in [{prefix or 'top level'}]: "
                f"{', '.join(known)}."
            )


class _Getter:
    """Typed reads from the parsed TOML, each failing with the file and key."""

    def __init__(self, doc: dict[str, Any], where: str) -> None:
        self.doc, self.where = doc, where

    def _raw(self, table: str, key: str, default: Any) -> Any:
        here = self.doc
        for part in filter(None, table.split(".")):
            here = here.get(part, {})
        return here.get(key, default)

    def _fail(self, table: str, key: str, what: str) -> ProfileError:
        return ProfileError(f"{self.where}: {'.'.join(filter(None, (table, key)))} must be {what}.")

    def text(self, table: str, key: str, default: str | None = None) -> str:
        value = self._raw(table, key, default)
        if not isinstance(value, str):
            raise self._fail(table, key, "a string")
        return value

    def strings(self, table: str, key: str, nonempty: bool = False) -> tuple[str, ...]:
        value = self._raw(table, key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self._fail(table, key, "a list of strings")
        if nonempty and not value:
            raise self._fail(table, key, "a non-empty list")
        return tuple(value)

    def idents(self, table: str, key: str, nonempty: bool = False) -> tuple[str, ...]:
        value = self.strings(table, key, nonempty=nonempty)
        if not all(_IDENT_GLOB.fullmatch(v) for v in value):
            raise self._fail(table, key, "a list of names or name globs (letters, digits, _ * ?)")
        return value

    def table(self, table: str, key: str) -> dict[str, Any]:
        value = self._raw(table, key, {})
        if not isinstance(value, dict):
            raise self._fail(table, key, "a table")
        return value

    def as_text(self, table: str, key: str) -> str:
        return str(self._raw(table, key, ""))  # (unchecked, as [knowledge.catch] always was)

    def as_strings(self, table: str, key: str) -> tuple[str, ...]:
        value = self._raw(table, key, [])
        if not isinstance(value, list):
            raise self._fail(table, key, "a list of strings")
        return tuple(str(v) for v in value)

    def severities(self, table: str, key: str) -> tuple[tuple[str, str], ...]:
        value = self.table(table, key)
        for method, severity in value.items():
            if severity not in SEVERITIES or not method.isidentifier():
                raise ProfileError(
                    f"{self.where}: [{table}] {key}.{method} = {severity!r}; use a method name"
                    f" and one of {', '.join(SEVERITIES)}."
                )
        return tuple(sorted(value.items()))

    def tags(self, table: str, key: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
        value = self.table(table, key)
        if not all(isinstance(globs, list) for globs in value.values()):
            raise self._fail(table, key, 'a table of tag = ["file globs"]')
        return tuple((tag, tuple(str(g) for g in globs)) for tag, globs in value.items())

    def words(self, table: str, key: str) -> tuple[tuple[str, str], ...]:
        value = self.table(table, key)
        if not all(isinstance(v, str) and k.isidentifier() for k, v in value.items()):
            raise self._fail(table, key, 'a table of probe = "words"')
        return tuple(sorted(value.items()))

    def mapping(
        self, table: str, key: str, keys: re.Pattern[str], values: re.Pattern[str], what: str
    ) -> tuple[tuple[str, str], ...]:
        value = self.table(table, key)
        if not all(
            isinstance(v, str) and keys.fullmatch(k) and values.fullmatch(v)
            for k, v in value.items()
        ):
            raise self._fail(table, key, f"a table of {what}")
        return tuple(sorted(value.items()))

    def options_of(
        self,
        table: str,
        key: str,
        names: re.Pattern[str] = _IDENT,
        items: re.Pattern[str] = _OPTION,
        what: str = 'name = ["--option", ...]',
    ) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """A table of name = [item, ...] (one item may stand alone): by default a name and the
        options it goes with."""
        value = self.table(table, key)
        out = []
        for name, flags in sorted(value.items()):
            flags = [flags] if isinstance(flags, str) else flags
            if not (
                names.fullmatch(name)
                and isinstance(flags, list)
                and flags
                and all(isinstance(f, str) and items.fullmatch(f) for f in flags)
            ):
                raise self._fail(table, key, f"a table of {what}")
            out.append((name, tuple(flags)))
        return tuple(out)

    def pattern(self, table: str, key: str) -> str:
        value = self.text(table, key, "")
        try:
            if value and "version" not in re.compile(value).groupindex:
                raise self._fail(table, key, "a regex with a (?P<version>...) group")
        except re.error as exc:
            raise self._fail(table, key, f"a regex ({exc})") from None
        return value

    def versions(self, table: str, key: str, shape: str) -> tuple[tuple[str, str], ...]:
        value = self.table(table, key)
        for version, text in value.items():
            if not (isinstance(text, str) and re.fullmatch(shape, text)):
                raise self._fail(table, f"{key}.{version}", f"a string like {shape!r}")
        return tuple(value.items())

    def forms(self, table: str, key: str, suffix: bool) -> tuple[str, ...]:
        forms = self.strings(table, key)
        for form in forms:
            why = regexsafe.line_form_problem(form, suffix=suffix)
            if why:
                raise ProfileError(
                    f"{self.where}: [{table}] {key} has {form!r}, which cannot run on pasted "
                    f"text: {why}."
                )
        return forms


def as_tables(profile: Profile) -> dict[str, Any]:
    """The profile in its TOML shape (tables and keys as in profiles/*.toml): what a dataset's
    manifest records as `profile`, and what the catalog reads back for `kverr explain`."""
    out: dict[str, Any] = {}
    for table, rows in _FIELDS.items():
        for key, name, (how, *_), when in rows:
            value = functools.reduce(getattr, name.split("."), profile)
            if when == "read" or (when == "set" and not value):
                continue
            here = out
            for part in filter(None, table.split(".")):
                here = here.setdefault(part, {})
            kind = _KIND.get(how, "table")
            here[key] = (
                list(value)
                if kind == "list"
                else {k: list(v) if isinstance(v, tuple) else v for k, v in value}
                if kind == "table"
                else value
            )
    if profile.verify is not None:
        out.update(json.loads(profile.verify))  # [verify], [platform.*], [model.*] as written
    return out
