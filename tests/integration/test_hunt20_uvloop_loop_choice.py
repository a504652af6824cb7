"""ROCKETSTORE_EVENT_LOOP picks the loop that rocketstore.remoting.transport.new_event_loop (and so the broker,
the name server, ``rocketstore`` commands and the blocking clients' loop threads) makes: ``auto`` (uvloop when
installed), ``asyncio`` or ``uvloop``; any other value, or uvloop asked for where it is missing, is a clear
error rather than a quiet fallback.  And the ``both_loops`` marker (tests/conftest.py) really runs a test's
cluster, its scenario and its blocking clients on the loop kind of each run."""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import warnings
from pathlib import Path

import pytest
from local_cluster import LocalCluster, run_within

from rocketstore.cli.main import main
from rocketstore.client import BlockingProducer
from rocketstore.errors import EventLoopChoiceError
from rocketstore.remoting.transport import EVENT_LOOP_ENV, new_event_loop


def _kind(loop: asyncio.AbstractEventLoop) -> str:
    return "uvloop" if type(loop).__module__.split(".")[0] == "uvloop" else "asyncio"


def _made_kind() -> str:
    loop = new_event_loop()
    try:
        return _kind(loop)
    finally:
        loop.close()


def test_asyncio_is_chosen_even_where_uvloop_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(EVENT_LOOP_ENV, "asyncio")
    assert _made_kind() == "asyncio"
    monkeypatch.setenv(EVENT_LOOP_ENV, " AsyncIO ")  # as a shell or a .env file may spell it
    assert _made_kind() == "asyncio"


def test_uvloop_and_auto_make_uvloop_loops_where_it_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("uvloop")
    for value in ("uvloop", "auto", ""):
        monkeypatch.setenv(EVENT_LOOP_ENV, value)
        assert _made_kind() == "uvloop", value


def test_uvloop_asked_for_where_it_is_missing_is_an_error_and_auto_falls_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # ``import uvloop`` raises ImportError, as where absent
    monkeypatch.setenv(EVENT_LOOP_ENV, "uvloop")
    with pytest.raises(EventLoopChoiceError, match=r"ROCKETSTORE_EVENT_LOOP=uvloop but uvloop is not installed"):
        new_event_loop()
    monkeypatch.setenv(EVENT_LOOP_ENV, "auto")
    assert _made_kind() == "asyncio"


def test_an_unknown_choice_is_refused_naming_the_variable_and_the_choices(monkeypatch: pytest.MonkeyPatch,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(EVENT_LOOP_ENV, "tokio")
    with pytest.raises(EventLoopChoiceError) as caught:
        new_event_loop()
    assert str(caught.value) == "ROCKETSTORE_EVENT_LOOP='tokio': expected one of auto, asyncio, uvloop"
    assert isinstance(caught.value, ValueError)
    # a command says so on one line, without a traceback or a "coroutine never awaited" warning, before it
    # starts anything
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        assert main(["namesrv", "--port", "0", "--host", "127.0.0.1"]) != 0
        gc.collect()
    assert [str(w.message) for w in warned if issubclass(w.category, RuntimeWarning)] == []
    err = capsys.readouterr().err
    assert err.strip() == "rocketstore: error: ROCKETSTORE_EVENT_LOOP='tokio': expected one of auto, asyncio, uvloop"


def test_the_suite_runs_on_asyncio_unless_a_test_asks_for_both_loops(event_loop_kind: str) -> None:
    # tests/conftest.py sets "asyncio" unless the run itself chose a kind (ROCKETSTORE_EVENT_LOOP=uvloop
    # python -m pytest ...), which it keeps: then every test runs on that kind
    suite_kind = os.environ[EVENT_LOOP_ENV]
    assert suite_kind in ("asyncio", "uvloop")
    assert event_loop_kind == suite_kind and _made_kind() == suite_kind


@pytest.mark.both_loops
def test_both_loops_runs_the_cluster_the_scenario_and_blocking_clients_on_each_kind(
        tmp_path: Path, event_loop_kind: str) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        assert _kind(cluster.loop) == event_loop_kind

        async def scenario() -> str:
            return _kind(asyncio.get_running_loop())

        assert run_within(scenario, 10) == event_loop_kind
        cluster.create_topic("LoopKindTopic")
        producer = BlockingProducer(cluster.namesrv_addr, "loop-kind-producer")
        try:
            assert producer.send("LoopKindTopic", b"on " + event_loop_kind.encode()).status == "SEND_OK"
            assert _kind(producer._loop) == event_loop_kind
        finally:
            producer.shutdown()
