"""The knowledge fields of a record, one plain function per field, all derived from the code.

Inputs are what the extractor saw: the guards on the path (read as flag facts by
`conditions.py`), the flags' declarations (help, default, choices), the comment above the site,
the enclosing docstring and the message itself; and, when the build read them, the revision's
own docs (argument tables, feature pages, config docstrings, the launches of its docs, tests
and CI). A field no source says anything about stays empty ("" / [] / None): no boilerplate.

One module per concern, each with its tests beside it in tests/test_knowledge_<module>.py:

    facts.py       Facts: what every field function reads, computed once per site
    docs.py        the project's documentation: what a flag is, its rules, how launches use it
    text.py        prose from comments, docstrings and the message; documentation
    words.py       conditions -> words: triggerScenarios, commonSituations
    fixes.py       solutions, exampleFix, preventionTips
    validation.py  validationCode, typeGuard, tryCatchPattern
    classify.py    backgroundTag, errorType, handlingStrategy, tags
"""

from __future__ import annotations

import re

from kverr.records.knowledge import docs
from kverr.records.knowledge.classify import background_tag, error_type, handling_strategy, tags
from kverr.records.knowledge.facts import Facts, facts_for
from kverr.records.knowledge.fixes import (
    example_fix,
    message_advice,
    prevention_tips,
    report_it,
    solutions,
)
from kverr.records.knowledge.text import compose, feature_flags, introduced, meaning
from kverr.records.knowledge.validation import try_catch_pattern, type_guard, validation_code
from kverr.records.knowledge.words import common_situations, trigger_scenarios

# what the build (records/, pipeline/introduce.py) and verify/ take from here; the field
# functions are imported from their own modules
__all__ = ["Facts", "facts_for", "introduced", "knowledge_fields"]


def knowledge_fields(f: Facts, repo: str) -> dict[str, object]:
    """All knowledge fields of one record (`learnMore` only when the docs have a page)."""
    background = background_tag(f)
    validation = validation_code(f)
    parts = meaning(f)
    url = learn_more(f)
    fields = {
        "documentation": compose(parts),
        "meaning": parts,
        **({"learnMore": url} if url else {}),
        "triggerScenarios": trigger_scenarios(f),
        "commonSituations": common_situations(f),
        "solutions": solutions(f),
        "exampleFix": example_fix(f),
        "handlingStrategy": handling_strategy(f, background, validation),
        "validationCode": validation,
        "typeGuard": type_guard(f),
        "tryCatchPattern": try_catch_pattern(f),
        "preventionTips": prevention_tips(f, background),
        "tags": tags(f, repo),
        "backgroundTag": background,
        "errorType": error_type(background),
    }
    if background == "internal-invariant" and not f.site.template.is_empty:
        # The message says the code settles this before the check: no launch is known to
        # reach it, so no launch words, advice or example stand for it.
        fields.update(triggerScenarios="", commonSituations="", solutions=[report_it(f)],
                      exampleFix="", preventionTips=[])  # fmt: skip
    elif f.handled:
        # What fires it is the failure its except clause catches, not the launch's options,
        # which only lead there: no launch counts as hitting it.
        said = fields["triggerScenarios"].rstrip(".")  # type: ignore[union-attr]
        fired = f": the code in its try block raises {f.handled}." if said else ""
        fields.update(triggerScenarios=said + fired, commonSituations="")
        if not re.search(r"\b(?:ImportError|ModuleNotFoundError)\b", f.handled):
            # A failure at run time (a port taken, ranks that did not load): giving up an
            # option on the way is no fix. (A missing package is: the option asked for it.)
            fields.update(solutions=message_advice(f), exampleFix="", preventionTips=[])
    return fields


def learn_more(f: Facts) -> str | None:
    """The page of the revision's docs about the check's feature (its first flag the docs
    cover), for a reader who wants more than the record says."""
    for flag in feature_flags(f):
        url = docs.link(flag, f.decls, f.docs)
        if url:
            return url
    return None
