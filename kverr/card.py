"""One matched record as a card: for a terminal (styled by a kverr.term.Term) and as Markdown
a bot can post as it is (`kverr show --markdown`, `POST /explain?format=markdown`).

The fix comes first, right under the message: the solutions, then the launch commands before
and after, each a whole line of its own with nothing around it (no border, no indent, never
wrapped), so a triple-click or a mouse drag copies exactly the command; then whether that fix
was verified. The facts follow: meaning, trigger, flags, source (a link), releases as ranges.

Every string of a match (the record, the values pasted, the answer) is escaped first
(kverr.term.escape_data): a control character in any of them shows as `\\x1b` or `\\u009b`,
and only kverr's own styling and links reach the terminal as escapes. Commands are shown
safe to copy (kverr.display.Command).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from kverr import display
from kverr.answers import Match
from kverr.term import PLAIN, Term, escape_data, escape_terminal
from kverr.verification import fix_status, is_verified, reason_words

LABEL = 15  # width of the fact labels ("What it means  ")
SEVERITY_STYLE = {
    "critical": ("bold", "white", "on-red"),
    "error": ("bold", "red"),
    "warning": ("bold", "yellow"),
    "info": ("bold", "cyan"),
}


def header(m: Match, term: Term = PLAIN) -> str:
    rec = m.record
    sev = rec.get("severity") or "error"
    parts = [term.style(sev.upper(), *SEVERITY_STYLE.get(sev, ("bold",)))]
    what = rec.get("errorClass") or rec.get("kind") or ""
    if what:
        parts.append(term.style(what, "bold"))
    head = " ".join(parts)
    how = [] if m.how == "id" else [f"{m.how} match {m.score:.2f}"]
    if m.line is not None:
        how.append(f"input line {m.line}")
    return head + (term.style(" · " + " · ".join(how), "dim") if how else "")


def message(m: Match, term: Term = PLAIN) -> str:
    """The record's message with each captured value in place (highlighted) and each other
    placeholder as a short label, ‹page_size›; a message-less assert shows its statement."""
    rec = m.record
    msg = rec.get("errorMessage") or ""
    if not msg:
        return term.style(f"(assert without a message) {statement(rec)}", "italic")
    out = []
    for text, expr in display.placeholder_spans(msg, rec.get("placeholders") or []):
        if expr is None:
            out.append(text)
        elif expr in m.values:
            out.append(term.style(m.values[expr], "bold", "magenta"))
        else:
            out.append(term.style(display.placeholder_label(expr), "magenta"))
    return "".join(out)


def statement(rec: dict[str, Any]) -> str:
    src = (rec.get("sourceCode") or "").splitlines()
    i = (rec.get("lineNumber") or 0) - (rec.get("sourceCodeStart") or 0)
    return src[i].strip() if 0 <= i < len(src) else ""


def fill(text: str, m: Match) -> str:
    """A record's prose with each `{placeholder}` it names (as errorMessage does) replaced by
    the value captured from the pasted line: "--schedule={self.schedule}" -> "--schedule=lpm".
    A value's own quotes go (`'lpm'` from a `!r`); a placeholder not captured stays as is."""
    for expr in m.record.get("placeholders") or []:
        value = m.values.get(expr)
        if value is not None:
            bare = value[1:-1] if len(value) > 1 and value[0] == value[-1] in "'\"" else value
            text = text.replace("{" + expr + "}", bare)
    return text


def prose(text: str, m: Match, term: Term = PLAIN) -> str:
    """A knowledge field as shown: the values captured from the paste in place (fill), the
    other placeholders as ‹labels›, `code` in colour (the backticks stay in plain text, where
    they are the only mark)."""
    text = display.label_placeholders(fill(text, m))
    if not term.color:
        return text
    return "".join(
        term.style(part, "cyan") if code else part for part, code in display.code_spans(text)
    )


# ---------------------------------------------------------------- the terminal card


def card(
    m: Match,
    term: Term = PLAIN,
    order: Sequence[str] = (),
    *,
    verbose: bool = False,
    names: Mapping[str, str] | None = None,
) -> list[str]:
    """The card's lines. `order`: every release the catalog holds, oldest first, so the
    record's releases print as ranges. `verbose`: whether a fix was verified, as the verify
    step said it (platform, model profile, the whole reason) rather than in a user's words;
    `names`: revisions as users know them (kverr.verification.revision_names)."""
    m = escape_data(m)
    out = [header(m, term), *term.wrap(message(m, term))]
    if m.argparse:
        fix = argparse_lines(m, term, verbose=verbose, names=names)
    else:
        fix = fix_lines(m, term, verbose=verbose, names=names)
    if fix:
        out += ["", *fix]
    out.append("")
    out += fact_lines(m, term, order)
    return out


def yours_example(m: Match) -> display.ExampleFix | None:
    """The fix of the user's own launch (Match.yours), before and after, when there is one."""
    y = m.yours or {}
    if not (y.get("before") and y.get("after")):
        return None
    return display.ExampleFix(display.parse_command(y["before"]), display.parse_command(y["after"]))


def yours_status(m: Match, *, verbose: bool = False) -> str:
    """One sentence on the fix of the user's own launch: what it was checked against, or why
    there is none ("" when the paste held no launch). `verbose`: the platform and model
    profiles it ran on, and the fix search's own reason."""
    y = m.yours or {}
    v = y.get("verification") or {}
    if v.get("status") == "verified":
        ran = f" on {v.get('platform')} with {v.get('model')}" if verbose else ""
        return f"Your launch, fixed: verified against {v.get('revision')}'s own checks{ran}."
    if y.get("status") == "not-reproduced":
        return f"Your launch does not raise this error: {y.get('reason')}."
    if y.get("status") == "no-fix" and not verbose:  # the fix search's reason, as for a record
        why = reason_words({"verification": {"reason": y.get("reason")}})
        return f"Your launch was not fixed: {why}."
    if y.get("status") in ("not-checked", "no-fix"):
        return f"Your launch was not fixed: {y.get('reason')}."
    return ""


def _yours_lines(m: Match, term: Term, verbose: bool) -> list[str]:
    """The user's own launch first: its fix, or why there is none; advice from the values
    the message printed when no launch was pasted."""
    out: list[str] = []
    example = yours_example(m)
    if example:
        out += _before_after(example, term)
    said = yours_status(m, verbose=verbose)
    if said:
        out += term.wrap("  " + term.style(said, "green" if example else "dim"), 2)
    for line in m.advice:
        out += term.wrap("  • " + prose(line, m, term), indent=4)
    return out


def fix_lines(
    m: Match,
    term: Term = PLAIN,
    *,
    verbose: bool = False,
    names: Mapping[str, str] | None = None,
) -> list[str]:
    rec = m.record
    solutions = [s for s in rec.get("solutions") or [] if s]
    example = display.example_fix(rec.get("exampleFix"))
    mine = _yours_lines(m, term, verbose)
    if not solutions and not rec.get("exampleFix") and not mine:
        return []
    out = [term.style("How to fix", "bold", "cyan"), *mine]
    if yours_example(m):
        # The user's own launch, fixed and checked, is the answer; the record's ways out stay
        # as words, its example launch (someone else's) is left out.
        out.append(term.style("  Other ways out:", "dim"))
        out += [line for s in solutions for line in term.wrap("  • " + prose(s, m, term), indent=4)]
        return out
    for s in solutions:
        out += term.wrap("  • " + prose(s, m, term), indent=4)
    if example:
        out += _before_after(example, term)
    elif rec.get("exampleFix"):
        out += rec["exampleFix"].splitlines()
    return out + _status_lines(m, term, verbose, names)


def _status_lines(
    m: Match, term: Term, verbose: bool, names: Mapping[str, str] | None
) -> list[str]:
    """The slot for kverr build --verify's verdict: verified against which release's own
    checks, or plainly not verified and why."""
    said = fix_status(m.record, verbose=verbose, names=names)
    return term.wrap("  " + term.style(said, "green" if is_verified(m.record) else "dim"), 2)


def argparse_lines(
    m: Match,
    term: Term = PLAIN,
    *,
    verbose: bool = False,
    names: Mapping[str, str] | None = None,
) -> list[str]:
    """The fix of an argparse error: the answer computed for the pasted values from the
    releases the catalog holds (catalog/argparse_answers.py), then the option before and after."""
    a = m.argparse or {}
    out = [term.style("How to fix", "bold", "cyan")]
    for sentence in a.get("text") or []:
        out += term.wrap("  • " + prose(sentence, m, term), indent=4)
    example = argparse_example(m)
    if example:
        out += _before_after(example, term)
    return out + _status_lines(m, term, verbose, names)


def argparse_rows(m: Match, limit: int = 4) -> list[tuple[str, str]]:
    """(label, text) fact rows of an argparse answer: the choices, or the type and default,
    of each release range (newest first)."""
    a = m.argparse or {}
    rows: list[tuple[str, str]] = []
    for group in (a.get("choices") or [])[:limit]:
        rows.append(("Choices", f"{group['range']}: {', '.join(group['choices'])}"))
    for decl in (a.get("declarations") or [])[:limit]:
        default = f"default {decl['default']}" if decl.get("default") else ""
        what = ", ".join(x for x in (decl.get("type"), default) if x)
        rows.append(("Declared", f"{decl['range']}: {what or 'no type'}"))
    more = max(len(a.get("choices") or []), len(a.get("declarations") or [])) - limit
    if more > 0:
        label = rows[-1][0]
        rows.append((label, f"… {more} earlier declaration{'s' if more != 1 else ''}"))
    return rows


def argparse_example(m: Match) -> display.ExampleFix | None:
    """The option as pasted and as it should be (an empty `after`: leave it out)."""
    a = m.argparse or {}
    ex = a.get("example") or {}
    if not ex.get("before"):
        return None
    flag = a.get("flag")
    return display.ExampleFix(
        display.command(display.option_words(ex["before"], flag)),
        display.command(display.option_words(ex.get("after") or "", flag)),
    )


def _before_after(example: display.ExampleFix, term: Term) -> list[str]:
    out = [term.style("  Before:", "dim"), _command(example.before, example.removed(), term, "red")]
    if example.after.words:
        out += [
            term.style("  After:", "dim"),
            _command(example.after, example.added(), term, "green"),
        ]
    else:
        out.append(term.style("  After: leave it out", "dim"))
    if example.before.hidden or example.after.hidden:
        out += term.wrap(term.style("  " + display.HIDDEN_NOTE, "dim"), 2)
    return out


def _command(cmd: display.Command, changed: set[str], term: Term, colour: str) -> str:
    """A whole command line, never wrapped or indented: the changed arguments in colour."""
    return " ".join(
        term.style(shown, "bold", colour) if word in changed else shown
        for word, shown in zip(cmd.words, cmd.shown, strict=True)
    )


def fact_lines(m: Match, term: Term = PLAIN, order: Sequence[str] = ()) -> list[str]:
    rec = m.record
    out: list[str] = []

    def row(label: str, value: str) -> None:
        if value:
            lines = term.wrap(value, indent=LABEL)
            out.append(term.style(label.ljust(LABEL), "bold") + lines[0])
            out.extend(lines[1:])

    row("What it means", prose(rec.get("documentation") or "", m, term))
    row("Why it fired", prose(rec.get("triggerScenarios") or "", m, term))
    shown = ""
    for label, text in argparse_rows(m):  # the label once, on the first row of its kind
        row(label if label != shown else "", text)
        shown = label
    row("Flags", ", ".join(rec.get("flags") or []))
    where = f"{rec.get('filePath')}:{rec.get('lineNumber')}"
    url = display.safe_url(rec.get("githubUrl"))
    row("Source", term.link(term.style(where, "underline"), url))
    if url and not term.links:  # whole, on its own line: most terminals make it clickable
        out.append(" " * LABEL + url)
    releases = display.release_span(m.revisions, order)
    row("Releases", releases)
    gaps = display.release_gaps(m.revisions, order)
    if gaps:
        row("", term.style("not in " + ", ".join(gaps), "dim"))
    row("Project", project_text(m))
    row("Id", f"{rec.get('id')}  {term.style(rec.get('slug') or '', 'dim')}".rstrip())
    return out


_DETECTED = {
    "--project": "as asked (--project)",
    "log form": "its log format",
    "message": "the message",
}


def project_text(m: Match) -> str:
    """Which project answered and what told it (`kverr explain` says so); "" for a record looked
    up by id."""
    p = m.project
    how = _DETECTED.get(p.get("detectedBy", ""))
    if not p or how is None:
        return p.get("product", "") if p else ""
    return f"{p.get('product', p.get('name'))}, matched by {how}"


# What the one-line views read of a record: a scan may print thousands of them, so they escape
# these alone, not the whole record.
_LINE_FIELDS = ("id", "severity", "errorClass", "kind", "errorMessage", "placeholders",
                "filePath", "lineNumber", "sourceCode", "sourceCodeStart")  # fmt: skip


def _line_view(m: Match, *, releases: bool = False) -> Match:
    record = {k: escape_data(m.record.get(k)) for k in _LINE_FIELDS}
    revisions = escape_data(m.revisions) if releases else ()
    return Match(record, m.score, m.how, escape_data(m.values), m.line, revisions)


def message_key(m: Match) -> str:
    """What makes two matches one message: the text the program prints, whatever its source
    names the values (`{decode_backend!r}` in one module, `{self.decode_attention_backend!r}`
    in another); "" for a record without one (a bare assert)."""
    rec = m.record
    return rec.get("messagePattern") or rec.get("errorMessage") or ""


def also_at(m: Match, term: Term = PLAIN, order: Sequence[str] = ()) -> str:
    m = _line_view(m, releases=True)
    rec = m.record
    where = f"{rec.get('filePath')}:{rec.get('lineNumber')}"
    span = display.release_span(m.revisions, order)
    releases = f"; releases {span}" if span else ""
    return term.style(f"  same message also raised at {where} ({rec.get('id')}{releases})", "dim")


def one_line(m: Match, term: Term = PLAIN) -> str:
    m = _line_view(m)
    rec = m.record
    sev = rec.get("severity") or ""
    head = f"line {m.line}: " if m.line is not None else ""
    badge = term.style(f"[{sev}]", *SEVERITY_STYLE.get(sev, ()))
    tail = term.style(f"  ({rec.get('id')}, {m.how})", "dim")
    return f"{head}{badge} {message(m, term)}{tail}"


def list_line(m: Match, term: Term = PLAIN) -> str:
    """One record in a list (`kverr search`): id, severity, class, message."""
    m = _line_view(m)
    rec = m.record
    sev = rec.get("severity") or ""
    cls = rec.get("errorClass") or rec.get("kind") or ""
    return (
        f"{term.style(rec.get('id') or '', 'bold')}  "
        f"{term.style(sev.ljust(7), *SEVERITY_STYLE.get(sev, ()))} {cls.ljust(15)} {message(m, term)}"
    )


# ---------------------------------------------------------------- Markdown for bots

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~&])")


def md_escape(text: str | None) -> str:
    """Prose safe for CommonMark and MDX (GitHub, Discourse, Docusaurus): every markup character
    backslash-escaped, every control character shown as an escape."""
    return _MD_SPECIAL.sub(r"\\\1", escape_terminal((text or "").replace("\r", "")))


def md_code(text: str) -> str:
    """An inline code span that survives backticks inside it."""
    text = escape_terminal(text)
    longest = max((len(r) for r in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_prose(text: str, m: Match | None = None) -> str:
    text = display.label_placeholders(fill(text, m) if m else text)
    spans = display.code_spans(text, flags=True)
    return "".join(md_code(p) if code else md_escape(p) for p, code in spans)


def md_block(text: str, lang: str = "") -> str:
    """A fenced block longer than any backtick run inside it."""
    text = escape_terminal(text)
    longest = max((len(r) for r in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def md_link(text: str, url: str | None) -> str:
    """`text` linked to `url` when it is a plain https URL (its parentheses encoded, so none
    ends the link early), else `text` alone; both as Markdown."""
    url = display.safe_url(url)
    if url is None:
        return md_escape(text)
    return f"[{md_escape(text)}]({url.replace('(', '%28').replace(')', '%29')})"


def md_fix(example: display.ExampleFix) -> list[str]:
    """An example fix's commands as bash blocks, and what <VALUE> stands for."""
    out = ["Before:", md_block(example.before.text, "bash")]
    if example.after.words:
        out += ["After:", md_block(example.after.text, "bash")]
    else:
        out.append("After: leave it out.")
    if example.before.hidden or example.after.hidden:
        out.append(md_escape(display.HIDDEN_NOTE))
    return out


def markdown(m: Match, order: Sequence[str] = ()) -> str:
    """The answer to one match in Markdown, ready to post: message, fix first, then why."""
    m = escape_data(m)
    rec = m.record
    what = rec.get("errorClass") or rec.get("kind") or "error"
    out = [f"**{md_escape(what)}**: {md_code(message(m))}", ""]
    solutions = [s for s in rec.get("solutions") or [] if s]
    example = display.example_fix(rec.get("exampleFix"))
    if m.argparse:  # answered for the pasted values from the catalog's releases
        solutions = list(m.argparse.get("text") or [])
        example = argparse_example(m)
        solutions += [f"{label}: {text}" for label, text in argparse_rows(m)]
    mine = yours_example(m)
    if solutions or example or mine or m.advice or yours_status(m):
        out.append("**How to fix**")
        if mine:
            out += ["", "Your launch, fixed:", *md_fix(mine)]
            example = None  # the record's example is someone else's launch
        if yours_status(m):
            out += ["", f"_{md_escape(yours_status(m))}_", ""]
        out += [f"- {md_prose(a, m)}" for a in m.advice]
        out += [f"- {md_prose(s, m)}" for s in solutions]
        if example:
            out += ["", *md_fix(example)]
        if not mine:  # the record's verdict is about its own example launch
            out += ["", f"_{md_escape(fix_status(rec))}_", ""]
    if rec.get("documentation"):
        out += [f"**What it means:** {md_prose(rec['documentation'], m)}", ""]
    if rec.get("triggerScenarios"):
        out += [f"**Why it fired:** {md_prose(rec['triggerScenarios'], m)}", ""]
    where = f"{rec.get('filePath')}:{rec.get('lineNumber')}"
    src = (
        md_link(where, rec.get("githubUrl"))
        if display.safe_url(rec.get("githubUrl"))
        else md_code(where)
    )
    facts = [f"Source: {src}"]
    span = display.release_span(m.revisions, order)
    if span:
        facts.append(f"releases: {md_escape(span)}")
    facts.append(f"kverr id {md_code(rec.get('id') or '')}")
    out.append(" · ".join(facts))
    return "\n".join(out)


def markdown_answer(matches: Sequence[Match], order: Sequence[str] = (), limit: int = 3) -> str:
    """Every match's answer (at most `limit`, one per message), separated by a rule; a
    plain sentence when nothing matched."""
    if not matches:
        return "No known launch-argument error matches this text.\n"
    seen: set[str] = set()
    parts = []
    for m in matches:
        key = message_key(m) or m.record.get("id") or ""
        if key in seen:
            continue
        seen.add(key)
        parts.append(markdown(m, order))
        if len(parts) == limit:
            break
    more = len({message_key(m) or m.record.get("id") for m in matches}) - len(parts)
    if more > 0:
        parts.append(f"_…and {more} more known error{'s' if more != 1 else ''} in this text._")
    return "\n\n---\n\n".join(parts) + "\n"
