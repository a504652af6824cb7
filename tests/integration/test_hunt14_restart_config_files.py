"""A broker's config/*.json files damaged between runs, as 4.9.3's ConfigManager.load treats them: a main file
that is missing, empty or unreadable falls back to ``<file>.bak``; a ``.bak`` that is there but unreadable too
makes the broker refuse to start (BrokerController.initialize fails, the broker exits) rather than start empty
and overwrite both.  An unreadable file with no ``.bak`` (missing or empty) refuses too, where 4.9.3 starts
empty and its next two writes replace the file and then its ``.bak`` (hunt 23: the data was lost).

Each case runs the real ``rocketstore serve`` on the store in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from serve_process import ServeProcess, cli, env, write_broker_conf

GARBAGE = b'{"dataVersion":{"counter":3,"timest\x00\x00\x00\x00'
TOPIC = "Hunt14Kept"
GROUP = "hunt14_kept_group"

FILES = ["topics.json", "subscriptionGroup.json", "consumerOffset.json", "delayOffset.json"]


def _prepare(tmp_path: Path) -> tuple[Path, Path]:
    """A store whose config files name TOPIC, GROUP, an offset of GROUP and a delay offset."""
    conf = write_broker_conf(tmp_path / "broker.conf")
    store = tmp_path / "store"
    with ServeProcess(store, conf) as serve:
        out = cli("topic", "create", TOPIC, "-n", serve.namesrv_addr)
        assert out.returncode == 0, out.stderr
        out = cli("group", "update", GROUP, "-n", serve.namesrv_addr)
        assert out.returncode == 0, out.stderr
    config = store / "config"
    offsets = {"offsetTable": {f"{TOPIC}@{GROUP}": {"0": 7}}}
    (config / "consumerOffset.json").write_text(json.dumps(offsets), encoding="utf-8")
    (config / "delayOffset.json").write_text('{"offsetTable":{1:0}}', encoding="utf-8")
    return store, conf


def _start_or_refuse(store: Path, conf: Path) -> tuple[ServeProcess | None, int, str]:
    """(the running serve, 0, "") when it starts; (None, exit code, stderr) when it refuses."""
    args = [sys.executable, "-m", "rocketstore.cli.main", "serve", "--store", str(store),
            "--namesrv-port", "0", "--broker-port", "0", "-c", str(conf)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    if "listening on" in first:
        proc.kill()
        proc.wait()
        serve = ServeProcess(store, conf)
        return serve.start(), 0, ""
    return None, proc.wait(), proc.stderr.read()


@pytest.mark.parametrize("name", FILES)
def test_a_torn_file_with_a_torn_bak_stops_the_broker_and_leaves_both_files(tmp_path: Path, name: str) -> None:
    store, conf = _prepare(tmp_path)
    path = store / "config" / name
    path.write_bytes(GARBAGE)
    Path(f"{path}.bak").write_bytes(GARBAGE[:20])
    serve, code, stderr = _start_or_refuse(store, conf)
    if serve is not None:
        serve.terminate()
        pytest.fail(f"the broker started on an unreadable {name} and {name}.bak (4.9.3 refuses to)")
    assert code != 0
    assert name in stderr and "Traceback" not in stderr, stderr
    # nothing was overwritten: the files can still be repaired by hand
    assert path.read_bytes() == GARBAGE
    assert Path(f"{path}.bak").read_bytes() == GARBAGE[:20]


def test_a_missing_main_file_with_a_torn_bak_stops_the_broker_too(tmp_path: Path) -> None:
    store, conf = _prepare(tmp_path)
    path = store / "config" / "consumerOffset.json"
    path.unlink()
    Path(f"{path}.bak").write_bytes(GARBAGE)
    serve, code, stderr = _start_or_refuse(store, conf)
    if serve is not None:
        serve.terminate()
        pytest.fail("the broker started on a missing consumerOffset.json and an unreadable .bak")
    assert code != 0 and "consumerOffset.json" in stderr, stderr


def _group_offset(serve: ServeProcess) -> int | None:
    out = cli("group", "progress", GROUP, "-t", TOPIC, "-n", serve.namesrv_addr, "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["queues"]
    found = [r for r in rows if r.get("topic") == TOPIC and r.get("queueId") == 0]
    return found[0]["consumerOffset"] if found else None


def test_a_torn_file_with_a_good_bak_starts_from_the_bak(tmp_path: Path) -> None:
    store, conf = _prepare(tmp_path)
    config = store / "config"
    for name in ("topics.json", "consumerOffset.json"):
        path = config / name
        Path(f"{path}.bak").write_bytes(path.read_bytes())
        path.write_bytes(GARBAGE)
    serve, code, stderr = _start_or_refuse(store, conf)
    assert serve is not None, f"refused to start ({code}): {stderr}"
    try:
        out = cli("topic", "route", TOPIC, "-n", serve.namesrv_addr)
        assert out.returncode == 0, out.stderr
        assert _group_offset(serve) == 7
    finally:
        serve.terminate()
    # the next write replaced the torn file with a whole one
    json.loads((config / "topics.json").read_text(encoding="utf-8"))


def test_a_main_file_that_is_json_but_not_an_object_falls_back_to_the_bak(tmp_path: Path) -> None:
    store, conf = _prepare(tmp_path)
    path = store / "config" / "consumerOffset.json"
    Path(f"{path}.bak").write_bytes(path.read_bytes())
    path.write_text("[1]", encoding="utf-8")
    serve, code, stderr = _start_or_refuse(store, conf)
    assert serve is not None, f"refused to start ({code}): {stderr}"
    try:
        assert _group_offset(serve) == 7
    finally:
        serve.terminate()


def test_a_torn_file_without_a_bak_stops_the_broker_and_is_kept(tmp_path: Path) -> None:
    store, conf = _prepare(tmp_path)
    path = store / "config" / "subscriptionGroup.json"
    Path(f"{path}.bak").unlink(missing_ok=True)
    path.write_bytes(GARBAGE)
    serve, code, stderr = _start_or_refuse(store, conf)
    if serve is not None:
        serve.terminate()
        pytest.fail("the broker started on an unreadable subscriptionGroup.json without a .bak")
    assert code != 0 and "subscriptionGroup.json" in stderr and "Traceback" not in stderr, stderr
    assert path.read_bytes() == GARBAGE
