"""What a run's own output offers the fix search: the values an error message quotes for an
option the launch set ("Available devices: ['mlx5_0']"), the keys it says a JSON value lacks,
and what a notice says SGLang chose for the user ("reset to 48"). The runtime counterpart of
the message's advice (verify/search/candidates.py); the harness still runs every offer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from kverr.verify.harness import Outcome
from kverr.verify.search import candidates
from kverr.verify.verdict import Expect

from kverr.ftypes import FixChange, FlagDecl, Launch

# "<option> to <value>", "<option>=<value>", "<option> of <value>" in a notice's own words.
_CHOSEN = re.compile(r"\b([a-z][a-z0-9_-]{2,})`?\s*(?:=|\bto\b|\bof\b|\bis\b)\s*[`'\"]?([\w.-]+)")

_QUOTED = re.compile(r"'([\w.:/@+-]{1,64})'")
# "Valid modes are: A, B, C", "Supported values: [a, b]": the list after such words.
_LISTED = re.compile(
    r"\b(?:valid|supported|available|allowed|possible)\b[\w ]{0,40}?(?:\bare\b|:)\s*:?\s*"
    r"\[?((?:[\w.-]+,\s*)+[\w.-]+)",
    re.I,
)


def chosen(out: Outcome, expect: Expect, decls: Mapping[str, FlagDecl]) -> list[FixChange]:
    """What a notice says SGLang chose ("change page_size to 64", "deepep_mode=`normal`",
    "reset to 48"), as the option set to that value explicitly: the warning's own fix."""
    by_dest = {d.dest: name for name, d in decls.items()}
    found: list[FixChange] = []
    for log in out.logs:
        if log.file != expect.file or not (expect.line <= log.line <= expect.end_line):
            continue
        for attr, value in _CHOSEN.findall(log.message):
            flag = by_dest.get(attr) or by_dest.get(attr.replace("-", "_").lstrip("_"))
            if flag and candidates.value_ok(flag, value, dict(decls)):
                found.append(FixChange((("set", flag, value),), "advice", log.message[:120]))
    return found[:4]


def told(out: Outcome, launch: Launch, pattern: str = "") -> list[FixChange]:
    """Values the run's own error message offers for an option the launch set to a value it
    quotes back ("Invalid IB devices specified: ['x']. Available devices: ['mlx5_0']"): the
    runtime counterpart of the message's advice."""
    if out.status != "raised" or not out.message:
        return []
    quoted = quoted_words(out.message, pattern)
    out_: list[FixChange] = told_json(out.message, quoted, launch)
    # The value the message quotes first is the one it complains about ("Invalid IB devices
    # specified: ['mlx5_9']. Available devices: ['mlx5_0', ...]"): that option's offers first,
    # not those of an option whose value is merely among the ones it lists.
    said = [
        (out.message.find(f"'{value}'"), option, value)
        for option, value in launch.args
        if isinstance(value, str) and value and f"'{value}'" in out.message
    ]
    for _, option, shown in sorted(said, key=lambda s: s[0]):
        for word in quoted:
            if word != shown and word not in shown:
                out_.append(FixChange(((("set", option, word)),), "advice", out.message[:120]))
    return [*out_, *told_listed(out.message, launch)][:4]


def told_listed(message: str, launch: Launch) -> list[FixChange]:
    """The values a message lists as the valid ones ("Invalid compilation mode: other. Valid
    modes are: NONE, STOCK_TORCH_COMPILE, VLLM_COMPILE") for the option whose value it prints
    back as a word: each listed value in its place, in the message's order."""
    listed = [w for m in _LISTED.finditer(message) for w in re.findall(r"[\w.-]+", m.group(1))]
    out = []
    for option, value in launch.args:
        if not isinstance(value, str) or not re.search(
            rf"(?<![\w.-]){re.escape(value)}(?![\w-]|\.\w)", message
        ):
            continue
        if value in listed:
            continue  # a value the message names as valid is not the one it refuses
        out += [FixChange((("set", option, w),), "advice", message[:120]) for w in listed]
    return out


def quoted_words(message: str, pattern: str = "") -> list[str]:
    """The words a message quotes: those its source text spells out (in the record's
    messagePattern) in the message's order, then the others sorted. A value the run printed
    (`list(allowed_modalities)`, a set) comes in the run's own hash order, and a rebuild must
    pick the same offer."""
    words = list(dict.fromkeys(_QUOTED.findall(message)))
    spelled = [w for w in words if pattern and (w in pattern or re.escape(w) in pattern)]
    return spelled + sorted(w for w in words if w not in spelled)


def told_json(message: str, quoted: Sequence[str], launch: Launch) -> list[FixChange]:
    """The same for a JSON object the launch set: a key the error quotes back replaced by
    each other word it quotes ("Invalid modality 'x' ... Allowed: ['image', ...]"), or the
    words it says are missing added as keys ("does not contain 'lora_name' and 'lora_path'
    keys")."""
    out: list[FixChange] = []
    for option, value in launch.args:
        items = list(value) if isinstance(value, tuple) else [value]
        for i, item in enumerate(items):
            obj = _json_object(item)
            if obj is None:
                continue
            bad = [k for k in obj if f"'{k}'" in message]
            others = [w for w in quoted if w not in obj]
            fixed = []
            if bad:
                fixed = [{**{k: v for k, v in obj.items() if k != bad[0]}, w: obj[bad[0]]}
                         for w in others]  # fmt: skip
            elif others and re.search(r"\b(contain|missing|requires?|keys?)\b", message):
                fixed = [{**obj, **dict.fromkeys(others, "x")}]
            for new in fixed[:3]:
                words = [*items[:i], json.dumps(new), *items[i + 1 :]]
                shown = tuple(words) if isinstance(value, tuple) else words[0]
                out.append(FixChange((("set", option, shown),), "advice", message[:120]))  # type: ignore[arg-type]
    return out


def _json_object(text: Any) -> dict | None:
    if not isinstance(text, str) or not text.strip().startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
