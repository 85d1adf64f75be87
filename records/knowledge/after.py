"""What a record's knowledge can say only once the build is done: the `kverr check` tip shown
with the launch that meets the check (the fix the verify step kept), and the release a
deprecated option's successor arrives in. (The releases that carry the check are the
record's own Releases section, from its occurrences: prose repeating them read as a stock
sentence on most records.)

    finish(record, launch=..., since={flag: release})
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

from kverr.records.knowledge.docs import given_options, shell_words
from kverr.records.knowledge.fixes import replacement


def finish(
    record: dict,
    *,
    launch: str,
    since: Mapping[str, str] | None = None,
    upgrade: tuple[str, str] | None = None,
) -> dict:
    """`record` with its build-time knowledge: `launch` is the project's launch command
    (what an exampleFix line starts with), `since` the first release declaring each flag,
    `upgrade` (the last release without the check, the first with it) when the last one's
    parser took the launch the check was seen to stop (`before_launch`)."""
    situations = record.get("commonSituations") or ""
    shown = before_launch(record, launch)
    if upgrade and shown:
        last, first = upgrade
        args = " ".join(shlex.quote(w) for w in shown[1])
        said = (
            f"Met after upgrading: {last} took `{args}` without this check, which arrived in"
            f" {first}."
        )
        situations = f"{situations} {said}".strip()
    tips = [t for t in record.get("preventionTips") or [] if t]
    if record.get("backgroundTag") == "deprecated-option" and since:
        old, new = replacement(record.get("errorMessage") or "", record.get("flags") or ())
        first = since.get(new)
        if old and new and first:
            tips = [
                f"{t} ({new} is accepted from {first} on)"
                if t.startswith(f"Replace {old} with {new}")
                else t
                for t in tips
            ]
    check = _check_tip(record, shown)
    if check and check not in tips:
        tips.append(check)
    solutions = _unrepeated(record.get("solutions") or [])
    return {
        **record, "preventionTips": tips, "commonSituations": situations, "solutions": solutions
    }  # fmt: skip


_SETS_ONE = re.compile(r"Set (--[\w.-]+)(?:=| to (?:one of )?)(\S+)")


def _unrepeated(solutions: list[str]) -> list[str]:
    """The solutions less those that set an option to the value the verified fix (put first
    by the verify step: "Launch with --ep-size 1") already gives it ("Set --ep-size=1")."""
    if not solutions or not solutions[0].startswith("Launch with "):
        return solutions
    given = given_options(shell_words(solutions[0].removeprefix("Launch with ")))
    done = set(given or ())
    return solutions[:1] + [
        s for s in solutions[1:] if not ((m := _SETS_ONE.fullmatch(s)) and m.groups() in done)
    ]


def _check_tip(record: dict, shown: tuple[list[str], list[str]] | None) -> str:
    """ "Run a launch through `kverr check -- <command>` ...": what the launch the check was
    seen to stop (`before_launch`) shows, so the tip names the options that meet the check;
    "" without one."""
    if shown is None:
        return ""
    env, words = shown
    args = " ".join(shlex.quote(w) for w in words)
    noun = "error" if record.get("severity") in ("error", "critical") else "warning"
    with_env = f" with {' '.join(env)}" if env else ""
    return (
        "Run a launch through `kverr check -- <command>` before starting the server: this"
        f" release's own checks report this {noun} for `{args}`{with_env}"
    )


def before_launch(record: dict, launch: str) -> tuple[list[str], list[str]] | None:
    """(the environment it sets, its arguments past the launch command) of the launch the
    check was seen to stop: the verified exampleFix's before line; None without one."""
    lines = (record.get("exampleFix") or "").splitlines()
    verified = (record.get("verification") or {}).get("status") == "verified"
    if len(lines) != 4 or not launch or not verified:
        return None  # only a launch the check was seen to stop
    words, head = shell_words(lines[1]), shell_words(launch)
    at = _find(words, head)
    if at < 0:  # the launch without its model option (a fix that sets the model itself)
        head = head[:-2]
        at = _find(words, head)
    if at < 0 or not head:
        return None
    args, env = words[at + len(head) :], words[:at]
    if not args or "&&" in env:
        return None
    return env, args


def _find(words: list[str], head: list[str]) -> int:
    n = len(head)
    return next((i for i in range(len(words) - n + 1) if words[i : i + n] == head), -1)
