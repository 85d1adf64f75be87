"""`kverr mcp`: kverr's answers as tools an assistant calls, over the Model Context Protocol
(the official `mcp` SDK): stdio for a desktop client, streamable HTTP for a shared one.

    explain(text, release?, project?)   a pasted error -> the known errors in it, fix first
    check(command, release?)            a launch -> each error its release raises, with the
                                        fix of that launch (needs the release's source)
    show(id)                            one record
    search(query, flag?, project?, release?)
    releases(project)                   the releases an answer can be asked for
    kverr://<project>/<id>              a record as a resource

Each result carries the fields of the matching `--json` output as structured content and a
Markdown rendering (the card a person reads) as its text. A bad argument, an unknown id or a
check that cannot run is a tool error with kverr's one-line message, never a crash of the
server: the model reads the sentence and can act on it.
"""

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from kverr.catalog import open_catalog
from kverr.catalog.query import explain_query, record_match_or_raise, search_query
from kverr.present import markdown as md
from kverr.present.answer import of_report

from kverr import __version__
from kverr.answers import explain_json, search_dict
from kverr.errors import KverrError, QueryError

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ResourceError
    from mcp.types import CallToolResult, TextContent, ToolAnnotations
    from pydantic import Field
except ImportError:  # an install without the extra: the command says what to install
    raise QueryError("kverr mcp needs the MCP SDK: pip install 'kverr[mcp]'.") from None

MAX_TEXT = 1 << 20  # characters of one paste or launch, as `kverr check --file` reads
SEARCH_LIMIT = 20  # records in one search answer, as `kverr search`

INSTRUCTIONS = """\
kverr knows every launch-argument error of SGLang and vLLM servers, extracted from their \
source. When a user pastes an error from launching one, call `explain` with the pasted text; \
when they show the command they launch with, call `check` (it runs the release's own checks \
on that command and answers with the fix of that very command). Quote the fix from the \
answer; `show` gives a record by the id an answer names."""

READ_ONLY = ToolAnnotations(readOnlyHint=True, openWorldHint=False)


def create_server(catalog: Path | None = None, *, source: str | None = None) -> MCPServer:
    """The server with its tools and resources, over the catalog at `catalog` (default: the
    packaged one); `source`: the release source `check` runs (default $KVERR_SOURCE, then an
    installed package)."""
    cat = open_catalog(catalog)  # one per server: each tool call reads it on its own cursor
    names = tuple(p["name"] for p in cat.projects)
    products = ", ".join(f"{p['name']} ({p['product']})" for p in cat.projects)
    Project = Literal[names]  # type: ignore[valid-type]
    orders = cat.release_orders()
    # WARNING: the SDK logs every request at INFO, on the stderr a desktop client keeps
    server = MCPServer("kverr", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    ProjectArg = Annotated[
        Project | None,
        Field(description=f"Only this project's errors: {products}. Default: every project."),
    ]
    ReleaseArg = Annotated[
        str | None,
        Field(
            description="The release the user runs, e.g. v0.5.9 or 0.5.9 (see `releases`)."
            " Default: every release kverr holds.",
            max_length=200,
        ),
    ]

    def explain(
        text: Annotated[
            str,
            Field(
                description="What the user pasted: an error line, a traceback or a whole"
                " launch log, as it is (log prefixes and all).",
                max_length=MAX_TEXT,
            ),
        ],
        release: ReleaseArg = None,
        project: ProjectArg = None,
    ) -> CallToolResult:
        """Explain an SGLang or vLLM launch error from pasted text: the known errors it holds,
        best first, each with its fix, meaning, cause and the releases it exists in, and advice
        from the values the message printed (`advice`), or the fix of the launch command the
        paste holds (`yourFix`). An empty list means no known launch-argument error is in it."""
        query, matches, cut = explain_query(cat, text, None, version=release, project=project)
        if matches:  # the fix of a launch the paste holds, or advice from the values it printed
            from kverr.advice import personalize

            matches = personalize(text, matches, release=release, source=source)
        doc = json.loads(explain_json(query, matches, cut))
        return _result(doc, md.answers(matches, orders))

    def check(
        command: Annotated[
            str,
            Field(
                description="The launch command (python -m sglang.launch_server --model-path M"
                " --tp 4 ...), or a paste or script that holds one.",
                max_length=MAX_TEXT,
            ),
        ],
        release: ReleaseArg = None,
    ) -> CallToolResult:
        """Check a launch command before it runs, against its release's own checks: every
        error it would raise, each with the smallest fix of this very command (verified by
        running the checks), and the values the release would change silently. Needs the
        release's source on the server; slower than `explain` (seconds)."""
        from kverr.verify.preflight import check_text

        _report, data = check_text(command, release=release, source=source)
        return _result(data, md.check(of_report(data)))

    def show(
        id: Annotated[
            str,
            Field(
                description="A record id (16 hex), its slug, or an id prefix (6+ hex), as an"
                " answer names it.",
                max_length=200,
            ),
        ],
    ) -> CallToolResult:
        """One known error by its id: the full record and its answer (fix, meaning, cause,
        source, releases)."""
        m = record_match_or_raise(cat, id)
        return _result(
            {"record": m.record, "releases": list(m.revisions)}, md.match(m, orders) + "\n"
        )

    def search(
        query: Annotated[
            str,
            Field(
                description='Words of the message, e.g. "radix cache"; empty when `flag` is given.',
                max_length=1000,
            ),
        ],
        flag: Annotated[
            str | None,
            Field(
                description="A launch flag (--page-size): the errors whose check involves it,"
                " instead of words.",
                max_length=200,
            ),
        ] = None,
        project: ProjectArg = None,
        release: ReleaseArg = None,
    ) -> CallToolResult:
        """Find known errors by the words of their message, or by a launch flag their check
        involves (give one of the two). The first results, with the total."""
        what, matches, total = search_query(
            cat, query, flag, version=release, limit=SEARCH_LIMIT, offset=0, project=project
        )
        doc = search_dict(what, matches, total, 0, SEARCH_LIMIT)
        return _result(doc, md.search_list(matches, total))

    def releases(
        project: Annotated[Project, Field(description=f"The project: {products}.")],
    ) -> CallToolResult:
        """The releases (tags, and the newest commits) of a project that kverr holds, oldest
        first: the values `release` accepts in the other tools."""
        info = cat.project(project)
        names = cat.release_order(project=project)
        doc = {
            "project": project,
            "product": info["product"],
            "datasetVersion": info.get("datasetVersion") or "",
            "releases": names,
        }
        listed = ", ".join(md.code(n) for n in names) or "none"
        text = f"{md.escape(info['product'])} releases kverr holds, oldest first: {listed}\n"
        return _result(doc, text)

    for fn in (explain, check, show, search, releases):
        server.add_tool(_guarded(fn), name=fn.__name__, annotations=READ_ONLY)

    for p in cat.projects:
        _add_records(server, cat, p["name"], p["product"])
    return server


def _add_records(server: MCPServer, cat: Any, project: str, product: str) -> None:
    """kverr://<project>/<id>: one record as `kverr show --json` prints it."""

    def record(id: str) -> str:
        m = cat.record_match(id)
        if m is None or (m.record.get("project") or "sglang") != project:
            raise ResourceError(
                f"no {product} record has the id, slug or id prefix {id[:80]!r};"
                " find one with the search tool."
            )
        return json.dumps({"record": m.record, "releases": list(m.revisions)}, indent=2)

    server.resource(
        f"kverr://{project}/{{id}}",
        name=f"{project}-record",
        description=f"A known {product} launch error by its id: the record and its releases.",
        mime_type="application/json",
    )(record)


def _guarded(fn: Callable[..., CallToolResult]) -> Callable[..., CallToolResult]:
    """`fn` with kverr's own failures as tool errors: the one-line message the CLI prints."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> CallToolResult:
        try:
            return fn(*args, **kwargs)
        except KverrError as exc:
            return CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True)

    return call


def _result(doc: dict[str, Any], markdown: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=markdown)], structured_content=doc)


# ---------------------------------------------------------------- running it


def parse_http(spec: str) -> tuple[str, int]:
    """HOST:PORT ([::1]:PORT for IPv6); QueryError naming the value otherwise."""
    host, sep, port = spec.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise QueryError(
            f"--http {spec!r} is not HOST:PORT; pass e.g. --http 127.0.0.1:8766 (port 0 picks a free one)."
        )
    return host, int(port)


def run(
    catalog: Path | None = None,
    *,
    http: str | None = None,
    source: str | None = None,
    on_listen: Callable[[str], None] | None = None,
) -> None:
    """Serve until the client goes (stdio) or the process is stopped (HTTP); `on_listen`
    gets the endpoint's URL once the HTTP socket listens."""
    address = parse_http(http) if http is not None else None  # before the catalog opens
    server = create_server(catalog, source=source)
    if address is None:
        server.run("stdio")
        return
    import anyio
    import uvicorn
    from kverr.feeds.server import bind

    host, port = address
    sock = bind(host, port)  # before uvicorn: port 0 works, and the real port is known
    sock.listen(128)
    if on_listen is not None:
        shown = f"[{host}]" if ":" in host else host
        on_listen(f"http://{shown}:{sock.getsockname()[1]}/mcp")
    app = server.streamable_http_app(host=host)
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=5)
    anyio.run(uvicorn.Server(config).serve, [sock])
