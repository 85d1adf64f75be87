"""One sentence about a fix: a record's, verified against which release's own checks or
plainly not verified and, in a user's words, why; and the fix of the user's own launch, checked
or why there is none. explain (terminal and --json), the site and the API all say it the same
way; `kverr explain --verbose` says it the way the verify step wrote it (the platform and model
profiles, the reason whole), and --json keeps `verification` whole."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from kverr.answers import Revision

UNKNOWN = "kverr explain --verbose says why"


def fix_status(
    record: dict[str, Any], *, verbose: bool = False, names: Mapping[str, str] | None = None
) -> str:
    """`names`: what a user calls a revision (revision_names), by its short sha or label."""
    v = record.get("verification") or {}
    if v.get("status") == "verified":
        where = revision_name(v.get("revision"), names)
        if not verbose:
            return f"Fix verified against {where}'s own checks."
        model = f" with model profile {v['model']}" if v.get("model") else ""
        ran = _argparse_run(record) if record.get("kind") == "argparse" else ""
        return f"Fix verified against {where}'s own check on {v.get('platform')}{model}{ran}."
    if verbose:
        reason = (v.get("reason") or "this dataset was built without verification").rstrip(".")
        return f"Fix not verified: {reason}."
    return f"Fix not verified: {reason_words(record)}."


def is_verified(record: dict[str, Any]) -> bool:
    return (record.get("verification") or {}).get("status") == "verified"


def yours_status(yours: Mapping[str, Any] | None, *, verbose: bool = False) -> str:
    """One sentence on the fix of the user's own launch (Match.yours): what it was checked
    against, or why there is none ("" when the paste held no launch). `verbose`: the platform
    and model profiles it ran on, and the fix search's own reason."""
    y = yours or {}
    v = y.get("verification") or {}
    if v.get("status") == "verified":
        ran = f" on {v.get('platform')} with {v.get('model')}" if verbose else ""
        chosen = f" ({v['chosenBy']})" if v.get("chosenBy") else ""
        return (
            f"Your launch, fixed: verified against {v.get('revision')}'s own checks{chosen}{ran}."
        )
    if y.get("status") == "not-reproduced":
        return f"Your launch does not raise this error: {y.get('reason')}."
    if y.get("status") == "beyond-arguments":
        where = f"{y.get('release')}'s argument checks on {y.get('platform')}"
        later = (
            "this check runs as the server starts (its GPU memory, the loaded model), which"
            " kverr cannot run before launch"
        )
        change = " with this fix's change" if y.get("after") else ""
        return f"Your launch{change} passes {where}; {later}."
    if y.get("status") == "no-fix" and not verbose:  # the fix search's reason, as for a record
        why = reason_words({"verification": {"reason": y.get("reason")}})
        return f"Your launch was not fixed: {why}."
    if y.get("status") in ("not-checked", "no-fix"):
        return f"Your launch was not fixed: {str(y.get('reason')).rstrip('.')}."
    return ""


# The verify step's reasons (verify/step.py, search/, sandbox/child.py, parsing.py for argparse
# records), by what they mean to a user, tried in order: a
# phrase the reason holds -> the words the card shows. The whole reason stays in the record.
_REASONS: tuple[tuple[str, str], ...] = (
    (
        "only giving the feature up would silence",
        "only turning the feature off silences this notice",
    ),
    ("no command line reaches it", "no command line can reach this check"),
    (" is not reached from ", "nothing that starts a server runs this check"),
    ("is not among the modules whose validation", "nothing that starts a server runs this check"),
    ("has none of", "nothing that starts a server runs this check"),
    ("candidate fixes passed", "none of the fixes tried passed the release's checks"),
    ("repairs passed", "none of the fixes tried passed the release's checks"),
    ("no candidate change of the launch", "no change of the launch tried gets past this check"),
    ("the after line was rejected by the argument parser", "the parser refuses the fixed launch"),
    ("rejected the before line with another message", "the example launch gives another error"),
    ("not argparse's error", "the example launch does not give this error"),
    ("the record has no example fix", "there is no example launch to run"),
    ("does not load", "the release's code could not be loaded to run its checks"),
    ("the launch's step before parsing", "the launch's config-file step could not be run"),
    ("names no config option", "the launch's config-file step could not be run"),
    ("snapshot of files from disk", "files from disk, not a commit, were built"),
    ("no site of this revision holds", "the checked revision does not hold this record"),
    ("runs of the check", "the search for a fix ran out of tries"),
    ("did not run the revision's parser", "this catalog was built without running the checks"),
)
# Reasons that say the check was never reached: a check that fires on some hardware only
# says which (the trigger's words, "on a Blackwell GPU"), as that is what a user can judge.
_NOT_REACHED = ("reached it", "launches raised it", "could not be decided", "no launch was tried")
_HARDWARE = re.compile(r"(?<!not )\bon (an? [^,.;:]{1,40}? (?:GPU|NPU|XPU|HPU)|ROCm|CUDA)\b")
_NO_SPEC = re.compile(r"kverr has no verify spec for (.{1,60}?) yet")


def reason_words(record: dict[str, Any]) -> str:
    """Why a record's fix was not verified, in a user's words (no function or module names)."""
    v = record.get("verification") or {}
    reason = v.get("reason") or ""
    if not reason:
        return "this catalog was built without running the checks"
    if any(p in reason for p in _NOT_REACHED):
        hardware = _HARDWARE.search(record.get("triggerScenarios") or "")
        if hardware:
            return f"the check fires on {hardware[1]}, and kverr's test launches did not reach it"
        return "kverr's test launches did not reach this check"
    spec = _NO_SPEC.match(reason)
    if spec:
        return f"kverr cannot run {spec[1]}'s checks yet"
    return next((words for phrase, words in _REASONS if phrase in reason), UNKNOWN)


def revision_name(revision: str | None, names: Mapping[str, str] | None = None) -> str:
    """A verified revision as a user knows it: its release tag, `commit <sha>` for an untagged
    commit, a snapshot as such (`names`), else as the record has it."""
    rev = revision or "?"
    if names and rev in names:
        return names[rev]
    return f"commit {rev}" if re.fullmatch(r"[0-9a-f]{7,40}", rev) else rev


def revision_names(revisions: Iterable[Revision]) -> dict[str, str]:
    """revision_name's `names` from a catalog's revisions (Catalog.revisions): a tagged
    commit's short sha -> its tag, a snapshot's label -> "the <label> snapshot"."""
    out: dict[str, str] = {}
    for r in revisions:
        if r.sha and r.tags:
            out[r.sha[:12]] = r.tags[0]
        elif not r.sha:
            out.update((t, f"the {t} snapshot") for t in r.tags)
    return out


def _argparse_run(record: dict[str, Any]) -> str:
    """What was run of an argparse record's fix: explain shows the option as pasted, with an
    answer computed for the user's release, so the sentence names the lines the check ran."""
    lines = (record.get("exampleFix") or "").splitlines()
    if len(lines) != 4:
        return ""
    before, after = lines[1].split(), lines[3].split()
    n = 0
    while n < min(len(before), len(after)) and before[n] == after[n]:
        n += 1
    while 0 < n < len(before) and not before[n].startswith("-"):
        n -= 1  # from the option whose value changed: `--tp-size 1`, not `1`
    bad, good = " ".join(before[n:]), " ".join(after[n:])
    if not bad:
        return ""
    passed = (
        f"`{good}` passes it and the launch's validation"
        if good
        else ("the launch without it passes its validation")
    )
    return f" (its parser rejects `{bad}`; {passed})"
