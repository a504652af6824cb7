"""``rocketstore pipeline``: the Spark jobs (rocketstore.spark.jobs) from the command line.

    rocketstore pipeline archive --store DIR --output PARQUET_DIR
    rocketstore pipeline archive --name-server HOST:PORT --topic T --checkpoint DIR --output DIR [--available-now]
    rocketstore pipeline report --store DIR --output DIR
    rocketstore pipeline rebuild STORE_DIR [--output DIR | --in-place] [--skip-bad]

Spark runs ``local[*]`` unless ``--master URL`` says otherwise; ``--conf key=value`` (repeatable, as
spark-submit's) sets any other Spark property; progress is printed on stderr.  Ctrl-C cancels a batch job's
Spark jobs and ends the command as interrupted (status 130) once Spark has stopped, unless the job had
finished by then (its result printed, status 0); a second Ctrl-C ends it at once; a streaming archive's
Ctrl-C stops its query and ends the command as done (:class:`_CtrlC`).
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from rocketstore.errors import RocketStoreError

__all__ = ["PipelineError", "register", "spark_conf_pair", "spark_error_line"]

T = TypeVar("T")

#: an exception's last line in a (Python or Java) traceback: ``module.Name: message``
_EXCEPTION_LINE = re.compile(r"^\s*([A-Za-z_][\w.$]*(?:Error|Exception)): (\S.*)$")


class PipelineError(RocketStoreError):
    """A Spark job of ``rocketstore pipeline`` failed; the message is the cause in one line."""


def _progress(text: str) -> None:
    print(f"rocketstore pipeline: {text}", file=sys.stderr, flush=True)


def _need_spark_extra(*modules: str) -> None:
    """Before Spark starts: the packages of the ``spark`` extra a job imports (the core install has none of
    them) are there, else one line saying what to install instead of a traceback from Spark's start-up."""
    missing = []
    for name in ("pyspark", "pyarrow", *modules):
        try:
            __import__(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise PipelineError(f"the pipeline jobs need the spark extra ({', '.join(missing)} missing): "
                            f"pip install 'rocketstore[spark]' (in a checkout: pip install -e '.[spark]')")


def spark_error_line(exc: BaseException) -> str:
    """One line for a failed Spark call: the innermost rocketstore error when Spark wraps one (a data source
    raising in a Python worker), else the first line of Spark's own message (SQLSTATE dropped)."""
    text = str(exc)
    found = [m for m in map(_EXCEPTION_LINE.match, text.splitlines()) if m]
    ours = [m for m in found if m.group(1).startswith("rocketstore.")]
    if ours:
        return f"{ours[-1].group(1).rsplit('.', 1)[-1]}: {ours[-1].group(2).strip()}"
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(exc).__name__)
    head, traceback_mark, _ = first.partition("Traceback (most recent call last):")
    if traceback_mark:  # a Python worker's own error: the last traceback's exception line, not its first words
        lines = text.splitlines()
        start = max(i for i, line in enumerate(lines) if "Traceback (most recent call last):" in line)
        last = next((m for m in map(_EXCEPTION_LINE.match, lines[start + 1:]) if m and not m.string[0].isspace()),
                    None)
        if last is not None:
            return f"{head.strip()} {last.group(1).rsplit('.', 1)[-1]}: {last.group(2).strip()}".strip()
    return re.sub(r"\s*SQLSTATE: \w+\.?$", "", first)


def _run_job(job: Callable[[], T], ctrl_c: _CtrlC | None = None) -> T:
    """*job*() with a failure inside Spark (an AnalysisException, a failed task or streaming query) turned
    into a PipelineError: the CLI prints one line instead of a JVM and Python traceback.  With *ctrl_c*, a failure
    after the user's Ctrl-C ends the command as interrupted (a batch job that finished all the same returns its
    result)."""
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    try:
        result = job()
    except Exception as exc:
        # the cancelled job's failure, or (a terminal's Ctrl-C reaches Spark's JVM too) a lost connection to it
        if ctrl_c is not None and ctrl_c.interrupted.is_set():
            raise KeyboardInterrupt from None
        if isinstance(exc, (PySparkException, Py4JError)):
            raise PipelineError(spark_error_line(exc)) from exc
        raise
    if ctrl_c is not None and ctrl_c.interrupted.is_set() and not ctrl_c.streaming:
        # the job ended before the cancel reached it (a rebuild's driver-side writing has no Spark job to
        # cancel): its result stands and is printed, not reported as interrupted (which read as half done)
        _progress("interrupted, but the job had finished: its result stands")
    return result


class _CtrlC:
    """Ctrl-C for a pipeline job, from Spark's start to its stop.

    pyspark's own SIGINT handler calls cancelAllJobs() over py4j from inside the signal handler while the main
    thread waits in another py4j call on the same connection: the reentrant read fails and py4j logs a screen
    of tracebacks (and Spark's JVM could outlive the command).  This handler only notes the first Ctrl-C; once
    Spark runs it cancels the jobs from another thread (its own py4j connection), so the job fails, Spark is
    stopped as usual and the command ends as interrupted (one line, status 130; a job that had finished before
    the cancel reached it returns its result: _run_job).  A second Ctrl-C interrupts at once.  Off the main
    thread (no signals there) it does nothing.

    With *streaming* (archive of a live topic) the first Ctrl-C after the start raises KeyboardInterrupt, which
    archive_topic takes as the end of the query (the command then ends as done).  Once interrupted, py4j's own
    log records of the interrupted call (tracebacks on the root logger) are dropped."""

    #: py4j's root-logger messages about a call a Ctrl-C interrupted (java_gateway.GatewayClient.send_command)
    _PY4J_NOISE = ("KeyboardInterrupt while sending command", "Exception while sending command")

    def __init__(self, streaming: bool = False) -> None:
        self.streaming = streaming
        self.interrupted = threading.Event()
        self._spark: Any = None
        self._previous: Any = None
        self._installed = False

    def _quiet(self, record: logging.LogRecord) -> bool:
        return not (self.interrupted.is_set() and str(record.msg).startswith(self._PY4J_NOISE))

    def install(self) -> None:
        if threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGINT, self._on_sigint)
            if not self._installed:
                self._previous, self._installed = previous, True
                logging.getLogger().addFilter(self._quiet)

    def started(self, spark: Any, created: bool) -> None:
        """Spark is up (its start kept this handler: _start_spark); a Ctrl-C during the start ends the command
        now (Spark stopped first)."""
        self._spark = spark
        if self.interrupted.is_set():
            _stop_spark(spark, created, self)
            raise KeyboardInterrupt

    def restore(self) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
            logging.getLogger().removeFilter(self._quiet)
            self._installed = False

    def stopped(self, error: Exception) -> None:
        """Spark's stop failed with *error*: after a Ctrl-C that is Spark's JVM gone already (a terminal's
        Ctrl-C reaches it too, in the same process group), else it is raised."""
        if not self.interrupted.is_set():
            raise error

    def _cancel(self) -> None:
        try:
            self._spark.sparkContext.cancelAllJobs()
        except Exception:  # noqa: BLE001 - Spark already stopping: nothing left to cancel
            pass

    def _on_sigint(self, signum: int, frame: Any) -> None:
        if self.interrupted.is_set():
            raise KeyboardInterrupt
        self.interrupted.set()
        if self._spark is None:
            _progress("interrupted: stopping once Spark has started (Ctrl-C again to stop at once)")
            return
        if self.streaming:
            raise KeyboardInterrupt
        _progress("interrupted: cancelling the Spark jobs (Ctrl-C again to stop at once)")
        threading.Thread(target=self._cancel, name="rocketstore-pipeline-cancel", daemon=True).start()


def spark_conf_pair(text: str) -> tuple[str, str]:
    """A ``--conf key=value`` argument (argparse type), split at the first ``=`` as spark-submit splits it.
    A pair without ``=``, with an empty key, or with a key that is not a Spark property is a usage error
    (spark-submit only warns about the last and drops it: a typo would go unnoticed)."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected key=value (e.g. spark.executor.memory=4g), not {text!r}")
    if not key.startswith("spark."):
        raise argparse.ArgumentTypeError(f"{key!r} is not a Spark property (their names start with 'spark.')")
    return key, value


def _add_spark_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--master", help="Spark master URL (default local[*], or --conf spark.master)")
    parser.add_argument("--conf", type=spark_conf_pair, action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark property, as spark-submit's --conf (repeatable; the last one of a key "
                             "wins)")


def _start_spark(args: argparse.Namespace, app_name: str, ctrl_c: _CtrlC | None = None) -> tuple[Any, bool]:
    """The job's SparkSession (and whether this call created it) from ``--master`` and ``--conf``; with
    *ctrl_c*, Ctrl-C is its from here on (the caller restores it after stopping Spark)."""
    from rocketstore.spark.jobs import build_session

    conf = dict(args.conf)
    master = args.master or conf.pop("spark.master", None) or "local[*]"
    conf.pop("spark.master", None)  # --master wins, as in spark-submit
    _progress(f"starting Spark ({master})")
    if ctrl_c is None:
        return build_session(master, app_name, conf)
    ctrl_c.install()
    set_handler = signal.signal

    def keep_sigint(signum: Any, handler: Any) -> Any:  # SparkContext's start sets its own SIGINT handler
        return signal.getsignal(signum) if signum == signal.SIGINT else set_handler(signum, handler)

    signal.signal = keep_sigint  # type: ignore[assignment]
    try:
        spark, created = build_session(master, app_name, conf)
    except BaseException as exc:
        ctrl_c.restore()
        if isinstance(exc, Exception) and ctrl_c.interrupted.is_set():  # Spark's JVM got the Ctrl-C too
            raise KeyboardInterrupt from None
        raise
    finally:
        signal.signal = set_handler
    ctrl_c.started(spark, created)
    return spark, created


def _stop_spark(spark: Any, created: bool, ctrl_c: _CtrlC | None) -> None:
    """Stop the session if this command created it, then give SIGINT back."""
    try:
        if created:
            spark.stop()
    except Exception as exc:  # noqa: BLE001 - raised again unless the user's Ctrl-C explains it
        if ctrl_c is None:
            raise
        ctrl_c.stopped(exc)
    finally:
        if ctrl_c is not None:
            ctrl_c.restore()


def _check_store_dir(store: str) -> None:
    """Before Spark starts: a --store that is no directory, or none holding a store, is refused."""
    if not os.path.isdir(store):
        raise PipelineError(f"--store {store} is not a directory")
    from rocketstore.store.snapshot import check_store_root

    check_store_root(store, f"--store {store}")


def _check_name_server(addr: str) -> None:
    """Before Spark starts: one of --name-server's name servers answers.  Without this check an unreachable
    one cost a Spark start-up and fetchOffset.numRetries look-ups, and ended in Spark's stack trace."""
    from rocketstore.client.admin import AdminClient
    from rocketstore.remoting.transport import run

    async def ask() -> None:
        async with AdminClient(addr) as admin:
            await admin.cluster_info()

    try:
        run(ask())
    except (TimeoutError, RocketStoreError, OSError) as exc:
        raise PipelineError(f"--name-server {addr}: {exc or type(exc).__name__}") from None


def register(subparsers: argparse._SubParsersAction) -> None:
    from rocketstore.cli.output import namesrv_list, positive_seconds
    from rocketstore.cli.store_cmds import _positive_int

    parser = subparsers.add_parser("pipeline", help="Spark jobs: archive to Parquet, store report, rebuild "
                                                    "consume queues and index")
    commands = parser.add_subparsers(dest="pipeline_command", metavar="JOB")
    commands.required = True

    archive = commands.add_parser("archive", help="messages to Parquet, from a store dir or a live topic")
    _add_spark_args(archive)
    archive.add_argument("--output", required=True, help="Parquet directory")
    archive.add_argument("--store", help="store directory (batch archive)")
    archive.add_argument("--topics", help="with --store: comma-separated topics (default: all non-system)")
    archive.add_argument("--overwrite", action="store_true", help="with --store: replace an existing output")
    archive.add_argument("--name-server", type=namesrv_list,
                         help="HOST:PORT[;HOST:PORT] (streaming archive of --topic)")
    archive.add_argument("--topic", help="with --name-server: the topic to archive")
    archive.add_argument("--checkpoint", help="with --name-server: Spark checkpoint directory")
    archive.add_argument("--available-now", action="store_true",
                         help="with --name-server: archive what the topic holds now, then stop")
    archive.add_argument("--tags", help="with --name-server: tag expression, e.g. 'TagA || TagB'")
    archive.add_argument("--consumer-group", help="with --name-server: commit offsets to the broker as this group")
    archive.add_argument("--max-offsets-per-trigger", type=_positive_int,
                         help="with --name-server: rows per micro-batch")
    archive.add_argument("--trigger-interval-s", type=positive_seconds, default=5.0,
                         help="micro-batch interval (default 5)")
    archive.set_defaults(handler=_archive)

    report = commands.add_parser("report", help="per topic / queue / tag / hour counts, consumer lag: HTML + PNG")
    _add_spark_args(report)
    report.add_argument("--store", required=True, help="store directory (opened read-only)")
    report.add_argument("--output", required=True, help="directory for report.html, report.png and CSVs")
    report.set_defaults(handler=_report)

    from rocketstore.cli.store_cmds import _geometry_parent

    rebuild = commands.add_parser(
        "rebuild", parents=[_geometry_parent()],
        help="rebuild consume queues, index files and checkpoint from the commitlog",
        description="Scan the commitlog of DIR in parallel on Spark and write complete consumequeue/ and index/ "
                    "directories plus a checkpoint: into --output (default DIR.rebuilt), or into DIR itself "
                    "with --in-place (the store must be closed). A damaged record stops the job with its "
                    "commitlog offset unless --skip-bad is given.")
    _add_spark_args(rebuild)
    target = rebuild.add_mutually_exclusive_group()
    target.add_argument("--output", help="new directory for consumequeue/, index/ and checkpoint "
                                         "(default DIR.rebuilt; must be absent or empty)")
    target.add_argument("--in-place", action="store_true", help="replace DIR's own files (store closed)")
    rebuild.add_argument("--skip-bad", action="store_true",
                         help="skip the rest of a segment holding a damaged record instead of stopping")
    rebuild.add_argument("--range-mb", type=_positive_int, default=64, help="commitlog MiB per Spark partition (64)")
    rebuild.set_defaults(handler=_rebuild)


def _archive(args: argparse.Namespace) -> int:
    streaming = args.name_server is not None
    if streaming == (args.store is not None):
        print("rocketstore pipeline archive: give either --store or --name-server", file=sys.stderr)
        return 2
    if streaming and (not args.topic or not args.checkpoint):
        print("rocketstore pipeline archive: --name-server needs --topic and --checkpoint", file=sys.stderr)
        return 2
    if not streaming:
        _check_store_dir(args.store)
        if os.path.exists(args.output) and not args.overwrite:
            raise PipelineError(f"--output {args.output} already exists (give --overwrite to replace it)")
    _need_spark_extra()
    if streaming:
        _check_name_server(args.name_server)
    from rocketstore.spark.jobs import archive_store, archive_topic

    ctrl_c = _CtrlC(streaming=streaming)
    spark, created = _start_spark(args, "rocketstore-pipeline", ctrl_c)
    try:
        if streaming:
            total = _run_job(lambda: archive_topic(
                spark, args.name_server, args.topic, args.checkpoint, args.output, _progress,
                available_now=args.available_now, tags=args.tags, consumer_group=args.consumer_group,
                max_offsets_per_trigger=args.max_offsets_per_trigger, trigger_interval_s=args.trigger_interval_s),
                ctrl_c)
        else:
            total = _run_job(lambda: archive_store(spark, args.store, args.output, _progress, topics=args.topics,
                                                   overwrite=args.overwrite), ctrl_c)
    finally:
        _stop_spark(spark, created, ctrl_c)
    print(f"{total} messages archived to {args.output}")
    return 0


def _check_report_output(output: str) -> None:
    """Before Spark starts (not after a scan of the whole store): --output is a directory, or can be made one."""
    if os.path.exists(output) and not os.path.isdir(output):
        raise PipelineError(f"--output {output} is a file: give a directory for the report's files")
    existing = os.path.abspath(output)
    while not os.path.exists(existing):  # the nearest directory that is there: the report's are made in it
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise PipelineError(f"--output {output}: {existing} is a file, not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise PipelineError(f"--output {output}: the directory {existing} is not writable")


def _report(args: argparse.Namespace) -> int:
    _check_store_dir(args.store)
    _check_report_output(args.output)
    _need_spark_extra("matplotlib")
    from rocketstore.spark.jobs import store_report

    ctrl_c = _CtrlC()
    spark, created = _start_spark(args, "rocketstore-report", ctrl_c)
    try:
        result = _run_job(lambda: store_report(spark, args.store, args.output, _progress), ctrl_c)
    finally:
        _stop_spark(spark, created, ctrl_c)
    print(result.html_path)
    print(result.png_path)
    return 0


def _rebuild(args: argparse.Namespace) -> int:
    import os

    from rocketstore.cli.store_cmds import ProgressBar, store_config_from_args

    _need_spark_extra()
    from rocketstore.spark.rebuild import rebuild_with_spark

    # index files of another geometry than the one to be written are refused before anything is written (the
    # store's broker would refuse the rebuilt ones), unless the geometry was given: it cannot be read off them
    config = store_config_from_args(args, check_index=False, check_rebuild_index=True)
    root = config.store_path_root_dir
    output = None if args.in_place else (args.output or root.rstrip(os.sep) + ".rebuilt")
    if args.in_place:
        # a store that is open (a broker runs on it) is refused now, not after Spark has started and planned
        # the scan; the rebuild takes the lock again for the whole job
        from rocketstore.store.lock import StoreLock

        probe = StoreLock()
        probe.acquire(root)
        probe.release()
    ctrl_c = _CtrlC()
    spark, created = _start_spark(args, "rocketstore-rebuild", ctrl_c)
    bars: list[ProgressBar] = []
    try:
        def on_plan(plan) -> None:  # type: ignore[no-untyped-def]
            # (the ranges, not Spark's partitions: a task scans a few neighbouring ranges)
            _progress(f"scanning {plan.commit_log_bytes / 1048576:.1f} MiB of commitlog in {len(plan.ranges)} "
                      f"ranges")
            bars.append(ProgressBar(sum(r.end - r.begin for r in plan.ranges), sys.stderr, label="rebuild"))

        report = _run_job(lambda: rebuild_with_spark(
            spark, root, config, output_dir=output, in_place=args.in_place, skip_bad=args.skip_bad,
            range_bytes=max(1, args.range_mb) << 20, progress=lambda n: bars[0](n), on_plan=on_plan), ctrl_c)
        if bars:
            bars[0].finish()
    finally:
        _stop_spark(spark, created, ctrl_c)
    lines = [f"rebuilt {'in place: ' + root if report.in_place else report.output_dir}",
             (f"  commitlog:        [{report.commit_log_min_offset}, {report.valid_end}), {report.record_count} "
              f"records" + (f", stopped at a torn tail: {report.stop_reason}" if report.stop_reason else "")),
             f"  consume queues:   {report.queue_count} queues, {report.cq_entry_count} entries",
             f"  index:            {report.index_file_count} files, {report.index_key_count} keys",
             (f"  checkpoint:       physic {report.checkpoint[0]}, logics {report.checkpoint[1]}, "
              f"index {report.checkpoint[2]}"),
             f"  took:             {report.seconds:.1f} s"]
    for start, end, reason in report.skipped:
        lines.append(f"SKIPPED commitlog [{start}, {end}): {reason}")
    lines.extend(f"warning: {w}" for w in report.warnings)
    if report.abort_file_present:
        lines.append("note: the store's abort file is present (it was not shut down cleanly); the next open "
                     "still runs abnormal recovery from the checkpoint's segment")
    if not report.in_place:
        lines.append(f"to use them: with the store closed, replace {root}/consumequeue, index and checkpoint "
                     f"with those in {report.output_dir} (or run with --in-place)")
    print("\n".join(lines))
    return 0
