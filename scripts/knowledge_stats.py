"""Quality figures for the knowledge fields of a built dataset.

    python scripts/knowledge_stats.py DATASET_DIR [--json] [--list]
    python scripts/knowledge_stats.py --steps LABEL=DIR LABEL=DIR ... [--json]

Prints, over the records of DATASET_DIR/records.jsonl: the meaning figures (records with a
"Learn more" docs link, documentation with a "why" part, sentences on more than 5% of the
records (stock text, target 0), prose holding template text such as `{self.x}`, `self.` or
`()` (target 0)); the verification figures of a
`kverr build --verify` (per status; raise/assert records of the newest commit with a verified
fix; fixes shown though not verified), how many records leave each knowledge field empty (documentation is "What it means"), the backgroundTag distribution, the average and
longest triggerScenarios length, and a few smells a reader would notice (a "..." cut in the
trigger, "<value>" or "(no extra flags)" placeholders in exampleFix, validationCode that does not
compile, an exampleFix that only deletes a flag, a notice "fixed" by giving up a feature).
Run it before and after a change to records/knowledge/ and compare.

`--sample N` prints, instead, a review sheet of N records other than the parser's (`--seed S`,
20261207 unless given, draws the same ones from the same dataset): each with its source, its
message and every knowledge field, for a maintainer to grade.

`--steps` compares builds of the same source made by successive versions of kverr (one per
change): for each step, how many records its change touched (any knowledge field differs from
the step before, by record id), per field, next to the headline figures. Build each step
with the same command, e.g. `kverr build --git MIRROR --rev 3d3a32c0b --out /tmp/k-<label>`.
"""

from __future__ import annotations

import json
import random
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from kverr import io, template

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
    return [obj["record"] for _, obj in io.iter_objects(path)]


def _compiles(code: str) -> bool:
    try:
        compile(code, "<validationCode>", "exec")
    except SyntaxError:
        return False
    return True


KNOWLEDGE = (*FIELDS, "flags", "backgroundTag", "errorType", "handlingStrategy", "verification")


def _fix_flags(line: str) -> list[str]:
    return [t for t in line.split() if t.startswith("--") and not t.startswith("--model-path")]


def deletes_only(fix: str | None) -> bool:
    """An exampleFix whose after line is the before line minus flags: it gives a feature up."""
    lines = (fix or "").splitlines()
    if len(lines) != 4:
        return False
    before, after = _fix_flags(lines[1]), _fix_flags(lines[3])
    return len(after) < len(before) and set(after) <= set(before)


def _gives_up(rec: dict) -> bool:
    """A notice (expected behaviour) whose fix is to remove or avoid what the launch asked for."""
    if rec["severity"] not in ("warning", "info") or rec["backgroundTag"] == "deprecated-option":
        return False
    return any(
        s.startswith(("Remove ", "Use a ")) or "value other than" in s for s in rec["solutions"]
    )


PROSE = ("documentation", "triggerScenarios", "commonSituations", "solutions", "preventionTips")
STOCK_SHARE = 0.05  # a sentence on more than this share of the records is boilerplate
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`])")
_CODE_SPAN = re.compile(r"`([^`]*)`")
_FLAG_DOC = re.compile(r"--[a-z][\w.-]*: [^:]+\.$")


def prose_texts(rec: dict) -> Iterator[tuple[str, str]]:
    """(field, text) of each of a record's prose texts (each item of a list field)."""
    for field in PROSE:
        value = rec.get(field) or []
        for text in [value] if isinstance(value, str) else value:
            yield field, text or ""


def prose_sentences(rec: dict) -> set[str]:
    """Every sentence of a record's prose fields (each list item a sentence or more)."""
    return {s.strip() for _, text in prose_texts(rec) for s in _SENTENCE.split(text) if s.strip()}


def _shape(sentence: str) -> str:
    """A sentence with its options, values and code masked: the wording a template repeats."""
    text = _CODE_SPAN.sub("`_`", sentence)
    text = re.sub(r"--[a-z][\w.-]*", "--X", text)
    return re.sub(r"\b\d[\w.]*\b", "N", text)


def stock(records: list[dict], shape: bool = False) -> list[tuple[str, int]]:
    """Sentences (or, with `shape`, sentence shapes) found on more than STOCK_SHARE of the
    records, most common first."""
    counts: Counter = Counter()
    for rec in records:
        # "--flag: what it does." is that flag's own documentation, which each record of the
        # flag rightly opens with (a family of 90 attention-backend checks): not a template
        mine = {s for s in prose_sentences(rec) if not _FLAG_DOC.match(s)}
        counts.update({_shape(s) for s in mine} if shape else mine)
    limit = STOCK_SHARE * len(records)
    return [(s, n) for s, n in counts.most_common() if n > limit]


def leaks(text: str) -> list[str]:
    """Template text in prose: a brace outside a code span, a `{name}` placeholder inside
    one (a code span may hold JSON: `--x '{"a": 1}'`), `self.`, empty parentheses outside a
    code span (a call inside one, `path.is_file()`, is code as written), an announced list
    left empty (": .")."""
    spans = _CODE_SPAN.findall(text or "")
    plain = _CODE_SPAN.sub("`_`", text or "")
    found = []
    if "{" in plain or "}" in plain or any(template.NAMED.search(s) for s in spans):
        found.append("brace")
    if re.search(r"\bself\.", text or ""):
        found.append("self.")
    if re.search(r"\(\s*\)", plain):
        found.append("()")
    if re.search(r":\s*\.", plain):  # a list the sentence announced came out empty
        found.append(": .")
    return found


def leaking(records: list[dict]) -> list[tuple[str, str, str]]:
    """(record id, field, text) for each prose field holding template text."""
    return [(r["id"], f, text) for r in records for f, text in prose_texts(r) if leaks(text)]


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
        "exampleFix only deleting flags": sum(deletes_only(r["exampleFix"]) for r in records),
        "notice fixed by giving up": sum(_gives_up(r) for r in records),
        "errors without solutions": sum(1 for r in errors if not r["solutions"]),
        "errors without validationCode": sum(1 for r in errors if not r["validationCode"]),
    }
    meaning = {
        "docs link (learnMore)": sum(bool(r.get("learnMore")) for r in records),
        "documentation with a why": sum(bool((r.get("meaning") or {}).get("why")) for r in records),
        "errors with a why": sum(bool((r.get("meaning") or {}).get("why")) for r in errors),
        "stock sentences (>5%)": len(stock(records)),
        "stock shapes (>5%)": len(stock(records, shape=True)),
        "template leaks": len(leaking(records)),
    }
    return {
        "records": n,
        "errors": len(errors),
        "meaning": meaning,
        "verification": verification(records),
        "empty": empty,
        "backgroundTag": dict(Counter(r["backgroundTag"] for r in records).most_common()),
        "triggerAvgChars": round(sum(triggers) / len(triggers), 1) if triggers else 0.0,
        "triggerMaxChars": max(triggers, default=0),
        "smells": smells,
    }


def verification(records: list[dict]) -> dict:
    """What `kverr build --verify` found: records per status; raise/assert records of the
    newest commit with a verified fix; fixes shown though not verified (only where the check
    could not run at all, e.g. a stub decided a branch)."""
    status = Counter((r.get("verification") or {}).get("status", "absent") for r in records)
    shas = [r["analyzedSha"] for r in records if r.get("analyzedSha")]
    newest = Counter(shas).most_common(1)[0][0] if shas else None
    errors = [r for r in records if r["analyzedSha"] == newest and r["kind"] in ("raise", "assert")]
    ok = sum((r.get("verification") or {}).get("status") == "verified" for r in errors)
    return {
        **{k: status.get(k, 0) for k in ("verified", "unverified", "not-applicable", "absent")},
        "errorsNewest": len(errors),
        "verifiedErrorsNewest": ok,
        "fixShownUnverified": sum(
            bool(r.get("exampleFix")) and (r.get("verification") or {}).get("status") != "verified"
            for r in records
        ),
    }


def show(s: dict) -> str:
    v = s["verification"]
    out = [
        f"records: {s['records']} ({s['errors']} error/critical)",
        f"verification: {v['verified']} verified, {v['unverified']} unverified, "
        f"{v['not-applicable']} not applicable; raise/assert at the newest commit: "
        f"{v['verifiedErrorsNewest']} of {v['errorsNewest']} verified; "
        f"{v['fixShownUnverified']} fixes shown unverified",
    ]

    def counts(key: str, width: int, title: str = "") -> list[str]:
        return [f"{title or key}:", *(f"  {k:<{width}} {n:4d}" for k, n in s[key].items())]

    out += [*counts("empty", 18, "empty fields"), *counts("meaning", 28)]
    out += counts("backgroundTag", 32)
    out.append(f"triggerScenarios: avg {s['triggerAvgChars']} chars, max {s['triggerMaxChars']}")
    return "\n".join([*out, *counts("smells", 32)])


HEADLINE = (  # (name, group of stats(), figure)
    ("verified fixes", "verification", "verified"),
    ("newest raise/assert verified", "verification", "verifiedErrorsNewest"),
    ("fix shown unverified", "verification", "fixShownUnverified"),
    ("no 'What it means'", "empty", "documentation"),
    ("docs link", "meaning", "docs link (learnMore)"),
    ("why part", "meaning", "documentation with a why"),
    ("stock sentences", "meaning", "stock sentences (>5%)"),
    ("template leaks", "meaning", "template leaks"),
    ("no exampleFix", "empty", "exampleFix"),
    ("fix only deletes flags", "smells", "exampleFix only deleting flags"),
    ("notice gives up", "smells", "notice fixed by giving up"),
    ("errors w/o validationCode", "smells", "errors without validationCode"),
)


def steps(labelled: list[tuple[str, list[dict]]]) -> list[dict]:
    """Per step: records changed against the step before (any knowledge field), per field, and
    the headline figures of the step's own build."""
    out = []
    prev: dict[str, dict] = {}
    for i, (label, recs) in enumerate(labelled):
        by_id = {r["id"]: r for r in recs}
        fields: Counter = Counter()
        changed = 0
        for rid, rec in by_id.items():
            old = prev.get(rid)
            diff = [f for f in KNOWLEDGE if old is not None and rec.get(f) != old.get(f)]
            fields.update(diff)
            changed += bool(diff)
        s = stats(recs)
        out.append(
            {
                "step": label,
                "records": len(recs),
                "changed": changed if i else None,
                "fields": dict(fields.most_common()),
                **{name: s[group][key] for name, group, key in HEADLINE},
            }
        )
        prev = by_id
    return out


def show_steps(rows: list[dict]) -> str:
    head = ["step", "records", "changed", *(name for name, *_ in HEADLINE)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["step"], r["records"], "-" if r["changed"] is None else r["changed"]]
        cells += [r[name] for name, *_ in HEADLINE]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    lines.append("")
    for r in rows[1:]:
        detail = ", ".join(f"{k} {v}" for k, v in r["fields"].items()) or "nothing"
        lines.append(f"{r['step']}: {detail}")
    return "\n".join(lines)


SHEET_FIELDS = ("documentation", "commonSituations", "triggerScenarios", "solutions",
                "preventionTips", "exampleFix", "verification")  # fmt: skip


def sample(records: list[dict], n: int, seed: int) -> list[dict]:
    """`n` records other than the parser's, drawn with `seed` from the records in id order."""
    pool = sorted((r for r in records if r.get("kind") != "argparse"), key=lambda r: r["id"])
    return random.Random(seed).sample(pool, min(n, len(pool)))


def sheet(rec: dict) -> str:
    """One record as a reviewer reads it: where, what it says, its code, every field."""
    head = f"{rec['id']} {rec['kind']} {rec['severity']} {rec['filePath']}:{rec['lineNumber']}"
    lines = [head, f"flags: {' '.join(rec.get('flags') or []) or '-'}"]
    lines.append(f"message: {rec.get('errorMessage') or '-'}")
    lines += ["source:", *("  | " + ln for ln in (rec.get("sourceCode") or "").splitlines())]
    for field in SHEET_FIELDS:
        value = rec.get(field)
        if isinstance(value, list):
            lines += [f"{field}:", *(f"  - {v}" for v in value)] if value else [f"{field}: -"]
        elif isinstance(value, dict):
            lines.append(f"{field}: {json.dumps(value, sort_keys=True)}")
        else:
            lines += [f"{field}:", *("  " + ln for ln in (value or "-").splitlines())]
    return "\n".join(lines)


def _option(argv: list[str], name: str, default: int) -> int:
    """The number after `name` in `argv` (both taken out of it), else `default`."""
    at = argv.index(name) if name in argv else -1
    if 0 <= at < len(argv) - 1 and argv[at + 1].isdigit():
        del argv[at]
        return int(argv.pop(at))
    return default


def main(argv: list[str]) -> int:
    if "--sample" in argv:
        argv = list(argv)
        n, seed = _option(argv, "--sample", 30), _option(argv, "--seed", 20261207)
        args = [a for a in argv if not a.startswith("--")]
        if len(args) != 1:
            print("usage: knowledge_stats.py DATASET_DIR --sample N [--seed S]", file=sys.stderr)
            return 2
        print("\n\n".join(sheet(r) for r in sample(load(Path(args[0])), n, seed)))
        return 0
    args = [a for a in argv if not a.startswith("--")]
    if "--steps" in argv:
        pairs = [a.partition("=") for a in args]
        if len(pairs) < 2 or any(not sep for _, sep, _ in pairs):
            print(
                "usage: knowledge_stats.py --steps LABEL=DIR LABEL=DIR ... [--json]",
                file=sys.stderr,
            )
            return 2
        rows = steps([(label, load(Path(d))) for label, _, d in pairs])
        print(json.dumps(rows, indent=2) if "--json" in argv else show_steps(rows))
        return 0
    if len(args) != 1:
        print("usage: knowledge_stats.py DATASET_DIR [--json] [--list]", file=sys.stderr)
        return 2
    recs = load(Path(args[0]))
    s = stats(recs)
    print(json.dumps(s, indent=2) if "--json" in argv else show(s))
    if "--list" in argv:
        for text, count in stock(recs):
            print(f"stock ({count}): {text}")
        for rid, field, text in leaking(recs):
            print(f"leak {rid} {field}: {text[:160]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
