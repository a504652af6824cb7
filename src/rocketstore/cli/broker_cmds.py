"""Broker statistics and configuration of running brokers (mqadmin brokerStatus, statsAll / brokerConsumeStats,
getBrokerConfig, updateBrokerConfig), through client.admin:

    rocketstore broker-admin status [-b ADDR | -c CLUSTER]         runtime figures, per master
    rocketstore broker-admin stats -s STATS_NAME -k KEY [-b ADDR | -c CLUSTER]
                                                                   one stat item: minute / hour / day rows
    rocketstore broker-admin stats-all [-t TOPIC] [--active]      per topic and group: lag, TPS, day counts
    rocketstore broker-admin consume-stats [-b ADDR | -c CLUSTER] [--order] [-l N]
                                                                   every group's offsets and lag per queue
    rocketstore broker-admin config get [-b ADDR | -c CLUSTER]     the brokers' properties
    rocketstore broker-admin config set KEY=VALUE ... [-b ADDR | -c CLUSTER]
                                                                   keys: broker.conf's; 4.9.3's that do nothing
                                                                   here are kept (broker/config_keys.py)
    rocketstore broker-admin watch [-b ADDR | -c CLUSTER] [--interval S] [--count N] [--png FILE]
                                                                   live figures per sample (cli/broker_watch.py)
    rocketstore broker-admin wipe-write-perm | add-write-perm [-b] BROKER_NAME
                                                                   on every name server (cli/cluster_cmds.py)

Without ``-b`` a command asks every master of ``-c CLUSTER`` (default: every master the name server
knows).  The group is ``broker-admin`` because ``rocketstore broker`` runs a broker; the stats name is
``-s`` because ``-n`` is the name server everywhere.  Every command takes ``--namesrv`` and ``--json``;
errors print one line on stderr and exit 1 (2 for bad arguments).  ``watch --json`` prints JSON lines (one
object per broker and sample), and exits 1 when some sample went unanswered (each such round has its
error line; the watch itself goes on).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from functools import partial

from rocketstore.cli import broker_watch, cluster_cmds
from rocketstore.cli.output import (
    add_common,
    add_targets,
    admin_of,
    fail,
    format_time,
    print_json,
    print_table,
    run_command,
)
from rocketstore.client.admin import AdminClient

__all__ = ["register"]

#: the stat names mqadmin statsAll and brokerConsumeStats ask for, with the key each takes
_STATS_HELP = ("TOPIC_PUT_NUMS / TOPIC_PUT_SIZE (key: topic), GROUP_GET_NUMS / GROUP_GET_SIZE "
               "/ SNDBCK_PUT_NUMS (key: topic@group), GROUP_GET_LATENCY (key: queueId@topic@group), "
               "BROKER_PUT_NUMS / BROKER_GET_NUMS (key: cluster name)")


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    group = subparsers.add_parser("broker-admin", help="running brokers' statistics and configuration")
    commands = group.add_subparsers(dest="broker_admin_command", metavar="ACTION")
    commands.required = True

    targets = partial(add_targets, brokers="master")
    status = commands.add_parser("status", help="runtime figures: totals, rates, latencies, disk (brokerStatus)")
    targets(status)
    status.set_defaults(handler=_status)

    stats = commands.add_parser("stats", help="one stat item over the last minute, hour and day (statsAll)")
    stats.add_argument("-s", "--stats-name", required=True, help=_STATS_HELP)
    stats.add_argument("-k", "--key", required=True, help="the item's key")
    targets(stats)
    stats.set_defaults(handler=_stats)

    stats_all = commands.add_parser("stats-all", help="per topic and consuming group: lag, in / out TPS of the last "
                                                      "minute, messages in / out in the last day (statsAll)")
    stats_all.add_argument("-t", "--topic", help="only this topic")
    stats_all.add_argument("-a", "--active", action="store_true",
                           help="only rows with messages put or got in the last day")
    add_common(stats_all)
    stats_all.set_defaults(handler=_stats_all)

    consume = commands.add_parser("consume-stats", help="every subscription group's offsets and lag per queue "
                                                        "(brokerConsumeStats)")
    consume.add_argument("--order", action="store_true", help="only ordered topics")
    consume.add_argument("--timeout-ms", type=_positive_int, default=None, help="wait this long for each broker")
    consume.add_argument("-l", "--level", type=int, default=0, metavar="N",
                         help="only queues whose diff is at least N (mqadmin's -l threshold of print diff)")
    targets(consume)
    consume.set_defaults(handler=_consume_stats)

    config = commands.add_parser("config", help="read or change the brokers' properties")
    actions = config.add_subparsers(dest="config_command", metavar="ACTION")
    actions.required = True
    get = actions.add_parser("get", help="every property and its value (getBrokerConfig)")
    targets(get)
    get.set_defaults(handler=_config_get)
    put = actions.add_parser("set", help="change properties at runtime (updateBrokerConfig); most take effect at "
                                         "the next start, the broker writes them to the broker.conf it was started "
                                         "with (-c), else to <store>/config/broker.properties.  4.9.3 properties "
                                         "this broker has no use for (thread pools, netty, DLedger, LMQ, "
                                         "deleteCommitLogFilesInterval, enableCalcFilterBitMap, ...) are kept, "
                                         "shown and written, with no effect.  Unknown keys and values that do "
                                         "not convert are left as they were, as 4.9.3 leaves them: a warning "
                                         "says which")
    put.add_argument("assignments", nargs="+", metavar="KEY=VALUE", type=_assignment,
                     help="a property, as broker.conf names it, and its new value (config get lists them)")
    targets(put)
    put.set_defaults(handler=_config_set)

    watch = commands.add_parser("watch", help="sample the masters' runtime figures every few seconds: puts and "
                                              "gets per second, MiB/s written, dispatch lag, held pulls (without "
                                              "-b, masters that join later are sampled too)")
    watch.add_argument("--interval", type=_positive_float, default=1.0, metavar="S",
                       help="seconds between samples (default 1)")
    watch.add_argument("--count", type=_positive_int, default=None, metavar="N",
                       help="stop after N samples (default: until Ctrl-C)")
    watch.add_argument("--png", metavar="FILE", help="at the end, draw the series into this PNG (needs matplotlib: "
                                                     "the plot extra)")
    targets(watch)
    watch.set_defaults(handler=_watch)

    cluster_cmds.add_broker_admin_commands(commands)


def _assignment(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"not KEY=VALUE: {text!r}")
    try:  # the broker reads the settings as UTF-8 text: bytes that are not refused here, not a traceback
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(f"not UTF-8 text: {text!r}") from None
    return name.strip(), value.strip()



def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"not a positive number: {text!r}")
    return value


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"not a positive whole number: {text!r}")
    return int(text)


async def _addresses(admin: AdminClient, args: argparse.Namespace) -> list[str]:
    return [args.broker] if args.broker else await admin.master_addrs(args.cluster)


def _status(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            tables = {addr: await admin.runtime_info(addr) for addr in await _addresses(admin, args)}
        if args.json:
            print_json(tables)
            return 0
        rows = [(addr, key, value) for addr, table in tables.items() for key, value in sorted(table.items())]
        print_table(["BROKER", "KEY", "VALUE"], rows)
        return 0

    return run_command(go())


def _stats(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            found = {addr: await admin.view_stats(addr, args.stats_name, args.key)
                     for addr in await _addresses(admin, args)}
        if args.json:
            print_json({addr: {window: {"sum": w.sum, "tps": w.tps, "avgpt": w.avgpt}
                               for window, w in (("minute", d.minute), ("hour", d.hour), ("day", d.day))}
                        for addr, d in found.items()})
            return 0
        rows = [(addr, window, w.sum, f"{w.tps:.2f}", f"{w.avgpt:.2f}")
                for addr, d in found.items() for window, w in (("minute", d.minute), ("hour", d.hour), ("day", d.day))]
        print(f"{args.stats_name} {args.key}")
        print_table(["BROKER", "WINDOW", "SUM", "TPS", "AVGPT"], rows, right=(2, 3, 4))
        return 0

    return run_command(go())


def _stats_all(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            rows = await admin.stats_all(args.topic, active_only=args.active)
        if args.json:
            print_json([{"topic": r.topic, "group": r.group, "accumulation": r.accumulation, "inTps": r.in_tps,
                         "outTps": r.out_tps if r.group is not None else None, "inMsg24Hour": r.in_msg_24h,
                         "outMsg24Hour": r.out_msg_24h if r.group is not None else None} for r in rows])
            return 0
        # as statsAll prints a topic nobody consumes: no group, no out rate, NO_CONSUMER for its out count
        print_table(["#Topic", "#Consumer Group", "#Accumulation", "#InTPS", "#OutTPS", "#InMsg24Hour",
                     "#OutMsg24Hour"],
                    [(r.topic, r.group or "", r.accumulation, f"{r.in_tps:.2f}",
                      f"{r.out_tps:.2f}" if r.group is not None else "", r.in_msg_24h,
                      r.out_msg_24h if r.group is not None else "NO_CONSUMER") for r in rows],
                    right=(2, 3, 4, 5, 6))
        return 0

    return run_command(go())


def _consume_stats(args: argparse.Namespace) -> int:
    async def go() -> int:
        timeout_s = args.timeout_ms / 1000 if args.timeout_ms else None
        async with admin_of(args) as admin:
            answers = [await admin.broker_consume_stats(addr, args.order, timeout_s=timeout_s)
                       for addr in await _addresses(admin, args)]
        if args.json:
            print_json([{"brokerAddr": a.broker_addr, "totalDiff": a.total_diff,
                         "groups": {g: [{"consumeTps": p.consume_tps,
                                         "queues": [{"topic": q.topic, "brokerName": q.broker_name,
                                                     "queueId": q.queue_id, "brokerOffset": q.broker_offset,
                                                     "consumerOffset": q.consumer_offset, "diff": q.lag,
                                                     "lastTimestamp": q.last_timestamp_ms} for q in p.queues
                                                    if q.lag >= args.level]}
                                        for p in progress]
                                    for g, progress in a.groups.items()}} for a in answers])
            return 0
        rows = [(q.topic, group, q.broker_name, q.queue_id, q.broker_offset, q.consumer_offset, q.lag,
                 format_time(q.last_timestamp_ms))
                for a in answers for group, progress in a.groups.items() for p in progress for q in p.queues
                if q.lag >= args.level]
        print_table(["TOPIC", "GROUP", "BROKER", "QID", "BROKER OFFSET", "CONSUMER OFFSET", "DIFF", "LAST TIME"],
                    rows, right=(3, 4, 5, 6))
        print(f"Diff Total: {sum(a.total_diff for a in answers)}")
        return 0

    return run_command(go())


def _config_get(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            configs = {addr: (await admin.broker_config(addr))[0] for addr in await _addresses(admin, args)}
        if args.json:
            print_json(configs)
            return 0
        print_table(["BROKER", "KEY", "VALUE"],
                    [(addr, key, value) for addr, props in configs.items() for key, value in props.items()])
        return 0

    return run_command(go())


def _config_set(args: argparse.Namespace) -> int:
    async def go() -> int:
        properties = dict(args.assignments)
        notes: dict[str, str] = {}
        async with admin_of(args) as admin:
            updated = await admin.update_broker_config(properties, broker_addr=args.broker, cluster=args.cluster,
                                                       notes=notes)
        for addr, note in notes.items():
            print(f"warning: {addr}: {note}", file=sys.stderr)
        if args.json:
            print_json({"brokers": updated, "properties": properties, **({"notes": notes} if notes else {})})
        else:
            for addr in updated:
                print(f"updated {', '.join(f'{k}={v}' for k, v in properties.items())} on {addr}")
        return 0

    return run_command(go())


def _png_path_problem(path: str) -> str | None:
    """Why the chart could not be written to *path*, checked before the watch starts (not after an hour)."""
    if os.path.isdir(path):
        return f"--png {path} is a directory: give the chart's file name"
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        return f"--png {path}: no directory {parent} to write the chart in"
    if not os.access(parent, os.W_OK):
        return f"--png {path}: the directory {parent} is not writable"
    return None


def _watch(args: argparse.Namespace) -> int:
    if args.png and (problem := broker_watch.chart_problem() or _png_path_problem(args.png)):
        return fail(problem)

    def emit(row: broker_watch.WatchRow) -> None:
        line = json.dumps(row.to_json(), ensure_ascii=False) if args.json else broker_watch.format_row(row)
        print(line, flush=True)  # flushed: whoever follows the output sees each sample as it is taken

    async def go() -> int:
        async with admin_of(args) as admin:
            brokers = await _addresses(admin, args)
            if not args.json:
                print(broker_watch.header_line(), flush=True)
            # -c (or every cluster): the masters are looked up again each sample, so brokers that join are watched
            lookup = None if args.broker else (lambda: admin.master_addrs(args.cluster))
            watcher = await broker_watch.watch(admin, brokers, interval_s=args.interval, count=args.count, emit=emit,
                                               lookup=lookup)
        if args.png:
            broker_watch.draw_chart(watcher.rows, args.png)
            print(f"chart of {len(watcher.rows)} rows written to {args.png}", file=sys.stderr)
        failures = watcher.failures
        if failures:
            samples = len({r.sample for r in watcher.rows})
            return fail(f"{len(failures)} of {len(watcher.rows)} broker answers in {samples} samples failed "
                        f"(last: {failures[-1].broker}: {failures[-1].error})")
        return 0

    return run_command(go())
