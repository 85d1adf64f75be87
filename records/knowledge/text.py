"""Prose: comments, docstrings and the message's own sentences, read as text a user can take;
the `documentation` field (why the check exists).
"""

from __future__ import annotations

import re

from kverr.extractor.pysource import module_or_none
from kverr.records.conditions import Atom
from kverr.records.knowledge import docs, notices
from kverr.records.knowledge.facts import (
    Facts,
    is_switch,
    known_default,
    meets_default,
    takes_value,
)
from kverr.records.names import in_place

from kverr import template
from kverr.ftypes import FlagDecl, Profile

# "NOTE(woosuk): In V1, ...": the author's tag is no part of what the comment says
_NOTE = re.compile(r"^(?:NOTE|Note|N\.B\.)(?:\s*\([\w.@-]{1,40}\))?:\s*")


def _prose(text: str | None) -> str:
    """A comment or docstring paragraph as one line of prose, without tool pragmas."""
    if not text:
        return ""
    keep: list[str] = []
    for line in text.splitlines():
        s = line.strip().lstrip("#").strip()
        if re.match(r"(noqa|type:|pragma|fmt:|pylint|TODO\b|FIXME\b|XXX\b)", s) or _is_code(s):
            continue
        if keep and _ended(keep[-1]) and _BEGINS.match(s):
            keep[-1] += "."  # (a line of its own: "Hybrid case: ... block size\nMemory blocks")
        elif keep and _STRAY.search(keep[-1]) and _CONTINUES.match(s) and not _is_code(s):
            keep[-1] = keep[-1][:-1]  # ("... are supported.\nfor piecewise compilation."
        keep.append(_NOTE.sub("", s))
    out = capitalised(" ".join(" ".join(keep).split()))
    if out and out[-1] not in ".!?:)":
        out += "."
    return out


# A comment line that ends a statement without a period, and one that starts the next: a
# line ending in a word that needs more ("supported by") runs on, as does a capital that
# is a name ("FlashInfer", "CUDA").
_RUNS_ON = {"the", "a", "an", "of", "to", "and", "or", "by", "for", "with", "in", "on", "as", "is",
            "be", "than", "from", "into", "at", "if", "when", "that", "which"}  # fmt: skip
_BEGINS = re.compile(r"[A-Z][a-z]+\b")


# a period after a plain word, at the end of a line the next one continues in lower case: a
# slip of the pen, not the end of a sentence (an abbreviation such as "e.g." keeps it)
_STRAY = re.compile(r"(?<![\w.])[A-Za-z]{3,}\.$")
# ... and a line that goes on from it: one opening with a word no sentence starts with
_CONTINUES = re.compile(r"(?:for|of|to|and|or|with|in|on|by|as|than|from|into|at|which)\s")


def _ended(line: str) -> bool:
    words = line.split()
    return bool(words) and line[-1] not in ".!?:;,-(" and words[-1].lower() not in _RUNS_ON


def _is_code(line: str) -> bool:
    """A commented-out statement (`self.x = True`), which is not prose for a user."""
    return bool(re.search(r"[=()\[\]]", line)) and module_or_none(line) is not None


def _first_paragraph(doc: str | None) -> str:
    if not doc:
        return ""
    return _prose(re.split(r"\n\s*\n", doc.strip(), maxsplit=1)[0])


# "Possible solutions:\n1. set --x ...\n2. ...": a numbered item on a line of its own
_ITEM = re.compile(r"\n[ \t]*\d{1,2}[.)][ \t]+")


def _sentences(text: str) -> list[str]:
    """Sentences and clauses; each item of a numbered list is one, without its number."""
    text = docs.held(_ITEM.sub("\x00", text))
    parts = re.split(r"(?<=[.;!?])\s+(?=[A-Za-z`'\"-])|;\s*|\x00", text)
    return [docs.unheld(p).strip() for p in parts if p.strip()]


def feature_flags(f: Facts) -> list[str]:
    """The flags a check is about, the feature first: for an error, the flags its message
    names, in the order it names them ("--lora-paths must ..." is about --lora-paths, not the
    --enable-lora its guard reads); then the validator's own switch (a flag the enclosing
    guards need on), the flags of the direct condition, and the site's."""
    on = _turned_on(f)
    direct = [a.flag for a in f.direct if a.flag] + [fl for a in f.direct for fl in a.flags]
    flags = list(dict.fromkeys([*on, *direct, *f.site.flags]))
    if not (notices.is_notice(f) and notices.did(f)):  # (`instead` names what it adjusts)
        flags.sort(key=lambda fl: _named_at(fl, f.decls.get(fl), f.message))
    flags = in_place(f.site, flags)
    # The model option names what is served, not a feature: it comes last.
    model = model_option(f.profile)
    return [fl for fl in flags if fl != model] + [fl for fl in flags if fl == model]


def _named_at(flag: str, decl: FlagDecl | None, message: str) -> tuple[int, int]:
    """How and where the message first names `flag`, as a sort key: (0, at) by its option
    string or its dest as code (in a placeholder, or a word with an underscore:
    `max_loaded_loras={...}`); (1, at) by its words only ("Tensor parallel size (...) cannot
    be larger" names --tensor-parallel-size; an option named outright comes first); (2, 0)
    when it does not (a one-word option such as `kernel` is also a plain word)."""
    at = [m.start() for m in [re.search(re.escape(flag) + r"(?![\w-])", message)] if m]
    dest = decl.dest if decl is not None else ""
    dest = dest.rpartition(".")[2]  # (a config's field by its own name: `num_speculative_tokens`)
    if dest:
        code = rf"(?<![\w.])(?:self\.)?{re.escape(dest)}\b"
        for m in re.finditer(r"\{[^{}]*\}|[^{}]+", message):
            inside = m.group().startswith("{")
            if inside or "_" in dest:
                found = re.search(code, m.group())
                if found:
                    at.append(m.start() + found.start())
                    break
    if at:
        return 0, min(at)
    words = flag.lstrip("-").rpartition(".")[2].replace("_", "-").split("-")
    # (a switch is named by what it switches: "Chunked prefill is not supported ..." names
    # --enable-chunked-prefill; a size by what it sizes, its last word as a stem, or its
    # initials, as the subject the message opens with: "Decode Context Parallelism (DCP)
    # requires ..." names --decode-context-parallel-size, "... not compatible with chunked
    # prefill" is about some other feature)
    # (a config option by the feature it configures: "Speculative decoding is not yet
    # supported ..." names --speculative-config; one word only when it is no common one)
    feature = words[:-1] if words[-1:] == ["config"] else []
    for named in (words, words[1:] if words[0] in ("enable", "disable", "use") else [], feature):
        if len(named) > 1 or (named is feature and named and len(named[0]) >= 6):
            said = re.search(r"(?<![\w-])" + r"[ _-]".join(map(re.escape, named)) + r"(?![\w-])",
                             message, re.I)  # fmt: skip
            if said:
                return 1, said.start()
        core = named[:-1] if named[-1:] == ["size"] else []
        if len(core) > 1:
            stem = r"[ _-]".join(map(re.escape, core)) + r"\w*"
            initials = "".join(w[0] for w in core).upper()
            if re.match(rf"(?:the )?(?:{stem}|(?-i:{initials}))(?![\w-])", message, re.I):
                return 1, 0
    return 2, 0


def _named(flag: str, decl: FlagDecl | None, message: str) -> bool:
    return _named_at(flag, decl, message)[0] < 2


def model_option(profile: Profile) -> str:
    """The option the launch command names its model with (`--model-path {model}`), else
    `--model` (a positional model, as `serve {model}`, is that option too)."""
    words = profile.launch.split()
    at = words.index("{model}") if "{model}" in words else -1
    return words[at - 1] if at > 0 and words[at - 1].startswith("--") else "--model"


def meaning(f: Facts) -> dict[str, str]:
    """ "What it means" in up to three parts, each only where a source says it: `what` the
    feature is (the docs' entry for its flag, else its help), `why` this launch is refused
    (the comment at the check, the message's own explanation, the enclosing docstring when it
    explains, else a rule the docs state about these flags), `instead` what the project does
    (a notice). Never a restated help text or an unrelated helper's docstring."""
    flags = feature_flags(f)
    instead = notices.did(f) if notices.is_notice(f) else ""
    # the first of them the docs or its help describe (the model option only when alone, and
    # not for a notice that says what the project does: it names what is served, no feature)
    model = model_option(f.profile)
    left = _left_as_is(f)
    described = [
        fl
        for fl in flags
        if fl != model and (fl not in left or _named(fl, f.decls.get(fl), f.message))
    ] or [fl for fl in flags[:1] if fl == model and not instead]
    if f.served:
        # A request's own value fails it ("data_parallel_rank must be non-negative"): the
        # launch option it runs under says where the check is, not what it is about.
        tested = {a.flag for a in f.direct if a.flag} | {fl for a in f.direct for fl in a.flags}
        around = {a.flag for a in f.context if a.flag} - tested
        described = [
            fl for fl in described if fl not in around or _named(fl, f.decls.get(fl), f.message)
        ]
    said = [(fl, w) for fl, w in ((fl, what_is(fl, f)) for fl in described) if w][:1]
    # A check of a combination is about two features: besides the flag its message names
    # first, the switch its guard needs on ("DeepEP needs DP attention" is about DeepEP too)
    said += [
        (fl, w)
        for fl in [fl for fl in _turned_on(f) if is_switch(f.decls.get(fl))][:1]
        if said and fl != said[0][0] and fl in described
        for w in [what_is(fl, f)]
        if w and w.partition(": ")[2] != said[0][1].partition(": ")[2]
    ]
    what = " ".join(w for _, w in said)
    whys: list[str] = []
    for text in _code_reasons(f):
        if not any(_restates(text, p) for p in (what, *whys)):
            whys.append(text)
    if not whys:
        # (rules() leaves out the words of the options a sentence names)
        # (only about the options the check is about: a gate's rule is another subject)
        words = docs.content_words(f.literal + " " + " ".join(described))
        # (and one of them not a word of the options described: their own docs hold those)
        ties = docs.content_words(f.literal + " " + " ".join(flags)) - docs.content_words(
            " ".join(fl for fl, _ in said)
        )
        for note in docs.rules(described, words, f.decls, f.docs, within=flags, ties=ties):
            text = _sentence(note.text)
            if not any(_restates(text, p) for p in (what, *whys)):
                whys.append(text)
                break
    parts = {"what": what, "why": _code_names(" ".join(whys)), "instead": instead}
    return {k: v for k, v in parts.items() if v}


def _turned_on(f: Facts) -> list[str]:
    """The flags the enclosing guards need the launch to turn on or set (one left at its
    default is where the check is, not what it is about)."""
    return [a.flag for a in f.context if a.flag and a.positive and not meets_default(a, f.decls)]


def _left_as_is(f: Facts) -> set[str]:
    """Options the check only needs left as they are: a switch off ("without
    --enable-dp-attention"), a value at its declared default ("--nnodes=1 (the default)").
    They say where the check is, not what it is about, unless the message names them or the
    notice adjusts them. (A value option not given is often the subject: "No devices given".)"""
    if notices.is_notice(f) and notices.did(f):
        return set()  # (what the notice adjusts is what it is about, whatever its test)
    atoms = (*f.context, *f.direct)

    def left(a: Atom) -> bool:
        if a.op in ("unset", "is None"):
            return not takes_value(f.decls.get(a.flag or ""))
        return meets_default(a, f.decls) and known_default(a.flag or "", f.decls) is not None

    tested = {a.flag for a in atoms if a.flag}
    chosen = {a.flag for a in atoms if a.flag and not left(a)}
    return tested - chosen - {fl for a in atoms for fl in a.flags}


def compose(parts: dict[str, str]) -> str:
    """The documentation field: the parts of `meaning`, in order, as one paragraph."""
    return " ".join(parts[k] for k in ("what", "why", "instead") if parts.get(k))


def what_is(flag: str, f: Facts) -> str:
    """ "--page-size: the number of tokens in a page." from the docs' entry for the flag, else
    its declared help; "" when neither says."""
    note = docs.about(flag, f.decls, f.docs)
    said = (_clause(note.text) if note is not None else "", _help(flag, f.decls))
    clause = next((c for c in said if c and not _TYPE_ONLY.match(c)), "")
    return f"{flag}: {clause}." if clause else ""


# A description that gives only the option's type and default ("flag; default: disabled", a
# docs row without its words) says nothing of what the option is.
_TYPE_ONLY = re.compile(
    r"(an? )?(flag|bool(ean)?|int(eger)?|str(ing)?|float|list|optional)\b[\s;:,]*"
    r"(default\b[^.]*)?\.?$",
    re.I,
)


def _code_reasons(f: Facts) -> list[str]:
    """Why the check exists, in the code's own words: the comment above it, the message's
    explanation, the enclosing docstring when it explains something about this check."""
    said = _prose(f.site.comment)
    parts = _sentences(said)
    if any(_LATER.match(p) for p in parts):
        said = " ".join(p for p in parts if not _LATER.match(p))
    out = [said] if said and _says_why(f.site.comment) else []
    for reason in message_reasons(f):
        if not any(_restates(reason, p) for p in out):
            out.append(reason)
    if not out and (doc := _docstring(f)):
        out.append(doc)
    return out


# a sentence of a comment that tells the developers what to do later ("Update when more
# backends are supported.", "Remove this once ...")
_LATER = re.compile(
    r"(?:update|remove|revisit|change|fix|re-?enable|delete|drop)(?: this| it| them)? "
    r"(?:when|once|after|if|as soon as)\b",
    re.I,
)


def _code_names(text: str) -> str:
    """A function named in prose (`get_config()`) as code, without its empty parentheses."""
    return re.sub(r"`?\b([A-Za-z_][\w.]*)\(\)`?", r"`\1`", text)


def _sentence(text: str) -> str:
    text = " ".join(text.split()).rstrip(" .;:")
    return capitalised(text) + "." if text else ""


def capitalised(text: str) -> str:
    """`text` with its first letter in upper case, unless its first word is code
    (`trtllm_mha does not support ...`, `nn.Conv3d`): a name keeps its spelling."""
    first = text.split(" ", 1)[0].rstrip(".,:;")
    if not text or re.search(r"[_.]|[a-z][A-Z]", first):
        return text
    return text[0].upper() + text[1:]


def _clause(text: str) -> str:
    """A description's first sentence as a clause after a colon: no runtime parts, the first
    letter lower-cased unless it starts a name ("FlashInfer ...")."""
    first = docs.sentences(" ".join(text.split()))[:1]
    clause = first[0].rstrip(" .;:") if first else ""
    if "{" in clause or len(clause) < 8:
        return ""
    if clause[:1].isupper() and not clause[1:2].isupper():
        clause = clause[0].lower() + clause[1:]
    return clause


# A docstring that opens with one of these summarises what its function does ("Validate IB
# devices before passing to mooncake.", "Configure GPU memory-dependent settings ..."): that
# is the helper's job, not why this check exists.
_JOB = re.compile(
    r"(check|validate|verify|ensure|configure|set|handle|parse|extract|convert|compute|get|"
    r"return|initiali[sz]e|create|build|load|process|update|apply|adjust|automatically|"
    r"generate|determine|resolve|select|prepare|allocate|compile|register|capture|warm|"
    r"prewarm|record|log|dump|save|run|start|raise)"
    r"(s|es)?\b",
    re.I,
)


# a comment or docstring that reads the code's own attributes is a note to the developers
_SELF = re.compile(r"\bself\.")
# and so is one about the code around it ("This method logs the enabled custom ops ...",
# "This function needs to be called only when ...", "This doesn't actually pad the slices",
# "If users have specified sizes, we only need to compare the lens")
_OF_CODE = re.compile(
    r"(?:this|the) (?:method|function|helper|class|validator|property|code|call)\b|"
    r"this (?:does|doesn't|does not|just|only) |"
    r".*?\bwe (?:only |just |also |still )?(?:need to|have to|should|must|can) "
    r"(?:compare|check|verify|make sure|ensure|call|update|skip|handle|recompute)\b",
    re.I,
)


def _for_developers(text: str) -> bool:
    """A comment or docstring that reads the code's own attributes, speaks of the code around
    it, or opens the code or list below it ("... as:"): alone it says nothing to a user."""
    return bool(_SELF.search(text) or _OF_CODE.match(text)) or text.endswith(":")


def _docstring(f: Facts) -> str:
    """The enclosing function's docstring summary, only when it explains something and shares
    a word with this check (its message or flags): never an unrelated helper's."""
    text = _first_paragraph(f.site.docstring)
    if not text or _JOB.match(text) or _for_developers(text):
        return ""
    words = _content_words(text)
    mine = _content_words(f.literal + " " + " ".join(f.site.flags).replace("-", " "))
    return text if words & mine else ""


_STOP = {"this", "that", "with", "when", "only", "must", "should", "will", "have", "from", "into",
         "than", "then", "also", "used", "uses", "using", "does", "not", "the", "and", "for"}  # fmt: skip


def _content_words(text: str) -> set[str]:
    out = set()
    for w in re.findall(r"[a-z0-9]{3,}", text.lower()):
        w = w[:-1] if len(w) > 4 and w.endswith("s") else w
        if w not in _STOP:
            out.add(w)
    return out


def _help(flag: str, decls: dict[str, FlagDecl]) -> str:
    """The first sentence of a flag's help, as a lower-case clause."""
    d = decls.get(flag)
    if not d or not d.help:
        return ""
    text = re.sub(r"^[fr]?['\"]", "", d.help.strip())  # an f-string help kept its prefix
    # The first sentence (not cut at "e.g."), and nothing of an f-string's runtime parts.
    text = re.split(r"(?<=[\w)][\w)][\w)])\.\s+", text, maxsplit=1)[0]
    if "{" in text:
        return ""
    text = _prose(text).rstrip(".")
    if text[:1].isupper() and not text[1:2].isupper():
        text = text[0].lower() + text[1:]
    return text


def _restates(text: str, earlier: str) -> bool:
    """Most of the content words of `text` are already in `earlier` (the comment said it)."""
    words = {w for w in re.findall(r"[\w/-]{4,}", text.lower())}
    seen = {w for w in re.findall(r"[\w/-]{4,}", earlier.lower())}
    return bool(words) and len(words & seen) / len(words) >= 0.5


def _says_why(comment: str | None) -> bool:
    """A comment worth showing a user: a sentence, not a section label ("# Other platforms
    backends"), a bare link or a note to the developers (one that reads the code's own
    attributes, `self.cache_config.block_size`, or speaks of their tests: "model_config may
    be None during testing")."""
    text = _prose(comment)
    words = re.sub(r"https?://\S+", "", text).split()
    if len(words) < 5 or _TESTING.search(text) or _for_developers(text):
        return False
    return not re.match(
        r"(take care|handle|todo|fixme|hack|note to self|reminder|"
        r"(?:double |final |sanity )?check)\b",
        text,
        re.I,
    )


_TESTING = re.compile(r"\b(?:during|in|for|by|at) (?:this |the |unit )?test(?:s|ing)?\b", re.I)
_REASON = re.compile(r"(?:,\s*as|\bsince|\bbecause(?! of)|\bas(?= it\b))\s+(?P<why>[^.;,]+)", re.I)
# Sentences of a message that are advice (solutions), the action taken, or a list of values:
# not explanations.
_NOT_WHY = re.compile(
    r"(please|you can|you should|you may|try|consider|use|set|pass|setting|disabling|enabling|"
    r"using|ignoring|switching|falling|forcing|does|do|will|must|expected|got)\b",
    re.I,
)


def _explains(text: str) -> bool:
    """A sentence that can stand alone as an explanation: no runtime value, no list of
    allowed values or conditions, not advice or the action taken."""
    if "{" in text or len(text.split()) < 5 or not text[:1].isalpha() or _NOT_WHY.match(text):
        return False
    if text.count("(") != text.count(")") or "://" in text:
        return False  # a piece of a parenthesis, or where to report it: no explanation
    if re.match(r"(example|usage|e\.g\.)\b", text, re.I) or re.search(r"<\w+>|\[options\]", text):
        return False  # a command line shown as an example, not an explanation
    return "==" not in text and text.count("'") < 4 and ": " not in text[:40].rstrip(":")


def message_reasons(f: Facts) -> list[str]:
    """Explanations the message itself gives, as sentences without runtime values."""
    out = []
    sentences = _sentences(f.message)
    for m in _REASON.finditer(f.message):
        why = _referred(m.group("why").strip(), f.message[: m.start()])
        if len(why.split()) >= 5 and "{" not in why:
            out.append(capitalised(why.rstrip(" .")) + ".")
    head, sep, tail = f.message.partition(": ")
    if sep and len(head.split()) > 2 and _explains(tail.strip()):  # "AMD/ROCm: ..." is a label
        out.append(capitalised(tail.strip().rstrip(" .")) + ".")
    for s in sentences[1:]:
        if _OF_CODE.match(s):
            continue  # ("This method should only be called via the config ...": for developers)
        if (_explains(s) or notices.consequence(s)) and not _IMPERATIVE.match(s):
            out.append(s.rstrip(" .") + ".")
    first = sentences[0] if sentences else ""
    if notices.consequence(first):
        # "X with Y is unstable and produces incorrect results for ...": what goes wrong
        out.insert(0, capitalised(first.rstrip(" .")) + ".")
    return list(dict.fromkeys(out))


# "Disabling hybrid SWA memory for {model_arch} as it is ...", "Disabled the custom
# all-reduce kernel because it ...": what the action is done to; "Multi-modal processor cache
# is disabled because it ...": what the sentence is about
_ACTED_ON = re.compile(
    r"^(?P<what>[A-Za-z][\w /-]{2,60}?) (?:is|are|was|has been|will be) (?:now )?"
    r"(?:disabled|enabled|deprecated|ignored|skipped|turned off|not used)\b|"
    r"(?:disabl|enabl|ignor|skipp|us|turn|forc|fall|overrid|switch|reset)(?:e|es|ed|ing)\b"
    r"(?: (?:off|on|back to))? (?P<obj>[A-Za-z][\w /-]{2,60}?)(?= for\b| on\b| with\b| because\b|$)",
    re.I,
)


def _referred(why: str, before: str) -> str:
    """A reason clause whose subject is "it" with that pronoun replaced by what the sentence
    acted on ("Disabling hybrid SWA memory for X as it is not yet supported" -> "hybrid SWA
    memory is not yet supported"); "" where the sentence names nothing to refer to: alone,
    "It is not yet supported" says nothing."""
    if not re.match(r"it\b", why, re.I):
        return why
    clause = re.split(r"[.;:!?]\s", before.strip())[-1].strip(" ,")
    acted = _ACTED_ON.search(clause)
    return (acted.group("what") or acted.group("obj")).strip() + why[2:] if acted else ""


# (an adverb after the request is part of it: "Please manually install torch 2.6.x")
_IMPERATIVE = re.compile(
    r"^(?:if you (?:want|need|wish) to [^,]{1,80},\s*)?"
    r"(?:(?:please|you can|you should|you need to)\s+(?:[a-z]+ly\s+)?)?(pass|use|set|run|remove|drop|"
    r"disable|enable|install|unset|try|specify|add|choose|consider|increase|decrease|reduce|"
    r"upgrade|switch|provide|make sure|change|update|export|lower|turn|select|rebuild|reinstall|"
    r"downgrade|check|verify|ensure|point|explicitly|override|launch)\b",
    re.I,
)


# A sentence glued on without a space ("not found.Please"): a word's end, then a capitalised
# word; "nn.Conv3d" and "torch.cuda" are names, not two sentences.
_GLUED = re.compile(r"(?<![\w.])([a-z]{3,})\.(?=[A-Z][a-z]+(?![\w.]))")


def unglued(message: str) -> str:
    """`message` with a space after each period that ends a sentence glued to the next."""
    return _GLUED.sub(r"\1. ", message)


def _advice_sentences(message: str) -> list[str]:
    """Sentences and clauses of a message that may be advice: ", please ..." and
    "..., try to use ..." start one too, and so does a sentence glued on without a space."""
    text = unglued(message)
    parts = []
    for s in _sentences(text):
        parts.extend(
            p.strip()
            for p in re.split(r",\s*(?=(?:please|try|you can|you should)\b)", s, flags=re.I)
        )
    return [p for p in parts if p]


def introduced(record: dict, commit: dict) -> dict:
    """`record` with the introducing commit's own explanation as the `why` of its meaning,
    when nothing else gave one and a paragraph of the commit's body speaks to this check
    (shares two content words with its message and options). The subject alone ("Rename the
    project") is no meaning, and neither is a body about something else."""
    parts = dict(record.get("meaning") or {})
    if parts.get("why"):
        return record
    message = template.fold(record.get("errorMessage") or "", lambda _: " ")
    words = docs.content_words(message + " " + " ".join(record.get("flags") or []))
    para = next(
        (p for p in _body_paragraphs(commit.get("body") or "")
         if len(docs.content_words(p) & words) >= 2),
        "",
    )  # fmt: skip
    if not para:
        return record
    subject = " ".join((commit.get("subject") or "").split())
    pr = re.search(r"\(#(\d+)\)\s*$|^Merge pull request #(\d+)", subject)
    number = next((g for g in pr.groups() if g), None) if pr else None
    where = f"#{number}" if number else f"commit {commit['sha'][:9]}"
    parts["why"] = f"The change that added this check ({where}) explains: {para}"
    return {**record, "meaning": parts, "documentation": compose(parts)}


_TRAILER = re.compile(r"^[\w-]+(-by)?:\s", re.I)  # Signed-off-by:, Co-authored-by:, ...


def _body_paragraphs(body: str) -> list[str]:
    """The paragraphs of a commit body that are prose: not trailers, headings, a bare list
    of bullets or links, or a template's comment; each at most ~400 characters (cut at a
    sentence)."""
    out = []
    body = re.sub(r"<!--.*?-->", "", body, flags=re.S)
    for para in re.split(r"\n\s*\n", body.strip()):
        lines = [ln.strip() for ln in para.splitlines() if ln.strip()]
        lines = [ln for ln in lines if not _TRAILER.match(ln)]
        text = " ".join(" ".join(lines).split())
        if len(text.split()) < 8 or re.match(r"(https?://|[-*#|>]|\d+\.\s)", text):
            continue
        if len(text) > 400:
            cut = text.rfind(". ", 0, 400)
            text = text[: cut + 1] if cut > 0 else text[:399].rstrip() + "…"
        out.append(text if text[-1] in ".!?…" else text + ".")
    return out
