"""Generate data/noise.json: what a real SGLang log says besides the launch-argument errors.

    python scripts/noise_corpus.py ../.mirror/Clarit-AI+Engram/repo [--rev HEAD] [--out data/noise.json]

kverr's own extractor is run over every module of python/sglang/srt/ except the server-args
files (the profile's `files`) and the checks of its launch path that are records (they name a
flag or read one), and each logging, raise and assert template is rendered with
plausible values (a size is a number, a path a path, a name a model name), as the program
would print it. Two readers use the result:

- the catalog build (catalog/store.py) picks each record's prefilter anchor among its rare
  words by how often real log lines hold the word, not only by the catalog's own counts:
  "server", "requests" and "chunked_prefill_size" are in every other INFO line;
- bench/bench_scan.py and the scan tests write realistic logs from the rendered lines, and
  the false-answer tests check that the errors raised outside the server-args files get none.

Only rendered message text is kept, never source code. Regenerate it when the profile's files
or the mirror move on, and review the diff of the counts it prints.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import random
import re
import subprocess
import sys
from pathlib import Path

from kverr.extractor import extract_file, extract_files
from kverr.extractor.render import render
from kverr.extractor.sources import matches_any, read_git

from kverr.ftypes import SourceFile
from kverr.profile import default_profile

ROOT = "python/sglang/srt/"
MAX_MESSAGES = 4000  # the file stays small; this is far more than the distinct anchors need

# placeholder expression -> a plausible runtime value, by the words in its name
_VALUE_RULES = (
    (r"path|dir|file|ckpt|checkpoint", lambda r: f"/models/{r.choice(_MODELS)}"),
    (r"model|name|arch|tokenizer", lambda r: r.choice(_MODELS)),
    (r"time|latency|sec|elapsed|duration|ratio|frac|usage|throughput|mem|gb|util",
     lambda r: round(r.uniform(0.01, 80.0), 2)),
    (r"size|num|len|count|rank|id|idx|port|step|batch|tokens?|bs|tp|dp|pp|ep|world|seq|layer",
     lambda r: r.choice((0, 1, 2, 4, 8, 16, 64, 128, 4096, 8192))),
    (r"backend|method|mode|type|dtype|kind|format|device|policy|algo",
     lambda r: r.choice(("triton", "flashinfer", "fa3", "auto", "bfloat16", "cuda", "fp8"))),
    (r"\be\b|err|exc|error", lambda r: r.choice(("CUDA out of memory", "timed out", "[Errno 111] Connection refused"))),
    (r"url|host|addr|ip", lambda r: f"127.0.0.1:{r.randrange(20000, 60000)}"),
)  # fmt: skip
_MODELS = (
    "meta-llama/Llama-3.1-8B-Instruct",
    "Qwen/Qwen2.5-7B-Instruct",
    "deepseek-ai/DeepSeek-V3",
)


def value_for(expr: str, rnd: random.Random) -> object:
    name = expr.lower()
    for rx, make in _VALUE_RULES:
        if re.search(rx, name):
            return make(rnd)
    return rnd.choice((True, 3, "default", None, 0.5))


def render_site(site, rnd: random.Random) -> str | None:
    """The message as the program would print it, or None when a value cannot be made to fit
    (a `:.2f` spec on a name, a dynamic part)."""
    parts = site.template.parts
    if not parts or any(p.dynamic for p in parts):
        return None
    values = {p.expr or "": value_for(p.expr or "", rnd) for p in parts if not p.is_literal}
    for _ in range(2):
        try:
            text = render(site.template, values)
            break
        except (ValueError, TypeError, KeyError):
            values = {k: 1.5 for k in values}  # every numeric spec takes a float
    else:
        return None
    text = " ".join(text.split("\n")[0].split())  # one log line, as the prefilter reads it
    return text if len(text) >= 8 else None


def sources(repo: str, rev: str, profile_files: list[str]):
    names = subprocess.run(
        ["git", "-C", repo, "ls-tree", "-r", "--name-only", rev, ROOT],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for name in names:
        if not name.endswith(".py") or any(fnmatch.fnmatch(name, g) for g in profile_files):
            continue
        text = subprocess.run(
            ["git", "-C", repo, "show", f"{rev}:{name}"], capture_output=True, text=True
        ).stdout
        yield SourceFile(path=name, text=text, blob=name)


def launch_records(repo: str, rev: str, profile) -> set[tuple[str, int]]:
    """(file, line) of the launch-path checks that are records (a flag named or read): what
    a launch log says there is an answer, not noise."""
    _, srcs = read_git(repo, rev, profile.file_set())
    fxs = extract_files(srcs, rules=profile.extract)
    return {
        (s.file, s.line)
        for fx in fxs
        if matches_any(fx.source.path, profile.launch_path)
        for s in fx.sites
    }


def dumps(out: dict) -> str:
    """JSON with one message a line, so a regeneration reviews as a diff of lines."""
    head = [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in out.items() if k != "messages"]
    rows = ",\n".join("  " + json.dumps(m, ensure_ascii=False) for m in out["messages"])
    return "{\n" + "\n".join(head) + '\n "messages": [\n' + rows + "\n ]\n}\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", help="a git mirror of SGLang")
    ap.add_argument("--rev", default="HEAD")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "data/noise.json"))
    args = ap.parse_args(argv)
    profile = default_profile()
    globs = [g.replace("**/", "*") for g in profile.files]
    sha = subprocess.run(
        ["git", "-C", args.repo, "rev-parse", args.rev], capture_output=True, text=True, check=True
    ).stdout.strip()
    rnd = random.Random(12)
    seen: dict[str, dict[str, str]] = {}
    files = 0
    records = launch_records(args.repo, sha, profile)
    for src in sources(args.repo, sha, globs):
        files += 1
        for site in extract_file(src, rules=profile.extract).sites:
            if (site.file, site.line) in records:
                continue
            text = render_site(site, rnd)
            if text and text not in seen:
                seen[text] = {"kind": site.kind, "severity": site.severity, "text": text}
    messages = sorted(seen.values(), key=lambda m: (m["kind"], m["severity"], m["text"]))
    if len(messages) > MAX_MESSAGES:
        messages = sorted(random.Random(5).sample(messages, MAX_MESSAGES), key=lambda m: m["text"])
    out = {
        "generatedBy": "scripts/noise_corpus.py",
        "source": f"{profile.repository}@{sha}",
        "scope": f"{ROOT}**/*.py except {', '.join(profile.files)} and the launch path's records",
        "files": files,
        "messages": messages,
    }
    Path(args.out).write_text(dumps(out), "utf-8")
    kinds: dict[str, int] = {}
    for m in messages:
        kinds[m["kind"]] = kinds.get(m["kind"], 0) + 1
    print(f"{args.out}: {len(messages)} messages from {files} files at {sha[:10]} {kinds}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
