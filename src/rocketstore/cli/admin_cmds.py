"""Admin commands against a running name server and brokers (what mqadmin does), through client.admin:

    rocketstore topic create TOPIC [-c CLUSTER | -b BROKER_ADDR] [-r 8] [-w 8] [-p 6] [--order]
    rocketstore topic list
    rocketstore topic status TOPIC                 per queue: min / max offset, last update time
    rocketstore group progress GROUP [-t TOPIC]    per queue: broker / consumer offset, lag; totals, TPS
    rocketstore group progress                     every group: clients, version, type, model, TPS, diff
    rocketstore group update GROUP [--retry-max-times N] [--retry-queue-nums N] [-c CLUSTER]
    rocketstore group status GROUP [--client ID] [--jstack]    each client's settings, queues held, rates
    rocketstore group consume-directly GROUP --client ID --id MSG_ID [-t TOPIC]    one message to one client
    rocketstore group client-offsets | time-span | correction-offset | clone-offset ...   (group_offset_cmds.py)
    rocketstore topic clean-expired-cq | clean-unused [-b BROKER | -c CLUSTER]             (group_offset_cmds.py)
    rocketstore topic delete | route | clusters | perm | allocate ...                     (topic_admin_cmds.py)
    rocketstore group delete | connections | config ...                                   (group_admin_cmds.py)
    rocketstore message by-offset | print-queue -t TOPIC -b BROKER -i QUEUE_ID ...        (message_admin_cmds.py)
    rocketstore message print -t TOPIC [--begin T] [--end T] [-s EXPR] [--max N]          (message_admin_cmds.py)
    rocketstore message check-rt -t TOPIC | send-status -b BROKER_NAME                    (send_probe_cmds.py)
    rocketstore message query -t TOPIC -k KEY [--begin T --end T] [--max N] [--full-body]
    rocketstore message query --id MSG_ID [-t TOPIC] [--full-body]
    rocketstore acl update ACCOUNT -s SECRET [--admin] [-w ADDR] [-i PERM] [-u PERM] [-t T=PERM,..] [-g G=PERM,..]
    rocketstore acl delete ACCOUNT
    rocketstore acl white [ADDR_PATTERN ...]      replace plain_acl.yml's globalWhiteRemoteAddresses
    rocketstore acl version                        each ACL file's dataVersion
    rocketstore acl config                         each master's white list and accounts       (acl_cmds.py)

The acl commands act, like mqadmin's updateAccessConfig / deleteAccessConfig / updateGlobalWhiteAddr /
clusterAclConfigVersion, on one broker (``-b HOST:PORT``) or on every broker of a cluster (``-c CLUSTER``; default
every broker the name server knows): masters and slaves for the changes, masters for ``version``.  Sign them
with an account of the brokers' ACL files (``--access-key`` / ``--secret-key``).

Every command takes ``--namesrv HOST:PORT`` (env ROCKETSTORE_NAMESRV, else NAMESRV_ADDR as mqadmin's, default
127.0.0.1:9876) and ``--json``.  Errors print one line on stderr and exit 1 (2 for bad arguments).
"""

from __future__ import annotations

import argparse

from rocketstore.cli import acl_cmds, group_admin_cmds, message_admin_cmds, send_probe_cmds, topic_admin_cmds
from rocketstore.cli.group_offset_cmds import add_group_commands, add_topic_commands
from rocketstore.cli.output import (
    add_common,
    add_targets,
    admin_of,
    broker_address,
    fail,
    format_time,
    message_json,
    offset_range,
    parse_time_ms,
    positive_int,
    print_json,
    print_message,
    print_table,
    run_command,
)
from rocketstore.client.admin import MAX_TIMESTAMP_MS, AdminClient, check_name
from rocketstore.client.errors import ClientError
from rocketstore.errors import RemotingError
from rocketstore.message.record import StoredMessage
from rocketstore.message.system_topics import RETRY_GROUP_TOPIC_PREFIX
from rocketstore.remoting import fastjson
from rocketstore.remoting.bodies import Perm
from rocketstore.remoting.consumer_bodies import CMResult, ConsumerRunningInfo

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    _register_topic(subparsers)
    _register_group(subparsers)
    _register_message(subparsers)
    _register_acl(subparsers)


def _register_topic(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    topic = subparsers.add_parser("topic", help="create, list and inspect topics")
    commands = topic.add_subparsers(dest="topic_command", metavar="ACTION")
    commands.required = True

    create = commands.add_parser("create", help="create or update a topic on brokers")
    create.add_argument("topic")
    where = create.add_mutually_exclusive_group()
    where.add_argument("-c", "--cluster", help="every master of this cluster (default: every master)")
    where.add_argument("-b", "--broker", type=broker_address, help="one broker, HOST:PORT")
    create.add_argument("-r", "--read-queues", type=int, default=8,
                        help="read queue count (default 8, at most 16384)")
    create.add_argument("-w", "--write-queues", type=int, default=8,
                        help="write queue count (default 8, at most 16384)")
    create.add_argument("-p", "--perm", type=int, default=Perm.READ | Perm.WRITE,
                        help="permission: 2 write, 4 read, 6 both (default 6)")
    create.add_argument("-o", "--order", nargs="?", type=_true_or_false, const=True, default=False,
                        metavar="true|false", help="an ordered topic (also mqadmin's -o true / -o false)")
    add_common(create)
    create.set_defaults(handler=_topic_create)

    listing = commands.add_parser("list", help="every topic the name server knows")
    listing.add_argument("-c", "--consumers", action="store_true",
                         help="with each topic's cluster and the groups consuming it (mqadmin topicList -c); "
                              "retry and DLQ topics left out")
    add_common(listing)
    listing.set_defaults(handler=_topic_list)

    cq = commands.add_parser("cq", help="raw consume queue entries of one queue on one broker (mqadmin queryCq)")
    cq.add_argument("topic")
    cq.add_argument("-q", "--queue", type=int, required=True, help="queue id")
    cq.add_argument("-i", "--index", type=int, default=0, help="first queue offset (default 0)")
    cq.add_argument("-c", "--count", type=int, default=10, help="at most this many entries (default 10)")
    cq.add_argument("-g", "--group", help="also show this group's subscription to the topic")
    cq.add_argument("-b", "--broker", type=broker_address, help="broker address (default: the topic's first master)")
    add_common(cq)
    cq.set_defaults(handler=_topic_cq)

    status = commands.add_parser("status", help="per queue: min and max offset, last update time")
    status.add_argument("topic")
    add_common(status)
    status.set_defaults(handler=_topic_status)

    add_topic_commands(commands)
    topic_admin_cmds.add_topic_commands(commands)


def _true_or_false(text: str) -> bool:
    """mqadmin updateTopic's ``-o true|false`` value (argparse type)."""
    if text.strip().lower() not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"not true or false: {text!r}")
    return text.strip().lower() == "true"


def _register_group(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    group = subparsers.add_parser("group", help="consumer group progress and settings")
    commands = group.add_subparsers(dest="group_command", metavar="ACTION")
    commands.required = True

    progress = commands.add_parser("progress", help="per queue: broker offset, consumer offset, lag")
    progress.add_argument("group", nargs="?",
                          help="the group (default: every group with a retry topic, one line each: clients, "
                               "version, type, model, TPS, diff total, as mqadmin consumerProgress without -g)")
    progress.add_argument("-t", "--topic", help="only this topic (default: every topic the group consumed)")
    progress.add_argument("-s", "--client-ip", action="store_true",
                          help="with a group: the IP of the client holding each queue (mqadmin -s true)")
    add_common(progress)
    progress.set_defaults(handler=_group_progress)

    reset = commands.add_parser("reset-offset", help="move the group's offsets of a topic to a point in time "
                                                   "(mqadmin resetOffsetByTime); connected consumers follow",
                                description="Move the group's offsets of a topic to a point in time (mqadmin "
                                            "resetOffsetByTime); connected consumers follow. As in 4.9.3, a broker "
                                            "refuses it (\"THe consumer group <G> not exist\") while the group has "
                                            "no committed offset on one of the topic's queues there.")
    reset.add_argument("group")
    reset.add_argument("-t", "--topic", required=True, help="the topic whose offsets move")
    reset.add_argument("--to", required=True, metavar="TIME",
                       help="ms since the epoch, an ISO 8601 time, mqadmin's yyyy-MM-dd#HH:mm:ss:SSS, or 'end' "
                            "(also 'now', as mqadmin: each queue's end, skipping the backlog)")
    reset.add_argument("--no-force", action="store_true",
                       help="only move offsets backwards (a queue consumed past TIME keeps its offset)")
    add_common(reset)
    reset.set_defaults(handler=_group_reset_offset)

    update = commands.add_parser("update", help="create or update a subscription group on the brokers")
    update.add_argument("group")
    update.add_argument("--retry-max-times", type=int, default=16,
                        help="deliveries through the retry topic before the DLQ (default 16)")
    update.add_argument("--retry-queue-nums", type=int, default=1, help="retry topic queues (default 1)")
    update.add_argument("--disable", action="store_true", help="forbid the group to consume")
    update.add_argument("--disable-broadcast", action="store_true",
                        help="forbid the group to consume in broadcasting mode (consumeBroadcastEnable=false)")
    update.add_argument("--no-consume-from-min", action="store_true", help="consumeFromMinEnable=false")
    update.add_argument("--broker-id", type=int, default=0,
                        help="with slaveReadEnable: the broker id consumers that keep up pull from (default 0)")
    update.add_argument("--slow-broker-id", type=int, default=1,
                        help="with slaveReadEnable: the broker id consumers reading cold messages are sent to "
                             "(whichBrokerWhenConsumeSlowly, default 1)")
    update.add_argument("--no-notify-ids-changed", action="store_true",
                        help="members are not told when the group's members change "
                             "(notifyConsumerIdsChangedEnable=false)")
    add_targets(update, brokers="master")
    update.set_defaults(handler=_group_update)

    status = commands.add_parser("status", help="ask each connected client of the group about itself: settings, "
                                               "subscriptions, queues held, pull and consume rates")
    status.add_argument("group")
    status.add_argument("--client", help="only this client id (default: every connected client)")
    status.add_argument("--jstack", action="store_true", help="include each client's thread stacks")
    add_common(status)
    status.set_defaults(handler=_group_status)

    direct = commands.add_parser("consume-directly", help="have one client of the group handle one stored "
                                                         "message now, outside its queues, and say how it went")
    direct.add_argument("group")
    direct.add_argument("--client", required=True, help="the client id (see `group status`)")
    direct.add_argument("-i", "--id", required=True, help="an offset message id, or a UNIQ_KEY with -t")
    direct.add_argument("-t", "--topic", help="the topic, when --id is a UNIQ_KEY")
    add_common(direct)
    direct.set_defaults(handler=_group_consume_directly)

    add_group_commands(commands)
    group_admin_cmds.add_group_commands(commands)


def _register_message(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    message = subparsers.add_parser("message", help="find messages by key, id or queue offset; probe sends")
    commands = message.add_subparsers(dest="message_command", metavar="ACTION")
    commands.required = True

    query = commands.add_parser("query", help="by key (-t TOPIC -k KEY) or by id (--id, offset msg id or UNIQ_KEY)")
    query.add_argument("-t", "--topic", help="the topic (needed for a key, and for an id that is a UNIQ_KEY)")
    what = query.add_mutually_exclusive_group(required=True)
    what.add_argument("-k", "--key", help="a KEYS token")
    what.add_argument("-i", "--id", help="an offset message id or a client message id (UNIQ_KEY)")
    query.add_argument("--begin", help="with --key: stored at or after (ms since the epoch, ISO time or "
                                       "yyyy-MM-dd#HH:mm:ss:SSS; the index keeps times to the second, so "
                                       "reach a second back)")
    query.add_argument("--end", help="with --key: stored at or before (ms since the epoch, ISO time or "
                                     "yyyy-MM-dd#HH:mm:ss:SSS)")
    query.add_argument("--max", type=positive_int, default=64,
                       help="with --key: at most this many, the newest (default 64; each broker answers at most its "
                            "maxMsgsNumBatch, 64 by default, as in 4.9.3)")
    add_common(query, full_body=True)
    query.set_defaults(handler=_message_query)

    resume = commands.add_parser("resume-check", help="give a transactional message (an offset msg id, e.g. one in "
                                                      "TRANS_CHECK_MAX_TIME_TOPIC) back to its broker's check "
                                                      "service with its check count at 0 (mqadmin "
                                                      "resumeCheckHalfMessage)")
    resume.add_argument("-i", "--id", required=True, help="the offset message id")
    add_common(resume)
    resume.set_defaults(handler=_message_resume_check)

    message_admin_cmds.add_message_commands(commands)
    send_probe_cmds.add_message_commands(commands)


def _register_acl(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    acl = subparsers.add_parser("acl", help="change the brokers' plain ACL accounts and white list")
    commands = acl.add_subparsers(dest="acl_command", metavar="ACTION")
    commands.required = True

    targets = add_targets
    update = commands.add_parser("update", help="create an account, or update it in the file that defines it")
    update.add_argument("account", help="the account's access key (more than 6 characters)")
    update.add_argument("-s", "--account-secret", required=True, help="the account's secret key (more than 6 "
                                                                      "characters)")
    update.add_argument("-m", "--admin", action="store_true", help="an admin account (default: not)")
    update.add_argument("-w", "--white-remote-address", help="address pattern let in without a signature")
    update.add_argument("-i", "--default-topic-perm", help="PUB, SUB, PUB|SUB or DENY for unlisted topics")
    update.add_argument("-u", "--default-group-perm", help="PUB, SUB, PUB|SUB or DENY for unlisted groups")
    update.add_argument("-t", "--topic-perms", help="topicA=PUB|SUB,topicB=DENY (replaces the account's list)")
    update.add_argument("-g", "--group-perms", help="groupA=SUB,groupB=DENY (replaces the account's list)")
    targets(update)
    update.set_defaults(handler=_acl_update)

    delete = commands.add_parser("delete", help="remove an account")
    delete.add_argument("account", help="the account's access key")
    targets(delete)
    delete.set_defaults(handler=_acl_delete)

    white = commands.add_parser("white", help="replace the global white address list of conf/plain_acl.yml")
    white.add_argument("addresses", nargs="*", help="address patterns (10.10.103.*, 192.168.0.1-100, ...); none "
                                                    "for an empty list")
    targets(white)
    white.set_defaults(handler=_acl_white)

    version = commands.add_parser("version", help="each ACL file's dataVersion, per master broker")
    targets(version)
    version.set_defaults(handler=_acl_version)

    acl_cmds.add_acl_commands(commands)



# --- topic ---------------------------------------------------------------------------------------------------


def _topic_create(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            targets = await admin.create_topic(args.topic, cluster=args.cluster, broker_addr=args.broker,
                                               read_queue_nums=args.read_queues, write_queue_nums=args.write_queues,
                                               perm=args.perm, order=args.order)
        if args.json:
            print_json({"topic": args.topic, "brokers": targets, "readQueueNums": args.read_queues,
                        "writeQueueNums": args.write_queues, "perm": args.perm, "order": args.order})
        else:
            for addr in targets:
                print(f"created topic {args.topic} on {addr}: {args.read_queues} read / {args.write_queues} write "
                      f"queues, perm {args.perm}{', ordered' if args.order else ''}")
        return 0

    return run_command(go())


def _topic_list(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            if args.consumers:
                rows = await admin.topics_with_consumers()
            else:
                topics = await admin.topic_list()
        if args.consumers:
            if args.json:
                print_json([{"clusterName": r.cluster, "topic": r.topic, "consumerGroups": r.groups} for r in rows])
            else:
                print_table(["CLUSTER", "TOPIC", "CONSUMER GROUP"],
                            [(r.cluster or "-", r.topic, g or "-") for r in rows for g in (r.groups or [""])])
        elif args.json:
            print_json(topics)
        else:
            for t in topics:
                print(t)
        return 0

    return run_command(go())


def _topic_cq(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            addr = args.broker or next(iter((await admin.topic_masters(args.topic)).values()), None)
            if addr is None:
                return fail(f"topic {args.topic} has no master broker")
            answer = await admin.query_consume_queue(addr, args.topic, args.queue, args.index, args.count, args.group)
        if args.json:
            print_json(answer)
            return 0
        if "remark" in answer:
            print(answer["remark"])
        if "minQueueIndex" in answer:
            print(f"{args.topic} queue {args.queue} on {addr}: queue offsets "
                  f"{offset_range(answer['minQueueIndex'], answer['maxQueueIndex'])}")
        for i, e in enumerate(answer.get("queueData") or []):
            print(f"{args.index + i}  commitlog offset {e['physicOffset']}  size {e['physicSize']}  "
                  f"tagsCode {e['tagsCode']}")
        if answer.get("filterData") is not None:
            print(f"group {args.group}: {answer.get('subscriptionData') or answer['filterData']}")
        return 0

    return run_command(go())


def _topic_status(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            stats = await admin.topic_stats(args.topic)
        if args.json:
            print_json([{"topic": s.topic, "brokerName": s.broker_name, "queueId": s.queue_id,
                         "minOffset": s.min_offset, "maxOffset": s.max_offset,
                         "lastUpdateTimestamp": s.last_update_timestamp_ms} for s in stats])
            return 0
        print_table(["BROKER", "QID", "MIN OFFSET", "MAX OFFSET", "LAST UPDATED"],
                    [(s.broker_name, s.queue_id, s.min_offset, s.max_offset, format_time(s.last_update_timestamp_ms))
                     for s in stats], right=(1, 2, 3))
        return 0

    return run_command(go())


# --- group ---------------------------------------------------------------------------------------------------


async def _every_group_progress(admin: AdminClient) -> list[dict[str, object]]:
    """mqadmin consumerProgress without -g: each group that has a retry topic, its clients (OFFLINE when none
    is connected) and its consume TPS and total diff (0 when no broker holds an offset of it)."""
    rows: list[dict[str, object]] = []
    for topic in await admin.topic_list():
        if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            continue
        group = topic[len(RETRY_GROUP_TOPIC_PREFIX):]
        row: dict[str, object] = {"group": group, "count": 0, "version": "OFFLINE", "type": "", "model": "",
                                  "consumeTps": 0, "diffTotal": 0}
        try:
            progress = await admin.consume_progress(group)
            row.update(consumeTps=int(progress.consume_tps), diffTotal=progress.total_lag)
        except (ClientError, RemotingError):
            pass
        try:
            info = await admin.consumer_connection_info(group)
        except (ClientError, RemotingError):
            info = None
        if info is not None and info.connections:
            push = info.consume_type != "CONSUME_ACTIVELY"
            row.update(count=len(info.connections),
                       version=group_admin_cmds.version_name(min(c.version for c in info.connections)),
                       type="PUSH" if push else "PULL", model=info.message_model if push else "")
        rows.append(row)
    return rows


def _group_progress(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            if args.group is None:
                if args.topic is not None or args.client_ip:
                    return fail(f"{'-t/--topic' if args.topic is not None else '-s/--client-ip'} needs a group")
                groups = await _every_group_progress(admin)
                if args.json:
                    print_json(groups)
                else:
                    print_table(["GROUP", "COUNT", "VERSION", "TYPE", "MODEL", "TPS", "DIFF TOTAL"],
                                [tuple(g.values()) for g in groups], right=(1, 5, 6))
                return 0
            progress = await admin.consume_progress(args.group, args.topic)
            clients = await admin.queue_clients(args.group) if args.client_ip else None
        if args.json:
            queues: list[dict[str, object]] = [
                {"topic": q.topic, "brokerName": q.broker_name, "queueId": q.queue_id,
                 "brokerOffset": q.broker_offset, "consumerOffset": q.consumer_offset,
                 "diff": q.lag, "lastTimestamp": q.last_timestamp_ms} for q in progress.queues]
            if clients is not None:
                for q, out in zip(progress.queues, queues):
                    out["clientIp"] = clients.get((q.topic, q.broker_name, q.queue_id))
            print_json({"group": progress.group, "consumeTps": progress.consume_tps,
                        "diffTotal": progress.total_lag, "queues": queues})
            return 0
        if clients is not None:  # mqadmin's -s: the holder's IP after the consumer offset
            print_table(["TOPIC", "BROKER", "QID", "BROKER OFFSET", "CONSUMER OFFSET", "CLIENT IP", "DIFF",
                         "LAST TIME"],
                        [(q.topic, q.broker_name, q.queue_id, q.broker_offset, q.consumer_offset,
                          clients.get((q.topic, q.broker_name, q.queue_id), "N/A"), q.lag,
                          format_time(q.last_timestamp_ms)) for q in progress.queues], right=(2, 3, 4, 6))
        else:
            print_table(["TOPIC", "BROKER", "QID", "BROKER OFFSET", "CONSUMER OFFSET", "DIFF", "LAST TIME"],
                        [(q.topic, q.broker_name, q.queue_id, q.broker_offset, q.consumer_offset, q.lag,
                          format_time(q.last_timestamp_ms)) for q in progress.queues], right=(2, 3, 4, 5))
        print()
        print(f"Consume TPS: {progress.consume_tps:.2f}")
        print(f"Diff Total: {progress.total_lag}")
        return 0

    return run_command(go())


def _group_update(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            targets = await admin.update_subscription_group(
                args.group, broker_addr=args.broker, cluster=args.cluster, retry_max_times=args.retry_max_times,
                retry_queue_nums=args.retry_queue_nums, consume_enable=not args.disable,
                consume_broadcast_enable=not args.disable_broadcast,
                consume_from_min_enable=not args.no_consume_from_min, broker_id=args.broker_id,
                which_broker_when_consume_slowly=args.slow_broker_id,
                notify_consumer_ids_changed_enable=not args.no_notify_ids_changed)
        if args.json:
            print_json({"group": args.group, "brokers": targets, "retryMaxTimes": args.retry_max_times,
                        "retryQueueNums": args.retry_queue_nums, "consumeEnable": not args.disable,
                        "consumeBroadcastEnable": not args.disable_broadcast,
                        "consumeFromMinEnable": not args.no_consume_from_min, "brokerId": args.broker_id,
                        "whichBrokerWhenConsumeSlowly": args.slow_broker_id,
                        "notifyConsumerIdsChangedEnable": not args.no_notify_ids_changed})
        else:
            for addr in targets:
                print(f"updated group {args.group} on {addr}: retryMaxTimes {args.retry_max_times}, "
                      f"retryQueueNums {args.retry_queue_nums}{', consuming disabled' if args.disable else ''}"
                      f"{', broadcasting disabled' if args.disable_broadcast else ''}")
        return 0

    return run_command(go())


def _group_status(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            broker_addr, clients = await admin.consumer_connections(args.group)
            if args.client is not None:
                clients = [c for c in clients if c.client_id == args.client]
                if not clients:
                    return fail(f"client {args.client!r} of group {args.group!r} is not connected to {broker_addr}")
            infos = [(c, await admin.consumer_running_info(args.group, c.client_id, jstack=args.jstack,
                                                           broker_addr=broker_addr)) for c in clients]
        if args.json:
            print_json({"group": args.group, "broker": broker_addr, "clients": [
                {"clientId": c.client_id, "clientAddr": c.client_addr, "language": c.language,
                 "version": c.version, "runningInfo": _running_info_json(info)}
                for c, info in infos]})
            return 0
        for c, info in infos:
            props = info.properties
            print(f"client {c.client_id} ({c.language}, {c.client_addr}) via {broker_addr}")
            print(f"  type {props.get('PROP_CONSUME_TYPE', '?')}, orderly {props.get('PROP_CONSUMEORDERLY', '?')}, "
                  f"threads {props.get('PROP_THREADPOOL_CORE_SIZE', '?')}, version "
                  f"{props.get('PROP_CLIENT_VERSION', '?')}, started "
                  f"{format_time(int(props.get('PROP_CONSUMER_START_TIMESTAMP', '0') or 0))}")
            for sub in sorted(info.subscriptions, key=lambda x: x.topic):
                print(f"  subscribes {sub.topic}: {sub.sub_string}")
            print_table(["TOPIC", "BROKER", "QID", "COMMITTED", "CACHED", "CACHED MIN", "CACHED MAX", "LOCKED",
                         "LAST PULL"],
                        [(t, b, q, v.commit_offset, v.cached_msg_count, v.cached_msg_min_offset,
                          v.cached_msg_max_offset, "yes" if v.locked else "no", format_time(v.last_pull_timestamp))
                         for (t, b, q), v in sorted(info.mq_table.items())], right=(2, 3, 4, 5, 6))
            print_table(["TOPIC", "PULL RT ms", "PULL TPS", "CONSUME RT ms", "OK TPS", "FAILED TPS",
                         "FAILED (1 h)"],
                        [(t, f"{v.pull_rt:.1f}", f"{v.pull_tps:.1f}", f"{v.consume_rt:.1f}",
                          f"{v.consume_ok_tps:.1f}", f"{v.consume_failed_tps:.1f}", v.consume_failed_msgs)
                         for t, v in sorted(info.status_table.items())], right=(1, 2, 3, 4, 5, 6))
            if info.jstack:
                print(info.jstack)
            print()
        return 0

    return run_command(go())


def _running_info_json(info: ConsumerRunningInfo) -> dict[str, object]:
    """ConsumerRunningInfo as plain JSON: the mqTable (keyed by MessageQueue objects on the wire) as a list."""
    out: dict[str, object] = {
        "properties": info.properties, "subscriptionSet": [s.to_json() for s in info.subscriptions],
        "mqTable": [{"topic": t, "brokerName": b, "queueId": q, **v.to_json()}
                    for (t, b, q), v in sorted(info.mq_table.items())],
        "statusTable": {t: v.to_json() for t, v in sorted(info.status_table.items())}}
    if info.jstack is not None:
        out["jstack"] = info.jstack
    return out


def _group_consume_directly(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            result = await admin.consume_message_directly(args.group, args.client, args.id, args.topic)
        if args.json:
            print_json(fastjson.loads(result.encode()))
        else:
            print(f"{result.consume_result} in {result.spent_time_ms} ms"
                  + (f": {result.remark}" if result.remark else ""))
        return 0 if result.consume_result == CMResult.SUCCESS else 1

    return run_command(go())


# --- message -------------------------------------------------------------------------------------------------


def _group_reset_offset(args: argparse.Namespace) -> int:
    try:
        # mqadmin resetOffsetByTime -s now sends -1, which the broker answers with each queue's max offset
        when = -1 if args.to.strip().lower() in ("end", "now") else parse_time_ms(args.to, -1)
    except argparse.ArgumentTypeError as exc:
        return fail(str(exc))

    async def go() -> int:
        async with admin_of(args) as admin:
            table = await admin.reset_offset_by_time(args.group, args.topic, when, force=not args.no_force)
        if args.json:
            print_json([{"topic": t, "brokerName": b, "queueId": q, "offset": o} for (t, b, q), o in table.items()])
        else:
            for (t, b, q), o in table.items():
                print(f"{t}  {b}  queue {q}  offset {o}")
        return 0

    return run_command(go())


def _message_query(args: argparse.Namespace) -> int:
    if args.key is not None and args.topic is None:
        return fail("a query by key needs the topic (-t TOPIC)")
    try:
        begin, end = parse_time_ms(args.begin, 0), parse_time_ms(args.end, MAX_TIMESTAMP_MS)
    except argparse.ArgumentTypeError as exc:
        return fail(str(exc))

    async def go() -> int:
        async with admin_of(args) as admin:
            found = await _find(admin, args, begin, end)
        if not found:
            what = f"key {args.key!r}" if args.key is not None else f"id {args.id!r}"
            return fail(f"no message with {what}" + (f" in topic {args.topic}" if args.topic else ""))
        if args.json:
            print_json([message_json(m, args.full_body) for m in found])
            return 0
        for i, m in enumerate(found):
            if i:
                print()
            if len(found) > 1:
                print(f"--- message {i + 1} of {len(found)} ---")
            print_message(m, args.full_body)
        return 0

    return run_command(go())


def _message_resume_check(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            await admin.resume_check_half_message(args.id)
        if args.json:
            print_json({"msgId": args.id, "resumed": True})
        else:
            print(f"message {args.id} is back in the half queue; its producer group will be asked about it")
        return 0

    return run_command(go())


async def _find(admin: AdminClient, args: argparse.Namespace, begin: int, end: int) -> list[StoredMessage]:
    if args.key is not None:
        return await admin.query_by_key(check_name("topic", args.topic), args.key, max_count=args.max,
                                        begin_ms=begin, end_ms=end)
    # mqadmin's queryMsgById: an offset message id names the broker that stored the message; any other id
    # (the client's UNIQ_KEY, same length) is looked up in the topic's index
    if await admin.is_broker_message_id(args.id):
        return [await admin.view_message(args.id)]
    if args.topic is None:
        raise ClientError(f"{args.id} is not an offset message id of a known broker; give the topic (-t TOPIC) "
                          "to look it up as a client message id (UNIQ_KEY)")
    return await admin.query_by_uniq_key(check_name("topic", args.topic), args.id, begin_ms=begin, end_ms=end)


# --- acl -----------------------------------------------------------------------------------------------------


async def _acl_targets(admin: AdminClient, args: argparse.Namespace, *, slaves: bool = True) -> list[str]:
    if args.broker is not None:
        return [args.broker]
    return await admin.acl_brokers(args.cluster, slaves=slaves)


def _perm_list(text: str | None) -> list[str] | None:
    return None if text is None else [p.strip() for p in text.split(",") if p.strip()]


def _acl_update(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            brokers = await _acl_targets(admin, args)
            for addr in brokers:
                await admin.update_acl_config(
                    addr, args.account, args.account_secret, white_remote_address=args.white_remote_address,
                    admin=args.admin, default_topic_perm=args.default_topic_perm,
                    default_group_perm=args.default_group_perm, topic_perms=_perm_list(args.topic_perms),
                    group_perms=_perm_list(args.group_perms))
                if not args.json:
                    print(f"created or updated account {args.account} on {addr}")
        if args.json:
            print_json({"accessKey": args.account, "brokers": brokers})
        return 0

    return run_command(go())


def _acl_delete(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            brokers = await _acl_targets(admin, args)
            for addr in brokers:
                await admin.delete_acl_config(addr, args.account)
                if not args.json:
                    print(f"deleted account {args.account} on {addr}")
        if args.json:
            print_json({"accessKey": args.account, "brokers": brokers})
        return 0

    return run_command(go())


def _acl_white(args: argparse.Namespace) -> int:
    addresses = [a.strip() for arg in args.addresses for a in arg.split(",") if a.strip()]

    async def go() -> int:
        async with admin_of(args) as admin:
            brokers = await _acl_targets(admin, args)
            for addr in brokers:
                await admin.update_global_white_addrs(addr, addresses)
                if not args.json:
                    print(f"global white addresses of {addr}: {', '.join(addresses) or '(none)'}")
        if args.json:
            print_json({"globalWhiteRemoteAddresses": addresses, "brokers": brokers})
        return 0

    return run_command(go())


def _acl_version(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            infos = [await acl_cmds.read_acl(admin.acl_config_version(addr))
                     for addr in await _acl_targets(admin, args, slaves=False)]
        if args.json:
            print_json([{"clusterName": i.cluster_name, "brokerName": i.broker_name, "brokerAddr": i.broker_addr,
                         "version": i.version.to_json(),
                         "allAclFileVersion": {p: v.to_json() for p, v in sorted(i.file_versions.items())}}
                        for i in infos])
            return 0
        print_table(["CLUSTER", "BROKER", "ADDRESS", "FILE", "COUNTER", "UPDATED"],
                    [(i.cluster_name, i.broker_name, i.broker_addr, path, v.counter, format_time(v.timestamp_ms))
                     for i in infos for path, v in sorted(i.file_versions.items())], right=(4,))
        return 0

    return run_command(go())
