"""Reading dataset JSONL files, shared by the dataset reader (records/) and the catalog loader.

Stdlib only: the catalog loader runs on the `kverr explain` path when it builds the default
catalog on first use.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kverr.errors import DatasetError


def read_objects(path: Path, *, optional: bool = False) -> list[tuple[str, dict[str, Any]]]:
    """(`path:line`, object) for every non-blank line. A missing file is [] when `optional`;
    anything else wrong raises DatasetError naming the file and line and what to do."""
    return list(iter_objects(path, optional=optional))


def iter_objects(path: Path, *, optional: bool = False) -> Iterator[tuple[str, dict[str, Any]]]:
    """read_objects one line at a time: memory for one object, however long the file."""
    if not path.is_file():
        if optional:
            return
        raise DatasetError(
            f"{path} is missing; point at a dataset directory written by `kverr build`."
        )
    try:
        with path.open(encoding="utf-8") as fh:
            for n, text in enumerate(fh, start=1):
                if not text.strip():
                    continue
                where = f"{path}:{n}"
                try:
                    obj = json.loads(text)
                except json.JSONDecodeError as exc:
                    raise DatasetError(
                        f"{where} is not valid JSON ({exc.msg}); fix or delete that line, or rebuild the dataset."
                    ) from None
                if not isinstance(obj, dict):
                    raise DatasetError(
                        f"{where} is not a JSON object; fix or delete that line, or rebuild the dataset."
                    )
                yield where, obj
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(
            f"{path} cannot be read ({exc}); check the file, or rebuild the dataset."
        ) from None
