"""Which of the package's files a command enters, and how often it moves between them.

    .venv/bin/python -m scripts.trace_files -- sweep good --db lab.duckdb \
        --truth references --correct ppi
    .venv/bin/python -m scripts.trace_files --top 0 -- choose good --db lab.duckdb

Runs ``truss-lab ARGS`` in this process under :func:`sys.setprofile` and follows the
calls made in ``truss_lab``'s own files once the command starts (importing a module,
the command's own before it starts and any imported on first use, is left out: a
file counts when one of its functions runs for the command).
It prints the files entered, the moves between files (a call from a function of one
of the package's files into a function of another: each is one hand-over of the
command's data across a file boundary), and per file how many moves entered it.
The command's own output goes to stdout as usual and the trace to stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=30, help="files listed (0: none)")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="the truss-lab command and options")
    ns = ap.parse_args()
    args = ns.args[1:] if ns.args[:1] == ["--"] else ns.args
    import click

    import truss_lab
    from truss_lab.faces.cli import cli

    # The command's module is imported before the trace: its decorators are not the run.
    cli.get_command(click.Context(cli), args[0])
    root = str(Path(truss_lab.__file__).parent) + "/"
    top = sys._getframe()
    entered: Counter[str] = Counter()
    files: set[str] = set()

    def prof(frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        here = code.co_filename
        if not here.startswith(root) or code.co_name == "<module>":
            return
        back, caller = frame.f_back, None
        while back is not None and back is not top:
            if back.f_code.co_name == "<module>":
                return  # a module imported on first use: its import is not the run
            # The nearest caller in the package (a call through numpy or click counts).
            if caller is None and back.f_code.co_filename.startswith(root):
                caller = back.f_code.co_filename
            back = back.f_back
        files.add(here)
        if caller is not None and caller != here:
            entered[here] += 1

    sys.setprofile(prof)
    try:
        cli.main(args=args, prog_name="truss-lab", standalone_mode=False)
    finally:
        sys.setprofile(None)
    rel = {f: f[len(root):] for f in files}
    print(f"files entered: {len(files)}; moves between files: {sum(entered.values())}",
          file=sys.stderr)
    for f, n in entered.most_common(ns.top or 0):
        print(f"  {n:5d}  {rel[f]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
