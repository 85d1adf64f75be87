"""How results look: Rich views for people, JSON for programs. No library logic here.

Rich is imported inside the functions that draw, so `--json` output never pays for it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from kverr.ftypes import Match

FULL_VIEWS = 5  # a scan can find hundreds: the rest get one line each
SEVERITY_STYLE = {"critical": "bold white on red", "error": "bold red", "warning": "yellow", "info": "cyan"}


def explain_json(query: str, matches: Sequence[Match]) -> str:
    """The `--json` contract: {"query": ..., "matches": [Match.to_dict(), ...]}, best first."""
    return json.dumps({"query": query, "matches": [m.to_dict() for m in matches]}, indent=2, ensure_ascii=False)


def explain_view(matches: Sequence[Match], *, file=None) -> None:
    """Print each match for a person: message with values, meaning, cause, fix, source, releases."""
    from rich.console import Console

    console = Console(file=file, highlight=False, soft_wrap=False)
    if not matches:
        console.print("No known SGLang server-args error matches this text.", style="bold")
        return
    for i, m in enumerate(matches):
        if i < FULL_VIEWS:
            console.print(_full(m))
        else:
            console.print(_one_line(m))


def _header(m: Match):
    from rich.text import Text

    rec = m.record
    sev = rec.get("severity") or "error"
    head = Text()
    head.append(f" {sev.upper()} ", style=SEVERITY_STYLE.get(sev, "bold"))
    head.append(f" {rec.get('errorClass') or rec.get('kind') or ''}", style="bold")
    head.append(f"  {m.how} match {m.score:.2f}", style="dim")
    if m.line is not None:
        head.append(f"  input line {m.line}", style="dim")
    return head


def message_text(m: Match):
    """The record's message with each placeholder replaced by the captured value, highlighted."""
    from rich.text import Text

    rec = m.record
    msg = rec.get("errorMessage") or ""
    out = Text()
    if not msg:
        out.append(f"(assert without a message) {_statement(rec)}", style="italic")
        return out
    pos = 0
    for expr in rec.get("placeholders") or []:
        # errorMessage shows a placeholder as {expr}; tolerate {expr!r} / {expr:.2f} too
        found = re.compile(r"\{" + re.escape(expr) + r"(?:![rsa])?(?::[^{}]*)?\}").search(msg, pos)
        if not found:
            continue
        out.append(msg[pos : found.start()])
        if expr in m.values:
            out.append(m.values[expr], style="bold magenta")
        else:
            out.append(found.group(), style="magenta")
        pos = found.end()
    out.append(msg[pos:])
    return out


def _statement(rec: dict[str, Any]) -> str:
    src = (rec.get("sourceCode") or "").splitlines()
    i = (rec.get("lineNumber") or 0) - (rec.get("sourceCodeStart") or 0)
    return src[i].strip() if 0 <= i < len(src) else ""


def _full(m: Match):
    from rich.console import Group
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    rec = m.record
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold cyan", no_wrap=True)
    grid.add_column()
    if rec.get("documentation"):
        grid.add_row("What it means", rec["documentation"])
    why = Text(rec.get("triggerScenarios") or "")
    if rec.get("flags"):
        why.append(("\n" if why else "") + "flags: " + ", ".join(rec["flags"]), style="green")
    if why:
        grid.add_row("Why it fired", why)
    fixes = [f"• {s}" for s in rec.get("solutions") or []]
    if fixes:
        grid.add_row("How to fix", "\n".join(fixes))
    if rec.get("exampleFix"):
        grid.add_row("", Text(rec["exampleFix"], style="dim"))
    where = f"{rec.get('filePath')}:{rec.get('lineNumber')}"
    grid.add_row("Source", Text(rec.get("githubUrl") or where, style="underline blue", overflow="fold"))
    if m.revisions:
        grid.add_row("Releases", ", ".join(m.revisions))
    grid.add_row("Id", f"{rec.get('id')}  ({rec.get('slug')})")
    return Panel(Group(message_text(m), Text(""), grid), title=_header(m), title_align="left")


def _one_line(m: Match):
    from rich.text import Text

    line = Text()
    line.append(f"line {m.line}: " if m.line is not None else "")
    line.append(f"[{m.record.get('severity')}] ", style=SEVERITY_STYLE.get(m.record.get("severity"), ""))
    line.append(message_text(m))
    line.append(f"  ({m.record.get('id')}, {m.how})", style="dim")
    return line


def load_summary(catalog: Any, report: Any) -> str:
    """One line for `kverr load`."""
    skipped = report.records - report.usable
    return f"loaded {report.records} records into {catalog} ({skipped} found by traceback or id only)"
