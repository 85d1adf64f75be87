"""kverr: every launch-argument error of an LLM server (SGLang, vLLM), extracted from the source and explained."""

from pathlib import Path as _Path

__version__ = "0.1.0"
# the project a build or catalog without a profile belongs to (kverr.profile.DEFAULT): here, as
# finding the packaged catalog needs it and kverr.profile costs a one-shot explain 15 ms
DEFAULT_PROJECT = "sglang"

# Installed, the stage folders (extractor/, records/, schema/, catalog/, feeds/, data/) live
# under kverr/. In a source checkout they sit beside it, and `python -m kverr` or `python -m
# pytest` run from the checkout root import this kverr/ first (the current directory leads
# sys.path), so let the subpackages be found next door too.
_checkout = _Path(__file__).resolve().parent.parent
if (_checkout / "pyproject.toml").is_file() and (_checkout / "extractor" / "__init__.py").is_file():
    __path__.append(str(_checkout))  # noqa: F821 - the package's own search path
