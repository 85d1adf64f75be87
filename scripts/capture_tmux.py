"""Capture `kverr explain` in real tmux sessions at several widths (screenshots of
the terminal card), as the screen shows it and as a copy of it (wrapped lines joined).

    python scripts/capture_tmux.py [--widths 80 120] [--out tests/artifacts] ["LOG LINE"]

Writes tmux-explain-<width>.txt (the screen), -joined.txt (what a mouse copy gives) and
-ansi.txt (with the colour codes). Needs tmux; runs the `kverr` beside this Python.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

LINE = "chunked_prefill_size must be divisible by page_size"


def capture(width: int, line: str, out: Path) -> None:
    kverr = Path(sys.executable).parent / "kverr"
    session = f"kverr-capture-{width}"
    subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    shell = "env -u NO_COLOR -u PAGER -u KVERR_PAGER TERM=xterm-256color PS1='$ ' bash --norc --noprofile"
    subprocess.run(
        ["tmux", "new-session", "-d", "-x", str(width), "-y", "60", "-s", session, shell],
        check=True,
    )
    try:
        time.sleep(0.5)
        cmd = f"clear; {shlex.quote(str(kverr))} explain {shlex.quote(line)}"
        subprocess.run(["tmux", "send-keys", "-t", session, cmd, "Enter"], check=True)
        time.sleep(4)
        for suffix, flags in (("", []), ("-joined", ["-J"]), ("-ansi", ["-e"])):
            text = subprocess.run(["tmux", "capture-pane", "-t", session, "-p", *flags],
                                  capture_output=True, text=True, check=True).stdout  # fmt: skip
            (out / f"tmux-explain-{width}{suffix}.txt").write_text(text.rstrip() + "\n")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("line", nargs="?", default=LINE)
    ap.add_argument("--widths", type=int, nargs="+", default=[80, 120])
    ap.add_argument(
        "--out", type=Path, default=Path(__file__).resolve().parents[1] / "tests" / "artifacts"
    )
    args = ap.parse_args()
    if shutil.which("tmux") is None:
        sys.exit("capture_tmux: tmux is not installed; apt-get install -y tmux")
    args.out.mkdir(parents=True, exist_ok=True)
    for width in args.widths:
        capture(width, args.line, args.out)
        print(f"wrote {args.out}/tmux-explain-{width}{{,-joined,-ansi}}.txt")


if __name__ == "__main__":
    main()
