"""HTML for the static error reference: one plain function per page or block.

Every string that comes from a record, a flag or a revision goes through `esc` (or `href`), so a
message like `<path>` or hostile text in a record shows as text and never runs, and a control
character (a bidirectional override, a C1 control) shows as its escape, as on the terminal.
Links are relative so the site works from file://, from any sub-path of a web server, and offline.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

from kverr import display
from kverr.term import escape_terminal


def esc(value: object) -> str:
    return html.escape(escape_terminal("" if value is None else str(value)), quote=True)


def href(url: str | None) -> str | None:
    """Only plain https links leave the site: a `javascript:` or odd URL in a record is dropped."""
    url = display.safe_url(url)
    return esc(url) if url else None


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def plain(text: str) -> str:
    """Terminal colour codes (`\\x1b[91m...`) are noise on a web page: gone; any other control
    character shows as its escape."""
    return escape_terminal(_ANSI.sub("", text))


def title_of(rec: dict) -> str:
    """A bare `assert cond` has no message: name it by its condition instead."""
    if plain(rec.get("errorMessage") or "").strip():
        return plain(rec["errorMessage"]).strip()
    line = source_line(rec)
    return line.strip() if line else f"{rec.get('errorClass') or 'Error'} ({rec['id']})"


def label_of(rec: dict) -> str:
    """title_of as a reader sees it: `{self.page_size}` shown as ‹page_size›."""
    if not plain(rec.get("errorMessage") or "").strip():
        return title_of(rec)
    return "".join(
        display.placeholder_label(expr) if expr else text
        for text, expr in display.placeholder_spans(title_of(rec), rec.get("placeholders") or [])
    )


def message_html(rec: dict) -> str:
    """The message, escaped, with each placeholder as a styled ‹label› (the raw `{expr}` in
    its title attribute)."""
    if not plain(rec.get("errorMessage") or "").strip():
        return esc(title_of(rec))
    return "".join(
        f'<var class="ph" title="{esc("{" + expr + "}")}">{esc(display.placeholder_label(expr))}</var>'
        if expr
        else esc(text)
        for text, expr in display.placeholder_spans(title_of(rec), rec.get("placeholders") or [])
    )


def prose(text: str | None) -> str:
    """Knowledge prose as HTML: `backticks` and bare --flags as code, `{expr}` as ‹label›."""
    out = []
    for part, is_code in display.code_spans(plain(text or ""), flags=True):
        if is_code:
            out.append(f"<code>{esc(part)}</code>")
        else:
            out.append(esc(display.label_placeholders(part)))
    return "".join(out)


def source_line(rec: dict) -> str:
    lines = (rec.get("sourceCode") or "").splitlines()
    i = (rec.get("lineNumber") or 0) - (rec.get("sourceCodeStart") or 0)
    return lines[i] if 0 <= i < len(lines) else ""


# ---------------------------------------------------------------- layout

NAV = (("index.html", "Errors"), ("flags/index.html", "Flags"), ("tags/index.html", "Tags"),
       ("releases/index.html", "Releases"))  # fmt: skip


def layout(
    title: str,
    body: str,
    *,
    depth: int,
    active: str,
    meta: dict,
    scripts: Iterable[str] = (),
    description: str | None = None,
    path: str | None = None,
) -> str:
    """The frame every page shares. `depth` is how many folders below the site root the page is;
    `path`, its place under the site root, makes its canonical URL when meta has a baseUrl."""
    root = "../" * depth
    canonical = ""
    if meta.get("baseUrl") and path is not None:
        canonical = f'\n<link rel="canonical" href="{esc(meta["baseUrl"] + path)}">'
    nav = "".join(
        f'<a href="{root}{path}"{" aria-current=page" if label == active else ""}>{label}</a>'
        for path, label in NAV
    )
    tail = "".join(f'<script src="{root}{s}"></script>' for s in scripts)
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="kverr {esc(meta.get("toolVersion", ""))}">
<title>{esc(title)} · {esc(meta.get("siteTitle", "kverr"))}</title>
<meta name="description" content="{esc(" ".join((description or title).split())[:200])}">
<link rel="stylesheet" href="{root}assets/style.css">{canonical}
</head>
<body>
<header class="top">
  <div class="wrap top-inner">
    <a class="brand" href="{root}index.html"><span class="logo">kv</span>err <small>{esc(meta.get("siteTitle", ""))}</small></a>
    <nav>{nav}</nav>
    <form class="mini-search" action="{root}index.html" method="get" role="search">
      <input name="q" type="search" placeholder="Paste an error…" aria-label="Search errors">
    </form>
  </div>
</header>
<main class="wrap">
{body}
</main>
<footer class="wrap foot">{footer(meta)}</footer>
{tail}
</body>
</html>
"""


def footer(meta: dict) -> str:
    parts = [f"Generated by kverr {esc(meta.get('toolVersion', ''))}"]
    if meta.get("repository"):
        parts.append(f"from {esc(meta['repository'])}")
    if meta.get("datasetVersion"):
        parts.append(f"· dataset {esc(meta['datasetVersion'])}")
    return " ".join(parts) + " · works offline"


# ---------------------------------------------------------------- small blocks


def badge(text: str | None, kind: str = "") -> str:
    if not text:
        return ""
    return f'<span class="badge {esc(kind)}">{esc(text)}</span>'


def chips(items: Iterable[tuple[str, str | None]]) -> str:
    """(label, link or None) pairs as a row of chips."""
    out = []
    for label, link in items:
        if link:
            out.append(f'<a class="chip" href="{esc(link)}">{esc(label)}</a>')
        else:
            out.append(f'<span class="chip">{esc(label)}</span>')
    return f'<div class="chips">{"".join(out)}</div>' if out else ""


def code(text: str, cls: str = "") -> str:
    return f'<pre class="code {cls}"><code>{esc(text)}</code></pre>'


def source_block(rec: dict) -> str:
    """The statement's surrounding source with line numbers and the reporting line marked."""
    start = rec.get("sourceCodeStart") or 1
    here = rec.get("lineNumber")
    rows = []
    for n, line in enumerate((rec.get("sourceCode") or "").splitlines(), start):
        cls = ' class="hl"' if n == here else ""
        rows.append(f'<span{cls} data-n="{n}">{esc(line) or " "}</span>')
    return f'<pre class="code source"><code>{"".join(rows)}</code></pre>'


def before_after(fix: str) -> str:
    """`# before ... # after ...` becomes two commands stacked at full width, wrapped, with the
    arguments the fix changes marked and a copy button each; anything else stays one block."""
    example = display.example_fix(fix)
    if example is None:
        return code(fix)
    hidden = example.before.hidden or example.after.hidden
    return (
        '<div class="fix">'
        + _pane("Before", "bad", "before", example.before, example.removed(), "del")
        + _pane("After", "good", "after", example.after, example.added(), "ins")
        + (f'<p class="note">{esc(display.HIDDEN_NOTE)}</p>' if hidden else "")
        + "</div>"
    )


def _pane(
    label: str, tone: str, cls: str, command: display.Command, changed: set[str], tag: str
) -> str:
    # Each argument is one inline block: a narrow screen wraps between arguments, never at
    # the hyphens inside one (`--model-` / `path`), and the text copies unchanged.
    marked = " ".join(
        f'<{tag} class="a chg">{esc(shown)}</{tag}>'
        if word in changed
        else f'<span class="a">{esc(shown)}</span>'
        for word, shown in zip(command.words, command.shown, strict=True)
    )
    # The button is hidden until assets/copy.js shows it: without script it could do nothing.
    return (
        f'<div class="pane"><div class="pane-head"><span class="pane-label {tone}">{label}</span>'
        f'<button type="button" class="copy" hidden aria-label="Copy the {label.lower()} command">Copy</button></div>'
        f'<pre class="code cmd {cls}"><code>{marked}</code></pre></div>'
    )


def table(headers: list[str], rows: list[list[str]], cls: str = "") -> str:
    """A table of HTML cells ("" without rows). On a narrow screen each row becomes a card of
    labelled lines (style.css: table.rows), so no column is cut off at the edge."""
    if not rows:
        return ""
    head = "".join(f"<th>{esc(t)}</th>" for t in headers)
    body = "".join(
        "<tr>" + "".join(f'<td data-label="{esc(t)}">{cell}</td>' for t, cell in zip(headers, row, strict=True)) + "</tr>"
        for row in rows
    )  # fmt: skip
    return (
        f'<div class="table-wrap"><table class="{esc(("rows " + cls).strip())}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def section(title: str, inner: str, ident: str = "") -> str:
    if not inner.strip():
        return ""
    anchor = f' id="{esc(ident)}"' if ident else ""
    return f"<section{anchor}><h2>{esc(title)}</h2>{inner}</section>"


def para(text: str | None) -> str:
    return f"<p>{prose(text)}</p>" if text else ""


def bullets(items: Iterable[str] | None) -> str:
    li = "".join(f"<li>{prose(i)}</li>" for i in items or [] if i)
    return f"<ul>{li}</ul>" if li else ""


def error_row(
    rec: dict,
    link: str,
    *,
    rank_data: bool = False,
    note: str | None = None,
    project: str | None = None,
    where: str | None = None,
) -> str:
    """One error in a list: message in code font, badges, flags. Index rows carry data-id for
    search. `project`: the product badge, in a site of several projects; `where`: what tells
    this row from others with the same message (file, function, releases)."""
    data = f' data-id="{esc(rec["id"])}"' if rank_data else ""
    flags = " ".join(f"<code>{esc(f)}</code>" for f in rec.get("flags") or [])
    extra = f'<span class="note">{esc(note)}</span>' if note else ""
    place = f'<span class="where">{esc(where)}</span>' if where else ""
    return (
        f'<li class="err-row"{data}><a href="{esc(link)}">'
        f'<span class="msg">{message_html(rec)}</span>{place}'
        f'<span class="meta">{badge(project, "project")}'
        f"{badge(rec.get('severity'), rec.get('severity') or '')}"
        f"{badge(rec.get('errorClass') or rec.get('kind'), 'cls')}{extra}"
        f'<span class="flags">{flags}</span></span></a></li>'
    )
