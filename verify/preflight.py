"""`kverr check`: a launch read from what the user gives (a command line, a paste), checked
against the release they run (verify/release.py), with the model it names, every error
reported with the fix of that launch (verify/yours.py), and the values the release would
change silently.
"""

from __future__ import annotations

import functools
import json
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kverr.verify.spec import spec_for

from kverr.argforms import abbreviated
from kverr.errors import QueryError, SourceError
from kverr.ftypes import POSITIONAL, Launch
from kverr.launch import PastedLaunch, forms_of, read_launches
from kverr.profile import DEFAULT, builtin_names, load_profile

if TYPE_CHECKING:  # the search (verify/yours.py) is imported once the sandbox is starting
    from kverr.verify.yours import Checked, Resolved


def model_overrides(
    path: str, known: Mapping[str, Mapping[str, Any]]
) -> tuple[tuple[str, Any], ...]:
    """What the run's model is, from the model path the user gave: its config.json when the
    path is a local folder, else the table of well-known models; () when neither knows it."""
    config = Path(path) / "config.json" if path else None
    if config is not None and config.is_file() and config.stat().st_size < 1 << 20:
        try:
            data = json.loads(config.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = None
        if isinstance(data, dict):
            return _with_config({k: v for k, v in data.items() if _plain(v)})
    entry = known.get(path) or known.get(path.rsplit("/", 1)[-1].lower(), {})
    return _with_config(dict(entry)) if entry else ()


# hf_config attributes the model config (`config.x` in a launch's model) repeats
_REPEATED = ("num_attention_heads", "num_key_value_heads", "hidden_size", "num_hidden_layers")


def _with_config(hf: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The hf_config attributes, and what the model config derives from them."""
    out = dict(hf)
    out.update({f"config.{k}": hf[k] for k in _REPEATED if k in hf})
    if isinstance(hf.get("max_position_embeddings"), int):
        out["config.context_len"] = hf["max_position_embeddings"]
    return tuple(sorted(out.items()))


def _plain(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool)) or (
        isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value)
    )


def with_model(launch: Launch, model: Sequence[tuple[str, Any]]) -> Launch:
    return replace(
        launch, model=tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in model)
    )


# ---------------------------------------------------------------- the whole check


@dataclass(frozen=True)
class Report:
    """`kverr check`'s answer: the launch as the release reads it, and what its checks did."""

    release: str
    platform: str
    model: str  # what the run's model was: a known model, a local config.json, the default
    launch: Launch
    program: str = ""
    unknown: tuple[str, ...] = ()
    spelled: tuple[tuple[str, str], ...] = ()
    checked: Checked | None = None
    reason: str = ""  # why nothing ran (the release's code does not load in the sandbox)
    close: tuple[tuple[str, tuple[str, ...]], ...] = ()  # unknown option -> close names
    served: tuple[str, ...] = ()  # options of the server's front end (VerifySpec.front_end)
    # the launch with a record's own change (yours.with_record_fix), when asked and it passed
    with_record_fix: Launch | None = None


def check_launch(
    pasted: Any,
    *,
    spec: Any,
    globs: Sequence[str],
    workdir: Path,
    release: str | None = None,
    source: str | None = None,
    platform: str | None = None,
    trust_repo: bool = False,
    keep: Sequence[str] = (),
    profile: Any = None,
    example_fix: str = "",
) -> Report:
    """Read `pasted` (kverr.launch.PastedLaunch) as `release` does and run it through every
    check of that release (module doc). SourceError when no release can be read. `profile`:
    the project's (kverr.profile.Profile), for where its releases can be fetched.
    `example_fix`: a record's, applied to a launch that passes (yours.with_record_fix).

    What one check learns is kept for the next (verify/memo.py): the release's extraction and
    the sandbox's answers. The sandbox starts loading the release before anything else, so it
    loads while this process reads the extraction and builds the bench."""
    from kverr.verify.harness import Harness
    from kverr.verify.memo import Memo
    from kverr.verify.release import find_release

    rel = find_release(spec, tuple(globs), release=release, source=source, profile=profile)
    # The sandbox starts loading the release first: the search's own modules are imported,
    # and the caches read, while it loads.
    plat = spec.platform(platform).name
    harness = Harness(
        spec, repo=rel.repo, sha=rel.revision.sha or "", workdir=workdir, platform=plat,
        trust_repo=trust_repo, disk=rel.disk,
    )  # fmt: skip
    harness.start_soon()
    from kverr.verify.step import Session, bench_for
    from kverr.verify.yours import check, close_options, with_record_fix

    memo = Memo.open()
    session = Session(
        spec, rel.repo, workdir, platform=platform, cache=memo, trust_repo=trust_repo,
        disk=rel.disk,
    )  # fmt: skip
    session.adopt(harness)
    ready = False
    try:
        key = release_key(rel, spec)
        exts = extraction(rel, key, memo, profile.extract if profile is not None else None)
        bench = bench_for(exts, session, rel.revision, key=key, fields=memo_fields(key, memo))
        if not bench.info["ready"]:
            why = f"{rel.name}'s checks do not load in the sandbox: {bench.info['reason']}"
            return Report(rel.name, plat, "", Launch(), pasted.program, reason=why)
        ready = True
        remember_fields(key, memo, bench.fields)
        options = bench.info["options"]
        resolved, launch, label = your_launch(pasted, options)
        read_ahead(bench)
        checked = check(bench, launch, keep)
        # (read only for a launch with options the checks' parser lacks)
        served = front_end_options(rel, spec, key, memo, profile) if resolved.unknown else {}
        unknown = tuple(u for u in resolved.unknown if abbreviated(u, served) is None)
        close = tuple((u, tuple(close_options(u, options))) for u in unknown)
        then = None
        if example_fix and checked.passed and not checked.errors:
            then = with_record_fix(bench, launch, example_fix)
        return Report(
            rel.name, plat, label, launch, pasted.program, unknown, resolved.spelled,
            checked, close=close, with_record_fix=then,
            served=tuple(u for u in resolved.unknown if u not in unknown),
        )  # fmt: skip
    finally:
        session.close()
        if ready:  # a release that did not load (no sandbox, a slow machine) is asked again
            memo.fresh = {k: v for k, v in memo.fresh.items() if not _unavailable(v)}
            memo.flush()
        memo.close()


def read_ahead(bench: Any) -> None:
    """What the fix search reads of the release's source before its first question to the
    sandbox (verify/search/reading.py keeps it per text), read now, while the sandbox still loads:
    after the launch's first run it would wait in line."""
    from kverr.verify.search import reading

    spec = bench.session.spec
    main = bench.texts.get(spec.main_path, "")
    reading.method_reads(main, spec.args_class)
    for phase in spec.phases[:1]:
        reading.call_sites(main, f"{spec.args_class}.{phase}")


def release_key(rel: Any, spec: Any) -> str:
    """The verify cache's file-set key of a release (verify/step.py files_key); a release
    read from a folder has no commit, so its package's files' sizes and times stand in for
    the modules the sandbox reads lazily."""
    from kverr.verify.harness import package_dir
    from kverr.verify.memo import folder_stamp
    from kverr.verify.step import files_key

    files = [(f.path, f.blob) for f in rel.files]
    if rel.disk is not None:
        files.append(("", folder_stamp(package_dir(rel.disk, spec))))
    return files_key(rel.revision, files)


def front_end_options(rel: Any, spec: Any, key: str, memo: Any, profile: Any) -> dict[str, int]:
    """The options the release's front end declares (`spec.front_end`'s files): option ->
    a key per declaration, as `abbreviated` reads them. Read from the release's own files
    (a git revision or a folder), kept in the memo."""
    if not spec.front_end:
        return {}
    name = f"front:{key}:{_extract_code()}:{profile.fingerprint('extract')}"
    hit = memo.get(name)
    if hit is None:
        from kverr.extractor import extract_files
        from kverr.verify.release import files_of

        exts = extract_files(list(files_of(rel, spec.front_end)), rules=profile.extract)
        hit = json.dumps([list(d.options or (d.name,)) for fx in exts for d in fx.flags])
        memo[name] = hit
    return {o: i for i, names in enumerate(json.loads(hit)) for o in names if o.startswith("-")}


def extraction(rel: Any, key: str, memo: Any, rules: Any = None) -> list[Any]:
    """The release's FileExtractions, read with the project's extraction rules (`rules`, its
    profile's), from the cache, else from libcst (imported only then)."""
    import hashlib

    from kverr import ftypes

    ruled = hashlib.sha256(ftypes.to_json(rules).encode()).hexdigest()[:12] if rules else "-"
    name = f"extract:{key}:{_extract_code()}:{ruled}"
    hit = memo.get(name)
    if hit is not None:
        try:
            exts = ftypes.from_json(hit)
            if isinstance(exts, list) and all(isinstance(e, ftypes.FileExtraction) for e in exts):
                return exts
        except (ValueError, TypeError, KeyError):
            pass  # not what this kverr writes: extracted again below
    from kverr.extractor import extract_files

    exts = extract_files(list(rel.files), rules=rules)
    memo[name] = ftypes.to_json(exts)
    return exts


@functools.cache
def _extract_code() -> str:
    """The extractor's code, the types it writes and the default profile's rules."""
    import kverr.extractor
    from kverr.verify.memo import code_stamp

    from kverr import ftypes

    code = code_stamp(Path(kverr.extractor.__file__).parent, Path(ftypes.__file__))
    return f"{code}:{load_profile().fingerprint('extract')}"


def _fields_key(key: str) -> str:
    """The solver's field table depends on the release's files, the parser's options and the
    code of verify/ and records/ that reads them."""
    return f"fields:{key}:{_fields_code()}"


@functools.cache
def _fields_code() -> str:
    """Once per process, which is when that code was imported (as the build's cache does)."""
    import kverr.records
    import kverr.records.knowledge
    import kverr.verify
    from kverr.verify.memo import code_stamp

    folders = (kverr.verify.__file__, kverr.records.__file__, kverr.records.knowledge.__file__)
    return code_stamp(*(Path(f).parent for f in folders))


def memo_fields(key: str, memo: Any) -> dict[str, Any] | None:
    hit = memo.get(_fields_key(key))
    try:
        fields = json.loads(hit) if hit is not None else None
    except ValueError:
        return None
    return fields if isinstance(fields, dict) else None


def remember_fields(key: str, memo: Any, fields: dict[str, Any]) -> None:
    """Kept only when JSON gives them back as they are (a tuple or a set would not be)."""
    try:
        text = json.dumps(fields, sort_keys=True)
    except (TypeError, ValueError):
        return
    if json.loads(text) == fields:
        memo[_fields_key(key)] = text


def _unavailable(value: str) -> bool:
    """A run whose sandbox did not start (Outcome.to_json writes the status first)."""
    return value.startswith('{"status": "unavailable"')


def your_launch(pasted: Any, options: Mapping[str, Any]) -> tuple[Resolved, Launch, str]:
    """`pasted` in the release's own option names (`options`: the parser's table), with the
    model its model path names; (how it was read, the launch, what the model is)."""
    from kverr.verify.yours import resolve

    resolved = resolve(
        pasted.words,
        values=pasted.values,
        every_field=pasted.form == "fields",
        env=pasted.env,
        options=options,
    )
    launch = resolved.launch
    model_path = str(
        launch.value("--model-path") or launch.value("--model") or launch.value(POSITIONAL) or ""
    )
    model = model_overrides(model_path, known_models())
    return resolved, with_model(launch, model), _model_label(model_path, model)


def _model_label(path: str, model: Sequence[tuple[str, Any]]) -> str:
    arch = dict(model).get("architectures")
    name = arch[0] if isinstance(arch, (list, tuple)) and arch else ""
    if not model:
        return "the default model (the model path is neither a local folder nor a known model)"
    where = "its config.json" if Path(path, "config.json").is_file() else "kverr's model table"
    return f"{name or path} ({where})"


def known_models() -> dict[str, dict[str, Any]]:
    """verify/models.toml, keyed by the full name and by its last part in lower case."""
    try:
        import tomllib
    except ImportError:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    table = tomllib.loads((Path(__file__).parent / "models.toml").read_text(encoding="utf-8"))
    out: dict[str, dict[str, Any]] = {}
    for name, entry in table.items():
        out[name] = entry
        out.setdefault(name.rsplit("/", 1)[-1].lower(), entry)
    return out


def report_json(report: Report) -> dict[str, Any]:
    """The report as `kverr check --json` and `POST /check` give it: the launch, each error
    with the fix of this launch, what the release changes silently, the launch fully fixed."""
    from kverr.verify.yours import NoFix, YourFix

    program = report.program or "LAUNCH"
    typed = {option: word for word, option in report.spelled}

    def line(launch: Launch) -> str:
        """The command in the user's own spelling (`--tp 4` stays `--tp`)."""
        args = tuple((typed.get(o, o), v) for o, v in launch.args)
        return replace(launch, args=args).command(program)

    errors = []
    checked = report.checked
    for step in checked.errors if checked else ():
        o = step.ran.outcome
        item: dict[str, Any] = {
            "status": o.status,
            "errorClass": o.exc_class,
            "message": o.message or (o.reason if o.status == "parse-error" else ""),
            "file": o.file,
            "line": o.line,
            "id": step.ran.site_id or None,
            # what the code says, for an assert that prints nothing
            "statement": step.ran.site.snippet.strip().splitlines()[0] if step.ran.site else "",
        }
        if isinstance(step.fix, YourFix):
            item["yourFix"] = {
                "before": line(step.fix.before),
                "after": line(step.fix.after),
                "changed": list(step.fix.changed),
                "verification": {
                    "status": "verified",
                    "revision": report.release,
                    "platform": report.platform,
                    "model": report.model,
                },
            }
        elif isinstance(step.fix, NoFix):
            item["yourFix"] = None
            item["noFix"] = step.fix.reason
        errors.append(item)
    last = checked.steps[-1].ran.outcome if checked and checked.steps else None
    return {
        "release": report.release,
        "platform": report.platform,
        "model": report.model,
        "launch": {"command": line(report.launch), "argv": report.launch.argv()},
        "spelled": [{"typed": a, "option": b} for a, b in report.spelled],
        "unknownOptions": [{"option": u, "didYouMean": list(c)} for u, c in report.close],
        "serverOptions": list(report.served),
        "passed": bool(checked and checked.passed and not checked.errors),
        "errors": errors,
        "stopped": (
            {"status": last.status, "reason": last.reason}
            if last is not None and last.status not in ("passed", "raised")
            else None
        ),
        "notices": [
            {"level": n.level, "message": n.message, "file": n.file, "line": n.line}
            for n in (checked.notices if checked else ())
        ],
        "fixed": line(checked.final) if checked and checked.final else None,
        **({"withRecordFix": line(report.with_record_fix)} if report.with_record_fix else {}),
        "reason": report.reason or None,
    }


def check_text(
    text: str,
    *,
    release: str | None = None,
    source: str | None = None,
    platform: str | None = None,
    trust_repo: bool = False,
) -> tuple[Report, dict[str, Any]]:
    """`kverr check`'s one library call: the first launch in `text` (a command line, or a paste
    that holds one), checked; (the report, its JSON). QueryError when there is no launch, or
    when kverr cannot run that project's checks yet."""
    from kverr.verify import confine

    names = sorted(builtin_names(), key=lambda n: n != DEFAULT)  # the default project first
    profiles = [load_profile(name) for name in names]
    forms = forms_of(profiles)
    launches = read_launches(text, forms)
    if not launches and text.lstrip().startswith("-"):  # options alone: the default project's
        default = profiles[0]
        program = f"python -m {default.launch_modules[0]}" if default.launch_modules else ""
        launches = read_launches(f"{program} {text}", forms) if program else []
    if not launches:
        raise QueryError(
            "no launch command in the input; pass it after --, e.g. kverr check -- python -m"
            " sglang.launch_server --model-path MODEL --tp-size 2"
        )
    pasted = launches[0]
    profile = next(p for p in profiles if p.name == pasted.project)
    if not profile.verifiable():
        raise QueryError(
            f"kverr cannot run {profile.product}'s checks yet (its profile has no [verify]"
            f" table); explain its errors with kverr explain."
        )
    spec = spec_for(profile)
    confine.require(trust_repo)
    with tempfile.TemporaryDirectory(prefix="kverr-check-") as tmp:
        report = check_launch(
            pasted, spec=spec, globs=profile.files, workdir=Path(tmp), release=release,
            source=source, platform=platform, trust_repo=trust_repo, keep=profile.hardware_options,
            profile=profile,
        )  # fmt: skip
    return report, report_json(report)


_VERSION_IN = re.compile(
    r"\b(?P<project>sglang|vllm)(?:==|[ :=]{1,3}(?:version[ :=]{1,3})?v?)"
    r"(?P<version>\d{1,3}\.\d{1,3}\.\d{1,3}(?:\.post\d{1,3}|rc\d{1,3})?)\b",
    re.I,
)


def version_in(text: str, project: str) -> str | None:
    """The release a paste says it runs (`sglang==0.5.9`, `vLLM version 0.11.1`), or None."""
    for m in _VERSION_IN.finditer(text[: 1 << 20]):
        if m.group("project").lower() == project:
            return m.group("version")
    return None


def personal_answers(
    text: str,
    matches: Sequence[Any],
    *,
    release: str | None = None,
    source: str | None = None,
) -> list[Any]:
    """`matches` (kverr.answers.Match) with the fix of the user's own launch when `text` holds
    one (`yours`), and without one or without a fix of it, advice from the values each
    message printed (`advice`).
    The launch runs through the release it names, or the paste's version, or the newest
    release of the match; a launch that does not raise the matched error gets a yourFix that
    says so and why, never the generic example."""
    from kverr.advice import advice_for

    profiles = {name: load_profile(name) for name in builtin_names()}
    launches = read_launches(text, forms_of(profiles.values()))
    out = []
    for m in matches:
        project = (m.project or {}).get("name") or m.record.get("project") or DEFAULT
        mine = [p for p in launches if p.project == project]
        if not mine:
            out.append(replace(m, advice=advice_for(m, text, profiles)))
            continue
        yours = _yours(m, mine[0], profiles[project], text, release, source)
        # a launch kverr could not fix still printed its values in the message
        advice = () if "verification" in yours else advice_for(m, text, profiles)
        out.append(replace(m, yours=yours, advice=advice))
    return out


# Releases a paste that names none is run against before kverr settles on the newest one:
# each is one sandbox run, and the releases that differ in one check are usually adjacent.
TRIES = 4


def _yours(m: Any, pasted: PastedLaunch, profile: Any, text: str, release: str | None,
           source: str | None) -> dict[str, Any]:  # fmt: skip
    """The personal answer for one match (personal_answers), from the release the user names
    (--release, then the paste's version), else the newest release whose own checks raise
    this error with these arguments (verify/release.py releases_to_try), else the one
    version the source holds."""
    from kverr.verify import confine
    from kverr.verify.release import releases_to_try

    if not profile.verifiable():
        return {
            "status": "not-checked",
            "reason": f"kverr cannot run {profile.product}'s checks yet",
        }
    why = confine.unavailable()
    if why is not None:
        return {"status": "not-checked", "reason": f"no sandbox to run the checks in: {why}"}
    spec = spec_for(profile)
    named = release or version_in(text, profile.name)
    if named:
        tries: list[str | None] = [named]
    else:
        tries = [*releases_to_try(spec, source, m.revisions)[:TRIES]] or [None]
    missed: list[dict[str, Any]] = []  # the releases where the launch does not raise it
    machine: str | None = None  # where the launch gets past the checks about hardware
    for rel in tries:
        got = _run_yours(m, pasted, profile, spec, rel, source, machine)
        if got.get("stoppedBy") and machine is None:
            got, machine = _other_machine(got, m, pasted, profile, spec, rel, source)
        if got.get("status") != "not-reproduced":
            if missed and got.get("status") == "not-checked":
                break  # an older release that cannot be read: the newest one's answer stands
            if len(tries) > 1 and got.get("verification"):
                got["verification"]["chosenBy"] = "the newest release that raises it"
            return got
        missed.append(got)
    first = missed[0]
    if len(missed) > 1:
        first["reason"] += f"; nor does it at {', '.join(g['release'] for g in missed[1:])}"
    return first


def _other_machine(got: dict[str, Any], m: Any, pasted: PastedLaunch, profile: Any, spec: Any,
                   release: str | None, source: str | None) -> tuple[dict[str, Any], str | None]:  # fmt: skip
    """A launch that stops at another check on the default machine (a Blackwell-only backend
    on an H100) was typed for another one: the first of the project's machines where it gets
    past the checks, with that machine; else the default's answer."""
    for other in spec.machines:
        if other != spec.default_platform:
            there = _run_yours(m, pasted, profile, spec, release, source, other)
            if not there.get("stoppedBy") and there.get("status") != "not-checked":
                return there, other
    return got, None


def stopped_first(data: dict[str, Any], default_platform: str) -> dict[str, Any]:
    """What to say when the release's run of the user's launch (`report_json`) stopped before
    the pasted check: at another check, or at something only the real machine knows (a run
    the sandbox could not decide is no check the launch fails)."""
    first = data["errors"][0]
    if first.get("status") == "undecidable":
        stopped = (data.get("stopped") or {}).get("reason") or "what only the machine knows"
        reason = (
            f"{data['release']}'s checks of your launch read {stopped}, which kverr cannot know"
        )
        return {"status": "not-checked", "reason": reason}
    said = f"{first['errorClass']}: {first['message']}".strip(": ")
    reason = f"your launch stops at another check of {data['release']} first ({said})"
    if data["platform"] != default_platform:
        reason += f" on {data['platform']} too"
    where = {"release": data["release"], "platform": data["platform"]}
    return {"status": "not-reproduced", "reason": reason, "stoppedBy": said, **where}


def _run_yours(m: Any, pasted: PastedLaunch, profile: Any, spec: Any, release: str | None,
               source: str | None, platform: str | None = None) -> dict[str, Any]:  # fmt: skip
    """The user's launch through one release's checks on `platform` (the default machine:
    None), read for the match `m`."""
    launch_path = m.record.get("scope") == "launch-path"
    try:
        with tempfile.TemporaryDirectory(prefix="kverr-check-") as tmp:
            report = check_launch(
                pasted, spec=spec, globs=profile.files, workdir=Path(tmp),
                release=release, source=source, platform=platform,
                keep=profile.hardware_options, profile=profile,
                example_fix=(m.record.get("exampleFix") or "") if launch_path else "",
            )  # fmt: skip
    except SourceError as exc:
        return {"status": "not-checked", "reason": str(exc)}
    data = report_json(report)
    if report.reason:
        return {"status": "not-checked", "reason": report.reason}
    for err in data["errors"]:
        if err["id"] == m.record.get("id"):
            fix = err.get("yourFix")
            if fix:
                return fix
            return {
                "status": "no-fix",
                "reason": err.get("noFix") or "",
                "release": data["release"],
            }
    where = {"release": data["release"], "platform": data["platform"]}
    if data["errors"]:
        return stopped_first(data, spec.default_platform)
    if launch_path:
        # the check runs as the server starts: what can be said is that the launch, with the
        # record's own change, gets there
        out = {"status": "beyond-arguments", **where, "file": m.record.get("filePath") or ""}
        if data.get("withRecordFix"):
            out.update(before=data["launch"]["command"], after=data["withRecordFix"])
        return out
    reason = (
        f"your launch passes every check of {data['release']} on {data['platform']} with"
        f" {data['model']}: the error comes from another release, another model or another"
        " platform"
    )
    return {"status": "not-reproduced", "reason": reason, **where}
