"""`kverr respond`: recorded issue events (tests/fixtures/issues/, written for these tests)
answered with one comment, against the shipped catalog. The comment is rendered as GitHub
would (CommonMark + GFM tables and strikethrough, raw HTML allowed, as GitHub renders a
comment before sanitising it) and no tag, link or mention from the issue may survive. The
posting path runs a real `kverr respond` process against a local HTTP server on 127.0.0.1
that plays the three REST endpoints it uses: list, create and update issue comments."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import threading
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from kverr.feeds.respond import MARKER, no_pings
from markdown_it import MarkdownIt
from typer.testing import CliRunner

from kverr.cli import app

ROOT = Path(__file__).resolve().parents[1]
ISSUES = Path(__file__).resolve().parent / "fixtures" / "issues"
TOKEN = "ghs_test-token-for-the-local-server"

# fixture -> the kverr ids its comment must hold (empty: kverr stays silent)
ANSWERS = {
    "sglang-moe-dp": ["35f71508f59b40d3"],
    "sglang-ssl": ["4f44e4523bfffe61"],
    "sglang-choice": ["0630cf22a53ce3ef"],
    "sglang-comment": ["38cd822a1fb91248"],
    "vllm-tp-gpus": ["b86079f50575a98d"],
    "vllm-lora-rank": ["c73d1da84e5f5e9b"],
    "vllm-hostile": ["e4799263647bfc01"],
    "sglang-hostile": ["a239d118ea75c8ad", "0630cf22a53ce3ef", "013f50a5625463b3"],
    "negative-feature": [],
    "negative-perf": [],
}
HOSTILE = ("vllm-hostile", "sglang-hostile")


def dry_run(name: str, *extra: str):
    env = {"GITHUB_TOKEN": "", "KVERR_SOURCE": ""}
    args = ["respond", "--dry-run", "--event", str(ISSUES / f"{name}.json"), *extra]
    return CliRunner().invoke(app, args, env=env)


@pytest.fixture(scope="module")
def comments() -> dict[str, str]:
    """Each fixture's dry-run output (stdout alone: the comment)."""
    out = {}
    for name in ANSWERS:
        got = dry_run(name)
        assert got.exit_code == 0, got.output
        out[name] = got.stdout
    return out


def test_eight_answers_and_two_silences(comments) -> None:
    answered = {n for n, text in comments.items() if text}
    assert answered == {n for n, ids in ANSWERS.items() if ids} and len(answered) == 8
    for name, ids in ANSWERS.items():
        text = comments[name]
        if not ids:
            assert text == ""
            continue
        assert text.startswith(MARKER + "\n")
        assert [i for i in ids if f"kverr id `{i}`" not in text] == [], name
        assert text.count(MARKER) == 1
        footer = text.rstrip().rsplit("\n", 1)[-1]
        assert footer.startswith("Answered by kverr 0.1.0 for "), footer


def test_the_footer_names_the_release_of_the_answer(comments) -> None:
    assert "Answered by kverr 0.1.0 for SGLang seed." in comments["sglang-ssl"]
    assert "Answered by kverr 0.1.0 for vLLM 28be48fa94." in comments["vllm-tp-gpus"]
    got = dry_run("sglang-ssl", "--release", "v0.5.10rc0")
    assert "for SGLang v0.5.10rc0." in got.stdout


class Tags(HTMLParser):
    """Every element of the rendered comment, and the text that is not code or a link."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.comments: list[str] = []
        self.prose: list[str] = []
        self.inside: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in ("hr", "br", "img"):
            self.inside.append(tag)

    def handle_endtag(self, tag):
        if tag in self.inside:
            del self.inside[len(self.inside) - 1 - self.inside[::-1].index(tag) :]

    def handle_comment(self, data):
        self.comments.append(data)

    def handle_data(self, data):
        if data.strip() and not {"code", "pre", "a"} & set(self.inside):
            self.prose.append(data)


GFM = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
KVERR_TAGS = {"p", "strong", "em", "code", "pre", "ul", "li", "hr", "a"}
# GitHub turns @name into a notification when it stands in prose (not code, not a link)
MENTION = re.compile(r"(?<![\w`])@[A-Za-z0-9]")


def render(markdown: str) -> Tags:
    tags = Tags()
    tags.feed(GFM.render(markdown))
    tags.close()
    return tags


@pytest.mark.parametrize("name", [n for n, ids in ANSWERS.items() if ids])
def test_the_comment_renders_no_markup_from_the_issue(comments, name) -> None:
    tags = render(comments[name])
    assert {t for t, _ in tags.tags} <= KVERR_TAGS, tags.tags
    for tag, attrs in tags.tags:
        if tag == "a":  # kverr's own source links alone
            assert set(attrs) == {"href"} and attrs["href"].startswith("https://github.com/")
        elif tag == "code":
            assert (
                set(attrs) <= {"class"} and attrs.get("class", "language-bash") == "language-bash"
            )
        else:
            assert attrs == {}, (tag, attrs)
    assert tags.comments == [" kverr-respond "]  # the marker, kverr's one raw HTML
    prose = " ".join(tags.prose)
    assert not MENTION.search(prose), prose
    assert "javascript:" not in prose.replace("\\", "")
    # the footer is the last paragraph: no fence the issue opened swallowed the rest
    assert tags.prose[-1].startswith("Answered by kverr")


def test_advice_from_the_values_comes_first(tmp_path) -> None:
    event = json.loads((ISSUES / "sglang-comment.json").read_text())
    event["comment"]["body"] = (
        "AssertionError: mamba_track_interval 100 must be divisible by page_size 64"
    )
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event))
    got = CliRunner().invoke(
        app, ["respond", "--dry-run", "--event", str(path)], env={"KVERR_SOURCE": ""}
    )
    fixes = got.stdout.split("**How to fix**\n", 1)[1]
    assert fixes.startswith(
        "- With `--page-size` 64, use `--mamba-track-interval` 128, 64 or 192 \\(not 100\\).\n"
    )


@pytest.mark.parametrize(
    "paste",
    [
        "ValueError: Invalid disaggregation_mode={self.disaggregation_mode}@octocat",
        "launch_server.py: error: argument --mamba-ssm-dtype: invalid choice: '{value}@octocat'"
        " (choose from 'float32', 'bfloat16')",
    ],
)
def test_a_value_that_names_a_placeholder_is_not_filled_in_again(paste) -> None:
    from kverr.catalog import open_catalog
    from kverr.feeds.respond import compose

    with open_catalog() as cat:
        text = compose(cat, paste)
    # the paste is quoted as it was written, its braces never read as ours to fill
    assert "{value}@octocat" in text or "={self.disaggregation_mode}@octocat`" in text
    assert (
        "disaggregation_mode=None" not in text and "{value}@octocat'" not in text.split("\n", 3)[3]
    )
    tags = render(text)
    assert not MENTION.search(" ".join(tags.prose)), tags.prose


def test_hostile_text_is_quoted_as_code(comments) -> None:
    vllm = comments["vllm-hostile"]
    assert (
        "``Unknown tokenizer mode: <img src=x onerror=alert(1)>@octocat`</code>."
        " Must be either 'auto', 'slow' or 'mistral'.``"
    ) in vllm
    for bait in ("<script>", "iframe", "<details>", "alert('title')", "javascript:alert(1)"):
        assert bait not in vllm  # the issue's own markup and title are never repeated
    sglang = comments["sglang-hostile"]
    assert "`Invalid disaggregation_mode=@octocat<script>alert(1)</script>`" in sglang
    # the pasted markup stands only in that code span, never in prose
    quoted = "`Invalid disaggregation_mode=@octocat<script>alert(1)</script>`"
    assert "<script>" not in sglang.replace(quoted, "")
    # a pasted value in prose: escaped, its mention in code
    assert "'`@admin`\\<img src=x onerror=alert\\(1\\)\\>' is not a choice" in sglang
    assert "````SSL key file not found: '```</code><b>x</b>[y](javascript:z)'." in sglang
    lora = comments["vllm-lora-rank"]
    assert "**ValueError**: `max_lora_rank (24) must be one of (1, 8, 16" in lora
    assert "Set `--max-lora-rank` to one of 1, 8, 16, 32" in lora


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("hi @octocat, see `x`", "hi `@octocat`, see `x`"),
        ("'@a-b' and me@example.com", "'`@a-b`' and me@example.com"),
        ("`@in-code` stays", "`@in-code` stays"),
        ("odd ` tick @x", "odd ' tick `@x`"),
        (
            "see https://evil.example/a?b and www.x.io",
            "see `https://evil.example/a?b` and `www.x.io`",
        ),
    ],
)
def test_no_pings(text, want) -> None:
    assert no_pings(text) == want


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("bot-comment", "the text is by github-actions[bot], an app"),
        ("pull-request-comment", "it is a pull request"),
    ],
)
def test_events_kverr_does_not_answer(name, said) -> None:
    got = dry_run(name)
    assert got.exit_code == 0 and got.stdout == ""
    assert said in got.stderr


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (None, "cannot read the event"),
        ("{not json", "is not JSON"),
        ('{"action": "opened"}', "has no issue and repository"),
        ('{"issue": {"number": "7"}, "repository": {"full_name": "o/r"}}', "names no issue number"),
    ],
)
def test_a_bad_event_is_one_line(tmp_path, content, said) -> None:
    path = tmp_path / "event.json"
    if content is not None:
        path.write_text(content)
    got = CliRunner().invoke(app, ["respond", "--dry-run", "--event", str(path)])
    assert got.exit_code == 2
    assert said in got.output and len(got.output.strip().splitlines()) == 1


# ---------------------------------------------------------------- posting


class FakeGitHub(BaseHTTPRequestHandler):
    """List, create and update issue comments, as GitHub's REST API answers them; every
    request is kept in `self.server.log`."""

    def do_GET(self):  # noqa: N802
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)/issues/(\d+)/comments(\?.*)?", self.path)
        if not m:
            return self.reply(404, {"message": "Not Found"})
        found = [c for c in self.server.comments.values() if c["issue"] == int(m.group(2))]
        self.reply(200, [self.shown(c) for c in found])

    def do_POST(self):  # noqa: N802
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)/issues/(\d+)/comments", self.path)
        if not m:
            return self.reply(404, {"message": "Not Found"})
        if self.server.refuse:
            return self.reply(403, {"message": "Resource not accessible by integration"})
        body = self.body()["body"]
        cid = 5000 + len(self.server.comments)
        self.server.comments[cid] = {"id": cid, "issue": int(m.group(2)), "body": body,
                                     "login": "github-actions[bot]", "type": "Bot"}  # fmt: skip
        self.reply(201, self.shown(self.server.comments[cid]))

    def do_PATCH(self):  # noqa: N802
        m = re.fullmatch(r"/repos/[^/]+/[^/]+/issues/comments/(\d+)", self.path)
        if not m or int(m.group(1)) not in self.server.comments:
            return self.reply(404, {"message": "Not Found"})
        comment = self.server.comments[int(m.group(1))]
        comment["body"] = self.body()["body"]
        self.reply(200, self.shown(comment))

    def body(self) -> dict:
        data = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.log.append((self.command, self.path, self.headers["Authorization"]))
        return data

    def shown(self, c: dict) -> dict:
        base = f"http://127.0.0.1:{self.server.server_port}/repos/example-org/llm-serving"
        return {
            "id": c["id"], "body": c["body"], "url": f"{base}/issues/comments/{c['id']}",
            "user": {"login": c["login"], "type": c["type"]},
        }  # fmt: skip

    def reply(self, status: int, doc) -> None:
        if self.command == "GET":
            self.server.log.append((self.command, self.path, self.headers["Authorization"]))
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@contextlib.contextmanager
def github():
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeGitHub)
    server.comments, server.log, server.refuse = {}, [], False
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        thread.join(timeout=10)
        server.server_close()


def respond(server, event: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "GITHUB_TOKEN": TOKEN, "GITHUB_EVENT_PATH": str(event)}
    env.pop("KVERR_SOURCE", None)
    env["PYTHONPATH"] = str(ROOT)
    api = f"http://127.0.0.1:{server.server_port}"
    return subprocess.run(
        [sys.executable, "-m", "kverr", "respond", "--api-url", api, *extra],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def edited(tmp_path: Path, name: str, body: str) -> Path:
    """The fixture `name` as an `edited` event with a new body."""
    event = json.loads((ISSUES / f"{name}.json").read_text())
    event["action"], event["issue"]["body"] = "edited", body
    path = tmp_path / f"{name}-edited.json"
    path.write_text(json.dumps(event))
    return path


def test_posting_creates_once_then_edits(tmp_path) -> None:
    with github() as gh:
        # someone else's comment that starts with the marker is not kverr's to edit
        gh.comments[1] = {"id": 1, "issue": 101, "body": MARKER + "\nme too",
                          "login": "mallory", "type": "User"}  # fmt: skip
        first = respond(gh, ISSUES / "sglang-moe-dp.json")
        assert first.returncode == 0, first.stderr
        assert "created kverr's comment on example-org/llm-serving#101" in first.stderr
        again = respond(gh, ISSUES / "sglang-moe-dp.json")
        assert "unchanged kverr's comment" in again.stderr
        later = edited(tmp_path, "sglang-moe-dp", "Now with the cert:\nValueError: --ssl-certfile"
                       " requires --ssl-keyfile to be specified as well.")  # fmt: skip
        third = respond(gh, later)
        assert "updated kverr's comment" in third.stderr, third.stderr
        silent = respond(gh, edited(tmp_path, "sglang-moe-dp", "Fixed, thanks!"))
        assert "nothing posted" in silent.stderr
        writes = [(m, p) for m, p, _ in gh.log if m != "GET"]
        ours = [c for c in gh.comments.values() if c["login"] == "github-actions[bot]"]
    assert writes == [
        ("POST", "/repos/example-org/llm-serving/issues/101/comments"),
        ("PATCH", f"/repos/example-org/llm-serving/issues/comments/{ours[0]['id']}"),
    ]
    assert len(ours) == 1 and "kverr id `4f44e4523bfffe61`" in ours[0]["body"]
    assert gh.comments[1]["body"] == MARKER + "\nme too"
    assert {auth for _, _, auth in gh.log} == {f"token {TOKEN}"}
    # the silent run did not even look: a negative costs no request
    assert len([1 for m, _, _ in gh.log if m == "GET"]) == 3


def test_a_refused_comment_is_one_line_naming_the_issue() -> None:
    with github() as gh:
        gh.refuse = True
        got = respond(gh, ISSUES / "vllm-tp-gpus.json")
    assert got.returncode == 2
    assert got.stderr.strip().splitlines() == [
        "kverr: GitHub answered 403 (Resource not accessible by integration) for the comment on"
        " example-org/llm-serving#105; nothing was posted. The workflow needs `permissions:"
        " issues: write`."
    ]


def test_no_token_is_one_line(tmp_path) -> None:
    env = {"GITHUB_TOKEN": ""}
    args = ["respond", "--event", str(ISSUES / "sglang-ssl.json")]
    got = CliRunner().invoke(app, args, env=env)
    assert got.exit_code == 2 and "no GitHub token" in got.output


@pytest.mark.sandbox  # runs the fixture release's code
def test_a_launch_with_a_mistake_gets_its_own_fix(tmp_path) -> None:
    from test_sources import Git
    from verify_fixture import sglang_files

    g = Git(tmp_path / "sglang")
    g.commit("fixture", sglang_files())
    g.tag("v9.9.9")
    # without a source kverr knows no error in this issue: it holds a launch, not a message
    assert dry_run("sglang-launch-mistake").stdout == ""
    got = dry_run("sglang-launch-mistake", "--source", str(g.root), "--release", "9.9.9")
    assert got.exit_code == 0, got.output
    text = got.stdout
    assert text.startswith(MARKER + "\n\n**Your launch, checked by kverr** · `v9.9.9`")
    assert "**AssertionError**: `tp_size must be at most 8`" in text
    assert "```bash\npython -m sglang.launch_server --model-path org/m --tp 8\n```" in text
    assert "Answered by kverr 0.1.0 for v9.9.9 \\(its own checks, on cuda-sm90\\)." in text
    tags = render(text)
    assert {t for t, _ in tags.tags} <= KVERR_TAGS


def test_the_action_passes_no_input_through_the_shell() -> None:
    yaml = pytest.importorskip("yaml")
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    scripts = [step["run"] for step in action["runs"]["steps"] if "run" in step]
    assert scripts and not [s for s in scripts if "${{" in s]  # inputs come as env vars
    assert set(action["inputs"]) == {"token", "release", "source", "dry-run", "python-version"}


def test_the_documented_workflow_may_write_issues_and_nothing_else() -> None:
    yaml = pytest.importorskip("yaml")
    doc = (ROOT / "docs" / "integrations.md").read_text()
    workflow = yaml.safe_load(doc.split("```yaml\n", 1)[1].split("```", 1)[0])
    assert workflow["permissions"] == {"issues": "write"}
    assert set(workflow[True]) == {"issues", "issue_comment"}  # YAML 1.1 reads `on` as True
    (job,) = workflow["jobs"].values()
    assert job["concurrency"]["group"] == "kverr-${{ github.event.issue.number }}"
