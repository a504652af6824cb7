"""Subscription group and client connection commands (mqadmin deleteSubGroup, consumerConnection,
getConsumerConfig, producerConnection): three actions added to admin_cmds' ``group`` command, and the
``producer`` command:

    rocketstore group delete GROUP [-b ADDR | -c CLUSTER] [--remove-offsets]   its config (and offsets)
    rocketstore group connections GROUP       each client's id, address, language, version; subscriptions
    rocketstore group config GROUP            the group's config on each broker that has it
    rocketstore producer connections GROUP -t TOPIC     each client of a producer group

``group connections`` is what the broker knows from heartbeats; ``group status`` asks each client itself.
Parse arguments, call one AdminClient method, print.
"""

from __future__ import annotations

import argparse

from rocketstore.cli.output import add_common, admin_of, broker_address, print_json, print_table, run_command
from rocketstore.client.admin_types import ConsumerConnection
from rocketstore.remoting.versions import get_version_desc

__all__ = ["add_group_commands", "register", "version_name"]


def add_group_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    delete = commands.add_parser("delete", help="delete a subscription group from the masters; with a cluster (the "
                                                "default: every one) its retry and DLQ topics too (mqadmin "
                                                "deleteSubGroup)")
    delete.add_argument("group")
    where = delete.add_mutually_exclusive_group()
    where.add_argument("-b", "--broker", type=broker_address,
                       help="only this broker, HOST:PORT (its retry / DLQ topics stay)")
    where.add_argument("-c", "--cluster", help="every master of this cluster (default: every master)")
    delete.add_argument("-r", "--remove-offsets", action="store_true",
                        help="the brokers forget the group's committed offsets too (mqadmin -r true)")
    add_common(delete)
    delete.set_defaults(handler=_delete)

    connections = commands.add_parser("connections", help="the group's clients as the broker knows them from "
                                                         "heartbeats, and their subscriptions (mqadmin "
                                                         "consumerConnection)")
    connections.add_argument("group")
    add_common(connections)
    connections.set_defaults(handler=_connections)

    config = commands.add_parser("config", help="the group's subscription config on each broker that has it "
                                               "(mqadmin getConsumerConfig)")
    config.add_argument("group")
    add_common(config)
    config.set_defaults(handler=_config)


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    producer = subparsers.add_parser("producer", help="producer groups' connections")
    commands = producer.add_subparsers(dest="producer_command", metavar="ACTION")
    commands.required = True
    connections = commands.add_parser("connections", help="each client of a producer group: id, address, "
                                                         "language, version (mqadmin producerConnection)")
    connections.add_argument("group")
    connections.add_argument("-t", "--topic", required=True, help="a topic the group sends to (its masters are "
                                                                 "asked)")
    add_common(connections)
    connections.set_defaults(handler=_producer_connections)


#: a client's version ordinal as mqadmin prints it (``V4_9_3``); admin_cmds' consumer list uses it too
version_name = get_version_desc


def _connections_json(connections: list[ConsumerConnection]) -> list[dict[str, object]]:
    return [{"clientId": c.client_id, "clientAddr": c.client_addr, "language": c.language, "version": c.version,
             "versionDesc": version_name(c.version)} for c in connections]


def _print_connections(connections: list[ConsumerConnection]) -> None:
    print_table(["CLIENT ID", "CLIENT ADDR", "LANGUAGE", "VERSION"],
                [(c.client_id, c.client_addr, c.language, version_name(c.version)) for c in connections])


def _delete(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            done = await admin.delete_subscription_group(args.group, broker_addr=args.broker, cluster=args.cluster,
                                                         remove_offsets=args.remove_offsets)
        if args.json:
            print_json({"group": done.group, "brokers": done.broker_addrs, "removeOffset": done.removed_offsets,
                        "deletedTopics": done.deleted_topics})
            return 0
        offsets = " and its offsets" if done.removed_offsets else ""
        for addr in done.broker_addrs:
            print(f"deleted subscription group {done.group}{offsets} from broker {addr}")
        for topic in done.deleted_topics:
            print(f"deleted topic {topic}")
        return 0

    return run_command(go())


def _connections(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            info = await admin.consumer_connection_info(args.group)
        if args.json:
            print_json({"group": args.group, "broker": info.broker_addr,
                        "connectionSet": _connections_json(info.connections),
                        "subscriptionTable": info.subscriptions, "consumeType": info.consume_type,
                        "messageModel": info.message_model, "consumeFromWhere": info.consume_from_where})
            return 0
        _print_connections(info.connections)
        print()
        print_table(["TOPIC", "SUB EXPRESSION"],
                    [(t, f"{s.get('subString', '*')}" + (f" ({s['expressionType']})"
                                                         if s.get("expressionType") not in (None, "TAG") else ""))
                     for t, s in info.subscriptions.items()])
        print()
        print(f"ConsumeType: {info.consume_type}")
        print(f"MessageModel: {info.message_model}")
        print(f"ConsumeFromWhere: {info.consume_from_where}")
        return 0

    return run_command(go())


def _config(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            configs = await admin.subscription_group_configs(args.group)
        if args.json:
            print_json([{"clusterName": c.cluster_name, "brokerName": c.broker_name, "brokerAddr": c.broker_addr,
                         "config": c.config} for c in configs])
            return 0
        for i, c in enumerate(configs):
            if i:
                print()
            print(f"{c.cluster_name}:{c.broker_name} ({c.broker_addr})")
            width = max(len(k) for k in c.config) if c.config else 0
            for key, value in c.config.items():
                shown = str(value).lower() if isinstance(value, bool) else value
                print(f"  {key.ljust(width)} = {shown}")
        return 0

    return run_command(go())


def _producer_connections(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            info = await admin.producer_connection_info(args.group, args.topic)
        if args.json:
            print_json({"group": args.group, "broker": info.broker_addr,
                        "connectionSet": _connections_json(info.connections)})
        else:
            _print_connections(info.connections)
        return 0

    return run_command(go())
