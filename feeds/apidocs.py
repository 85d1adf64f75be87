"""GET /docs: the API reference as one static HTML page, rendered from the OpenAPI document the
server publishes at /openapi.json, so the two never disagree. No script, no CDN, no font: the
page is the document laid out (each endpoint's parameters, body and answers; each schema's
fields), readable offline and under a `default-src 'none'` policy."""

from __future__ import annotations

import json
from typing import Any

from kverr.present import display
from kverr.present.html import esc

METHODS = ("get", "post", "put", "patch", "delete")

STYLE = """
body { margin: 0 auto; max-width: 60rem; padding: 1.5rem 1.25rem 3rem; font: 16px/1.55 system-ui, sans-serif;
  color: #1d2330; background: #fbfbfd; }
@media (prefers-color-scheme: dark) { body { color: #e4e8f0; background: #10131a; } a { color: #8ea6ff; } }
h1 { font-size: 1.7rem; margin: 0 0 0.4rem; } h2 { margin: 2.2rem 0 0.6rem; font-size: 1.25rem; }
h3 { margin: 1.6rem 0 0.3rem; font: 600 1.05rem ui-monospace, monospace; overflow-wrap: anywhere; }
code, .m { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.9em; }
.m { display: inline-block; min-width: 3.6rem; font-weight: 700; text-transform: uppercase; }
.get { color: #2b8a3e; } .post { color: #3b5bdb; }
nav ul { columns: 2 16rem; padding-left: 1.2rem; } nav li { margin: 0.15rem 0; }
table { border-collapse: collapse; width: 100%; margin: 0.4rem 0 0.8rem; font-size: 0.93rem; }
th, td { text-align: left; vertical-align: top; padding: 0.35rem 0.6rem; border-bottom: 1px solid #8884; }
td:first-child { white-space: nowrap; } td { overflow-wrap: break-word; } td code { overflow-wrap: anywhere; }
.muted { opacity: 0.75; } section { border-top: 1px solid #8884; }
@media (max-width: 40rem) { td:first-child { white-space: normal; } td { overflow-wrap: anywhere; } }
"""


def render(doc: dict[str, Any]) -> str:
    """The reference page of an OpenAPI 3.1 document."""
    info = doc.get("info") or {}
    ops = [
        (path, method, op)
        for path, item in (doc.get("paths") or {}).items()
        for method, op in item.items()
        if method in METHODS
    ]
    index = "".join(
        f'<li><a href="#{_anchor(method, path)}"><span class="m {method}">{method}</span>'
        f"<code>{esc(path)}</code></a> {esc(op.get('summary') or '')}</li>"
        for path, method, op in ops
    )
    schemas = (doc.get("components") or {}).get("schemas") or {}
    body = [
        f"<h1>{esc(info.get('title') or 'API')}</h1>",
        f'<p class="muted">Version {esc(info.get("version") or "")} · OpenAPI {esc(doc.get("openapi") or "")}'
        ' · the same as <a href="openapi.json">/openapi.json</a></p>',
        f"<p>{_prose(info.get('description'))}</p>",
        f"<nav><h2>Endpoints</h2><ul>{index}</ul></nav>",
        *(_operation(doc, path, method, op) for path, method, op in ops),
        "<h2>Schemas</h2>",
        *(_schema_section(name, schema) for name, schema in schemas.items()),
    ]
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(info.get('title') or 'API')} reference</title><style>{STYLE}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )


def _prose(text: str | None) -> str:
    """A description: `backticked` runs and bare --flags as code, the rest escaped text."""
    return "".join(
        f"<code>{esc(part)}</code>" if code else esc(part)
        for part, code in display.code_spans(text or "", flags=True)
    )


def _anchor(method: str, path: str) -> str:
    return method + "-" + "".join(c if c.isalnum() else "-" for c in path).strip("-")


def _resolve(doc: dict, node: dict) -> dict:
    """A `$ref` to the document's components, followed (once: components do not chain)."""
    ref = node.get("$ref") if isinstance(node, dict) else None
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return node
    found: Any = doc
    for part in ref[2:].split("/"):
        found = found.get(part, {}) if isinstance(found, dict) else {}
    return found if isinstance(found, dict) else {}


def _operation(doc: dict, path: str, method: str, op: dict) -> str:
    out = [
        f'<section id="{_anchor(method, path)}"><h3><span class="m {method}">{method}</span>{esc(path)}</h3>',
        f"<p><b>{esc(op.get('summary') or '')}</b></p>",
    ]
    if op.get("description"):
        out.append(f"<p>{_prose(op['description'])}</p>")
    params = [_resolve(doc, p) for p in op.get("parameters") or []]
    if params:
        rows = "".join(
            f"<tr><td><code>{esc(p.get('name'))}</code></td><td>{esc(p.get('in'))}"
            f"{' · required' if p.get('required') else ''}</td><td>{_type(p.get('schema') or {})}</td>"
            f"<td>{_prose(p.get('description'))}</td></tr>"
            for p in params
        )
        out.append(
            "<table><thead><tr><th>Parameter</th><th>In</th><th>Type</th><th>Meaning</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>"
        )
    request = op.get("requestBody")
    if request:
        kinds = ", ".join(
            f"<code>{esc(kind)}</code> {_type(media.get('schema') or {})}"
            for kind, media in (request.get("content") or {}).items()
        )
        need = "required" if request.get("required") else "optional"
        out.append(f"<p><b>Body</b> ({need}): {kinds}. {_prose(request.get('description'))}</p>")
    rows = "".join(
        f"<tr><td><code>{esc(status)}</code></td><td>{_prose(_resolve(doc, answer).get('description'))}"
        f"{_content(_resolve(doc, answer))}</td></tr>"
        for status, answer in (op.get("responses") or {}).items()
    )
    out.append(
        f"<table><thead><tr><th>Status</th><th>Answer</th></tr></thead><tbody>{rows}</tbody></table>"
    )
    return "".join(out) + "</section>"


def _content(answer: dict) -> str:
    kinds = [
        f"<code>{esc(kind)}</code> {_type(media.get('schema') or {})}"
        for kind, media in (answer.get("content") or {}).items()
    ]
    return f'<br><span class="muted">{", ".join(kinds)}</span>' if kinds else ""


def _type(schema: dict) -> str:
    """A schema in a few words: `string ≤ 500`, `integer 1..50 (default 5)`, a link to a named one."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
        name = ref.rsplit("/", 1)[-1]
        return f'<a href="#schema-{esc(name)}">{esc(name)}</a>'
    if "enum" in schema:
        return " | ".join(f"<code>{esc(json.dumps(v))}</code>" for v in schema["enum"])
    if "const" in schema:
        return f"<code>{esc(json.dumps(schema['const']))}</code>"
    kind = schema.get("type") or ("object" if "properties" in schema else "")
    text = " or ".join(map(str, kind)) if isinstance(kind, list) else str(kind)
    if text == "array" and isinstance(schema.get("items"), dict):
        return f"array of {_type(schema['items'])}"
    bits = []
    if "minimum" in schema or "maximum" in schema:
        bits.append(f"{schema.get('minimum', '')}..{schema.get('maximum', '')}")
    if "maxLength" in schema:
        bits.append(f"≤ {schema['maxLength']} chars")
    if "pattern" in schema:
        bits.append(f"<code>{esc(schema['pattern'])}</code>")
    if "default" in schema:
        bits.append(f"(default <code>{esc(json.dumps(schema['default']))}</code>)")
    return esc(text) + (" " + " ".join(bits) if bits else "")


def _schema_section(name: str, schema: dict) -> str:
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    rows = "".join(
        f"<tr><td><code>{esc(key)}</code>{' *' if key in required else ''}</td>"
        f"<td>{_type(value if isinstance(value, dict) else {})}</td>"
        f"<td>{_prose(value.get('description')) if isinstance(value, dict) else ''}</td></tr>"
        for key, value in props.items()
    )
    table = (
        "<table><thead><tr><th>Field (* required)</th><th>Type</th><th>Meaning</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
        if rows
        else f"<p>{_type(schema)}</p>"
    )
    about = f"<p>{_prose(schema.get('description'))}</p>" if schema.get("description") else ""
    return f'<section id="schema-{esc(name)}"><h3>{esc(name)}</h3>{about}{table}</section>'
