"""Where kverr keeps what it computes for a user: one cache folder for the catalog built from
the shipped datasets, what `kverr check` learns (verify/memo.py) and the releases it fetches
(verify/release.py). Stdlib only: every stage may ask."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """$XDG_CACHE_HOME/kverr, else ~/.cache/kverr."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kverr"
