"""Cluster-wide commands (mqadmin clusterList, wipeWritePerm, addWritePerm):

    rocketstore cluster list [-c CLUSTER] [-m]             every broker: address, version, TPS in / out, ...
    rocketstore cluster rt [-c CLUSTER] [-a N] [-s BYTES]  send round trips per broker (cli/send_probe_cmds.py)
    rocketstore broker-admin wipe-write-perm [-b] BROKER_NAME   every name server stops routing writes to it
    rocketstore broker-admin add-write-perm [-b] BROKER_NAME    and routes them again

``cluster list`` prints, per broker address, what mqadmin clusterList takes from GET_BROKER_RUNTIME_INFO: the
version, put TPS with the send queue's size and head wait, get TPS with the pull queue's, how long the
commitlog lock has been held, the hours of messages kept and the commitlog disk's used ratio; with
``-m`` (mqadmin's ``-m``, moreStats) the messages put and got yesterday and today instead.  A broker that
does not answer gets its row with ``unreachable``, an error line on stderr, and exit status 1.  The write
perm commands print how many topics of the broker each name server changed.  Parse arguments, call one
AdminClient method, print.
"""

from __future__ import annotations

import argparse
import sys
import time

from rocketstore.cli import send_probe_cmds
from rocketstore.cli.output import add_common, admin_of, print_json, print_table, run_command
from rocketstore.client.admin_types import ClusterBrokerRow

__all__ = ["add_broker_admin_commands", "cluster_row_json", "register"]


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    cluster = subparsers.add_parser("cluster", help="the clusters' brokers and their figures")
    commands = cluster.add_subparsers(dest="cluster_command", metavar="ACTION")
    commands.required = True
    listing = commands.add_parser("list", help="every broker of every cluster: address, version, TPS, disk "
                                               "(mqadmin clusterList)")
    listing.add_argument("-c", "--cluster", help="only this cluster")
    listing.add_argument("-m", "--more-stats", action="store_true",
                         help="messages put (in) and got (out) yesterday and today instead (mqadmin -m)")
    add_common(listing)
    listing.set_defaults(handler=_list)
    send_probe_cmds.add_cluster_commands(commands)


def add_broker_admin_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    wipe_help = ("take the write perm of a broker's topics away on every name server, so producers stop sending "
                 "to it (mqadmin wipeWritePerm)")
    add_help = "give the write perm of a broker's topics back on every name server (mqadmin addWritePerm)"
    for action, what, handler in (("wipe-write-perm", wipe_help, _wipe), ("add-write-perm", add_help, _add)):
        command = commands.add_parser(action, help=what)
        command.add_argument("broker_name", nargs="?", metavar="BROKER_NAME",
                             help="the broker's name (brokerName), not its address")
        command.add_argument("-b", "--broker-name", dest="broker_name_option", metavar="BROKER_NAME",
                             help="the same, as mqadmin takes it")
        add_common(command)
        command.set_defaults(handler=handler, write_perm_parser=command)


def _first_number(text: str | None) -> float:
    """The first field of a runtime figure such as putTps (``"12.5 11.9 10.0"``: 10 s, 1 min, 10 min)."""
    try:
        return float((text or "").split()[0])
    except (IndexError, ValueError):
        return 0.0


def cluster_row_json(row: ClusterBrokerRow, now_ms: int) -> dict[str, object]:
    """One clusterList row: the figures mqadmin prints, from the broker's runtime table."""
    out: dict[str, object] = {"clusterName": row.cluster_name, "brokerName": row.broker_name,
                              "brokerId": row.broker_id, "brokerAddr": row.broker_addr}
    if row.runtime is None:
        out["error"] = row.error
        return out
    t = row.runtime
    earliest = int(t.get("earliestMessageTimeStamp") or 0)
    ratio = t.get("commitLogDiskRatio")
    out.update({
        "version": t.get("brokerVersionDesc", ""), "inTps": _first_number(t.get("putTps")),
        "sendThreadPoolQueueSize": t.get("sendThreadPoolQueueSize", ""),
        "sendThreadPoolQueueHeadWaitTimeMills": t.get("sendThreadPoolQueueHeadWaitTimeMills", ""),
        "outTps": _first_number(t.get("getTransferedTps")),
        "pullThreadPoolQueueSize": t.get("pullThreadPoolQueueSize", ""),
        "pullThreadPoolQueueHeadWaitTimeMills": t.get("pullThreadPoolQueueHeadWaitTimeMills", ""),
        "pageCacheLockTimeMills": t.get("pageCacheLockTimeMills", ""),
        "hours": (now_ms - earliest) / 3_600_000 if earliest > 0 else None,
        "commitLogDiskRatio": float(ratio) if ratio else None,
    })
    return out


def _day_totals(runtime: dict[str, str]) -> dict[str, int]:
    """mqadmin clusterList -m's figures from a broker's runtime table: messages put (in) and got (out)
    yesterday (this morning's total less yesterday morning's) and today (now less this morning); all 0 when
    a figure is missing or not a number, as mqadmin prints them."""
    try:
        put = [int(runtime[f"msgPutTotal{when}"]) for when in ("YesterdayMorning", "TodayMorning", "TodayNow")]
        got = [int(runtime[f"msgGetTotal{when}"]) for when in ("YesterdayMorning", "TodayMorning", "TodayNow")]
    except (KeyError, ValueError):
        put = got = [0, 0, 0]
    return {"inTotalYest": put[1] - put[0], "outTotalYest": got[1] - got[0],
            "inTotalToday": put[2] - put[1], "outTotalToday": got[2] - got[1]}


def _list_more_stats(rows: list[ClusterBrokerRow], as_json: bool) -> None:
    found: list[dict[str, object]] = []
    for row in rows:
        out: dict[str, object] = {"clusterName": row.cluster_name, "brokerName": row.broker_name,
                                  "brokerId": row.broker_id, "brokerAddr": row.broker_addr}
        if row.runtime is None:
            out["error"] = row.error
        else:
            out.update(_day_totals(row.runtime))
        found.append(out)
    if as_json:
        print_json(found)
        return
    totals = ("inTotalYest", "outTotalYest", "inTotalToday", "outTotalToday")
    print_table(["CLUSTER", "BROKER", "BID", "ADDR", "IN YESTERDAY", "OUT YESTERDAY", "IN TODAY", "OUT TODAY"],
                [(r["clusterName"], r["brokerName"], r["brokerId"], r["brokerAddr"],
                  *(("unreachable", "-", "-", "-") if "error" in r else (r[k] for k in totals))) for r in found],
                right=(2, 4, 5, 6, 7))


def _list(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            rows = await admin.cluster_list(args.cluster)
        now_ms = int(time.time() * 1000)
        found = [cluster_row_json(r, now_ms) for r in rows]
        if args.more_stats:
            _list_more_stats(rows, args.json)
        elif args.json:
            print_json(found)
        else:
            table: list[tuple[object, ...]] = []
            for r in found:
                if "error" in r:
                    table.append((r["clusterName"], r["brokerName"], r["brokerId"], r["brokerAddr"], "unreachable",
                                  "-", "-", "-", "-", "-"))
                    continue
                hours, ratio = r["hours"], r["commitLogDiskRatio"]
                table.append((
                    r["clusterName"], r["brokerName"], r["brokerId"], r["brokerAddr"], r["version"],
                    f"{r['inTps']:.2f}({r['sendThreadPoolQueueSize']},{r['sendThreadPoolQueueHeadWaitTimeMills']}ms)",
                    f"{r['outTps']:.2f}({r['pullThreadPoolQueueSize']},{r['pullThreadPoolQueueHeadWaitTimeMills']}ms)",
                    r["pageCacheLockTimeMills"], "-" if hours is None else f"{hours:.2f}",
                    "-" if ratio is None else f"{ratio:.4f}"))
            print_table(["CLUSTER", "BROKER", "BID", "ADDR", "VERSION", "IN TPS(QUEUE,WAIT)", "OUT TPS(QUEUE,WAIT)",
                         "PC WAIT ms", "HOURS", "SPACE"], table, right=(2, 5, 6, 7, 8, 9))
        failed = [r for r in rows if r.runtime is None]
        for row in failed:
            print(f"rocketstore: error: broker {row.broker_addr} ({row.broker_name}) did not answer: {row.error}",
                  file=sys.stderr)
        return 1 if failed else 0

    return run_command(go())


def _wipe(args: argparse.Namespace) -> int:
    return _write_perm(args, wipe=True)


def _add(args: argparse.Namespace) -> int:
    return _write_perm(args, wipe=False)


def _write_perm(args: argparse.Namespace, *, wipe: bool) -> int:
    names = {name.strip() for name in (args.broker_name, args.broker_name_option) if name is not None}
    if len(names) != 1 or not next(iter(names)):  # as argparse refuses a missing argument: usage, exit 2
        args.write_perm_parser.error("give one broker name: BROKER_NAME or -b BROKER_NAME (mqadmin's form)")
    args.broker_name = names.pop()

    async def go() -> int:
        async with admin_of(args) as admin:
            if wipe:
                changes = await admin.wipe_write_perm(args.broker_name)
            else:
                changes = await admin.add_write_perm(args.broker_name)
        if args.json:
            print_json({"brokerName": args.broker_name, "namesrvs": [
                {"namesrvAddr": c.namesrv_addr, ("wipeTopicCount" if wipe else "addTopicCount"): c.topic_count}
                for c in changes]})
            return 0
        verb = "took the write perm from" if wipe else "gave the write perm to"
        for c in changes:
            print(f"name server {c.namesrv_addr} {verb} {c.topic_count} topic(s) of broker {args.broker_name}")
        return 0

    return run_command(go())
