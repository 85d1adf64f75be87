"""No site missing, none invented: the extractor against an independent stdlib-`ast` count."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "golden" / "extract"


def _crosscheck_module():
    spec = importlib.util.spec_from_file_location(
        "crosscheck_ast", ROOT / "scripts" / "crosscheck_ast.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


crosscheck = _crosscheck_module()


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.py")))
def test_fixture_sites_equal_the_ast_count(name):
    text = (FIXTURES / name).read_text(encoding="utf-8")
    total, problems = crosscheck.compare(text, name)
    assert problems == []
    assert total > 0


def test_seed_sites_equal_the_ast_count(seed_module):
    total, problems = crosscheck.compare(seed_module, "kv_cache_hook.py")
    assert problems == []
    assert total == 46


def test_the_count_sees_a_missing_site():
    text = "import logging\nlog = logging.getLogger()\ndef f():\n    log.error('x')\n"
    want = crosscheck.ast_sites(text)
    assert dict(want) == {(4, "log"): 1}


def test_logger_shapes_agree_with_the_ast_count():
    text = (
        "import logging as lg\nfrom pkg import logger\nlog = lg.getLogger()\n"
        "def f(x):\n    lg.getLogger('a').error('1')\n    logger.info('2')\n"
        "    log.log(lg.WARNING, '3 %s', x)\n    log.debug('not a site')\n"
    )
    total, problems = crosscheck.compare(text, "shapes.py")
    assert (total, problems) == (3, [])
