"""kverr.extractor."""
