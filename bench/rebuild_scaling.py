"""Does ``rocketstore pipeline rebuild`` scale with task slots?  One store, the CLI run with ``--master
local[1]`` and ``local[2]`` alternately (A B B A), wall time as the CLI reports it ("took").

    PYTHONPATH=src:. python -m bench.rebuild_scaling [--mib 600]

Informational (the ratio is local[1] / local[2] time on the same machine in the same run); on 2 shared cores
the driver's serial assembly of the output files caps the gain.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.rebuild_bench import REBUILD_SIZES, _build_store


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=600, help="commitlog size to build (default 600 MiB)")
    args = parser.parse_args(argv)
    sizes = dataclasses.replace(REBUILD_SIZES["full"], store_bytes=args.mib << 20)
    cli = str(Path(sys.executable).with_name("rocketstore"))
    work = Path(tempfile.mkdtemp(prefix="rocketstore-scaling-"))
    try:
        store = str(work / "store")
        _build_store(store, sizes)
        took: dict[str, list[float]] = {"local[1]": [], "local[2]": []}
        for master in ("local[1]", "local[2]", "local[2]", "local[1]"):
            shutil.rmtree(store + ".rebuilt", ignore_errors=True)
            out = subprocess.run([cli, "pipeline", "rebuild", store, "--master", master], capture_output=True,
                                 text=True, check=True).stdout
            match = re.search(r"took:\s+([\d.]+) s", out)
            if match is None:
                raise RuntimeError(f"no 'took:' line in the rebuild's output:\n{out}")
            took[master].append(float(match.group(1)))
            print(f"{master}: {took[master][-1]:.1f} s", flush=True)
        one, two = sum(took["local[1]"]) / 2, sum(took["local[2]"]) / 2
        print(f"rebuild of {args.mib} MiB: local[1] {one:.1f} s, local[2] {two:.1f} s -> {one / two:.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
