"""Exports of a cluster as RocketMQ 4.9.3's mqadmin writes them (exportMetadata, exportConfigs,
exportMetrics), through client.export_admin:

    rocketstore export metadata (-c CLUSTER | -b ADDR) [-f DIR] [--topics-only | --groups-only] [--special-topics]
                                    DIR/metadata.json, or topic.json / subscriptionGroup.json
    rocketstore export configs -c CLUSTER [-f DIR]      DIR/configs.json
    rocketstore export metrics -c CLUSTER [-f DIR]      DIR/metrics.json

The files hold what 4.9.3 writes (its field names and nesting), so tools reading mqadmin's exports read
these.  They are written as fastjson's pretty format lays them out (tab indents, no space after a colon),
keys sorted.  The directory defaults to ``./export`` rather than 4.9.3's ``/tmp/rocketmq/export``: a
shared /tmp directory is a poor default for files that describe a cluster.

Two deliberate differences from 4.9.3: ``metadata -b`` without ``--topics-only`` / ``--groups-only``
writes metadata.json of that broker (4.9.3 writes nothing), and an unknown cluster is refused (4.9.3
prints an error line and writes empty tables, or fails with a NullPointerException).  Each command
prints ``export PATH success`` (``--json``: the path and what it holds); errors print one line on stderr
and exit 1 (2 for bad arguments).  ``-t`` / ``-g`` / ``-s`` are mqadmin's letters for the three metadata flags.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from rocketstore.cli.output import add_common, admin_of, broker_address, fail, print_json, run_command

__all__ = ["DEFAULT_EXPORT_DIR", "fastjson_pretty", "register"]

DEFAULT_EXPORT_DIR = "export"


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    group = subparsers.add_parser("export", help="write a cluster's metadata, configs or metrics as mqadmin's "
                                                 "export commands do")
    commands = group.add_subparsers(dest="export_command", metavar="WHAT")
    commands.required = True

    metadata = commands.add_parser("metadata", help="user topics and subscription groups (exportMetadata)")
    where = metadata.add_mutually_exclusive_group(required=True)
    where.add_argument("-c", "--cluster", help="every master of this cluster, merged")
    where.add_argument("-b", "--broker", type=broker_address, help="one broker, HOST:PORT")
    only = metadata.add_mutually_exclusive_group()
    only.add_argument("-t", "--topics-only", action="store_true", help="only topics: topic.json")
    only.add_argument("-g", "--groups-only", action="store_true", help="only subscription groups: subscriptionGroup.json")
    metadata.add_argument("-s", "--special-topics", action="store_true", help="keep the %%RETRY%% and %%DLQ%% topics")
    _add_dir(metadata)
    add_common(metadata)
    metadata.set_defaults(handler=_metadata)

    configs = commands.add_parser("configs", help="the masters' main properties and the cluster's scale "
                                                  "(exportConfigs)")
    configs.add_argument("-c", "--cluster", required=True, help="the cluster")
    _add_dir(configs)
    add_common(configs)
    configs.set_defaults(handler=_configs)

    metrics = commands.add_parser("metrics", help="each master's disk, TPS, day counts and client versions, and "
                                                  "the totals (exportMetrics)")
    metrics.add_argument("-c", "--cluster", required=True, help="the cluster")
    _add_dir(metrics)
    add_common(metrics)
    metrics.set_defaults(handler=_metrics)


def _add_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--file-path", default=DEFAULT_EXPORT_DIR, metavar="DIR",
                        help=f"the directory to write to, made if missing (default ./{DEFAULT_EXPORT_DIR})")


def fastjson_pretty(obj: object) -> str:
    """*obj* as fastjson's JSON.toJSONString(obj, true) lays a document out: tab indents, ``"key":value``,
    keys sorted (fastjson sorts a bean's fields; a map's order is the map's, here sorted for stable files)."""
    return json.dumps(obj, ensure_ascii=False, indent="\t", separators=(",", ":"), sort_keys=True)


def _write(args: argparse.Namespace, file_name: str, document: dict[str, Any], summary: dict[str, Any]) -> int:
    """Write *document* to DIR/*file_name* (DIR made if missing) and say so."""
    directory = args.file_path.strip()
    if os.path.exists(directory) and not os.path.isdir(directory):  # makedirs' "[Errno 17] File exists"
        return fail(f"-f {directory} is a file: give the directory to write {file_name} in")
    os.makedirs(directory or ".", exist_ok=True)
    path = os.path.join(directory, file_name)
    with open(path, "w", encoding="utf-8") as out:
        out.write(fastjson_pretty(document))
    if args.json:
        print_json({"path": path, **summary})
    else:
        print(f"export {path} success")
    return 0


def _metadata(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            if args.broker and (args.topics_only or args.groups_only):
                # one broker: 4.9.3 writes its TopicConfigSerializeWrapper / SubscriptionGroupWrapper as is
                if args.topics_only:
                    topics = await admin.user_topics(args.broker, special_topics=args.special_topics)
                    return _write(args, "topic.json", topics.to_json(),
                                  {"topics": len(topics.topic_config_table)})
                groups = await admin.user_groups(args.broker)
                return _write(args, "subscriptionGroup.json", groups.to_json(),
                              {"groups": len(groups.subscription_group_table)})
            merged = await admin.export_metadata(cluster=args.cluster, broker_addr=args.broker,
                                                 special_topics=args.special_topics)
        document = merged.to_json(topics=not args.groups_only, groups=not args.topics_only)
        name = "topic.json" if args.topics_only else "subscriptionGroup.json" if args.groups_only else "metadata.json"
        summary = {key: len(document[table]) for key, table in (("topics", "topicConfigTable"),
                                                                ("groups", "subscriptionGroupTable"))
                   if table in document}
        return _write(args, name, document, summary)

    return run_command(go())


def _configs(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            configs = await admin.export_configs(args.cluster)
        return _write(args, "configs.json", configs.to_json(), {"brokers": sorted(configs.broker_configs)})

    return run_command(go())


def _metrics(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            metrics = await admin.export_metrics(args.cluster)
        return _write(args, "metrics.json", metrics.to_json(), {"brokers": sorted(metrics.evaluate_report)})

    return run_command(go())
