"""The few named failures kverr's library raises. The CLI boundary turns each into one
stderr sentence (the message already names the input and the next step) and an exit code."""


class KverrError(Exception):
    """Base: the message is a complete sentence for the user, naming the input and the fix."""

    exit_code = 2


class SourceError(KverrError):
    """A source path, git repository or revision cannot be read."""


class SchemaError(KverrError):
    """A record does not validate against schema v2."""


class DatasetError(KverrError):
    """A dataset directory or JSONL file is missing, unreadable or malformed."""


class CatalogError(KverrError):
    """A catalog file is missing, corrupt or from an incompatible kverr."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason or message  # what was wrong, without the fix: for a warning


class QueryError(KverrError):
    """Input to explain/scan/search that cannot be used (empty, unreadable file, ...)."""


class NotFound(KverrError):
    """An id, flag or revision that the catalog does not know."""

    exit_code = 1


class ProfileError(KverrError):
    """A project profile (profiles/<name>.toml or --profile FILE) is missing or malformed."""


class TooExpensive(QueryError):
    """Text whose matching went past the per-request CPU budget (the API answers 422)."""


class KverrWarning(UserWarning):
    """A problem kverr worked around; the message says what it did and how to avoid it."""
