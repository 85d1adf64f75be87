"""kverr.catalog: the DuckDB catalog of records and the matcher behind `kverr explain`.

The only package that imports duckdb; it never imports libcst or jsonschema (explain must
start fast)."""

from kverr.catalog.catalog import Catalog, open_catalog
from kverr.catalog.store import load_dataset, load_datasets

__all__ = ["Catalog", "load_dataset", "load_datasets", "open_catalog"]
