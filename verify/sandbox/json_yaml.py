"""`yaml` inside the sandbox: YAML's JSON subset, without PyYAML.

A revision's config merger reads its file with `yaml.safe_load`. The only config files a
sandboxed run ever reads are the ones the fix search wrote into the child's work directory
(verify/search/configfile.py), and those hold JSON text, which YAML reads as the same mapping, list
or scalar. So this module answers exactly what PyYAML would for them: JSON text as its value,
an empty (or blank) file as None, anything else a YAMLError, as PyYAML raises for text that
does not parse. Declared in the spec as a substitute (`yaml = "kverr.verify.sandbox.json_yaml"`).
"""

from __future__ import annotations

import json
from typing import Any


class YAMLError(Exception):
    """The text is not one the sandbox reads (not JSON, so not in the subset)."""


class SafeLoader:  # `yaml.load(f, Loader=yaml.SafeLoader)` names these; the subset is one
    pass


FullLoader = Loader = CSafeLoader = SafeLoader


def safe_load(stream: Any) -> Any:
    """The document's value: a file object's or a string's text, read as JSON."""
    text = stream.read() if hasattr(stream, "read") else stream
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    if not isinstance(text, str):
        raise YAMLError(f"cannot read a YAML document from {type(stream).__name__}")
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        # PyYAML's own wording for a flow collection that does not close, close enough for a
        # message the check only logs or re-raises.
        raise YAMLError(f"while parsing a flow node: {exc.msg} (line {exc.lineno})") from None


def load(stream: Any, Loader: Any = None) -> Any:  # noqa: N803 - PyYAML's keyword
    return safe_load(stream)


def safe_dump(data: Any, stream: Any = None, **kwargs: Any) -> str | None:
    text = json.dumps(data) + "\n"
    if stream is None:
        return text
    stream.write(text)
    return None


dump = safe_dump
