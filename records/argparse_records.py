"""argparse's own errors as records (`kind: "argparse"`), derived from each revision's flags.

The errors people hit first at launch come from the parser, before any check of the project
runs: `argument --attention-backend: invalid choice: 'torch_sdpa' (choose from ...)`,
`unrecognized arguments: --kt-amx-method AMXINT4`, `argument --tp-size: expected one argument`,
`argument --tp-size: invalid int value: 'x'`. argparse prints them from the `add_argument`
declarations, so they are derived from those (the build's flag history, pipeline/history.py),
one record per flag and error form, for the forms a declaration can produce:

    invalid-choice     the flag declares choices
    invalid-value      its type is a conversion that can fail (int, float, json.loads, ...; not
                       str, and not a class name: an annotation is no function argparse calls)
    expected-argument  it takes a value (nargs unset, "+" or a count; not "?", "*", a switch
                       such as store_true, or a custom Action whose arity is unknown)
    unrecognized       it was removed (or renamed): the newest revision built lacks it; the
                       record applies where the flag is absent. One more per project, flag
                       `null`, for any other option: a flag added later (explain says from
                       which release on it exists), a typo (the closest names), another
                       program's option. Records for every flag added at some point would
                       be most of the flags again, and say nothing the generic answer does not.

A field no `add_argument` call names is no argparse option: it gets none. Ids hash kind, form
and flag (never choices or types), so they stay the same across releases; the text is the
newest declaration's, and where the answer depends on the release (the choices of each one,
where a value or a flag was accepted) the catalog computes it at explain time from the flag
history (catalog/argparse_answers.py). Each record's pattern starts with a short lazy group,
`before`, of the text in front of the message: explain reads the program name argparse put
there (`launch_server.py: error: ...`) and keeps only the project's own programs.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kverr.records import EPOCH, SLUG_CHARS, slugify
from kverr.records.identity import hash_key
from kverr.records.knowledge.parser import parser_knowledge
from kverr.records.pattern import escape_literal

from kverr.argforms import (
    FORMS,
    accepted_options,
    applies,
    conversion,
    expected_count,
    is_switch,
    literal_default,
    takes_value,
)
from kverr.ftypes import Docs, FlagDecl, Profile, Revision

BEFORE = r"(?P<before>.{0,100}?)"  # a leading lazy group: matched in linear time (catalog)
_VALUE = r"""(?P<v0>'[^']{0,256}'|"[^"]{0,256}"|[^ ]{1,256})"""  # what %r prints
NOT_VERIFIED = {
    "status": "unverified",
    "platform": None,
    "revision": None,
    # verify/step.py replaces it with --verify: the fix through the revision's own parser
    "reason": "an argparse error, read from the flag's declarations; the build did not run"
    " the revision's parser on its fix (kverr build --verify)",
}

Source = Callable[[str, int], "str | None"]  # (path, revision ord) -> the file's text


# ---------------------------------------------------------------- records


def record_id(form: str, flag: str | None, profile: Profile) -> str:
    """kind | form | flag, namespaced like every id of the profile: stable across releases."""
    key = f"argparse|{form}|{flag or '*'}"
    return hash_key(f"{profile.id_namespace}|{key}" if profile.id_namespace else key)


def argparse_records(
    spans: Sequence[dict[str, Any]],
    decls: dict[str, FlagDecl],
    revisions: Sequence[Revision],
    newest_ord: dict[str, int],
    source: Source,
    profile: Profile,
    repo: str,
    checked: Callable[[dict], bool] = lambda rec: False,
    invalid: dict[str, str] | None = None,
    docs: Docs | None = None,
    launched: Callable[[int], Profile] | None = None,
) -> tuple[list[dict], list[dict]]:
    """(records, occurrence spans) of every argparse error the flag history allows, sorted by
    id, each validated (schema and pattern) unless `checked(record)` says it already was (the
    build remembers validated records: a rebuild derives 500 of them again in milliseconds).
    `invalid`: as for build_records (a record that fails is left out, with its spans).
    `spans`: flaghistory.jsonl lines; `decls`: each flag's newest declaration (help, line);
    `newest_ord`: the revision that declaration is from, whose text `source` reads; `docs`: the
    newest revision's documentation (what an option is for, how launches use it); `launched`:
    the profile as the project launched at a revision (an example at a flag's newest revision
    is written with that release's launch command)."""
    by_flag: dict[str, list[dict]] = {}
    for sp in sorted(spans, key=lambda s: (s["name"], s["from"])):
        if sp.get("options"):
            by_flag.setdefault(sp["name"], []).append(sp)
    everywhere = set(range(len(revisions)))
    accepted: set[tuple[str, int]] = set()  # (option string, ord) argparse accepts
    for sp in spans:
        for opt in accepted_options(sp):
            accepted.update((opt, n) for n in range(sp["from"], sp["to"] + 1))
    recs, occs = [], []
    for name, flag_spans in by_flag.items():
        decl = decls.get(name)
        if decl is None:
            continue
        at = newest_ord.get(name, flag_spans[-1]["to"])
        ctx = _Context(decl, at, revisions, source)
        then = launched(at) if launched is not None else profile
        for form in FORMS[:3]:
            mine = [sp for sp in flag_spans if applies(form, sp)]
            if mine:
                ords = {n for sp in mine for n in range(sp["from"], sp["to"] + 1)}
                rec = _record(form, name, mine, ctx, then, repo)
                rec.update(_knowledge(form, name, mine, revisions, decls, docs))
                recs.append(rec)
                occs += _occurrences(rec, ords)
        # removed (or renamed): the newest revision lacks it. A flag added later is answered
        # by the generic record, which says from which release on it exists.
        absent = {n for n in everywhere if (name, n) not in accepted}
        if len(revisions) - 1 in absent and absent != everywhere:
            rec = _record("unrecognized", name, flag_spans, ctx, then, repo)
            rec.update(_knowledge("unrecognized", name, flag_spans, revisions, decls, docs))
            recs.append(rec)
            occs += _occurrences(rec, absent)
    for generic in _generic(by_flag, decls, newest_ord, revisions, source, profile, repo):
        recs.append(generic)
        occs += _occurrences(generic, everywhere)
    from kverr.records import valid_only

    failed: dict[str, str] = {} if invalid is None else invalid
    recs = valid_only(recs, None if invalid is None else failed, checked)
    occs = [o for o in occs if o["id"] not in failed]
    return sorted(recs, key=lambda r: r["id"]), occs


class _Context:
    """Where a flag's newest declaration is: its revision, its file and the call's lines."""

    def __init__(self, decl: FlagDecl, ord_: int, revisions: Sequence[Revision], source: Source):
        self.decl, self.revision = decl, revisions[ord_]
        lines = _lines(source(decl.file, ord_) or "")
        self.start = max(1, decl.line)
        self.end = max(self.start, decl.end_line or decl.line)
        self.code = "\n".join(lines[self.start - 1 : self.end]) if lines else ""


@functools.lru_cache(maxsize=8)
def _lines(text: str) -> list[str]:
    return text.splitlines()


def _occurrences(rec: dict, ords: Iterable[int]) -> list[dict]:
    """Runs of consecutive ords as occurrence spans. argparse records keep no line per revision
    (`lines` is empty): the place is the flag's declaration, its line the newest's."""
    out: list[dict] = []
    for n in sorted(ords):
        if out and out[-1]["to"] == n - 1:
            out[-1]["to"] = n
            continue
        out.append(
            {"id": rec["id"], "file": rec["filePath"], "function": None, "guard": "",
             "from": n, "to": n, "lines": []}
        )  # fmt: skip
    return out


def _alternation(texts: Iterable[str]) -> str:
    alts = sorted({escape_literal(t) for t in texts}, key=lambda t: (-len(t), t))
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def _knowledge(
    form: str,
    name: str,
    spans: list[dict],
    revisions: Sequence[Revision],
    decls: dict[str, FlagDecl],
    docs: Docs | None,
) -> dict[str, Any]:
    newest = spans[-1]
    return parser_knowledge(
        form, name, spans, revisions, decls, docs,
        kind=conversion(newest) or "", count=expected_count(newest) or "",
    )  # fmt: skip


def _record(
    form: str, name: str, spans: list[dict], ctx: _Context, profile: Profile, repo: str
) -> dict:
    """One flag's record of one form, worded from its newest declaration of that form. The
    fields stay short: what depends on the release is the answer's (computed at explain)."""
    newest = spans[-1]
    shown = "/".join(newest["options"])
    joined = _alternation("/".join(sp["options"]) for sp in spans)
    good = literal_default(newest.get("default")) or (newest.get("choices") or [""])[0]
    if form == "invalid-choice":
        message = f"argument {shown}: invalid choice: {{value!r}} (choose from {{choices}})"
        pattern = (
            f"{BEFORE}argument {joined}: invalid choice: {_VALUE}"
            # {0,1000}: RE2's largest repeat count (a pattern it cannot compile loses its linear-time
            # path); the longest choice list of any release prints 314 characters.
            r"(?: \(choose from (?P<v1>[^)]{0,1000})(?P<closed>\))?)?"
        )
        placeholders = ["value", "choices"]
        trigger = f"{name} given a value that is not one of its choices in the installed release."
        fix = (
            f"Pass one of the choices of your release (the newest: {', '.join(newest['choices'])})."
        )
        example = (f"{name} {_not_a_choice(newest)}", f"{name} {newest['choices'][0]}")
    elif form == "invalid-value":
        kind = conversion(newest) or ""
        own = newest.get("invalid")  # the revision's own type helpers' words (build time)
        if own and not own.startswith("invalid "):  # (argparse's own words: the general form)
            message = f"argument {shown}: {own}"
            pattern = f"{BEFORE}argument {joined}: " + _template_pattern(own)
            placeholders = ["value"]
        else:
            message = f"argument {shown}: invalid {{type}} value: {{value!r}}"
            pattern = (
                f"{BEFORE}argument {joined}: invalid (?P<v0>[\\w.<>]{{1,80}}) value: "
                + _VALUE.replace("v0", "v1")
            )
            placeholders = ["type", "value"]
        trigger = f"{name} given a value that is not {_article(kind)}."
        fix = f"Give {name} {_article(kind)}{_default_text(newest)}."
        # JSON-looking, refused for a trailing comma (the slip users make), and no `{name}`
        # a reader could take for a placeholder the message failed to fill
        bad = '{"key": 1,}' if "loads" in (own or kind) else f"NOT_A_{kind.upper()}"
        example = (f"{name} {shlex.quote(bad)}", f"{name} {good}" if good else "")
    elif form == "expected-argument":
        message = f"argument {shown}: expected {{count}} argument"
        pattern = (
            f"{BEFORE}argument {joined}: expected "
            r"(?P<v0>one|at least one|[0-9]{1,3}) arguments?"
        )
        placeholders = ["count"]
        trigger = f"{name} last on the command line, or followed by another option."
        fix = f"Write a value after {name}{_default_text(newest)}, or leave it out."
        example = (name, f"{name} {good}" if good else "")
    else:
        message = f"unrecognized arguments: {name}"
        # the flag's name outside any group: its letters count for the match (a per-flag
        # record shadows the project's generic one on the same text)
        pattern = (
            f"{BEFORE}unrecognized arguments: (?P<head>(?:.{{0,500}}? )?){escape_literal(name)}"
            r"(?P<tail>(?:[ =].{0,1000})?)"
        )
        placeholders = []
        trigger = f"{name} given to a release that no longer declares it."
        fix = f"Leave {name} out, or run a release that has it."
        example = (f"{name}{_removed_value(spans)}", "")
    rid = record_id(form, name, profile)
    rec = _base(rid, message, pattern, placeholders, ctx, profile, repo)
    rec.update(
        {
            "slug": _slug(f"{form} {name}", rid),
            "flags": [name],
            "triggerScenarios": trigger,
            "solutions": [fix],
            "exampleFix": _example(profile, *example),
            "backgroundTag": "deprecated-option" if form == "unrecognized" else "invalid-value",
            "argparse": {"flag": name, "form": form},
        }
    )
    return rec


def _not_a_choice(f: dict) -> str:
    """A value the option's type converts but its choices refuse (a word, for a typed option,
    is refused by the conversion first, in other words)."""
    numbers = [int(c) for c in f["choices"] if c.lstrip("-").isdigit()]
    if f.get("type") and "int" in f["type"] and numbers:
        return str(max(numbers) + 1)
    return "NOT_A_CHOICE"


def _template_pattern(template: str) -> str:
    """The pattern of an invalid-value template (extractor.converters): the value as `{value!r}`
    or `{value}` prints it (group v0), a function's address as any address."""
    pieces = re.split(r"(\{value!r\}|\{value\}|\{address\})", template)
    out, seen = [], False
    for piece in pieces:
        if piece == "{value!r}" and not seen:
            out.append(_VALUE)
        elif piece == "{value}" and not seen:
            out.append(r"(?P<v0>.{1,256}?)")
        elif piece == "{address}":
            out.append(r"0x[0-9a-f]{1,16}")
        else:
            out.append(escape_literal(piece.replace("{{", "{").replace("}}", "}")))
            continue
        seen = seen or piece != "{address}"
    return "".join(out)


_SAMPLE = {"int": "1", "float": "0.5"}  # a value of the flag's own type, where it had one


def _removed_value(spans: list[dict]) -> str:
    """What followed the removed flag on a command line of the releases that had it: nothing
    for a switch (the newest declaration may be a custom Action of unknown arity, such as a
    deprecation shim: the newest span whose arity is known decides), else a value."""
    for sp in reversed(spans):
        if is_switch(sp):
            return ""
        if takes_value(sp):
            return " " + _SAMPLE.get(sp.get("type") or "", "VALUE")
    return " VALUE"


def _generic(
    by_flag: dict[str, list[dict]],
    decls: dict[str, FlagDecl],
    newest_ord: dict[str, int],
    revisions: Sequence[Revision],
    source: Source,
    profile: Profile,
    repo: str,
) -> list[dict]:
    """The project's records for what no per-flag record names: an unrecognized option (a
    typo, another program's option), an abbreviation that starts several options, a required
    argument left out. explain computes their answers (the closest option names, the options
    meant, which releases require what)."""
    newest = len(revisions) - 1
    present = [n for n, sp in by_flag.items() if sp[-1]["to"] == newest and n in decls]
    if not present:
        return []
    files: dict[str, list[FlagDecl]] = {}
    for n in present:
        files.setdefault(decls[n].file, []).append(decls[n])
    first = min(max(files.values(), key=len), key=lambda d: d.line)
    ctx = _Context(first, newest_ord.get(first.name, newest), revisions, source)
    rid = record_id("unrecognized", None, profile)
    rec = _base(
        rid,
        "unrecognized arguments: {args}",
        f"{BEFORE}unrecognized arguments: (?P<v0>.{{1,1000}})",  # 1000: RE2's largest repeat
        ["args"],
        ctx,
        profile,
        repo,
    )
    rec.update(
        {
            "slug": _slug("unrecognized arguments", rid),
            "flags": [],
            "documentation": f"The parser has no option of that name (kverr explain says which"
            f" {profile.product} releases have it, or the closest option names).",
            "triggerScenarios": "An option the installed release's parser does not declare.",
            "commonSituations": "",
            "solutions": ["Check its spelling against the installed release, or drop it."],
            "exampleFix": "",
            "backgroundTag": "invalid-value",
            "argparse": {"flag": None, "form": "unrecognized"},
        }
    )
    return [rec, *(_generic_form(form, ctx, profile, repo) for form in _MORE)]


# form -> (message, pattern after BEFORE, placeholders, documentation, solution). argparse
# prints them for any option: `ambiguous option: --model could match --model-impl, ...` and
# `the following arguments are required: --model-path`.
_MORE = {
    "ambiguous": (
        "ambiguous option: {option} could match {options}",
        r"ambiguous option: (?P<v0>[^ ]{1,200}) could match (?P<v1>.{1,1000})",
        ["option", "options"],
        "argparse accepts an unambiguous prefix of an option name; this one starts several"
        " options, so it cannot tell which was meant.",
        "Write the option's full name (kverr explain lists the ones it could be).",
    ),
    "required": (
        "the following arguments are required: {arguments}",
        r"the following arguments are required: (?P<v0>.{1,1000})",
        ["arguments"],
        "The command line lacks an argument the parser requires.",
        "Add the required arguments (kverr explain says which releases require them).",
    ),
}


def _generic_form(form: str, ctx: _Context, profile: Profile, repo: str) -> dict:
    message, pattern, placeholders, doc, fix = _MORE[form]
    rid = record_id(form, None, profile)
    rec = _base(rid, message, BEFORE + pattern, placeholders, ctx, profile, repo)
    rec.update(
        {
            "slug": _slug(message.split(":")[0], rid),
            "flags": [],
            "documentation": doc,
            "triggerScenarios": "A command line the installed release's parser cannot read.",
            "commonSituations": "",
            "solutions": [fix],
            "exampleFix": "",
            "backgroundTag": "invalid-value",
            "argparse": {"flag": None, "form": form},
        }
    )
    return rec


def _base(
    rid: str,
    message: str,
    pattern: str,
    placeholders: list[str],
    ctx: _Context,
    profile: Profile,
    repo: str,
) -> dict:
    rev, sha = ctx.revision, ctx.revision.sha
    return {
        "id": rid,
        "repo": repo,
        "errorCode": None,
        "errorMessage": message,
        "messagePattern": pattern,
        "errorType": "validation",
        "errorClass": "SystemExit",
        "httpStatus": None,
        "severity": "error",
        "filePath": ctx.decl.file,
        "lineNumber": ctx.start,
        "sourceCode": ctx.code,
        "sourceCodeStart": ctx.start,
        "sourceCodeEnd": ctx.end,
        "githubUrl": (
            f"https://github.com/{repo}/blob/{sha}/{ctx.decl.file}#L{ctx.start}-L{ctx.end}"
            if sha
            else None
        ),
        "handlingStrategy": "validation",
        "validationCode": None,
        "typeGuard": None,
        "tryCatchPattern": None,
        "preventionTips": [],
        "tags": [profile.name, "argparse", "cli"],
        "analyzedSha": sha,
        "analyzedAt": rev.date or EPOCH,
        "schemaVersion": 2,
        "kind": "argparse",
        "placeholders": placeholders,
        "previousId": None,
        "project": profile.name,
        "verification": dict(NOT_VERIFIED),
    }


# ---------------------------------------------------------------- wording


def _example(profile: Profile, before: str, after: str) -> str:
    launch = profile.launch_command()
    return f"# before\n{launch} {before}\n# after\n{launch} {after}".rstrip()


def _article(kind: str) -> str:
    word = {"int": "integer", "float": "number", "loads": "JSON text"}.get(kind, kind)
    return ("an " if word[:1] in "aeiou" else "a ") + word


def _default_text(f: dict[str, Any]) -> str:
    good = literal_default(f.get("default"))
    return f" (its default is {good})" if good else ""


def _slug(text: str, rid: str) -> str:
    return f"{slugify(text)[:SLUG_CHARS].strip('-')}-{rid[:6]}"
