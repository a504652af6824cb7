"""``rocketstore serve`` stopped with SIGTERM the moment it printed its "listening" line (what a supervisor
or a script waiting for that line does) closes cleanly: exit status 0 and no abort file, so the next start
needs no crash recovery.  The signal handlers were installed only after the line was printed, and a SIGTERM
sent as soon as it was read killed the process with the default action (status -15, abort file left).
4.9.3's broker registers its shutdown hook before it starts, so a SIGTERM at any time after that closes it."""

from __future__ import annotations

from pathlib import Path

from serve_process import ServeProcess


def test_sigterm_right_after_the_listening_line_is_a_clean_stop(tmp_path: Path) -> None:
    for attempt in range(3):
        store = tmp_path / f"store{attempt}"
        serve = ServeProcess(store).start()
        assert serve.terminate() == 0, serve.stderr_tail()
        assert not (store / "abort").exists()
