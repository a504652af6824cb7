"""Ctrl-C during a ``rocketstore pipeline`` batch job (report, archive --store, rebuild).

pyspark's SparkContext installs a SIGINT handler that calls cancelAllJobs() over py4j from inside the handler,
on the main thread, while that thread waits in another py4j call on the same connection: "RuntimeError:
reentrant call inside <_io.BufferedReader>", then py4j logged three tracebacks ("ERROR:root:Exception while
sending command.", "KeyboardInterrupt while sending command.") above "rocketstore: interrupted", and once
Spark's JVM outlived the command.  The CLI now keeps SIGINT its own while Spark starts: the first Ctrl-C
cancels the jobs from another thread and the command ends as interrupted (status 130, one line) after
stopping Spark; a Ctrl-C during Spark's start ends it once Spark is up.

Spark itself is faked here (a real start takes too long for a unit test): the fake session's start installs
a handler the way SparkContext does, and its job fails once cancelled, as a cancelled Spark job does.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")
pytest.importorskip("matplotlib")

from py4j.protocol import Py4JError  # noqa: E402

import rocketstore.spark.jobs as jobs  # noqa: E402
from rocketstore.cli.main import main  # noqa: E402


class FakeContext:
    def __init__(self) -> None:
        self.cancelled = threading.Event()
        self.cancel_threads: list[str] = []

    def cancelAllJobs(self) -> None:  # noqa: N802 - pyspark's name
        self.cancel_threads.append(threading.current_thread().name)
        self.cancelled.set()


class FakeSession:
    def __init__(self) -> None:
        self.sparkContext = FakeContext()
        self.stopped = False
        self.pyspark_handler_ran = False

    def stop(self) -> None:
        self.stopped = True


@pytest.fixture
def fake_spark(monkeypatch: pytest.MonkeyPatch) -> FakeSession:
    session = FakeSession()

    def pyspark_like_handler(signum: int, frame: Any) -> None:
        # what SparkContext's handler does: cancelAllJobs() right here, on the interrupted main thread
        session.pyspark_handler_ran = True
        session.sparkContext.cancelAllJobs()
        raise KeyboardInterrupt

    def build_session(master: str, app_name: str, conf: Any = None) -> tuple[FakeSession, bool]:
        signal.signal(signal.SIGINT, pyspark_like_handler)  # as SparkContext.__init__ on the main thread
        return session, True

    monkeypatch.setattr(jobs, "build_session", build_session)
    previous = signal.getsignal(signal.SIGINT)
    yield session
    signal.signal(signal.SIGINT, previous)


def _store(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    (store / "commitlog").mkdir(parents=True)
    return store


def test_ctrl_c_during_the_job_cancels_it_from_another_thread(
        tmp_path: Path, fake_spark: FakeSession, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    def store_report(spark: FakeSession, store: str, output: str, progress: Any) -> Any:
        signal.raise_signal(signal.SIGINT)  # the user's Ctrl-C while the job runs
        assert spark.sparkContext.cancelled.wait(30), "the Spark jobs were not cancelled"
        raise Py4JError("An error occurred while calling o42.collectToPython: job cancelled")

    monkeypatch.setattr(jobs, "store_report", store_report)
    before = signal.getsignal(signal.SIGINT)
    status = main(["pipeline", "report", "--store", str(_store(tmp_path)), "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 130, err
    assert not fake_spark.pyspark_handler_ran  # no py4j call from inside the signal handler
    assert fake_spark.sparkContext.cancel_threads and "MainThread" not in fake_spark.sparkContext.cancel_threads
    assert fake_spark.stopped
    assert err.rstrip().splitlines()[-1] == "rocketstore: interrupted"
    assert "Traceback" not in err and "Py4JError" not in err
    assert signal.getsignal(signal.SIGINT) is before  # Ctrl-C is Python's again after the command


def test_ctrl_c_while_spark_starts_stops_it_once_up(
        tmp_path: Path, fake_spark: FakeSession, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    real_build = jobs.build_session

    def slow_start(master: str, app_name: str, conf: Any = None) -> tuple[FakeSession, bool]:
        session, created = real_build(master, app_name, conf)
        signal.raise_signal(signal.SIGINT)  # Ctrl-C after SparkContext set its handler, before the start ends
        return session, created

    ran: list[bool] = []
    monkeypatch.setattr(jobs, "build_session", slow_start)
    monkeypatch.setattr(jobs, "store_report", lambda *a: ran.append(True))
    status = main(["pipeline", "report", "--store", str(_store(tmp_path)), "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 130, err
    assert not ran  # the job never started
    assert not fake_spark.pyspark_handler_ran
    assert fake_spark.stopped
    assert "Traceback" not in err


def test_ctrl_c_during_a_streaming_archive_ends_the_query_without_py4j_tracebacks(
        tmp_path: Path, fake_spark: FakeSession, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    import logging

    import rocketstore.cli.pipeline_cmds as pipeline_cmds

    def archive_topic(spark: FakeSession, *args: Any, **kwargs: Any) -> int:
        try:
            signal.raise_signal(signal.SIGINT)  # the user's Ctrl-C while the query runs
        except KeyboardInterrupt:
            # what py4j does when a KeyboardInterrupt lands in one of its calls (query.awaitTermination):
            # GatewayClient.send_command logs it with its traceback on the root logger
            logging.exception("KeyboardInterrupt while sending command.")
            return 7  # archive_topic stops the query and reports what it archived
        raise AssertionError("Ctrl-C did not reach the streaming loop")

    monkeypatch.setattr(pipeline_cmds, "_check_name_server", lambda addr: None)
    monkeypatch.setattr(jobs, "archive_topic", archive_topic)
    status = main(["pipeline", "archive", "--name-server", "127.0.0.1:9876", "--topic", "T",
                   "--checkpoint", str(tmp_path / "ck"), "--output", str(tmp_path / "out")])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert captured.out == f"7 messages archived to {tmp_path / 'out'}\n"
    assert not fake_spark.pyspark_handler_ran
    assert fake_spark.stopped
    assert "Traceback" not in captured.err and "while sending command" not in captured.err
    assert not [r for r in caplog.records if "while sending command" in r.getMessage()]


def test_a_job_that_finishes_after_the_ctrl_c_reports_its_result(
        tmp_path: Path, fake_spark: FakeSession, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # the review of b8cced8: a job that ended before the cancel reached it (a rebuild's driver-side writing has
    # no Spark job to cancel) was reported as interrupted (status 130, no result): read as half done
    class Result:
        html_path = str(tmp_path / "out" / "report.html")
        png_path = str(tmp_path / "out" / "report.png")

    def store_report(spark: FakeSession, store: str, output: str, progress: Any) -> Any:
        signal.raise_signal(signal.SIGINT)
        assert spark.sparkContext.cancelled.wait(30)
        return Result()  # finished all the same

    monkeypatch.setattr(jobs, "store_report", store_report)
    status = main(["pipeline", "report", "--store", str(_store(tmp_path)), "--output", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert out.splitlines() == [Result.html_path, Result.png_path]
    assert "the job had finished" in err
    assert fake_spark.stopped
