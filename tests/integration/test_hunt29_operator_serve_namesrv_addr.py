"""`rocketstore serve -c broker.conf` registers its broker with its own name server: a namesrvAddr in the file
(a production broker.conf reused) is not used, and the start says so once, naming both and the command that
would use the file's.

Found as an operator starting `serve` with a broker.conf holding namesrvAddr=<the cluster's name server>: the
broker never appeared in that cluster and nothing said why."""

from __future__ import annotations

from pathlib import Path

from serve_process import ServeProcess, write_broker_conf


def test_a_files_name_server_that_serve_does_not_use_is_named(tmp_path: Path) -> None:
    conf = write_broker_conf(tmp_path / "broker.conf", namesrvAddr="127.0.0.1:1")
    serve = ServeProcess(tmp_path / "store", conf)
    with serve:
        pass  # started (it printed its addresses), then stopped
    assert serve.proc is not None and serve.proc.stderr is not None
    lines = [line for line in serve.proc.stderr.read().splitlines() if "namesrvAddr=127.0.0.1:1 in" in line]
    assert len(lines) == 1, lines
    assert "WARNING" in lines[0] and "is not used" in lines[0] and "rocketstore broker -c" in lines[0]
