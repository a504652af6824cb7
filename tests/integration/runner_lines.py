"""What the C++ client runner scripts (cpp_client_runner.py for the 1.x client, cpp2_tx_runner.py for 2.x)
share: one JSON object a line on stdout, the message bodies the tests expect, and how a runner ends (an error
becomes an {"error"} line; os._exit, so a hanging C++ destructor cannot keep the process alive)."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable, Iterator

__all__ = ["body_of", "emit", "flag_pairs", "run_main"]

_print_lock = threading.Lock()


def emit(obj: object) -> None:
    """Write *obj* as one JSON line (callbacks of the C++ clients' threads write too: one lock)."""
    with _print_lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def body_of(i: int) -> str:
    return f"body-{i} ünï"


def flag_pairs(args: list[str]) -> Iterator[tuple[str, str]]:
    """``--flag value`` pairs of a command line, in order; SystemExit for a flag without its value (the caller
    refuses the flags it does not know)."""
    for i in range(0, len(args), 2):
        if i + 1 >= len(args):
            raise SystemExit(f"flag {args[i]!r} needs a value")
        yield args[i], args[i + 1]


def run_main(main: Callable[[list[str]], None]) -> None:
    """Run ``main(sys.argv[1:])``, report any exception as an {"error"} line, and leave without running the
    C++ destructors (exit status 1 after an error)."""
    code = 0
    try:
        main(sys.argv[1:])
    except BaseException as exc:  # noqa: BLE001 - report anything, then leave without running C++ destructors
        emit({"error": f"{type(exc).__name__}: {exc}"})
        code = 1
    sys.stdout.flush()
    os._exit(code)
