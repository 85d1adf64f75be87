"""Run fixture code that really raises / logs / warns / exits, and check that rendering the
extracted template with the frame's values reproduces the message byte for byte."""

from __future__ import annotations

import ast
import logging
import sys
import types
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kverr.extractor import extract, render

FIXTURES = Path(__file__).resolve().parent / "golden" / "extract"
RUNNABLE = ["messages.py", "validators.py"]


@dataclass
class Event:
    line: int
    message: str
    frame_globals: dict[str, Any]
    frame_locals: dict[str, Any]


def _fixture_frame(filename: str, frame) -> Any:
    while frame is not None and frame.f_code.co_filename != filename:
        frame = frame.f_back
    return frame


class _Capture(logging.Handler):
    def __init__(self, filename: str, events: list[Event]) -> None:
        super().__init__(logging.DEBUG)
        self.filename, self.events = filename, events

    def emit(self, record: logging.LogRecord) -> None:
        frame = _fixture_frame(self.filename, sys._getframe())
        self.events.append(
            Event(record.lineno, record.getMessage(), frame.f_globals, dict(frame.f_locals))
        )


def run_case(text: str, filename: str, case: str) -> list[Event]:
    """Execute one case_* function of a fixture; every message it reports, with its frame."""
    events: list[Event] = []
    # a real module object: dataclasses look their module up in sys.modules
    module = types.ModuleType("kverr_fixture")
    sys.modules[module.__name__] = module
    namespace = module.__dict__
    exec(compile(text, filename, "exec"), namespace)
    handler = _Capture(filename, events)
    root = logging.getLogger()
    root.addHandler(handler)
    old_level = root.level
    root.setLevel(logging.DEBUG)

    def show(message, category, file, lineno, *rest):
        frame = _fixture_frame(filename, sys._getframe())
        events.append(Event(lineno, str(message), frame.f_globals, dict(frame.f_locals)))

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = show
            namespace[case]()
    except BaseException as exc:  # noqa: BLE001 - SystemExit is a message under test too
        tb = exc.__traceback__
        last = None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == filename:
                last = tb
            tb = tb.tb_next
        assert last is not None, f"{case} raised outside the fixture: {exc!r}"
        message = str(exc.code) if isinstance(exc, SystemExit) else str(exc)
        events.append(
            Event(last.tb_lineno, message, last.tb_frame.f_globals, dict(last.tb_frame.f_locals))
        )
    finally:
        sys.modules.pop(module.__name__, None)
        root.removeHandler(handler)
        root.setLevel(old_level)
    return events


def _cases() -> list[tuple[str, str]]:
    out = []
    for name in RUNNABLE:
        tree = ast.parse((FIXTURES / name).read_text(encoding="utf-8"))
        out += [
            (name, n.name)
            for n in tree.body
            if isinstance(n, ast.FunctionDef) and n.name.startswith("case_")
        ]
    return out


@pytest.fixture(scope="module")
def extracted() -> dict[str, tuple]:
    return {name: extract((FIXTURES / name).read_text(encoding="utf-8"), name) for name in RUNNABLE}


@pytest.mark.parametrize(("fixture", "case"), _cases())
def test_rendered_template_equals_the_real_message(fixture, case, extracted):
    text = (FIXTURES / fixture).read_text(encoding="utf-8")
    filename = str(FIXTURES / fixture)
    events = run_case(text, filename, case)
    assert len(events) == 1, events
    event = events[0]
    sites = [s for s in extracted[fixture] if s.line <= event.line <= s.end_line]
    assert sites, f"no site covers line {event.line}"
    rendered = []
    for site in sites:
        values = {
            p.expr: eval(p.expr, event.frame_globals, event.frame_locals)  # noqa: S307
            for p in site.template.placeholders
        }
        rendered.append(render(site.template, values))
    assert event.message in rendered
