"""Classification (records/knowledge/classify.py): backgroundTag, errorType, handlingStrategy."""

from __future__ import annotations

from test_records_knowledge import _records


def test_message_less_assert_is_an_internal_invariant():
    recs = _records("class ServerArgs:\n    def f(self):\n        assert self.tp_size > 0\n")
    (rec,) = recs
    assert rec["errorMessage"] == "" and rec["messagePattern"] == ""
    assert rec["backgroundTag"] == "internal-invariant" and rec["handlingStrategy"] == "report-bug"
    assert rec["slug"].startswith("assert-self-tp-size-0-")
    assert (
        rec["sourceCode"].splitlines()[rec["lineNumber"] - rec["sourceCodeStart"]].strip()
        == "assert self.tp_size > 0"
    )


def test_deprecation_warning():
    src = 'import warnings\nclass ServerArgs:\n    def f(self):\n        if self.old_mode:\n            warnings.warn("--old-mode is deprecated; use --new-mode instead.", DeprecationWarning)\n'
    (rec,) = _records(src)
    assert rec["backgroundTag"] == "deprecated-option" and rec["errorType"] == "deprecation"
    assert rec["solutions"][0] == "Use --new-mode instead"
    assert rec["kind"] == "warn"
