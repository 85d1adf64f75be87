"""Classification: the closed cause enum (`backgroundTag`), `errorType`, `handlingStrategy`
and the topic `tags`.
"""

from __future__ import annotations

import functools
import re

from kverr.records.knowledge.facts import Facts, in_files


def handling_strategy(f: Facts, background: str, validation: str | None) -> str:
    if f.site.severity in ("warning", "info"):
        return "acknowledge"
    if background == "internal-invariant":
        return "report-bug"
    if background == "missing-package":
        return "dependency-install"
    if background in (
        "hardware-unsupported",
        "platform-unsupported",
        "environment",
        "missing-file",
    ):
        return "environment-check"
    if validation:
        return "validation"
    return "configuration-change"


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
    out.extend(tag for tag, globs in f.profile.file_tags if in_files(f.site.file, globs))
    return list(dict.fromkeys(out))


_BACKGROUND = (
    ("deprecated-option", r"deprecat|renamed|will be removed|no longer supported"),
    (
        "missing-package",
        r"pip install|not installed|no module named|please install|install \w+ to|"
        r"check (the )?\w+ install|failed to import|could not import|importerror",
    ),
    (
        "hardware-unsupported",
        r"\bsm ?\d{2,3}|blackwell|hopper|ampere|compute capability|\b[abh]100\b|\bh[12]00\b|"
        r"\bb200\b",
    ),
    (
        "platform-unsupported",
        r"\b(rocm|hip|npu|xpu|mps|musa|hpu|ascend|non-cuda)\b|\bcpu\b(?! memory)|platforms?\b|"
        r"only supports? cuda|on cuda devices",
    ),
    ("hardware-unsupported", r"\bgpus?\b(?! memory)"),
    (
        "model-unsupported",
        r"\b(this|the) model\b|\bmodels? only\b|support\w* [\w /-]{0,40}\bmodels?\b|"
        r"for \{model_arch\}|\{model_arch\} does not|for \w+For(CausalLM|ConditionalGeneration)",
    ),
    (
        "unsupported-config-combination",
        r"mutually exclusive|incompatible|not (yet )?compatible|cannot be (used|combined|enabled) "
        r"(together|at the same time|with)|not (yet )?supported (with|together|when)|"
        r"does not (currently )?support --|conflicts? with|only one of|has no effect without",
    ),
    (
        "missing-dependency-flag",
        r"requires? --|must be (set|enabled|specified|provided) (when|with|if)|"
        r"only (be )?(supported|used|valid|available) (when|with|if)|needs? --|"
        r"should be used with|requires? .{0,40}to be (set|enabled)|"
        r"please (enable|set) .{0,60} when (setting|using)|is required (for|when)",
    ),
    (
        "out-of-range",
        r"\brange\b|between|greater than|less than|at least|at most|\bpositive|non-negative|"
        r"\bexceed|too (large|small|big|many|few)|divisible|multiple of",
    ),
)
_MISSING_FILE = re.compile(
    r"(file|path|directory|dir)\b[^.]{0,40}\b(not found|does not exist|not exist)", re.I
)


@functools.lru_cache(maxsize=16)
def _env_re(prefixes: tuple[str, ...]) -> re.Pattern[str]:
    """A message naming one of the profile's environment variables (`APP_X`) is about the
    environment."""
    names = "|".join(re.escape(p) for p in prefixes)
    return re.compile((rf"\b({names})_[A-Z0-9_]+\b|" if names else "") + "environment variable")


_INTERNAL = re.compile(
    r"must (run|be called) (after|before)|should not happen|unreachable|\bbug\b|internal error|"
    # the order of the code's own calls ("validate_block_size called before block_size was set")
    r"\bcalled (before|after) \w+ (was|were|is|has been) (set|initiali[sz]ed|computed|resolved)|"
    # the code's own promise that it settled the value earlier ("Should be resolved by
    # ModelConfig", "enable_chunked_prefill must be set by this point")
    r"should (be|have been) resolved|by this point",
    re.I,
)
_ADJUSTED = re.compile(
    r"disabl|enabl|set to|setting|automatically|adjust|overrid|fall(ing)? ?back|forc|reset|ignor|"
    r"changed? to|changing|switch|defaults? to|\bdefault\b|will use|using|\buse \S+ as\b|"
    r"turned (on|off)",
    re.I,
)
# A notice that these words describe is about a cause or an advice, not about a setting changed.
_NOT_SUPPORTED = re.compile(
    r"not (yet )?supported|does not support|doesn't support|only supports?|unsupported|"
    r"has no effect|you should|compatibility issues",
    re.I,
)
# What a guard probing the machine says about the cause, when the message does not say it.
_TOPIC_BACKGROUND = {
    "package": "missing-package",
    "file": "missing-file",
    "platform": "platform-unsupported",
    "hardware": "hardware-unsupported",
    "env": "environment",
    "model": "model-unsupported",
}


def background_tag(f: Facts) -> str:
    """The closed cause classification (enum in record.schema.json), first rule that fits.

    Order: what the message says about a cause outside the launch arguments (deprecation,
    a missing package, a code invariant); for a notice, whether it reports a setting changed
    for the user; then the message's own words; then what the guards probe (the platform,
    the GPU, a package, a file); then the shape of the flag conditions.
    """
    site = f.site
    low = f.literal.lower()
    notice = site.severity in ("warning", "info")
    if site.template.is_empty:
        return "internal-invariant"
    for tag, rx in _BACKGROUND[:2]:
        if re.search(rx, low):
            return tag
    if _guard_topic(f, failing=True) == "package" or any(
        r.guard.kind == "try" and "ImportError" in r.guard.test for r in f.readings
    ):
        return "missing-package"
    if _INTERNAL.search(f.literal):
        return "internal-invariant"
    if _MISSING_FILE.search(f.literal) or _guard_topic(f, failing=True) == "file":
        return "missing-file"
    if notice and _ADJUSTED.search(f.literal) and not _NOT_SUPPORTED.search(f.literal):
        return "auto-adjusted"
    for tag, rx in _BACKGROUND[2:]:
        if re.search(rx, low):
            return tag
        if tag == "model-unsupported" and re.search(
            r"\{model_arch\}[^{]* not (yet )?supported|\{model_arch\} does not support", f.message
        ):
            return tag  # the architecture is the runtime value: only the template shows it
    if _env_re(f.profile.env_prefixes).search(f.literal):
        return "environment"
    topic = _guard_topic(f)
    if topic in ("package", "file"):
        topic = ""  # a probe that succeeded ("fastlib is installed") is no missing package
    if topic in _TOPIC_BACKGROUND and not (notice and topic == "model"):
        return _TOPIC_BACKGROUND[topic]
    if notice:
        return "auto-adjusted" if _ADJUSTED.search(f.literal) else "advisory"
    if re.search(
        r"invalid|unknown|unsupported|not supported|not a valid|one of|expect|got|must be|"
        r"should be|only supports?|cannot|can't|must contain|not allowed|does not support|"
        r"doesn't support",
        low,
    ):
        return "invalid-value"
    if any(a.flag and a.op in (">", ">=", "<", "<=") for a in f.direct):
        return "out-of-range"
    direct_flags = [a.flag for a in f.direct if a.flag]
    if len(set(direct_flags + [a.flag for a in f.context if a.flag])) >= 2:
        return "unsupported-config-combination"
    if direct_flags:
        return "invalid-value"
    return "other"


def _guard_topic(f: Facts, *, failing: bool = False) -> str:
    """The topic of the direct guard's probe of something besides flags (`failing`: only a
    probe that failed, e.g. `not is_flashinfer_available()`)."""
    for r in f.readings:
        if r.role != "direct":
            continue  # an enclosing `if is_npu():` frames many checks; the direct one is the cause
        for a in r.atoms:
            if a.flag is None and a.topic in _TOPIC_BACKGROUND and not (failing and a.holds):
                return a.topic
    return ""


_ERROR_TYPE = {
    "deprecated-option": "deprecation",
    "missing-package": "dependency",
    "hardware-unsupported": "compatibility",
    "platform-unsupported": "compatibility",
    "model-unsupported": "compatibility",
    "internal-invariant": "internal",
    "environment": "environment",
    "auto-adjusted": "adjustment",
    "missing-file": "environment",
    "advisory": "advisory",
}


def error_type(background: str) -> str:
    return _ERROR_TYPE.get(background, "validation")
