"""kverr.records."""
