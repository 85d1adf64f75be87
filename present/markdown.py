"""An answer in Markdown, the one renderer of every Markdown kverr writes: the card a bot posts
(`kverr show --markdown`, `POST /explain?format=markdown`, the MCP tools, `kverr respond`),
a page of the Markdown export (`kverr export markdown`: headings, front matter, a flag table),
and `kverr check`'s report.

Everything from a record or a paste is hostile here: prose is backslash-escaped for CommonMark
and MDX (GitHub, Discourse, Docusaurus read `<path>` or `{x}` as text), code goes in spans and
fences longer than any backtick run inside it, and control characters show as escapes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from kverr.present import answer as a
from kverr.present import display
from kverr.present.answer import Answer, CheckAnswer

from kverr.answers import Match
from kverr.term import escape_data, escape_json, escape_terminal

_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~&])")


def escape(text: str | None) -> str:
    """Prose safe for CommonMark and MDX: every markup character backslash-escaped, every
    control character shown as an escape."""
    return _SPECIAL.sub(r"\\\1", escape_terminal((text or "").replace("\r", "")))


def code(text: str) -> str:
    """An inline code span that survives backticks inside it."""
    text = escape_terminal(text)
    longest = max((len(r) for r in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def block(text: str, lang: str = "") -> str:
    """A fenced block longer than any backtick run inside it."""
    text = escape_terminal(text)
    longest = max((len(r) for r in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def link(text: str, url: str | None) -> str:
    """`text` linked to `url` when it is a plain https URL (its parentheses encoded, so none
    ends the link early), else `text` alone; both as Markdown."""
    url = display.safe_url(url)
    if url is None:
        return escape(text)
    return f"[{escape(text)}]({url.replace('(', '%28').replace(')', '%29')})"


def prose(text: str) -> str:
    """Knowledge prose: placeholders as ‹labels›, `backticks` and bare --flags as code."""
    spans = display.code_spans(display.label_placeholders(text), flags=True)
    return "".join(code(p) if is_code else escape(p) for p, is_code in spans)


def message(m: Match) -> str:
    """A match's message as text: the values pasted in place, other placeholders as labels."""
    return "".join(r.text for r in display.message_runs(m.record, m.values))


# ---------------------------------------------------------------- the answer to a paste


def match(m: Match, orders: display.Orders | None = None) -> str:
    """The answer to one match, ready to post: message, fix first, then why."""
    return answer_text(a.of_match(m, orders))


def answer_text(ans: Answer) -> str:
    head = "".join(r.text for r in ans.runs)
    out = [f"**{escape(ans.what or 'error')}**: {code(head)}", ""]
    if ans.fix:
        out += [f"**{a.LABELS['fix']}**", *fix_lines(ans), ""]
    if ans.meaning:
        out += [f"**{a.LABELS['meaning']}:** {prose(ans.meaning)}", ""]
    if ans.why:
        out += [f"**{a.LABELS['why']}:** {prose(ans.why)}", ""]
    src = link(ans.source.where, ans.source.url) if ans.source.url else code(ans.source.where)
    facts = [
        (a.LABELS["flags"], ", ".join(code(f.name) for f in ans.flags)),
        (a.LABELS["releases"], escape(ans.span)),
        (a.LABELS["source"], src),
    ]
    said = [f"{label}: {value}" for label, value in facts if value]
    out.append(" · ".join([*said, f"{a.ID} {code(ans.id)}"]))
    return _lines(out)


def answers(matches: Sequence[Match], orders: display.Orders | None = None, limit: int = 3) -> str:
    """Every match's answer (at most `limit`, one per message), separated by a rule; a
    plain sentence when nothing matched."""
    if not matches:
        return "No known launch-argument error matches this text.\n"
    firsts: dict[str, Match] = {}
    for m in matches:
        firsts.setdefault(a.message_key(m) or m.record.get("id") or "", m)
    parts = [match(m, orders) for m in list(firsts.values())[:limit]]
    more = len(firsts) - len(parts)
    if more > 0:
        parts.append(f"_…and {more} more known error{'s' if more != 1 else ''} in this text._")
    return "\n\n---\n\n".join(parts) + "\n"


def search_list(matches: Sequence[Match], total: int) -> str:
    """One line per record (the MCP `search` tool): id, class, message (the values it prints
    as labels)."""
    if not matches:
        return "No known error matches this search.\n"
    lines = [f"{total} known error{'s' if total != 1 else ''}; the first {len(matches)}:", ""]
    for m in escape_data(matches):
        what = m.record.get("errorClass") or m.record.get("kind") or "error"
        lines.append(f"- {code(m.record['id'])} {escape(what)}: {code(message(m))}")
    return "\n".join(lines) + "\n"


def fix_lines(ans: Answer) -> list[str]:
    """The fix: the user's launch, advice, the record's ways out, its example, the verdict."""
    fix = ans.fix
    out: list[str] = []
    if fix.yours:
        out += ["", *commands(fix.yours)]
    if fix.said:
        out += ["", f"_{escape(fix.said)}_", ""]
    out += [f"- {prose(s)}" for s in fix.advice]
    if fix.yours:
        return [*out, "", a.OTHER_WAYS, *(f"- {prose(s)}" for s in fix.solutions)]
    out += [f"- {prose(s)}" for s in [*fix.solutions, *(f"{k}: {v}" for k, v in ans.declared)]]
    if fix.example:
        out += ["", *commands(fix.example)]
    elif fix.example_text:
        out += ["", block(fix.example_text, "bash")]
    return [*out, "", f"_{escape(fix.status)}_"] if fix.status else out


def commands(example: display.ExampleFix) -> list[str]:
    """An example fix's commands as bash blocks, and what <VALUE> stands for."""
    out = [a.BEFORE, block(example.before.text, "bash")]
    if example.after.words:
        out += [a.AFTER, block(example.after.text, "bash")]
    else:
        out.append(a.LEFT_OUT)
    if example.before.hidden or example.after.hidden:
        out.append(escape(display.HIDDEN_NOTE))
    return out


def _lines(out: list[str]) -> str:
    """The lines as text, a run of blank lines as one and none at either end."""
    kept = [line for i, line in enumerate(out) if line or (i and out[i - 1])]
    return "\n".join(kept).strip("\n")


# ---------------------------------------------------------------- a page of the export


def front_matter(fields: Mapping[str, Any]) -> str:
    """YAML front matter; each value is written as JSON, which YAML reads unchanged."""
    body = "".join(
        f"{k}: {escape_json(json.dumps(v, ensure_ascii=False))}\n"
        for k, v in fields.items()
        if v not in (None, [])
    )
    return f"---\n{body}---\n\n"


def page(ans: Answer, meta: Mapping[str, Any]) -> str:
    """One record as a page (MkDocs, Docusaurus): front matter (`meta`), the message, then the
    answer's sections under their headings."""
    rec = ans.record
    title = display.title_of(rec)
    message = display.plain(rec.get("errorMessage") or "") or display.source_line(rec)
    out = [
        f"# {escape(title)}",
        "",
        f"**{escape(rec.get('severity'))}** · {code(ans.what)} · {a.ID} {code(ans.id)}",
        "",
        block(message, "text"),
    ]
    body = {
        "fix": fix_lines(ans) if ans.fix else [],
        "meaning": [prose(ans.meaning)],
        "why": [prose(ans.why), "", prose(ans.situations)],  # (empty lines fold into one)
        "flags": _flag_table(ans),
        "releases": [", ".join(code(t) for t in ans.releases)],
        "source": [link(ans.source.where, ans.source.url)],
    }
    for key in ans.sections():
        out += ["", f"## {a.LABELS[key]}", "", *body[key]]
    return front_matter(meta) + _lines(out) + "\n"


def _flag_table(ans: Answer) -> list[str]:
    def cell(text: str, as_code: bool = False) -> str:
        shown = (code(text).replace("|", "\\|") if text else "") if as_code else escape(text)
        return shown.replace("\n", " ")

    rows = [
        "| " + " | ".join(a.FLAG_COLUMNS) + " |",
        "|" + "---|" * len(a.FLAG_COLUMNS),
    ]
    for f in ans.flags:
        kind = ", ".join(cell(c, True) for c in f.choices) or cell(f.kind)
        rows.append(f"| {cell(f.name, True)} | {cell(f.help)} | {cell(f.default, True)} | {kind} |")
    return rows


# ---------------------------------------------------------------- kverr check


def check(report: CheckAnswer, *, heading: str = f"**{a.CHECKED}**") -> str:
    """`kverr check`'s report, for an assistant (the MCP `check` tool) and an issue comment
    (`kverr respond`). Everything in it can carry the user's own words (the launch, values in a
    message), so it is shown only as code: commands as fenced blocks, messages and options as
    code spans, where nothing is markup, a link or a mention."""
    release = code(report.release)
    out = [f"{heading} · {release} · {code(report.platform)}"]
    if report.reason:
        return "\n".join([*out, "", f"{a.NOT_CHECKED}: {code(report.reason)}", ""])
    launch = report.launch.text if report.launch else ""
    out += ["", f"{a.YOUR_LAUNCH}:", block(launch, "bash")]
    out += [f"- {code(typed)} is read as {code(option)}" for typed, option in report.spelled]
    for option, near in report.unknown:
        tail = f"; did you mean {', '.join(code(n) for n in near)}?" if near else "."
        out.append(f"- {code(option)} is not an option of {release}{tail}")
    if report.served:
        out.append(f"- {', '.join(code(o) for o in report.served)}: {a.SERVED}")
    for err in report.errors:
        where = f" ({code(err.where)})" if err.where else ""
        out += ["", f"**{escape(err.what)}**: {code(err.message)}{where}"]
        if err.fixed:
            changed = ", ".join(code(c) for c in err.changed)
            said = a.your_fix(changed, release, code(report.platform))
            out += [said, block(err.fixed.text, "bash")]
        elif err.no_fix:
            out.append(f"{a.NO_FIX}: {code(err.no_fix)}")
        if err.id:
            out.append(f"{a.ID} {code(err.id)}")
    if report.stopped:
        status, reason = report.stopped
        why = f" ({code(reason)})" if reason else ""
        out += ["", f"{a.STOPPED}: {code(status)}{why}"]
    if report.notices:
        out += ["", a.adjusts(release), *(f"- {code(n)}" for n in report.notices)]
    out.append("")
    if report.passed:
        out.append(a.PASSES)
    elif report.fixed:
        out += [a.FIXED, block(report.fixed.text, "bash")]
    if report.hidden:
        out += ["", escape(display.HIDDEN_NOTE)]
    return "\n".join(out) + "\n"
