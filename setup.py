"""The package's one build step beyond copying files: its catalog, built from data/.

`kverr explain` answers from a DuckDB catalog of the packaged datasets. Made on first use, it
cost 13 s of CPU before the first answer; made here, in the built package, a wheel ships it
ready (kverr/data/packaged-<key>.duckdb) and an installed kverr copies it into the user cache
on first use instead (catalog/store.py default_catalog_path). The file is an artifact of
data/ and of the loader's code, named by a hash of both, so it is never checked in, and a
kverr whose files differ from the ones it was built from builds its own. An editable install
has no build folder to hold it: it builds on first use, as a checkout does.

Everything else is declared in pyproject.toml.
"""

import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithCatalog(build_py):
    def run(self):
        super().run()
        if self.editable_mode:
            return
        # A fresh interpreter in the built package's folder, so it imports the kverr just
        # copied there (not this checkout's), with the build requirements' DuckDB.
        code = "from kverr.catalog.store import ship_catalog; print(ship_catalog())"
        self.announce("building the packaged catalog (13 s of CPU)", level=2)
        subprocess.run([sys.executable, "-c", code], cwd=self.build_lib, check=True)


setup(cmdclass={"build_py": BuildWithCatalog})
