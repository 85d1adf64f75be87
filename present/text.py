"""An answer on a terminal, styled by a kverr.term.Term (plain, unwrapped text in a pipe).

The fix comes first, right under the message: the solutions, then the launch commands before
and after, each a whole line of its own with nothing around it (no border, no indent, never
wrapped), so a triple-click or a mouse drag copies exactly the command; then whether that fix
was verified. The facts follow, a label each (present/answer.py's LABELS).

Every string of a match is escaped before it gets here (present/answer.py's of_match): a control
character shows as `\\x1b` or `\\u009b`, and only kverr's own styling and links reach the
terminal as escapes. Commands are shown safe to copy (present/display.Command).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kverr.present import answer as a
from kverr.present import display
from kverr.present.answer import Answer, CheckAnswer

from kverr.answers import Match
from kverr.term import PLAIN, Term, escape_data

LABEL = 15  # width of the fact labels ("What it means  ")
SEVERITY_STYLE = {
    "critical": ("bold", "white", "on-red"),
    "error": ("bold", "red"),
    "warning": ("bold", "yellow"),
    "info": ("bold", "cyan"),
}


def card(
    m: Match,
    term: Term = PLAIN,
    orders: display.Orders | None = None,
    *,
    verbose: bool = False,
    names: Mapping[str, str] | None = None,
) -> list[str]:
    """The card's lines. `orders`: each project's releases, oldest first, so the record's
    releases print as ranges. `verbose`: whether a fix was verified, as the verify
    step said it (platform, model profile, the whole reason) rather than in a user's words;
    `names`: revisions as users know them (present/verdict.revision_names)."""
    return answer_lines(a.of_match(m, orders, verbose=verbose, names=names), term)


def answer_lines(ans: Answer, term: Term = PLAIN) -> list[str]:
    out = [header(ans, term), *term.wrap(message(ans.runs, term))]
    fix = fix_lines(ans, term)
    if fix:
        out += ["", *fix]
    return [*out, "", *fact_lines(ans, term)]


def header(ans: Answer, term: Term = PLAIN) -> str:
    sev = ans.record.get("severity") or "error"
    parts = [term.style(sev.upper(), *SEVERITY_STYLE.get(sev, ("bold",)))]
    if ans.what:
        parts.append(term.style(ans.what, "bold"))
    how = term.style(" · " + ans.how, "dim") if ans.how else ""
    return " ".join(parts) + how


def message(runs: Sequence[display.Run], term: Term = PLAIN) -> str:
    """The message with each captured value highlighted and each other placeholder as a short
    label, ‹page_size›; a message-less assert shows its statement."""
    styles = {"value": ("bold", "magenta"), "label": ("magenta",), "statement": ("italic",)}
    return "".join(term.style(r.text, *styles.get(r.kind, ())) for r in runs)


def prose(text: str, term: Term = PLAIN) -> str:
    """A knowledge field as shown: placeholders as ‹labels›, `code` in colour (the backticks
    stay in plain text, where they are the only mark)."""
    text = display.label_placeholders(text)
    if not term.color:
        return text
    return "".join(
        term.style(part, "cyan") if code else part for part, code in display.code_spans(text)
    )


def fix_lines(ans: Answer, term: Term = PLAIN) -> list[str]:
    fix = ans.fix
    if not fix:
        return []

    def bullets(items: Sequence[str]) -> list[str]:
        return [line for s in items for line in term.wrap("  • " + prose(s, term), indent=4)]

    out = [term.style(a.LABELS["fix"], "bold", "cyan")]
    if fix.yours:
        out += before_after(fix.yours, term)
    if fix.said:
        out += term.wrap("  " + term.style(fix.said, "green" if fix.yours else "dim"), 2)
    out += bullets(fix.advice)
    if fix.yours:
        # The user's own launch, fixed and checked, is the answer; the record's ways out stay
        # as words, its example launch (someone else's) is left out.
        return [*out, term.style("  " + a.OTHER_WAYS, "dim"), *bullets(fix.solutions)]
    out += bullets(fix.solutions)
    if fix.example:
        out += before_after(fix.example, term)
    out += fix.example_text.splitlines()
    if not fix.status:
        return out
    return out + term.wrap("  " + term.style(fix.status, "green" if fix.verified else "dim"), 2)


def before_after(example: display.ExampleFix, term: Term) -> list[str]:
    out = [
        term.style("  " + a.BEFORE, "dim"),
        _command(example.before, example.removed(), term, "red"),
    ]
    if example.after.words:
        out += [
            term.style("  " + a.AFTER, "dim"),
            _command(example.after, example.added(), term, "green"),
        ]
    else:
        out.append(term.style("  " + a.LEFT_OUT, "dim"))
    if example.before.hidden or example.after.hidden:
        out += term.wrap(term.style("  " + display.HIDDEN_NOTE, "dim"), 2)
    return out


def _command(cmd: display.Command, changed: set[str], term: Term, colour: str) -> str:
    """A whole command line, never wrapped or indented: the changed arguments in colour."""
    return " ".join(
        term.style(shown, "bold", colour) if word in changed else shown
        for word, shown in zip(cmd.words, cmd.shown, strict=True)
    )


def fact_lines(ans: Answer, term: Term = PLAIN) -> list[str]:
    out: list[str] = []

    def row(label: str, value: str) -> None:
        if value:
            lines = term.wrap(value, indent=LABEL)
            out.append(term.style(label.ljust(LABEL), "bold") + lines[0])
            out.extend(lines[1:])

    row(a.LABELS["meaning"], prose(ans.meaning, term))
    row(a.LABELS["why"], prose(ans.why, term))
    shown = ""
    for label, text in ans.declared:  # the label once, on the first row of its kind
        row(label if label != shown else "", text)
        shown = label
    row(a.LABELS["flags"], ", ".join(f.name for f in ans.flags))
    row(a.LABELS["releases"], ans.span)
    if ans.gaps:
        row("", term.style("not in " + ", ".join(ans.gaps), "dim"))
    src = ans.source
    row(a.LABELS["source"], term.link(term.style(src.where, "underline"), src.url))
    if src.url and not term.links:  # whole, on its own line: most terminals make it clickable
        out.append(" " * LABEL + src.url)
    row(a.PROJECT, ans.project)
    row(a.ID, f"{ans.id}  {term.style(ans.record.get('slug') or '', 'dim')}".rstrip())
    return out


# ---------------------------------------------------------------- one line per match

# What the one-line views read of a record: a scan may print thousands of them, so they escape
# these alone, not the whole record.
_LINE_FIELDS = ("id", "severity", "errorClass", "kind", "errorMessage", "placeholders",
                "filePath", "lineNumber", "sourceCode", "sourceCodeStart")  # fmt: skip


def _line_view(m: Match, *, releases: bool = False) -> Match:
    record = {k: escape_data(m.record.get(k)) for k in _LINE_FIELDS}
    revisions = escape_data(m.revisions) if releases else ()
    return Match(record, m.score, m.how, escape_data(m.values), m.line, revisions)


def _message_of(m: Match, term: Term) -> str:
    return message(display.message_runs(m.record, m.values), term)


def also_at(m: Match, term: Term = PLAIN, orders: display.Orders | None = None) -> str:
    order = display.order_of(orders, m)
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
    return f"{head}{badge} {_message_of(m, term)}{tail}"


def list_line(m: Match, term: Term = PLAIN) -> str:
    """One record in a list (`kverr search`): id, severity, class, message."""
    m = _line_view(m)
    rec = m.record
    sev = rec.get("severity") or ""
    cls = rec.get("errorClass") or rec.get("kind") or ""
    return (
        f"{term.style(rec.get('id') or '', 'bold')}  "
        f"{term.style(sev.ljust(7), *SEVERITY_STYLE.get(sev, ()))} {cls.ljust(15)} {_message_of(m, term)}"
    )


# ---------------------------------------------------------------- kverr check


def check(report: CheckAnswer, term: Term = PLAIN) -> str:
    """`kverr check`'s card: the user's launch, each error with the fix of that launch, what the
    release would change silently, and the launch with every fix applied."""
    r = escape_data(report)
    out = [term.style(a.CHECKED, "bold") + f"  {r.release} · {r.platform} · {r.model}"]
    if r.reason:
        return "\n".join([*out, f"{a.NOT_CHECKED}: {r.reason}"]) + "\n"
    out += ["", a.YOUR_LAUNCH, r.launch.text if r.launch else ""]
    out += [f"  ({typed} is read as {option})" for typed, option in r.spelled]
    for option, near in r.unknown:
        tail = f"; did you mean {', '.join(near)}?" if near else ""
        out.append(f"  {option} is not an option of {r.release}{tail}")
    if r.served:
        out.append(f"  ({', '.join(r.served)}: {a.SERVED})")
    for err in r.errors:
        where = f" ({err.where})" if err.where else ""
        out += ["", term.style("✗ ", "red") + f"{err.what}: {err.message}{where}"]
        if err.fixed:
            out += [
                "  " + a.your_fix(", ".join(err.changed), r.release, r.platform),
                err.fixed.text,
            ]
        elif err.no_fix:
            out.append(f"  {a.NO_FIX}: {err.no_fix}")
        if err.id:
            out.append(f"  kverr show {err.id}")
    if r.stopped:
        out += ["", f"{a.STOPPED}: {r.stopped[0]} ({r.stopped[1]})"]
    if r.notices:
        out += ["", a.adjusts(r.release), *(f"  • {n}" for n in r.notices)]
    out.append("")
    if r.passed:
        out.append(term.style("✓ ", "green") + a.PASSES)
    elif r.fixed:
        out += [term.style("✓ ", "green") + a.FIXED, r.fixed.text]
    if r.hidden:
        out += ["", display.HIDDEN_NOTE]
    return "\n".join(out) + "\n"
