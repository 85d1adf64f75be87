"""kverr.verify.search: the fix search, with the revision's own check as the judge (core.py)."""
