"""kverr: every SGLang server-args error, extracted from the source and explained."""

__version__ = "0.1.0"
