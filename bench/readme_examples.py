"""Re-run every command README.md shows (a ```text block whose first line is `$ plan-opt ...`)
and compare its output with the block, or rewrite the blocks (`--write`).

    python bench/readme_examples.py            # list the blocks whose output moved
    python bench/readme_examples.py --write    # rewrite them in place

A block that ends in a line of `...` shows only the head of the output: it is compared
and rewritten to the same number of lines; one with `...` inside is listed, never rewritten. Commands run from the repository root with
`.venv/bin` first on PATH, through bash (pipes and sed work as printed)."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"```text\n(\$ (plan-opt [^\n]*))\n(.*?)```", re.S)


def run(command: str) -> str:
    env = {**os.environ, "PATH": f"{ROOT / '.venv' / 'bin'}:{os.environ.get('PATH', '')}", "COLUMNS": "200"}
    done = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    return done.stdout


def refreshed(body: str, output: str) -> str | None:
    """The block's new text, or None when it elides lines inside (it is then listed, not rewritten)."""
    lines = body.rstrip("\n").split("\n")
    if any(line.strip() == "..." for line in lines[:-1]):
        return None
    if lines and lines[-1].strip() == "...":
        head = output.rstrip("\n").split("\n")[: len(lines) - 1]
        return "\n".join(head + [lines[-1]]) + "\n"
    return output if output.endswith("\n") else output + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help="rewrite the blocks whose output moved")
    ap.add_argument("--readme", default=str(ROOT / "README.md"))
    args = ap.parse_args()
    path = Path(args.readme)
    text = path.read_text()
    moved = []

    def sub(m: re.Match[str]) -> str:
        new = refreshed(m.group(3), run(m.group(2)))
        if new is None:
            moved.append(m.group(2) + "  (elided inside: check by hand)")
            return m.group(0)
        if new != m.group(3):
            moved.append(m.group(2))
        return f"```text\n{m.group(1)}\n{new}```"

    out = BLOCK.sub(sub, text)
    for cmd in moved:
        print(f"moved: {cmd}")
    print(f"{len(BLOCK.findall(text))} blocks, {len(moved)} moved")
    if args.write and moved:
        path.write_text(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
