"""`kverr respond`: answer a GitHub issue where the user asked, with one comment.

    read_event(path)                  -> Event (an `issues` or `issue_comment` payload)
    compose(cat, event.text, ...)     -> the comment's Markdown, or None when kverr knows nothing
    post(body, event, ...)            -> "created" | "updated" | "unchanged"

The comment holds the fix of the user's own launch where kverr can check it (a release source
is configured: `kverr check`'s personal fix), each pasted error's card, and a footer naming
kverr's version and the release the answer is for. It is posted only when there is an answer,
and at most once per issue: a later event edits kverr's earlier comment, found by a hidden
marker and its author, never a second one.

Issue text is hostile (docs/integrations.md, "Trust model"): nothing of it reaches the comment
but as code (commands as fenced blocks longer than any backtick run, messages as code spans) or
as escaped prose (present/markdown.py's escape), so no tag, link or image the user wrote renders, and
an @name the user wrote never notifies anyone: GitHub reads mentions in prose whatever escapes
surround them, so a pasted value goes into prose only as a code span of plain characters.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kverr.present import display
from kverr.present import markdown as md
from kverr.present.answer import of_report

from kverr import __version__, template
from kverr.answers import Match
from kverr.errors import KverrError, KverrWarning, NotFound, QueryError

MARKER = "<!-- kverr-respond -->"  # first line of every comment kverr posts
BOT_LOGIN = "github-actions[bot]"  # who posts with the workflow's GITHUB_TOKEN
MAX_EVENT = 4 << 20  # bytes of an event payload read (an issue body is at most 65,536 chars)
MAX_TEXT = 1 << 20  # characters of the text answered
MAX_COMMENTS = 3000  # comments looked through for kverr's earlier one (30 pages)
# What finds an error in an issue: the message or a traceback frame. Partial and fuzzy matches
# read words, and an issue's prose is words: they would answer what nobody asked.
TRUSTED = ("pattern", "traceback")


@dataclass(frozen=True)
class Event:
    """What kverr reads of an `issues` or `issue_comment` event."""

    name: str  # "issues" | "issue_comment"
    action: str  # "opened", "edited", "created", ...
    repo: str  # "owner/name"
    number: int
    text: str  # the issue's title and body, or the comment's body
    author: str  # who wrote that text
    bot: bool  # ... and whether that is an app (kverr's own comment, another bot)
    pull_request: bool  # the issue is a pull request


def read_event(path: str | Path) -> Event:
    """The event in the JSON file at `path` ($GITHUB_EVENT_PATH in a workflow); QueryError
    naming the file when it cannot be read or is not an issue event."""
    try:
        with open(path, "rb") as fh:
            data = json.loads(fh.read(MAX_EVENT).decode("utf-8", "replace"))
    except OSError as exc:
        raise QueryError(
            f"cannot read the event {path} ({exc.strerror}); pass --event FILE."
        ) from None
    except ValueError:
        raise QueryError(f"the event {path} is not JSON; pass the file GitHub wrote.") from None
    issue = data.get("issue") if isinstance(data, dict) else None
    repo = (data.get("repository") or {}).get("full_name") if isinstance(data, dict) else None
    if not isinstance(issue, dict) or not isinstance(repo, str) or "/" not in repo:
        raise QueryError(
            f"the event {path} has no issue and repository; run kverr respond on an issues or"
            " issue_comment event."
        )
    comment = data.get("comment")
    if isinstance(comment, dict):
        name, source, text = "issue_comment", comment, _text(comment.get("body"))
    else:
        name, source = "issues", issue
        text = f"{_text(issue.get('title'))}\n\n{_text(issue.get('body'))}"
    user = source.get("user") or {}
    number = issue.get("number")
    if not isinstance(number, int):
        raise QueryError(f"the event {path} names no issue number; pass the file GitHub wrote.")
    return Event(
        name=name,
        action=str(data.get("action") or ""),
        repo=repo,
        number=number,
        text=text[:MAX_TEXT],
        author=str(user.get("login") or ""),
        bot=user.get("type") == "Bot",
        pull_request=bool(issue.get("pull_request")),
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def skip_reason(event: Event) -> str | None:
    """Why this event gets no answer, or None: kverr answers what a person wrote on an issue."""
    if event.bot:
        return f"the text is by {event.author}, an app"
    if event.pull_request:
        return "it is a pull request"
    if event.action not in ("opened", "edited", "reopened", "created"):
        return f"the event's action is {event.action!r}"
    return None


# ---------------------------------------------------------------- the comment


def compose(
    cat: Any,
    text: str,
    *,
    source: str | None = None,
    release: str | None = None,
) -> str | None:
    """The comment answering `text`, or None when it holds no known error and no launch whose
    check fails. `source` (or $KVERR_SOURCE): the release source `kverr check` runs the
    user's launch against; without one the answer is the cards alone."""
    version = release if release and _holds(cat, release) else None
    matches = [m for m in cat.explain(text, version=version) if m.how in TRUSTED]
    source = source or os.environ.get("KVERR_SOURCE")
    report = _checked(text, source, release)
    if matches and not source:  # explain's own answer: advice from the values pasted
        from kverr.advice import personalize

        matches = personalize(text, matches, release=version)
    if not matches and report is None:
        return None
    parts = [MARKER]
    if report is not None:
        parts.append(md.check(of_report(report), heading="**Your launch, checked by kverr**"))
    if matches:
        parts.append(md.answers([quoted(m) for m in matches], cat.release_orders()))
    parts.append(footer(cat, matches, report, version))
    return "\n\n".join(p.strip("\n") for p in parts) + "\n"


def _holds(cat: Any, release: str) -> bool:
    """Whether the catalog knows `release`: a source can be checked at a release kverr's
    dataset does not hold yet, and the cards then come from every release it does."""
    try:
        cat.resolve_version(release)
    except NotFound:
        return False
    return True


def _checked(text: str, source: str | None, release: str | None) -> dict[str, Any] | None:
    """`kverr check`'s report of the launch in `text` when it found an error, else None (no
    source configured, no launch in the text, a project kverr cannot check, a launch that
    passes)."""
    if not source:
        return None
    from kverr.verify.preflight import check_text

    try:
        _report, data = check_text(text, release=release, source=source)
    except QueryError:  # no launch in the issue, or a project kverr cannot check yet
        return None
    except KverrError as exc:  # the source or the sandbox: the cards still answer
        warnings.warn(f"the launch in the issue was not checked: {exc}", KverrWarning, stacklevel=2)
        return None
    return data if data["errors"] else None


def footer(
    cat: Any, matches: list[Match], report: dict[str, Any] | None, release: str | None
) -> str:
    """kverr's version and the release the answer is for."""
    if report is not None:
        what = [f"{report['release']} (its own checks, on {report['platform']})"]
    else:
        what = []
        for name in dict.fromkeys(m.project.get("name") or "sglang" for m in matches):
            project = cat.project(name)
            newest = release or (cat.release_order(project=name) or ["?"])[-1]
            what.append(f"{project['product']} {newest}")
    return "---\n" + md.escape(
        f"Answered by kverr {__version__} for {', '.join(what)}. An answer names its kverr id;"
        " reply with the full log when the error is not the one you see."
    )


_PLAIN_VALUE = re.compile(r"[\w .,:/=+-]{1,120}")
# What GitHub turns into a notification or a link when it stands in prose: @name, and a bare
# URL (its autolinks). In a code span both are text.
_LIVE = re.compile(r"(?<![\w`])(?:@[A-Za-z0-9][\w-]*|(?:https?://|www\.)[^\s`]+)")


def quoted(m: Match) -> Match:
    """`m` as the comment shows it: the values pasted placed in its prose as code spans, where
    nothing they hold is markup, a mention or a link (a value that cannot be a code span there,
    with a backtick, a brace or an @, shows as its placeholder's label: the message line above
    quotes it whole, as code), and the advice from those values first among the fixes."""

    def show(expr: str, bare: str) -> str:
        return f"`{bare}`" if _PLAIN_VALUE.fullmatch(bare) else display.placeholder_label(expr)

    def settle(text: str) -> str:
        placed = template.fill(text, m.record.get("placeholders") or [], m.values, show)
        return no_pings(placed)  # nothing placed holds a brace: the card fills no value in again

    rec = dict(m.record)
    for key in ("documentation", "triggerScenarios"):
        if rec.get(key):
            rec[key] = settle(rec[key])
    rec["solutions"] = [settle(s) for s in [*m.advice, *(rec.get("solutions") or [])] if s]
    answer = m.argparse
    if answer:
        answer = {**answer, "text": [settle(s) for s in answer.get("text") or []]}
    return dataclasses.replace(m, record=rec, argparse=answer, advice=())


def no_pings(text: str) -> str:
    """Prose (backticks mark code, as present/display.code_spans reads it) with each @name and
    bare URL in a code span; a backtick with no pair becomes a quote, so no span shifts."""
    return "".join(
        f"`{part}`" if code else _LIVE.sub(lambda mt: f"`{mt.group()}`", part.replace("`", "'"))
        for part, code in display.code_spans(text)
    )


# ---------------------------------------------------------------- posting


def post(
    body: str,
    event: Event,
    *,
    token: str,
    api_url: str = "https://api.github.com",
    bot_login: str = BOT_LOGIN,
) -> str:
    """Create kverr's comment on the issue, or edit the one it posted before (its first line
    is MARKER and `bot_login` wrote it). "created", "updated" or "unchanged"; a KverrError
    naming the issue when GitHub refuses."""
    try:
        from github import Auth, Github, GithubException
    except ImportError:
        raise QueryError(
            "posting needs PyGithub: pip install 'kverr[github]' (or pass --dry-run)."
        ) from None

    # No retries: a rate-limited run fails now with GitHub's reason rather than sleeping until
    # the limit resets (an hour, past any job's timeout); the next event answers again.
    gh = Github(
        auth=Auth.Token(token), base_url=api_url.rstrip("/"), timeout=20, retry=None,
        per_page=100, lazy=True,
    )  # fmt: skip
    where = f"{event.repo}#{event.number}"
    try:
        issue = gh.get_repo(event.repo).get_issue(event.number)
        mine = next(
            (
                c
                for c in itertools.islice(issue.get_comments(), MAX_COMMENTS)
                if (c.body or "").startswith(MARKER) and c.user.login == bot_login
            ),
            None,
        )
        if mine is None:
            issue.create_comment(body)
            return "created"
        if mine.body == body:
            return "unchanged"
        mine.edit(body)
        return "updated"
    except GithubException as exc:
        said = exc.data.get("message") if isinstance(exc.data, dict) else ""
        raise KverrError(
            f"GitHub answered {exc.status} ({said or 'no reason given'}) for the comment on"
            f" {where}; nothing was posted. The workflow needs `permissions: issues: write`."
        ) from None
    finally:
        gh.close()


@dataclass(frozen=True)
class Outcome:
    """What `kverr respond` did: the comment (None: no answer) and one line saying so."""

    comment: str | None
    summary: str


def respond(
    event_path: str | Path,
    *,
    catalog: Path | None = None,
    source: str | None = None,
    release: str | None = None,
    dry_run: bool = False,
    token: str | None = None,
    api_url: str = "https://api.github.com",
    bot_login: str = BOT_LOGIN,
) -> Outcome:
    """`kverr respond`'s one library call: read the event, compose the answer, post it (not
    with `dry_run`)."""
    from kverr.catalog import open_catalog

    event = read_event(event_path)
    where = f"{event.repo}#{event.number}"
    why = skip_reason(event)
    if why:
        return Outcome(None, f"no answer for {where}: {why}.")
    if not dry_run and not token:
        raise QueryError("no GitHub token: set GITHUB_TOKEN (the workflow's), or pass --dry-run.")
    with open_catalog(catalog) as cat:
        body = compose(cat, event.text, source=source, release=release)
    if body is None:
        return Outcome(None, f"no known error in {where}; nothing posted.")
    if dry_run:
        return Outcome(body, f"the answer for {where} (dry run: not posted).")
    done = post(body, event, token=token or "", api_url=api_url, bot_login=bot_login)
    return Outcome(body, f"{done} kverr's comment on {where}.")
