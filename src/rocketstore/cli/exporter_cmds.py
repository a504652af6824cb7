"""``exporter``: a Prometheus exporter for a RocketMQ cluster (ours or real RocketMQ 4.x brokers), serving
what apache/rocketmq-exporter serves under its metric names (client/exporter.py lists them).

    rocketstore exporter [-n NAMESRV] [--host 0.0.0.0] [--port 5557] [-c CLUSTER] [--min-interval-s 5]
    rocketstore exporter --once [-n NAMESRV] [-c CLUSTER]       one collection printed, then exit
    rocketstore exporter --once --json                            the same as a JSON list of samples

Point Prometheus at ``http://HOST:5557/metrics`` (the exporter's default port); the Grafana dashboard
10477 ("RocketMQ Exporter Overview") reads these names.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from rocketstore.cli.output import add_common, admin_of, print_json, run_command
from rocketstore.cli.serve_cmds import listen_port
from rocketstore.client.exporter import MetricsServer, collect, render

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    exporter = subparsers.add_parser(
        "exporter", help="serve the cluster's metrics for Prometheus (rocketmq-exporter's names) on /metrics")
    exporter.add_argument("--host", default="0.0.0.0", help="address to listen on (default 0.0.0.0)")
    exporter.add_argument("--port", type=listen_port, default=5557,
                          help="HTTP port (default 5557, as rocketmq-exporter; 0: pick one)")
    exporter.add_argument("-c", "--cluster", help="only this cluster's brokers (default: every cluster)")
    exporter.add_argument("--min-interval-s", type=_interval_seconds, default=5.0,
                          help="scrapes within this many seconds of a collection get it again (default 5)")
    exporter.add_argument("--once", action="store_true",
                          help="print one collection (Prometheus's text; with --json a list of samples) and exit")
    add_common(exporter, json_help="with --once: print the samples as JSON (name, labels, value)")
    exporter.set_defaults(handler=_exporter, exporter_parser=exporter)


def _interval_seconds(text: str) -> float:
    """``--min-interval-s`` (argparse type): a finite number of seconds, 0 or more.  NaN compares false with
    every age, so a collection would be served forever and never made again; so would one under inf."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds, 0 or more, not {text!r}")
    return value


def _exporter(args: argparse.Namespace) -> int:
    if args.json and not args.once:  # a usage error as argparse's own: the usage, then the error, exit 2
        args.exporter_parser.error("--json prints one collection: use it with --once (Prometheus reads the "
                                   "text format)")

    async def once() -> int:
        async with admin_of(args) as admin:
            samples = await collect(admin, cluster=args.cluster)
        if args.json:
            print_json([{"name": s.name, "labels": dict(s.labels), "value": s.value} for s in samples])
        else:
            sys.stdout.write(render(samples))
        return 0

    async def serve() -> int:
        async with admin_of(args) as admin, MetricsServer(
                admin, host=args.host, port=args.port, cluster=args.cluster,
                min_interval_s=args.min_interval_s) as server:
            url_host = f"[{args.host}]" if ":" in args.host else args.host  # an IPv6 address is bracketed in a URL
            namesrvs = args.namesrv or ";".join(admin.namesrv_addrs)  # (an address server's list)
            print(f"exporter: http://{url_host}:{server.port}/metrics (name server {namesrvs})", flush=True)
            await asyncio.Event().wait()
        return 0

    try:
        return run_command(once() if args.once else serve())
    except KeyboardInterrupt:
        return 0
