"""What the harness must know about a project to run its validation, as data.

`VerifySpec` is everything project-specific: where the modules live, which are loaded for
real, the parser entry point, the validation methods in run order, how a launch command
starts, and the named platform and model profiles that answer hardware, package and model
probes. A project's profile (`profiles/<name>.toml`) carries it as its `[verify]`,
`[platform.*]` and `[model.*]` tables, which `spec_for` hands to `VerifySpec.from_table`. A
project without them gets no verification: its records say "not verified" rather than guess.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kverr.errors import SourceError

_UNSET = object()


@dataclass(frozen=True)
class Profile:
    """A named platform (or model) profile: what each probe answers.

    `probes` keys are dotted paths a stub would stand for, matched on their ending: `is_cuda()`
    (a function; any call returns the value), `torch.version.hip` (a value). Values are TOML
    values, with `"@none"` for None, `{tuple = [...]}` for a tuple, `"@ref:module:attr"` for an
    object of the revision's own code (resolved in the sandbox), `{new = "module:Class", args =
    [...]}` for one made by that code, `"@arg:0"` for a call's own first argument, and `"@name"` for a model profile's object of that
    name (its `[model.x.name]` table: attributes, and a `calls` table of what methods return)."""

    name: str
    description: str
    probes: Mapping[str, Any] = field(default_factory=dict)
    absent_packages: tuple[str, ...] = ()  # importing these fails, as on the real machine
    # A model profile's objects: "config" (the ModelConfig), "hf_config", "calls" (methods of
    # the config and what they return).
    objects: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    files: tuple[str, ...] = ()  # a model profile: files of the model directory
    paths: Mapping[str, Any] = field(default_factory=dict)  # path -> [entries] | False

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)  # (tuples are JSON lists once sent)


@dataclass(frozen=True)
class ArgvStage:
    """What the launch does to its command line before the parser reads it: the statements
    of `entry` (a function of the main module, `prepare_server_args`) before its parse call,
    run for real on every launch. A check reached from them is decided at "argv time"."""

    entry: str
    modules: tuple[str, ...] = ()  # loaded for real with it, when the revision has them
    # The option that names a config file, and what the fix search writes into one: the
    # launches of verify/search/configfile.py (empty: argv-time checks get no candidate launches).
    config_option: str = ""
    config_name: str = "config.yaml"
    config_example: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"entry": self.entry, "modules": list(self.modules)}


@dataclass(frozen=True)
class VerifySpec:
    """How to run one project's launch-argument validation (see the module docstring)."""

    project: str
    source_root: str  # "python": the repository folder that holds the package
    package: str  # "sglang": its modules are read from the revision; others are stubbed
    main_module: str  # defines the args class
    modules: tuple[str, ...]  # loaded for real, in import order; "pkg.sub.*" for a folder
    args_class: str
    add_args: str  # static method that adds the arguments to an argparse parser
    from_args: str  # classmethod: parsed Namespace -> args object
    phases: tuple[str, ...]  # validation methods in the order the launch calls them
    launch: str  # the command a user types, for the example fix
    base_args: tuple[str, ...]  # arguments every launch needs (`--model-path MODEL_PATH`)
    env_prefix: str  # environment variables the project reads (`SGLANG_`)
    model_factory: str  # dotted path whose every method returns the model profile
    substitutes: Mapping[str, str]
    platforms: Mapping[str, Profile]
    models: Mapping[str, Profile]
    default_platform: str
    default_model: str
    # the platforms a user's own launch may be meant for, tried in this order when it stops
    # at another check first on the default one (kverr explain's personal fix)
    machines: tuple[str, ...] = ()
    argv: ArgvStage | None = None  # absent: the parser reads the command line as typed
    # Third-party packages imported for real (a project whose configs are validated by a
    # library: the checks mean nothing with the validator stubbed); everything else is stubbed.
    real: tuple[str, ...] = ()
    # The parser class, a name in the main module's namespace (as the revision imports it,
    # wherever it is defined); "" is argparse's own.
    parser: str = ""
    # Words the launch command takes before its options, each the option it stands for
    # (`vllm serve MODEL`: model_tag -> model), in order.
    positional: Mapping[str, str] = field(default_factory=dict)
    # Exception classes (by name) that wrap a check's own error: a validation library's
    # error that carries the check's ValueError; the run reports the check's own.
    wrappers: tuple[str, ...] = ()
    # How validation steps reach a check (verify/sandbox/steps.py): "self" follows `self.m()` and
    # module functions; "all" also follows classes built (their __init__, __post_init__ and
    # methods decorated by one of `validators`) and methods called on any object.
    follow: str = "self"
    validators: tuple[str, ...] = ()
    # Files whose options the launch command takes besides the args class's (vLLM's serve:
    # --host, --port in vllm/entrypoints/openai/cli_args.py): the server reads them, no check
    # of the args class does, so a launch that gives them is run without them.
    front_end: tuple[str, ...] = ()
    # Modules run for real for what they register as they load (vLLM's KV connector factory
    # fills its registry with module-level calls, which a lazily read module never makes);
    # one a revision's code cannot run in the sandbox is read lazily like the others.
    registries: tuple[str, ...] = ()

    @property
    def main_path(self) -> str:
        return self.path_of(self.main_module)

    def path_of(self, module: str) -> str:
        rel = module.replace(".", "/") + ".py"
        return f"{self.source_root}/{rel}" if self.source_root else rel

    def platform(self, name: str | None = None) -> Profile:
        key = name or self.default_platform
        if key not in self.platforms:
            known = ", ".join(sorted(self.platforms))
            raise SourceError(f"unknown platform profile {key!r}; pass one of: {known}.")
        return self.platforms[key]

    def differences(self, base: str | None = None) -> dict[str, list[str]]:
        """Platform -> what it answers differently from `base` (the default): the probes'
        names (`is_cuda`, `hip`), the paths it declares, the packages one of them lacks."""
        first = self.platform(base)
        out: dict[str, list[str]] = {}
        for name, other in self.platforms.items():
            if name == first.name:
                continue
            words = [
                word
                for key in _differing(first.probes, other.probes)
                for word in re.findall(r"[A-Za-z_]\w*", key)[-1:]
            ]
            words += _differing(first.paths, other.paths)
            words += set(first.absent_packages) ^ set(other.absent_packages)
            out[name] = sorted(set(words))
        return out

    def model(self, name: str | None = None) -> Profile:
        return self.models[name or self.default_model]

    @classmethod
    def from_table(
        cls, table: Mapping[str, Any], *, where: str = "profile", phases: tuple[str, ...] = ()
    ) -> VerifySpec:
        """A spec from a parsed TOML document: `[verify]`, `[platform.*]`, `[model.*]`;
        `phases`: the profile's [extract] phases, when [verify] names none."""
        try:
            v = table["verify"]
            platforms = _ordered(_profiles(table.get("platform", {})), v.get("try_platforms", ()))
            models = _ordered(_profiles(table.get("model", {})), v.get("try_models", ()))
            spec = cls(
                project=v["project"],
                source_root=v.get("source_root", ""),
                package=v["package"],
                main_module=v["main_module"],
                modules=tuple(v["modules"]),
                args_class=v["args_class"],
                add_args=v["add_args"],
                from_args=v["from_args"],
                phases=tuple(v.get("phases") or phases),
                launch=v["launch"],
                base_args=tuple(v.get("base_args", ())),
                env_prefix=v.get("env_prefix", ""),
                model_factory=v.get("model_factory", ""),
                substitutes=dict(v.get("substitutes", {})),
                platforms=platforms,
                models=models,
                default_platform=v["default_platform"],
                default_model=v["default_model"],
                machines=tuple(v.get("machines", ())),
                argv=_argv_stage(v["argv"]) if "argv" in v else None,
                real=tuple(v.get("real", ())),
                parser=v.get("parser", ""),
                positional=dict(v.get("positional", {})),
                wrappers=tuple(v.get("wrappers", ())),
                follow=v.get("follow", "self"),
                validators=tuple(v.get("validators", ())),
                front_end=tuple(v.get("front_end", ())),
                registries=tuple(v.get("registries", ())),
            )
        except (KeyError, TypeError) as exc:
            raise SourceError(
                f"{where}: the verify table lacks or mistypes {exc}; see profiles/sglang.toml."
            ) from None
        if not spec.phases:
            raise SourceError(
                f"{where}: no validation phases; add [extract] phases (or [verify] phases),"
                " the methods a launch calls in order."
            )
        for name in (None, *spec.machines):
            spec.platform(name)
        if spec.default_model not in spec.models:
            raise SourceError(f"{where}: default_model {spec.default_model!r} is not defined.")
        return spec


def _differing(a: Mapping[str, Any], b: Mapping[str, Any]) -> set[str]:
    """The keys whose values (or presence) differ between two tables."""
    return {k for k in {*a, *b} if a.get(k, _UNSET) != b.get(k, _UNSET)}


def _argv_stage(t: Mapping[str, Any]) -> ArgvStage:
    return ArgvStage(
        entry=t["entry"],
        modules=tuple(t.get("modules", ())),
        config_option=t.get("config_option", ""),
        config_name=t.get("config_name", "config.yaml"),
        config_example=dict(t.get("config_example", {})),
    )


def _ordered(profiles: dict[str, Profile], order: list[str]) -> dict[str, Profile]:
    """The profiles in the order a check is tried on them: those `order` names first (a
    profile's tables reach here as canonical JSON, sorted by name)."""
    return {name: profiles[name] for name in dict.fromkeys([*order, *profiles])}


def _profiles(tables: Mapping[str, Any]) -> dict[str, Profile]:
    """Profiles by name; `inherits = "other"` starts from another profile's probes."""
    out: dict[str, Profile] = {}

    def build(name: str, seen: tuple[str, ...] = ()) -> Profile:
        if name in out:
            return out[name]
        if name in seen or name not in tables:
            raise KeyError(f"profile {name!r} (inherited by {seen[-1] if seen else '?'})")
        t = tables[name]
        base = build(t["inherits"], (*seen, name)) if "inherits" in t else Profile(name, "")
        objects = {k: dict(v) for k, v in base.objects.items()}
        for k, v in t.items():
            if isinstance(v, dict) and k not in ("probes", "paths"):
                objects.setdefault(k, {}).update(v)
        out[name] = Profile(
            name,
            t.get("description", name),
            {**base.probes, **t.get("probes", {})},
            tuple(dict.fromkeys([*base.absent_packages, *t.get("absent_packages", ())])),
            objects,
            tuple(t.get("files", ())),
            {**base.paths, **t.get("paths", {})},
        )
        return out[name]

    for name in tables:
        build(name)
    return out


def spec_for(profile: Any = None) -> VerifySpec:
    """The verify spec of a project: its profile's [verify] tables, the phases its [extract]
    table orders unless [verify] names its own; a profile without them (or None) gets the
    default project's, and a project whose files lack that spec's main module is then not
    verified: its records say so."""
    from kverr.profile import default_profile

    if profile is None or profile.verify is None:
        profile = default_profile()
    return VerifySpec.from_table(
        json.loads(profile.verify), where=f"profile {profile.name}", phases=profile.extract.phases
    )
