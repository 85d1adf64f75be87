"""The knowledge fields of a record, one plain function per field, all derived from the code.

Inputs are what the extractor saw: the guards on the path (read as flag facts by
`conditions.py`), the flags' declarations (help, default, choices), the comment above the site,
the enclosing docstring and the message itself. A field the code says nothing about stays
empty ("" / [] / None): no boilerplate.

One module per concern, each with its tests beside it in tests/test_knowledge_<module>.py:

    facts.py       Facts: what every field function reads, computed once per site
    text.py        prose from comments, docstrings and the message; documentation
    words.py       conditions -> words: triggerScenarios, commonSituations
    fixes.py       solutions, exampleFix, preventionTips
    validation.py  validationCode, typeGuard, tryCatchPattern
    classify.py    backgroundTag, errorType, handlingStrategy, tags
"""

from __future__ import annotations

from kverr.records.knowledge.classify import background_tag, error_type, handling_strategy, tags
from kverr.records.knowledge.facts import Facts, facts_for
from kverr.records.knowledge.fixes import (
    example_fix,
    prevention_tips,
    sample_value,
    solutions,
)
from kverr.records.knowledge.text import documentation, introduced, message_reasons
from kverr.records.knowledge.validation import try_catch_pattern, type_guard, validation_code
from kverr.records.knowledge.words import common_situations, trigger_scenarios

__all__ = [
    "Facts",
    "background_tag",
    "common_situations",
    "documentation",
    "error_type",
    "example_fix",
    "facts_for",
    "handling_strategy",
    "introduced",
    "knowledge_fields",
    "message_reasons",
    "prevention_tips",
    "sample_value",
    "solutions",
    "tags",
    "trigger_scenarios",
    "try_catch_pattern",
    "type_guard",
    "validation_code",
]


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
