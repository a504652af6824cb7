"""The group offset and consume-queue clean-up commands (mqadmin getConsumerStatus, cloneGroupOffset,
cleanExpiredCQ, cleanUnusedTopic, and the QUERY_CONSUME_TIME_SPAN / QUERY_CORRECTION_OFFSET queries),
added to admin_cmds' ``group`` and ``topic`` commands:

    rocketstore group client-offsets GROUP -t TOPIC [-i CLIENT_ID]   each connected client's offsets in memory
    rocketstore group time-span GROUP -t TOPIC                       per queue: oldest / newest / consumed times
    rocketstore group correction-offset GROUP -t TOPIC [--filter G1,G2] [-b ADDR]
    rocketstore group clone-offset SRC_GROUP DEST_GROUP [-t TOPIC] [--offline]
    rocketstore topic clean-expired-cq [-b ADDR | -c CLUSTER]        drop queues retention emptied
    rocketstore topic clean-unused [-b ADDR | -c CLUSTER]            drop queues of topics no longer configured

The clean-ups act, like mqadmin's, on one broker or on every broker (masters and slaves) of a cluster or of
all clusters.  Parse arguments, call one AdminClient method, print.
"""

from __future__ import annotations

import argparse

from rocketstore.cli.output import (
    add_common,
    admin_of,
    broker_address,
    fail,
    format_time,
    print_json,
    print_table,
    run_command,
)
from rocketstore.client.admin import AdminClient
from rocketstore.client.errors import ClientError

__all__ = ["add_group_commands", "add_topic_commands"]

_LONG_MAX = (1 << 63) - 1



def add_group_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    offsets = commands.add_parser("client-offsets", help="the offsets of a topic each connected client of the "
                                                        "group holds in memory (mqadmin getConsumerStatus)")
    offsets.add_argument("group")
    offsets.add_argument("-t", "--topic", required=True, help="the topic whose offsets to show")
    offsets.add_argument("-i", "--client", help="only this client id")
    add_common(offsets)
    offsets.set_defaults(handler=_client_offsets)

    span = commands.add_parser("time-span", help="per queue: store times of the oldest, newest and last "
                                                "consumed message, and how long the next one has waited")
    span.add_argument("group")
    span.add_argument("-t", "--topic", required=True, help="the topic whose queues to show")
    add_common(span)
    span.set_defaults(handler=_time_span)

    correction = commands.add_parser("correction-offset", help="per queue: the smallest offset of the topic's "
                                                              "other groups, compared with this group's")
    correction.add_argument("group", help="the group to compare with")
    correction.add_argument("-t", "--topic", required=True, help="the topic whose queues to compare")
    correction.add_argument("--filter", help="groups to leave out, comma-separated")
    correction.add_argument("-b", "--broker", type=broker_address,
                            help="one broker, HOST:PORT (default: every master of the topic)")
    add_common(correction)
    correction.set_defaults(handler=_correction_offset)

    clone = commands.add_parser("clone-offset", help="copy a group's committed offsets to another group")
    clone.add_argument("src_group")
    clone.add_argument("dest_group")
    clone.add_argument("-t", "--topic", help="only this topic (default: every topic the source group has "
                                             "offsets of)")
    clone.add_argument("--offline", action="store_true",
                       help="copy topics the source group, while online, does not subscribe to as well")
    add_common(clone)
    clone.set_defaults(handler=_clone_offset)


def add_topic_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    expired_help = "drop the consume queues whose messages retention deleted (mqadmin cleanExpiredCQ)"
    unused_help = "drop the consume queues of topics the broker no longer has (mqadmin cleanUnusedTopic)"
    for name, handler, text in (("clean-expired-cq", _clean_expired, expired_help),
                                ("clean-unused", _clean_unused, unused_help)):
        parser = commands.add_parser(name, help=text)
        where = parser.add_mutually_exclusive_group()
        where.add_argument("-b", "--broker", type=broker_address, help="one broker, HOST:PORT")
        where.add_argument("-c", "--cluster", help="every broker of this cluster (default: of every cluster)")
        add_common(parser)
        parser.set_defaults(handler=handler)


def _client_offsets(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            table = await admin.consumer_status(args.group, args.topic, args.client)
        rows = [(client_id, b, q, t, offset) for client_id, offsets in sorted(table.items())
                for (t, b, q), offset in sorted(offsets.items())]
        if args.json:
            print_json({client_id: [{"topic": t, "brokerName": b, "queueId": q, "offset": o}
                                    for (t, b, q), o in sorted(offsets.items())]
                        for client_id, offsets in sorted(table.items())})
            return 0
        if not table:
            print(f"no client of group {args.group} reported offsets of {args.topic}")
            return 0
        print_table(["CLIENT", "BROKER", "QID", "TOPIC", "OFFSET"], rows, right=(2, 4))
        return 0

    return run_command(go())


def _time_span(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            spans = await admin.consume_time_span(args.group, args.topic)
        if args.json:
            print_json([{"topic": s.queue[0], "brokerName": s.queue[1], "queueId": s.queue[2],
                         "minTimeStamp": s.min_timestamp_ms, "maxTimeStamp": s.max_timestamp_ms,
                         "consumeTimeStamp": s.consume_timestamp_ms, "delayTime": s.delay_time_ms} for s in spans])
            return 0
        print_table(["BROKER", "QID", "OLDEST", "NEWEST", "CONSUMED", "DELAY ms"],
                    [(s.queue[1], s.queue[2], format_time(s.min_timestamp_ms), format_time(s.max_timestamp_ms),
                      format_time(s.consume_timestamp_ms), s.delay_time_ms) for s in spans], right=(1, 5))
        return 0

    return run_command(go())


def _correction_offset(args: argparse.Namespace) -> int:
    filtered = [g.strip() for g in (args.filter or "").split(",") if g.strip()]

    async def go() -> int:
        async with admin_of(args) as admin:
            brokers = {args.broker: args.broker} if args.broker else await admin.topic_masters(args.topic)
            found = {name: await admin.correction_offsets(addr, args.topic, args.group, filtered)
                     for name, addr in brokers.items()}
        if args.json:
            print_json({name: {str(q): o for q, o in sorted(offsets.items())} for name, offsets in found.items()})
            return 0
        print_table(["BROKER", "QID", "CORRECTION OFFSET"],
                    [(name, q, "-" if o == _LONG_MAX else o) for name, offsets in found.items()
                     for q, o in sorted(offsets.items())], right=(1, 2))
        return 0

    return run_command(go())


def _clone_offset(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            brokers = await admin.clone_group_offset(args.src_group, args.dest_group, args.topic,
                                                     offline=args.offline)
        what = f"topic {args.topic}" if args.topic else "every topic"
        if args.json:
            print_json({"srcGroup": args.src_group, "destGroup": args.dest_group, "topic": args.topic,
                        "brokers": brokers})
        else:
            for addr in brokers:
                print(f"cloned the offsets of {args.src_group} ({what}) to {args.dest_group} on {addr}")
        return 0

    return run_command(go())


async def _targets(admin: AdminClient, args: argparse.Namespace) -> list[str]:
    if args.broker is not None:
        return [args.broker]
    return await admin.acl_brokers(args.cluster, slaves=True)


def _clean(args: argparse.Namespace, expired: bool) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            try:
                brokers = await _targets(admin, args)
            except ClientError as exc:
                return fail(str(exc))
            found = {}
            for addr in brokers:
                found[addr] = await (admin.clean_expired_consume_queues(addr) if expired
                                     else admin.clean_unused_topics(addr))
        if args.json:
            print_json({addr: [{"topic": t, "queueId": q} for t, q in dropped] for addr, dropped in found.items()})
            return 0
        for addr, dropped in found.items():
            listed = ", ".join(f"{t}/{q}" for t, q in dropped) or "nothing"
            print(f"{addr}: dropped {listed}")
        return 0

    return run_command(go())


def _clean_expired(args: argparse.Namespace) -> int:
    return _clean(args, expired=True)


def _clean_unused(args: argparse.Namespace) -> int:
    return _clean(args, expired=False)
