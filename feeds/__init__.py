"""kverr.feeds."""
