"""kverr.data."""
