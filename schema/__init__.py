"""kverr.schema."""
