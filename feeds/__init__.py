"""kverr.feeds: the dataset in the shapes its consumers expect.

site.py     static offline error reference (`kverr export site`)
exports.py  JSONL, Parquet (via catalog/export.py) and Markdown for MkDocs/Docusaurus
api.py      the Starlette JSON API (`kverr serve`)
server.py   running it: uvicorn with deadlines and a connection cap, `--workers N`
Everything reads through the Catalog API; nothing here imports duckdb.
"""
