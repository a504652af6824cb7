"""``rocketstore pipeline``: the Spark jobs (rocketstore.spark.jobs) from the command line.

    rocketstore pipeline archive --store DIR --output PARQUET_DIR
    rocketstore pipeline archive --name-server HOST:PORT --topic T --checkpoint DIR --output DIR [--available-now]
    rocketstore pipeline report --store DIR --output DIR

Spark runs ``local[*]`` unless ``--master URL`` says otherwise; progress is printed on stderr.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["register"]


def _progress(text: str) -> None:
    print(f"rocketstore pipeline: {text}", file=sys.stderr, flush=True)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("pipeline", help="Spark jobs: archive to Parquet, store report")
    commands = parser.add_subparsers(dest="pipeline_command", metavar="JOB")
    commands.required = True

    archive = commands.add_parser("archive", help="messages to Parquet, from a store dir or a live topic")
    archive.add_argument("--master", default="local[*]", help="Spark master URL (default local[*])")
    archive.add_argument("--output", required=True, help="Parquet directory")
    archive.add_argument("--store", help="store directory (batch archive)")
    archive.add_argument("--topics", help="with --store: comma-separated topics (default: all non-system)")
    archive.add_argument("--overwrite", action="store_true", help="with --store: replace an existing output")
    archive.add_argument("--name-server", help="HOST:PORT[;HOST:PORT] (streaming archive of --topic)")
    archive.add_argument("--topic", help="with --name-server: the topic to archive")
    archive.add_argument("--checkpoint", help="with --name-server: Spark checkpoint directory")
    archive.add_argument("--available-now", action="store_true",
                         help="with --name-server: archive what the topic holds now, then stop")
    archive.add_argument("--tags", help="with --name-server: tag expression, e.g. 'TagA || TagB'")
    archive.add_argument("--consumer-group", help="with --name-server: commit offsets to the broker as this group")
    archive.add_argument("--max-offsets-per-trigger", type=int, help="with --name-server: rows per micro-batch")
    archive.add_argument("--trigger-interval-s", type=float, default=5.0, help="micro-batch interval (default 5)")
    archive.set_defaults(handler=_archive)

    report = commands.add_parser("report", help="per topic / queue / tag / hour counts, consumer lag: HTML + PNG")
    report.add_argument("--master", default="local[*]", help="Spark master URL (default local[*])")
    report.add_argument("--store", required=True, help="store directory (opened read-only)")
    report.add_argument("--output", required=True, help="directory for report.html, report.png and CSVs")
    report.set_defaults(handler=_report)


def _archive(args: argparse.Namespace) -> int:
    streaming = args.name_server is not None
    if streaming == (args.store is not None):
        print("rocketstore pipeline archive: give either --store or --name-server", file=sys.stderr)
        return 2
    if streaming and (not args.topic or not args.checkpoint):
        print("rocketstore pipeline archive: --name-server needs --topic and --checkpoint", file=sys.stderr)
        return 2
    from rocketstore.spark.jobs import archive_store, archive_topic, build_session

    _progress(f"starting Spark ({args.master})")
    spark, created = build_session(args.master)
    try:
        if streaming:
            total = archive_topic(spark, args.name_server, args.topic, args.checkpoint, args.output, _progress,
                                  available_now=args.available_now, tags=args.tags,
                                  consumer_group=args.consumer_group,
                                  max_offsets_per_trigger=args.max_offsets_per_trigger,
                                  trigger_interval_s=args.trigger_interval_s)
        else:
            total = archive_store(spark, args.store, args.output, _progress, topics=args.topics,
                                  overwrite=args.overwrite)
    finally:
        if created:
            spark.stop()
    print(f"{total} messages archived to {args.output}")
    return 0


def _report(args: argparse.Namespace) -> int:
    from rocketstore.spark.jobs import build_session, store_report

    _progress(f"starting Spark ({args.master})")
    spark, created = build_session(args.master, "rocketstore-report")
    try:
        result = store_report(spark, args.store, args.output, _progress)
    finally:
        if created:
            spark.stop()
    print(result.html_path)
    print(result.png_path)
    return 0
