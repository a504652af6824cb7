"""Instructions per in-process put, counted by valgrind's callgrind: this tree against another revision.

    PYTHONPATH=src:. python -m bench.put_instructions [--rev 94b8620] [--body 100]

Counts are deterministic where wall-clock rates on this shared machine are not, so a small change to the put
path (a few per cent) can be told from noise in one run.  Each side puts *small* and then *large* messages
on a store opened with ``background=False`` and exits without closing (no dispatch, no flush): the
difference of the two totals over ``large - small`` is the cost of one put, start-up and imports cancelled
out.  The other revision is a ``git archive`` of its ``src`` in a temporary directory.  Needs valgrind.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_CHILD = """
import os, sys, tempfile
sys.path[:0] = [{src!r}, {root!r}]
from bench.common import make_messages
from rocketstore import MessageStore
from rocketstore.store.config import StoreConfig
n, body = int(sys.argv[1]), int(sys.argv[2])
messages = make_messages(body, 4096)
store = MessageStore.open(tempfile.mkdtemp(dir={scratch!r}), StoreConfig(mapped_file_size_commit_log=64 << 20),
                          background=False)
for m in messages[:500]:
    store.put(m)
put = store.put
for m in (messages * (n // len(messages) + 1))[:n]:
    put(m)
os._exit(0)
"""


def _instructions(src: Path, n: int, body: int, scratch: str) -> int:
    script = Path(scratch) / "child.py"
    script.write_text(_CHILD.format(src=str(src), root=str(ROOT), scratch=scratch), encoding="utf-8")
    # one OpenBLAS thread (numpy's pool otherwise spins a worker that valgrind, running one thread at a time,
    # charges a varying few hundred instructions per put)
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={scratch}/cg.out", sys.executable,
                          str(script), str(n), str(body)], capture_output=True, text=True, check=True, env=env)
    found = re.search(r"Collected : (\d+)", out.stderr)
    if found is None:
        raise RuntimeError(f"callgrind printed no total: {out.stderr[-500:]}")
    return int(found.group(1))


def per_put(src: Path, body: int, small: int, large: int) -> float:
    with tempfile.TemporaryDirectory() as scratch:
        return (_instructions(src, large, body, scratch) - _instructions(src, small, body, scratch)) / (large - small)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default=None, help="compare with this git revision's src")
    parser.add_argument("--body", type=int, default=100, help="body bytes (default 100)")
    parser.add_argument("--small", type=int, default=2000)
    parser.add_argument("--large", type=int, default=12000)
    args = parser.parse_args()
    ours = per_put(ROOT / "src", args.body, args.small, args.large)
    print(f"this tree: {ours:,.0f} instructions per {args.body} B put")
    if args.rev:
        with tempfile.TemporaryDirectory() as old:
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.rev, "src"], capture_output=True,
                                     check=True).stdout
            subprocess.run(["tar", "-x", "-C", old], input=archive, check=True)
            theirs = per_put(Path(old) / "src", args.body, args.small, args.large)
        print(f"{args.rev}: {theirs:,.0f} instructions per put; this tree / {args.rev} = {ours / theirs:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
