"""Quality figures for the knowledge fields of a built dataset.

    python scripts/knowledge_stats.py DATASET_DIR [--json]

Prints, over the records of DATASET_DIR/records.jsonl: how many records leave each knowledge
field empty, the backgroundTag distribution, the average and longest triggerScenarios length,
and a few smells a reader would notice (a "..." cut in the trigger, "<value>" or
"(no extra flags)" placeholders in exampleFix, validationCode that does not compile).
Run it before and after a change to records/knowledge/ and compare.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

FIELDS = (
    "documentation",
    "triggerScenarios",
    "commonSituations",
    "solutions",
    "exampleFix",
    "validationCode",
    "typeGuard",
    "tryCatchPattern",
    "preventionTips",
    "tags",
)


def load(dataset_dir: Path) -> list[dict]:
    path = dataset_dir / "records.jsonl"
    if not path.is_file():
        raise SystemExit(
            f"{path} does not exist; build a dataset first with `kverr build ... --out {dataset_dir}`."
        )
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line)["record"] for line in fh if line.strip()]


def _compiles(code: str) -> bool:
    try:
        compile(code, "<validationCode>", "exec")
    except SyntaxError:
        return False
    return True


def stats(records: list[dict]) -> dict:
    n = len(records)
    empty = {f: sum(1 for r in records if not r.get(f)) for f in FIELDS}
    triggers = [len(r["triggerScenarios"]) for r in records if r["triggerScenarios"]]
    errors = [r for r in records if r["severity"] in ("error", "critical")]
    smells = {
        "trigger cut with '...'": sum("..." in r["triggerScenarios"] for r in records),
        "trigger over 300 chars": sum(len(r["triggerScenarios"]) > 300 for r in records),
        "trigger with 'is false'": sum("is false" in r["triggerScenarios"] for r in records),
        "exampleFix with <value>": sum("<value>" in (r["exampleFix"] or "") for r in records),
        "exampleFix '(no extra flags)'": sum(
            "(no extra flags)" in (r["exampleFix"] or "") for r in records
        ),
        "validationCode not compiling": sum(
            1 for r in records if r["validationCode"] and not _compiles(r["validationCode"])
        ),
        "errors without solutions": sum(1 for r in errors if not r["solutions"]),
        "errors without validationCode": sum(1 for r in errors if not r["validationCode"]),
    }
    return {
        "records": n,
        "errors": len(errors),
        "empty": empty,
        "backgroundTag": dict(Counter(r["backgroundTag"] for r in records).most_common()),
        "triggerAvgChars": round(sum(triggers) / len(triggers), 1) if triggers else 0.0,
        "triggerMaxChars": max(triggers, default=0),
        "smells": smells,
    }


def show(s: dict) -> str:
    out = [f"records: {s['records']} ({s['errors']} error/critical)", "empty fields:"]
    out += [f"  {k:<18} {v:4d}" for k, v in s["empty"].items()]
    out.append("backgroundTag:")
    out += [f"  {k:<32} {v:4d}" for k, v in s["backgroundTag"].items()]
    out.append(f"triggerScenarios: avg {s['triggerAvgChars']} chars, max {s['triggerMaxChars']}")
    out.append("smells:")
    out += [f"  {k:<32} {v:4d}" for k, v in s["smells"].items()]
    return "\n".join(out)


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    if len(args) != 1:
        print("usage: knowledge_stats.py DATASET_DIR [--json]", file=sys.stderr)
        return 2
    s = stats(load(Path(args[0])))
    print(json.dumps(s, indent=2) if "--json" in argv else show(s))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
