"""Topic commands beyond create / list / status (mqadmin deleteTopic, topicRoute, topicClusterList,
updateTopicPerm, allocateMQ), added to admin_cmds' ``topic`` command:

    rocketstore topic delete TOPIC [-c CLUSTER]        from every broker of its clusters, then the name servers
    rocketstore topic route TOPIC                      each broker: cluster, addresses, queues, perm
    rocketstore topic clusters TOPIC                   the clusters holding it
    rocketstore topic perm TOPIC -p 2|4|6 [-b ADDR | -c CLUSTER]    its masters' permission
    rocketstore topic allocate TOPIC --ip-list ID,ID   the queues the average strategy gives each client id

Parse arguments, call one AdminClient method, print.
"""

from __future__ import annotations

import argparse

from rocketstore.cli.output import add_common, admin_of, broker_address, print_json, print_table, run_command
from rocketstore.client.topic_admin import PERMS
from rocketstore.remoting.bodies import TopicRouteData

__all__ = ["add_topic_commands", "route_json"]


def add_topic_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    delete = commands.add_parser("delete", help="delete a topic from every broker (masters and slaves) of its "
                                                "clusters, then from every name server (mqadmin deleteTopic)")
    delete.add_argument("topic")
    delete.add_argument("-c", "--cluster", help="only from this cluster's brokers (default: every cluster the "
                                                "topic's route reaches)")
    add_common(delete)
    delete.set_defaults(handler=_delete)

    route = commands.add_parser("route", help="the topic's route: each broker's cluster, addresses, queue counts "
                                              "and perm (mqadmin topicRoute)")
    route.add_argument("topic")
    add_common(route)
    route.set_defaults(handler=_route)

    clusters = commands.add_parser("clusters", help="the clusters holding the topic (mqadmin topicClusterList)")
    clusters.add_argument("topic")
    add_common(clusters)
    clusters.set_defaults(handler=_clusters)

    perm = commands.add_parser("perm", help="change the topic's permission on its masters (mqadmin "
                                            "updateTopicPerm)")
    perm.add_argument("topic")
    perm.add_argument("-p", "--perm", type=int, required=True, choices=PERMS,
                      help="2 write only, 4 read only, 6 read and write")
    where = perm.add_mutually_exclusive_group()
    where.add_argument("-b", "--broker", type=broker_address, help="only this master, HOST:PORT")
    where.add_argument("-c", "--cluster", help="only the masters of this cluster")
    add_common(perm)
    perm.set_defaults(handler=_perm)

    allocate = commands.add_parser("allocate", help="the topic's queues the average strategy gives each of these "
                                                    "client ids (mqadmin allocateMQ)")
    allocate.add_argument("topic")
    allocate.add_argument("-i", "--ip-list", required=True, help="client ids (or IPs) of the group, comma-separated")
    add_common(allocate)
    allocate.set_defaults(handler=_allocate)


def _delete(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            done = await admin.delete_topic(args.topic, cluster=args.cluster)
        if args.json:
            print_json({"topic": done.topic, "clusters": done.clusters, "brokers": done.broker_addrs,
                        "namesrvs": done.namesrv_addrs})
        else:
            for addr in done.broker_addrs:
                print(f"deleted topic {done.topic} from broker {addr}")
            for addr in done.namesrv_addrs:
                print(f"deleted topic {done.topic} from name server {addr}")
        return 0

    return run_command(go())


def route_json(route: TopicRouteData) -> dict[str, object]:
    """A route as mqadmin topicRoute prints it (brokerAddrs keyed by broker id)."""
    return {"brokerDatas": [bd.to_json() for bd in sorted(route.broker_datas, key=lambda b: b.broker_name)],
            "queueDatas": [qd.to_json() for qd in sorted(route.queue_datas, key=lambda q: q.broker_name)],
            "orderTopicConf": route.order_topic_conf, "filterServerTable": route.filter_server_table}


def _route(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            route = await admin.route(args.topic)
        if args.json:
            print_json(route_json(route))
            return 0
        queues = {qd.broker_name: qd for qd in route.queue_datas}
        rows: list[tuple[object, ...]] = []
        for bd in sorted(route.broker_datas, key=lambda b: b.broker_name):
            qd = queues.get(bd.broker_name)
            addrs = ",".join(f"{i}={a}" for i, a in sorted(bd.broker_addrs.items()))
            rows.append((bd.cluster, bd.broker_name, addrs, qd.read_queue_nums if qd else "-",
                         qd.write_queue_nums if qd else "-", qd.perm if qd else "-"))
        rows.append(("Total:", len(queues), "", sum(q.read_queue_nums for q in queues.values()),
                     sum(q.write_queue_nums for q in queues.values()), ""))
        print_table(["CLUSTER", "BROKER", "ADDRESSES (ID=ADDR)", "READ QUEUES", "WRITE QUEUES", "PERM"], rows,
                    right=(3, 4, 5))
        if route.order_topic_conf:
            print(f"order config: {route.order_topic_conf}")
        return 0

    return run_command(go())


def _clusters(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            clusters = await admin.topic_clusters(args.topic)
        if args.json:
            print_json(clusters)
        else:
            for name in clusters:
                print(name)
        return 0

    return run_command(go())


def _perm(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            changes = await admin.update_topic_perm(args.topic, args.perm, broker_addr=args.broker,
                                                    cluster=args.cluster)
        if args.json:
            print_json([{"brokerName": c.broker_name, "brokerAddr": c.broker_addr, "oldPerm": c.old_perm,
                         "newPerm": c.new_perm, "changed": c.changed} for c in changes])
            return 0
        for c in changes:
            if c.changed:
                print(f"topic {args.topic} on {c.broker_name} ({c.broker_addr}): perm {c.old_perm} -> {c.new_perm}")
            else:
                print(f"topic {args.topic} on {c.broker_name} ({c.broker_addr}): perm is {c.new_perm} already")
        return 0

    return run_command(go())


def _allocate(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            shares = await admin.allocate_queues(args.topic, args.ip_list.split(","))
        if args.json:
            print_json({"result": {cid: [{"topic": q.topic, "brokerName": q.broker_name, "queueId": q.queue_id}
                                         for q in queues] for cid, queues in shares.items()}})
            return 0
        print_table(["CLIENT", "BROKER", "QUEUES"],
                    [(cid, broker, ",".join(str(q.queue_id) for q in queues if q.broker_name == broker))
                     for cid, queues in shares.items()
                     for broker in sorted({q.broker_name for q in queues}) or ["-"]])
        return 0

    return run_command(go())
