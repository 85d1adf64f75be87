"""How results look to people: the text views of the commands. No library logic here (a
command's --json is the library's data, written by kverr/cli.py).

A view builds its lines and styles them through a kverr.term.Term (colour, links and wrapping
on a terminal; plain, unwrapped text in a pipe); the explain card itself is present/text.py.
Every view returns text with no control character of its data left (kverr.term.escape_terminal
on the data before styling, or on the whole text of an unstyled view).
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from kverr.answers import CutLines, Match, Revision
from kverr.present import display, text
from kverr.present.answer import message_key
from kverr.term import PLAIN, Term, escape_data, escape_terminal

FULL_VIEWS = 5  # a scan can find hundreds: the rest get one line each


def cut_note(cut: CutLines) -> str:
    """One sentence saying which input lines were cut, and that the rest of them was not read."""
    shown = ", ".join(map(str, cut.lines[:5])) + (", ..." if cut.count > 5 else "")
    which = f"line {shown} is" if cut.count == 1 else f"{cut.count} lines ({shown}) are"
    half = cut.max_chars // 2
    return f"{which} longer than {cut.max_chars:,} characters; only the first and last {half:,} of each were read."


def explain_text(
    matches: Sequence[Match],
    *,
    version: str | None = None,
    elsewhere: Sequence[Match] = (),
    owners: Sequence[str] = (),
    term: Term = PLAIN,
    orders: display.Orders | None = None,
    products: Sequence[str] = (),
    verbose: bool = False,
    names: Mapping[str, str] | None = None,
) -> str:
    """Each match as a card (present/text.py), a line each past FULL_VIEWS, one card per message.
    `elsewhere`: with --release and no match there, the records other revisions have;
    `owners`: the products that have a release of that name.
    `orders`: each project's releases, oldest first (releases print as ranges).
    `products`: the catalog's projects, named when nothing matched.
    `verbose`, `names`: how a card says whether a fix was verified (text.card)."""
    if not matches:
        if elsewhere:
            theirs = {(m.project or {}).get("product") for m in elsewhere} - {None}
            if owners and theirs and not theirs & set(owners):
                out = [
                    f"{version} is a version of {' and '.join(owners)}, and this is"
                    f" {' or '.join(sorted(theirs))}'s error: pass one of its versions to"
                    " --release. Its revisions:"
                ]
            else:
                out = [
                    f"No error that {version} can raise matches this text. Other revisions have it:"
                ]
            for m in elsewhere[:3]:
                where = (
                    display.release_span(m.revisions, display.order_of(orders, m))
                    or "revisions without a release tag"
                )
                out.append(f"  {m.record['id']}  {m.record['errorMessage'][:90]}  (in: {where})")
            out.append("Run without --release for the full explanation.")
            return escape_terminal("\n".join(out))
        names = " or ".join(products) if products else "launch-argument"
        return escape_terminal(f"No known {names} error matches this text.")
    shown: set[str] = set()
    out: list[str] = []
    full = 0
    for m in matches:
        msg = message_key(m)
        if msg and msg in shown:  # one message raised at several sites: one card is enough
            out.append(text.also_at(m, term, orders))
        elif full < FULL_VIEWS:
            out += ([""] if out else []) + text.card(m, term, orders, verbose=verbose, names=names)
            full += 1
        else:
            out.append(text.one_line(m, term))
        shown.add(msg)
    return "\n".join(out)


def show_text(m: Match, *, term: Term = PLAIN, orders: display.Orders | None = None) -> str:
    """`kverr show`: one record's card."""
    return "\n".join(text.card(m, term, orders))


def search_text(
    matches: Sequence[Match],
    total: int,
    *,
    offset: int = 0,
    term: Term = PLAIN,
    what: str = "",
    projects: bool = False,
) -> str:
    """`kverr search`: a line per record, then how many there are and how to see more.
    `projects`: the catalog holds several, so each line starts with its record's."""
    what = escape_terminal(what)
    if not matches:
        return (
            f"No record matches {what}."
            if total == 0
            else f"No records past {offset} ({total} in all)."
        )
    out = [text.list_line(m, term) for m in matches]
    if projects:
        names = [escape_terminal((m.project or {}).get("name") or "") for m in matches]
        width = max(map(len, names))
        out = [
            f"{term.style(n.ljust(width), 'dim')}  {line}"
            for n, line in zip(names, out, strict=True)
        ]
    last = offset + len(matches)
    tail = f"{offset + 1}-{last} of {total}" if offset or last < total else f"{total}"
    more = f"; --offset {last} for more" if last < total else ""
    out.append(term.style(f"{tail} record(s) {what}{more}; `kverr show ID` prints one.", "dim"))
    return "\n".join(out)


def load_summary(catalog: Any, report: Any) -> str:
    """One line for `kverr load`."""
    skipped = report.records - report.usable
    return escape_terminal(
        f"loaded {report.records} records into {catalog} ({skipped} found by traceback or id only)"
    )


# ---------------------------------------------------------------- build / diff / history
# (history engineer: summaries for `kverr build`, `kverr diff`, `kverr history`)


SHOW_AFTER = 1.0  # seconds of work before its bars appear: a quicker step shows nothing
_LABELS = {"extract": "extracting blobs", "records": "revisions"}
_live: list[Any] = []  # the bars on screen: work reported inside other work adds to them


@contextlib.contextmanager
def progress_bars(title: str = "", *, delay: float = SHOW_AFTER, console: Any = None) -> Any:
    """A context manager yielding a `report(phase, done, total)` that draws one Rich bar per
    phase on stderr (`console`), `title` printed above them, once the work has run `delay`
    seconds. Work reported while bars are up (a build loading its catalog) adds its phases to
    them: Rich draws one live display at a time."""
    if _live:
        yield _live[-1]
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    console = console or Console(stderr=True)
    bar = Progress(
        TextColumn("{task.description:>16}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
        redirect_stdout=False,  # what a command prints stays on stdout, even while bars are up
    )
    tasks: dict[str, Any] = {}
    start = time.monotonic()

    def report(phase: str, done: int, total: int) -> None:
        if phase not in tasks:
            tasks[phase] = bar.add_task(_LABELS.get(phase, phase), total=total or 1)
        bar.update(tasks[phase], completed=done if total else 1, total=total or 1)
        if not bar.live.is_started and time.monotonic() - start >= delay:
            if title:
                console.print(escape_terminal(title), markup=False, highlight=False)
            bar.start()

    _live.append(report)
    try:
        yield report
    finally:
        _live.pop()
        if bar.live.is_started:
            bar.stop()


def build_summary(result: Any) -> str:
    """What `kverr build` did: where it wrote, counts, cache use, parse failures, overlay warnings
    and pattern collisions."""
    c, s = result.counts, result.stats
    revs = result.revisions
    span = f"{len(revs)} revision(s)" if any(r.sha for r in revs) else "directory"
    sevs = ", ".join(f"{n} {sev}" for sev, n in sorted(c.get("severity", {}).items())) or "none"
    lines = [
        f"built {result.out} from {span} in {result.seconds:.1f}s"
        + (f"; catalog {result.catalog}" if result.catalog else ""),
        f"  {c['records']} records ({sevs}), {c['sites']} sites, "
        f"{c['flags']} flags, {c.get('occurrences', 0)} occurrences, {c.get('lineage', 0)} lineage links",
        *(
            [
                f"  {c['argparse']} of the records are argparse's own errors, from {c.get('flagHistory', 0)} flag declaration spans"
            ]
            if c.get("argparse")
            else []
        ),
        f"  blobs: {s.get('blobs', 0)} ({s.get('blobs_parsed', 0)} parsed, {s.get('blob_cache_hits', 0)} cached); "
        f"functions: {s.get('units_parsed', 0)} parsed, {s.get('unit_cache_hits', 0)} cached",
    ]
    v = getattr(result, "verify", None)
    if v is not None:
        lines.append(verify_summary(v))
    if result.failures:
        lines.append(f"{len(result.failures)} file(s) could not be parsed:")
        lines += [f"  {f.path}:{f.line}:{f.col}: {f.message}" for f in result.failures]
    if result.warnings:
        lines.append(f"{len(result.warnings)} overlay warning(s):")
        lines += [f"  {w}" for w in result.warnings]
    if getattr(result, "cache", None):
        lines.append(f"  extraction cache: {result.cache} (reused by the next build)")
    if result.collisions:
        lines += collision_lines(result.collisions)
    return escape_terminal("\n".join(lines))


def collision_lines(collisions: Sequence[Any], show: int = 20) -> list[str]:
    """Pattern collisions once per pair of records: `a <-> b` when each pattern matches the
    other's message (usually the same text raised in two places), `a -> b` when only a's
    pattern matches b's. Each line is clipped to fit 100 columns."""
    pairs: dict[tuple[str, str], dict] = {}
    for a, b, msg in collisions:  # (pipeline/assemble.py: record ids and b's message)
        pair = pairs.setdefault(tuple(sorted((a, b))), {"ways": set(), "msg": msg})
        pair["ways"].add((a, b))
        pair["msg"] = pair["msg"] or msg
    out = [
        f"{len(collisions)} pattern collision(s) in the newest revision, {len(pairs)} pair(s)"
        " (A -> B: A's pattern matches B's message):"
    ]
    for (x, y), p in sorted(pairs.items())[:show]:
        if len(p["ways"]) == 2:
            head = f"  {x} <-> {y}  "
        else:
            ((a, b),) = p["ways"]
            head = f"  {a}  -> {b}  "
        out.append(head + _h_clip(p["msg"], 100 - len(head)))
    if len(pairs) > show:
        out.append(f"  ... and {len(pairs) - show} more")
    return out


def verify_summary(v: Any) -> str:
    """`kverr build --verify`: the verified rate that matters (raise/assert records of the
    newest commit), every status, and what it cost in runs of the check."""
    rate = f"{100 * v.verified_newest / v.errors_newest:.0f}%" if v.errors_newest else "n/a"
    counts = ", ".join(f"{n} {k}" for k, n in sorted(v.counts.items()))
    if v.not_run:  # nothing ran: no rate and no platform to report
        return f"  verified fixes: none, {v.not_run}; all records: {counts}"
    main = ""
    if v.main_errors_newest and v.main_errors_newest != v.errors_newest:
        share = 100 * v.main_verified_newest / v.main_errors_newest
        name = v.main_file.rsplit("/", 1)[-1]
        main = f"; {name}: {v.main_verified_newest} of {v.main_errors_newest}, {share:.0f}%"
    na = f"; {v.na_newest} not applicable" if v.na_newest else ""
    if v.before_start and v.before_start != v.errors_newest:
        # the checks a launch runs before it starts; the rest run on the GPU, after it
        reached = v.before_start - v.before_start_na
        na += (
            f"; checked before start-up: {v.before_start_verified} of {v.before_start}, "
            f"{100 * v.before_start_verified / v.before_start:.0f}%"
            + (f" ({100 * v.before_start_verified / reached:.0f}% leaving out the"
               f" {v.before_start_na} not applicable)" if reached and v.before_start_na else "")
        )  # fmt: skip
    argparse = (
        f"; argparse records: {v.argparse_verified} of {v.argparse_records} verified by their"
        " revision's parser"
        if v.argparse_records
        else ""
    )
    return (
        f"  verified fixes: {v.verified_newest} of {v.errors_newest} raise/assert records at "
        f"{v.newest or 'the newest revision'} ({rate}{main}{na}) on {v.platform}{argparse}; all "
        f"records: {counts}; runs of the check: {v.runs} ({v.cached} cached)"
    )


def _h_rev(rev: Revision) -> str:
    short = _h_sha(rev.sha, bool(rev.tags))
    return f"{rev.tags[0]} ({short})" if rev.tags else short


def _h_sha(sha: str | None, named: bool) -> str:
    """Short sha; a revision without one is a directory build or a snapshot (files from disk,
    `named` by a label)."""
    if sha:
        return sha[:10]
    return "snapshot, no commit" if named else "directory"


def _where(rec: dict) -> str:
    """`file:line`; an argparse record keeps no line per revision: its file alone."""
    line = rec.get("line")
    return f"{rec.get('file')}" + (f":{line}" if line is not None else "")


def _h_line(rec: dict) -> str:
    where = _where(rec)
    cls = rec.get("errorClass") or rec.get("kind") or ""
    return f"{rec['id']}  {cls:<16} {_h_clip(rec.get('message') or '(no message)')}  [{where}]"


def _h_place(rec: dict, width: int | None = None) -> str:
    """`file:line  id  class  message`: diff lists are in file and line order, so the place leads.
    On a terminal (`width`) the message is clipped so the line fits the window."""
    cls = rec.get("errorClass") or rec.get("kind") or ""
    head = f"{_where(rec)}  {rec['id']}  {cls:<15} "
    room = max(30, width - len(head) - 4) if width else 90
    return head + _h_clip(rec.get("message") or "(no message)", room)


def _h_clip(text: str, n: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def diff_text(d: Any, term: Term = PLAIN) -> str:
    """Human form of catalog.history.Diff, every list in file and line order."""
    d = escape_data(d)
    out = [
        term.style(
            f"{_h_rev(d.rev_a)} -> {_h_rev(d.rev_b)}: {len(d.added)} added, {len(d.removed)} removed, "
            f"{len(d.changed)} changed, {len(d.moved)} moved",
            "bold",
        )
    ]
    for title, items, mark, colour in (
        ("added", d.added, "+", "green"),
        ("removed", d.removed, "-", "red"),
    ):
        if items:
            out.append(f"\n{title}:")
            out += [term.style(f"  {mark} {_h_place(r, term.width)}", colour) for r in items]
    if d.changed:
        out.append("\nchanged:")
        for ch in d.changed:
            old, new, what = ch["old"], ch["new"], ", ".join(ch["what"])
            out.append(f"  ~ {_h_place(new, term.width)}")
            was = f"; was {old['id']}" if old["id"] != new["id"] else ""
            out.append(f"      changed: {what}{was}")
            if old["message"] != new["message"]:
                for label, msg, colour in (("was", old, "red"), ("now", new, "green")):
                    # whole (the edit may be anywhere), wrapped under itself on a terminal
                    text = f"      {label}: {' '.join(msg['message'].split())}"
                    out += [term.style(line, colour) for line in term.wrap(text, indent=11)]
            if old["errorClass"] != new["errorClass"]:
                out.append(f"      class: {old['errorClass']} -> {new['errorClass']}")
            if "guard" in ch:
                out += _guard_lines(ch["guard"], term)
    if d.moved:
        out.append("\nmoved:")
        for mv in d.moved:
            src, dst = mv["from"], mv["to"]
            out.append(f"  > {mv['record']['id']}  {_h_clip(mv['record']['message'], 70)}")
            out.append(
                f"      {src['file']}:{src['line']} ({src['function']}) -> {dst['file']}:{dst['line']} ({dst['function']})"
            )
    return "\n".join(out)


def _guard_lines(guard: dict, term: Term) -> list[str]:
    """The guard before and after: its tests when the dataset kept them, else their hashes."""
    old, new = guard["old"], guard["new"]
    if old.get("text") is None and new.get("text") is None and (old["hash"] or new["hash"]):
        return [f"      guard: {old['hash'] or '(none)'} -> {new['hash'] or '(none)'}"
                " (rebuild the dataset to see the tests)"]  # fmt: skip
    was, now = _tests(old), _tests(new)
    kept = [t for t in now if t in was]
    out = [f"      guard: {len(kept)} test(s) kept" if kept else "      guard:"]
    out += [term.style(f"        - {t}", "red") for t in was if t not in now]
    out += [term.style(f"        + {t}", "green") for t in now if t not in was]
    return out


_TEST_SEP = re.compile(r"(?<=\)); (?=(?:not )?\()")


def _tests(g: dict) -> list[str]:
    """A guard's tests (records.identity.guard_key joins them with "; ")."""
    if not g["hash"]:
        return []
    return _TEST_SEP.split(g.get("text") or "") if g.get("text") else [f"({g['hash']})"]


def revisions_text(revisions: list[Revision]) -> str:
    """One line per revision a catalog holds, oldest first: what `--release` accepts."""
    out = []
    several = len({r.project for r in revisions}) > 1
    for r in revisions:
        sha = (r.sha or "")[:10] or "(no commit)"
        project = f"{r.project or '':<8} " if several else ""
        out.append(f"{project}{sha:<12} {r.date or '':<25} {', '.join(r.tags)}".rstrip())
    out.append(f"{len(revisions)} revision(s); pass a tag, a snapshot label or a sha to --release.")
    return escape_terminal("\n".join(out))


def history_text(h: Any, orders: display.Orders | None = None) -> str:
    """Human form of catalog.history.History (`orders`: each project's releases, for ranges)."""
    rec = h.record
    order = (orders or {}).get(h.revisions[0].project if h.revisions else "", ())
    # "first seen" / "first missing", not "introduced": only the revisions built are known, and
    # between two release tags the change may sit on any commit (build --touching to pin it).
    out = [_h_line(rec), f"present in {len(h.revisions)} of {h.total_revisions} revision(s) built"]
    if h.introduced:
        i = h.introduced
        out.append(
            f"first seen: {_h_sha(i['sha'], bool(i['release']))} {i['date']} {_h_clip(i['subject'] or '', 60)}"
            + (f"; first release {i['release']}" if i["release"] else "; in no release yet")
        )
    if h.disappeared:
        g = h.disappeared
        out.append(
            f"first missing: {_h_sha(g['sha'], bool(g['release']))} {g['date']} {_h_clip(g['subject'] or '', 60)}"
            + (f"; gone from release {g['release']} on" if g["release"] else "")
        )
    elif h.revisions:
        out.append("still present in the newest revision built")
    if h.successor:
        out.append(f"replaced by {h.successor} (message edited)")
    if h.previous:
        out.append("replaces " + " <- ".join(h.previous))
    releases = h.releases
    if releases:
        gaps = display.release_gaps(releases, order)
        out.append("releases: " + display.release_span(releases, order))
        if gaps:
            out.append("not in: " + ", ".join(gaps))
    return escape_terminal("\n".join(out))
