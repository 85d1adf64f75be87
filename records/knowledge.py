"""The knowledge fields of a record, one plain function per field, all derived from the code.

Inputs are what the extractor saw: the guards on the path (read as flag facts by
`conditions.py`), the flags' declarations (help, default, choices), the comment above the site,
the enclosing docstring and the message itself. A field the code says nothing about stays
empty ("" / [] / None): no boilerplate.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from kverr.records.conditions import (
    Atom,
    Reading,
    cli_arg,
    dest_of,
    earlier_checks,
    join_words,
    parse,
    phrase,
    readings,
    show_value,
)

from kverr.ftypes import FlagDecl, Site


@dataclass(frozen=True)
class Facts:
    """Everything the field functions read, computed once per site."""

    site: Site
    message: str  # Template.display()
    literal: str  # the message's literal text only (placeholders dropped)
    readings: tuple[Reading, ...]
    decls: dict[str, FlagDecl] = field(default_factory=dict)
    pattern: str = ""

    @property
    def direct(self) -> tuple[Atom, ...]:
        return tuple(a for r in self.readings if r.role == "direct" for a in r.atoms)

    @property
    def context(self) -> tuple[Atom, ...]:
        """Facts the site needs besides the direct test: enclosing ifs, and gates on a flag the
        message names (the validator's own switch, e.g. `if not cfg.feature: return`)."""
        out = []
        for r in self.readings:
            if r.role == "enclosing":
                out.extend(a for a in r.atoms if a.flag or a.op == "expr")
            elif r.role == "gate":
                out.extend(a for a in r.atoms if a.positive and _named(a.flag, self.literal))
        return tuple(out)

    @property
    def passed(self) -> tuple[Atom, ...]:
        """Earlier checks the launch already passed, as the positive flag facts they imply."""
        return tuple(
            a
            for r in self.readings
            if r.role == "gate"
            for a in r.atoms
            if a.positive and not _named(a.flag, self.literal)
        )


def _named(flag: str | None, text: str) -> bool:
    return bool(flag) and re.search(re.escape(flag) + r"(?![\w-])", text) is not None


def facts_for(
    site: Site,
    decls: dict[str, FlagDecl] | None = None,
    pattern: str = "",
    siblings: Sequence[Site] = (),
) -> Facts:
    literal = " ".join(p.text or "" for p in site.template.parts if p.is_literal)
    return Facts(
        site=site,
        message=site.template.display(),
        literal=" ".join(literal.split()),
        readings=tuple(readings(site, earlier_checks(site, siblings))),
        decls=decls or {},  # shared, read-only: one map per build
        pattern=pattern,
    )


# ------------------------------------------------------------------ prose helpers


def _prose(text: str | None) -> str:
    """A comment or docstring paragraph as one line of prose, without tool pragmas."""
    if not text:
        return ""
    keep = []
    for line in text.splitlines():
        s = line.strip().lstrip("#").strip()
        if re.match(r"(noqa|type:|pragma|fmt:|pylint|TODO\b|FIXME\b|XXX\b)", s) or _is_code(s):
            continue
        keep.append(s)
    out = " ".join(" ".join(keep).split())
    if out and out[-1] not in ".!?:)":
        out += "."
    return out


def _is_code(line: str) -> bool:
    """A commented-out statement (`self.x = True`), which is not prose for a user."""
    if not re.search(r"[=()\[\]]", line):
        return False
    try:
        ast.parse(line)
    except SyntaxError:
        return False
    return True


def _first_paragraph(doc: str | None) -> str:
    if not doc:
        return ""
    return _prose(re.split(r"\n\s*\n", doc.strip(), maxsplit=1)[0])


def _sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.;!?])\s+(?=[A-Za-z`'\"-])|;\s*", text)
    return [p.strip() for p in parts if p.strip()]


def _choices(flag: str | None, decls: dict[str, FlagDecl]) -> tuple[str, ...] | None:
    d = decls.get(flag or "")
    return d.choices if d and d.choices else None


def _default(flag: str, decls: dict[str, FlagDecl]) -> object:
    d = decls.get(flag)
    if d is None or d.default is None:
        return None
    try:
        return ast.literal_eval(d.default)
    except (ValueError, SyntaxError):
        return None


# ------------------------------------------------------------------ the fields


def documentation(f: Facts) -> str:
    """Why the check exists: the comment above the site, else the enclosing docstring's summary."""
    return _prose(f.site.comment) or _first_paragraph(f.site.docstring)


def trigger_scenarios(f: Facts) -> str:
    """The launch arguments that reach the site, and the earlier checks already passed."""
    atoms = _last_per_flag(list(dict.fromkeys(f.context + f.direct)))
    with_ = [
        phrase(a) for a in atoms if a.positive or (a.flag and a.op not in ("unset", "is None"))
    ]
    without = [a.flag for a in atoms if a.flag and a.op in ("unset", "is None")]
    when = [phrase(a) for a in atoms if a.flag is None]
    if not (with_ or without or when):
        return ""
    bits = []
    if with_:
        bits.append("with " + join_words(with_))
    if without:
        bits.append("without " + join_words(without))
    text = "Launching " + " and ".join(bits) if bits else "Launching"
    if when:
        text += " when " + join_words(when)
    text += "."
    passed = [phrase(a) for a in dict.fromkeys(f.passed)]
    if passed:
        verb = "is" if len(passed) == 1 else "are"
        text += f" The earlier checks of this validator already passed: {join_words(passed)} {verb} set."
    return text


def _last_per_flag(atoms: list[Atom]) -> list[Atom]:
    """Drop a fact that a later one about the same flag implies or refines
    (`--x set` then `--x > 4`; `--x other than a` then `--x=b`)."""
    out = []
    for i, a in enumerate(atoms):
        later = [b for b in atoms[i + 1 :] if a.flag and b.flag == a.flag]
        if any(b.op == "==" for b in later) or (a.positive and later):
            continue
        out.append(a)
    return out


def common_situations(f: Facts) -> str:
    """What the flags involved are for, from their declared help."""
    seen = []
    involved = [fl for a in f.context + f.direct for fl in ((a.flag,) if a.flag else a.flags)]
    for flag in dict.fromkeys(involved or f.site.flags):
        d = f.decls.get(flag)
        if d and d.help:
            helptext = _prose(d.help.split(". ")[0])
            seen.append(f"{flag} ({helptext.rstrip('.')})")
    if not seen:
        return ""
    if len(seen) == 1:
        return f"Seen when the launch command uses {seen[0]}."
    return f"Seen when the launch command combines {join_words(seen)}."


_IMPERATIVE = re.compile(
    r"^(?:please\s+)?(pass|use|set|run|remove|drop|disable|enable|install|unset|try|specify|add|"
    r"choose|consider|increase|decrease|reduce|upgrade|switch|provide|make sure|change|update|"
    r"export|lower|turn|select|rebuild|reinstall|downgrade)\b",
    re.I,
)


def solutions(f: Facts) -> list[str]:
    """Fixes: imperative sentences of the message, then the negation of the direct condition,
    then giving up the validator's own feature."""
    out: list[str] = []
    notice = f.site.severity in ("warning", "info") and "deprecat" not in f.literal.lower()
    for s in _sentences(f.message):
        # A notice often says what the code itself does ("Disable X for model Y"): only a
        # sentence that names a flag or asks the user ("Please ...") is advice there.
        if notice and not (
            re.search(r"(^|\s)--\w", s) or re.match(r"(please|consider|try)\b", s, re.I)
        ):
            continue
        if _IMPERATIVE.match(s):
            s = re.sub(r"^please\s+", "", s, flags=re.I).rstrip(". ")
            out.append(s[0].upper() + s[1:])
    using = [phrase(a) for a in f.context if a.positive]
    for atom in f.direct:
        fix = _fix_words(atom, f.decls)
        if fix:
            if atom.op == "set" and using:
                fix += " when using " + join_words(using)
            out.append(fix)
    for atom in f.context:
        if atom.op == "set":
            out.append(f"Remove {atom.flag} if the deployment can do without it")
        elif atom.positive:
            out.append(_fix_words(atom, f.decls))
    return list(dict.fromkeys(out))


def _fix_words(atom: Atom, decls: dict[str, FlagDecl]) -> str:
    flag, v = atom.flag, atom.value
    if flag is None:
        if not atom.flags:
            return ""
        goal = "holds" if not atom.holds else "no longer holds"
        return f"Change {join_words(list(atom.flags))} so that `{atom.text}` {goal}"
    choices = _choices(flag, decls)
    allowed = f" (declared choices: {', '.join(choices)})" if choices else ""
    words = {
        "set": lambda: f"Remove {flag}",
        "unset": lambda: f"Add {flag}",
        "==": lambda: f"Use a {flag} value other than {show_value(v)}{allowed}",
        "!=": lambda: f"Set {flag}={show_value(v)}",
        "in": lambda: f"Set {flag} to a value other than {_list(v)}{allowed}",
        "not in": lambda: f"Set {flag} to one of {_list(v)}",
        ">": lambda: f"Set {flag} to {show_value(v)} or less",
        ">=": lambda: f"Set {flag} below {show_value(v)}",
        "<": lambda: f"Set {flag} to {show_value(v)} or more",
        "<=": lambda: f"Set {flag} above {show_value(v)}",
        "is None": lambda: f"Set {flag}",
        "is not None": lambda: f"Leave {flag} unset",
    }.get(atom.op)
    return words() if words else ""


def _list(values: tuple) -> str:
    return ", ".join(show_value(x) for x in values)


def example_fix(f: Facts) -> str:
    """`# before` the flags that trigger, `# after` the same with one condition negated."""
    chosen: dict[str, str] = {}  # flag -> fragment; a later fact about a flag refines it
    for atom in f.context + f.passed + f.direct:
        arg = _arg_for(atom, f.decls) if atom.flag else None
        if arg and atom.flag:
            chosen.pop(atom.flag, None)
            chosen[atom.flag] = arg
    before = list(chosen.values())
    target = next((a for a in reversed(f.direct) if a.flag), None)
    target = target or next((a for a in reversed(f.context) if a.flag), None)
    if target is None or not before:
        return ""
    after = [a for a in before if not _is_arg_of(a, target.flag)]
    fixed = _arg_for(target.negated(), f.decls, fixing=True)
    if fixed:
        after.append(fixed)
    if after == before:
        return ""
    return "# before\n" + " ".join(before) + "\n# after\n" + (" ".join(after) or "(no extra flags)")


def _is_arg_of(arg: str, flag: str | None) -> bool:
    return arg == flag or arg.startswith(f"{flag}=")


def _arg_for(atom: Atom, decls: dict[str, FlagDecl], *, fixing: bool = False) -> str | None:
    """A command-line fragment making the atom true; for a fix, dropping the flag is enough
    when its default already satisfies the negated condition."""
    flag = atom.flag
    if flag is None:
        return None
    choices = _choices(flag, decls)
    default = _default(flag, decls)
    if atom.op in ("unset", "is None"):
        return None  # achieved by leaving the flag out
    if atom.op == "set" and _takes_value(decls.get(flag)):
        return f"{flag}={choices[0] if choices else '<value>'}"
    if atom.op in ("!=", "not in"):
        banned = atom.value if atom.op == "not in" else (atom.value,)
        if default is not None and default not in banned:
            return None if fixing else f"{flag}={show_value(default)}"
        return cli_arg(flag, atom.op, atom.value, choices=choices)
    return cli_arg(flag, atom.op, atom.value, choices=choices)


def _takes_value(decl: FlagDecl | None) -> bool:
    """A flag declared with a value (not a store_true switch), so `--x` alone is not enough."""
    if decl is None or (decl.action or "").startswith(("store_", "argparse.BooleanOptional")):
        return False
    if decl.action and "BooleanOptional" in decl.action:
        return False
    kind = (decl.type or "").replace("Optional[", "").strip("]")
    return bool(decl.choices) or (bool(kind) and kind not in ("bool", "'bool'"))


def handling_strategy(f: Facts, background: str, validation: str | None) -> str:
    if f.site.severity in ("warning", "info"):
        return "acknowledge"
    if background == "internal-invariant":
        return "report-bug"
    if background == "missing-package":
        return "dependency-install"
    if background in ("hardware-unsupported", "platform-unsupported", "environment"):
        return "environment-check"
    if validation:
        return "validation"
    return "configuration-change"


def validation_code(f: Facts) -> str | None:
    """A pre-flight check over parsed `args` reproducing the guards, when they only read flags."""
    if f.site.severity not in ("error", "critical"):
        return None
    terms = []
    for r in f.readings:
        expr = _args_expr(r.guard.test, r)
        if expr is None and r.guard.kind == "passed":
            continue  # had that earlier check failed, launching would stop there instead
        if expr is None:
            return None
        terms.append(expr if r.guard.holds else _negate(expr))
    if not terms:
        return None
    msg = f.message or f"{f.site.error_class or 'error'} at {f.site.file}"
    cond = terms[0] if len(terms) == 1 else "(\n    " + "\n    and ".join(terms) + "\n)"
    return f"if {cond}:\n    raise SystemExit({msg!r})"


def _args_expr(test: str, r: Reading) -> str | None:
    node = parse(test)
    if node is None:
        return None
    dests = {dest_of(a.flag) for a in r.atoms if a.flag} | {
        dest_of(fl) for a in r.atoms for fl in a.flags
    }
    dests |= {dest_of(fl) for fl in r.guard.flags}
    node = _ToArgs(dests).visit(node)
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id != "args":
            return None
        if isinstance(n, (ast.Call, ast.Subscript, ast.Lambda, ast.NamedExpr, ast.Await)):
            return None
        if isinstance(n, ast.Attribute) and not (
            isinstance(n.value, ast.Name) and n.value.id == "args"
        ):
            return None
    return ast.unparse(node)


class _ToArgs(ast.NodeTransformer):
    def __init__(self, dests: set[str]) -> None:
        self.dests = dests

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if node.attr in self.dests:
            return ast.Attribute(
                value=ast.Name(id="args", ctx=ast.Load()), attr=node.attr, ctx=ast.Load()
            )
        return self.generic_visit(node)


_INVERSE = {
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot,
    ast.IsNot: ast.Is, ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE, ast.LtE: ast.Gt,
}  # fmt: skip


def _negate(expr: str) -> str:
    """`not expr`, written the way a person would: `x == 1` -> `x != 1`, `not x` -> `x`."""
    node = parse(expr)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return ast.unparse(node.operand)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        node.ops = [_INVERSE[type(node.ops[0])]()]
        return ast.unparse(node)
    if isinstance(node, (ast.Attribute, ast.Name)):
        return f"not {expr}"
    return f"not ({expr})"


def type_guard(f: Facts) -> str | None:
    """The isinstance check the direct condition performs, over parsed `args`."""
    for r in f.readings:
        if r.role != "direct" or "isinstance(" not in r.guard.test:
            continue
        node = parse(r.guard.test)
        for n in ast.walk(node) if node is not None else ():
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Name)
                and n.func.id == "isinstance"
            ):
                dests = {dest_of(fl) for fl in (*r.guard.flags, *f.site.flags)}
                return ast.unparse(_ToArgs(dests).visit(n))
    return None


def try_catch_pattern(f: Facts) -> str | None:
    """How a program launching SGLang catches this error, for raises in the server-args code."""
    site = f.site
    if site.kind != "raise" or not site.error_class or not f.pattern:
        return None
    if not re.search(r"(server_args[^/]*\.py|/arg_groups/)", site.file):
        return None
    handle = next(iter(solutions(f)), "adjust the launch arguments")
    return (
        "import re\n\n"
        "from sglang.srt.server_args import ServerArgs\n\n"
        "try:\n"
        "    server_args = ServerArgs(**kwargs)\n"
        f"except {site.error_class} as exc:\n"
        f"    if not re.search({f.pattern!r}, str(exc)):\n"
        "        raise\n"
        f"    ...  # {handle}"
    )


def prevention_tips(f: Facts, background: str, validation: str | None = None) -> list[str]:
    tips = []
    flags_on = [a.flag for a in f.context + f.direct if a.flag and a.positive]
    if background == "unsupported-config-combination" and len(flags_on) >= 2:
        tips.append(f"Do not put {join_words(list(dict.fromkeys(flags_on)))} in one launch profile")
    for a in f.direct:
        ch = _choices(a.flag, f.decls)
        if ch:
            tips.append(f"Only pass declared values to {a.flag}: {', '.join(ch)}")
    if background == "deprecated-option":
        tips.append(
            "Update launch scripts when upgrading SGLang; deprecated options are removed later"
        )
    if f.site.kind != "assert" and validation:
        tips.append("Run the validationCode check over your arguments before launching")
    return list(dict.fromkeys(tips))


_TOPICS = (
    ("hisparse", r"hisparse"),
    ("kv-cache", r"kv[-_ ]?cache"),
    ("radix-cache", r"radix"),
    ("hierarchical-cache", r"hierarchical[-_ ]cache|hicache"),
    ("lmcache", r"lmcache"),
    ("cuda-graph", r"cuda[-_ ]graph"),
    ("speculative-decoding", r"speculative|eagle|dspark|\bdraft"),
    ("disaggregation", r"disaggregation|\bpd\b"),
    ("attention-backend", r"attention[-_ ]backend|prefill[-_ ]backend|decode[-_ ]backend"),
    ("quantization", r"quantiz|\bfp8|fp4|mxfp8|\bint[48]\b|\bawq\b|gptq"),
    ("lora", r"\blora"),
    ("moe", r"\bmoe\b|expert"),
    ("parallelism", r"\b(tp|pp|dp|ep|cp|dcp|attn-cp)[-_]size|parallel"),
    ("memory", r"mem[-_]fraction|unified[-_]memory|memory"),
    ("multimodal", r"multimodal|vision|\bimage"),
    ("embedding", r"embedding"),
    ("chunked-prefill", r"chunked[-_]prefill"),
    ("scheduling", r"schedul|priority"),
    ("mamba", r"mamba"),
    ("sparse-attention", r"sparse"),
    ("tokenizer", r"tokenizer"),
    ("grammar", r"grammar"),
    ("sampling", r"sampling"),
)


def tags(f: Facts, repo: str) -> list[str]:
    main = [a.flag or " ".join(a.flags) for a in f.context + f.direct]
    text = (" ".join(main) + " " + f.literal).lower()
    out = []
    name = repo.rsplit("/", 1)[-1].lower()
    if re.fullmatch(r"[a-z0-9][a-z0-9.+_-]*", name):
        out.append(name)
    out.extend(tag for tag, rx in _TOPICS if re.search(rx, text))
    if re.search(r"(server_args|/arg_groups/)", f.site.file):
        out.append("server-args")
    return list(dict.fromkeys(out))


_BACKGROUND = (
    ("deprecated-option", r"deprecat|renamed|will be removed|no longer supported"),
    ("missing-package", r"pip install|not installed|no module named|please install|install \w+ to"),
    (
        "platform-unsupported",
        r"\b(rocm|hip|npu|xpu|cpu|mps|musa|hpu|ascend|non-cuda)\b|platforms?\b",
    ),
    (
        "hardware-unsupported",
        r"\bsm ?\d{2,3}|blackwell|hopper|ampere|compute capability|\bgpus?\b|\b[abh]100\b|\bh200\b|\bb200\b",
    ),
    (
        "model-unsupported",
        r"\b(this|the) model\b|\bmodels? only\b|support\w* [\w /-]{0,40}\bmodels?\b",
    ),
    (
        "unsupported-config-combination",
        r"mutually exclusive|incompatible|not (yet )?compatible|cannot be (used|combined|enabled) "
        r"(together|at the same time|with)|not (yet )?supported (with|together)|"
        r"does not (currently )?support --|conflicts? with|only one of",
    ),
    (
        "missing-dependency-flag",
        r"requires? --|must be (set|enabled|specified|provided) (when|with|if)|"
        r"only (be )?(supported|used|valid|available) (when|with|if)|needs? --|"
        r"should be used with|requires? .{0,40}to be (set|enabled)",
    ),
    (
        "out-of-range",
        r"\brange\b|between|greater than|less than|at least|at most|\bpositive|non-negative|"
        r"\bexceed|too (large|small|big|many|few)|divisible|multiple of",
    ),
)
_ENV = re.compile(
    r"\b(SGLANG|CUDA|NCCL|HF|TORCH|PYTORCH|NVSHMEM|ROCM|HIP|TRITON|MC)_[A-Z0-9_]+\b|environment variable"
)
_INTERNAL = re.compile(
    r"must (run|be called) (after|before)|should not happen|unreachable|\bbug\b|internal error",
    re.I,
)
_ADJUSTED = re.compile(
    r"disabl|enabl|set to|setting|automatically|adjust|overrid|fall(ing)? ?back|forc|reset|ignor|"
    r"changed? to|switch|defaults? to|will use|using",
    re.I,
)


def background_tag(f: Facts) -> str:
    """The closed cause classification (enum in record.schema.json), first rule that fits."""
    site = f.site
    low = f.literal.lower()
    if site.template.is_empty:
        return "internal-invariant"
    for tag, rx in _BACKGROUND[:2]:
        if re.search(rx, low):
            return tag
    if _INTERNAL.search(f.literal):
        return "internal-invariant"
    for tag, rx in _BACKGROUND[2:]:
        if re.search(rx, low):
            return tag
    if _ENV.search(f.literal):
        return "environment"
    if site.severity in ("warning", "info"):
        return "auto-adjusted" if _ADJUSTED.search(f.literal) else "advisory"
    if re.search(
        r"invalid|unknown|unsupported|not supported|not a valid|one of|expect|got|must be|should be",
        low,
    ):
        return "invalid-value"
    if any(a.flag and a.op in (">", ">=", "<", "<=") for a in f.direct):
        return "out-of-range"
    direct_flags = [a.flag for a in f.direct if a.flag]
    if len(set(direct_flags + [a.flag for a in f.context if a.flag])) >= 2:
        return "unsupported-config-combination"
    return "other"


_ERROR_TYPE = {
    "deprecated-option": "deprecation",
    "missing-package": "dependency",
    "hardware-unsupported": "compatibility",
    "platform-unsupported": "compatibility",
    "model-unsupported": "compatibility",
    "internal-invariant": "internal",
    "environment": "environment",
    "auto-adjusted": "adjustment",
    "advisory": "advisory",
}


def error_type(background: str) -> str:
    return _ERROR_TYPE.get(background, "validation")


def knowledge_fields(f: Facts, repo: str) -> dict[str, object]:
    """All knowledge fields of one record."""
    background = background_tag(f)
    validation = validation_code(f)
    return {
        "documentation": documentation(f),
        "triggerScenarios": trigger_scenarios(f),
        "commonSituations": common_situations(f),
        "solutions": solutions(f),
        "exampleFix": example_fix(f),
        "handlingStrategy": handling_strategy(f, background, validation),
        "validationCode": validation,
        "typeGuard": type_guard(f),
        "tryCatchPattern": try_catch_pattern(f),
        "preventionTips": prevention_tips(f, background, validation),
        "tags": tags(f, repo),
        "backgroundTag": background,
        "errorType": error_type(background),
    }
