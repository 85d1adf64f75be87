"""kverr.catalog."""
