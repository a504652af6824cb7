"""Send round-trip probes (mqadmin checkMsgSendRT, sendMsgStatus, clusterRT), through client.send_probe:

    rocketstore message check-rt -t TOPIC [-a 100] [-s 128]     each send over the topic's queues in turn
    rocketstore message send-status -b BROKER_NAME [-c 50] [-s 128]    sends to the broker's own topic
    rocketstore cluster rt [-c CLUSTER] [-a 50] [-s 128] [--rounds 1] [--interval-s 10]
                                                               average per broker of every cluster

These really send: *-a* / *-c* messages of *-s* bytes each (to the topic, or to the topic named after each
broker, which brokers create with brokerTopicEnable).  The average leaves the first send out, as mqadmin does.
A topic or broker the name servers do not know is refused before anything is sent (mqadmin would let the
broker auto-create the topic).  When a send fails the command still prints every sample, then says how many
failed on stderr and exits 1.  ``cluster rt`` runs ``--rounds`` rounds ``--interval-s`` apart (mqadmin's runs
until stopped).
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from rocketstore.cli.output import (
    add_common,
    admin_of,
    credentials_of,
    fail,
    print_json,
    print_table,
    run_command,
)
from rocketstore.client.admin_types import check_name
from rocketstore.client.producer import DEFAULT_MAX_MESSAGE_SIZE, Producer
from rocketstore.client.send_probe import SendSample, average_rt_ms, probe_sends

__all__ = ["add_cluster_commands", "add_message_commands"]

#: the producer groups the probes send as (sendMsgStatus's, and one for the other two)
SEND_STATUS_GROUP = "PID_SMSC"
RT_PROBE_GROUP = "PID_RT_PROBE"


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from exc
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {value}")
    return value


def _body_bytes(text: str) -> int:
    """A probe's body size: 1 byte up to the producer's maxMessageSize (4 MiB), the largest body a send can
    carry; a bigger one could only fail every send (or, huge, exhaust memory building the body)."""
    value = _positive(text)
    if value > DEFAULT_MAX_MESSAGE_SIZE:
        raise argparse.ArgumentTypeError(f"must be at most {DEFAULT_MAX_MESSAGE_SIZE} (the producer's "
                                         f"maxMessageSize), not {value}")
    return value


def _pause_seconds(text: str) -> float:
    """The pause between rounds: a finite number of seconds, 0 or more (NaN or inf no timer takes)."""
    try:
        value = float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from exc
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds, 0 or more, not {text!r}")
    return value


def add_message_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    check = commands.add_parser("check-rt", help="send messages over a topic's queues in turn and print each "
                                                 "send's round trip (mqadmin checkMsgSendRT)")
    check.add_argument("-t", "--topic", required=True, help="the topic to send to")
    check.add_argument("-a", "--amount", type=_positive, default=100, help="messages to send (default 100)")
    check.add_argument("-s", "--size", type=_body_bytes, default=128, help="body bytes (default 128)")
    add_common(check)
    check.set_defaults(handler=_check_rt)

    status = commands.add_parser("send-status", help="send messages to a broker's own topic and print each "
                                                     "result and round trip (mqadmin sendMsgStatus)")
    status.add_argument("-b", "--broker-name", required=True, help="the broker's name (its topic's name)")
    status.add_argument("-c", "--count", type=_positive, default=50, help="messages to send (default 50)")
    status.add_argument("-s", "--size", type=_body_bytes, default=128, help="body bytes (default 128)")
    add_common(status)
    status.set_defaults(handler=_send_status)


def add_cluster_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    rt = commands.add_parser("rt", help="the average send round trip to every broker of the clusters (mqadmin "
                                        "clusterRT)")
    rt.add_argument("-c", "--cluster", help="only this cluster")
    rt.add_argument("-a", "--amount", type=_positive, default=50, help="messages per broker and round (default 50)")
    rt.add_argument("-s", "--size", type=_body_bytes, default=128, help="body bytes (default 128)")
    rt.add_argument("--rounds", type=_positive, default=1, help="rounds to run (default 1)")
    rt.add_argument("--interval-s", type=_pause_seconds, default=10.0, help="seconds between rounds (default 10)")
    add_common(rt)
    rt.set_defaults(handler=_cluster_rt)


def _producer(args: argparse.Namespace, group: str) -> Producer:
    return Producer(args.namesrv, group, timeout_s=args.request_timeout_s, credentials=credentials_of(args))


def _sample_json(s: SendSample) -> dict[str, object]:
    return {"brokerName": s.broker_name, "queueId": s.queue_id, "ok": s.ok, "status": s.status,
            "rtMs": round(s.rt_ms, 3), "msgId": s.msg_id, "error": s.error}


def _failures(samples: list[SendSample]) -> int:
    """1 (with a line on stderr) when some send failed, else 0."""
    failed = [s for s in samples if not s.ok]
    if not failed:
        return 0
    print(f"rocketstore: error: {len(failed)} of {len(samples)} sends failed: {failed[0].error or failed[0].status}",
          file=sys.stderr)
    return 1


def _check_rt(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            await admin.route(args.topic)  # NoRouteError for an unknown topic, before any send
        async with _producer(args, RT_PROBE_GROUP) as producer:
            samples = await probe_sends(producer, args.topic, args.amount, args.size, spread=True)
        if args.json:
            print_json({"topic": args.topic, "samples": [_sample_json(s) for s in samples],
                        "avgRtMs": round(average_rt_ms(samples), 3)})
        else:
            print_table(["BROKER", "QID", "SENT", "RT ms"],
                        [(s.broker_name or "-", s.queue_id, "true" if s.ok else "false", f"{s.rt_ms:.2f}")
                         for s in samples], right=(1, 3))
            print(f"Avg RT: {average_rt_ms(samples):.2f} ms")
        return _failures(samples)

    return run_command(go())


def _send_status(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            info = await admin.cluster_info()
        if args.broker_name not in info.brokers:
            return fail(f"broker {args.broker_name!r} is not known to the name server")
        check_name("topic", args.broker_name)
        async with _producer(args, SEND_STATUS_GROUP) as producer:
            # a first small send, as mqadmin's, so that the timed ones do not pay for the route and connection
            await probe_sends(producer, args.broker_name, 1, 16)
            samples = await probe_sends(producer, args.broker_name, args.count, args.size)
        if args.json:
            print_json({"brokerName": args.broker_name, "samples": [_sample_json(s) for s in samples],
                        "avgRtMs": round(average_rt_ms(samples), 3)})
        else:
            print_table(["N", "RT ms", "STATUS", "MSG ID", "QUEUE"],
                        [(i + 1, f"{s.rt_ms:.2f}", s.status, s.msg_id or (s.error or "-"),
                          f"{s.broker_name}:{s.queue_id}" if s.ok else "-") for i, s in enumerate(samples)],
                        right=(0, 1))
        return _failures(samples)

    return run_command(go())


def _cluster_rt(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            info = await admin.cluster_info()
        info.require(args.cluster)
        targets = [(c, name) for c in ([args.cluster] if args.cluster else sorted(info.clusters))
                   for name in sorted(info.clusters[c])]
        rows: list[dict[str, object]] = []
        failed = 0
        first_failure: str | None = None
        async with _producer(args, RT_PROBE_GROUP) as producer:
            for round_index in range(args.rounds):
                if round_index:
                    await asyncio.sleep(args.interval_s)
                for cluster, name in targets:
                    samples = await probe_sends(producer, name, args.amount, args.size)
                    ok_count = sum(1 for s in samples if s.ok)
                    failed += len(samples) - ok_count
                    if first_failure is None:
                        first_failure = next((s.error or s.status for s in samples if not s.ok), None)
                    row = {"round": round_index + 1, "clusterName": cluster, "brokerName": name,
                           "avgRtMs": round(average_rt_ms(samples), 3), "successCount": ok_count,
                           "failCount": len(samples) - ok_count}
                    rows.append(row)
        if args.json:
            print_json(rows)
        else:
            print_table(["ROUND", "CLUSTER", "BROKER", "AVG RT ms", "OK", "FAILED"],
                        [(r["round"], r["clusterName"], r["brokerName"], f"{r['avgRtMs']:.2f}", r["successCount"],
                          r["failCount"]) for r in rows], right=(0, 3, 4, 5))
        if failed:
            print(f"rocketstore: error: {failed} sends failed: {first_failure}", file=sys.stderr)
            return 1
        return 0

    return run_command(go())
