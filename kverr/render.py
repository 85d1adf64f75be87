"""How results look: Rich views for people, JSON for programs. No library logic here.

Rich is imported inside the functions that draw, so `--json` output never pays for it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

from kverr.ftypes import CutLines, Match

FULL_VIEWS = 5  # a scan can find hundreds: the rest get one line each
SEVERITY_STYLE = {
    "critical": "bold white on red",
    "error": "bold red",
    "warning": "yellow",
    "info": "cyan",
}


def explain_json(query: str, matches: Sequence[Match], cut: CutLines | None = None) -> str:
    """The `--json` contract: {"query": ..., "matches": [Match.to_dict(), ...]}, best first,
    and "cutLines" ({"maxChars", "count", "lines"}) when input lines were too long to read whole."""
    return "".join(explain_json_chunks(query, matches, cut))


def explain_json_chunks(
    query: str, matches: Sequence[Match], cut: CutLines | None = None
) -> Iterator[str]:
    """`explain_json` a match at a time, the same bytes as `json.dumps(doc, indent=2)`: a scan
    can report 10,000 findings, and one string of all of them took 250 MB."""

    def dump(value: Any, depth: int) -> str:
        text = json.dumps(value, indent=2, ensure_ascii=False)
        return text.replace("\n", "\n" + "  " * depth)

    yield '{\n  "query": ' + dump(query, 1) + ',\n  "matches": ['
    for i, m in enumerate(matches):
        yield ("," if i else "") + "\n    " + dump(m.to_dict(), 2)
    yield "\n  ]" if matches else "]"
    if cut:
        yield ',\n  "cutLines": ' + dump(cut.to_dict(), 1)
    yield "\n}"


def cut_note(cut: CutLines) -> str:
    """One sentence saying which input lines were cut, and that the rest of them was not read."""
    shown = ", ".join(map(str, cut.lines[:5])) + (", ..." if cut.count > 5 else "")
    which = f"line {shown} is" if cut.count == 1 else f"{cut.count} lines ({shown}) are"
    half = cut.max_chars // 2
    return f"{which} longer than {cut.max_chars:,} characters; only the first and last {half:,} of each were read."


def explain_view(
    matches: Sequence[Match],
    *,
    file=None,
    version: str | None = None,
    elsewhere: Sequence[Match] = (),
    products: Sequence[str] = (),
) -> None:
    """Print each match for a person: message with values, meaning, cause, fix, source, releases.
    `elsewhere`: with --version and no match there, the records other revisions have.
    `products`: the catalog's projects, named when nothing matched."""
    if not matches:  # plain print: no reason to load Rich (~50 ms) to say "nothing"
        if elsewhere:
            print(
                f"No error that {version} can raise matches this text. Other revisions have it:",
                file=file,
            )
            for m in elsewhere[:3]:
                where = ", ".join(m.revisions) or "revisions without a release tag"
                print(
                    f"  {m.record['id']}  {m.record['errorMessage'][:90]}  (in: {where})", file=file
                )
            print("Run without --version for the full explanation.", file=file)
            return
        names = " or ".join(products) if products else "launch-argument"
        print(f"No known {names} error matches this text.", file=file)
        return
    from rich.console import Console

    console = Console(file=file, highlight=False, soft_wrap=False)
    shown: set[str] = set()
    full = 0
    for m in matches:
        msg = m.record.get("errorMessage") or ""
        if msg and msg in shown:  # one message raised at several sites: one panel is enough
            console.print(_also_at(m))
        elif full < FULL_VIEWS:
            console.print(_full(m))
            full += 1
        else:
            console.print(_one_line(m))
        shown.add(msg)


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
        grid.add_row("What it means", fill(rec["documentation"], m))
    why = Text(fill(rec.get("triggerScenarios") or "", m))
    if rec.get("flags"):
        why.append(("\n" if why else "") + "flags: " + ", ".join(rec["flags"]), style="green")
    if why:
        grid.add_row("Why it fired", why)
    fixes = [f"• {fill(s, m)}" for s in rec.get("solutions") or []]
    if fixes:
        grid.add_row("How to fix", "\n".join(fixes))
    if rec.get("exampleFix"):
        grid.add_row("", Text(rec["exampleFix"], style="dim"))
    where = f"{rec.get('filePath')}:{rec.get('lineNumber')}"
    grid.add_row(
        "Source", Text(rec.get("githubUrl") or where, style="underline blue", overflow="fold")
    )
    if m.revisions:
        grid.add_row("Releases", ", ".join(m.revisions))
    if m.project:
        grid.add_row("Project", project_text(m))
    grid.add_row("Id", f"{rec.get('id')}  ({rec.get('slug')})")
    return Panel(Group(message_text(m), Text(""), grid), title=_header(m), title_align="left")


_DETECTED = {
    "--project": "as asked (--project)",
    "log form": "its log format",
    "message": "the message",
}


def project_text(m: Match) -> str:
    """Which project answered and what told (`kverr explain` says it), and whether its fixes
    were run through the project's own checks."""
    p = m.project
    how = _DETECTED.get(p.get("detectedBy", ""), p.get("detectedBy", ""))
    verified = (
        ""
        if p.get("verified")
        else f"; fixes not verified ({p.get('product')} has no verification harness yet)"
    )
    return f"{p.get('product', p.get('name'))}, matched by {how}{verified}"


def _also_at(m: Match):
    from rich.text import Text

    rec = m.record
    where = f"{rec.get('filePath')}:{rec.get('lineNumber')}"
    releases = f"; releases {', '.join(m.revisions)}" if m.revisions else ""
    return Text(f"  same message also raised at {where} ({rec.get('id')}{releases})", style="dim")


def _one_line(m: Match):
    from rich.text import Text

    line = Text()
    line.append(f"line {m.line}: " if m.line is not None else "")
    line.append(
        f"[{m.record.get('severity')}] ", style=SEVERITY_STYLE.get(m.record.get("severity"), "")
    )
    line.append(message_text(m))
    line.append(f"  ({m.record.get('id')}, {m.how})", style="dim")
    return line


def load_summary(catalog: Any, report: Any) -> str:
    """One line for `kverr load`."""
    skipped = report.records - report.usable
    return (
        f"loaded {report.records} records into {catalog} ({skipped} found by traceback or id only)"
    )


# ---------------------------------------------------------------- build / diff / history
# (history engineer: summaries for `kverr build`, `kverr diff`, `kverr history`)


def build_progress(enabled: bool) -> Any:
    """A context manager giving `kverr build` its progress callback: a Rich bar with ETA on
    stderr, or None (no output) when disabled."""
    import contextlib

    return contextlib.contextmanager(_build_bar)(enabled)


def _build_bar(enabled: bool) -> Any:
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    labels = {"extract": "extracting blobs", "records": "revisions"}
    bar = Progress(
        TextColumn("{task.description:>16}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=False,
    )
    tasks: dict[str, Any] = {}

    def update(phase: str, done: int, total: int) -> None:
        if phase not in tasks:
            tasks[phase] = bar.add_task(labels.get(phase, phase), total=total or 1)
        bar.update(tasks[phase], completed=done if total else 1, total=total or 1)

    with bar:
        yield update


def build_summary(result: Any) -> str:
    """What `kverr build` did: where it wrote, counts, cache use, parse failures, overlay warnings
    and pattern collisions."""
    c, s = result.counts, result.stats
    revs = result.revisions
    span = f"{len(revs)} revision(s)" if any(r.sha for r in revs) else "directory"
    lines = [
        f"built {result.out} from {span} in {result.seconds:.1f}s"
        + (f"; catalog {result.catalog}" if result.catalog else ""),
        f"  {c['records']} records ({_h_severities(c.get('severity', {}))}), {c['sites']} sites, "
        f"{c['flags']} flags, {c.get('occurrences', 0)} occurrences, {c.get('lineage', 0)} lineage links",
        f"  blobs: {s.get('blobs', 0)} ({s.get('blobs_parsed', 0)} parsed, {s.get('blob_cache_hits', 0)} cached); "
        f"functions: {s.get('units_parsed', 0)} parsed, {s.get('unit_cache_hits', 0)} cached",
    ]
    if result.failures:
        lines.append(f"{len(result.failures)} file(s) could not be parsed:")
        lines += [f"  {f.path}:{f.line}:{f.col}: {f.message}" for f in result.failures]
    if result.warnings:
        lines.append(f"{len(result.warnings)} overlay warning(s):")
        lines += [f"  {w}" for w in result.warnings]
    if result.collisions:
        lines.append(
            f"{len(result.collisions)} pattern collision(s) in the newest revision"
            " (a record's pattern also matches another record's message):"
        )
        lines += [f"  {_h_collision(x)}" for x in result.collisions[:20]]
        if len(result.collisions) > 20:
            lines.append(f"  ... and {len(result.collisions) - 20} more")
    return "\n".join(lines)


def _h_severities(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {sev}" for sev, n in sorted(counts.items())) or "none"


def _h_collision(item: Any) -> str:
    if isinstance(item, (tuple, list)) and len(item) == 3:
        return f"{item[0]} also matches {item[1]}: {_h_clip(item[2], 80)}"
    if isinstance(item, (tuple, list)):
        return " <-> ".join(str(x) for x in item)
    return str(item)


def _h_rev(rev: dict) -> str:
    tags = rev.get("tags") or []
    short = _h_sha(rev)
    return f"{tags[0]} ({short})" if tags else short


def _h_sha(rev: dict) -> str:
    """Short sha; a revision without one is a directory build or a snapshot (files from disk)."""
    if rev.get("sha"):
        return rev["sha"][:10]
    return "snapshot, no commit" if rev.get("tags") or rev.get("release") else "directory"


def _h_line(rec: dict) -> str:
    where = f"{rec.get('file')}:{rec.get('line')}"
    cls = rec.get("errorClass") or rec.get("kind") or ""
    return f"{rec['id']}  {cls:<16} {_h_clip(rec.get('message') or '(no message)')}  [{where}]"


def _h_clip(text: str, n: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def diff_text(d: Any) -> str:
    """Human form of catalog.history.Diff."""
    out = [
        f"{_h_rev(d.rev_a)} -> {_h_rev(d.rev_b)}: {len(d.added)} added, {len(d.removed)} removed, "
        f"{len(d.changed)} changed, {len(d.moved)} moved"
    ]
    for title, items in (("added", d.added), ("removed", d.removed)):
        if items:
            out.append(f"\n{title}:")
            out += [f"  {'+' if title == 'added' else '-'} {_h_line(r)}" for r in items]
    if d.changed:
        out.append("\nchanged:")
        for ch in d.changed:
            old, new, what = ch["old"], ch["new"], ", ".join(ch["what"])
            if old["id"] == new["id"]:  # same error, other guard conditions
                out.append(f"  ~ {what}: {new['id']}  {_h_clip(new['message'], 80)}")
            else:
                out.append(f"  ~ {what}: {old['id']} -> {new['id']}")
            if ch["old"]["message"] != ch["new"]["message"]:
                out += [
                    f"      was: {_h_clip(ch['old']['message'])}",
                    f"      now: {_h_clip(ch['new']['message'])}",
                ]
            if ch["old"]["errorClass"] != ch["new"]["errorClass"]:
                out.append(f"      class: {ch['old']['errorClass']} -> {ch['new']['errorClass']}")
    if d.moved:
        out.append("\nmoved:")
        for mv in d.moved:
            src, dst = mv["from"], mv["to"]
            out.append(f"  > {mv['record']['id']}  {_h_clip(mv['record']['message'], 70)}")
            out.append(
                f"      {src['file']}:{src['line']} ({src['function']}) -> {dst['file']}:{dst['line']} ({dst['function']})"
            )
    return "\n".join(out)


def revisions_text(revisions: list[dict]) -> str:
    """One line per revision a catalog holds, oldest first: what `--version` accepts."""
    out = []
    several = len({r.get("project") for r in revisions}) > 1
    for r in revisions:
        sha = (r.get("sha") or "")[:10] or "(no commit)"
        tags = ", ".join(r.get("tags") or [])
        project = f"{r.get('project') or '':<8} " if several else ""
        out.append(f"{project}{sha:<12} {r.get('date') or '':<25} {tags}".rstrip())
    out.append(f"{len(revisions)} revision(s); pass a tag, a snapshot label or a sha to --version.")
    return "\n".join(out)


def history_text(h: Any) -> str:
    """Human form of catalog.history.History."""
    rec = h.record
    # "first seen" / "first missing", not "introduced": only the revisions built are known, and
    # between two release tags the change may sit on any commit (build --touching to pin it).
    out = [_h_line(rec), f"present in {len(h.revisions)} of {h.total_revisions} revision(s) built"]
    if h.introduced:
        i = h.introduced
        out.append(
            f"first seen: {_h_sha(i)} {i['date']} {_h_clip(i['subject'] or '', 60)}"
            + (f"; first release {i['release']}" if i["release"] else "; in no release yet")
        )
    if h.disappeared:
        g = h.disappeared
        out.append(
            f"first missing: {_h_sha(g)} {g['date']} {_h_clip(g['subject'] or '', 60)}"
            + (f"; gone from release {g['release']} on" if g["release"] else "")
        )
    elif h.revisions:
        out.append("still present in the newest revision built")
    if h.successor:
        out.append(f"replaced by {h.successor} (message edited)")
    if h.previous:
        out.append("replaces " + " <- ".join(h.previous))
    releases = [t for r in h.revisions for t in r.get("tags") or []]
    if releases:
        out.append("releases: " + ", ".join(releases))
    return "\n".join(out)
