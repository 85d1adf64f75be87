"""The projects a catalog holds, as `kverr explain` needs them: from each dataset's manifest.

A dataset built with a profile records it in its manifest (`project`, `profile`: the profile's
TOML tables). The catalog keeps what explain uses (name, product, launch command, log forms)
in its meta table, so explain never reads TOML. A dataset older than profiles belongs to the
default project.
"""

from __future__ import annotations

from typing import Any

from kverr import regexsafe


def project_info(manifest: dict[str, Any], where: str) -> tuple[dict[str, Any], list[str]]:
    """(what explain needs of the dataset's project, warnings about log forms left out)."""
    tables = manifest.get("profile")
    if not isinstance(tables, dict) or not isinstance(tables.get("name"), str):
        from kverr.profile import as_tables, default_profile

        tables = as_tables(default_profile())  # built before profiles: the default project
    explain = tables.get("explain") if isinstance(tables.get("explain"), dict) else {}
    launch = tables.get("launch") if isinstance(tables.get("launch"), dict) else {}
    warnings: list[str] = []
    forms: dict[str, list[str]] = {}
    for key, suffix in (("log_prefixes", False), ("log_suffixes", True)):
        forms[key] = []
        for form in explain.get(key) or []:
            why = (
                regexsafe.line_form_problem(form, suffix=suffix)
                if isinstance(form, str)
                else ("it is not a string")
            )
            if why:
                warnings.append(f"{where}: log form {form!r} skipped because {why}")
            else:
                forms[key].append(form)
    command = str(launch.get("command") or "")
    programs = explain.get("programs")
    if not isinstance(programs, list):  # a dataset built before profiles named them
        programs = default_programs(command)
    info = {
        "name": str(tables["name"]),
        "product": str(tables.get("product") or tables["name"]),
        "repository": tables.get("repository"),
        "launch": command.replace("{model}", str(launch.get("model") or "MODEL")),
        "logPrefixes": forms["log_prefixes"],
        "logSuffixes": forms["log_suffixes"],
        "verify": "verify" in tables,
        "programs": [str(p) for p in programs],
    }
    return info, warnings


def default_programs(command: str) -> list[str]:
    """The names argparse gives a launch command (`python -m pkg.mod ...` -> mod.py, the
    package; `tool serve ...` -> tool, tool serve)."""
    words = command.split()
    if words[1:2] == ["-m"] and len(words) > 2:
        module = words[2]
        return [module.rsplit(".", 1)[-1] + ".py", module, module.split(".", 1)[0]]
    head = [w for w in words[:2] if not w.startswith(("-", "{"))]
    return [" ".join(head[:n]) for n in range(1, len(head) + 1)]
