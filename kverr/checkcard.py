"""`kverr check`'s card: the user's launch, each error with the fix of that launch, what the
release would change silently, and the launch with every fix applied. Built from the JSON
report (verify/preflight.py's report_json), the one answer the terminal and the API share."""

from __future__ import annotations

from typing import Any

from kverr import display, term


def check_text(report: dict[str, Any], t: term.Term) -> str:
    safe = term.escape_terminal
    out: list[str] = []
    hidden = False

    def command(text: str) -> str:
        """A whole command line, safe to copy: each word quoted, an implausible value hidden."""
        nonlocal hidden
        cmd = display.parse_command(text)
        hidden = hidden or cmd.hidden
        return cmd.text

    head = f"{report['release']} · {report['platform']} · {report['model']}"
    out.append(t.style("kverr check", "bold") + f"  {safe(head)}")
    if report.get("reason"):
        out.append(f"not checked: {safe(report['reason'])}")
        return "\n".join(out) + "\n"
    out += ["", "Your launch", command(report["launch"]["command"])]
    for item in report.get("spelled", ()):
        out.append(f"  ({safe(item['typed'])} is read as {safe(item['option'])})")
    for u in report.get("unknownOptions", ()):
        near = ", ".join(safe(n) for n in u["didYouMean"])
        tail = f"; did you mean {near}?" if near else ""
        out.append(f"  {safe(u['option'])} is not an option of {safe(report['release'])}{tail}")
    for err in report["errors"]:
        out.append("")
        where = f" ({safe(err['file'])}:{err['line']})" if err.get("file") else ""
        message = err["message"] or err.get("statement") or "(an assert with no message)"
        out.append(t.style("✗ ", "red") + safe(f"{err['errorClass']}: {message}") + where)
        fix = err.get("yourFix")
        if fix:
            changed = ", ".join(fix["changed"])
            out.append(
                f"  Your fix changes {safe(changed)}; verified against {safe(report['release'])}'s"
                f" own checks on {safe(report['platform'])}:"
            )
            out.append(command(fix["after"]))
        elif err.get("noFix"):
            out.append(f"  No fix of this launch passes: {safe(err['noFix'])}")
        if err.get("id"):
            out.append(f"  kverr show {err['id']}")
    if report.get("stopped"):
        s = report["stopped"]
        out += ["", f"The check stopped: {safe(s['status'])} ({safe(s['reason'] or '')})"]
    if report["notices"]:
        out += ["", f"{safe(report['release'])} would adjust this launch:"]
        out += [f"  • {safe(n['message'].strip())}" for n in report["notices"]]
    out.append("")
    if report["passed"]:
        out.append(t.style("✓ ", "green") + "The launch passes every check of this release.")
    elif report.get("fixed"):
        out.append(t.style("✓ ", "green") + "With every fix above, the launch passes:")
        out.append(command(report["fixed"]))
    if hidden:
        out += ["", display.HIDDEN_NOTE]
    return "\n".join(out) + "\n"
