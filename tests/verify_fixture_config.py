"""The verify fixture project (verify_fixture.py) with a launch step of its own before parsing:
`prepare_server_args(argv)` hands a command line holding `--config FILE` to a config reader
that reads the YAML file and puts its options in, then parses. Written for these tests (no
upstream code): the reader's checks are the six a config file can fail, plus the log line of
a file that does not read and one no launch of the search reaches, in a shape of our own."""

from __future__ import annotations

import copy
from pathlib import Path

import verify_fixture
from kverr.verify.spec import VerifySpec
from test_sources import Git
from verify_fixture import ARGS, SERVER_ARGS

READER = "python/fakesrv/srt/config_reader.py"

READER_TEXT = '''\
"""Reads a launch's --config file into its command line."""

import argparse
import logging
import os

import yaml

logger = logging.getLogger(__name__)

PLAIN = (argparse._StoreAction, argparse._StoreTrueAction)


class ConfigReader:
    def __init__(self, parser):
        self.actions = {a.dest: a for a in parser._actions if a.option_strings}

    def merged(self, argv):
        path = self._path(argv)
        if path is None:
            return argv
        values = self._load(path)
        at = argv.index("--config")
        return self._words(values) + argv[:at] + argv[at + 2 :]

    def _path(self, argv):
        hits = [i for i, word in enumerate(argv) if word == "--config"]
        if len(hits) > 1:
            raise ValueError("Only one --config file may be given.")
        if not hits:
            return None
        if hits[0] + 1 >= len(argv):
            raise ValueError("--config needs a file name after it.")
        return argv[hits[0] + 1]

    def _load(self, path):
        if not path.endswith((".yaml", ".yml")):
            raise ValueError(f"--config wants a .yaml file, not {os.path.splitext(path)[1]!r}")
        if not os.path.exists(path):
            raise FileNotFoundError(f"No such config file: {path}")
        if os.path.getsize(path) > 1_000_000:
            raise ValueError("A config file of over a megabyte is not read.")
        try:
            with open(path) as f:
                values = yaml.safe_load(f)
        except Exception as exc:
            logger.error(f"Cannot read config file {path}: {exc}")
            raise
        values = values or {}
        if not isinstance(values, dict):
            raise TypeError("A config file holds a mapping of options, not a list.")
        return values

    def _words(self, values):
        words = []
        for key, value in values.items():
            action = self.actions.get(key.replace("-", "_"))
            if action is not None and not isinstance(action, PLAIN):
                raise ValueError(f"--{key} ({type(action).__name__}) cannot be set in a config file")
            if value is True:
                words.append(f"--{key}")
            elif isinstance(value, list):
                words += [f"--{key}", *map(str, value)]
            elif value is not False:
                words += [f"--{key}", str(value)]
        return words
'''

PREPARE = '''

def prepare_server_args(argv):
    """The launch's command line as ServerArgs."""
    parser = argparse.ArgumentParser(prog="fakesrv")
    ServerArgs.add_cli_args(parser)
    if "--config" in argv:
        from fakesrv.srt.config_reader import ConfigReader

        argv = ConfigReader(parser).merged(argv)
    raw = parser.parse_args(argv)
    return ServerArgs.from_cli_args(raw)
'''

# Options the reader cannot set, in parser order: a deprecated one (no example to copy), one
# whose own action rejects the example's value, one that takes it on the command line.
OPTIONS = """\
        parser.add_argument("--config", type=str)
        parser.add_argument("--old-flag", nargs=0, action=DeprecatedFlag)
        parser.add_argument("--lora-paths", nargs="*", action=LoRAPathAction)
        parser.add_argument("--served-name", action="append")
"""

DEPRECATED = """

class DeprecatedFlag(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        raise ValueError(f"{option_string} is gone")
"""


def server_args(*, entry: str = PREPARE, served_name: bool = True) -> str:
    options = (
        OPTIONS
        if served_name
        else OPTIONS.replace('        parser.add_argument("--served-name", action="append")\n', "")
    )
    text = SERVER_ARGS.replace(
        '        parser.add_argument("--lora-paths", nargs="*", action=LoRAPathAction)\n', options
    )
    assert text != SERVER_ARGS
    return text + DEPRECATED + entry


def files(**kw: object) -> dict[str, str]:
    out = dict(verify_fixture.FILES)
    out[ARGS] = server_args(**kw)  # type: ignore[arg-type]
    out[READER] = READER_TEXT
    return out


TABLE = copy.deepcopy(verify_fixture.TABLE)
TABLE["verify"]["argv"] = {
    "entry": "prepare_server_args",
    "modules": ["fakesrv.srt.config_reader"],
    "config_option": "--config",
    "config_name": "config.yaml",
    "config_example": {"tp-size": 1},
}
TABLE["verify"]["substitutes"] = {"yaml": "kverr.verify.sandbox.json_yaml"}


def config_spec() -> VerifySpec:
    return VerifySpec.from_table(TABLE, where="tests/verify_fixture_config.py")


def config_repo(root: Path, **kw: object) -> tuple[Git, str]:
    g = Git(root)
    return g, g.commit("fixture project with a config reader", files(**kw))
