"""verify: every record's fix run through its revision's own check (`kverr build --verify`).

    records, report = verify_step(plan, cache, scan, records, pinned=..., repo=REPO)

Records are verified at the revision their newest form was built at, one revision at a time:
`verify_revision` gives a verdict (verify/verdict.py) per record of one revision. `Session`
holds what one build shares: the spec, the platform, the repository, the run cache and one
Harness per platform (started only when a run misses the cache). A record shows a command only
when its check passed it; every other record keeps its advice (solutions), marked not verified.

Two caches keep a rebuild cheap: `verdict` (a record's whole verdict, keyed by the file set,
the record, the harness code, spec and platform) and `verifyrun` (one run of the check, keyed
the same way plus the launch), so editing the search reruns only what changed. Without
--verify every record says so in its `verification` field (records/__init__.py). The build
hands in its plan, cache and scan (pipeline/): this module reads them, never imports them.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from kverr.extractor.pysource import parse_module
from kverr.extractor.sources import git
from kverr.records import LAUNCH_PATH, flag_map
from kverr.records.identity import Holder, assign_ids
from kverr.records.knowledge import facts_for
from kverr.records.knowledge.facts import Facts
from kverr.records.pattern import pattern_for
from kverr.verify.harness import HARNESS_VERSION, Harness, Outcome, Target
from kverr.verify.memo import Memo
from kverr.verify.parsing import judge_argparse
from kverr.verify.sandbox import steps
from kverr.verify.search import reading, values
from kverr.verify.search.configfile import ConfigSearch
from kverr.verify.search.core import Search, class_dest, fields_of
from kverr.verify.spec import VerifySpec, spec_for
from kverr.verify.verdict import Expect, Verdict

from kverr.errors import SourceError
from kverr.ftypes import FileExtraction, FlagDecl, Launch, Revision, Site

Progress = Callable[[str, int, int], None]


@dataclass
class Session:
    """What a build's verify step shares across revisions."""

    spec: VerifySpec
    repo: str
    workdir: Path
    platform: str | None = None
    cache: MutableMapping[str, str] | None = None  # run key -> Outcome JSON
    timeout: float = 5.0
    workers: int = 1  # sandbox children per platform, each verifying a share of the records
    trust_repo: bool = False  # children unconfined (verify/confine.py): the user vouches
    disk: tuple[str, str] | None = None  # the package read from a folder (verify/release.py)
    # the project's profile (kverr.profile.Profile): the records' ids and facts are read with
    # it; None: the shipped profile of the spec's project
    profile: Any = None
    stats: dict[str, float] = field(
        default_factory=lambda: {"runs": 0, "cached": 0, "seconds": 0.0}
    )
    _harnesses: dict[tuple[str, int], Harness] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    # The worker threads live as long as the session: a child dies with the thread that
    # started it (bubblewrap's --die-with-parent), and it serves the whole build.
    _pool: ThreadPoolExecutor | None = None

    def __post_init__(self) -> None:
        if self.profile is None:
            from kverr.profile import builtin_names, load_profile

            if self.spec.project in builtin_names():
                self.profile = load_profile(self.spec.project)

    def count(self, key: str, n: float = 1) -> None:
        with self._lock:
            self.stats[key] = self.stats.get(key, 0) + n

    @property
    def platform_name(self) -> str:
        return self.spec.platform(self.platform).name

    def platforms(self) -> list[str]:
        """The build's platform first, then the other profiles (a check about another
        platform is verified on the first profile that reaches it)."""
        first = self.platform_name
        return [first] + [p for p in self.spec.platforms if p != first and p != "base"]

    def harness(
        self,
        revision: Revision,
        overrides: Mapping[str, str],
        platform: str | None = None,
        worker: int = 0,
    ) -> Harness:
        """The sandbox of `platform` for `worker`, pointed at `revision`: one child per
        platform and worker for the whole build, loading revision after revision."""
        platform = platform or self.platform_name
        with self._lock:
            if (platform, worker) not in self._harnesses:
                self._harnesses[(platform, worker)] = Harness(
                    self.spec,
                    repo=self.repo,
                    sha=revision.sha or "",
                    workdir=self.workdir,
                    platform=platform,
                    overrides=dict(overrides),
                    timeout=self.timeout,
                    trust_repo=self.trust_repo,
                    disk=self.disk,
                )
            h = self._harnesses[(platform, worker)]
        h.retarget(revision.sha or "", overrides)
        return h

    def adopt(self, harness: Harness, worker: int = 0) -> None:
        """Serve `harness`'s platform with it: a sandbox started before the session was made
        (`kverr check` starts it before importing the search)."""
        with self._lock:
            self._harnesses[(harness.platform_name, worker)] = harness

    def pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="kverr-verify")
            return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        for h in self._harnesses.values():
            self.stats["seconds"] += h.seconds
            for part in ("load", "run"):
                self.count(f"child_{part}_s", h.child_ms[part] / 1000)
            h.close()
        self._harnesses.clear()


def _fingerprint(spec: VerifySpec, platform: str) -> str:
    """Everything besides the files that decides what a run does: the harness code, the
    spec and the platform profile."""
    h = hashlib.sha256(HARNESS_VERSION.encode())
    for path in sorted(Path(__file__).resolve().parent.rglob("*.py")):
        h.update(path.read_bytes())
    h.update(repr(spec).encode())
    h.update(platform.encode())
    return h.hexdigest()[:16]


def runner_for(
    session: Session,
    revision: Revision,
    files_key: str,
    overrides: Mapping[str, str],
    fields: Mapping[str, Any] | None = None,
    platform: str | None = None,
    worker: int = 0,
) -> Callable[[Launch, Target, Sequence[Mapping[str, Any]]], Outcome]:
    """Runs through the cache: a key is the file set, the harness and platform, the launch,
    the target and what to watch."""
    platform = platform or session.platform_name
    # What the solver is told about the options (their known values, sample values) decides
    # the answers a run's watch gives, and it is read off the records' side too.
    told = hashlib.sha256(json.dumps(fields or {}, sort_keys=True, default=repr).encode())
    prefix = f"{files_key}:{_fingerprint(session.spec, platform)}:{told.hexdigest()[:12]}"

    def run(launch: Launch, target: Target, watch: Sequence[Mapping[str, Any]] = ()) -> Outcome:
        payload = json.dumps(
            [prefix, launch.args, launch.env, launch.model, launch.files, launch.texts,
             target.file, target.function, target.line, [dict(w) for w in watch],
             *([target.until] if target.until else [])],
            sort_keys=True, default=repr,
        )  # fmt: skip
        key = hashlib.sha256(payload.encode()).hexdigest()
        hit = session.cache.get(key) if session.cache is not None else None
        if hit is not None:
            session.count("cached")
            return Outcome.from_json(json.loads(hit))
        harness = session.harness(revision, overrides, platform, worker)
        out = harness.run(
            launch.argv(),
            dict(launch.env),
            target,
            watch,
            model={k: list(v) if isinstance(v, tuple) else v for k, v in launch.model},
            files={**dict.fromkeys(launch.files, ""), **dict(launch.texts)},
            fields=fields,
        )
        session.count("runs")
        if session.cache is not None and out.status not in ("timeout", "error"):
            session.cache[key] = json.dumps(out.to_json())
        return out

    return run


def options_of(
    session: Session, revision: Revision, files_key: str, overrides: Mapping[str, str]
) -> dict[str, Any]:
    """The revision's parser options as the child reported them (cached like a run)."""
    key = f"options:{files_key}:{_fingerprint(session.spec, session.platform_name)}"
    hit = session.cache.get(key) if session.cache is not None else None
    if hit is not None:
        return json.loads(hit)
    harness = session.harness(revision, overrides)
    harness.start()
    info = {"ready": bool(harness.info.get("ready")), "reason": harness.info.get("reason", "")}
    info["options"] = harness.info.get("options", {})
    info["loaded"] = harness.info.get("loaded", {})
    info["argv"] = harness.info.get("argv")
    if session.cache is not None:
        session.cache[key] = json.dumps(info)
    return info


def parser_decls(decls: Mapping[str, FlagDecl], options: Mapping[str, Any]) -> dict[str, FlagDecl]:
    """The flag declarations with what the revision's own parser says: choices resolved
    (`choices=list(X.keys())`), defaults as values, whether a flag is a switch. An option the
    extractor did not see (an alias) is added under its own name."""
    out = dict(decls)
    for name, opt in options.items():
        d = out.get(name)
        choices = tuple(str(c) for c in opt.get("choices", ()) if c is not None) or None
        action = "store_true" if opt.get("switch") else (d.action if d else None)
        if action == "store_true" and d is not None and d.action and d.action.startswith("store_"):
            action = d.action
        default = repr(opt["default"]) if "default" in opt else (d.default if d else None)
        if d is None:
            # An alias the extractor did not list: it sets the same attribute as the option
            # it aliases (`--tensor-parallel-size` and `--tp-size` both set tp_size).
            known = next((out[n] for n in opt.get("names", ()) if n in decls), None)
            dest = known.dest if known else opt.get("dest", name.lstrip("-").replace("-", "_"))
            d = known or FlagDecl(name=name, dest=dest)
            d = replace(d, name=name)
        kind = "json" if opt.get("json") else (d.type or _kind(opt.get("default")))
        if opt.get("list") and not (kind or "").startswith("list["):
            kind = f"list[{kind or 'str'}]"  # takes several words: `--x tse 1 2 3`
        out[name] = replace(
            d,
            choices=choices if choices else d.choices,
            action=action,
            default=default,
            type=kind,
        )
    for name, opt in options.items():
        # A JSON option's fields as its class declares them (verify/sandbox/kinds.py): the dotted
        # options take `true`, a number, a JSON list, one of the declared values.
        # A field the extractor did not list (one of a nested config: `pass_config.enable_sp`)
        # is added: the parser takes it as `--x.pass_config.enable_sp true` all the same.
        for field_name, kind in (opt.get("fields") or {}).items():
            if not name.startswith("--"):
                continue
            sub = out.get(f"{name}.{field_name}") or FlagDecl(
                name=f"{name}.{field_name}", dest=f"{opt['dest']}.{field_name}"
            )
            words = tuple(_word(c) for c in kind.get("choices", ()))
            out[sub.name] = replace(sub, type=kind.get("type") or sub.type,
                                    choices=words or sub.choices)  # fmt: skip
    return out


def _word(value: Any) -> str:
    """A declared value as the command line writes it (`true`, `3`, `LAST`)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _kind(default: Any) -> str | None:
    return {int: "int", float: "float"}.get(type(default))


def files_key(revision: Revision, files: Sequence[tuple[str, str]]) -> str:
    """The verify cache's file-set key: the commit (which fixes every module the sandbox may
    read lazily) and the blobs of the revision's file set (a snapshot has no commit)."""
    return hashlib.sha256(json.dumps([revision.sha, list(files)]).encode()).hexdigest()[:24]


@dataclass
class Bench:
    """One revision as the search sees it, built once: the parser's options as the revision
    reports them, the flag declarations, each site's facts and id, the sources, and a Search
    per worker whose runs go through the session's cache."""

    session: Session
    revision: Revision
    key: str  # the file set's cache key (files_key)
    overrides: dict[str, str]
    info: dict[str, Any]  # options_of: ready, reason, options, loaded, argv
    sites: list[Site]
    ids: list[str]  # assign_ids(sites), in the same order
    decls: dict[str, FlagDecl]
    facts: dict[int, Facts]  # id(site) -> its facts, on first use
    texts: dict[str, str]  # path -> source text of the revision's file set
    fields: dict[str, Any]

    def __post_init__(self) -> None:
        self._spans = [(s.file, s.line, max(s.end_line, s.line), s, rid)
                       for s, rid in zip(self.sites, self.ids, strict=True)
                       if s.kind in ("raise", "assert", "exit")]  # fmt: skip
        self._plan: tuple[Any, dict[str, Any]] | None = None

    def site_at(self, file: str, line: int) -> tuple[Site | None, str]:
        """The raise/assert site whose statement holds (file, line), and its id."""
        found = ((s, rid) for f, a, b, s, rid in self._spans if f == file and a <= line <= b)
        return next(found, (None, ""))

    def by_line(self, file: str, line: int) -> Facts | None:
        """The facts of site_at(file, line)."""
        site, _ = self.site_at(file, line)
        return self.facts[id(site)] if site is not None else None

    def ways_in(self, file: str, function: str | None) -> list[tuple[str, int, str, bool]]:
        """The tests of the validation steps that decide whether a step reaching the function
        builds anything (steps.ways_in), from the revision's own plan of its steps."""
        if not function:
            return []
        if self._plan is None:
            spec = self.session.spec
            loaded = [p for p in self.info.get("loaded", {}).values() if p in self.texts]
            trees = {p: parse_module(self.texts[p]) for p in loaded}
            plan = steps.plan_steps(
                {p: self.texts[p] for p in loaded}, spec.main_path, spec.args_class,
                spec.phases, trees, follow=spec.follow, validators=spec.validators,
                add_args=spec.add_args,
            ) if spec.main_path in trees else None  # fmt: skip
            self._plan = (plan, trees)
        plan, trees = self._plan
        return steps.ways_in(plan, trees, (file, function)) if plan is not None else []

    def runner(self, platform: str | None = None, worker: int = 0) -> Callable[..., Outcome]:
        return runner_for(
            self.session, self.revision, self.key, self.overrides, self.fields,
            platform=platform, worker=worker,
        )  # fmt: skip

    def searcher(self, worker: int = 0) -> Search:
        session = self.session
        return Search(
            {name: self.runner(name, worker) for name in session.platforms()},
            self.decls,
            self.by_line,
            lambda file: self.texts.get(file, ""),
            session.spec.args_class,
            {
                name: {
                    **m.objects.get("hf_config", {}),
                    **{f"config.{k}": v for k, v in m.objects.get("config", {}).items()},
                }
                for name, m in session.spec.models.items()
                if name != session.spec.default_model
            },
            session.spec.differences(session.platform),
            self.ways_in,
            session.spec.main_path,
            self.json_classes,
            self.command(),
            self.predicates,
        )

    @functools.cached_property
    def json_classes(self) -> dict[str, str]:
        """A config class the parser builds -> the option's dest (`MambaConfig` ->
        mamba_config)."""
        return {
            o["class"]: o["dest"] for o in self.info.get("options", {}).values() if "class" in o
        }

    @functools.cached_property
    def predicates(self) -> dict[str, dict[str, str]]:
        """A JSON option -> the methods of the class it builds that only return a test of its
        fields (reading.predicates), from every module the harness loaded; read once per
        revision, whatever the number of searches."""
        out: dict[str, dict[str, str]] = {}
        for path in self.info.get("loaded", {}).values():
            for cls, methods in reading.predicates(self.texts.get(path, "")).items():
                option = "--" + class_dest(cls, self.json_classes).replace("_", "-")
                if option in self.decls:
                    out.setdefault(option, {}).update(methods)
        return out

    def command(self) -> tuple[str, tuple[str, ...]]:
        """The launch command an example fix is written with at this revision, and its base
        arguments: the spec's, unless the project launched otherwise then."""
        then = launched(self.session.profile, self.session.repo, self.revision)
        if then is not None and then is not self.session.profile:
            return then.launch_command(), ()
        return self.session.spec.launch, self.session.spec.base_args


def bench_for(
    exts: Sequence[FileExtraction],
    session: Session,
    revision: Revision,
    *,
    key: str,
    overrides: Mapping[str, str] | None = None,
    previous: Mapping[str, Holder] | None = None,
    fields: dict[str, Any] | None = None,
) -> Bench:
    """The revision's Bench; `bench.info["ready"]` is False (with a reason) when its code does
    not load in the sandbox. `fields`: the solver's table as an earlier bench of the same
    files built it (read from a cache), else built here."""
    overrides = dict(overrides or {})
    info = options_of(session, revision, key, overrides)
    sites = [s for ex in exts for s in ex.sites]
    decls = parser_decls(flag_map(ex.flags for ex in exts), info["options"])
    texts = {ex.source.path: ex.source.text for ex in exts}
    main = texts.get(session.spec.main_path, "")
    args_class = session.spec.args_class
    if fields is None:
        fields = fields_of(
            decls,
            reading.assigned_values(main, args_class),
            values.compared_values(main, args_class),
        )
    return Bench(
        session, revision, key, overrides, info, sites,
        assign_ids(sites, previous, session.profile), decls,
        _Facts(sites, decls, session.profile), texts, fields,
    )  # fmt: skip


def verify_revision(
    exts: Sequence[FileExtraction],
    records: Iterable[dict],
    session: Session,
    revision: Revision,
    *,
    files: Sequence[tuple[str, str]] = (),
    overrides: Mapping[str, str] | None = None,
    previous: Mapping[str, Holder] | None = None,
    label: Revision | None = None,
) -> dict[str, Verdict]:
    """A verdict per record (by id), all from the revision the records were built at.

    `revision` is the commit the sandbox reads; `overrides` files from disk placed over it and
    `label` the revision to name when that is a snapshot (no commit of its own)."""
    overrides = dict(overrides or {})
    key = files_key(label or revision, files)
    wanted = {r["id"]: r for r in records}
    name = _name(label or revision)
    base = {"platform": session.platform_name, "revision": name}

    def kept(reason: str) -> dict[str, Verdict]:  # nothing ran: each record keeps its fix
        return {rid: Verdict("unverified", reason, keep_fix=True, **base) for rid in wanted}

    if not wanted:
        return {}
    if not revision.sha:
        # A snapshot's files are in no commit: the modules they import cannot be read lazily
        # from it, so nothing there is run.
        return kept(
            "this revision is a snapshot of files from disk, not a commit the harness can read"
        )
    bench = bench_for(exts, session, revision, key=key, overrides=overrides, previous=previous)
    info = bench.info
    if not info["ready"]:
        return kept(f"the revision's code does not load in the sandbox: {info['reason']}")
    sites, ids, decls, facts = bench.sites, bench.ids, bench.decls, bench.facts
    loaded = set(info["loaded"].values())

    argv_files = _argv_files(session.spec, info)
    out: dict[str, Verdict] = {}
    todo: list[tuple[str, Site]] = []
    for site, rid in zip(sites, ids, strict=True):
        if rid not in wanted or rid in out or rid in {r for r, _ in todo}:
            continue
        if site.file in argv_files:
            why = _not_at_argv_time(session.spec, info.get("argv") or {}, site)
            if why:
                out[rid] = Verdict("unverified", why, **base)
                continue
        elif wanted[rid].get("scope") == "launch-path":
            out[rid] = _launch_path(bench, wanted[rid], base)
            continue
        elif site.file not in loaded:
            reason = f"{site.file} is not among the modules whose validation the harness runs"
            out[rid] = Verdict("not-applicable", reason, keep_fix=True, **base)
            continue
        todo.append((rid, site))

    def verify_share(worker: int) -> dict[str, Verdict]:
        # Each worker has its own children; the records are dealt round-robin, and each
        # record's verdict depends on that record alone, so the result is the same for any
        # number of workers.
        search, mine = bench.searcher(worker), {}
        for rid, site in todo[worker :: session.workers]:
            expect = expect_of(site, wanted[rid])
            if site.file in argv_files:
                assert session.spec.argv is not None
                run = bench.runner(worker=worker)
                target = Target(site.file, site.function, site.line, site.end_line)
                configs = ConfigSearch(run, session.spec.argv, info["options"], decls,
                                       session.platform_name, search.command)  # fmt: skip
                v = configs.find(expect, target)
            else:
                v = search.find(facts[id(site)], expect)
            if v.unreached:
                v = replace(v, reason=v.reason + _elsewhere(session, revision, site, loaded))
            mine[rid] = replace(v, platform=v.platform or base["platform"], revision=name)
        return mine

    workers = max(1, min(session.workers, len(todo)))
    if workers == 1:
        out.update(verify_share(0))
    else:
        for mine in session.pool().map(verify_share, range(workers)):
            out.update(mine)
    return {**kept("no site of this revision holds the record"), **out}


def _launch_path(bench: Bench, record: dict, base: dict[str, Any]) -> Verdict:
    """A launch-path record: its check runs as the server starts, so it stays unverified; its
    example's two lines still run through the revision's argument checks (yours.py), which
    may add what they require, or drop an example they stop."""
    from kverr.verify import yours  # (yours reads the bench this module builds)

    reason = LAUNCH_PATH["reason"]
    got = yours.example_through_argument_checks(bench, record.get("exampleFix") or "")
    if got is None:
        return Verdict("unverified", reason, None, None, keep_fix=True)
    return Verdict("unverified", f"{reason}; {got.said}", example_fix=got.example_fix or "", **base)


def _elsewhere(session: Session, revision: Revision, site: Site, loaded: set[str]) -> str:
    """Who calls a function no validation step reaches, in a user's words: the package's
    files outside the modules validation runs (the engine, the workers, the server), read
    with `git grep` at the revision; "" when none does or that cannot be told."""
    name = (site.function or "").rsplit(".", 1)[-1]
    spec = session.spec
    if not name or name.startswith("__") or not revision.sha:
        return ""
    package = "/".join(p for p in (spec.source_root, spec.package) if p)
    try:
        found = git(session.repo, "grep", "-l", "-E", rf"\b{re.escape(name)}\(", revision.sha,
                    "--", f"{package}/").decode("utf-8", "replace")  # fmt: skip
    except SourceError:
        return ""  # no file calls it (git grep's "no match" is an exit status), or git failed
    paths = sorted(
        path
        for line in found.splitlines()
        if (path := line.partition(":")[2]) and path not in loaded and "/tests/" not in f"/{path}"
    )
    if not paths:
        return ""  # "nothing calls it" says it already
    product = getattr(session.profile, "product", "") or spec.project
    shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more files" if len(paths) > 3 else "")
    return (
        f"; {product} calls it only outside the checks `{spec.launch}` runs on its arguments"
        f" (from {shown}), so no command line can be checked against it"
    )


def _argv_files(spec: VerifySpec, info: Mapping[str, Any]) -> set[str]:
    """Paths of the argv stage's modules at this revision (the config merger's)."""
    names = spec.argv.modules if spec.argv else ()
    return {path for name, path in info.get("loaded", {}).items() if name in names}


def _not_at_argv_time(spec: VerifySpec, stage: Mapping[str, Any], site: Site) -> str:
    """Why a check of an argv-stage module cannot be verified ("" when it can): the stage is
    not there to run, or its statements do not reach the check. Unverified, not "not
    applicable": the module is the launch's own, only this revision does not let us run it."""
    assert spec.argv is not None
    entry = f"{spec.argv.entry}()"
    if not stage.get("ready"):
        return f"the launch's step before parsing ({entry}) cannot run: {stage.get('reason')}"
    function = site.function or ""
    if not steps.within((site.file, function), stage.get("reach", ())):
        return (
            f"{function or 'module-level code'} is not reached from the statements of {entry} "
            "that prepare the command line before parsing it"
        )
    if not spec.argv.config_option:
        return "the verify spec names no config option to build launches for this check"
    return ""


class _Facts(dict):
    """Site id -> its Facts, each computed on first use: the search asks for the records it
    verifies and the earlier checks they run into, not for every site of the revision. Workers
    share it; a site computed twice at once gives equal Facts."""

    def __init__(self, sites: Sequence[Site], decls: dict[str, FlagDecl], profile: Any) -> None:
        super().__init__()
        self.sites = {id(s): s for s in sites}
        self.decls, self.profile = decls, profile
        self.by_function: dict[tuple[str, str | None], list[Site]] = {}
        for s in sites:
            self.by_function.setdefault((s.file, s.function), []).append(s)

    def __missing__(self, key: int) -> Facts:
        s = self.sites[key]
        value = facts_for(
            s, self.decls, pattern_for(s.template), self.by_function[(s.file, s.function)],
            self.profile,
        )  # fmt: skip
        self[key] = value
        return value


def expect_of(site: Site, record: Mapping[str, Any]) -> Expect:
    """What the record's own check raises or logs: its class (AssertionError for an assert),
    its messagePattern, its statement's lines."""
    error_class = record.get("errorClass") or site.error_class
    if site.kind == "assert":
        error_class = "AssertionError"
    return Expect(
        site.kind,
        error_class if site.kind in ("raise", "assert", "exit") else None,
        record.get("messagePattern", ""),
        site.file,
        site.line,
        max(site.end_line, site.line),
        literals=tuple(
            t
            for p in site.template.parts
            if p.is_literal and (t := " ".join((p.text or "").split()))
        ),
    )


# ---------------------------------------------------------------- the build's step


@dataclass
class VerifyReport:
    """What the build prints: per status counts, and the rate that matters (raise/assert
    records of the newest commit with a verified fix)."""

    counts: dict[str, int] = field(default_factory=dict)
    newest: str = ""  # short sha of the newest commit built
    errors_newest: int = 0  # raise/assert records at it
    verified_newest: int = 0
    runs: int = 0  # runs of the check this build (cache misses)
    cached: int = 0  # runs answered by the cache
    platform: str = ""
    main_file: str = ""  # the args class's file (server_args.py), whose records are counted apart
    main_errors_newest: int = 0
    main_verified_newest: int = 0
    na_newest: int = 0  # raise/assert records at the newest commit that are not applicable
    not_run: str = ""  # why nothing ran (a project with no verify spec): no platform then
    argparse_records: int = 0  # argparse records of one flag (the generic one has no fix)
    argparse_verified: int = 0
    # raise/assert records at the newest commit of the checks a launch runs before it starts
    # (every scope but "launch-path", whose checks read the GPU and the loaded model)
    before_start: int = 0
    before_start_verified: int = 0
    before_start_na: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "counts": dict(sorted(self.counts.items())),
            "newest": self.newest,
            "errorsNewest": self.errors_newest,
            "verifiedNewest": self.verified_newest,
            "notApplicableNewest": self.na_newest,
            "mainFile": self.main_file,
            "mainErrorsNewest": self.main_errors_newest,
            "mainVerifiedNewest": self.main_verified_newest,
            "platform": self.platform,
            **({"notRun": self.not_run} if self.not_run else {}),
            "argparseRecords": self.argparse_records,
            "argparseVerified": self.argparse_verified,
            "beforeStartNewest": self.before_start,
            "beforeStartVerifiedNewest": self.before_start_verified,
            "beforeStartNotApplicableNewest": self.before_start_na,
        }


class _Runs(Memo):
    """The build's run cache: a Memo (writes kept until flush) over one namespace of the
    build's own cache file."""

    def __init__(self, cache: Any, ns: str) -> None:
        super().__init__(None)
        self.cache, self.ns = cache, ns

    def _stored(self, key: str) -> str | None:
        return self.cache.get(self.ns, key)

    def flush(self) -> None:
        if self.fresh:
            self.cache.put_many(self.ns, self.fresh)
            self.cache.commit()
            self.fresh = {}


def verify_step(
    plan: Any,
    cache: Any,
    scan: Any,
    records: list[dict],
    *,
    pinned: Mapping[str, int],
    repo: Path,
    platform: str | None = None,
    progress: Progress | None = None,
    workers: int = 1,
    occurrences: Sequence[dict] = (),
    trust_repo: bool = False,
) -> tuple[list[dict], VerifyReport]:
    """`records` with their verification (and verified fixes), and the build's report.
    `pinned`: id -> the revision ord its newest form is built at (pipeline's pin_to_commits);
    `occurrences`: where each record applies; an argparse record is judged at the newest
    revision it applies at (its own parser, verify/parsing.py)."""
    spec = spec_for(plan.profile)
    progress = progress or (lambda phase, done, total: None)
    report = VerifyReport(platform=spec.platform(platform).name, main_file=spec.main_path)
    if not any(path == spec.main_path for files in plan.files for path, _ in files):
        # Another project: no spec says how to run its validation yet, so nothing is
        # verified, and each record says why rather than a harness error.
        profile = plan.profile
        reason = (
            f"kverr has no verify spec for {profile.product} yet (profile {profile.name} has no"
            " [verify] table)"
            if profile is not None and not profile.verifiable()
            else f"kverr has no verify spec for this project ({spec.main_path} is not in its files)"
        )
        report.platform, report.main_file, report.not_run = "", "", reason
        out = [
            # Nothing ran, so no fix is known to be wrong: each is kept and shown marked "not
            # verified" with the reason (a fix the check rejects is what gets dropped).
            Verdict("unverified", reason, None, None, keep_fix=True).apply(r)
            for r in records
        ]
        _count(report, out, plan)
        return out, report
    owed: dict[int, list[dict]] = {}
    parsed: dict[int, list[dict]] = {}  # argparse records, by the newest revision they apply at
    newest = _newest_ords(occurrences)
    for rec in records:
        last = len(plan.revisions) - 1
        if rec.get("scope") == "launch-path" and not rec.get("exampleFix"):
            continue  # its check runs after start-up: records/ says so in its verification
        if rec.get("kind") == "argparse":
            parsed.setdefault(newest.get(rec["id"], last), []).append(rec)
        else:
            owed.setdefault(pinned.get(rec["id"], last), []).append(rec)
    runs = _Runs(cache, "verifyrun")
    out: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix=".kverr-verify-", dir=cache.path.parent) as tmp:
        session = Session(
            spec,
            str(repo),
            Path(tmp),
            platform=platform,
            cache=runs,
            workers=workers,
            trust_repo=trust_repo,
        )
        fp = _fingerprint(spec, session.platform_name)
        try:
            done = 0
            # One pass over the revisions, each loaded once: an argparse record's revision is
            # often one whose checks are verified too.
            for ord_ in sorted(set(owed) | set(parsed)):
                recs = owed.get(ord_, []) + parsed.get(ord_, [])
                revision, base, overrides = _where(plan, ord_)
                files = plan.files[ord_]
                key = files_key(revision, files)
                verdicts, todo = _cached_verdicts(cache, fp, key, recs)
                checks = [r for r in todo if r.get("kind") != "argparse"]
                if checks:
                    exts = scan.loader.load(files, text=True)
                    verdicts.update(verify_revision(
                        exts, checks, session, base, files=files, overrides=overrides,
                        previous=scan.previous_at(ord_), label=revision,
                    ))  # fmt: skip
                if len(checks) < len(todo):
                    argparse = [r for r in todo if r.get("kind") == "argparse"]
                    verdicts.update(
                        _judge_argparse(
                            plan.profile, session, argparse, revision, base, overrides, key
                        )
                    )
                cache.put_many(
                    "verdict",
                    {_vkey(fp, key, r): json.dumps(asdict(verdicts[r["id"]])) for r in todo},
                )
                runs.flush()
                out.update((rec["id"], verdicts[rec["id"]].apply(rec)) for rec in recs)
                done += len(recs)
                progress("verify", done, len(records))
        finally:
            session.close()
            runs.flush()
    report.runs, report.cached = int(session.stats["runs"]), int(session.stats["cached"])
    result = [out.get(r["id"], r) for r in records]
    _count(report, result, plan)
    return result, report


def _newest_ords(occurrences: Sequence[dict]) -> dict[str, int]:
    """id -> the newest revision ord any of its occurrence spans reaches."""
    out: dict[str, int] = {}
    for occ in occurrences:
        out[occ["id"]] = max(out.get(occ["id"], -1), occ["to"])
    return out


def _cached_verdicts(
    cache: Any, fp: str, key: str, recs: list[dict]
) -> tuple[dict[str, Verdict], list[dict]]:
    """(id -> the verdict a build before reached, the records still to judge) for `recs` of
    the revision whose files hash to `key`."""
    verdicts: dict[str, Verdict] = {}
    todo = []
    for rec in recs:
        hit = cache.get("verdict", _vkey(fp, key, rec))
        if hit is None:
            todo.append(rec)
        else:
            verdicts[rec["id"]] = Verdict(**json.loads(hit))
    return verdicts, todo


def _judge_argparse(
    profile: Any,
    session: Session,
    recs: list[dict],
    revision: Revision,
    base: Revision,
    overrides: dict,
    key: str,
) -> dict[str, Verdict]:
    """argparse records of one revision (`_where`'s revision, base and overrides, its files'
    `key`): each fix's two lines through that revision's parser and validation
    (verify/parsing.py), in the build's child."""
    where = {"platform": session.platform_name, "revision": _name(revision)}
    info = options_of(session, base, key, overrides)
    if not info["ready"]:
        why = f"the revision's code does not load in the sandbox: {info['reason']}"
        return {r["id"]: Verdict("unverified", why, keep_fix=True, **where) for r in recs}
    then = launched(profile, session.repo, base)
    launch = then.launch_command() if then is not None else ""
    # an example is written with the launch of its flag's newest declaration, which may be
    # another revision than this one: either command is the example's
    others = (profile.launched_at(lambda path: False).launch_command(),) if profile else ()
    program = (profile.programs or ("",))[0] if profile is not None else ""
    run = runner_for(session, base, key, overrides)
    return {
        r["id"]: replace(
            judge_argparse(r, run, launch=launch, program=program, launches=others), **where
        )
        for r in recs
    }


def launched(profile: Any, repo: str, revision: Revision) -> Any:
    """`profile` as the project launched at `revision` (`vllm serve` came in July 2024;
    kverr.profile.launched_at), by the files git has there."""
    sha = revision.sha
    if profile is None or not profile.launch_before or not sha:
        return profile
    have = git(repo, "ls-tree", "--name-only", "--end-of-options", sha, "--",
               *profile.launch_since).decode("utf-8", "replace").split()  # fmt: skip
    return profile.launched_at(have.__contains__)


def _name(revision: Revision) -> str:
    """A revision as a verdict names it: its short sha, else its label."""
    return revision.sha[:12] if revision.sha else (revision.tags[0] if revision.tags else "?")


def _where(plan: Any, ord_: int) -> tuple[Revision, Revision, dict]:
    """(the revision, the commit to run against, files from disk placed over it). A snapshot
    revision runs against the newest commit with its snapshot files placed over it."""
    revision = plan.revisions[ord_]
    if revision.sha:
        return revision, revision, {}
    base = max(i for i, r in enumerate(plan.revisions[:ord_]) if r.sha)
    files = dict(plan.files[ord_])
    overrides = {
        s["repoPath"]: plan.read(s["repoPath"], files[s["repoPath"]]).text
        for s in plan.snapshots
        if s["repoPath"] in files
    }
    return revision, plan.revisions[base], overrides


def _vkey(fp: str, files_key: str, record: dict) -> str:
    body = json.dumps(record, sort_keys=True).encode()
    return f"{fp}:{files_key}:{record['id']}:{hashlib.sha256(body).hexdigest()[:16]}"


def _count(report: VerifyReport, records: list[dict], plan: Any) -> None:
    for rec in records:
        status = rec["verification"]["status"]
        report.counts[status] = report.counts.get(status, 0) + 1
    newest = next((r.sha for r in reversed(plan.revisions) if r.sha), None)
    report.newest = (newest or "")[:12]
    errors = [
        r
        for r in records
        if r["analyzedSha"] == newest and r["kind"] in ("raise", "assert") and newest
    ]
    report.errors_newest = len(errors)
    report.verified_newest = sum(r["verification"]["status"] == "verified" for r in errors)
    report.na_newest = sum(r["verification"]["status"] == "not-applicable" for r in errors)
    early = [r for r in errors if r.get("scope") != "launch-path"]
    report.before_start = len(early)
    report.before_start_verified = sum(r["verification"]["status"] == "verified" for r in early)
    report.before_start_na = sum(r["verification"]["status"] == "not-applicable" for r in early)
    parsed = [r for r in records if r["kind"] == "argparse" and r["argparse"].get("flag")]
    report.argparse_records = len(parsed)
    report.argparse_verified = sum(r["verification"]["status"] == "verified" for r in parsed)
    main = [r for r in errors if r["filePath"] == report.main_file]
    report.main_errors_newest = len(main)
    report.main_verified_newest = sum(r["verification"]["status"] == "verified" for r in main)
