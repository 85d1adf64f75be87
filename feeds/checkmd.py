"""`kverr check`'s report as Markdown, for an assistant (the MCP `check` tool) and for an issue
comment (`kverr respond`): the same answer as the terminal card (kverr/checkcard.py), built
from the same JSON report (verify/preflight.py's report_json).

Everything in the report can carry the user's own words (the launch, values in a message), so
it is shown only as code: commands as fenced blocks, messages and options as code spans, where
nothing is markup, a link or a mention.
"""

from __future__ import annotations

from typing import Any

from kverr.card import md_block, md_code, md_escape


def check_markdown(report: dict[str, Any], *, heading: str = "**kverr check**") -> str:
    """The whole report: the launch, each error with the fix of this launch, what the release
    would adjust, and the launch with every fix applied."""
    release = md_code(report["release"])
    out = [f"{heading} · {release} · {md_code(report['platform'])}"]
    if report.get("reason"):
        return "\n".join([*out, "", f"Not checked: {md_code(report['reason'])}", ""])
    out += ["", "Your launch:", md_block(report["launch"]["command"], "bash")]
    for item in report.get("spelled", ()):
        out.append(f"- {md_code(item['typed'])} is read as {md_code(item['option'])}")
    for u in report.get("unknownOptions", ()):
        near = ", ".join(md_code(n) for n in u["didYouMean"])
        tail = f"; did you mean {near}?" if near else "."
        out.append(f"- {md_code(u['option'])} is not an option of {release}{tail}")
    out += [line for err in report["errors"] for line in error_markdown(err, report)]
    if report.get("stopped"):
        s = report["stopped"]
        why = f" ({md_code(s['reason'])})" if s.get("reason") else ""
        out += ["", f"The check stopped: {md_code(s['status'])}{why}"]
    if report["notices"]:
        out += ["", f"{release} would adjust this launch:"]
        out += [f"- {md_code(n['message'].strip())}" for n in report["notices"]]
    out.append("")
    if report["passed"]:
        out.append("The launch passes every check of this release.")
    elif report.get("fixed"):
        out += ["With every fix above, the launch passes:", md_block(report["fixed"], "bash")]
    return "\n".join(out) + "\n"


def error_markdown(err: dict[str, Any], report: dict[str, Any]) -> list[str]:
    """One error of the report: its message, and the fix of this launch or why there is none."""
    message = err["message"] or "(an assert with no message)"
    place = f"{err.get('file')}:{err.get('line')}"
    where = f" ({md_code(place)})" if err.get("file") else ""
    out = ["", f"**{md_escape(err['errorClass'])}**: {md_code(message)}{where}"]
    fix = err.get("yourFix")
    if fix:
        changed = ", ".join(md_code(c) for c in fix["changed"])
        out.append(
            f"Your fix changes {changed}, verified against {md_code(report['release'])}'s own"
            f" checks on {md_code(report['platform'])}:"
        )
        out.append(md_block(fix["after"], "bash"))
    elif err.get("noFix"):
        out.append(f"No fix of this launch passes: {md_code(err['noFix'])}")
    if err.get("id"):
        out.append(f"kverr id {md_code(err['id'])}")
    return out
